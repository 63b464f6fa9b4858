// Covers (VM dialect): vm.switch.ref over !vm.buffer refs (iree-dump-module 3.13 misdecodes it: the text is garbage from there on).
vm.module @vm_switch_ref {
  vm.rodata private @r0 dense<[1, 2, 3, 4]> : tensor<4xi8>
  vm.rodata private @r1 dense<[5, 6]> : tensor<2xi8>
  vm.func @pick(%idx: i32) -> (i64, i32) {
    %a = vm.const.ref.rodata @r0 : !vm.buffer
    %b = vm.const.ref.rodata @r1 : !vm.buffer
    %null = vm.const.ref.zero : !vm.buffer
    %s = vm.switch.ref %idx[%a, %b] else %null : !vm.buffer
    %nz = vm.cmp.nz.ref %s : !vm.buffer
    %c0 = vm.const.i64.zero
    %len = vm.select.i64 %nz, %c0, %c0 : i64
    %cond = vm.cmp.nz.i32 %nz : i32
    vm.cond_br %cond, ^has(%s : !vm.buffer), ^none
  ^has(%buf: !vm.buffer):
    %l = vm.buffer.length %buf : !vm.buffer -> i64
    vm.return %l, %nz : i64, i32
  ^none:
    vm.return %len, %nz : i64, i32
  }
  vm.export @pick
}
