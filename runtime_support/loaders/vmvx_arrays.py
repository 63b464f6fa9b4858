"""numpy forms of the VM ops, for VMVX kernels vectorised at translate time
(translator/vmvx_vectorize/ writes the code that calls these).

A vectorised kernel runs a dispatch's whole workgroup grid at once: a value that varies
over the grid or over a parallel loop is an array (int64 for i32/i64, float32 for f32)
with one axis per dimension (z, y, x, then the parallel loops), size 1 where it does not
vary; a value that does not vary stays a Python scalar and goes through the scalar op
(runtime_support/vm/numerics_ftz.py), so uniform code is the scalar translation's.

Numerics are IREE's VMVX ones, element for element: float32 add/sub/mul/div round as C
float ops do; operands are read with denormals as zero (DAZ) and results flushed (FTZ);
fma is not fused (product rounded and flushed first); libm functions are called per
element under DAZ (exact, as IREE's workers call them), on x86-64 by a machine-code loop
over the whole array (vm/mxcsr.py `array_maps`), elsewhere one ctypes call per element.
"""

from __future__ import annotations

import math
import numpy as np

from runtime_support.errors import StatusCode, VMError
from runtime_support.vm import numerics_ftz as S
from runtime_support.vm.mxcsr import array_maps, flushing, under_daz
from runtime_support.vm.numerics import LIBM_F32

_TINY32 = np.float32(2.0**-126)
# A dispatch of at most this many logical iterations (workgroups times the trip counts of
# the kernel's deepest static loop nest) runs the scalar translation: numpy's per-call
# overhead (tens of microseconds a kernel) exceeds what so few scalar iterations cost.
SMALL_WORK = 32
_I64_MIN = -(1 << 63)


_SCALARS = frozenset((int, float))


def _scalar(a, b=0, c=0) -> bool:
    """Whether the (up to three) operands are all Python ints or floats."""
    return type(a) in _SCALARS and type(b) in _SCALARS and type(c) in _SCALARS


_COPY_BELOW = 1 << 14  # (elements: a broadcast copy is cheaper than broadcast_to's view)


def _to(x, shape):
    """x broadcast to `shape`, to index with or read: x itself where it is an array of that
    shape already, a copy where small, else a read-only view."""
    if type(x) is np.ndarray:
        if x.shape == shape:
            return x
        if math.prod(shape) < _COPY_BELOW:
            out = np.empty(shape, x.dtype)
            np.copyto(out, x)
            return out
    return np.broadcast_to(x, shape)


# ---- denormals ---------------------------------------------------------------------------


def daz(a):
    """An f32 operand as a float instruction reads it under DAZ (a copy: memory keeps bits)."""
    if type(a) is float:
        return 0.0 * a if -2.0**-126 < a < 2.0**-126 else a
    small = np.abs(a) < _TINY32
    if not small.any():
        return a
    return np.where(small, np.copysign(np.float32(0), a), a)


def _ftz(r):
    """A fresh float32 result with denormals flushed, in place (sign kept)."""
    if r.ndim == 0:
        r = np.asarray(r)
    np.multiply(r, np.float32(0), out=r, where=np.abs(r) < _TINY32)
    return r


# ---- integers (int64 arrays; i32 values kept sign-wrapped) -------------------------------


