# Golden 'lists_buffers': util_buffer.mlir, one function. Covers: !vm.buffer and !vm.list helpers, ref moves and releases.
    def buffer_ops(i0, i2, i4, i5):
        "sync func @buffer_ops(%input0: i32, %input1: i64, %input2: f32, %input3: i32) -> (%output0: i32, %output1: i64, %output2: f32, %output3: i1, %output4: index, %output5: i32, %output6: i8, %output7: i16)"
        # pc 0x1-0xf8 vm.const.i32.zero, vm.const.i32, vm.const.i64 (+17 more)
        i1 = 0
        i6 = 15
        i8 = 64
        i10 = 32
        i12 = 24
        i14 = 4
        i16 = 2
        i18 = 1
        i20 = 0
        i7 = -91
        i22 = 3
        r0 = rodata_0
        i6 = i5 & i6
        i24 = i6 & 0xFFFFFFFF
        i8 = add_i64(i24, i8)
        r1 = buffer_alloc(i8, i1)
        buffer_fill_i8(r1, i20, i8, i7)
        buffer_store_i32(r1, i18, i0)
        buffer_store_i64(r1, i18, i2)
        buffer_store_f32(r1, i14, i4)
        i0 = buffer_load_i32(r1, i18)
        i18 = buffer_load_i64(r1, i18)
        i1 = buffer_load_f32(r1, i14)
        i2 = buffer_load_i8_s(r1, i14)
        i3 = buffer_load_i16_s(r1, i16)
        buffer_copy(r1, i20, r1, i10, i12)
        i4 = buffer_compare(r1, i20, r1, i10, i12)
        r1 = None
        i22 = i5 & i22
        i6 = i22 & 0xFFFFFFFF
        i5 = buffer_load_i32(r0, i6)
        return i0, i18, i1, i4, i8, i5, i2, i3
