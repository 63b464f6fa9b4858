# Golden 'vm_branches': vm_branches.mlir, one function. Covers: VM dialect: br_table as if/elif, counted loop, i64 compares.
    def table(i0, i2):
        "VM export 'table' (cconv '0iI_I'); no ABI declaration."
        # pc 0x1-0x17 vm.const.i64
        i4 = 2
        i6 = -1
        if i0 == 0:
            # pc 0x43-0x4a vm.add.i64
            i4 = add_i64(i2, i4)
            return i4
        elif i0 == 1:
            # pc 0x51-0x56 vm.ext.i32.i64.u
            i2 = i0 & 0xFFFFFFFF
            return i2
        elif i0 == 2:
            # pc 0x43-0x4a vm.add.i64
            i4 = add_i64(i2, i4)
            return i4
        else:
            # pc 0x35-0x3c vm.mul.i64
            i6 = mul_i64(i2, i6)
            return i6
