# Golden 'dynamic_shapes': dyn_shape_2d.mlir, one function. Covers: dynamic dimensions: i64 index arithmetic, shape lists.
    def dyn_transpose_rowsum(r0):
        "sync func @dyn_transpose_rowsum(%input0: tensor<?x?xf32>) -> (%output0: tensor<?x?xf32>, %output1: tensor<?xf32>)"
        # pc 0x1-0x3bd hal.buffer_view.dim, hal.buffer_view.assert, hal.buffer.assert (+8 more)
        i0 = 13
        i1 = 28
        i2 = 3
        i3 = 32
        i4 = -64
        i6 = 63
        i8 = 16
        i9 = 553648160  # FLOAT_32
        i10 = 1  # DENSE_ROW_MAJOR
        i11 = 0
        i12 = -1
        i14 = 32
        i16 = 1
        i18 = 0
        r1 = None
        i20 = -1
        i22 = 64
        i24 = 4
        i13 = 48
        i26 = 3075
        r2 = refs.get(0)  # !hal.device
        r3 = refs.get(1)  # !hal.executable
        i28 = hal_buffer_view_dim(r0, i11)
        i30 = hal_buffer_view_dim(r0, i10)
        r4 = rodata_input0
        i32 = mul_i64(i28, i24)
        i34 = mul_i64(i32, i30)
        r5 = rodata_tensor
        # fused: buffer_view.assert, buffer_view.buffer, device.allocator, buffer.assert
        r4, r0 = check_input_allocator(r0, r4, i9, i10, (i28, i30), r2, r5, i34, i8, i26)
        r5 = None
        i24 = mul_i64(i30, i24)
        i24 = mul_i64(i24, i28)
        i36 = add_i64(i24, i6)
        i36 = i36 & i4
        i6 = add_i64(i32, i6)
        i4 = i6 & i4
        i4 = add_i64(i36, i4)
        recording = [(ALLOCA, i18, i20, r1, i18, i13, i26, i4, i18)]
        r0 = None
        i6 = trunc_i64_i32(i30)
        i26 = shr_i64_u(i30, i3)
        i7 = trunc_i64_i32(i26)
        i8 = trunc_i64_i32(i28)
        i26 = shr_i64_u(i28, i3)
        i13 = trunc_i64_i32(i26)
        i26 = trunc_i64_i32(i36)
        i38 = shr_i64_u(i36, i3)
        i3 = trunc_i64_i32(i38)
        recording.append((CREATE, i10, i2, i20, i11))
        r6 = rodata_9
        recording.append((LOOKUP, r3, r6))
        r6 = None
        i2 = cmp_lt_i64_u(i18, i28)
        i2 = i2 ^ i10
        i40 = sub_i64(i18, i28)
        i42 = sub_i64(i28, i16)
        i42 = i40 if i2 else i42
        i40 = div_i64_s(i42, i22)
        i44 = sub_i64(i18, i40)
        i40 = add_i64(i40, i16)
        i40 = i44 if i2 else i40
        i27 = cmp_lt_i64_u(i18, i30)
        i27 = i27 ^ i10
        i44 = sub_i64(i18, i30)
        i46 = sub_i64(i30, i16)
        i46 = i44 if i27 else i46
        i22 = div_i64_s(i46, i22)
        i44 = sub_i64(i18, i22)
        i22 = add_i64(i22, i16)
        i22 = i44 if i27 else i22
        i22 = mul_i64(i40, i22)
        i27 = trunc_i64_i32(i22)
        recording.append(
            (
                DISPATCH,
                r3,
                LOOKED_UP,
                i27,
                i10,
                i10,
                i18,
                (i6, i7, i8, i13),
                ((i11, i11, r4, i18, i34), (i11, i11, ALLOCATED, i18, i4)),
            )
        )
        r6 = rodata_10
        recording.append((LOOKUP, r3, r6))
        r6 = None
        i14 = div_i64_s(i42, i14)
        i38 = sub_i64(i18, i14)
        i16 = add_i64(i14, i16)
        i16 = i38 if i2 else i16
        i2 = trunc_i64_i32(i16)
        recording.append(
            (
                DISPATCH,
                r3,
                LOOKED_UP,
                i2,
                i10,
                i10,
                i18,
                (i26, i3, i6, i7, i8, i13),
                ((i11, i11, r4, i18, i34), (i11, i11, ALLOCATED, i18, i4)),
            )
        )
        r3 = r4 = None
        recording.append((BARRIER, i1, i0, i18))
        # fused: the steps recorded above, command_buffer.finalize, fence.create, device.queue.execute, fence.await
        r5, _, i22, i0 = submit_one_shot_2(
            r2,  # device
            recording,  # the steps recorded above
            i18,  # flags (fence.create)
            i20,  # affinity (queue.execute)
            ALLOCA_FENCE,  # wait fence: the queue.alloca's
            i18,  # flags
            i12,  # timeout (fence.await)
            i18,  # flags
        )
        r2 = recording = None
        if i0:
            raise vm_fail(i0, "failed to wait on timepoint", "dyn_transpose_rowsum", None)
        # pc 0x3cd-0x41a hal.buffer_view.create
        r0 = hal_buffer_view_create(r5, i18, i24, i9, i10, [i30, i28])
        r1 = hal_buffer_view_create(r5, i36, i32, i9, i10, [i28])
        return r0, r1
