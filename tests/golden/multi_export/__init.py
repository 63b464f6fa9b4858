# Golden 'multi_export': multi_export.mlir, one function. Covers: several exports and internal calls; one export table.
    def __init():
        "VM export '__init' (cconv '0v_v'); no ABI declaration."
        r5 = r6 = r7 = r8 = r0 = None
        i0 = 1
        r1 = None
        i2 = 1
        i1 = 18
        i4 = 14
        i6 = -1
        i5 = 48  # DEVICE_LOCAL
        i8 = 527363  # TRANSFER | DISPATCH_STORAGE | SHARING_IMMUTABLE
        i10 = 64
        i9 = -1
        i12 = 0
        i14 = 0
        r2 = None
        r3 = rodata_0
        i13 = hal_devices_count()
        i16 = i13
        r4 = r1
        i18 = i14
        i20 = i14
        while True:
            i13 = int(r4 is not None)
            i13 = i13 ^ i0
            i22 = int(i18 < i16)
            i22 = i13 & i22
            if i22:
                r4 = None
                i22 = trunc_i64_i32(i18)
                r5 = hal_devices_get(i22)
                r6 = rodata_hal_device_id
                r7 = rodata_local
                i22, i24 = hal_device_query_i64(r5, r6, r7)
                r6 = r7 = None
                i23 = int(i24 != 0)
                i23 = i23 if i22 else i12
                if i23:
                    r6 = rodata_hal_executable_format
                    r7 = rodata_embedded_elf_x86_64
                    i22, i24 = hal_device_query_i64(r5, r6, r7)
                    r6 = r7 = None
                    i23 = int(i24 != 0)
                    i23 = i23 if i22 else i12
                    i22 = i23
                else:
                    i22 = i12
                i23 = int(i20 == i14)
                i24 = i2 if i22 else i14
                i24 = add_i64(i20, i24)
                i23 = i22 & i23
                r5 = r5 if i23 else r1
                i18 = add_i64(i18, i2)
                r4 = r5
                r5 = None
                i20 = i24
                continue
            r1 = None
            if i13:
                raise vm_fail(i1, MESSAGE_0, "__init", None)
            # tests/corpus/multi_export.mlir:31:8
            r1 = rodata_hal_executable_format
            r5 = rodata_embedded_elf_x86_64
            i1, i2 = hal_device_query_i64(r4, r1, r5)
            r1 = None
            i13 = int(i2 != 0)
            i13 = i13 if i1 else i12
            i2 = i14 if i13 else i6
            i1 = int(i2 == i14)
            global_store_ref(refs, 0, "!hal.device", r4)
            if i1:
                r1 = rodata_5_elf
                r6 = hal_executable_create(r4, i6, r5, r1, r0)
                r4 = r5 = r0 = None
                # line 25:8
                r1 = refs.get(0)  # !hal.device
                r7 = hal_device_allocator(r1)
                r8 = hal_allocator_import(r7, i0, i6, i5, i8, r3, i14, i10)
                i1 = int(r8 is not None)
                # line 31:8
                global_store_ref(refs, 1, "!hal.executable", r6)
                r6 = None
                # line 25:8
                if i1:
                    r0 = r2
                    r2 = r8
                    r8 = r3 = r7 = None
                    r1 = r2
                    r2 = None
                    i0 = hal_fence_await(i9, i14, [r0])
                    r0 = None
                    if i0:
                        raise vm_fail(
                            i0,
                            "failed to wait on timepoint",
                            "__init",
                            "tests/corpus/multi_export.mlir:25:8",
                        )
                    global_store_ref(refs, 2, "!hal.buffer", r1)
                    return
                r8 = None
                r0 = hal_allocator_allocate(r7, i6, i5, i8, i10)
                r7 = None
                r4 = hal_ex_file_from_memory(r1, i6, i0, r3, i14, i10, i12)
                r3 = None
                r5 = hal_fence_create(r1, i14)
                hal_device_queue_read(r1, i6, r2, r5, r4, i14, r0, i14, i10, i14)
                r2 = r4 = None
                r1 = r0
                r0 = r5
                r5 = None
                i0 = hal_fence_await(i9, i14, [r0])
                r0 = None
                if i0:
                    raise vm_fail(
                        i0,
                        "failed to wait on timepoint",
                        "__init",
                        "tests/corpus/multi_export.mlir:25:8",
                    )
                global_store_ref(refs, 2, "!hal.buffer", r1)
                return
            # line 31:8
            raise vm_fail(i4, MESSAGE_1, "__init", "tests/corpus/multi_export.mlir:31:8")
