# Golden 'readback_loop': cf_readback_loop.mlir, one function. Covers: a host loop reading a result back: one-shot calls that keep the awaited fence or return a new one the loop carries; a failed wait's exit inline.
    def fn0(i0):
        "Internal VM function 0 (cconv '0i_r')."
        # pc 0x1-0xd4 hal.command_buffer.create, hal.executable.lookup.function (+3 more)
        i1 = 13
        i2 = 28
        r0 = None
        i3 = 1
        i4 = 3  # TRANSFER | DISPATCH
        i5 = 0
        i6 = 4
        i8 = 0
        i10 = -1
        r1 = refs.get(0)  # !hal.device
        r2 = refs.get(1)  # !hal.executable
        r3 = hal_command_buffer_create(r1, i5, i4, i10, i3)
        r1 = rodata_halve_until_small_dispatch_2
        i10 = hal_executable_lookup_function(r2, r1)
        r1 = None
        hal_command_buffer_dispatch(r3, r2, i10, i3, i3, i3, i8, [i0], [(i5, i5, r0, i8, i6)])
        r2 = None
        hal_command_buffer_execution_barrier(r3, i2, i1, i8)
        hal_command_buffer_finalize(r3)
        return r3
