# Golden 'matmul': tensor_matmul.mlir, one function. Covers: a matmul dispatch; buffer asserts; long vm.fail messages hoisted to module constants.
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
            name=Rodata(5, "rodata_matmul_dispatch_0_matmul_3x4x5_f32"),
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
            bindings=((0, 0, "r0", 0, 60), (0, 1, "r0", 0, 80), (0, 2, "r0", 0, 48)),
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferFinalize(command_buffer="cmd0"),
    ),
    outputs=("cmd0",),
)

QUEUE_1 = QueueProgram(
    function="matmul",
    inputs=("r0", "r5", "r3", "r1", "r2", "r4"),
    steps=(
        BufferViewAssert(
            buffer_view="r0",
            message="r5",
            element_type=FLOAT_32,
            encoding_type=ENCODING_DENSE_ROW_MAJOR,
            shape=(3, 5),
        ),
        BufferViewBuffer(out="buffer0", buffer_view="r0"),
        DeviceAllocator(out="allocator0", device="r3"),
        BufferAssert(
            buffer="buffer0",
            message=Rodata(7, "rodata_tensor"),
            allocator="allocator0",
            minimum_length=60,
            memory_types=MEMORY_TYPE_DEVICE_VISIBLE,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
        ),
        BufferViewAssert(
            buffer_view="r1",
            message=Rodata(8, "rodata_input1"),
            element_type=FLOAT_32,
            encoding_type=ENCODING_DENSE_ROW_MAJOR,
            shape=(5, 4),
        ),
        BufferViewBuffer(out="buffer1", buffer_view="r1"),
        BufferAssert(
            buffer="buffer1",
            message=Rodata(7, "rodata_tensor"),
            allocator="allocator0",
            minimum_length=80,
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
            allocation_size=48,
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
            binding_table=(("buffer0", 0, 60), ("buffer1", 0, 80), ("buffer2", 0, 48)),
        ),
        FenceAwait(out="status0", timeout_millis=-1, flags=0, fences=("fence1",)),
        FailIf(
            test="status0", status="status0", message="failed to wait on timepoint", location=None
        ),
    ),
    outputs=("buffer2",),
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
            name=Rodata(9, "rodata_batch_matmul_dispatch_0_batch_matmul_2x3"),
        ),
        CommandBufferDispatch(
            command_buffer="cmd0",
            executable="r2",
            function_id="function0",
            workgroup_x=2,
            workgroup_y=1,
            workgroup_z=1,
            flags=0,
            constants=(),
            bindings=((0, 0, "r0", 0, 96), (0, 1, "r0", 0, 64), (0, 2, "r0", 0, 48)),
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferFinalize(command_buffer="cmd0"),
    ),
    outputs=("cmd0",),
)

QUEUE_3 = QueueProgram(
    function="batch_matmul",
    inputs=("r0", "r5", "r3", "r1", "r2", "r4"),
    steps=(
        BufferViewAssert(
            buffer_view="r0",
            message="r5",
            element_type=FLOAT_32,
            encoding_type=ENCODING_DENSE_ROW_MAJOR,
            shape=(2, 3, 4),
        ),
        BufferViewBuffer(out="buffer0", buffer_view="r0"),
        DeviceAllocator(out="allocator0", device="r3"),
        BufferAssert(
            buffer="buffer0",
            message=Rodata(7, "rodata_tensor"),
            allocator="allocator0",
            minimum_length=96,
            memory_types=MEMORY_TYPE_DEVICE_VISIBLE,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
        ),
        BufferViewAssert(
            buffer_view="r1",
            message=Rodata(8, "rodata_input1"),
            element_type=FLOAT_32,
            encoding_type=ENCODING_DENSE_ROW_MAJOR,
            shape=(2, 4, 2),
        ),
        BufferViewBuffer(out="buffer1", buffer_view="r1"),
        BufferAssert(
            buffer="buffer1",
            message=Rodata(7, "rodata_tensor"),
            allocator="allocator0",
            minimum_length=64,
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
            allocation_size=48,
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
            binding_table=(("buffer0", 0, 96), ("buffer1", 0, 64), ("buffer2", 0, 48)),
        ),
        FenceAwait(out="status0", timeout_millis=-1, flags=0, fences=("fence1",)),
        FailIf(
            test="status0", status="status0", message="failed to wait on timepoint", location=None
        ),
    ),
    outputs=("buffer2",),
)
