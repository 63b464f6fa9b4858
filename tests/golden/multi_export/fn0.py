# Golden 'multi_export': multi_export.mlir, one function. Covers: several exports and internal calls; one export table.
    def fn0(i0):
        "Internal VM function 0 (cconv '0i_i')."
        # pc 0x1-0xf vm.const.i32, vm.mul.i32
        i1 = 3
        i1 = mul_i32(i0, i1)
        return i1
