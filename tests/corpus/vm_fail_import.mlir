// Covers (VM dialect): vm.fail with status+message (conditional and unconditional), optional imports + vm.import.resolved guarding a call.
vm.module @vm_fail_import {
  vm.import private optional @missing_module.compute(%x : i32) -> i32
  vm.func @guarded(%x: i32) -> (i32, i32) {
    %has = vm.import.resolved @missing_module.compute : i32
    %c = vm.cmp.nz.i32 %has : i32
    vm.cond_br %c, ^call, ^fallback
  ^call:
    %r = vm.call @missing_module.compute(%x) : (i32) -> i32
    vm.return %r, %has : i32, i32
  ^fallback:
    %two = vm.const.i32 2
    %d = vm.mul.i32 %x, %two : i32
    vm.return %d, %has : i32, i32
  }
  vm.export @guarded

  // Fails only for the magic value 0x5EED; status 0 otherwise (vm.fail with a zero status is a no-op at runtime).
  vm.func @check_value(%x: i32) -> i32 {
    %magic = vm.const.i32 24301
    %eq = vm.cmp.eq.i32 %x, %magic : i32
    %code = vm.const.i32 9
    %status = vm.select.i32 %eq, %code, %eq : i32
    vm.cond_fail %status, "magic value rejected"
    vm.return %x : i32
  }
  vm.export @check_value

  // Always fails with FAILED_PRECONDITION (9) and a message.
  vm.func @always_fails(%x: i32) -> i32 {
    %code = vm.const.i32 9
    vm.fail %code, "pyree corpus: deliberate failure"
  }
  vm.export @always_fails
}
