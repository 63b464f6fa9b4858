"""Deterministic numpy inputs for an exported function, derived from its signature.

Three signature spellings are accepted (all describe one function):

* the `iree.abi.declaration` reflection string that IREE attaches to exports of full programs:
  ``sync func @f(%input0: tensor<4xf32>, %input1: i32) -> (%output0: tensor<4xf32>)``
* the line ``iree-dump-module --output=metadata`` prints under "Exported Functions":
  ``f(i32, i64, f32, f64) -> (i32)`` (VM-level modules have no declaration)
* a VM calling convention string: ``0iIfF_i`` (i = i32, I = i64, f = f32, F = f64, r = ref, v = void)

Value rules (stable across numpy versions: no numpy RNG is used, values come from a
splitmix64 stream keyed by (seed, argument index)):

* integers: i1 -> {False, True}; i8/i16/i32/i64 tensors -> [-10, 10];
  signed scalars: for about half of the (seed, argument) pairs a small value in [-2, 8], else
  i8 -> [-100, 100], i16/i32 -> [-1000, 1000], i64 -> [-10**6, 10**6];
  unsigned element types (ui8...) -> [0, 20]; ``index`` scalars -> [0, 16].
* floats (f16, bf16, f32, f64): multiples of 1/8, tensors in [-4, 4], scalars in [-8, 8], so every
  value is exact in every float type.
* every dynamic dimension (``?``) of every argument in one call gets the same size,
  ``3 + seed % 3`` (3..5), so shape constraints between arguments (matmul K, elementwise
  operands) hold.

Results are numpy arrays for tensors (C-contiguous) and typed numpy scalars for scalars
(``np.int32``, ``np.int64``, ``np.float32``, ``np.float64``, ``np.bool_``, ...); ``index`` is ``np.int64``.
bf16 tensors use ``ml_dtypes.bfloat16`` when ml_dtypes is installed, else raw ``np.uint16`` bits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

try:  # ml_dtypes ships with iree-base-runtime's dependencies in our environment.
    import ml_dtypes

    BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    ml_dtypes = None
    BFLOAT16 = None

SMALL_INT_RANGE = (-2, 8)
MIN_DYNAMIC_DIM = 3
MAX_DYNAMIC_DIM = 5

_INT_BITS = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64}

_NUMPY_DTYPES = {
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "si8": np.dtype(np.int8),
    "si16": np.dtype(np.int16),
    "si32": np.dtype(np.int32),
    "si64": np.dtype(np.int64),
    "ui8": np.dtype(np.uint8),
    "ui16": np.dtype(np.uint16),
    "ui32": np.dtype(np.uint32),
    "ui64": np.dtype(np.uint64),
    "index": np.dtype(np.int64),
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}

_CCONV_TYPES = {"i": "i32", "I": "i64", "f": "f32", "F": "f64", "r": "!vm.ref<?>"}


class UnsupportedSignature(ValueError):
    """The signature has a type we cannot generate a value for (refs other than tensors, lists...)."""


@dataclass(frozen=True)
class TypeSpec:
    """One argument or result type.

    kind: "tensor", "scalar" or "opaque" (anything else: !hal.buffer_view, !util.list<?>, !vm.ref<?>).
    element: the MLIR element type for tensors and scalars ("f32", "i1", "index", "bf16", ...).
    shape: tensor dims, None for a dynamic dim; () for scalars and 0-d tensors.
    text: the type as written.
    """

    kind: str
    element: str
    shape: tuple
    text: str

    @property
    def is_dynamic(self) -> bool:
        return any(d is None for d in self.shape)


@dataclass(frozen=True)
class Signature:
    name: str
    args: tuple
    results: tuple


def numpy_dtype(element: str) -> np.dtype:
    """numpy dtype used for an MLIR element type (bf16 -> ml_dtypes.bfloat16 or uint16 bits)."""
    if element == "bf16":
        return BFLOAT16 if BFLOAT16 is not None else np.dtype(np.uint16)
    try:
        return _NUMPY_DTYPES[element]
    except KeyError:
        raise UnsupportedSignature(f"no numpy dtype for element type {element!r}") from None


def _split_top_level(text: str) -> list:
    """Split on commas that are not nested inside <>, (), [] or {}."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail:
        parts.append(tail)
    return parts


def parse_type(text: str) -> TypeSpec:
    """Parse one MLIR/VM type spelling into a TypeSpec."""
    t = text.strip()
    m = re.fullmatch(r"tensor<(.*)>", t)
    if m:
        body = m.group(1)
        pieces = body.split("x")
        # Element types never contain 'x' except via complex<...>; keep it simple and strict.
        element = pieces[-1]
        dims = []
        for d in pieces[:-1]:
            if d == "?":
                dims.append(None)
            elif d.isdigit():
                dims.append(int(d))
            else:
                raise UnsupportedSignature(f"cannot parse tensor type {t!r}")
        return TypeSpec("tensor", element, tuple(dims), t)
    if re.fullmatch(r"(i|si|ui)(1|8|16|32|64)|index|f16|bf16|f32|f64", t):
        return TypeSpec("scalar", t, (), t)
    return TypeSpec("opaque", t, (), t)


