# Golden 'matmul': tensor_matmul.mlir, one function. Covers: a matmul dispatch; buffer asserts; long vm.fail messages hoisted to module constants.
    def fn2():
        "Internal VM function 2 (cconv '0v_r')."
        # pc 0x1-0x102 hal.command_buffer.create, hal.executable.lookup.function (+3 more)
        i0 = 13
        i1 = 28
        r0 = None
        i2 = 1
        i3 = 2
        i4 = 3  # TRANSFER | DISPATCH
        i5 = 0
        i6 = 48
        i8 = 64
        i10 = 96
        i12 = 0
        i14 = -1
        r1 = refs.get(0)  # !hal.device
        r2 = refs.get(1)  # !hal.executable
        r3 = hal_command_buffer_create(r1, i5, i4, i14, i4)
        r1 = rodata_batch_matmul_dispatch_0_batch_matmul_2x3
        i14 = hal_executable_lookup_function(r2, r1)
        r1 = None
        hal_command_buffer_dispatch(
            r3,
            r2,
            i14,
            i3,
            i2,
            i2,
            i12,
            [],
            [(i5, i5, r0, i12, i10), (i5, i2, r0, i12, i8), (i5, i3, r0, i12, i6)],
        )
        r2 = None
        hal_command_buffer_execution_barrier(r3, i1, i0, i12)
        hal_command_buffer_finalize(r3)
        return r3
