// Covers: host integer compares (all 10 cmpi predicates on i32 and i64) and f32 cmpf ordered/unordered predicates.
func.func @cmp_i32(%a: i32, %b: i32) -> (i1, i1, i1, i1, i1, i1, i1, i1, i1, i1) {
  %eq = arith.cmpi eq, %a, %b : i32
  %ne = arith.cmpi ne, %a, %b : i32
  %slt = arith.cmpi slt, %a, %b : i32
  %sle = arith.cmpi sle, %a, %b : i32
  %sgt = arith.cmpi sgt, %a, %b : i32
  %sge = arith.cmpi sge, %a, %b : i32
  %ult = arith.cmpi ult, %a, %b : i32
  %ule = arith.cmpi ule, %a, %b : i32
  %ugt = arith.cmpi ugt, %a, %b : i32
  %uge = arith.cmpi uge, %a, %b : i32
  return %eq, %ne, %slt, %sle, %sgt, %sge, %ult, %ule, %ugt, %uge : i1, i1, i1, i1, i1, i1, i1, i1, i1, i1
}

func.func @cmp_i64(%a: i64, %b: i64) -> (i1, i1, i1, i1, i1, i1, i1, i1, i1, i1) {
  %eq = arith.cmpi eq, %a, %b : i64
  %ne = arith.cmpi ne, %a, %b : i64
  %slt = arith.cmpi slt, %a, %b : i64
  %sle = arith.cmpi sle, %a, %b : i64
  %sgt = arith.cmpi sgt, %a, %b : i64
  %sge = arith.cmpi sge, %a, %b : i64
  %ult = arith.cmpi ult, %a, %b : i64
  %ule = arith.cmpi ule, %a, %b : i64
  %ugt = arith.cmpi ugt, %a, %b : i64
  %uge = arith.cmpi uge, %a, %b : i64
  return %eq, %ne, %slt, %sle, %sgt, %sge, %ult, %ule, %ugt, %uge : i1, i1, i1, i1, i1, i1, i1, i1, i1, i1
}

func.func @cmp_f32(%a: f32, %b: f32) -> (i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1) {
  %oeq = arith.cmpf oeq, %a, %b : f32
  %one = arith.cmpf one, %a, %b : f32
  %olt = arith.cmpf olt, %a, %b : f32
  %ole = arith.cmpf ole, %a, %b : f32
  %ogt = arith.cmpf ogt, %a, %b : f32
  %oge = arith.cmpf oge, %a, %b : f32
  %ueq = arith.cmpf ueq, %a, %b : f32
  %une = arith.cmpf une, %a, %b : f32
  %ult = arith.cmpf ult, %a, %b : f32
  %uge = arith.cmpf uge, %a, %b : f32
  %ord = arith.cmpf ord, %a, %b : f32
  %uno = arith.cmpf uno, %a, %b : f32
  return %oeq, %one, %olt, %ole, %ogt, %oge, %ueq, %une, %ult, %uge, %ord, %uno : i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1, i1
}
