"""ctypes mirror of the CPU executable library ABI (IREE 3.13, library version 0.6).

The structs below are the ones a kernel library (embedded ELF or system shared object)
exchanges with its host: `docs/hal-abi.md` section C.2 gives every offset, and
`_check_layout()` asserts them at import time so a typo cannot silently shift a field.

    query(max_version, environment) -> LibraryV0*      (LibraryV0.header -> LibraryHeader)
    dispatch(environment, dispatch_state, workgroup_state) -> int   (0 = success)

Pointers are declared `c_void_p` (read as Python ints, `None` for NULL) rather than typed
pointers: every pointer a library hands us is validated before it is dereferenced.
"""

from __future__ import annotations

import ctypes
import platform
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_int,
    c_int32,
    c_size_t,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)
from struct import Struct

# --- versions and limits -------------------------------------------------------------

LIBRARY_VERSION_0_6 = 6
LIBRARY_VERSION_LATEST = LIBRARY_VERSION_0_6
"""The `max_version` passed to query; a library newer than this returns NULL."""

LIBRARY_FEATURE_NONE = 0
SANITIZER_NONE = 0

DISPATCH_FLAG_SEQUENTIAL = 1 << 0
"""Workgroups must run one at a time, in order (no worker partitioning)."""
DISPATCH_FLAG_WORKGROUP_SIZE_DYNAMIC = 1 << 1

MAX_CONSTANT_COUNT = 64
MAX_BINDING_COUNT = 64
WORKGROUP_LOCAL_MEMORY_PAGE_SIZE = 4096

QUERY_SYMBOL = b"iree_hal_executable_library_query"

OPTIONAL_IMPORT_PREFIX = b"?"
"""An import name starting with this may resolve to NULL (the kernel checks)."""

PROCESSOR_DATA_CAPACITY = 8


# --- structs (hal-abi.md C.2) -----------------------------------------------------------


class LibraryHeader(Structure):
    """`iree_hal_executable_library_header_t` (24 bytes)."""

    _fields_ = [
        ("version", c_uint32),
        ("name", c_void_p),  # const char*
        ("features", c_uint32),
        ("sanitizer", c_int32),
    ]


class ImportTableV0(Structure):
    _fields_ = [
        ("count", c_uint32),
        ("symbols", c_void_p),  # const char* const* (sorted; '?' = optional)
    ]


class ExportTableV0(Structure):
    _fields_ = [
        ("count", c_uint32),
        ("ptrs", c_void_p),  # dispatch function pointers
        ("attrs", c_void_p),  # DispatchAttrsV0[count] (required in 3.13)
        ("params", c_void_p),
        ("occupancy", c_void_p),
        ("names", c_void_p),  # const char*[count] (required)
        ("tags", c_void_p),
        ("parameter_names", c_void_p),
        ("source_locations", c_void_p),  # SourceLocationV0[count] or NULL
        ("stage_locations", c_void_p),  # StageLocationTableV0[count] or NULL
    ]


class ConstantTableV0(Structure):
    _fields_ = [("count", c_uint32)]


class SourceFileTableV0(Structure):
    _fields_ = [
        ("count", c_uint32),
        ("files", c_void_p),  # SourceFileV0[count]
    ]


class LibraryV0(Structure):
    """`iree_hal_executable_library_v0_t` (128 bytes)."""

    _fields_ = [
        ("header", c_void_p),  # const LibraryHeader*
        ("imports", ImportTableV0),
        ("exports", ExportTableV0),
        ("constants", ConstantTableV0),
        ("sources", SourceFileTableV0),
    ]


class DispatchAttrsV0(Structure):
    """`iree_hal_executable_dispatch_attrs_v0_t` (64 bytes)."""

    _fields_ = [
        ("flags", c_uint64),
        ("local_memory_pages", c_uint16),
        ("constant_count", c_uint8),
        ("binding_count", c_uint8),
        ("workgroup_size_x", c_uint32),
        ("workgroup_size_y", c_uint32),
        ("workgroup_size_z", c_uint16),
        ("parameter_count", c_uint16),
        ("reserved_1", c_uint64 * 5),
    ]


