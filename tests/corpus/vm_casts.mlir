// Covers (VM dialect): int<->float casts (si32/ui32/si64 <-> f32, si64/ui64 <-> f64, f32->si64/ui64), bitcasts, ext.f32.f64, trunc.f64.f32, trunc.i64.i32, ext.i32.i64.
vm.module @vm_casts {
  vm.func @f32_casts(%i: i32, %l: i64, %f: f32) -> (f32, f32, f32, i32, i32, i64, i64, i32, f32) {
    %a = vm.cast.si32.f32 %i : i32 -> f32
    %b = vm.cast.ui32.f32 %i : i32 -> f32
    %c = vm.cast.si64.f32 %l : i64 -> f32
    %d = vm.cast.f32.si32 %f : f32 -> i32
    %af = vm.abs.f32 %f : f32
    %e = vm.cast.f32.ui32 %af : f32 -> i32
    %g = vm.cast.f32.si64 %f : f32 -> i64
    %h = vm.cast.f32.ui64 %af : f32 -> i64
    %bits = vm.bitcast.f32.i32 %f : f32 -> i32
    %back = vm.bitcast.i32.f32 %i : i32 -> f32
    vm.return %a, %b, %c, %d, %e, %g, %h, %bits, %back : f32, f32, f32, i32, i32, i64, i64, i32, f32
  }
  vm.export @f32_casts

  vm.func @f64_casts(%l: i64, %d: f64, %f: f32) -> (f64, f64, i64, i64, i64, f64, f64, f32) {
    %a = vm.cast.si64.f64 %l : i64 -> f64
    %b = vm.cast.ui64.f64 %l : i64 -> f64
    %c = vm.cast.f64.si64 %d : f64 -> i64
    %ad = vm.abs.f64 %d : f64
    %e = vm.cast.f64.ui64 %ad : f64 -> i64
    %bits = vm.bitcast.f64.i64 %d : f64 -> i64
    %back = vm.bitcast.i64.f64 %l : i64 -> f64
    %ext = vm.ext.f32.f64 %f : f32 -> f64
    %tr = vm.trunc.f64.f32 %d : f64 -> f32
    vm.return %a, %b, %c, %e, %bits, %back, %ext, %tr : f64, f64, i64, i64, i64, f64, f64, f32
  }
  vm.export @f64_casts

  vm.func @int_casts(%i: i32, %l: i64) -> (i64, i64, i32) {
    %s = vm.ext.i32.i64.s %i : i32 -> i64
    %u = vm.ext.i32.i64.u %i : i32 -> i64
    %t = vm.trunc.i64.i32 %l : i64 -> i32
    vm.return %s, %u, %t : i64, i64, i32
  }
  vm.export @int_casts
}
