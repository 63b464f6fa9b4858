# Golden 'readback_loop': cf_readback_loop.mlir, one function. Covers: a host loop reading a result back: a queue program per region of the body, the readback inside one, command buffers recorded per call as program steps.
    def fn0(i0):
        "Internal VM function 0 (cconv '0i_r')."
        # pc 0xf-0xd4 hal.command_buffer.create
        r0 = None
        r1 = refs.get(0)  # !hal.device
        r2 = refs.get(1)  # !hal.executable
        # QUEUE_0: pc 0x52-0xc8, 5 queue steps
        r3 = queue_0(r1, r2, i0, r0)
        return r3
