# Golden 'loop_call': cf_loop_call.mlir, one function. Covers: a host loop whose test reads a value back: its program's call a loop call (queue_n.loop) with the loop kept around it, the program's Loop in _programs.py.
QUEUE_0 = QueueProgram(
    function="__init",
    inputs=("r1", "r0"),
    steps=(
        CommandBufferCreate(
            out="cmd0",
            device="r1",
            modes=0,
            command_categories=CATEGORY_TRANSFER,
            queue_affinity=-1,
            binding_capacity=3,
        ),
        CommandBufferCopyBuffer(
            command_buffer="cmd0",
            source_buffer_slot=0,
            target_buffer_slot=2,
            source_buffer="r0",
            source_offset=0,
            target_buffer="r0",
            target_offset=0,
            length=4,
            flags=0,
        ),
        CommandBufferCopyBuffer(
            command_buffer="cmd0",
            source_buffer_slot=1,
            target_buffer_slot=2,
            source_buffer="r0",
            source_offset=0,
            target_buffer="r0",
            target_offset=64,
            length=4,
            flags=0,
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferFinalize(command_buffer="cmd0"),
    ),
    outputs=("cmd0",),
)

QUEUE_1 = QueueProgram(
    function="walk",
    inputs=("r0", "r7", "r4", "r1", "r2", "r3", "r6"),
    steps=(
        BufferViewAssert(
            buffer_view="r0",
            message="r7",
            element_type=INT_32,
            encoding_type=ENCODING_DENSE_ROW_MAJOR,
            shape=(8,),
        ),
        BufferViewBuffer(out="buffer0", buffer_view="r0"),
        DeviceAllocator(out="allocator0", device="r4"),
        BufferAssert(
            buffer="buffer0",
            message=Rodata(6, "rodata_tensor"),
            allocator="allocator0",
            minimum_length=32,
            memory_types=MEMORY_TYPE_DEVICE_VISIBLE,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
        ),
        BufferViewAssert(
            buffer_view="r1",
            message=Rodata(7, "rodata_input1"),
            element_type=INT_32,
            encoding_type=ENCODING_DENSE_ROW_MAJOR,
            shape=(),
        ),
        BufferViewBuffer(out="buffer1", buffer_view="r1"),
        BufferAssert(
            buffer="buffer1",
            message=Rodata(6, "rodata_tensor"),
            allocator="allocator0",
            minimum_length=4,
            memory_types=MEMORY_TYPE_DEVICE_VISIBLE,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
        ),
        BufferViewAssert(
            buffer_view="r2",
            message=Rodata(8, "rodata_input2"),
            element_type=INT_32,
            encoding_type=ENCODING_DENSE_ROW_MAJOR,
            shape=(),
        ),
        BufferViewBuffer(out="buffer2", buffer_view="r2"),
        BufferAssert(
            buffer="buffer2",
            message=Rodata(6, "rodata_tensor"),
            allocator="allocator0",
            minimum_length=4,
            memory_types=MEMORY_TYPE_DEVICE_VISIBLE,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
        ),
        FenceCreate(out="fence0", device="r4", flags=0),
        DeviceQueueAlloca(
            out="buffer3",
            device="r4",
            queue_affinity=-1,
            wait_fence="r3",
            signal_fence="fence0",
            pool=0,
            memory_types=MEMORY_TYPE_HOST_LOCAL | MEMORY_TYPE_DEVICE_VISIBLE,
            buffer_usage=USAGE_TRANSFER
            | USAGE_DISPATCH_STORAGE
            | USAGE_MAPPING_SCOPED
            | USAGE_MAPPING_ACCESS_RANDOM,
            allocation_size=128,
            flags=0,
        ),
        FenceCreate(out="fence1", device="r4", flags=0),
        DeviceQueueExecuteIndirect(
            device="r4",
            queue_affinity=-1,
            wait_fence="fence0",
            signal_fence="fence1",
            command_buffer="r6",
            flags=0,
            binding_table=(("buffer1", 0, 4), ("buffer2", 0, 4), ("buffer3", 0, 128)),
        ),
        FenceAwait(out="status0", timeout_millis=-1, flags=0, fences=("fence1",)),
        FailIf(
            test="status0", status="status0", message="failed to wait on timepoint", location=None
        ),
        BufferLoad(out="value0", source_buffer="buffer3", source_offset=64, length=4),
        Compute(out="t3", op="and.i32", args=("value0", 31)),
        Compute(out="t4", op="cmp.lt.i32.u", args=(0, "t3")),
        BufferLoad(out="value1", source_buffer="buffer3", source_offset=0, length=4),
    ),
    outputs=("t4", "t3", "value1", "buffer0"),
)

QUEUE_2 = QueueProgram(
    function="walk",
    inputs=("r4", "r3", "i16", "r5", "r7"),
    steps=(
        FenceCreate(out="fence0", device="r4", flags=0),
        DeviceQueueAlloca(
            out="buffer0",
            device="r4",
            queue_affinity=-1,
            wait_fence="r3",
            signal_fence="fence0",
            pool=0,
            memory_types=MEMORY_TYPE_HOST_LOCAL | MEMORY_TYPE_DEVICE_VISIBLE,
            buffer_usage=USAGE_TRANSFER
            | USAGE_DISPATCH_STORAGE
            | USAGE_MAPPING_SCOPED
            | USAGE_MAPPING_ACCESS_RANDOM,
            allocation_size=4,
            flags=0,
        ),
        FenceCreate(out="fence1", device="r4", flags=0),
        DeviceQueueAlloca(
            out="buffer1",
            device="r4",
            queue_affinity=-1,
            wait_fence="r3",
            signal_fence="fence1",
            pool=0,
            memory_types=MEMORY_TYPE_DEVICE_LOCAL,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
            allocation_size=64,
            flags=0,
        ),
        FenceJoin(out="fence2", flags=0, fences=("fence0", "fence1")),
        Compute(out="t0", op="trunc.i64.i32", args=("i16",)),
        Compute(out="t1", op="shr.i64.u", args=("i16", 32)),
        Compute(out="t2", op="trunc.i64.i32", args=("t1",)),
        CommandBufferCreate(
            out="cmd0",
            device="r4",
            modes=MODE_ONE_SHOT,
            command_categories=CATEGORY_TRANSFER | CATEGORY_DISPATCH,
            queue_affinity=-1,
            binding_capacity=0,
        ),
        ExecutableLookupFunction(
            out="function0", executable="r5", name=Rodata(9, "rodata_walk_dispatch_0_elementwise")
        ),
        CommandBufferDispatch(
            command_buffer="cmd0",
            executable="r5",
            function_id="function0",
            workgroup_x=1,
            workgroup_y=1,
            workgroup_z=1,
            flags=0,
            constants=("t0", "t2"),
            bindings=((0, 0, "r7", 0, 32), (0, 0, "buffer1", 0, 64)),
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferCopyBuffer(
            command_buffer="cmd0",
            source_buffer_slot=0,
            target_buffer_slot=0,
            source_buffer="buffer1",
            source_offset=0,
            target_buffer="buffer0",
            target_offset=0,
            length=4,
            flags=0,
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferFinalize(command_buffer="cmd0"),
        FenceCreate(out="fence3", device="r4", flags=0),
        DeviceQueueExecute(
            device="r4",
            queue_affinity=-1,
            wait_fence="fence2",
            signal_fence="fence3",
            command_buffer="cmd0",
            flags=0,
        ),
        FenceCreate(out="fence4", device="r4", flags=0),
        DeviceQueueDealloca(
            device="r4",
            queue_affinity=-1,
            wait_fence="fence3",
            signal_fence="fence4",
            buffer="buffer1",
            flags=0,
        ),
        FenceAwait(out="status0", timeout_millis=-1, flags=0, fences=("fence4",)),
        FailIf(
            test="status0", status="status0", message="failed to wait on timepoint", location=None
        ),
        BufferLoad(out="value0", source_buffer="buffer0", source_offset=0, length=4),
    ),
    outputs=("value0",),
    loop=Loop(
        targets=("i13",),
        registers=("i5", "i12", "i14"),
        after=(
            Compute(out="i5", op="add.i32", args=("i5", "i12")),
            Compute(out="i16", op="cmp.lt.i32.s", args=("i5", "i14")),
            Compute(out="i17", op="cmp.nz.i32", args=("i13",)),
            Compute(out="i17", op="and.i32", args=("i16", "i17")),
        ),
        test="i17",
        copies=(),
        before=(Compute(out="i16", op="ext.i32.i64.s", args=("i13",)),),
        kept=("i5",),
    ),
)

QUEUE_3 = QueueProgram(
    function="walk",
    inputs=("r4", "r3", "r5", "i4"),
    steps=(
        FenceCreate(out="fence0", device="r4", flags=0),
        DeviceQueueAlloca(
            out="buffer0",
            device="r4",
            queue_affinity=-1,
            wait_fence="r3",
            signal_fence="fence0",
            pool=0,
            memory_types=MEMORY_TYPE_DEVICE_LOCAL,
            buffer_usage=USAGE_TRANSFER | USAGE_DISPATCH_STORAGE,
            allocation_size=4,
            flags=0,
        ),
        CommandBufferCreate(
            out="cmd0",
            device="r4",
            modes=MODE_ONE_SHOT,
            command_categories=CATEGORY_TRANSFER | CATEGORY_DISPATCH,
            queue_affinity=-1,
            binding_capacity=0,
        ),
        ExecutableLookupFunction(
            out="function0", executable="r5", name=Rodata(10, "rodata_walk_dispatch_1")
        ),
        CommandBufferDispatch(
            command_buffer="cmd0",
            executable="r5",
            function_id="function0",
            workgroup_x=1,
            workgroup_y=1,
            workgroup_z=1,
            flags=0,
            constants=("i4",),
            bindings=((0, 0, "buffer0", 0, 4),),
        ),
        CommandBufferExecutionBarrier(
            command_buffer="cmd0", source_stage_mask=28, target_stage_mask=13, flags=0
        ),
        CommandBufferFinalize(command_buffer="cmd0"),
        FenceCreate(out="fence1", device="r4", flags=0),
        DeviceQueueExecute(
            device="r4",
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
    outputs=("buffer0",),
)
