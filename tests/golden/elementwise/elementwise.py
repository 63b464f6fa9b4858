# Golden 'elementwise': tensor_elementwise.mlir, one function. Covers: dispatches behind a fence wait; its failure arm as an early exit; HAL calls with enum arguments; command-buffer init function.
    def elementwise(r0, r1):
        "sync func @elementwise(%input0: tensor<2x5xf32>, %input1: tensor<2x5xf32>) -> (%output0: tensor<2x5xf32>, %output1: tensor<2x5xf32>, %output2: tensor<2x5xf32>)"
        # pc 0x1-0x1d5 hal.buffer_view.assert, hal.buffer.assert, hal.fence.create (+2 more)
        i0 = 16
        i1 = 1  # DENSE_ROW_MAJOR
        i2 = 553648160  # FLOAT_32
        i3 = 3075  # TRANSFER | DISPATCH_STORAGE
        i4 = 48  # DEVICE_LOCAL
        i6 = 2
        i8 = 5
        i10 = 40
        i12 = 64
        i14 = 128
        i16 = 192
        i18 = 0
        i20 = -1
        r2 = None
        i5 = -1
        r3 = refs.get(0)  # !hal.device
        r4 = refs.get(2)  # !hal.command_buffer
        r5 = rodata_input0
        r6 = rodata_tensor
        # fused: buffer_view.assert, buffer_view.buffer, device.allocator, buffer.assert
        r5, r0 = check_input_allocator(r0, r5, i2, i1, (i6, i8), r3, r6, i10, i0, i3)
        r7 = rodata_input1
        # fused: buffer_view.assert, buffer_view.buffer, buffer.assert
        r7 = check_input(r1, r7, i2, i1, (i6, i8), r0, r6, i10, i0, i3)
        r1 = r6 = r0 = None
        # fused: fence.create, device.queue.alloca, fence.create, device.queue.execute.indirect, fence.await
        r1, i0 = submit_alloca_execute_indirect(
            r3,  # device
            i18,  # flags (fence.create)
            i20,  # affinity (queue.alloca)
            r2,  # wait fence
            i18,  # pool
            i4,  # memory types
            i3,  # buffer usage
            i16,  # allocation size
            i18,  # flags
            i18,  # flags (fence.create)
            i20,  # affinity (queue.execute.indirect)
            r4,  # command buffer
            i18,  # flags
            [(r5, i18, i10), (r7, i18, i10), (ALLOCATED, i18, i16)],  # binding table
            (2,),  # table entries of the new buffer (ALLOCATED)
            i5,  # timeout (fence.await)
            i18,  # flags
        )
        r3 = r4 = r5 = r7 = None
        if i0:
            raise vm_fail(i0, "failed to wait on timepoint", "elementwise", None)
        # pc 0x1e5-0x25c hal.buffer_view.create
        r0 = hal_buffer_view_create(r1, i18, i10, i2, i1, [i6, i8])
        r2 = hal_buffer_view_create(r1, i12, i10, i2, i1, [i6, i8])
        r3 = hal_buffer_view_create(r1, i14, i10, i2, i1, [i6, i8])
        return r0, r2, r3
