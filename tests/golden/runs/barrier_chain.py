# Golden 'runs': tensor_barrier_chain.mlir, one function. Covers: a run of awaited submissions as one call; its layout constant in _runs.py.
    def barrier_chain(r0, r1):
        "sync func @barrier_chain(%input0: tensor<8xf32>, %input1: tensor<8xf32>) -> (%output0: tensor<8xf32>, %output1: tensor<8xf32>)"
        # pc 0x1-0x429 hal.buffer_view.assert, hal.buffer.assert (+1 more)
        i0 = 16
        i1 = 1  # DENSE_ROW_MAJOR
        i2 = 553648160  # FLOAT_32
        i3 = 3075  # TRANSFER | DISPATCH_STORAGE
        i4 = 48  # DEVICE_LOCAL
        i6 = 8
        i8 = 32
        i10 = 0
        i12 = -1
        r2 = None
        i5 = -1
        r3 = refs.get(0)  # !hal.device
        r4 = refs.get(2)  # !hal.command_buffer
        r5 = refs.get(3)  # !hal.command_buffer
        r6 = refs.get(4)  # !hal.command_buffer
        r7 = refs.get(5)  # !hal.command_buffer
        r8 = rodata_input0
        r9 = rodata_tensor
        # fused: buffer_view.assert, buffer_view.buffer, device.allocator, buffer.assert
        r8, r0 = check_input_allocator(r0, r8, i2, i1, (i6,), r3, r9, i8, i0, i3)
        r10 = rodata_input1
        # fused: buffer_view.assert, buffer_view.buffer, buffer.assert
        r10 = check_input(r1, r10, i2, i1, (i6,), r0, r9, i8, i0, i3)
        r1 = r9 = r0 = None
        # fused: 4 submissions, each [queue.alloca,] execute.indirect, awaited
        r4, r5, i0 = submit_run(
            RUN_0,  # 4 submissions, laid out in RUN_0
            r3,  # device
            (r4, r5, r6, r7),  # command buffers, one per submission
            (r8, r10),  # buffers from before the run
            (r2,),  # wait fences
            (i10, i8, i12, i4, i3, i5),  # flags, sizes, offsets, lengths, timeouts
        )
        r10 = r6 = r8 = r3 = r7 = None
        if i0:
            raise vm_fail(i0, "failed to wait on timepoint", "barrier_chain", None)
        # pc 0x439-0x484 hal.buffer_view.create
        r0 = hal_buffer_view_create(r5, i10, i8, i2, i1, [i6])
        r5 = None
        r1 = hal_buffer_view_create(r4, i10, i8, i2, i1, [i6])
        return r0, r1
