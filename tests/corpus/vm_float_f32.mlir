// Covers (VM dialect, ext_f32): rem.f32, round/round.even, ceil/floor, trig/exp/log family, atan2, pow, erf, rsqrt, fma, min/max, cmp.nan, compares.
vm.module @vm_float_f32 {
  vm.func @arith(%a: f32, %b: f32) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
    %add = vm.add.f32 %a, %b : f32
    %sub = vm.sub.f32 %a, %b : f32
    %mul = vm.mul.f32 %a, %b : f32
    %div = vm.div.f32 %a, %b : f32
    %rem = vm.rem.f32 %a, %b : f32
    %fma = vm.fma.f32 %a, %b, %a : f32
    %abs = vm.abs.f32 %a : f32
    %neg = vm.neg.f32 %a : f32
    %ceil = vm.ceil.f32 %a : f32
    %floor = vm.floor.f32 %a : f32
    %round = vm.round.f32 %a : f32
    %even = vm.round.f32.even %a : f32
    vm.return %add, %sub, %mul, %div, %rem, %fma, %abs, %neg, %ceil, %floor, %round, %even : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
  }
  vm.export @arith

  vm.func @math(%a: f32, %b: f32) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
    %abs = vm.abs.f32 %a : f32
    %one = vm.const.f32 1.0
    %pos = vm.add.f32 %abs, %one : f32
    %atan = vm.atan.f32 %a : f32
    %atan2 = vm.atan2.f32 %a, %b : f32
    %cos = vm.cos.f32 %a : f32
    %sin = vm.sin.f32 %a : f32
    %exp = vm.exp.f32 %a : f32
    %exp2 = vm.exp2.f32 %a : f32
    %expm1 = vm.expm1.f32 %a : f32
    %log = vm.log.f32 %pos : f32
    %log10 = vm.log10.f32 %pos : f32
    %log1p = vm.log1p.f32 %abs : f32
    %log2 = vm.log2.f32 %pos : f32
    %pow = vm.pow.f32 %pos, %b : f32
    %rsqrt = vm.rsqrt.f32 %pos : f32
    %sqrt = vm.sqrt.f32 %pos : f32
    %tanh = vm.tanh.f32 %a : f32
    %erf = vm.erf.f32 %a : f32
    %min = vm.min.f32 %a, %b : f32
    vm.return %atan, %atan2, %cos, %sin, %exp, %exp2, %expm1, %log, %log10, %log1p, %log2, %pow, %rsqrt, %sqrt, %tanh, %erf, %min : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32
  }
  vm.export @math

  vm.func @compares(%a: f32, %b: f32) -> (i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, f32) {
    %eqo = vm.cmp.eq.f32.o %a, %b : f32
    %equ = vm.cmp.eq.f32.u %a, %b : f32
    %neo = vm.cmp.ne.f32.o %a, %b : f32
    %neu = vm.cmp.ne.f32.u %a, %b : f32
    %lto = vm.cmp.lt.f32.o %a, %b : f32
    %ltu = vm.cmp.lt.f32.u %a, %b : f32
    %lteo = vm.cmp.lte.f32.o %a, %b : f32
    %lteu = vm.cmp.lte.f32.u %a, %b : f32
    %nz = vm.cmp.gte.f32.o %a, %b : f32
    %nanbits = vm.const.i32 2143289344
    %nan = vm.bitcast.i32.f32 %nanbits : i32 -> f32
    %isnan = vm.cmp.nan.f32 %nan : f32
    %isnan2 = vm.cmp.nan.f32 %a : f32
    %nano = vm.cmp.ne.f32.o %nan, %a : f32
    %mx = vm.max.f32 %a, %nan : f32
    vm.return %eqo, %equ, %neo, %neu, %lto, %ltu, %lteo, %lteu, %nz, %isnan, %isnan2, %nano, %mx : i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, f32
  }
  vm.export @compares
}
