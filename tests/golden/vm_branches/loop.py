# Golden 'vm_branches': vm_branches.mlir, one function. Covers: VM dialect: br_table as if/elif, counted loop, i64 compares.
    def loop(i0, i1):
        "VM export 'loop' (cconv '0if_if'); no ABI declaration."
        # pc 0x1-0x19 vm.const.i32.zero, vm.const.i32, vm.and.i32 (+1 more)
        i2 = 0
        i3 = 1
        i4 = 31
        i4 = i0 & i4
        i0 = i2
        while True:
            # pc 0x25-0x2c vm.cmp.lt.i32.s
            i2 = int(i0 < i4)
            if i2:
                # pc 0x3d-0x52 vm.cast.si32.f32, vm.add.f32, vm.add.i32 (+1 more)
                i2 = cast_si32_f32(i0)
                i2 = add_f32(i1, i2)
                i0 = add_i32(i0, i3)
                i1 = i2
                continue
            return i4, i1
