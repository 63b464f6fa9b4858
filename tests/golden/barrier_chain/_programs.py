# Golden 'barrier_chain': tensor_barrier_chain.mlir, one function. Covers: awaited submissions across several command buffers as one queue program call; the programs in _programs.py.
QUEUE_0 = QueueProgram(
    function="__init",
    inputs=("r1", "r2", "r0"),
    steps=(
        CommandBufferCreate(
            out="cmd0",
            device="r1",
            modes=0,
            command_categories=CATEGORY_TRANSFER | CATEGORY_DISPATCH,
            queue_affinity=-1,
            binding_capacity=3,
        ),
        ExecutableLookupFunction(
            out="function0",
            executable="r2",
            name=Rodata(5, "rodata_barrier_chain_dispatch_0_elementwise_8_f"),
        ),
        CommandBufferDispatch(
            command_buffer="cmd0",
            executable="r2",
            function_id="function0",
            workgroup_x=1,
            workgroup_y=1,
            workgroup_z=1,
            flags=0,
            constants=(),
            bindings=((0, 0, "r0", 0, 32), (0, 1, "r0", 0, 32), (0, 2, "r0", 0, 32)),
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferFinalize(command_buffer="cmd0"),
    ),
    outputs=("cmd0",),
)

QUEUE_1 = QueueProgram(
    function="fn1",
    inputs=("r1", "r2", "r0"),
    steps=(
        CommandBufferCreate(
            out="cmd0",
            device="r1",
            modes=0,
            command_categories=CATEGORY_TRANSFER | CATEGORY_DISPATCH,
            queue_affinity=-1,
            binding_capacity=3,
        ),
        ExecutableLookupFunction(
            out="function0",
            executable="r2",
            name=Rodata(6, "rodata_barrier_chain_dispatch_1_elementwise_8_f"),
        ),
        CommandBufferDispatch(
            command_buffer="cmd0",
            executable="r2",
            function_id="function0",
            workgroup_x=1,
            workgroup_y=1,
            workgroup_z=1,
            flags=0,
            constants=(),
            bindings=((0, 0, "r0", 0, 32), (0, 1, "r0", 0, 32), (0, 2, "r0", 0, 32)),
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferFinalize(command_buffer="cmd0"),
    ),
    outputs=("cmd0",),
)

QUEUE_2 = QueueProgram(
    function="fn2",
    inputs=("r1", "r2", "r0"),
    steps=(
        CommandBufferCreate(
            out="cmd0",
            device="r1",
            modes=0,
            command_categories=CATEGORY_TRANSFER | CATEGORY_DISPATCH,
            queue_affinity=-1,
            binding_capacity=3,
        ),
        ExecutableLookupFunction(
            out="function0",
            executable="r2",
            name=Rodata(7, "rodata_barrier_chain_dispatch_2_elementwise_8_f"),
        ),
        CommandBufferDispatch(
            command_buffer="cmd0",
            executable="r2",
            function_id="function0",
            workgroup_x=1,
            workgroup_y=1,
            workgroup_z=1,
            flags=0,
            constants=(),
            bindings=((0, 0, "r0", 0, 32), (0, 1, "r0", 0, 32), (0, 2, "r0", 0, 32)),
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferFinalize(command_buffer="cmd0"),
    ),
    outputs=("cmd0",),
)

QUEUE_3 = QueueProgram(
    function="fn3",
    inputs=("r1", "r2", "r0"),
    steps=(
        CommandBufferCreate(
            out="cmd0",
            device="r1",
            modes=0,
            command_categories=CATEGORY_TRANSFER | CATEGORY_DISPATCH,
            queue_affinity=-1,
            binding_capacity=2,
        ),
        ExecutableLookupFunction(
            out="function0",
            executable="r2",
            name=Rodata(8, "rodata_barrier_chain_dispatch_3_elementwise_8_f"),
        ),
        CommandBufferDispatch(
            command_buffer="cmd0",
            executable="r2",
            function_id="function0",
            workgroup_x=1,
            workgroup_y=1,
            workgroup_z=1,
            flags=0,
            constants=(),
            bindings=((0, 0, "r0", 0, 32), (0, 1, "r0", 0, 32)),
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferFinalize(command_buffer="cmd0"),
    ),
    outputs=("cmd0",),
)

QUEUE_4 = QueueProgram(
    function="barrier_chain",
    inputs=("r0", "r8", "r3", "r1", "r2", "r4", "r5", "r6", "r7"),
    steps=(
        BufferViewAssert(
            buffer_view="r0",
            message="r8",
            element_type=FLOAT_32,
            encoding_type=ENCODING_DENSE_ROW_MAJOR,
            shape=(8,),
        ),
        BufferViewBuffer(out="buffer0", buffer_view="r0"),
        DeviceAllocator(out="allocator0", device="r3"),
        BufferAssert(
            buffer="buffer0",
            message=Rodata(10, "rodata_tensor"),
            allocator="allocator0",
            minimum_length=32,
            memory_types=MEMORY_TYPE_DEVICE_VISIBLE,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
        ),
        BufferViewAssert(
            buffer_view="r1",
            message=Rodata(11, "rodata_input1"),
            element_type=FLOAT_32,
            encoding_type=ENCODING_DENSE_ROW_MAJOR,
            shape=(8,),
        ),
        BufferViewBuffer(out="buffer1", buffer_view="r1"),
        BufferAssert(
            buffer="buffer1",
            message=Rodata(10, "rodata_tensor"),
            allocator="allocator0",
            minimum_length=32,
            memory_types=MEMORY_TYPE_DEVICE_VISIBLE,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
        ),
        FenceCreate(out="fence0", device="r3", flags=0),
        DeviceQueueAlloca(
            out="buffer2",
            device="r3",
            queue_affinity=-1,
            wait_fence="r2",
            signal_fence="fence0",
            pool=0,
            memory_types=MEMORY_TYPE_DEVICE_LOCAL,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
            allocation_size=32,
            flags=0,
        ),
        FenceCreate(out="fence1", device="r3", flags=0),
        DeviceQueueExecuteIndirect(
            device="r3",
            queue_affinity=-1,
            wait_fence="fence0",
            signal_fence="fence1",
            command_buffer="r4",
            flags=0,
            binding_table=(("buffer0", 0, 32), ("buffer1", 0, 32), ("buffer2", 0, 32)),
        ),
        FenceAwait(out="status0", timeout_millis=-1, flags=0, fences=("fence1",)),
        FailIf(
            test="status0", status="status0", message="failed to wait on timepoint", location=None
        ),
        FenceCreate(out="fence2", device="r3", flags=0),
        DeviceQueueAlloca(
            out="buffer3",
            device="r3",
            queue_affinity=-1,
            wait_fence="r2",
            signal_fence="fence2",
            pool=0,
            memory_types=MEMORY_TYPE_DEVICE_LOCAL,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
            allocation_size=32,
            flags=0,
        ),
        FenceCreate(out="fence3", device="r3", flags=0),
        DeviceQueueExecuteIndirect(
            device="r3",
            queue_affinity=-1,
            wait_fence="fence2",
            signal_fence="fence3",
            command_buffer="r5",
            flags=0,
            binding_table=(("buffer2", 0, 32), ("buffer1", 0, 32), ("buffer3", 0, 32)),
        ),
        FenceAwait(out="status1", timeout_millis=-1, flags=0, fences=("fence3",)),
        FailIf(
            test="status1", status="status1", message="failed to wait on timepoint", location=None
        ),
        FenceCreate(out="fence4", device="r3", flags=0),
        DeviceQueueAlloca(
            out="buffer4",
            device="r3",
            queue_affinity=-1,
            wait_fence="r2",
            signal_fence="fence4",
            pool=0,
            memory_types=MEMORY_TYPE_DEVICE_LOCAL,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
            allocation_size=32,
            flags=0,
        ),
        FenceCreate(out="fence5", device="r3", flags=0),
        DeviceQueueExecuteIndirect(
            device="r3",
            queue_affinity=-1,
            wait_fence="fence4",
            signal_fence="fence5",
            command_buffer="r6",
            flags=0,
            binding_table=(("buffer3", 0, 32), ("buffer0", 0, 32), ("buffer4", 0, 32)),
        ),
        FenceAwait(out="status2", timeout_millis=-1, flags=0, fences=("fence5",)),
        FailIf(
            test="status2", status="status2", message="failed to wait on timepoint", location=None
        ),
        FenceCreate(out="fence6", device="r3", flags=0),
        DeviceQueueAlloca(
            out="buffer5",
            device="r3",
            queue_affinity=-1,
            wait_fence="r2",
            signal_fence="fence6",
            pool=0,
            memory_types=MEMORY_TYPE_DEVICE_LOCAL,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
            allocation_size=32,
            flags=0,
        ),
        FenceCreate(out="fence7", device="r3", flags=0),
        DeviceQueueExecuteIndirect(
            device="r3",
            queue_affinity=-1,
            wait_fence="fence6",
            signal_fence="fence7",
            command_buffer="r7",
            flags=0,
            binding_table=(("buffer4", 0, 32), ("buffer5", 0, 32)),
        ),
        FenceAwait(out="status3", timeout_millis=-1, flags=0, fences=("fence7",)),
        FailIf(
            test="status3", status="status3", message="failed to wait on timepoint", location=None
        ),
    ),
    outputs=("buffer3", "buffer5"),
)
