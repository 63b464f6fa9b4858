# Golden 'elementwise': tensor_elementwise.mlir, one function. Covers: dispatches behind a fence wait; its failure arm as an early exit; HAL calls with enum arguments; command-buffer init function.
    def fn0():
        "Internal VM function 0 (cconv '0v_r')."
        # pc 0x16-0x10c hal.command_buffer.create
        r0 = None
        r1 = refs.get(0)  # !hal.device
        r2 = refs.get(1)  # !hal.executable
        # QUEUE_0: pc 0x64-0x100, 5 queue steps
        r3 = queue_0(r1, r2, r0)
        return r3
