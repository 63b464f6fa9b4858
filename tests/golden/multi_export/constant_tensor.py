# Golden 'multi_export': multi_export.mlir, one function. Covers: several exports and internal calls; one export table.
    def constant_tensor():
        "sync func @constant_tensor() -> (%output0: tensor<3xi32>)"
        # pc 0x1-0xdb hal.fence.create, hal.device.queue.alloca, hal.device.queue.copy (+1 more)
        i0 = 268435488  # INT_32
        i1 = 1  # DENSE_ROW_MAJOR
        i2 = 3
        i4 = -1
        i6 = 0
        r0 = None
        i8 = -1
        i10 = 12
        i5 = 48  # DEVICE_LOCAL
        i12 = 3075  # TRANSFER | DISPATCH_STORAGE
        r1 = refs.get(2)  # !hal.buffer
        r2 = refs.get(0)  # !hal.device
        r3 = hal_fence_create(r2, i6)
        r4 = hal_device_queue_alloca(r2, i8, r0, r3, i6, i5, i12, i10, i6)
        r0 = hal_fence_create(r2, i6)
        hal_device_queue_copy(r2, i8, r3, r0, r1, i6, r4, i6, i10, i6)
        r2 = r3 = r1 = None
        i4 = hal_fence_await(i4, i6, [r0])
        r0 = None
        if i4:
            raise vm_fail(i4, "failed to wait on timepoint", "constant_tensor", None)
        # pc 0xeb-0x110 hal.buffer_view.create
        r0 = hal_buffer_view_create(r4, i6, i10, i0, i1, [i2])
        return r0
