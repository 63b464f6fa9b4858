# Golden 'multi_export': multi_export.mlir, one function. Covers: several exports and internal calls; one export table.
    def scale_tensor(r0, i0):
        "sync func @scale_tensor(%input0: tensor<3xf32>, %input1: f32) -> (%output0: tensor<3xf32>)"
        # pc 0x1-0x1e3 hal.buffer_view.assert, hal.buffer.assert (+8 more)
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
        recording = [(ALLOCA, i10, i12, r1, i10, i9, i18, i14, i10)]
        r0 = None
        i5 = bitcast_f32_i32(i0)
        recording.append((CREATE, i6, i4, i12, i3))
        r6 = rodata_scale_tensor_dispatch_0_elementwise_3_f3
        recording.append((LOOKUP, r3, r6))
        r6 = None
        recording.append(
            (
                DISPATCH,
                r3,
                LOOKED_UP,
                i6,
                i6,
                i6,
                i10,
                (i5,),
                ((i3, i3, r4, i10, i14), (i3, i3, ALLOCATED, i10, i14)),
            )
        )
        r3 = r4 = None
        recording.append((BARRIER, i2, i1, i10))
        # fused: the steps recorded above, command_buffer.finalize, fence.create, device.queue.execute, fence.await
        r5, i18, i0 = submit_one_shot(
            r2,  # device
            recording,  # the steps recorded above
            i10,  # flags (fence.create)
            i12,  # affinity (queue.execute)
            ALLOCA_FENCE,  # wait fence: the queue.alloca's
            i10,  # flags
            i8,  # timeout (fence.await)
            i10,  # flags
        )
        r2 = recording = None
        if i0:
            raise vm_fail(i0, "failed to wait on timepoint", "scale_tensor", None)
        # pc 0x1f3-0x218 hal.buffer_view.create
        r0 = hal_buffer_view_create(r5, i10, i14, i7, i6, [i16])
        return r0
