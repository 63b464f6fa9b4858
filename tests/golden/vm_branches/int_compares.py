# Golden 'vm_branches': vm_branches.mlir, one function. Covers: VM dialect: br_table as if/elif, counted loop, i64 compares.
    def int_compares(i0, i1, i2, i4):
        "VM export 'int_compares' (cconv '0iiII_iiiiiiiiiiiiii'); no ABI declaration."
        i6 = 1
        # tests/corpus/vm_branches.mlir:44:10
        i7 = int(i0 == i1)
        # line 45:10
        i8 = int(i0 != i1)
        # line 46:10
        i9 = int(i0 < i1)
        # line 47:10
        i10 = cmp_lt_i32_u(i0, i1)
        # line 48:10
        i11 = int(i0 != 0)
        # line 49:10
        i0 = int(i1 < i0)
        # line 50:10
        i1 = i10 ^ i6
        # line 51:10
        i12 = int(i2 == i4)
        # line 52:10
        i13 = int(i2 != i4)
        # line 53:10
        i14 = int(i2 < i4)
        # line 54:11
        i15 = cmp_lt_i64_u(i2, i4)
        # line 55:11
        i16 = int(i2 != 0)
        # line 56:11
        i17 = int(i4 < i2)
        i6 = i17 ^ i6
        # line 57:11
        i17 = cmp_lt_i64_u(i4, i2)
        # line 58:5
        return i7, i8, i9, i10, i11, i0, i1, i12, i13, i14, i15, i16, i6, i17
