// Covers: host f64 arithmetic with the f64 VM extension (demotion off): add/sub/mul/div/rem/neg/sqrt/floor/ceil/abs/exp/fma.
func.func @f64_ops(%a: f64, %b: f64) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64) {
  %add = arith.addf %a, %b : f64
  %sub = arith.subf %a, %b : f64
  %mul = arith.mulf %a, %b : f64
  %div = arith.divf %a, %b : f64
  %rem = arith.remf %a, %b : f64
  %neg = arith.negf %a : f64
  %abs = math.absf %a : f64
  %sq = math.sqrt %abs : f64
  %fl = math.floor %a : f64
  %ce = math.ceil %a : f64
  %ex = math.exp %a : f64
  %fma = math.fma %a, %b, %a : f64
  return %add, %sub, %mul, %div, %rem, %neg, %abs, %sq, %fl, %ce, %ex, %fma
      : f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64
}

// f64 compares, min/max, select and f64<->i64 bitcast, extf from f32.
func.func @f64_misc(%a: f64, %b: f64, %c: f32) -> (i1, i1, f64, f64, f64, i64, f64, f64) {
  %lt = arith.cmpf olt, %a, %b : f64
  %une = arith.cmpf une, %a, %b : f64
  %mn = arith.minimumf %a, %b : f64
  %mx = arith.maximumf %a, %b : f64
  %sel = arith.select %lt, %a, %b : f64
  %bits = arith.bitcast %a : f64 to i64
  %back = arith.bitcast %bits : i64 to f64
  %ext = arith.extf %c : f32 to f64
  return %lt, %une, %mn, %mx, %sel, %bits, %back, %ext : i1, i1, f64, f64, f64, i64, f64, f64
}

// i64 -> f64 conversions (f64 -> i64 fptosi does not legalize in 3.13).
func.func @f64_casts(%i: i64, %f: f64) -> (f64, f64, f64) {
  %s = arith.sitofp %i : i64 to f64
  %u = arith.uitofp %i : i64 to f64
  %m = arith.mulf %s, %f : f64
  return %s, %u, %m : f64, f64, f64
}
