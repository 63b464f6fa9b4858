// Covers (VM dialect): internal vm.call with i32/i64/f32/f64/ref args and multiple results, nested call chains in a loop, export aliases of one function.
vm.module @vm_calls {
  vm.func private @mixed(%a: i32, %b: i64, %c: f32, %d: f64, %e: i64) -> (i64, f64, i32) attributes {inlining_policy = #util.inline.never} {
    %ae = vm.ext.i32.i64.s %a : i32 -> i64
    %s = vm.add.i64 %ae, %b : i64
    %s2 = vm.add.i64 %s, %e : i64
    %ce = vm.ext.f32.f64 %c : f32 -> f64
    %p = vm.mul.f64 %ce, %d : f64
    %t = vm.trunc.i64.i32 %e : i64 -> i32
    vm.return %s2, %p, %t : i64, f64, i32
  }

  // (A self-recursive vm.func makes 3.13 iree-compile loop forever, so the call chain is fib -> fib_step.)
  vm.func private @fib_step(%a: i32, %b: i32) -> (i32, i32) attributes {inlining_policy = #util.inline.never} {
    %s = vm.add.i32 %a, %b : i32
    vm.return %b, %s : i32, i32
  }

  vm.func private @fib(%n: i32) -> i32 attributes {inlining_policy = #util.inline.never} {
    %c0 = vm.const.i32.zero
    %c1 = vm.const.i32 1
    vm.br ^head(%c0, %c0, %c1 : i32, i32, i32)
  ^head(%i: i32, %a: i32, %b: i32):
    %lt = vm.cmp.lt.i32.s %i, %n : i32
    vm.cond_br %lt, ^body, ^done
  ^body:
    %r:2 = vm.call @fib_step(%a, %b) : (i32, i32) -> (i32, i32)
    %i1 = vm.add.i32 %i, %c1 : i32
    vm.br ^head(%i1, %r#0, %r#1 : i32, i32, i32)
  ^done:
    vm.return %a : i32
  }

  vm.func private @buf_len(%b: !vm.buffer) -> i64 attributes {inlining_policy = #util.inline.never} {
    %l = vm.buffer.length %b : !vm.buffer -> i64
    vm.return %l : i64
  }

  vm.func @entry(%a: i32, %b: i64, %c: f32, %d: f64) -> (i64, f64, i32, i32, i64) {
    %r:3 = vm.call @mixed(%a, %b, %c, %d, %b) : (i32, i64, f32, f64, i64) -> (i64, f64, i32)
    %c15 = vm.const.i32 15
    %n = vm.and.i32 %a, %c15 : i32
    %f = vm.call @fib(%n) : (i32) -> i32
    %len = vm.const.i64 24
    %z = vm.const.i32.zero
    %buf = vm.buffer.alloc %len, %z : !vm.buffer
    %l = vm.call @buf_len(%buf) : (!vm.buffer) -> i64
    vm.return %r#0, %r#1, %r#2, %f, %l : i64, f64, i32, i32, i64
  }
  vm.export @entry
  vm.export @entry as("entry_alias")
}
