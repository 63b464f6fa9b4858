"""Stream-ordered allocation (cuMemAllocAsync / cuMemFreeAsync) for queue.alloca/dealloca.

pycuda has no binding for the memory-pool API, so these two calls go to libcuda through
ctypes, in the context pycuda made current (both talk to the same driver). Used only when
the device reports CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED and libcuda exports the
calls; otherwise queue.alloca allocates synchronously (cuMemAlloc), as IREE's CUDA HAL
does without pools.
"""

from __future__ import annotations

import ctypes


class StreamOrderedError(Exception):
    """A failed pool call, with the driver's CUresult name and string."""


class StreamOrderedMemory:
    def __init__(self, lib) -> None:
        self._alloc = lib.cuMemAllocAsync
        self._alloc.argtypes = (ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t, ctypes.c_void_p)
        self._free = lib.cuMemFreeAsync
        self._free.argtypes = (ctypes.c_uint64, ctypes.c_void_p)
        self._lib = lib

    def _check(self, routine: str, rc: int) -> None:
        if rc:
            name, text = ctypes.c_char_p(), ctypes.c_char_p()
            self._lib.cuGetErrorName(rc, ctypes.byref(name))
            self._lib.cuGetErrorString(rc, ctypes.byref(text))
            decode = lambda v: (v.value or b"?").decode("ascii", "replace")  # noqa: E731
            raise StreamOrderedError(f"{routine} failed: {decode(name)}: {decode(text)}")

    def alloc(self, size: int, stream) -> int:
        ptr = ctypes.c_uint64()
        self._check("cuMemAllocAsync", self._alloc(ctypes.byref(ptr), size, stream.handle))
        return ptr.value

    def free(self, ptr: int, stream) -> None:
        self._check("cuMemFreeAsync", self._free(ptr, stream.handle))


def open_stream_ordered(driver, device) -> StreamOrderedMemory | None:
    """The pool calls when this device and driver have them, else None."""
    try:
        if not device.get_attribute(driver.device_attribute.MEMORY_POOLS_SUPPORTED):
            return None
        lib = ctypes.CDLL("libcuda.so.1")
        return StreamOrderedMemory(lib)
    except (AttributeError, OSError):  # an older pycuda, driver or a libcuda without pools
        return None
    except Exception:  # the driver's own error for the attribute query: no pools
        return None


__all__ = ["StreamOrderedError", "StreamOrderedMemory", "open_stream_ordered"]
