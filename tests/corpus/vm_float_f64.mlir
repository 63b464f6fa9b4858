// Covers (VM dialect, ext_f64): f64 arithmetic, rem/round/round.even, math family, compares incl. cmp.nan.f64, min/max, f64 consts.
vm.module @vm_float_f64 {
  vm.func @arith(%a: f64, %b: f64) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64) {
    %add = vm.add.f64 %a, %b : f64
    %sub = vm.sub.f64 %a, %b : f64
    %mul = vm.mul.f64 %a, %b : f64
    %div = vm.div.f64 %a, %b : f64
    %rem = vm.rem.f64 %a, %b : f64
    %fma = vm.fma.f64 %a, %b, %a : f64
    %abs = vm.abs.f64 %a : f64
    %neg = vm.neg.f64 %a : f64
    %ceil = vm.ceil.f64 %a : f64
    %floor = vm.floor.f64 %a : f64
    %round = vm.round.f64 %a : f64
    %even = vm.round.f64.even %a : f64
    %mn = vm.min.f64 %a, %b : f64
    %mx = vm.max.f64 %a, %b : f64
    vm.return %add, %sub, %mul, %div, %rem, %fma, %abs, %neg, %ceil, %floor, %round, %even, %mn, %mx : f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64
  }
  vm.export @arith

  vm.func @math(%a: f64, %b: f64) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64) {
    %abs = vm.abs.f64 %a : f64
    %one = vm.const.f64 1.0
    %pos = vm.add.f64 %abs, %one : f64
    %atan = vm.atan.f64 %a : f64
    %atan2 = vm.atan2.f64 %a, %b : f64
    %cos = vm.cos.f64 %a : f64
    %sin = vm.sin.f64 %a : f64
    %exp = vm.exp.f64 %a : f64
    %exp2 = vm.exp2.f64 %a : f64
    %expm1 = vm.expm1.f64 %a : f64
    %log = vm.log.f64 %pos : f64
    %log10 = vm.log10.f64 %pos : f64
    %log1p = vm.log1p.f64 %abs : f64
    %log2 = vm.log2.f64 %pos : f64
    %pow = vm.pow.f64 %pos, %b : f64
    %rsqrt = vm.rsqrt.f64 %pos : f64
    %sqrt = vm.sqrt.f64 %pos : f64
    %tanh = vm.tanh.f64 %a : f64
    %erf = vm.erf.f64 %a : f64
    vm.return %atan, %atan2, %cos, %sin, %exp, %exp2, %expm1, %log, %log10, %log1p, %log2, %pow, %rsqrt, %sqrt, %tanh, %erf : f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64
  }
  vm.export @math

  vm.func @compares(%a: f64, %b: f64) -> (i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, f64) {
    %eqo = vm.cmp.eq.f64.o %a, %b : f64
    %equ = vm.cmp.eq.f64.u %a, %b : f64
    %neo = vm.cmp.ne.f64.o %a, %b : f64
    %neu = vm.cmp.ne.f64.u %a, %b : f64
    %lto = vm.cmp.lt.f64.o %a, %b : f64
    %ltu = vm.cmp.lt.f64.u %a, %b : f64
    %lteo = vm.cmp.lte.f64.o %a, %b : f64
    %lteu = vm.cmp.lte.f64.u %a, %b : f64
    %nanbits = vm.const.i64 9221120237041090560
    %nan = vm.bitcast.i64.f64 %nanbits : i64 -> f64
    %isnan = vm.cmp.nan.f64 %nan : f64
    %isnan2 = vm.cmp.nan.f64 %a : f64
    %big = vm.const.f64 1.0e300
    %sq = vm.mul.f64 %big, %a : f64
    vm.return %eqo, %equ, %neo, %neu, %lto, %ltu, %lteo, %lteu, %isnan, %isnan2, %sq : i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, f64
  }
  vm.export @compares
}
