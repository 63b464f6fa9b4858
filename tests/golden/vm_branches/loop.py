# Golden 'vm_branches': vm_branches.mlir, one function. Covers: VM dialect: br_table as if/elif, counted loop, i64 compares.
    def loop(i0, i1):
        "VM export 'loop' (cconv '0if_if'); no ABI declaration."
        i2 = 0
        i3 = 1
        i4 = 31
        i4 = i0 & i4
        i0 = i2
        while True:
            i2 = int(i0 < i4)
            if i2:
                i2 = cast_si32_f32(i0)
                i2 = add_f32(i1, i2)
                i0 = add_i32(i0, i3)
                i1 = i2
                continue
            return i4, i1
