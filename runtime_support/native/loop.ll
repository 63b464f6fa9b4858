; A loop call's iterations in one foreign call (exec/native_loops.py builds the op table):
; a register file of i64 words, a table of ops over it run in order, the last op starting
; the next iteration. The ops are the iteration's own: the program's inputs and integer
; ops, its buffers' table words and zeroing, its dispatch constants, the plan, its
; readbacks, the loop's integer and f32 compare ops, its test and its copies. The block's
; words are layout.py's LOOP_FIELDS; each op is LOOP_OP_WORDS words: code, d, a, b, c.
;
; Values: an i32 register holds its value sign-extended, an f32 register its bits
; zero-extended, a ref register a handle (an index into the handles array, whose word is
; the buffer's address). The f32 compares are made here, outside the plan's FTZ/DAZ
; window, as Python compares the same values.

; from other units
declare i64 @pyree_run_plan_args(ptr)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

define internal i64 @pyree_sext32(i64 %v) {
  %t = trunc i64 %v to i32
  %s = sext i32 %t to i64
  ret i64 %s
}

define internal float @pyree_f32(i64 %v) {
  %t = trunc i64 %v to i32
  %f = bitcast i32 %t to float
  ret float %f
}

; Returns the exit code (LOOP_EXIT_*); the block's pc, iterations, parity and result
; words say where and how it stopped.
define i64 @pyree_run_loop(ptr %blk) {
entry:
  %pops = getelementptr i64, ptr %blk, i64 @LOOP_OPS@
  %ops = load ptr, ptr %pops
  %pregs = getelementptr i64, ptr %blk, i64 @LOOP_REGS@
  %regs = load ptr, ptr %pregs
  %phandles = getelementptr i64, ptr %blk, i64 @LOOP_HANDLES@
  %handles = load ptr, ptr %phandles
  %plimit = getelementptr i64, ptr %blk, i64 @LOOP_LIMIT@
  %limit = load i64, ptr %plimit
  %pparity = getelementptr i64, ptr %blk, i64 @LOOP_PARITY@
  %pdone = getelementptr i64, ptr %blk, i64 @LOOP_ITERATIONS@
  %ppc = getelementptr i64, ptr %blk, i64 @LOOP_PC@
  %presult = getelementptr i64, ptr %blk, i64 @LOOP_RESULT@
  store i64 0, ptr %pdone
  br label %fetch

fetch:
  %pc = phi i64 [ 0, %entry ], [ %npc, %advance ]
  %rec = mul i64 %pc, @LOOP_OP_WORDS@
  %pcode = getelementptr i64, ptr %ops, i64 %rec
  %code = load i64, ptr %pcode
  %pd = getelementptr i64, ptr %pcode, i64 1
  %d = load i64, ptr %pd
  %pa = getelementptr i64, ptr %pcode, i64 2
  %a = load i64, ptr %pa
  %pb = getelementptr i64, ptr %pcode, i64 3
  %b = load i64, ptr %pb
  %pcc = getelementptr i64, ptr %pcode, i64 4
  %c = load i64, ptr %pcc
  %pc1 = add i64 %pc, 1
  ; operands as registers (ops that take immediates read %a, %b, %c themselves)
  %pra = getelementptr i64, ptr %regs, i64 %a
  %pdst = getelementptr i64, ptr %regs, i64 %d
  switch i64 %code, label %bad [
    i64 @LOOP_NEXT@, label %next
    i64 @LOOP_LEAVE_IF@, label %leave_if
    i64 @LOOP_DECLINE_NE@, label %decline_ne
    i64 @LOOP_PLAN@, label %plan
    i64 @LOOP_MOVE@, label %move
    i64 @LOOP_CONST@, label %const
    i64 @LOOP_ROW@, label %row
    i64 @LOOP_TURN@, label %turn
    i64 @LOOP_ZERO@, label %zero
    i64 @LOOP_STORE32@, label %store32
    i64 @LOOP_LOAD@, label %load
    i64 @LOOP_FILL_CHECK@, label %fill_check
    i64 @LOOP_FILL@, label %fill
    i64 @LOOP_ADD32@, label %binary
    i64 @LOOP_SUB32@, label %binary
    i64 @LOOP_MUL32@, label %binary
    i64 @LOOP_ADD64@, label %binary
    i64 @LOOP_SUB64@, label %binary
    i64 @LOOP_MUL64@, label %binary
    i64 @LOOP_AND@, label %binary
    i64 @LOOP_OR@, label %binary
    i64 @LOOP_XOR@, label %binary
    i64 @LOOP_SHL32@, label %binary
    i64 @LOOP_SHRS32@, label %binary
    i64 @LOOP_SHRU32@, label %binary
    i64 @LOOP_SHL64@, label %binary
    i64 @LOOP_SHRS64@, label %binary
    i64 @LOOP_SHRU64@, label %binary
    i64 @LOOP_EQ@, label %binary
    i64 @LOOP_NE@, label %binary
    i64 @LOOP_LTS@, label %binary
    i64 @LOOP_LTU32@, label %binary
    i64 @LOOP_LTU64@, label %binary
    i64 @LOOP_MINS@, label %binary
    i64 @LOOP_MAXS@, label %binary
    i64 @LOOP_MINU32@, label %binary
    i64 @LOOP_MAXU32@, label %binary
    i64 @LOOP_MINU64@, label %binary
    i64 @LOOP_MAXU64@, label %binary
    i64 @LOOP_FEQ_O@, label %fbinary
    i64 @LOOP_FEQ_U@, label %fbinary
    i64 @LOOP_FNE@, label %fbinary
    i64 @LOOP_FLT_O@, label %fbinary
    i64 @LOOP_FLT_U@, label %fbinary
    i64 @LOOP_FLE_O@, label %fbinary
    i64 @LOOP_FLE_U@, label %fbinary
    i64 @LOOP_FNAN@, label %fbinary
    i64 @LOOP_NOT@, label %unary
    i64 @LOOP_NZ@, label %unary
    i64 @LOOP_SEXT32@, label %unary
    i64 @LOOP_ZEXT32@, label %unary
    i64 @LOOP_SEXT8@, label %unary
    i64 @LOOP_ZEXT8@, label %unary
    i64 @LOOP_SEXT16@, label %unary
    i64 @LOOP_ZEXT16@, label %unary
    i64 @LOOP_SELECT@, label %select
  ]

; -- control -----------------------------------------------------------------------------

next:  ; the iteration is over: the next one, from the first op (or stop at the limit)
  %n0 = load i64, ptr %pdone
  %n1 = add i64 %n0, 1
  store i64 %n1, ptr %pdone
  %par0 = load i64, ptr %pparity
  %par1 = xor i64 %par0, 1
  store i64 %par1, ptr %pparity
  %atlimit = icmp uge i64 %n1, %limit
  br i1 %atlimit, label %exit_limit, label %advance

leave_if:  ; leave where (R[a] == 0) != (b != 0): the test says the loop is over
  %tv = load i64, ptr %pra
  %tz = icmp eq i64 %tv, 0
  %neg = icmp ne i64 %b, 0
  %leave = xor i1 %tz, %neg
  br i1 %leave, label %exit_left, label %store_none

decline_ne:  ; the shape's key: R[a] must be b (else this iteration is Python's)
  %kv = load i64, ptr %pra
  %same = icmp eq i64 %kv, %b
  br i1 %same, label %store_none, label %exit_decline

plan:  ; the plan on its table as written: b is its argument block
  %pargs = inttoptr i64 %b to ptr
  %r = call i64 @pyree_run_plan_args(ptr %pargs)
  %ok = icmp eq i64 %r, 0
  br i1 %ok, label %store_none, label %exit_failed

; -- data --------------------------------------------------------------------------------

move:
  %mv = load i64, ptr %pra
  br label %store

const:
  br label %store_a

row:  ; a table word: *(b) = handles[R[a]] + c
  %h = load i64, ptr %pra
  %ph = getelementptr i64, ptr %handles, i64 %h
  %base = load i64, ptr %ph
  %addr = add i64 %base, %c
  %pw = inttoptr i64 %b to ptr
  store i64 %addr, ptr %pw
  br label %store_none

turn:  ; R[d] = the parity's handle: b (even), c (odd)
  %par = load i64, ptr %pparity
  %odd = icmp ne i64 %par, 0
  %th = select i1 %odd, i64 %c, i64 %b
  store i64 %th, ptr %pdst
  br label %store_none

zero:  ; the buffer of handle R[a] zero-filled, b bytes
  %zh = load i64, ptr %pra
  %pzh = getelementptr i64, ptr %handles, i64 %zh
  %zbase = load i64, ptr %pzh
  %zp = inttoptr i64 %zbase to ptr
  call void @llvm.memset.p0.i64(ptr %zp, i8 0, i64 %b, i1 false)
  br label %store_none

store32:  ; a dispatch constant: *(u32 *)b = R[a]
  %sv = load i64, ptr %pra
  %s32 = trunc i64 %sv to i32
  %psw = inttoptr i64 %b to ptr
  store i32 %s32, ptr %psw
  br label %store_none

load:  ; a readback: R[d] = the b bytes at a (1-3 zero-extended, 4 sign-extended)
  %lp = inttoptr i64 %a to ptr
  %l1 = icmp eq i64 %b, 1
  br i1 %l1, label %load1, label %load_n
load1:
  %v8 = load i8, ptr %lp
  %z8 = zext i8 %v8 to i64
  store i64 %z8, ptr %pdst
  br label %store_none
load_n:
  %l2 = icmp eq i64 %b, 2
  br i1 %l2, label %load2, label %load_n3
load2:
  %v16 = load i16, ptr %lp, align 1
  %z16 = zext i16 %v16 to i64
  store i64 %z16, ptr %pdst
  br label %store_none
load_n3:
  %l3 = icmp eq i64 %b, 3
  br i1 %l3, label %load3, label %load4
load3:
  %v24 = load i24, ptr %lp, align 1
  %z24 = zext i24 %v24 to i64
  store i64 %z24, ptr %pdst
  br label %store_none
load4:
  %v32 = load i32, ptr %lp, align 1
  %s4 = sext i32 %v32 to i64
  store i64 %s4, ptr %pdst
  br label %store_none

fill_check:  ; a queue fill's range and alignment: R[a] is its offset, b the buffer's
  ; length, c its length << 8 | pattern length (LOOP_EXIT_DECLINE where the fill would fail)
  %fo = load i64, ptr %pra
  %flen = lshr i64 %c, 8
  %fpl = and i64 %c, 255
  %fneg = icmp slt i64 %fo, 0
  %froom = sub i64 %b, %flen
  %fpast = icmp sgt i64 %fo, %froom
  %frem = urem i64 %fo, %fpl
  %fmis = icmp ne i64 %frem, 0
  %fbad1 = or i1 %fneg, %fpast
  %fbad = or i1 %fbad1, %fmis
  br i1 %fbad, label %exit_decline, label %store_none

fill:  ; the fill: at handles[R[a]] + R[b], d's length in units of its pattern length, R[c]
  %gh = load i64, ptr %pra
  %pgh = getelementptr i64, ptr %handles, i64 %gh
  %gbase = load i64, ptr %pgh
  %pgo = getelementptr i64, ptr %regs, i64 %b
  %go = load i64, ptr %pgo
  %pgp = getelementptr i64, ptr %regs, i64 %c
  %gpat = load i64, ptr %pgp
  %glen = lshr i64 %d, 8
  %gpl = and i64 %d, 255
  %gstart = add i64 %gbase, %go
  %gcount = udiv i64 %glen, %gpl
  br label %fill_loop
fill_loop:
  %gi = phi i64 [ 0, %fill ], [ %gi1, %fill_next ]
  %gmore = icmp ult i64 %gi, %gcount
  br i1 %gmore, label %fill_put, label %store_none
fill_put:
  %goff = mul i64 %gi, %gpl
  %gaddr = add i64 %gstart, %goff
  %gp = inttoptr i64 %gaddr to ptr
  %g4 = icmp eq i64 %gpl, 4
  %g2 = icmp eq i64 %gpl, 2
  br i1 %g4, label %fill4, label %fill_n2
fill4:
  %gv4 = trunc i64 %gpat to i32
  store i32 %gv4, ptr %gp, align 1
  br label %fill_next
fill_n2:
  br i1 %g2, label %fill2, label %fill1
fill2:
  %gv2 = trunc i64 %gpat to i16
  store i16 %gv2, ptr %gp, align 1
  br label %fill_next
fill1:
  %gv1 = trunc i64 %gpat to i8
  store i8 %gv1, ptr %gp
  br label %fill_next
fill_next:
  %gi1 = add i64 %gi, 1
  br label %fill_loop

; -- integer and f32 ops: R[d] = f(R[a], R[b]) / f(R[a]) / R[a] ? R[b] : R[c] ----------

binary:
  %x = load i64, ptr %pra
  %prb = getelementptr i64, ptr %regs, i64 %b
  %y = load i64, ptr %prb
  %sh32 = and i64 %y, 31
  %sh64 = and i64 %y, 63
  %x32u = and i64 %x, 4294967295
  %y32u = and i64 %y, 4294967295
  %add = add i64 %x, %y
  %sub = sub i64 %x, %y
  %mul = mul i64 %x, %y
  %add32 = call i64 @pyree_sext32(i64 %add)
  %sub32 = call i64 @pyree_sext32(i64 %sub)
  %mul32 = call i64 @pyree_sext32(i64 %mul)
  %and = and i64 %x, %y
  %or = or i64 %x, %y
  %xor = xor i64 %x, %y
  %shl32r = shl i64 %x, %sh32
  %shl32 = call i64 @pyree_sext32(i64 %shl32r)
  %shrs32 = ashr i64 %x, %sh32
  %shru32r = lshr i64 %x32u, %sh32
  %shru32 = call i64 @pyree_sext32(i64 %shru32r)
  %shl64 = shl i64 %x, %sh64
  %shrs64 = ashr i64 %x, %sh64
  %shru64 = lshr i64 %x, %sh64
  %ceq = icmp eq i64 %x, %y
  %eq = zext i1 %ceq to i64
  %cne = icmp ne i64 %x, %y
  %ne = zext i1 %cne to i64
  %clts = icmp slt i64 %x, %y
  %lts = zext i1 %clts to i64
  %cltu32 = icmp ult i64 %x32u, %y32u
  %ltu32 = zext i1 %cltu32 to i64
  %cltu64 = icmp ult i64 %x, %y
  %ltu64 = zext i1 %cltu64 to i64
  ; min/max: the numerics helpers' `b if b < a else a` and `b if b > a else a`
  %cylts = icmp slt i64 %y, %x
  %mins = select i1 %cylts, i64 %y, i64 %x
  %cygts = icmp sgt i64 %y, %x
  %maxs = select i1 %cygts, i64 %y, i64 %x
  %cyltu32 = icmp ult i64 %y32u, %x32u
  %minu32 = select i1 %cyltu32, i64 %y, i64 %x
  %cygtu32 = icmp ugt i64 %y32u, %x32u
  %maxu32 = select i1 %cygtu32, i64 %y, i64 %x
  %cyltu64 = icmp ult i64 %y, %x
  %minu64 = select i1 %cyltu64, i64 %y, i64 %x
  %cygtu64 = icmp ugt i64 %y, %x
  %maxu64 = select i1 %cygtu64, i64 %y, i64 %x
  switch i64 %code, label %bad [
    i64 @LOOP_ADD32@, label %bin_add32
    i64 @LOOP_SUB32@, label %bin_sub32
    i64 @LOOP_MUL32@, label %bin_mul32
    i64 @LOOP_ADD64@, label %bin_add
    i64 @LOOP_SUB64@, label %bin_sub
    i64 @LOOP_MUL64@, label %bin_mul
    i64 @LOOP_AND@, label %bin_and
    i64 @LOOP_OR@, label %bin_or
    i64 @LOOP_XOR@, label %bin_xor
    i64 @LOOP_SHL32@, label %bin_shl32
    i64 @LOOP_SHRS32@, label %bin_shrs32
    i64 @LOOP_SHRU32@, label %bin_shru32
    i64 @LOOP_SHL64@, label %bin_shl64
    i64 @LOOP_SHRS64@, label %bin_shrs64
    i64 @LOOP_SHRU64@, label %bin_shru64
    i64 @LOOP_EQ@, label %bin_eq
    i64 @LOOP_NE@, label %bin_ne
    i64 @LOOP_LTS@, label %bin_lts
    i64 @LOOP_LTU32@, label %bin_ltu32
    i64 @LOOP_LTU64@, label %bin_ltu64
    i64 @LOOP_MINS@, label %bin_mins
    i64 @LOOP_MAXS@, label %bin_maxs
    i64 @LOOP_MINU32@, label %bin_minu32
    i64 @LOOP_MAXU32@, label %bin_maxu32
    i64 @LOOP_MINU64@, label %bin_minu64
    i64 @LOOP_MAXU64@, label %bin_maxu64
  ]
bin_add32:
  br label %store_bin
bin_sub32:
  br label %store_bin
bin_mul32:
  br label %store_bin
bin_add:
  br label %store_bin
bin_sub:
  br label %store_bin
bin_mul:
  br label %store_bin
bin_and:
  br label %store_bin
bin_or:
  br label %store_bin
bin_xor:
  br label %store_bin
bin_shl32:
  br label %store_bin
bin_shrs32:
  br label %store_bin
bin_shru32:
  br label %store_bin
bin_shl64:
  br label %store_bin
bin_shrs64:
  br label %store_bin
bin_shru64:
  br label %store_bin
bin_eq:
  br label %store_bin
bin_ne:
  br label %store_bin
bin_lts:
  br label %store_bin
bin_ltu32:
  br label %store_bin
bin_ltu64:
  br label %store_bin
bin_mins:
  br label %store_bin
bin_maxs:
  br label %store_bin
bin_minu32:
  br label %store_bin
bin_maxu32:
  br label %store_bin
bin_minu64:
  br label %store_bin
bin_maxu64:
  br label %store_bin
store_bin:
  %bv = phi i64 [ %add32, %bin_add32 ], [ %sub32, %bin_sub32 ], [ %mul32, %bin_mul32 ],
                [ %add, %bin_add ], [ %sub, %bin_sub ], [ %mul, %bin_mul ],
                [ %and, %bin_and ], [ %or, %bin_or ], [ %xor, %bin_xor ],
                [ %shl32, %bin_shl32 ], [ %shrs32, %bin_shrs32 ], [ %shru32, %bin_shru32 ],
                [ %shl64, %bin_shl64 ], [ %shrs64, %bin_shrs64 ], [ %shru64, %bin_shru64 ],
                [ %eq, %bin_eq ], [ %ne, %bin_ne ], [ %lts, %bin_lts ],
                [ %ltu32, %bin_ltu32 ], [ %ltu64, %bin_ltu64 ],
                [ %mins, %bin_mins ], [ %maxs, %bin_maxs ],
                [ %minu32, %bin_minu32 ], [ %maxu32, %bin_maxu32 ],
                [ %minu64, %bin_minu64 ], [ %maxu64, %bin_maxu64 ]
  br label %store

fbinary:  ; f32 compares of the registers' bits (FNAN reads a only)
  %fxv = load i64, ptr %pra
  %pfb = getelementptr i64, ptr %regs, i64 %b
  %fyv = load i64, ptr %pfb
  %fx = call float @pyree_f32(i64 %fxv)
  %fy = call float @pyree_f32(i64 %fyv)
  %foeq = fcmp oeq float %fx, %fy
  %fueq = fcmp ueq float %fx, %fy
  %fune = fcmp une float %fx, %fy
  %folt = fcmp olt float %fx, %fy
  %fult = fcmp ult float %fx, %fy
  %fole = fcmp ole float %fx, %fy
  %fule = fcmp ule float %fx, %fy
  %fnan = fcmp uno float %fx, %fx
  switch i64 %code, label %bad [
    i64 @LOOP_FEQ_O@, label %f_eq_o
    i64 @LOOP_FEQ_U@, label %f_eq_u
    i64 @LOOP_FNE@, label %f_ne
    i64 @LOOP_FLT_O@, label %f_lt_o
    i64 @LOOP_FLT_U@, label %f_lt_u
    i64 @LOOP_FLE_O@, label %f_le_o
    i64 @LOOP_FLE_U@, label %f_le_u
    i64 @LOOP_FNAN@, label %f_nan
  ]
f_eq_o:
  br label %store_f
f_eq_u:
  br label %store_f
f_ne:
  br label %store_f
f_lt_o:
  br label %store_f
f_lt_u:
  br label %store_f
f_le_o:
  br label %store_f
f_le_u:
  br label %store_f
f_nan:
  br label %store_f
store_f:
  %fb = phi i1 [ %foeq, %f_eq_o ], [ %fueq, %f_eq_u ], [ %fune, %f_ne ], [ %folt, %f_lt_o ],
               [ %fult, %f_lt_u ], [ %fole, %f_le_o ], [ %fule, %f_le_u ], [ %fnan, %f_nan ]
  %fv = zext i1 %fb to i64
  br label %store

unary:
  %u = load i64, ptr %pra
  %not = xor i64 %u, -1
  %cnz = icmp ne i64 %u, 0
  %nz = zext i1 %cnz to i64
  %sext32 = call i64 @pyree_sext32(i64 %u)
  %zext32 = and i64 %u, 4294967295
  %t8 = trunc i64 %u to i8
  %sext8 = sext i8 %t8 to i64
  %zext8 = and i64 %u, 255
  %t16 = trunc i64 %u to i16
  %sext16 = sext i16 %t16 to i64
  %zext16 = and i64 %u, 65535
  switch i64 %code, label %bad [
    i64 @LOOP_NOT@, label %u_not
    i64 @LOOP_NZ@, label %u_nz
    i64 @LOOP_SEXT32@, label %u_sext32
    i64 @LOOP_ZEXT32@, label %u_zext32
    i64 @LOOP_SEXT8@, label %u_sext8
    i64 @LOOP_ZEXT8@, label %u_zext8
    i64 @LOOP_SEXT16@, label %u_sext16
    i64 @LOOP_ZEXT16@, label %u_zext16
  ]
u_not:
  br label %store_u
u_nz:
  br label %store_u
u_sext32:
  br label %store_u
u_zext32:
  br label %store_u
u_sext8:
  br label %store_u
u_zext8:
  br label %store_u
u_sext16:
  br label %store_u
u_zext16:
  br label %store_u
store_u:
  %uv = phi i64 [ %not, %u_not ], [ %nz, %u_nz ], [ %sext32, %u_sext32 ], [ %zext32, %u_zext32 ],
                [ %sext8, %u_sext8 ], [ %zext8, %u_zext8 ], [ %sext16, %u_sext16 ],
                [ %zext16, %u_zext16 ]
  br label %store

select:  ; R[d] = R[a] != 0 ? R[b] : R[c]
  %sc = load i64, ptr %pra
  %psb = getelementptr i64, ptr %regs, i64 %b
  %stv = load i64, ptr %psb
  %psc = getelementptr i64, ptr %regs, i64 %c
  %sfv = load i64, ptr %psc
  %scond = icmp ne i64 %sc, 0
  %sel = select i1 %scond, i64 %stv, i64 %sfv
  br label %store

store_a:
  br label %store

store:
  %v = phi i64 [ %mv, %move ], [ %a, %store_a ], [ %bv, %store_bin ], [ %fv, %store_f ],
               [ %uv, %store_u ], [ %sel, %select ]
  store i64 %v, ptr %pdst
  br label %advance

store_none:
  br label %advance

advance:  ; the next op, or the first one after `next`
  %npc = phi i64 [ %pc1, %store ], [ %pc1, %store_none ], [ 0, %next ]
  br label %fetch

; -- exits -------------------------------------------------------------------------------

exit_left:
  store i64 %pc, ptr %ppc
  ret i64 @LOOP_EXIT_LEFT@
exit_decline:
  store i64 %pc, ptr %ppc
  ret i64 @LOOP_EXIT_DECLINE@
exit_failed:
  store i64 %pc, ptr %ppc
  store i64 %r, ptr %presult
  ret i64 @LOOP_EXIT_FAILED@
exit_limit:
  store i64 0, ptr %ppc
  ret i64 @LOOP_EXIT_LIMIT@
bad:
  store i64 %pc, ptr %ppc
  ret i64 @LOOP_EXIT_BAD@
}
