# Golden 'matmul': tensor_matmul.mlir, one function. Covers: a matmul dispatch; buffer asserts; long vm.fail messages hoisted to module constants.
    def batch_matmul(r0, r1):
        "sync func @batch_matmul(%input0: tensor<2x3x4xf32>, %input1: tensor<2x4x2xf32>) -> (%output0: tensor<2x3x2xf32>)"
        # pc 0x1-0x1d9 hal.buffer_view.assert, hal.buffer.assert, hal.fence.create (+2 more)
        i0 = 16
        i1 = 1  # DENSE_ROW_MAJOR
        i2 = 553648160  # FLOAT_32
        i3 = 3075  # TRANSFER | DISPATCH_STORAGE
        i4 = 48  # DEVICE_LOCAL
        i6 = 2
        i8 = 3
        i10 = 4
        i12 = 96
        i14 = 64
        i16 = 48
        i18 = 0
        i20 = -1
        r2 = None
        i5 = -1
        r3 = refs.get(0)  # !hal.device
        r4 = refs.get(3)  # !hal.command_buffer
        r5 = rodata_input0
        r6 = rodata_tensor
        # fused: buffer_view.assert, buffer_view.buffer, device.allocator, buffer.assert
        r5, r0 = check_input_allocator(r0, r5, i2, i1, (i6, i8, i10), r3, r6, i12, i0, i3)
        r7 = rodata_input1
        # fused: buffer_view.assert, buffer_view.buffer, buffer.assert
        r7 = check_input(r1, r7, i2, i1, (i6, i10, i6), r0, r6, i14, i0, i3)
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
            [(r5, i18, i12), (r7, i18, i14), (ALLOCATED, i18, i16)],  # binding table
            (2,),  # table entries of the new buffer (ALLOCATED)
            i5,  # timeout (fence.await)
            i18,  # flags
        )
        r3 = r4 = r5 = r7 = None
        if i0:
            raise vm_fail(i0, "failed to wait on timepoint", "batch_matmul", None)
        # pc 0x1e9-0x212 hal.buffer_view.create
        r0 = hal_buffer_view_create(r1, i18, i16, i2, i1, [i6, i8, i6])
        return r0
