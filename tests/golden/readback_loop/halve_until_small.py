# Golden 'readback_loop': cf_readback_loop.mlir, one function. Covers: a host loop reading a result back: a queue program per region of the body, the readback inside one, command buffers recorded per call as program steps.
    def halve_until_small(r0):
        "sync func @halve_until_small(%input0: tensor<?xf32>) -> (%output0: tensor<?xf32>, %output1: tensor<i32>)"
        r5 = r6 = r7 = r8 = r9 = r10 = None
        i44 = 0
        i45 = 0
        # pc 0x1-0x134 hal.buffer_view.dim
        i0 = 268435488  # INT_32
        i1 = 4
        i6 = 16  # DEVICE_VISIBLE
        i7 = 553648160  # FLOAT_32
        i12 = 1.0
        i13 = 0
        i14 = 1  # DENSE_ROW_MAJOR
        i16 = 4
        r1 = None
        i20 = 0
        i15 = -1
        r2 = refs.get(0)  # !hal.device
        r3 = refs.get(1)  # !hal.executable
        # QUEUE_1: pc 0xc1-0x11f, 5 queue steps
        i28, i30, r4 = queue_1(r0, r2)
        i44 = i28
        i6 = i13
        i28 = i30
        r0 = r4
        r4 = r1
        i30 = i44
        i31 = i45
        while True:
            # pc 0x161-0x398 hal.fence.create
            # QUEUE_2: pc 0x161-0x379, 22 queue steps
            i32, i33, i34, r4, r6 = queue_2(r2, r4, i28, i30, r0, r3)
            i35 = bitcast_i32_f32(i34)
            i34 = cmp_lt_f32_o(i12, i35)
            if i34:
                # pc 0x40a-0x541 hal.fence.create
                i34 = mul_i64(i30, i16)
                # QUEUE_3: pc 0x411-0x524, 9 queue steps
                i36, r5, r8 = queue_3(r2, r4, i34, r3, i30, i32, i33, r6, i28)
                i32 = add_i32(i6, i14)
                i6 = i32
                i28 = i34
                r4 = r8
                r8 = None
                r0 = r5
                r5 = None
                continue
            # pc 0x55d-0x64d hal.fence.create, @__init, hal.buffer_view.create (+1 more)
            r3 = None
            # QUEUE_4: pc 0x562-0x572, 2 queue steps
            r0, r3 = queue_4(r2, r1)
            r1 = fn0(i6)
            # QUEUE_5: pc 0x59e-0x5f9, 3 queue steps
            r5 = queue_5(r2, r0, r1, r3, r4)
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
