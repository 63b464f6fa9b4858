// Covers (VM dialect): vm.global.i32/i64/f32/f64 mutable with initial values, vm.global.ref (!vm.buffer), vm.initializer, load/store across calls.
vm.module @vm_globals {
  vm.global.i32 private mutable @count = 5 : i32
  vm.global.i64 private mutable @big = 1099511627776 : i64
  vm.global.f32 private mutable @ratio = 0.5 : f32
  vm.global.f64 private mutable @precise = 0.125 : f64
  vm.global.i32 private @fixed = 42 : i32
  vm.global.ref private mutable @buf : !vm.buffer
  vm.initializer {
    %c32 = vm.const.i64 32
    %a = vm.const.i32 0
    %b = vm.buffer.alloc %c32, %a : !vm.buffer
    vm.global.store.ref %b, @buf : !vm.buffer
    vm.return
  }
  vm.func @step(%x: i32, %y: i64, %f: f32, %d: f64) -> (i32, i64, f32, f64, i32, i32) {
    %c = vm.global.load.i32 @count : i32
    %c1 = vm.add.i32 %c, %x : i32
    vm.global.store.i32 %c1, @count : i32
    %b = vm.global.load.i64 @big : i64
    %b1 = vm.add.i64 %b, %y : i64
    vm.global.store.i64 %b1, @big : i64
    %r = vm.global.load.f32 @ratio : f32
    %r1 = vm.mul.f32 %r, %f : f32
    vm.global.store.f32 %r1, @ratio : f32
    %p = vm.global.load.f64 @precise : f64
    %p1 = vm.add.f64 %p, %d : f64
    vm.global.store.f64 %p1, @precise : f64
    %fx = vm.global.load.i32 @fixed : i32
    %buf = vm.global.load.ref @buf : !vm.buffer
    %c0 = vm.const.i64.zero
    %old = vm.buffer.load.i32 %buf[%c0] : !vm.buffer -> i32
    vm.buffer.store.i32 %c1, %buf[%c0] : i32 -> !vm.buffer
    vm.return %c1, %b1, %r1, %p1, %fx, %old : i32, i64, f32, f64, i32, i32
  }
  vm.export @step

  vm.func @clear_buf() -> i32 {
    %null = vm.const.ref.zero : !vm.buffer
    vm.global.store.ref %null, @buf : !vm.buffer
    %b = vm.global.load.ref @buf : !vm.buffer
    %nz = vm.cmp.nz.ref %b : !vm.buffer
    vm.return %nz : i32
  }
  vm.export @clear_buf
}
