# Golden 'barrier_chain': tensor_barrier_chain.mlir, one function. Covers: awaited submissions across several command buffers as one queue program call; the programs in _programs.py.
    def fn0():
        "Internal VM function 0 (cconv '0v_r')."
        # pc 0x16-0xec hal.command_buffer.create
        r0 = None
        r1 = refs.get(0)  # !hal.device
        r2 = refs.get(1)  # !hal.executable
        # QUEUE_0: pc 0x59-0xe0, 5 queue steps
        r3 = queue_0(r1, r2, r0)
        return r3
