# Golden 'matmul': tensor_matmul.mlir, one function. Covers: a matmul dispatch; buffer asserts; long vm.fail messages hoisted to module constants.
    def batch_matmul(r0, r1):
        "sync func @batch_matmul(%input0: tensor<2x3x4xf32>, %input1: tensor<2x4x2xf32>) -> (%output0: tensor<2x3x2xf32>)"
        r6 = r7 = None
        # pc 0x8-0x212 hal.buffer_view.assert, hal.buffer_view.create
        i1 = 1  # DENSE_ROW_MAJOR
        i2 = 553648160  # FLOAT_32
        i6 = 2
        i8 = 3
        i16 = 48
        i18 = 0
        r2 = None
        r3 = refs.get(0)  # !hal.device
        r4 = refs.get(3)  # !hal.command_buffer
        r5 = rodata_input0
        # QUEUE_3: pc 0x9b-0x1d9, 12 queue steps
        r1 = queue_3(r0, r5, r3, r1, r2, r4)
        r0 = hal_buffer_view_create(r1, i18, i16, i2, i1, [i6, i8, i6])
        return r0
