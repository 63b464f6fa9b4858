"""Calling host libm functions under DAZ, as IREE's VMVX workers call them.

IREE runs VMVX kernels with the x86-64 MXCSR bits DAZ and FTZ set. glibc's logf/expf
then see a denormal operand as zero in their float instructions but as its bits in their
integer ones (logf(1e-40) is -103.97 there, not -92.10), so only a call made under DAZ
gives IREE's value. `under_daz(fn)` wraps a ctypes libm function so that the calling
thread's MXCSR has DAZ set for the call (FTZ stays off: ctypes rounds the Python float
argument to float, which must keep a denormal; the caller flushes the result). The
MXCSR is read and written by two 9-byte machine-code functions (stmxcsr/ldmxcsr), on
x86-64 only; elsewhere `under_daz` returns `fn` itself.
"""

from __future__ import annotations

import ctypes
import mmap
import platform

DAZ = 0x0040

_GET = bytes.fromhex("0fae5c24fc" "8b4424fc" "c3")  # stmxcsr [rsp-4]; mov eax, [rsp-4]; ret
_SET = bytes.fromhex("897c24fc" "0fae5424fc" "c3")  # mov [rsp-4], edi; ldmxcsr [rsp-4]; ret
_code = None


def _functions():
    global _code
    if _code is None:
        # Written while writable, then made read+execute: never writable and executable.
        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        page.write(_GET + _SET)
        base = ctypes.addressof(ctypes.c_char.from_buffer(page))
        mprotect = ctypes.CDLL(None, use_errno=True).mprotect
        mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        if mprotect(base, mmap.PAGESIZE, mmap.PROT_READ | mmap.PROT_EXEC) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")
        get = ctypes.CFUNCTYPE(ctypes.c_uint32)(base)
        set_ = ctypes.CFUNCTYPE(None, ctypes.c_uint32)(base + len(_GET))
        _code = (page, get, set_)
    return _code[1], _code[2]


def available() -> bool:
    return platform.machine() in ("x86_64", "AMD64")


def under_daz(fn):
    """`fn` (a ctypes function of floats) called with DAZ set on this thread."""
    if not available():
        return fn
    try:
        get, set_ = _functions()
    except (OSError, ValueError, PermissionError):  # (no executable pages allowed)
        return fn

    def call(*args):
        saved = get()
        set_(saved | DAZ)
        try:
            return fn(*args)
        finally:
            set_(saved)

    call.__name__ = getattr(fn, "__name__", "call")
    return call


__all__ = ["available", "under_daz"]
