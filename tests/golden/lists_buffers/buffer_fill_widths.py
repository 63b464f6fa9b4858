# Golden 'lists_buffers': util_buffer.mlir, one function. Covers: !vm.buffer and !vm.list helpers, ref moves and releases.
    def buffer_fill_widths(i0, i1):
        "sync func @buffer_fill_widths(%input0: i32, %input1: i16) -> (%output0: i1, %output1: i32, %output2: i16)"
        i2 = 0
        i4 = 2
        i6 = 4
        i8 = 8
        # tests/corpus/util_buffer.mlir:47:10
        i10 = 16
        # line 48:10
        i12 = 32
        # line 49:10
        i14 = 0
        r0 = buffer_alloc(i12, i14)
        # line 50:3
        buffer_fill_i32(r0, i2, i6, i0)
        # line 51:3
        buffer_fill_i16(r0, i8, i8, i1)
        # line 52:9
        i0 = buffer_compare(r0, i2, r0, i10, i10)
        # line 53:8
        i1 = buffer_load_i32(r0, i4)
        # line 54:8
        i2 = buffer_load_i16_s(r0, i8)
        # line 42:1
        return i0, i1, i2
