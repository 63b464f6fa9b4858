# Golden 'multi_export': multi_export.mlir, one function. Covers: several exports and internal calls; one export table.
    def scale_tensor(r0, i0):
        "sync func @scale_tensor(%input0: tensor<3xf32>, %input1: f32) -> (%output0: tensor<3xf32>)"
        # pc 0x1-0x1e3 hal.buffer_view.assert, hal.buffer.assert, hal.fence.create (+8 more)
        i1 = 13
        i2 = 28
        i3 = 0
        i4 = 3  # TRANSFER | DISPATCH
        i5 = 16
        i6 = 1  # DENSE_ROW_MAJOR
        i7 = 553648160  # FLOAT_32
        i8 = -1
        i10 = 0
        r1 = None
        i12 = -1
        i14 = 12
        i16 = 3
        i9 = 48  # DEVICE_LOCAL
        i18 = 3075
        r2 = refs.get(0)  # !hal.device
        r3 = refs.get(1)  # !hal.executable
        r4 = rodata_input0
        r5 = rodata_tensor
        # fused: buffer_view.assert, buffer_view.buffer, device.allocator, buffer.assert
        r4, r0 = check_input_allocator(r0, r4, i7, i6, (i16,), r2, r5, i14, i5, i18)
        r5 = None
        r0 = hal_fence_create(r2, i10)
        r5 = hal_device_queue_alloca(r2, i12, r1, r0, i10, i9, i18, i14, i10)
        i5 = bitcast_f32_i32(i0)
        r1 = hal_command_buffer_create(r2, i6, i4, i12, i3)
        r6 = rodata_scale_tensor_dispatch_0_elementwise_3_f3
        i18 = hal_executable_lookup_function(r3, r6)
        r6 = None
        hal_command_buffer_dispatch(
            r1, r3, i18, i6, i6, i6, i10, [i5], [(i3, i3, r4, i10, i14), (i3, i3, r5, i10, i14)]
        )
        r3 = r4 = None
        hal_command_buffer_execution_barrier(r1, i2, i1, i10)
        hal_command_buffer_finalize(r1)
        # fused: fence.create, device.queue.execute, fence.await
        i0 = submit_execute(
            r2,  # device
            i10,  # flags (fence.create)
            i12,  # affinity (queue.execute)
            r0,  # wait fence
            r1,  # command buffer
            i10,  # flags
            i8,  # timeout (fence.await)
            i10,  # flags
        )
        r2 = r0 = r1 = None
        if i0:
            raise vm_fail(i0, "failed to wait on timepoint", "scale_tensor", None)
        # pc 0x1f3-0x218 hal.buffer_view.create
        r0 = hal_buffer_view_create(r5, i10, i14, i7, i6, [i16])
        return r0
