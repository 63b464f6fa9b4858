# Golden 'dynamic_shapes': dyn_shape_2d.mlir, one function. Covers: dynamic dimensions: i64 index arithmetic, shape lists.
    def dyn_transpose_rowsum(r0):
        "sync func @dyn_transpose_rowsum(%input0: tensor<?x?xf32>) -> (%output0: tensor<?x?xf32>, %output1: tensor<?xf32>)"
        r4 = r6 = None
        # pc 0x3a-0x41a hal.buffer_view.dim, hal.buffer_view.create
        i9 = 553648160  # FLOAT_32
        i10 = 1  # DENSE_ROW_MAJOR
        i18 = 0
        r1 = None
        i24 = 4
        r2 = refs.get(0)  # !hal.device
        r3 = refs.get(1)  # !hal.executable
        # QUEUE_1: pc 0xb3-0x3bd, 18 queue steps
        i24, i28, i30, i32, i36, r5 = queue_1(r0, r2, r1, r3)
        r0 = hal_buffer_view_create(r5, i18, i24, i9, i10, [i30, i28])
        r1 = hal_buffer_view_create(r5, i36, i32, i9, i10, [i28])
        return r0, r1
