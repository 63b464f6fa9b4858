// Covers: internal calls to private util.func callees with i32/i64/f32 args and multiple results, a looping callee.
util.func private @mix(%a: i64, %b: i32, %c: i64, %f: f32) -> (i64, f32) attributes {inlining_policy = #util.inline.never} {
  %be = arith.extsi %b : i32 to i64
  %t = arith.muli %a, %be : i64
  %r = arith.addi %t, %c : i64
  %ff = arith.mulf %f, %f : f32
  util.return %r, %ff : i64, f32
}

// (A self-recursive callee makes 3.13 iree-compile loop forever, so @fact iterates.)
util.func private @fact(%n: i64) -> i64 attributes {inlining_policy = #util.inline.never} {
  %c1 = arith.constant 1 : i64
  %r:2 = scf.while (%i = %n, %acc = %c1) : (i64, i64) -> (i64, i64) {
    %more = arith.cmpi sgt, %i, %c1 : i64
    scf.condition(%more) %i, %acc : i64, i64
  } do {
  ^bb0(%i: i64, %acc: i64):
    %p = arith.muli %acc, %i : i64
    %m = arith.subi %i, %c1 : i64
    scf.yield %m, %p : i64, i64
  }
  util.return %r#1 : i64
}

func.func @caller(%a: i64, %b: i32, %c: i64, %f: f32) -> (i64, f32, i64) {
  %r:2 = util.call @mix(%a, %b, %c, %f) : (i64, i32, i64, f32) -> (i64, f32)
  %s:2 = util.call @mix(%r#0, %b, %a, %r#1) : (i64, i32, i64, f32) -> (i64, f32)
  %c15 = arith.constant 15 : i64
  %n = arith.andi %c, %c15 : i64
  %fa = util.call @fact(%n) : (i64) -> i64
  return %s#0, %s#1, %fa : i64, f32, i64
}