def _w32(a):
    return ((a + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def add_i64(a, b):
    return S.add_i64(a, b) if _scalar(a, b) else np.add(a, b, dtype=np.int64)


def sub_i64(a, b):
    return S.sub_i64(a, b) if _scalar(a, b) else np.subtract(a, b, dtype=np.int64)


def mul_i64(a, b):
    return S.mul_i64(a, b) if _scalar(a, b) else np.multiply(a, b, dtype=np.int64)


def fma_i64(a, b, c):
    return S.fma_i64(a, b, c) if _scalar(a, b, c) else np.add(np.multiply(a, b, dtype=np.int64), c)


def add_i32(a, b):
    return S.add_i32(a, b) if _scalar(a, b) else _w32(np.add(a, b, dtype=np.int64))


def sub_i32(a, b):
    return S.sub_i32(a, b) if _scalar(a, b) else _w32(np.subtract(a, b, dtype=np.int64))


def mul_i32(a, b):
    return S.mul_i32(a, b) if _scalar(a, b) else _w32(np.multiply(a, b, dtype=np.int64))


def fma_i32(a, b, c):
    return S.fma_i32(a, b, c) if _scalar(a, b, c) else _w32(np.add(np.multiply(a, b, dtype=np.int64), c))


def _divisor_checked(mnemonic: str, scalar_fn, a, b):
    """The scalar op's fault for a zero divisor or INT_MIN / -1 (same message)."""
    if b == 0:
        scalar_fn(0, 0)
    if b == -1 and np.any(np.asarray(a) == (_I64_MIN if mnemonic.endswith("64") else -(1 << 31))):
        scalar_fn(_I64_MIN if mnemonic.endswith("64") else -(1 << 31), -1)


def _div_s(name, scalar_fn, wrap):
    def op(a, b):
        if _scalar(a, b):
            return scalar_fn(a, b)
        if type(b) is not int:
            raise VMError(StatusCode.INTERNAL, f"vectorised {name}: divisor varies (translator bug)")
        _divisor_checked(name, scalar_fn, a, b)
        q = np.abs(a) // abs(b)
        return wrap(np.where((np.asarray(a) < 0) != (b < 0), -q, q))

    op.__name__ = name.replace(".", "_")
    return op


def _rem_s(name, scalar_fn, wrap):
    def op(a, b):
        if _scalar(a, b):
            return scalar_fn(a, b)
        if type(b) is not int:
            raise VMError(StatusCode.INTERNAL, f"vectorised {name}: divisor varies (translator bug)")
        _divisor_checked(name, scalar_fn, a, b)
        r = np.abs(a) % abs(b)
        return wrap(np.where(np.asarray(a) < 0, -r, r))

    op.__name__ = name.replace(".", "_")
    return op


div_i64_s = _div_s("div.i64.s", S.div_i64_s, lambda x: x)
rem_i64_s = _rem_s("rem.i64.s", S.rem_i64_s, lambda x: x)
div_i32_s = _div_s("div.i32.s", S.div_i32_s, _w32)
rem_i32_s = _rem_s("rem.i32.s", S.rem_i32_s, _w32)


def _binary(scalar_fn, array_fn):
    def op(a, b):
        return scalar_fn(a, b) if _scalar(a, b) else array_fn(a, b)

    op.__name__ = scalar_fn.__name__
    return op


and_i64 = _binary(S.and_i64, np.bitwise_and)
or_i64 = _binary(S.or_i64, np.bitwise_or)
xor_i64 = _binary(S.xor_i64, np.bitwise_xor)
and_i32 = _binary(S.and_i32, np.bitwise_and)
or_i32 = _binary(S.or_i32, np.bitwise_or)
xor_i32 = _binary(S.xor_i32, np.bitwise_xor)
min_i64_s = _binary(S.min_i64_s, np.minimum)
max_i64_s = _binary(S.max_i64_s, np.maximum)
min_i32_s = _binary(S.min_i32_s, np.minimum)
max_i32_s = _binary(S.max_i32_s, np.maximum)


def _cmp(scalar_fn, array_fn):
    def op(a, b):
        return scalar_fn(a, b) if _scalar(a, b) else array_fn(a, b).astype(np.int64)

    op.__name__ = scalar_fn.__name__
    return op


cmp_eq_i64 = _cmp(S.cmp_eq_i64, np.equal)
cmp_ne_i64 = _cmp(S.cmp_ne_i64, np.not_equal)
cmp_lt_i64_s = _cmp(S.cmp_lt_i64_s, np.less)
cmp_eq_i32 = _cmp(S.cmp_eq_i32, np.equal)
cmp_ne_i32 = _cmp(S.cmp_ne_i32, np.not_equal)
cmp_lt_i32_s = _cmp(S.cmp_lt_i32_s, np.less)


def cmp_nz_i64(a):
    return S.cmp_nz_i64(a) if type(a) is int else (np.asarray(a) != 0).astype(np.int64)


cmp_nz_i32 = cmp_nz_i64


def trunc_i64_i32(a):
    return S.trunc_i64_i32(a) if type(a) is int else _w32(a)


def ext_i32_i64_u(a):
    return S.ext_i32_i64_u(a) if type(a) is int else np.bitwise_and(a, 0xFFFFFFFF)


def select(c, a, b):
    """`select.*`: a where c is non-zero (values of one type)."""
    if type(c) is int:
        return a if c else b
    return np.where(c != 0, a, b)


def masked(mask, new, old, kind: str):
    """A scratch buffer's variable after a store in a masked loop: `new` in the active
    lanes of `mask`, `old` in the others (the lanes past their workgroup's bound store
    nothing), as the kind's array (float32 for f32, int64 for i32)."""
    return np.where(mask, new, old).astype(np.float32 if kind == "f32" else np.int64, copy=False)


# ---- float32 -------------------------------------------------------------------------------
# Operands arrive flushed (the generated code applies `daz` to loaded values once);
# results are flushed here.


def _f32_binary(scalar_fn, ufunc):
    def op(a, b):
        if _scalar(a, b):
            return scalar_fn(a, b)
        return _ftz(ufunc(a, b, dtype=np.float32))

    op.__name__ = scalar_fn.__name__
    return op


add_f32 = _f32_binary(S.add_f32, np.add)
sub_f32 = _f32_binary(S.sub_f32, np.subtract)
mul_f32 = _f32_binary(S.mul_f32, np.multiply)
div_f32 = _f32_binary(S.div_f32, np.divide)


def fma_f32(a, b, c):
    """Not fused (IREE 3.13's runtime): the product is rounded and flushed first."""
    if _scalar(a, b, c):
        return S.fma_f32(a, b, c)
    return _ftz(np.add(_ftz(np.multiply(a, b, dtype=np.float32)), c, dtype=np.float32))


def neg_f32(a):
    return S.neg_f32(a) if type(a) is float else np.negative(a)


def abs_f32(a):
    return S.abs_f32(a) if type(a) is float else np.abs(a)


def _libm_f32(name: str):
    """A libm f32 function per element, under DAZ for the whole map, result flushed."""
    scalar = getattr(S, f"{name}_f32")
    fn = LIBM_F32.get(f"{name}f")

    def op(a):
        if type(a) is float:
            return scalar(a)
        arr = np.asarray(a, dtype=np.float32)
        if fn is not None and _MAPS is not None:  # (one foreign call for the whole array)
            return _ftz(_MAPS[0](fn, arr))
        if fn is None:  # (no C libm: the scalar op's own form, per element)
            values = list(map(scalar, arr.ravel().tolist()))
        else:
            values = _mapped(fn, arr.ravel().tolist())
        return _ftz(np.array(values, dtype=np.float32).reshape(arr.shape))

    op.__name__ = f"{name}_f32"
    return op


_mapped = under_daz(lambda fn, xs: list(map(fn, xs)))
_MAPS = array_maps()  # (x86-64: libm over a whole array in machine code, under DAZ)

exp_f32 = _libm_f32("exp")
log_f32 = _libm_f32("log")
tanh_f32 = _libm_f32("tanh")
atan_f32 = _libm_f32("atan")
cos_f32 = _libm_f32("cos")
sin_f32 = _libm_f32("sin")
exp2_f32 = _libm_f32("exp2")
expm1_f32 = _libm_f32("expm1")
log10_f32 = _libm_f32("log10")
log1p_f32 = _libm_f32("log1p")
log2_f32 = _libm_f32("log2")
erf_f32 = _libm_f32("erf")


def _accumulate(seq, axis):
    with np.errstate(all="ignore"):  # (an overflow to inf is IREE's result too)
        return np.add.accumulate(seq, axis=axis, dtype=np.float32)


_FLUSHING_ACCUMULATE = flushing(_accumulate)


_CHUNK = 1 << 22  # (elements of a fold's terms made at once: a matmul's products are big)
# Lanes from which a fold goes step by step, each numpy call over all the lanes (a
# matmul's tiles); fewer lanes fold with add.accumulate along the axis.
_WIDE = 4096


def _step_loop(acc, a, b, axis, n, acc_first, index, flush):
    for k in range(n):
        t = _along(a, axis, k, k + 1, index)
        if b is not None:
            t = flush(np.multiply(t, _along(b, axis, k, k + 1, index), dtype=np.float32))
        acc = flush(np.add(acc, t, dtype=np.float32) if acc_first else np.add(t, acc, dtype=np.float32))
    return acc


def _no_flush(x):
    return x


_FLUSHING_STEPS = flushing(lambda *args: _step_loop(*args, _no_flush))


def _steps(acc, a, b, axis, n, acc_first, index):
    """The fold one step at a time, in the kernel's operand order: under the MXCSR's DAZ
    and FTZ (every product and sum flushed by the hardware, as IREE's), else with the
    operands and results flushed by hand."""
    if _FLUSHING_STEPS is not None:
        with np.errstate(all="ignore"):
            return _FLUSHING_STEPS(acc, a, b, axis, n, acc_first, index)
    return _step_loop(daz(acc), a, b, axis, n, acc_first, index, _ftz)


def sum_f32(acc, a, b, axis: int, n: int, acc_first: bool, ndim: int):
    """A reduction loop's float sum, in its order: acc = acc + t[k] (or t[k] + acc) for
    k < n along `axis`, t = a, or a * b rounded and flushed (a non-fused fma), each add
    IREE's (operands DAZ, result flushed); acc keeps a unit `axis`. Without NaNs the
    operand order cannot show, and numpy's sequential `add.accumulate` under the MXCSR's
    DAZ and FTZ does a chunk of adds in one call; otherwise one add a step, in the
    kernel's operand order (x86 keeps the first operand's NaN)."""
    if n == 0:
        return acc
    a = _lift(a, ndim)
    b = None if b is None else _lift(b, ndim)
    acc = _lift(acc, ndim)
    unit = np.broadcast_shapes(*(x.shape[:axis] + (1,) + x.shape[axis + 1:] for x in (a, b) if x is not None))
    shape = np.broadcast_shapes(acc.shape, unit)
    acc = np.broadcast_to(acc, shape)
    per_step = max(1, int(np.prod(shape)))
    if per_step >= _WIDE:
        return _steps(np.array(acc), a, b, axis, n, acc_first, index=[slice(None)] * ndim)
    chunk = max(1, min(n, _CHUNK // per_step))
    index = [slice(None)] * ndim
    for k0 in range(0, n, chunk):
        k1 = min(n, k0 + chunk)
        terms = _along(a, axis, k0, k1, index)
        if b is not None:
            terms = _ftz(np.multiply(terms, _along(b, axis, k0, k1, index), dtype=np.float32))
        terms = np.broadcast_to(terms, shape[:axis] + (k1 - k0,) + shape[axis + 1:])
        acc = _fold(acc, terms, axis, acc_first, index)
    return acc


def max_f32(acc, x, axis: int, n: int, ndim: int):
    """A reduction loop's arith.maximumf, folded: acc = isnan(acc) ? acc : (daz(acc) <
    daz(x) or unordered ? x : acc) for the n steps of x along `axis`. That keeps the first
    value of the greatest key (its daz) and the first NaN of the sequence: numpy's argmax,
    which returns the first of equal maxima (-0 and +0, denormals as zeros) and the first
    NaN."""
    if n == 0:
        return acc
    x, acc = _lift(x, ndim), _lift(acc, ndim)
    shape = np.broadcast_shapes(acc.shape, x.shape[:axis] + (1,) + x.shape[axis + 1:])
    acc = np.broadcast_to(acc, shape)
    x = np.broadcast_to(x, shape[:axis] + (n,) + shape[axis + 1:])
    keys = np.concatenate((daz(acc), daz(x)), axis=axis)
    first = np.argmax(keys, axis=axis, keepdims=True)
    return np.take_along_axis(np.concatenate((acc, x), axis=axis), first, axis=axis)


def _lift(x, ndim):
    x = np.asarray(x, dtype=np.float32)
    return x.reshape((1,) * (ndim - x.ndim) + x.shape)


def _along(x, axis, k0, k1, index):
    """x's steps k0..k1 along `axis` (all of them where x does not vary along it)."""
    if x.shape[axis] == 1:
        return x
    index[axis] = slice(k0, k1)
    view = x[tuple(index)]
    index[axis] = slice(None)
    return view


def _fold(acc, terms, axis, acc_first, index):
    n = terms.shape[axis]
    if _FLUSHING_ACCUMULATE is not None and not (np.isnan(terms).any() or np.isnan(acc).any()):
        total = _FLUSHING_ACCUMULATE(np.concatenate((acc, terms), axis=axis), axis)
        index[axis] = slice(n, n + 1)
        out = total[tuple(index)]
        index[axis] = slice(None)
        return out
    acc = daz(acc)
    for k in range(n):
        index[axis] = slice(k, k + 1)
        step = terms[tuple(index)]
        acc = _ftz(np.add(acc, step, dtype=np.float32) if acc_first else np.add(step, acc, dtype=np.float32))
    index[axis] = slice(None)
    return acc


def cmp_nan_f32(a):
    return S.cmp_nan_f32(a) if type(a) is float else np.isnan(a).astype(np.int64)


def cast_si32_f32(a):
    """i32 (sign-wrapped int64 array) to f32, rounded to nearest even (never denormal)."""
    return S.cast_si32_f32(a) if type(a) is int else np.asarray(a, np.int64).astype(np.float32)


def _cmp_f32(scalar_fn, array_fn):
    def op(a, b):
        return scalar_fn(a, b) if _scalar(a, b) else array_fn(a, b).astype(np.int64)

    op.__name__ = scalar_fn.__name__
    return op


cmp_eq_f32_o = _cmp_f32(S.cmp_eq_f32_o, np.equal)
cmp_lt_f32_o = _cmp_f32(S.cmp_lt_f32_o, np.less)
cmp_lte_f32_o = _cmp_f32(S.cmp_lte_f32_o, np.less_equal)
cmp_ne_f32_u = _cmp_f32(S.cmp_ne_f32_u, np.not_equal)
# Unordered forms: true where either operand is NaN (the negation of the ordered converse).
cmp_lt_f32_u = _cmp_f32(S.cmp_lt_f32_u, lambda a, b: ~np.greater_equal(a, b))
cmp_lte_f32_u = _cmp_f32(S.cmp_lte_f32_u, lambda a, b: ~np.greater(a, b))
cmp_eq_f32_u = _cmp_f32(S.cmp_eq_f32_u, lambda a, b: ~(np.less(a, b) | np.greater(a, b)))
cmp_ne_f32_o = _cmp_f32(S.cmp_ne_f32_o, np.not_equal)  # (C `!=`, as the scalar op: true for NaN)


# ---- memory --------------------------------------------------------------------------------

_DTYPES = {"f32": np.float32, "i32": np.int32, "i64": np.int64, "f64": np.float64}


class Binding:
    """One binding's memory as typed numpy views (made on first use)."""

    __slots__ = ("data", "_views")

    def __init__(self, data: memoryview) -> None:
        self.data = data
        self._views = {}

    def view(self, kind: str) -> np.ndarray:
        v = self._views.get(kind)
        if v is None:
            dt = np.dtype(_DTYPES[kind])
            v = np.frombuffer(self.data, dtype=dt, count=len(self.data) // dt.itemsize)
            self._views[kind] = v
        return v


def _check(view: np.ndarray, idx, what: str) -> None:
    if type(idx) is int:
        ok = 0 <= idx < view.shape[0]
    else:
        ok = idx.size == 0 or (int(idx.min()) >= 0 and int(idx.max()) < view.shape[0])
    if not ok:
        raise VMError(
            StatusCode.OUT_OF_RANGE,
            f"vm.buffer.{what}: element offset out of range of a {view.shape[0]}-element binding "
            f"(vectorised VMVX kernel)",
        )


def load(binding: Binding, kind: str, idx):
    view = binding.view(kind)
    _check(view, idx, f"load.{kind}")
    v = view[idx]
    if type(idx) is int:
        return float(v) if kind[0] == "f" else int(v)
    return v.astype(np.int64) if kind[0] == "i" else v


def store(binding: Binding, kind: str, idx, value) -> None:
    view = binding.view(kind)
    if view.flags.writeable is False:
        raise VMError(StatusCode.PERMISSION_DENIED, "vm.buffer.store: binding is read-only")
    _check(view, idx, f"store.{kind}")
    if type(idx) is int:
        if type(value) is np.ndarray:  # (a fold's result: one element, unit axes)
            if value.size != 1:
                raise VMError(StatusCode.INTERNAL, "vectorised store: many values at one address (translator bug)")
            value = value.reshape(())
        view[idx] = value
        return
    if kind == "i32":
        value = _w32(np.asarray(value))
    shape = np.broadcast(idx, value).shape
    view[_to(idx, shape)] = _to(np.asarray(value, dtype=view.dtype), shape)


# Masked loads and stores whose mask is all true go as plain ones (no boolean indexing).
_FULL_TILES = True


def load_m(binding: Binding, kind: str, idx, mask):
    """`load` in the active lanes of `mask` (the others read nothing and hold 0)."""
    if _FULL_TILES and type(idx) is np.ndarray and mask.all():  # (every lane active: all but a last tile)
        return _to(load(binding, kind, idx), np.broadcast_shapes(idx.shape, mask.shape))
    view = binding.view(kind)
    shape = np.broadcast(idx, mask).shape
    idx, mask = _to(idx, shape), _to(mask, shape)
    active = idx[mask]
    _check(view, active, f"load.{kind}")
    out = np.zeros(shape, dtype=np.int64 if kind[0] == "i" else view.dtype)
    out[mask] = view[active]
    return out


def store_m(binding: Binding, kind: str, idx, value, mask) -> None:
    """`store` in the active lanes of `mask` only."""
    if _FULL_TILES and type(idx) is np.ndarray and mask.all():
        store(binding, kind, idx, value)  # (lanes the mask adds write the same element again)
        return
    view = binding.view(kind)
    if view.flags.writeable is False:
        raise VMError(StatusCode.PERMISSION_DENIED, "vm.buffer.store: binding is read-only")
    shape = np.broadcast(idx, value, mask).shape
    mask = _to(mask, shape)
    active = _to(idx, shape)[mask]
    _check(view, active, f"store.{kind}")
    value = _to(np.asarray(value), shape)[mask]
    if kind == "i32":
        value = _w32(value)
    view[active] = value.astype(view.dtype, copy=False)


# ---- index spaces ---------------------------------------------------------------------------


def trip_count(lb: int, ub, step: int) -> int:
    """How many times `for i in range(lb, ub, step)` runs, the most over the lanes where
    the bound `ub` is an array."""
    hi = ub if type(ub) is int else (int(np.max(ub)) if np.size(ub) else lb)
    return max(0, -(-(hi - lb) // step))



_RANGES: dict = {}  # (start, step, count, axis, ndim) -> read-only axis_range array
_RANGES_MAX = 512


def axis_range(start: int, step: int, count: int, axis: int, ndim: int) -> np.ndarray:
    """start + step * k for k < count, along `axis` of an ndim-array (read-only: the same
    array for the same arguments, dispatch after dispatch)."""
    key = (start, step, count, axis, ndim)
    out = _RANGES.get(key)
    if out is None:
        shape = [1] * ndim
        shape[axis] = count
        out = (start + step * np.arange(count, dtype=np.int64)).reshape(shape)
        out.flags.writeable = False
        if len(_RANGES) >= _RANGES_MAX:
            _RANGES.clear()
        _RANGES[key] = out
    return out


def injective(terms) -> bool:
    """Whether base + sum(coef * i) over 0 <= i < extent takes each value once: sorted by
    |coef|, each coefficient exceeds the span of the smaller ones (mixed radix)."""
    span = 0
    for coef, extent in sorted((abs(c), n) for c, n in terms if n > 1):
        if coef <= span:
            return False
        span += coef * (extent - 1)
    return True


def disjoint(ranges, written) -> bool:
    """Whether each written binding's bytes overlap no other binding's."""
    for k in written:
        a0, n0 = ranges[k]
        for j, (a1, n1) in enumerate(ranges):
            if j != k and n0 and n1 and a0 < a1 + n1 and a1 < a0 + n0:
                return False
    return True


def disjoint_parts(ranges, parts, written) -> bool:
    """Whether the bytes each written binding's accesses reach overlap no bytes another
    binding's accesses reach. `parts`: binding -> [(lo, hi, element bytes)] element
    intervals of its accesses, or None for the whole binding."""

    def spans(k):
        a, n = ranges[k]
        if parts[k] is None:
            return [(a, a + n)] if n else []
        return [(a + lo * size, a + (hi + 1) * size) for lo, hi, size in parts[k] if hi >= lo]

    for k in written:
        mine = spans(k)
        for j in parts:
            if j == k:
                continue
            for a0, a1 in mine:
                for b0, b1 in spans(j):
                    if a0 < b1 and b0 < a1:
                        return False
    return True


def select_f32(c, a, b):
    if type(c) is int:
        return a if c else b
    return np.where(c != 0, np.float32(a) if type(a) is float else a, np.float32(b) if type(b) is float else b)
