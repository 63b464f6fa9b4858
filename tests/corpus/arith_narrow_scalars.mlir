// Covers: scalar ABI arguments/results of i1, i8, i16 and index (narrow ints live in i32 registers, index in i64).
func.func @narrow(%b: i1, %x: i8, %y: i16, %n: index) -> (i1, i8, i16, index, i32) {
  %nb = arith.xori %b, %b : i1
  %t = arith.constant true
  %b2 = arith.xori %b, %t : i1
  %x2 = arith.addi %x, %x : i8
  %y2 = arith.muli %y, %y : i16
  %c3 = arith.constant 3 : index
  %n2 = arith.muli %n, %c3 : index
  %xe = arith.extsi %x : i8 to i32
  %ye = arith.extui %y : i16 to i32
  %s = arith.addi %xe, %ye : i32
  return %b2, %x2, %y2, %n2, %s : i1, i8, i16, index, i32
}
