# Golden 'multi_export': multi_export.mlir, one function. Covers: several exports and internal calls; one export table.
    def nothing():
        "sync func @nothing() -> ()"
        return
