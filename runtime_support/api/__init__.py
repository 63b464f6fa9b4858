"""What a generated package's exports call: the module context (context.py), the export
closures (export_call.py) and the numpy <-> VM conversion of arguments and results
(abi.py)."""
