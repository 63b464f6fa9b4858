# Golden 'dynamic_shapes': dyn_shape_2d.mlir, one function. Covers: dynamic dimensions: i64 index arithmetic, shape lists.
    def dyn_matmul(r0, r1):
        "sync func @dyn_matmul(%input0: tensor<?x?xf32>, %input1: tensor<?x?xf32>) -> (%output0: tensor<?x?xf32>)"
        # pc 0x1-0x38d hal.buffer_view.dim, hal.buffer_view.assert, hal.buffer.assert (+8 more)
        i0 = 13
        i1 = 28
        i2 = 3
        i3 = 32
        i4 = 16
        i5 = 553648160  # FLOAT_32
        i6 = 1  # DENSE_ROW_MAJOR
        i7 = 0
        i8 = -1
        i10 = 1
        i12 = 64
        i14 = 0
        r2 = None
        i16 = -1
        i18 = 4
        i9 = 48
        i20 = 3075
        r3 = refs.get(0)  # !hal.device
        r4 = refs.get(1)  # !hal.executable
        i22 = hal_buffer_view_dim(r0, i7)
        i24 = hal_buffer_view_dim(r0, i6)
        r5 = rodata_input0
        i26 = mul_i64(i22, i18)
        i28 = mul_i64(i26, i24)
        r6 = rodata_tensor
        # fused: buffer_view.assert, buffer_view.buffer, device.allocator, buffer.assert
        r5, r0 = check_input_allocator(r0, r5, i5, i6, (i22, i24), r3, r6, i28, i4, i20)
        i30 = hal_buffer_view_dim(r1, i7)
        i32 = hal_buffer_view_dim(r1, i6)
        r7 = rodata_input1
        i18 = mul_i64(i30, i18)
        i18 = mul_i64(i18, i32)
        # fused: buffer_view.assert, buffer_view.buffer, buffer.assert
        r7 = check_input(r1, r7, i5, i6, (i30, i32), r0, r6, i18, i4, i20)
        r1 = r6 = r0 = None
        i26 = mul_i64(i26, i32)
        recording = [(ALLOCA, i14, i16, r2, i14, i9, i20, i26, i14)]
        i4 = trunc_i64_i32(i24)
        i24 = shr_i64_u(i24, i3)
        i9 = trunc_i64_i32(i24)
        i20 = trunc_i64_i32(i30)
        i30 = shr_i64_u(i30, i3)
        i21 = trunc_i64_i32(i30)
        i24 = trunc_i64_i32(i22)
        i30 = shr_i64_u(i22, i3)
        i25 = trunc_i64_i32(i30)
        i30 = trunc_i64_i32(i32)
        i34 = shr_i64_u(i32, i3)
        i3 = trunc_i64_i32(i34)
        recording.append((CREATE, i6, i2, i16, i7))
        r6 = rodata_dyn_matmul_dispatch_0_matmul_dxdxd_f32
        recording.append((LOOKUP, r4, r6))
        r6 = None
        i2 = cmp_lt_i64_u(i14, i22)
        i2 = i2 ^ i6
        i36 = sub_i64(i14, i22)
        i38 = sub_i64(i22, i10)
        i38 = i36 if i2 else i38
        i38 = div_i64_s(i38, i12)
        i36 = sub_i64(i14, i38)
        i38 = add_i64(i38, i10)
        i38 = i36 if i2 else i38
        i2 = cmp_lt_i64_u(i14, i32)
        i2 = i2 ^ i6
        i36 = sub_i64(i14, i32)
        i40 = sub_i64(i32, i10)
        i40 = i36 if i2 else i40
        i12 = div_i64_s(i40, i12)
        i36 = sub_i64(i14, i12)
        i10 = add_i64(i12, i10)
        i10 = i36 if i2 else i10
        i10 = mul_i64(i38, i10)
        i2 = trunc_i64_i32(i10)
        recording.append(
            (
                DISPATCH,
                r4,
                LOOKED_UP,
                i2,
                i6,
                i6,
                i14,
                (i4, i9, i20, i21, i24, i25, i30, i3),
                ((i7, i7, r5, i14, i28), (i7, i7, r7, i14, i18), (i7, i7, ALLOCATED, i14, i26)),
            )
        )
        r4 = r5 = r7 = None
        recording.append((BARRIER, i1, i0, i14))
        # fused: the steps recorded above, command_buffer.finalize, fence.create, device.queue.execute, fence.await
        r1, i34, i0 = submit_one_shot(
            r3,  # device
            recording,  # the steps recorded above
            i14,  # flags (fence.create)
            i16,  # affinity (queue.execute)
            ALLOCA_FENCE,  # wait fence: the queue.alloca's
            i14,  # flags
            i8,  # timeout (fence.await)
            i14,  # flags
        )
        r3 = recording = None
        if i0:
            raise vm_fail(i0, "failed to wait on timepoint", "dyn_matmul", None)
        # pc 0x39d-0x3c4 hal.buffer_view.create
        r0 = hal_buffer_view_create(r1, i14, i26, i5, i6, [i22, i32])
        return r0
