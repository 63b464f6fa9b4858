# Golden 'runs': tensor_barrier_chain.mlir, one function. Covers: a run of awaited submissions as one call; its layout constant in _runs.py.
    def fn2():
        "Internal VM function 2 (cconv '0v_r')."
        # pc 0x1-0xec hal.command_buffer.create, hal.executable.lookup.function (+3 more)
        i0 = 13
        i1 = 28
        i2 = 2
        r0 = None
        i3 = 1
        i4 = 3  # TRANSFER | DISPATCH
        i5 = 0
        i6 = 32
        i8 = 0
        i10 = -1
        r1 = refs.get(0)  # !hal.device
        r2 = refs.get(1)  # !hal.executable
        r3 = hal_command_buffer_create(r1, i5, i4, i10, i4)
        r1 = rodata_barrier_chain_dispatch_2_elementwise_8_f
        i10 = hal_executable_lookup_function(r2, r1)
        r1 = None
        hal_command_buffer_dispatch(
            r3,
            r2,
            i10,
            i3,
            i3,
            i3,
            i8,
            [],
            [(i5, i5, r0, i8, i6), (i5, i3, r0, i8, i6), (i5, i2, r0, i8, i6)],
        )
        r2 = None
        hal_command_buffer_execution_barrier(r3, i1, i0, i8)
        hal_command_buffer_finalize(r3)
        return r3
