"""Parameter archives for the `io_parameters` module (hal-abi.md §G).

files.py        MappedFile (mmap of one file), bounds-checked Cursor, typed file errors
entry.py        ParameterEntry (one parameter; the leaf the readers and the index share)
index.py        ParameterIndex (one scope), ParameterProviders (scopes),
                open_parameter_file, build_providers (what `load(parameters=...)` takes)
irpa.py         .irpa reader (chained archives; SKIP/SPLAT/DATA) and writer (irpa_bytes,
                write_irpa, Splat)
safetensors.py  .safetensors reader (+ safetensors_bytes for tests)
gguf.py         GGUF v2/v3 reader (raw tensor bytes; + gguf_bytes for tests)

Every offset and length read from a file is checked before use; a malformed file raises
`runtime_support.errors.VMError` naming the file, the entry and the problem.
"""

from .files import MappedFile
from .index import (
    ParameterEntry,
    ParameterIndex,
    ParameterProviders,
    build_providers,
    open_parameter_file,
)
from .irpa import Splat, irpa_bytes, parse_irpa, write_irpa

__all__ = [
    "MappedFile",
    "ParameterEntry",
    "ParameterIndex",
    "ParameterProviders",
    "Splat",
    "build_providers",
    "irpa_bytes",
    "open_parameter_file",
    "parse_irpa",
    "write_irpa",
]
