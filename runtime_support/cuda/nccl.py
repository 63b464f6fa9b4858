"""NCCL, the collectives library of the `cuda` device, loaded at run time as libcuda is.

IREE's CUDA HAL loads libnccl with dlopen when a channel is first made (its
nccl_dynamic_symbols.c); so does this module, through ctypes, only when a program creates
a `!hal.channel` on a cuda device. Where it looks, in order: PYREE_NCCL_LIBRARY (a path),
the NVIDIA wheel (`pip install nvidia-nccl-cu12`: nvidia/nccl/lib/libnccl.so.2), then
the system's libnccl.so.2. No NCCL, or one older than 2.18 (ncclCommSplit), is one
UNAVAILABLE line naming what to install.

`Nccl` wraps the handful of entry points IREE calls, each turning a failed ncclResult_t
into a one-line VMError with NCCL's own error string. Tests hand it a double instead of
the library (tests/support/nccl_double.py) by replacing `load_library`.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from pathlib import Path

from runtime_support.errors import StatusCode, VMError

INSTALL_HINT = "install it with: pip install nvidia-nccl-cu12 (or set PYREE_NCCL_LIBRARY to libnccl.so.2)"
MIN_VERSION = 21800  # 2.18: ncclCommSplit
UNIQUE_ID_BYTES = 128  # NCCL_UNIQUE_ID_BYTES
SPLIT_NO_COLOR = -1  # NCCL_SPLIT_NOCOLOR

# ncclDataType_t per collective element type (collectives.ELEMENT_TYPES names). NCCL has
# no 16-bit integers: si16/ui16 move as bytes where no arithmetic is needed (None here).
DATA_TYPES = {
    "si8": 0, "ui8": 1, "si32": 2, "ui32": 3, "si64": 4, "ui64": 5,
    "f16": 6, "f32": 7, "f64": 8, "bf16": 9, "si16": None, "ui16": None,
}
BYTES_TYPE = 1  # ncclUint8
# ncclRedOp_t per collective reduction (ncclAvg since NCCL 2.10).
REDUCTIONS = {"sum": 0, "product": 1, "maximum": 2, "minimum": 3, "average": 4}
# ncclResult_t -> status code (IREE's nccl_status_util.c); others INTERNAL.
_STATUS = {
    1: StatusCode.INTERNAL,           # ncclUnhandledCudaError
    2: StatusCode.INTERNAL,           # ncclSystemError
    3: StatusCode.INTERNAL,           # ncclInternalError
    4: StatusCode.INVALID_ARGUMENT,   # ncclInvalidArgument
    5: StatusCode.INVALID_ARGUMENT,   # ncclInvalidUsage
    6: StatusCode.UNAVAILABLE,        # ncclRemoteError
    7: StatusCode.UNAVAILABLE,        # ncclInProgress
}


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


_COMM = ctypes.c_void_p
_PTR, _SIZE, _INT, _STREAM = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p
# Entry point -> argument types (nccl.h); every one returns ncclResult_t (an int).
_SIGNATURES = {
    "ncclGetVersion": (ctypes.POINTER(ctypes.c_int),),
    "ncclGetUniqueId": (ctypes.POINTER(UniqueId),),
    "ncclCommInitRank": (ctypes.POINTER(_COMM), _INT, UniqueId, _INT),
    "ncclCommSplit": (_COMM, _INT, _INT, ctypes.POINTER(_COMM), ctypes.c_void_p),
    "ncclCommUserRank": (_COMM, ctypes.POINTER(ctypes.c_int)),
    "ncclCommCount": (_COMM, ctypes.POINTER(ctypes.c_int)),
    "ncclCommFinalize": (_COMM,),
    "ncclCommDestroy": (_COMM,),
    "ncclGroupStart": (),
    "ncclGroupEnd": (),
    "ncclAllReduce": (_PTR, _PTR, _SIZE, _INT, _INT, _COMM, _STREAM),
    "ncclAllGather": (_PTR, _PTR, _SIZE, _INT, _COMM, _STREAM),
    "ncclReduceScatter": (_PTR, _PTR, _SIZE, _INT, _INT, _COMM, _STREAM),
    "ncclBroadcast": (_PTR, _PTR, _SIZE, _INT, _INT, _COMM, _STREAM),
    "ncclReduce": (_PTR, _PTR, _SIZE, _INT, _INT, _INT, _COMM, _STREAM),
    "ncclSend": (_PTR, _SIZE, _INT, _INT, _COMM, _STREAM),
    "ncclRecv": (_PTR, _SIZE, _INT, _INT, _COMM, _STREAM),
}


def _candidates() -> list[str]:
    found = []
    explicit = os.environ.get("PYREE_NCCL_LIBRARY")
    if explicit:
        found.append(explicit)
    try:
        spec = importlib.util.find_spec("nvidia.nccl")
    except (ImportError, ValueError):
        spec = None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found.append(str(Path(folder) / "lib" / "libnccl.so.2"))
    found += ["libnccl.so.2", "libnccl.so"]
    return found


def load_library():
    """libnccl through ctypes, its argument types declared, or UNAVAILABLE in one line."""
    errors = []
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
        except OSError as e:
            errors.append(" ".join(str(e).split()))
            continue
        try:
            for symbol, argtypes in _SIGNATURES.items():
                fn = getattr(lib, symbol)
                fn.argtypes, fn.restype = argtypes, ctypes.c_int
            lib.ncclGetErrorString.argtypes, lib.ncclGetErrorString.restype = (ctypes.c_int,), ctypes.c_char_p
        except AttributeError as e:
            errors.append(f"{name}: {e}")
            continue
        return lib
    raise VMError(
        StatusCode.UNAVAILABLE,
        f"collectives on the cuda device need NCCL {MIN_VERSION // 10000}.{MIN_VERSION // 100 % 100}+, "
        f"which cannot be loaded ({errors[-1] if errors else 'not found'}); {INSTALL_HINT}",
    )


class Nccl:
    """The NCCL entry points IREE's CUDA HAL calls, errors checked."""

    def __init__(self, lib) -> None:
        self.lib = lib
        version = ctypes.c_int()
        self._check(lib.ncclGetVersion(ctypes.pointer(version)), "ncclGetVersion")
        self.version = version.value
        if self.version < MIN_VERSION:
            raise VMError(
                StatusCode.UNAVAILABLE,
                f"NCCL {self.version} is older than the {MIN_VERSION} the cuda device's collectives need; "
                f"{INSTALL_HINT}",
            )

    def _check(self, rc: int, routine: str) -> None:
        if rc:
            try:
                text = (self.lib.ncclGetErrorString(rc) or b"?").decode("utf-8", "replace")
            except Exception:  # noqa: BLE001 - the error string is only a courtesy
                text = "?"
            raise VMError(_STATUS.get(rc, StatusCode.INTERNAL), f"{routine} failed: ncclResult {rc}: {text}")

    def call(self, routine: str, *args) -> None:
        self._check(getattr(self.lib, routine)(*args), routine)

    def unique_id(self) -> bytes:
        uid = UniqueId()
        self.call("ncclGetUniqueId", ctypes.pointer(uid))
        return bytes(uid.internal).ljust(UNIQUE_ID_BYTES, b"\0")

    def init_rank(self, count: int, uid: bytes, rank: int) -> int:
        comm = _COMM()
        self.call("ncclCommInitRank", ctypes.pointer(comm), count, UniqueId(uid), rank)
        return comm.value

    def split(self, comm: int, color: int, key: int) -> int | None:
        new = _COMM()
        self.call("ncclCommSplit", comm, color, key, ctypes.pointer(new), None)
        return new.value or None  # NULL: this rank took no color

    def rank_and_count(self, comm: int) -> tuple[int, int]:
        rank, count = ctypes.c_int(), ctypes.c_int()
        self.call("ncclCommUserRank", comm, ctypes.pointer(rank))
        self.call("ncclCommCount", comm, ctypes.pointer(count))
        return rank.value, count.value

    def destroy(self, comm: int) -> None:
        """As IREE: finalize then destroy, errors ignored (nobody to report them to)."""
        for routine in ("ncclCommFinalize", "ncclCommDestroy"):
            try:
                getattr(self.lib, routine)(comm)
            except Exception:  # noqa: BLE001
                pass


_opened: Nccl | None = None


def open_nccl() -> Nccl:
    """The process's NCCL, loaded on first use."""
    global _opened
    if _opened is None:
        _opened = Nccl(load_library())
    return _opened


def reset() -> None:
    """Forgets the loaded library (tests switch between doubles)."""
    global _opened
    _opened = None


__all__ = ["BYTES_TYPE", "DATA_TYPES", "Nccl", "REDUCTIONS", "UniqueId", "load_library", "open_nccl", "reset"]
