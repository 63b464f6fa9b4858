# Golden 'readback_loop': cf_readback_loop.mlir, one function. Covers: a host loop reading a result back: a queue program per region of the body, the readback inside one, command buffers recorded per call as program steps.
QUEUE_0 = QueueProgram(
    function="__init",
    inputs=("r1", "r2", "i0", "r0"),
    steps=(
        CommandBufferCreate(
            out="cmd0",
            device="r1",
            modes=0,
            command_categories=CATEGORY_TRANSFER | CATEGORY_DISPATCH,
            queue_affinity=-1,
            binding_capacity=1,
        ),
        ExecutableLookupFunction(
            out="function0", executable="r2", name=Rodata(5, "rodata_halve_until_small_dispatch_2")
        ),
        CommandBufferDispatch(
            command_buffer="cmd0",
            executable="r2",
            function_id="function0",
            workgroup_x=1,
            workgroup_y=1,
            workgroup_z=1,
            flags=0,
            constants=("i0",),
            bindings=((0, 0, "r0", 0, 4),),
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferFinalize(command_buffer="cmd0"),
    ),
    outputs=("cmd0",),
)

QUEUE_1 = QueueProgram(
    function="halve_until_small",
    inputs=("r0", "r2"),
    steps=(
        BufferViewDim(out="viewdim0", buffer_view="r0", index=0),
        BufferViewAssert(
            buffer_view="r0",
            message=Rodata(6, "rodata_input0"),
            element_type=FLOAT_32,
            encoding_type=ENCODING_DENSE_ROW_MAJOR,
            shape=("viewdim0",),
        ),
        Compute(out="t1", op="mul.i64", args=("viewdim0", 4)),
        BufferViewBuffer(out="buffer0", buffer_view="r0"),
        DeviceAllocator(out="allocator0", device="r2"),
        BufferAssert(
            buffer="buffer0",
            message=Rodata(7, "rodata_tensor"),
            allocator="allocator0",
            minimum_length="t1",
            memory_types=MEMORY_TYPE_DEVICE_VISIBLE,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
        ),
    ),
    outputs=("viewdim0", "t1", "buffer0"),
)

QUEUE_2 = QueueProgram(
    function="halve_until_small",
    inputs=("r2", "r4", "i28", "i30", "r0", "r3"),
    steps=(
        FenceCreate(out="fence0", device="r2", flags=0),
        DeviceQueueAlloca(
            out="buffer0",
            device="r2",
            queue_affinity=-1,
            wait_fence="r4",
            signal_fence="fence0",
            pool=0,
            memory_types=MEMORY_TYPE_DEVICE_LOCAL,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
            allocation_size="i28",
            flags=0,
        ),
        FenceCreate(out="fence1", device="r2", flags=0),
        DeviceQueueAlloca(
            out="buffer1",
            device="r2",
            queue_affinity=-1,
            wait_fence="r4",
            signal_fence="fence1",
            pool=0,
            memory_types=MEMORY_TYPE_HOST_LOCAL | MEMORY_TYPE_DEVICE_VISIBLE,
            buffer_usage=USAGE_TRANSFER
            | USAGE_DISPATCH_STORAGE
            | USAGE_MAPPING_SCOPED
            | USAGE_MAPPING_ACCESS_RANDOM,
            allocation_size=4,
            flags=0,
        ),
        FenceCreate(out="fence2", device="r2", flags=0),
        DeviceQueueAlloca(
            out="buffer2",
            device="r2",
            queue_affinity=-1,
            wait_fence="r4",
            signal_fence="fence2",
            pool=0,
            memory_types=MEMORY_TYPE_DEVICE_LOCAL,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
            allocation_size=64,
            flags=0,
        ),
        FenceJoin(out="fence3", flags=0, fences=("fence0", "fence1", "fence2")),
        Compute(out="t0", op="trunc.i64.i32", args=("i30",)),
        Compute(out="t1", op="shr.i64.u", args=("i30", 32)),
        Compute(out="t2", op="trunc.i64.i32", args=("t1",)),
        CommandBufferCreate(
            out="cmd0",
            device="r2",
            modes=MODE_ONE_SHOT,
            command_categories=CATEGORY_TRANSFER | CATEGORY_DISPATCH,
            queue_affinity=-1,
            binding_capacity=0,
        ),
        CommandBufferCopyBuffer(
            command_buffer="cmd0",
            source_buffer_slot=0,
            target_buffer_slot=0,
            source_buffer="r0",
            source_offset=0,
            target_buffer="buffer0",
            target_offset=0,
            length="i28",
            flags=0,
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        ExecutableLookupFunction(
            out="function0",
            executable="r3",
            name=Rodata(8, "rodata_halve_until_small_dispatch_0_reduction_d"),
        ),
        CommandBufferDispatch(
            command_buffer="cmd0",
            executable="r3",
            function_id="function0",
            workgroup_x=1,
            workgroup_y=1,
            workgroup_z=1,
            flags=0,
            constants=("t0", "t2"),
            bindings=((0, 0, "buffer0", 0, "i28"), (0, 0, "buffer2", 0, 64)),
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferCopyBuffer(
            command_buffer="cmd0",
            source_buffer_slot=0,
            target_buffer_slot=0,
            source_buffer="buffer2",
            source_offset=0,
            target_buffer="buffer1",
            target_offset=0,
            length=4,
            flags=0,
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferFinalize(command_buffer="cmd0"),
        FenceCreate(out="fence4", device="r2", flags=0),
        DeviceQueueExecute(
            device="r2",
            queue_affinity=-1,
            wait_fence="fence3",
            signal_fence="fence4",
            command_buffer="cmd0",
            flags=0,
        ),
        FenceCreate(out="fence5", device="r2", flags=0),
        DeviceQueueDealloca(
            device="r2",
            queue_affinity=-1,
            wait_fence="fence4",
            signal_fence="fence5",
            buffer="buffer2",
            flags=0,
        ),
        FenceAwait(out="status0", timeout_millis=-1, flags=0, fences=("fence5",)),
        FailIf(
            test="status0", status="status0", message="failed to wait on timepoint", location=None
        ),
        BufferLoad(out="value0", source_buffer="buffer1", source_offset=0, length=4),
    ),
    outputs=("t0", "t2", "value0", "fence5", "buffer0"),
)

QUEUE_3 = QueueProgram(
    function="halve_until_small",
    inputs=("r2", "r4", "i34", "r3", "i30", "i32", "i33", "r6", "i28"),
    steps=(
        FenceCreate(out="fence0", device="r2", flags=0),
        DeviceQueueAlloca(
            out="buffer0",
            device="r2",
            queue_affinity=-1,
            wait_fence="r4",
            signal_fence="fence0",
            pool=0,
            memory_types=MEMORY_TYPE_DEVICE_LOCAL,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
            allocation_size="i34",
            flags=0,
        ),
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
            name=Rodata(9, "rodata_halve_until_small_dispatch_1_elementwise"),
        ),
        Compute(out="t1", op="cmp.lt.i64.u", args=(0, "i30")),
        Compute(out="t2", op="xor.i32", args=("t1", 1)),
        Compute(out="t3", op="sub.i64", args=(0, "i30")),
        Compute(out="t4", op="sub.i64", args=("i30", 1)),
        Compute(out="t5", op="select.i64", args=("t2", "t3", "t4")),
        Compute(out="t6", op="div.i64.s", args=("t5", 4096)),
        Compute(out="t7", op="sub.i64", args=(0, "t6")),
        Compute(out="t8", op="add.i64", args=("t6", 1)),
        Compute(out="t9", op="select.i64", args=("t2", "t7", "t8")),
        Compute(out="t10", op="trunc.i64.i32", args=("t9",)),
        CommandBufferDispatch(
            command_buffer="cmd0",
            executable="r3",
            function_id="function0",
            workgroup_x="t10",
            workgroup_y=1,
            workgroup_z=1,
            flags=0,
            constants=("i32", "i33"),
            bindings=((0, 0, "r6", 0, "i28"), (0, 0, "buffer0", 0, "i34")),
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
    ),
    outputs=("function0", "buffer0", "fence1"),
)

QUEUE_4 = QueueProgram(
    function="halve_until_small",
    inputs=("r2", "r1"),
    steps=(
        FenceCreate(out="fence0", device="r2", flags=0),
        DeviceQueueAlloca(
            out="buffer0",
            device="r2",
            queue_affinity=-1,
            wait_fence="r1",
            signal_fence="fence0",
            pool=0,
            memory_types=MEMORY_TYPE_DEVICE_LOCAL,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
            allocation_size=4,
            flags=0,
        ),
    ),
    outputs=("fence0", "buffer0"),
)

QUEUE_5 = QueueProgram(
    function="halve_until_small",
    inputs=("r2", "r0", "r1", "r3", "r4"),
    steps=(
        FenceCreate(out="fence0", device="r2", flags=0),
        DeviceQueueExecuteIndirect(
            device="r2",
            queue_affinity=-1,
            wait_fence="r0",
            signal_fence="fence0",
            command_buffer="r1",
            flags=0,
            binding_table=(("r3", 0, 4),),
        ),
        FenceAwait(out="status0", timeout_millis=-1, flags=0, fences=("r4",)),
        FailIf(
            test="status0", status="status0", message="failed to wait on timepoint", location=None
        ),
    ),
    outputs=("fence0",),
)