class SourceLocationV0(Structure):
    """`iree_hal_executable_source_location_v0_t` (16 bytes)."""

    _fields_ = [
        ("line", c_uint32),
        ("path_length", c_uint32),
        ("path", c_void_p),
    ]


class StageLocationTableV0(Structure):
    _fields_ = [
        ("count", c_uint32),
        ("names", c_void_p),  # const char*[count]
        ("locations", c_void_p),  # SourceLocationV0[count]
    ]


class SourceFileV0(Structure):
    """`iree_hal_executable_source_file_v0_t` (32 bytes)."""

    _fields_ = [
        ("path_length", c_uint32),
        ("path", c_void_p),
        ("content_length", c_uint32),
        ("content", c_void_p),
    ]


class ProcessorV0(Structure):
    """CPU feature words (`runtime/src/iree/schemas/cpu_data.h`); zeros = baseline."""

    _fields_ = [("data", c_uint64 * PROCESSOR_DATA_CAPACITY)]


IMPORT_THUNK = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, c_void_p)
"""`int thunk(import_fn, params, context, reserved)`: calls `import_fn(params, context,
reserved)`; how a kernel reaches a host import."""

IMPORT_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p)
"""`int import_fn(params, context, reserved)`."""


class EnvironmentV0(Structure):
    """`iree_hal_executable_environment_v0_t` (96 bytes): passed to query and dispatch."""

    _fields_ = [
        ("constants", c_void_p),  # const u32* executable constants, or NULL
        ("import_thunk", c_void_p),
        ("import_funcs", c_void_p),  # const import_fn*[imports.count]
        ("import_contexts", c_void_p),  # void* const*[imports.count]
        ("processor", ProcessorV0),
    ]


class DispatchStateV0(Structure):
    """`iree_hal_executable_dispatch_state_v0_t` (48 bytes), shared by one dispatch."""

    _fields_ = [
        ("workgroup_size_x", c_uint32),
        ("workgroup_size_y", c_uint32),
        ("workgroup_size_z", c_uint16),
        ("constant_count", c_uint16),
        ("workgroup_count_x", c_uint32),
        ("workgroup_count_y", c_uint32),
        ("workgroup_count_z", c_uint16),
        ("max_concurrency", c_uint8),
        ("binding_count", c_uint8),
        ("constants", c_void_p),  # const u32*
        ("binding_ptrs", c_void_p),  # void* const*
        ("binding_lengths", c_void_p),  # const size_t*
    ]


class WorkgroupStateV0(Structure):
    """`iree_hal_executable_workgroup_state_v0_t` (32 bytes), one per worker."""

    _fields_ = [
        ("workgroup_id_x", c_uint32),
        ("workgroup_id_y", c_uint32),
        ("workgroup_id_z", c_uint16),
        ("reserved", c_uint16),
        ("processor_id", c_uint32),
        ("local_memory", c_void_p),
        ("local_memory_size", c_uint32),
    ]


# The same record as packed from Python into a dispatch's argument block (one per worker).
WORKGROUP_STATE = Struct("<IIHHIQI4x")
assert WORKGROUP_STATE.size == ctypes.sizeof(WorkgroupStateV0)

QUERY_FN = CFUNCTYPE(c_void_p, c_uint32, POINTER(EnvironmentV0))
"""`const LibraryHeader** query(u32 max_version, const EnvironmentV0* env)`."""

DISPATCH_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p)
"""`int dispatch(const EnvironmentV0*, const DispatchStateV0*, const WorkgroupStateV0*)`."""

# Element types handed to kernels through arrays.
BindingPtrs = c_void_p
BindingLength = c_size_t
Constant = c_uint32


