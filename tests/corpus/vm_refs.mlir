// Covers (VM dialect): ref handling: vm.select.ref, cmp.eq/ne/nz.ref, const.ref.zero, cast.any.ref via a !vm.ref<?> callee arg, list.get.ref type mismatch -> null, ref block args, trace/print.
vm.module @vm_refs {
  vm.rodata private @hello dense<[104, 101, 108, 108, 111]> : tensor<5xi8>
  vm.func @choose(%c: i32, %n: i32) -> (i64, i32, i32, i32) {
    %l8 = vm.const.i64 8
    %z = vm.const.i32.zero
    %a = vm.buffer.alloc %l8, %z : !vm.buffer
    %b = vm.const.ref.rodata @hello : !vm.buffer
    %s = vm.select.ref %c, %a, %b : !vm.buffer
    %len = vm.buffer.length %s : !vm.buffer -> i64
    %eq = vm.cmp.eq.ref %s, %a : !vm.buffer
    %ne = vm.cmp.ne.ref %s, %b : !vm.buffer
    %null = vm.const.ref.zero : !vm.buffer
    %one = vm.const.i32 1
    %odd = vm.and.i32 %n, %one : i32
    %m = vm.select.ref %odd, %null, %s : !vm.buffer
    %nz = vm.cmp.nz.ref %m : !vm.buffer
    vm.return %len, %eq, %ne, %nz : i64, i32, i32, i32
  }
  vm.export @choose

  vm.func private @len_any(%r: !vm.ref<?>) -> i64 attributes {inlining_policy = #util.inline.never} {
    %b = vm.cast.any.ref %r : !vm.ref<?> -> !vm.buffer
    %len = vm.buffer.length %b : !vm.buffer -> i64
    vm.return %len : i64
  }

  vm.func @cast_any(%n: i32) -> (i64, i32, i32) {
    %l = vm.const.i64 12
    %z = vm.const.i32.zero
    %a = vm.buffer.alloc %l, %z : !vm.buffer
    %any = vm.cast.ref.any %a : !vm.buffer -> !vm.ref<?>
    %len = vm.call @len_any(%any) : (!vm.ref<?>) -> i64
    %lst = vm.list.alloc %z : (i32) -> !vm.list<?>
    %c1 = vm.const.i32 1
    vm.list.resize %lst, %c1 : (!vm.list<?>, i32)
    vm.list.set.ref %lst, %z, %a : (!vm.list<?>, i32, !vm.buffer)
    // Reading the buffer back as !vm.ref<?> (encoded as !vm.opaque) is a type mismatch: null, no error.
    %opaque = vm.list.get.ref %lst, %z : (!vm.list<?>, i32) -> !vm.ref<?>
    %opaque_nz = vm.cmp.nz.ref %opaque : !vm.ref<?>
    %back = vm.list.get.ref %lst, %z : (!vm.list<?>, i32) -> !vm.buffer
    vm.br ^next(%back : !vm.buffer)
  ^next(%bb: !vm.buffer):
    %nz = vm.cmp.nz.ref %bb : !vm.buffer
    vm.print "pyree_print"(%n, %len) : i32, i64
    vm.trace "pyree_trace"(%n, %bb) : i32, !vm.buffer
    vm.return %len, %nz, %opaque_nz : i64, i32, i32
  }
  vm.export @cast_any
}
