# Golden '__init', the function every case shares (from tensor_elementwise.mlir).
    def __init():
        "VM export '__init' (cconv '0v_v'); no ABI declaration."
        r3 = r4 = r5 = None
        i0 = 1
        r0 = None
        i1 = 14
        i2 = -1
        i4 = 18
        i5 = 0
        i6 = 0
        i8 = 1
        r1 = None
        i10 = hal_devices_count()
        i12 = i10
        r2 = r1
        i10 = i6
        i14 = i6
        while True:
            i16 = int(r2 is not None)
            i16 = i16 ^ i0
            i17 = int(i10 < i12)
            i17 = i16 & i17
            if i17:
                r2 = None
                i17 = trunc_i64_i32(i10)
                r3 = hal_devices_get(i17)
                r4 = rodata_hal_device_id
                r5 = rodata_local
                i17, i18 = hal_device_query_i64(r3, r4, r5)
                r4 = r5 = None
                i20 = int(i18 != 0)
                i20 = i20 if i17 else i5
                if i20:
                    r4 = rodata_hal_executable_format
                    r5 = rodata_embedded_elf_x86_64
                    i17, i18 = hal_device_query_i64(r3, r4, r5)
                    r4 = r5 = None
                    i20 = int(i18 != 0)
                    i20 = i20 if i17 else i5
                    i17 = i20
                else:
                    i17 = i5
                i18 = int(i14 == i6)
                i20 = i8 if i17 else i6
                i20 = add_i64(i14, i20)
                i18 = i17 & i18
                r3 = r3 if i18 else r1
                i10 = add_i64(i10, i8)
                r2 = r3
                r3 = None
                i14 = i20
                continue
            r1 = None
            if i16:
                raise vm_fail(i4, MESSAGE_0, "__init", None)
            # tests/corpus/tensor_elementwise.mlir:5:10
            r1 = rodata_hal_executable_format
            r3 = rodata_embedded_elf_x86_64
            i0, i8 = hal_device_query_i64(r2, r1, r3)
            r1 = None
            i4 = int(i8 != 0)
            i5 = i4 if i0 else i5
            i8 = i6 if i5 else i2
            i0 = int(i8 == i6)
            global_store_ref(refs, 0, "!hal.device", r2)
            if i0:
                r1 = rodata_4_elf
                r4 = hal_executable_create(r2, i2, r3, r1, r0)
                r2 = r3 = r1 = None
                global_store_ref(refs, 1, "!hal.executable", r4)
                r4 = None
                r1 = fn0()
                global_store_ref(refs, 2, "!hal.command_buffer", r1)
                return
            raise vm_fail(i1, MESSAGE_1, "__init", "tests/corpus/tensor_elementwise.mlir:5:10")