def _check_layout() -> None:
    expected = {
        LibraryHeader: (24, {"version": 0, "name": 8, "features": 16, "sanitizer": 20}),
        LibraryV0: (
            128,
            {"header": 0, "imports": 8, "exports": 24, "constants": 104, "sources": 112},
        ),
        ExportTableV0: (
            80,
            {
                "count": 0,
                "ptrs": 8,
                "attrs": 16,
                "names": 40,
                "source_locations": 64,
                "stage_locations": 72,
            },
        ),
        DispatchAttrsV0: (
            64,
            {
                "flags": 0,
                "local_memory_pages": 8,
                "constant_count": 10,
                "binding_count": 11,
                "workgroup_size_x": 12,
                "workgroup_size_y": 16,
                "workgroup_size_z": 20,
                "parameter_count": 22,
                "reserved_1": 24,
            },
        ),
        EnvironmentV0: (
            96,
            {
                "constants": 0,
                "import_thunk": 8,
                "import_funcs": 16,
                "import_contexts": 24,
                "processor": 32,
            },
        ),
        DispatchStateV0: (
            48,
            {
                "constant_count": 10,
                "workgroup_count_x": 12,
                "workgroup_count_z": 20,
                "max_concurrency": 22,
                "binding_count": 23,
                "constants": 24,
                "binding_ptrs": 32,
                "binding_lengths": 40,
            },
        ),
        WorkgroupStateV0: (
            32,
            {"workgroup_id_z": 8, "processor_id": 12, "local_memory": 16, "local_memory_size": 24},
        ),
        SourceLocationV0: (16, {"path": 8}),
        SourceFileV0: (32, {"path": 8, "content_length": 16, "content": 24}),
    }
    for struct, (size, offsets) in expected.items():
        assert ctypes.sizeof(struct) == size, (struct.__name__, ctypes.sizeof(struct))
        for name, offset in offsets.items():
            actual = getattr(struct, name).offset
            assert actual == offset, (struct.__name__, name, actual)


_check_layout()


# --- processor information ------------------------------------------------------------

# /proc/cpuinfo flag -> bit in processor.data[0] (IREE_CPU_DATA0_X86_64_*). AMX is left
# out on purpose: Linux requires a per-process permission request (arch_prctl) before
# AMX instructions may run, and we never make it.
_X86_64_DATA0_BITS = {
    "pni": 0,  # sse3
    "ssse3": 1,
    "sse4_1": 2,
    "sse4_2": 3,
    "sse4a": 4,
    "avx": 10,
    "fma": 11,
    "fma4": 12,
    "xop": 13,
    "f16c": 14,
    "avx2": 15,
    "avx512f": 20,
    "avx512cd": 21,
    "avx512vl": 22,
    "avx512dq": 23,
    "avx512bw": 24,
    "avx512ifma": 25,
    "avx512vbmi": 26,
    "avx512_vpopcntdq": 27,
    "avx512_vnni": 28,
    "avx512_vbmi2": 29,
    "avx512_bitalg": 30,
    "avx512_bf16": 31,
    "avx512_fp16": 32,
}

_processor_data: tuple[int, ...] | None = None


def host_processor_data() -> tuple[int, ...]:
    """The `processor.data` words for this host (x86-64 Linux), cached.

    Read from the kernel's view of CPUID (`/proc/cpuinfo` flags, which already omit
    features the OS does not enable). Anywhere that is not available the words are all
    zero, which means "baseline x86-64": kernels then take their generic paths.
    """
    global _processor_data
    if _processor_data is None:
        words = [0] * PROCESSOR_DATA_CAPACITY
        if platform.machine().lower() not in ("x86_64", "amd64"):
            _processor_data = tuple(words)
            return _processor_data
        try:
            with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
                for line in f:
                    if line.startswith("flags"):
                        for flag in line.partition(":")[2].split():
                            bit = _X86_64_DATA0_BITS.get(flag)
                            if bit is not None:
                                words[0] |= 1 << bit
                        break
        except OSError:
            pass
        _processor_data = tuple(words)
    return _processor_data
