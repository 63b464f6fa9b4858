; A plan's binding-table checks (exec/plan.py Plan.run): per slot a command uses, the
; entry it is given is checked against what the plan's commands need of it, and its
; (address, length) written into the plan's table. A failing check declines: the plan
; runs nothing and the caller runs the command buffer in Python, which raises the error
; IREE raises (iree/hal/command_buffer_validation.c, per command; this checks per slot
; the furthest byte any command needs, so a table passes here only where every command
; would pass there). Records and codes: layout.py's CHECK_*, ENTRY_*, DECLINE_*.

; from other units
declare i64 @pyree_run_plan_args(ptr)

; Returns 0 with every checked slot's (address, length) written into %table, or a
; DECLINE_* code at the first failing check (%table partly written: every run writes
; every checked slot before the runner reads one).
define i64 @pyree_check_table(ptr %checks, i64 %n, ptr %entries, ptr %table) {
entry:
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %i1, %write ]
  %more = icmp ult i64 %i, %n
  br i1 %more, label %body, label %ok
ok:
  ret i64 0
body:
  %ci = mul i64 %i, @CHECK_WORDS@
  %c = getelementptr i64, ptr %checks, i64 %ci
  %ei = mul i64 %i, @ENTRY_WORDS@
  %e = getelementptr i64, ptr %entries, i64 %ei
  %pword = getelementptr i64, ptr %c, i64 @CHECK_WORD@
  %word = load i64, ptr %pword
  %pend = getelementptr i64, ptr %c, i64 @CHECK_END@
  %end = load i64, ptr %pend
  %pwritable = getelementptr i64, ptr %c, i64 @CHECK_WRITABLE@
  %writable = load i64, ptr %pwritable
  %palign = getelementptr i64, ptr %c, i64 @CHECK_ALIGN@
  %align = load i64, ptr %palign
  %pbase = getelementptr i64, ptr %e, i64 @ENTRY_ADDRESS@
  %base = load i64, ptr %pbase
  %pblen = getelementptr i64, ptr %e, i64 @ENTRY_BUFFER_LENGTH@
  %blen = load i64, ptr %pblen
  %poff = getelementptr i64, ptr %e, i64 @ENTRY_OFFSET@
  %off = load i64, ptr %poff
  %plen = getelementptr i64, ptr %e, i64 @ENTRY_LENGTH@
  %len = load i64, ptr %plen
  %pro = getelementptr i64, ptr %e, i64 @ENTRY_READONLY@
  %ro = load i64, ptr %pro
  ; a negative offset is out (signed compare); with 0 <= offset, the rest of the
  ; buffer (length - offset) cannot wrap, and an offset past its end leaves a negative
  ; rest, which every length below fails
  %offneg = icmp slt i64 %off, 0
  br i1 %offneg, label %range, label %length
length:
  ; WHOLE_BUFFER resolves to the rest of the buffer; the length then covers the end the
  ; commands need (end >= 0, so any other negative length fails) and stays in the rest
  %rest = sub i64 %blen, %off
  %whole = icmp eq i64 %len, -1
  %l = select i1 %whole, i64 %rest, i64 %len
  %short = icmp slt i64 %l, %end
  %over = icmp sgt i64 %l, %rest
  %lbad = or i1 %short, %over
  br i1 %lbad, label %range, label %access
access:
  %w = icmp ne i64 %writable, 0
  %r = icmp ne i64 %ro, 0
  %wr = and i1 %w, %r
  br i1 %wr, label %readonly, label %aligned
aligned:
  %m = urem i64 %off, %align
  %mis = icmp ne i64 %m, 0
  br i1 %mis, label %misaligned, label %write
write:
  %addr = add i64 %base, %off
  %pt = getelementptr i64, ptr %table, i64 %word
  store i64 %addr, ptr %pt
  %pt1 = getelementptr i64, ptr %pt, i64 1
  store i64 %l, ptr %pt1
  %i1 = add i64 %i, 1
  br label %head
range:
  ret i64 @DECLINE_RANGE@
readonly:
  ret i64 @DECLINE_READONLY@
misaligned:
  ret i64 @DECLINE_ALIGN@
}

; Plan.run's one foreign call: the checks, then (all passing) the plan. %a is the plan's
; argument block (PLAN_PARAMS) followed by CHECK_PARAMS. Returns a DECLINE_* code, or
; the runner's result.
define i64 @pyree_check_run_plan(ptr %a) {
entry:
  %pchecks = getelementptr i64, ptr %a, i64 @CHECK_ARG_CHECKS@
  %checks = load ptr, ptr %pchecks
  %pnchecks = getelementptr i64, ptr %a, i64 @CHECK_ARG_NCHECKS@
  %nchecks = load i64, ptr %pnchecks
  %pentries = getelementptr i64, ptr %a, i64 @CHECK_ARG_ENTRIES@
  %entries = load ptr, ptr %pentries
  %pt = getelementptr i64, ptr %a, i64 @PLAN_ARG_TABLE@
  %table = load ptr, ptr %pt
  %d = call i64 @pyree_check_table(ptr %checks, i64 %nchecks, ptr %entries, ptr %table)
  %declined = icmp ne i64 %d, 0
  br i1 %declined, label %decline, label %run
decline:
  ret i64 %d
run:
  %r = call i64 @pyree_run_plan_args(ptr %a)
  ret i64 %r
}
