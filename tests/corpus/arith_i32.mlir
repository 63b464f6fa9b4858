// Covers: host i32 arithmetic: add/sub/mul, signed+unsigned div/rem (divisor sanitized non-zero), bitwise ops, shifts.
func.func @i32_ops(%a: i32, %b: i32) -> (i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) {
  %c1 = arith.constant 1 : i32
  %c7 = arith.constant 7 : i32
  %c31 = arith.constant 31 : i32
  %bm = arith.andi %b, %c7 : i32
  %d = arith.addi %bm, %c1 : i32
  %add = arith.addi %a, %b : i32
  %sub = arith.subi %a, %b : i32
  %mul = arith.muli %a, %b : i32
  %divs = arith.divsi %a, %d : i32
  %divu = arith.divui %a, %d : i32
  %rems = arith.remsi %a, %d : i32
  %remu = arith.remui %a, %d : i32
  %and = arith.andi %a, %b : i32
  %or = arith.ori %a, %b : i32
  %xor = arith.xori %a, %b : i32
  %sh = arith.andi %b, %c31 : i32
  %shl = arith.shli %a, %sh : i32
  %shrs = arith.shrsi %a, %sh : i32
  %shru = arith.shrui %a, %sh : i32
  %ceil = arith.ceildivsi %a, %d : i32
  return %add, %sub, %mul, %divs, %divu, %rems, %remu, %and, %or, %xor, %shl, %shrs, %shru, %ceil
      : i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32
}
