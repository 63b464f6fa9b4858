# Golden 'multi_export': multi_export.mlir, one function. Covers: several exports and internal calls; one export table.
    def scale_tensor(r0, i0):
        "sync func @scale_tensor(%input0: tensor<3xf32>, %input1: f32) -> (%output0: tensor<3xf32>)"
        r6 = None
        # pc 0x20-0x218 hal.buffer_view.assert, hal.buffer_view.create
        i6 = 1  # DENSE_ROW_MAJOR
        i7 = 553648160  # FLOAT_32
        i10 = 0
        r1 = None
        i14 = 12
        i16 = 3
        r2 = refs.get(0)  # !hal.device
        r3 = refs.get(1)  # !hal.executable
        r4 = rodata_input0
        # QUEUE_1: pc 0x87-0x1e3, 14 queue steps
        r5 = queue_1(r0, r4, r2, r1, i0, r3)
        r0 = hal_buffer_view_create(r5, i10, i14, i7, i6, [i16])
        return r0
