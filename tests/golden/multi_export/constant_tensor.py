# Golden 'multi_export': multi_export.mlir, one function. Covers: several exports and internal calls; one export table.
    def constant_tensor():
        "sync func @constant_tensor() -> (%output0: tensor<3xi32>)"
        r3 = None
        # pc 0x1-0x110 hal.fence.create, hal.buffer_view.create
        i0 = 268435488  # INT_32
        i1 = 1  # DENSE_ROW_MAJOR
        i2 = 3
        i6 = 0
        r0 = None
        i10 = 12
        r1 = refs.get(2)  # !hal.buffer
        r2 = refs.get(0)  # !hal.device
        # QUEUE_0: pc 0x61-0xdb, 5 queue steps
        r4 = queue_0(r2, r0, r1)
        r0 = hal_buffer_view_create(r4, i6, i10, i0, i1, [i2])
        return r0
