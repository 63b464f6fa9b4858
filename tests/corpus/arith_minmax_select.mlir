// Covers: host min/max (signed, unsigned, float minimumf/maximumf) and arith.select on i32/i64/f32.
func.func @minmax_i32(%a: i32, %b: i32) -> (i32, i32, i32, i32) {
  %0 = arith.minsi %a, %b : i32
  %1 = arith.maxsi %a, %b : i32
  %2 = arith.minui %a, %b : i32
  %3 = arith.maxui %a, %b : i32
  return %0, %1, %2, %3 : i32, i32, i32, i32
}

func.func @minmax_i64(%a: i64, %b: i64) -> (i64, i64, i64, i64) {
  %0 = arith.minsi %a, %b : i64
  %1 = arith.maxsi %a, %b : i64
  %2 = arith.minui %a, %b : i64
  %3 = arith.maxui %a, %b : i64
  return %0, %1, %2, %3 : i64, i64, i64, i64
}

// (arith.minnumf/maxnumf do not legalize to VM in 3.13.)
func.func @minmax_f32(%a: f32, %b: f32) -> (f32, f32) {
  %0 = arith.minimumf %a, %b : f32
  %1 = arith.maximumf %a, %b : f32
  return %0, %1 : f32, f32
}

func.func @selects(%c: i32, %a: i32, %b: i32, %x: i64, %y: i64, %f: f32, %g: f32) -> (i32, i64, f32) {
  %z = arith.constant 0 : i32
  %cond = arith.cmpi sgt, %c, %z : i32
  %0 = arith.select %cond, %a, %b : i32
  %1 = arith.select %cond, %x, %y : i64
  %2 = arith.select %cond, %f, %g : f32
  return %0, %1, %2 : i32, i64, f32
}
