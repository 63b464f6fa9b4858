# Golden 'multi_export': multi_export.mlir, one function. Covers: several exports and internal calls; one export table.
QUEUE_0 = QueueProgram(
    function="constant_tensor",
    inputs=("r2", "r0", "r1"),
    steps=(
        FenceCreate(out="fence0", device="r2", flags=0),
        DeviceQueueAlloca(
            out="buffer0",
            device="r2",
            queue_affinity=-1,
            wait_fence="r0",
            signal_fence="fence0",
            pool=0,
            memory_types=MEMORY_TYPE_DEVICE_LOCAL,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
            allocation_size=12,
            flags=0,
        ),
        FenceCreate(out="fence1", device="r2", flags=0),
        DeviceQueueCopy(
            device="r2",
            queue_affinity=-1,
            wait_fence="fence0",
            signal_fence="fence1",
            source_buffer="r1",
            source_offset=0,
            target_buffer="buffer0",
            target_offset=0,
            length=12,
            flags=0,
        ),
        FenceAwait(out="status0", timeout_millis=-1, flags=0, fences=("fence1",)),
        FailIf(
            test="status0", status="status0", message="failed to wait on timepoint", location=None
        ),
    ),
    outputs=("buffer0",),
)

QUEUE_1 = QueueProgram(
    function="scale_tensor",
    inputs=("r0", "r4", "r2", "r1", "i0", "r3"),
    steps=(
        BufferViewAssert(
            buffer_view="r0",
            message="r4",
            element_type=FLOAT_32,
            encoding_type=ENCODING_DENSE_ROW_MAJOR,
            shape=(3,),
        ),
        BufferViewBuffer(out="buffer0", buffer_view="r0"),
        DeviceAllocator(out="allocator0", device="r2"),
        BufferAssert(
            buffer="buffer0",
            message=Rodata(7, "rodata_tensor"),
            allocator="allocator0",
            minimum_length=12,
            memory_types=MEMORY_TYPE_DEVICE_VISIBLE,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
        ),
        FenceCreate(out="fence0", device="r2", flags=0),
        DeviceQueueAlloca(
            out="buffer1",
            device="r2",
            queue_affinity=-1,
            wait_fence="r1",
            signal_fence="fence0",
            pool=0,
            memory_types=MEMORY_TYPE_DEVICE_LOCAL,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
            allocation_size=12,
            flags=0,
        ),
        Compute(out="t1", op="bitcast.f32.i32", args=("i0",)),
        CommandBufferCreate(
            out="cmd0",
            device="r2",
            modes=MODE_ONE_SHOT,
            command_categories=CATEGORY_TRANSFER | CATEGORY_DISPATCH,
            queue_affinity=-1,
            binding_capacity=0,
        ),
        ExecutableLookupFunction(
            out="function0",
            executable="r3",
            name=Rodata(8, "rodata_scale_tensor_dispatch_0_elementwise_3_f3"),
        ),
        CommandBufferDispatch(
            command_buffer="cmd0",
            executable="r3",
            function_id="function0",
            workgroup_x=1,
            workgroup_y=1,
            workgroup_z=1,
            flags=0,
            constants=("t1",),
            bindings=((0, 0, "buffer0", 0, 12), (0, 0, "buffer1", 0, 12)),
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferFinalize(command_buffer="cmd0"),
        FenceCreate(out="fence1", device="r2", flags=0),
        DeviceQueueExecute(
            device="r2",
            queue_affinity=-1,
            wait_fence="fence0",
            signal_fence="fence1",
            command_buffer="cmd0",
            flags=0,
        ),
        FenceAwait(out="status0", timeout_millis=-1, flags=0, fences=("fence1",)),
        FailIf(
            test="status0", status="status0", message="failed to wait on timepoint", location=None
        ),
    ),
    outputs=("buffer1",),
)
