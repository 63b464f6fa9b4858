// Covers: host f32 arithmetic and math: add/sub/mul/div/rem(IEEE remainder), neg, sqrt, abs, floor, ceil, round, exp, log, fma.
func.func @f32_ops(%a: f32, %b: f32) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
  %add = arith.addf %a, %b : f32
  %sub = arith.subf %a, %b : f32
  %mul = arith.mulf %a, %b : f32
  %div = arith.divf %a, %b : f32
  %rem = arith.remf %a, %b : f32
  %neg = arith.negf %a : f32
  %abs = math.absf %a : f32
  %sq = math.sqrt %abs : f32
  %fl = math.floor %a : f32
  %ce = math.ceil %a : f32
  %ro = math.round %a : f32
  %ex = math.exp %a : f32
  %fma = math.fma %a, %b, %a : f32
  return %add, %sub, %mul, %div, %rem, %neg, %abs, %sq, %fl, %ce, %ro, %ex, %fma
      : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
}

// Host transcendental math on f32 scalars.
func.func @f32_math(%a: f32, %b: f32) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
  %abs = math.absf %a : f32
  %one = arith.constant 1.0 : f32
  %pos = arith.addf %abs, %one : f32
  %log = math.log %pos : f32
  %log2 = math.log2 %pos : f32
  %log10 = math.log10 %pos : f32
  %log1p = math.log1p %abs : f32
  %sin = math.sin %a : f32
  %cos = math.cos %a : f32
  %tanh = math.tanh %a : f32
  %atan2 = math.atan2 %a, %b : f32
  %pow = math.powf %pos, %b : f32
  %rsq = math.rsqrt %pos : f32
  return %log, %log2, %log10, %log1p, %sin, %cos, %tanh, %atan2, %pow, %rsq
      : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
}
