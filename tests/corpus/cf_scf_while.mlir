// Covers: scf.while on host i32 scalars (Collatz step count) -> vm.cond_br loop with block args.
func.func @collatz_steps(%start: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %c63 = arith.constant 63 : i32
  // Sanitize: start in [1, 64].
  %masked = arith.andi %start, %c63 : i32
  %n0 = arith.addi %masked, %c1 : i32
  %res:2 = scf.while (%n = %n0, %steps = %c0) : (i32, i32) -> (i32, i32) {
    %done = arith.cmpi ne, %n, %c1 : i32
    scf.condition(%done) %n, %steps : i32, i32
  } do {
  ^bb0(%n: i32, %steps: i32):
    %r = arith.remui %n, %c2 : i32
    %odd = arith.cmpi ne, %r, %c0 : i32
    %next = scf.if %odd -> i32 {
      %t = arith.muli %n, %c3 : i32
      %t1 = arith.addi %t, %c1 : i32
      scf.yield %t1 : i32
    } else {
      %h = arith.divui %n, %c2 : i32
      scf.yield %h : i32
    }
    %s1 = arith.addi %steps, %c1 : i32
    scf.yield %next, %s1 : i32, i32
  }
  return %res#1 : i32
}
