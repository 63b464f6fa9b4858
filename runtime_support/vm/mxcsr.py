"""Calling host libm functions under DAZ, as IREE's VMVX workers call them.

IREE runs VMVX kernels with the x86-64 MXCSR bits DAZ and FTZ set. glibc's logf/expf
then see a denormal operand as zero in their float instructions but as its bits in their
integer ones (logf(1e-40) is -103.97 there, not -92.10), so only a call made under DAZ
gives IREE's value. `under_daz(fn)` wraps a ctypes libm function so that the calling
thread's MXCSR has DAZ set for the call (FTZ stays off: ctypes rounds the Python float
argument to float, which must keep a denormal; the caller flushes the result). The
MXCSR is read and written by two 9-byte machine-code functions (stmxcsr/ldmxcsr), on
x86-64 only; elsewhere `under_daz` returns `fn` itself.

`map_f32(fn, x)` / `map2_f32(fn, x, y)` call a libm float function once per element of
float32 arrays in one foreign call (two small machine-code loops in the same page: DAZ
set, `fn` called per element with the element's bits as they are, MXCSR restored): the
same function IREE calls, on the same operands, without a Python round trip per element.
Their bytes are the assembly in the comments below (GNU as, Intel syntax); None off
x86-64 or where no executable page can be made.
"""

from __future__ import annotations

import ctypes
import mmap
import platform

DAZ = 0x0040

_GET = bytes.fromhex("0fae5c24fc" "8b4424fc" "c3")  # stmxcsr [rsp-4]; mov eax, [rsp-4]; ret
_SET = bytes.fromhex("897c24fc" "0fae5424fc" "c3")  # mov [rsp-4], edi; ldmxcsr [rsp-4]; ret
# void map_f32(float (*f)(float), const float *in, float *out, size_t n):
#   push rbx; push r12..r15; sub rsp,16; stmxcsr [rsp]; mov eax,[rsp]; or eax,0x40;
#   mov [rsp+4],eax; ldmxcsr [rsp+4]; rbx,r12,r13,r14 <- rdi,rsi,rdx,rcx; xor r15d,r15d;
#   test r14,r14; je 2f; 1: movss xmm0,[r12+r15*4]; call rbx; movss [r13+r15*4],xmm0;
#   inc r15; cmp r15,r14; jb 1b; 2: ldmxcsr [rsp]; add rsp,16; pop r15..r12, rbx; ret
_MAP = bytes.fromhex(
    "5341544155415641574883ec100fae1c248b042483c840894424040fae5424044889fb4989f44989d5"
    "4989ce4531ff4d85f67417f3430f1004bcffd3f3430f1144bd0049ffc74d39f772e90fae14244883c4"
    "10415f415e415d415c5bc3"
)
# void map2_f32(float (*f)(float, float), const float *a, const float *b, float *out,
#               size_t n): the same with rbp <- b, xmm1 = [rbp+r15*4] (sub rsp,8 after
#   six pushes keeps the calls 16-byte aligned)
_MAP2 = bytes.fromhex(
    "534154415541564157554883ec080fae1c248b042483c840894424040fae5424044889fb4989f44889"
    "d54989cd4d89c64531ff4d85f6741ef3430f1004bcf3420f104cbd00ffd3f3430f1144bd0049ffc74d"
    "39f772e20fae14244883c4085d415f415e415d415c5bc3"
)
_code = None


def _functions():
    global _code
    if _code is None:
        # Written while writable, then made read+execute: never writable and executable.
        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        page.write(_GET + _SET + _MAP + _MAP2)
        base = ctypes.addressof(ctypes.c_char.from_buffer(page))
        mprotect = ctypes.CDLL(None, use_errno=True).mprotect
        mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        if mprotect(base, mmap.PAGESIZE, mmap.PROT_READ | mmap.PROT_EXEC) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")
        get = ctypes.CFUNCTYPE(ctypes.c_uint32)(base)
        set_ = ctypes.CFUNCTYPE(None, ctypes.c_uint32)(base + len(_GET))
        ptr, size = ctypes.c_void_p, ctypes.c_size_t
        at = base + len(_GET) + len(_SET)
        map1 = ctypes.CFUNCTYPE(None, ptr, ptr, ptr, size)(at)
        map2 = ctypes.CFUNCTYPE(None, ptr, ptr, ptr, ptr, size)(at + len(_MAP))
        _code = (page, get, set_, map1, map2)
    return _code[1], _code[2]


def _maps():
    if not available():
        return None
    try:
        _functions()
    except (OSError, ValueError, PermissionError):
        return None
    return _code[3], _code[4]


def _address(fn) -> int:
    return ctypes.cast(fn, ctypes.c_void_p).value


def array_maps():
    """(map_f32, map2_f32), or None where they cannot run (see the module's docstring)."""
    import numpy as np

    maps = _maps()
    if maps is None:
        return None
    map1, map2 = maps

    def map_f32(fn, x):
        """fn (a ctypes float(float) function) of each element of float32 array `x` (a new
        C-contiguous float32 array of x's shape)."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = np.empty_like(x)
        map1(_address(fn), x.ctypes.data, out.ctypes.data, x.size)
        return out

    def map2_f32(fn, x, y):
        x, y = np.broadcast_arrays(np.asarray(x, np.float32), np.asarray(y, np.float32))
        x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
        out = np.empty_like(x)
        map2(_address(fn), x.ctypes.data, y.ctypes.data, out.ctypes.data, x.size)
        return out

    return map_f32, map2_f32


def available() -> bool:
    return platform.machine() in ("x86_64", "AMD64")


FTZ = 0x8000


def flushing(fn):
    """`fn` (any Python callable: numpy's float32 loops) run with DAZ and FTZ set on this
    thread, as IREE's workers run kernels: every float instruction reads denormals as zero
    and flushes denormal results. None off x86-64 or where the MXCSR cannot be reached."""
    if not available():
        return None
    try:
        get, set_ = _functions()
    except (OSError, ValueError, PermissionError):
        return None

    def call(*args):
        saved = get()
        set_(saved | DAZ | FTZ)
        try:
            return fn(*args)
        finally:
            set_(saved)

    return call


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


__all__ = ["array_maps", "available", "flushing", "under_daz"]
