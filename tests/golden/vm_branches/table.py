# Golden 'vm_branches': vm_branches.mlir, one function. Covers: VM dialect: br_table as if/elif, counted loop, i64 compares.
    def table(i0, i2):
        "VM export 'table' (cconv '0iI_I'); no ABI declaration."
        i4 = 2
        i6 = -1
        if i0 == 0:
            i4 = add_i64(i2, i4)
            return i4
        elif i0 == 1:
            i2 = ext_i32_i64_u(i0)
            return i2
        elif i0 == 2:
            i4 = add_i64(i2, i4)
            return i4
        else:
            i6 = mul_i64(i2, i6)
            return i6
