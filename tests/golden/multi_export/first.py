# Golden 'multi_export': multi_export.mlir, one function. Covers: several exports and internal calls; one export table.
    def first(i0):
        "sync func @first(%input0: i32) -> (%output0: i32)"
        # pc 0x1-0xe @__init
        i0 = fn0(i0)
        return i0
