# Golden 'matmul': tensor_matmul.mlir, one function. Covers: a matmul dispatch; buffer asserts; long vm.fail messages hoisted to module constants.
    def matmul(r0, r1):
        "sync func @matmul(%input0: tensor<3x5xf32>, %input1: tensor<5x4xf32>) -> (%output0: tensor<3x4xf32>)"
        r6 = r7 = None
        # pc 0x8-0x20c hal.buffer_view.assert, hal.buffer_view.create
        i1 = 1  # DENSE_ROW_MAJOR
        i2 = 553648160  # FLOAT_32
        i6 = 3
        i10 = 4
        i16 = 48
        i18 = 0
        r2 = None
        r3 = refs.get(0)  # !hal.device
        r4 = refs.get(2)  # !hal.command_buffer
        r5 = rodata_input0
        # QUEUE_1: pc 0x9b-0x1d5, 12 queue steps
        r1 = queue_1(r0, r5, r3, r1, r2, r4)
        r0 = hal_buffer_view_create(r1, i18, i16, i2, i1, [i6, i10])
        return r0
