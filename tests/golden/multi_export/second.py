# Golden 'multi_export': multi_export.mlir, one function. Covers: several exports and internal calls; one export table.
    def second(i0, i1):
        "sync func @second(%input0: i32, %input1: i32) -> (%output0: i32)"
        # pc 0x1-0x23 @__init
        i0 = fn0(i0)
        i1 = fn0(i1)
        i1 = sub_i32(i0, i1)
        return i1
