# Golden 'loop_call': cf_loop_call.mlir, one function. Covers: a host loop whose test reads a value back: its program's call a loop call (queue_n.loop) with the loop kept around it, the program's Loop in _programs.py.
    def fn0():
        "Internal VM function 0 (cconv '0v_r')."
        # pc 0x16-0xc4 hal.command_buffer.create
        r0 = None
        r1 = refs.get(0)  # !hal.device
        # QUEUE_0: pc 0x59-0xb8, 5 queue steps
        r2 = queue_0(r1, r0)
        return r2
