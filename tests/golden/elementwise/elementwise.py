# Golden 'elementwise': tensor_elementwise.mlir, one function. Covers: dispatches behind a fence wait; its failure arm as an early exit; HAL calls with enum arguments; command-buffer init function.
    def elementwise(r0, r1):
        "sync func @elementwise(%input0: tensor<2x5xf32>, %input1: tensor<2x5xf32>) -> (%output0: tensor<2x5xf32>, %output1: tensor<2x5xf32>, %output2: tensor<2x5xf32>)"
        r6 = r7 = None
        # pc 0x8-0x25c hal.buffer_view.assert, hal.buffer_view.create
        i1 = 1  # DENSE_ROW_MAJOR
        i2 = 553648160  # FLOAT_32
        i6 = 2
        i8 = 5
        i10 = 40
        i12 = 64
        i14 = 128
        i18 = 0
        r2 = None
        r3 = refs.get(0)  # !hal.device
        r4 = refs.get(2)  # !hal.command_buffer
        r5 = rodata_input0
        # QUEUE_1: pc 0x9b-0x1d5, 12 queue steps
        r1 = queue_1(r0, r5, r3, r1, r2, r4)
        r0 = hal_buffer_view_create(r1, i18, i10, i2, i1, [i6, i8])
        r2 = hal_buffer_view_create(r1, i12, i10, i2, i1, [i6, i8])
        r3 = hal_buffer_view_create(r1, i14, i10, i2, i1, [i6, i8])
        return r0, r2, r3
