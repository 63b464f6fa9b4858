# Golden 'readback_loop': cf_readback_loop.mlir, one function. Covers: a host loop reading a result back: one-shot calls that keep the awaited fence or return a new one the loop carries; a failed wait's exit inline.
    def halve_until_small(r0):
        "sync func @halve_until_small(%input0: tensor<?xf32>) -> (%output0: tensor<?xf32>, %output1: tensor<i32>)"
        r6 = r7 = r8 = r9 = r10 = None
        i44 = 0
        i45 = 0
        # pc 0x1-0x134 hal.buffer_view.dim, hal.buffer_view.assert, hal.buffer.assert
        i0 = 268435488  # INT_32
        i1 = 4
        i2 = 13
        i3 = 28
        i4 = 3  # TRANSFER | DISPATCH
        i5 = 32
        i6 = 16  # DEVICE_VISIBLE
        i7 = 553648160  # FLOAT_32
        i8 = 150998019  # TRANSFER | DISPATCH_STORAGE | MAPPING_SCOPED | MAPPING_ACCESS_RANDOM
        i9 = 86  # HOST_LOCAL | DEVICE_VISIBLE
        i10 = 3075  # TRANSFER | DISPATCH_STORAGE
        i11 = 48  # DEVICE_LOCAL
        i12 = 1.0
        i13 = 0
        i14 = 1  # DENSE_ROW_MAJOR
        i16 = 4
        r1 = None
        i18 = 64
        i20 = 0
        i22 = -1
        i24 = 1
        i15 = -1
        i26 = 4096
        r2 = refs.get(0)  # !hal.device
        r3 = refs.get(1)  # !hal.executable
        i28 = hal_buffer_view_dim(r0, i13)
        r4 = rodata_input0
        i30 = mul_i64(i28, i16)
        r5 = rodata_tensor
        # fused: buffer_view.assert, buffer_view.buffer, device.allocator, buffer.assert
        r4, r0 = check_input_allocator(r0, r4, i7, i14, (i28,), r2, r5, i30, i6, i10)
        r5 = None
        i44 = i28
        i6 = i13
        i28 = i30
        r0 = r4
        r4 = r1
        i30 = i44
        i31 = i45
        while True:
            # pc 0x170-0x369 hal.device.queue.alloca, hal.fence.join (+8 more)
            recording = [(ALLOCA, i20, i22, r4, i20, i11, i10, i28, i20)]
            r5 = r6 = None
            recording.append((ALLOCA, i20, i22, r4, i20, i9, i8, i16, i20))
            r8 = None
            recording.append((ALLOCA, i20, i22, r4, i20, i11, i10, i18, i20))
            r4 = None
            recording.append((JOIN, i20))
            i32 = trunc_i64_i32(i30)
            i34 = shr_i64_u(i30, i5)
            i33 = trunc_i64_i32(i34)
            recording.append((CREATE, i14, i4, i22, i13))
            recording.append((COPY, i13, i13, r0, i20, ALLOCATED, i20, i28, i20))
            r0 = None
            recording.append((BARRIER, i3, i2, i20))
            r0 = rodata_halve_until_small_dispatch_0_reduction_d
            recording.append((LOOKUP, r3, r0))
            r0 = None
            recording.append(
                (
                    DISPATCH,
                    r3,
                    LOOKED_UP,
                    i14,
                    i14,
                    i14,
                    i20,
                    (i32, i33),
                    ((i13, i13, ALLOCATED, i20, i28), (i13, i13, ALLOCATED_2, i20, i18)),
                )
            )
            recording.append((BARRIER, i3, i2, i20))
            recording.append((COPY, i13, i13, ALLOCATED_2, i20, ALLOCATED_1, i20, i16, i20))
            recording.append((BARRIER, i3, i2, i20))
            # fused: the steps recorded above, command_buffer.finalize, fence.create, device.queue.execute, fence.create, device.queue.dealloca, fence.await
            r6, r8, _, _, r4, i34 = submit_one_shot(
                r2,  # device
                recording,  # the steps recorded above
                i20,  # flags (fence.create)
                i22,  # affinity (queue.execute)
                ALLOCA_FENCE,  # wait fence: the queue.allocas' (joined)
                i20,  # flags
                i15,  # timeout (fence.await)
                i20,  # flags
                (
                    i20,
                    i22,
                    ALLOCATED_2,
                    i20,
                ),  # queue.dealloca after it: new fence's flags, affinity, buffer, flags
                True,  # keep: the awaited fence comes back too
            )
            recording = None
            if i34:
                raise vm_fail(i34, "failed to wait on timepoint", "halve_until_small", None)
            # pc 0x379-0x398 hal.buffer.load
            i34 = hal_buffer_load(r8, i20, i1)
            r8 = None
            i35 = bitcast_i32_f32(i34)
            i34 = cmp_lt_f32_o(i12, i35)
            if i34:
                # pc 0x40a-0x541 hal.device.queue.alloca, hal.command_buffer.create (+5 more)
                i34 = mul_i64(i30, i16)
                recording = [(ALLOCA, i20, i22, r4, i20, i11, i10, i34, i20)]
                r4 = None
                recording.append((CREATE, i14, i4, i22, i13))
                r8 = rodata_halve_until_small_dispatch_1_elementwise
                recording.append((LOOKUP, r3, r8))
                r8 = None
                i38 = cmp_lt_i64_u(i20, i30)
                i38 = i38 ^ i14
                i40 = sub_i64(i20, i30)
                i42 = sub_i64(i30, i24)
                i42 = i40 if i38 else i42
                i42 = div_i64_s(i42, i26)
                i40 = sub_i64(i20, i42)
                i42 = add_i64(i42, i24)
                i42 = i40 if i38 else i42
                i38 = trunc_i64_i32(i42)
                recording.append(
                    (
                        DISPATCH,
                        r3,
                        LOOKED_UP,
                        i38,
                        i14,
                        i14,
                        i20,
                        (i32, i33),
                        ((i13, i13, r6, i20, i28), (i13, i13, ALLOCATED, i20, i34)),
                    )
                )
                r6 = None
                recording.append((BARRIER, i3, i2, i20))
                # fused: the steps recorded above, command_buffer.finalize, fence.create, device.queue.execute
                r5, i36, r8 = submit_one_shot_signal(
                    r2,  # device
                    recording,  # the steps recorded above
                    i22,  # affinity (queue.execute)
                    ALLOCA_FENCE,  # wait fence: the queue.alloca's
                    NEW_FENCE,  # signal fence: a new one, returned
                    i20,  # flags
                    None,  # no queue.dealloca
                    i20,  # flags (fence.create of the new fence)
                )
                recording = None
                i32 = add_i32(i6, i14)
                i6 = i32
                i28 = i34
                r4 = r8
                r8 = None
                r0 = r5
                r5 = None
                continue
            # pc 0x55d-0x5f9 hal.fence.create, hal.device.queue.alloca, @__init (+2 more)
            r3 = None
            r0 = hal_fence_create(r2, i20)
            r3 = hal_device_queue_alloca(r2, i22, r1, r0, i20, i11, i10, i16, i20)
            r1 = fn0(i6)
            r5 = hal_fence_create(r2, i20)
            hal_device_queue_execute_indirect(r2, i22, r0, r5, r1, i20, [(r3, i20, i16)])
            r2 = r0 = r1 = None
            i1 = hal_fence_await(i15, i20, [r4])
            r4 = None
            if i1:
                # pc 0x3c1-0x3e9 vm.br
                r6 = r3 = r5 = None
                i34 = i1
                raise vm_fail(i34, "failed to wait on timepoint", "halve_until_small", None)
            # pc 0x609-0x64d hal.buffer_view.create, hal.fence.await
            r0 = hal_buffer_view_create(r6, i20, i28, i7, i14, [i30])
            r6 = None
            i1 = hal_fence_await(i15, i20, [r5])
            r5 = None
            if not i1:
                # pc 0x65d-0x680 hal.buffer_view.create
                r1 = hal_buffer_view_create(r3, i20, i16, i0, i14, [])
                return r0, r1
            # pc 0x3d7-0x3e9 vm.br
            r3 = None
            i34 = i1
            raise vm_fail(i34, "failed to wait on timepoint", "halve_until_small", None)
