// Covers (VM dialect): vm.buffer alloc/clone/length/copy/compare/fill/load/store for i8..i64,f32,f64, buffer.hash, rodata buffers.
vm.module @vm_buffer {
  vm.rodata private @data dense<[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]> : tensor<16xi8>
  vm.func @load_store(%x: i32, %y: i64, %f: f32, %d: f64) -> (i32, i32, i32, i32, i32, i64, f32, f64, i64, i32) {
    %c64 = vm.const.i64 64
    %c0 = vm.const.i64.zero
    %c1 = vm.const.i64 1
    %c2 = vm.const.i64 2
    %c3 = vm.const.i64 3
    %c5 = vm.const.i64 5
    %c8 = vm.const.i32 8
    %buf = vm.buffer.alloc %c64, %c8 : !vm.buffer
    vm.buffer.store.i8 %x, %buf[%c0] : i32 -> !vm.buffer
    vm.buffer.store.i16 %x, %buf[%c1] : i32 -> !vm.buffer
    vm.buffer.store.i32 %x, %buf[%c1] : i32 -> !vm.buffer
    vm.buffer.store.i64 %y, %buf[%c1] : i64 -> !vm.buffer
    vm.buffer.store.f32 %f, %buf[%c5] : f32 -> !vm.buffer
    vm.buffer.store.f64 %d, %buf[%c3] : f64 -> !vm.buffer
    %l8u = vm.buffer.load.i8.u %buf[%c0] : !vm.buffer -> i32
    %l8s = vm.buffer.load.i8.s %buf[%c0] : !vm.buffer -> i32
    %l16u = vm.buffer.load.i16.u %buf[%c1] : !vm.buffer -> i32
    %l16s = vm.buffer.load.i16.s %buf[%c1] : !vm.buffer -> i32
    %l32 = vm.buffer.load.i32 %buf[%c2] : !vm.buffer -> i32
    %l64 = vm.buffer.load.i64 %buf[%c1] : !vm.buffer -> i64
    %lf = vm.buffer.load.f32 %buf[%c5] : !vm.buffer -> f32
    %ld = vm.buffer.load.f64 %buf[%c3] : !vm.buffer -> f64
    %len = vm.buffer.length %buf : !vm.buffer -> i64
    %s8 = vm.add.i32 %l8u, %l8s : i32
    vm.return %s8, %l16u, %l16s, %l32, %l8u, %l64, %lf, %ld, %len, %l8s : i32, i32, i32, i32, i32, i64, f32, f64, i64, i32
  }
  vm.export @load_store

  vm.func @fill_copy_compare(%v: i32, %w: i64, %f: f32, %d: f64) -> (i32, i32, i32, i32, i64, i64, i64) {
    %c0 = vm.const.i64.zero
    %c2 = vm.const.i64 2
    %c4 = vm.const.i64 4
    %c8 = vm.const.i64 8
    %c16 = vm.const.i64 16
    %c32 = vm.const.i64 32
    %c96 = vm.const.i64 96
    %a0 = vm.const.i32.zero
    %buf = vm.buffer.alloc %c96, %a0 : !vm.buffer
    vm.buffer.fill.i8 %buf, %c0, %c8, %v : i32 -> !vm.buffer
    vm.buffer.fill.i16 %buf, %c4, %c4, %v : i32 -> !vm.buffer
    vm.buffer.fill.i32 %buf, %c4, %c4, %v : i32 -> !vm.buffer
    vm.buffer.fill.i64 %buf, %c4, %c2, %w : i64 -> !vm.buffer
    vm.buffer.fill.f32 %buf, %c16, %c2, %f : f32 -> !vm.buffer
    vm.buffer.fill.f64 %buf, %c8, %c2, %d : f64 -> !vm.buffer
    %ro = vm.const.ref.rodata @data : !vm.buffer
    %clone = vm.buffer.clone %ro, %c4, %c8, %a0 : !vm.buffer -> !vm.buffer
    vm.buffer.copy %clone, %c0, %buf, %c0, %c8 : !vm.buffer -> !vm.buffer
    %eq1 = vm.buffer.compare %clone, %c0, %buf, %c0, %c8 : !vm.buffer, !vm.buffer
    %eq2 = vm.buffer.compare %ro, %c0, %buf, %c0, %c8 : !vm.buffer, !vm.buffer
    %b8 = vm.buffer.load.i8.u %buf[%c8] : !vm.buffer -> i32
    %b9 = vm.buffer.load.i32 %buf[%c4] : !vm.buffer -> i32
    %h1 = vm.buffer.hash %buf, %c0, %c96 : !vm.buffer -> i64
    %h2 = vm.buffer.hash %ro, %c2, %c8 : !vm.buffer -> i64
    %rlen = vm.buffer.length %ro : !vm.buffer -> i64
    vm.return %eq1, %eq2, %b8, %b9, %h1, %h2, %rlen : i32, i32, i32, i32, i64, i64, i64
  }
  vm.export @fill_copy_compare
}
