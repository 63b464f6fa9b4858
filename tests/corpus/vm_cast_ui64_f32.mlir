// Covers (VM dialect): vm.cast.ui64.f32 on its own (iree-dump-module 3.13 aborts: "unhandled ext opcode"; the function body is missing from its dump).
vm.module @vm_cast_ui64_f32 {
  vm.func @ui64_to_f32(%l: i64) -> (f32, i32) {
    %f = vm.cast.ui64.f32 %l : i64 -> f32
    %one = vm.const.i32 1
    vm.return %f, %one : f32, i32
  }
  vm.export @ui64_to_f32

  vm.func @after(%x: i32) -> i32 {
    %y = vm.add.i32 %x, %x : i32
    vm.return %y : i32
  }
  vm.export @after
}