def _parse_decl_list(text: str) -> tuple:
    out = []
    for part in _split_top_level(text):
        # "%input0: tensor<4xf32>" or plain "tensor<4xf32>"; attributes ({...}) are dropped.
        part = re.sub(r"\s*\{.*\}\s*$", "", part)
        m = re.fullmatch(r"%[\w.$-]+\s*:\s*(.+)", part)
        out.append(parse_type(m.group(1) if m else part))
    return tuple(out)


def _match_parens(text: str, start: int) -> int:
    """Index of the ')' matching the '(' at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "(<[{":
            depth += 1
        elif text[i] in ")>]}":
            depth -= 1
            if depth == 0:
                return i
    raise UnsupportedSignature(f"unbalanced parentheses in {text!r}")


def parse_signature(text: str) -> Signature:
    """Parse a declaration, a dump-style export line, or a cconv string into a Signature."""
    s = text.strip()
    if re.fullmatch(r"0[iIfFrv]*_[iIfFrv]*", s):
        args_s, results_s = s[1:].split("_", 1)
        conv = lambda part: tuple(parse_type(_CCONV_TYPES[c]) for c in part if c != "v")
        return Signature("", conv(args_s), conv(results_s))
    m = re.search(r"@?([\w.$-]+)\s*\(", s)
    if not m:
        raise UnsupportedSignature(f"cannot parse signature {text!r}")
    name = m.group(1)
    open_i = m.end() - 1
    close_i = _match_parens(s, open_i)
    args = _parse_decl_list(s[open_i + 1 : close_i])
    rest = s[close_i + 1 :].strip()
    results = ()
    if rest.startswith("->"):
        rest = rest[2:].strip()
        if rest.startswith("("):
            results = _parse_decl_list(rest[1 : _match_parens(rest, 0)])
        elif rest:
            results = _parse_decl_list(rest)
    return Signature(name, args, results)


# --- deterministic value stream -------------------------------------------------------------

_MASK64 = (1 << 64) - 1


def _splitmix64(seed: int, count: int) -> np.ndarray:
    """`count` uint64 values of the splitmix64 sequence started at `seed` (vectorised)."""
    with np.errstate(over="ignore"):
        idx = np.arange(1, count + 1, dtype=np.uint64)
        z = np.uint64(seed & _MASK64) + idx * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return z


def _ints(seed: int, arg_index: int, count: int, lo: int, hi: int) -> np.ndarray:
    """`count` int64 values uniformly-ish in [lo, hi], keyed by (seed, arg_index)."""
    key = (seed * 1_000_003 + arg_index * 7919 + 0x5EED) & _MASK64
    raw = _splitmix64(key, count)
    span = np.uint64(hi - lo + 1)
    return (raw % span).astype(np.int64) + lo


def dynamic_dim_size(seed: int) -> int:
    """The one size used for every dynamic dimension in a call with this seed (3..5)."""
    return MIN_DYNAMIC_DIM + seed % (MAX_DYNAMIC_DIM - MIN_DYNAMIC_DIM + 1)


def concrete_shape(spec: TypeSpec, seed: int) -> tuple:
    dyn = dynamic_dim_size(seed)
    return tuple(dyn if d is None else d for d in spec.shape)


def _int_range(element: str, is_tensor: bool) -> tuple:
    if element == "i1":
        return 0, 1
    if element == "index":
        return 0, 16
    if element.startswith("ui"):
        return 0, 20
    if is_tensor:
        return -10, 10
    bits = _INT_BITS.get(element.lstrip("s"), 32)
    if bits == 8:
        return -100, 100
    if bits == 64:
        return -(10**6), 10**6
    return -1000, 1000


def value_for(spec: TypeSpec, seed: int, arg_index: int):
    """One deterministic input value for `spec`."""
    if spec.kind == "opaque":
        raise UnsupportedSignature(f"cannot generate an input for type {spec.text!r}")
    element = spec.element
    dtype = numpy_dtype(element)
    shape = concrete_shape(spec, seed) if spec.kind == "tensor" else ()
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    is_tensor = spec.kind == "tensor"
    if element in ("f16", "bf16", "f32", "f64"):
        limit = 32 if is_tensor else 64  # in eighths: [-4, 4] / [-8, 8]
        vals = _ints(seed, arg_index, count, -limit, limit).astype(np.float64) / 8.0
        if element == "bf16" and BFLOAT16 is None:
            arr = (vals.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        else:
            arr = vals.astype(dtype)
    else:
        lo, hi = _int_range(element, is_tensor)
        arr = _ints(seed, arg_index, count, lo, hi)
        if not is_tensor and lo < 0 and hi > SMALL_INT_RANGE[1]:
            # Half of the signed scalars are small, so switch/select indices and loop bounds
            # land on interesting values (in-range cases, 0, negatives) across seeds.
            if _ints(seed, arg_index + 1000, 1, 0, 1)[0] == 0:
                arr = _ints(seed, arg_index + 2000, count, *SMALL_INT_RANGE)
        arr = arr.astype(dtype)
    if is_tensor:
        return arr.reshape(shape).copy(order="C")
    return arr.reshape(())[()]  # numpy scalar of the right type


def inputs_for_signature(decl_or_cconv: str, seed: int = 0) -> list:
    """Deterministic inputs for every argument of the signature (see module docstring)."""
    sig = decl_or_cconv if isinstance(decl_or_cconv, Signature) else parse_signature(decl_or_cconv)
    return [value_for(spec, seed, i) for i, spec in enumerate(sig.args)]
