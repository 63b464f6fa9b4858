// Covers: host i64 arithmetic: add/sub/mul, signed+unsigned div/rem, bitwise, shifts by i64 amounts, floordiv.
func.func @i64_ops(%a: i64, %b: i64) -> (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) {
  %c1 = arith.constant 1 : i64
  %c15 = arith.constant 15 : i64
  %c63 = arith.constant 63 : i64
  %big = arith.constant 81985529216486895 : i64
  %bm = arith.andi %b, %c15 : i64
  %d = arith.addi %bm, %c1 : i64
  %abig = arith.muli %a, %big : i64
  %add = arith.addi %abig, %b : i64
  %sub = arith.subi %a, %abig : i64
  %mul = arith.muli %abig, %b : i64
  %divs = arith.divsi %abig, %d : i64
  %divu = arith.divui %abig, %d : i64
  %rems = arith.remsi %abig, %d : i64
  %remu = arith.remui %abig, %d : i64
  %and = arith.andi %abig, %b : i64
  %or = arith.ori %a, %b : i64
  %xor = arith.xori %abig, %b : i64
  %sh = arith.andi %b, %c63 : i64
  %shl = arith.shli %abig, %sh : i64
  %shrs = arith.shrsi %abig, %sh : i64
  %shru = arith.shrui %abig, %sh : i64
  %floor = arith.floordivsi %a, %d : i64
  return %add, %sub, %mul, %divs, %divu, %rems, %remu, %and, %or, %xor, %shl, %shrs, %shru, %floor
      : i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64
}
