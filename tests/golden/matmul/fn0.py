# Golden 'matmul': tensor_matmul.mlir, one function. Covers: a matmul dispatch; buffer asserts; long vm.fail messages hoisted to module constants.
    def fn0():
        "Internal VM function 0 (cconv '0v_r')."
        # pc 0x16-0x102 hal.command_buffer.create
        r0 = None
        r1 = refs.get(0)  # !hal.device
        r2 = refs.get(1)  # !hal.executable
        # QUEUE_0: pc 0x6f-0xf6, 5 queue steps
        r3 = queue_0(r1, r2, r0)
        return r3
