# Golden 'loop_call': cf_loop_call.mlir, one function. Covers: a host loop whose test reads a value back: its program's call a loop call (queue_n.loop) with the loop kept around it, the program's Loop in _programs.py.
    def walk(r0, r1, r2):
        "sync func @walk(%input0: tensor<8xi32>, %input1: tensor<i32>, %input2: tensor<i32>) -> (%output0: tensor<i32>)"
        r8 = r9 = None
        # pc 0x16-0x2b5 hal.buffer_view.assert
        i3 = 32
        i4 = 4
        i5 = 16
        i6 = 268435488  # INT_32
        i11 = 0
        i12 = 1  # DENSE_ROW_MAJOR
        i13 = 7
        i14 = 31
        i15 = 100
        i16 = 8
        i20 = 4
        i22 = 0
        r3 = None
        r4 = refs.get(0)  # !hal.device
        r5 = refs.get(1)  # !hal.executable
        r6 = refs.get(2)  # !hal.command_buffer
        r7 = rodata_input0
        # QUEUE_1: pc 0xe4-0x290, 17 queue steps
        i5, i14, i16, r7 = queue_1(r0, r7, r4, r1, r2, r3, r6)
        i13 = i16 & i13
        i16 = int(i13 != 0)
        i16 = i5 & i16
        if i16:
            # pc 0x2b5 vm.cond_br
            i5 = i11
            while True:
                # pc 0x334-0x51e hal.fence.create
                i16 = i13
                # QUEUE_2: pc 0x339-0x4f3, 18 queue steps
                # the loop's iterations: run by this call while its test holds
                i13, i5 = queue_2.loop(r4, r3, i16, r5, r7, i5, i12, i14)
                i5 = add_i32(i5, i12)
                i16 = int(i5 < i14)
                i17 = int(i13 != 0)
                i17 = i16 & i17
                if i17:
                    continue
                # pc 0x51e-0x684 hal.fence.create, hal.buffer_view.create
                i4 = i13
                i3 = i5
                r7 = None
                i4 = fma_i32(i3, i15, i4)
                # QUEUE_3: pc 0x55c-0x651, 10 queue steps
                r1 = queue_3(r4, r3, r5, i4)
                r0 = hal_buffer_view_create(r1, i22, i20, i6, i12, [])
                return r0
        else:
            # pc 0x2b5-0x537 vm.cond_br
            i4 = i13
            i3 = i11
            r7 = None
        # pc 0x553-0x684 hal.fence.create, hal.buffer_view.create
        i4 = fma_i32(i3, i15, i4)
        # QUEUE_3: pc 0x55c-0x651, 10 queue steps
        r1 = queue_3(r4, r3, r5, i4)
        r0 = hal_buffer_view_create(r1, i22, i20, i6, i12, [])
        return r0
