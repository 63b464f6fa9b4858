# Golden 'loop': cf_scf_while.mlir, one function. Covers: host loops: while/if nesting, break/continue, block-argument remaps.
    def collatz_steps(i0):
        "sync func @collatz_steps(%input0: i32) -> (%output0: i32)"
        # tests/corpus/cf_scf_while.mlir:3:9
        i1 = 0
        # line 4:9
        i2 = 1
        # line 5:9
        i3 = 2
        # line 6:9
        i4 = 3
        # line 7:10
        i5 = 63
        # line 9:13
        i5 = i0 & i5
        # line 10:9
        i5 = add_i32(i5, i2)
        # line 11:12
        i0 = i5
        while True:
            # line 12:13
            i5 = int(i0 != i2)
            # line 13:5
            if i5:
                # line 16:10
                i5 = rem_i32_u(i0, i3)
                # line 17:12
                i5 = int(i5 != 0)
                # line 18:13
                if i5:
                    # tests/corpus/cf_scf_while.mlir:11:23, tests/corpus/cf_scf_while.mlir:4:9
                    i5 = fma_i32(i0, i4, i2)
                    # line 18:13
                    i0 = i5
                else:
                    # line 23:12
                    i0 = div_i32_u(i0, i3)
                # line 26:11
                i5 = add_i32(i1, i2)
                # line 27:5
                i1 = i5
                continue
            # line 2:1
            return i1
