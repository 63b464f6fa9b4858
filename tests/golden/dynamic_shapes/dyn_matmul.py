# Golden 'dynamic_shapes': dyn_shape_2d.mlir, one function. Covers: dynamic dimensions: i64 index arithmetic, shape lists.
    def dyn_matmul(r0, r1):
        "sync func @dyn_matmul(%input0: tensor<?x?xf32>, %input1: tensor<?x?xf32>) -> (%output0: tensor<?x?xf32>)"
        r5 = r6 = r7 = None
        # pc 0x24-0x3c4 hal.buffer_view.dim, hal.buffer_view.create
        i5 = 553648160  # FLOAT_32
        i6 = 1  # DENSE_ROW_MAJOR
        i14 = 0
        r2 = None
        r3 = refs.get(0)  # !hal.device
        r4 = refs.get(1)  # !hal.executable
        # QUEUE_0: pc 0x92-0x38d, 21 queue steps
        i22, i26, i32, r1 = queue_0(r0, r3, r1, r2, r4)
        r0 = hal_buffer_view_create(r1, i14, i26, i5, i6, [i22, i32])
        return r0
