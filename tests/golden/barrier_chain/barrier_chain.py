# Golden 'barrier_chain': tensor_barrier_chain.mlir, one function. Covers: awaited submissions across several command buffers as one queue program call; the programs in _programs.py.
    def barrier_chain(r0, r1):
        "sync func @barrier_chain(%input0: tensor<8xf32>, %input1: tensor<8xf32>) -> (%output0: tensor<8xf32>, %output1: tensor<8xf32>)"
        r9 = r10 = None
        # pc 0x8-0x484 hal.buffer_view.assert, hal.buffer_view.create
        i1 = 1  # DENSE_ROW_MAJOR
        i2 = 553648160  # FLOAT_32
        i6 = 8
        i8 = 32
        i10 = 0
        r2 = None
        r3 = refs.get(0)  # !hal.device
        r4 = refs.get(2)  # !hal.command_buffer
        r5 = refs.get(3)  # !hal.command_buffer
        r6 = refs.get(4)  # !hal.command_buffer
        r7 = refs.get(5)  # !hal.command_buffer
        r8 = rodata_input0
        # QUEUE_4: pc 0x90-0x429, 27 queue steps
        r4, r5 = queue_4(r0, r8, r3, r1, r2, r4, r5, r6, r7)
        r0 = hal_buffer_view_create(r5, i10, i8, i2, i1, [i6])
        r5 = None
        r1 = hal_buffer_view_create(r4, i10, i8, i2, i1, [i6])
        return r0, r1
