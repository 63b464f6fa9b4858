"""A `check` module for `iree.runtime`, written in Python (test-only oracle).

IREE's Python bindings (3.13) can define a native VM module in Python:
`iree.runtime.PyModuleInterface(name, ctor)`, then `iface.export(name, cconv, fn)` for each
function and `iface.create()` for the `VmModule`. `ctor(iface)` makes the instance each
exported `fn` receives as its first argument; ref arguments arrive as `VmRef`
(`ref.deref(iree.runtime.HalBufferView)`), i32 as int, f32 as float.

`IreeCheckOracle` follows IREE's `modules/check/module.cc` (hal-abi.md §F), and is written
independently of `runtime_support.modules.check` (plain per-element Python, `ml_dtypes` for
the small float types) so the two can be checked against each other. Like IREE, a failed
check is recorded and the program continues; a bad argument raises (the invocation fails).

    oracle = IreeCheckOracle()
    result = run_function(vmfb_path, "test_fn", oracle)   # -> OracleRun
"""

from __future__ import annotations

import atexit
import gc
import math
import re
import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import iree.runtime as rt

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - ml_dtypes comes with the IREE/JAX ecosystem
    ml_dtypes = None

CHECK_EXPORTS = {
    "expect_true": "0i_v",
    "expect_false": "0i_v",
    "expect_all_true": "0rr_v",
    "expect_eq": "0rrr_v",
    "expect_almost_eq": "0rrrff_v",
}

# Element type codes (hal-abi.md §B.1), spelled out here rather than imported.
_F16, _F32, _F64, _BF16 = 0x21000010, 0x21000020, 0x21000040, 0x22000010
_F8 = {
    0x24000008: "float8_e5m2",
    0x25000008: "float8_e4m3fn",
    0x26000008: "float8_e5m2fnuz",
    0x27000008: "float8_e4m3fnuz",
    0x28000008: "float8_e8m0fnu",
}


class OracleError(Exception):
    """A check called with arguments IREE rejects (the invocation fails)."""


@dataclass
class _View:
    element_type: int
    shape: list[int]
    data: bytes


def _read_view(ref) -> _View:
    if ref is None:
        raise OracleError("null buffer view")
    if isinstance(ref, _View):  # contents read back from iree-run-module (lifted builds)
        return ref
    bv = ref.deref(rt.HalBufferView)
    n = bv.byte_length
    data = bytes(bv.map().asarray([n], np.dtype(np.uint8))) if n else b""
    return _View(int(bv.element_type), [int(d) for d in bv.shape], data)


def _key(view: _View) -> tuple:
    return (view.element_type, tuple(view.shape), view.data)


def _floats(view: _View) -> list[float]:
    et = view.element_type
    if et in (_F16, _F32, _F64):
        code = {_F16: "e", _F32: "f", _F64: "d"}[et]
        size = struct.calcsize(code)
        return [
            struct.unpack_from("<" + code, view.data, i)[0]
            for i in range(0, len(view.data), size)
        ]
    if et == _BF16:
        return [
            struct.unpack("<f", b"\0\0" + view.data[i : i + 2])[0]
            for i in range(0, len(view.data), 2)
        ]
    if et in _F8 and ml_dtypes is not None:
        dtype = np.dtype(getattr(ml_dtypes, _F8[et]))
        return [float(v) for v in np.frombuffer(view.data, dtype)]
    raise OracleError(f"unsupported element type 0x{et:08X}")


def _ints(view: _View) -> list[int]:
    bits = view.element_type & 0xFF
    kind = view.element_type >> 24
    if kind not in (0x10, 0x11, 0x12, 0x13) or bits not in (8, 16, 32, 64):
        raise OracleError(f"unsupported element type 0x{view.element_type:08X}")
    code = {8: "b", 16: "h", 32: "i", 64: "q"}[bits]
    if kind == 0x12:
        code = code.upper()
    return [v for (v,) in struct.iter_unpack("<" + code, view.data)]


def _describe(view: _View) -> str:
    shape = "x".join(str(d) for d in view.shape)
    try:
        values = " ".join("%G" % v for v in _floats(view))
    except OracleError:
        try:
            values = " ".join(str(v) for v in _ints(view))
        except OracleError:
            values = view.data.hex()
    return f"{shape}{'x' if shape else ''}<0x{view.element_type:08X}>={values}"


def _close(actual: float, expected: float, atol: float, rtol: float) -> bool:
    if actual == expected:
        return True
    if math.isnan(actual) and math.isnan(expected):
        return True
    return math.isfinite(expected) and abs(actual - expected) <= atol + rtol * abs(expected)


class IreeCheckOracle:
    """Python `check` module state: per-check call counts and failure messages."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.failures: list[str] = []
        # Every check's operands in call order, as (element type, shape, raw bytes) for
        # views and ints for scalars: the values the test computed, compared bit for bit
        # with pyree's (tests/conformance.py).
        self.operands: list = []

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def reset(self) -> None:
        self.calls.clear()
        self.failures.clear()
        self.operands.clear()

    def create_module(self) -> rt.VmModule:
        """A fresh `check` VmModule bound to this oracle's counters."""
        iface = rt.PyModuleInterface("check", lambda _iface: self)
        for name, cconv in CHECK_EXPORTS.items():
            iface.export(name, cconv, getattr(IreeCheckOracle, name))
        return iface.create()

    # -- the exports (first argument: this oracle) --------------------------------------

    def expect_true(self, operand: int) -> None:
        self.calls["expect_true"] += 1
        self.operands.append(("expect_true", int(operand) & 0xFFFFFFFF))
        if operand == 0:
            self.failures.append(f"Expected {operand} to be nonzero.")

    def expect_false(self, operand: int) -> None:
        self.calls["expect_false"] += 1
        self.operands.append(("expect_false", int(operand) & 0xFFFFFFFF))
        if operand != 0:
            self.failures.append(f"Expected {operand} to be zero.")

    def expect_all_true(self, device, operand) -> None:
        self.calls["expect_all_true"] += 1
        view = _read_view(operand)
        self.operands.append(("expect_all_true", _key(view)))
        if view.element_type in (_F32, _F64):
            values = _floats(view)
        else:
            values = _ints(view)
        if not all(v != 0 for v in values):
            self.failures.append("Expected all true values, but got " + _describe(view))

    def expect_eq(self, device, lhs, rhs) -> None:
        self.calls["expect_eq"] += 1
        a, b = _read_view(lhs), _read_view(rhs)
        self.operands.append(("expect_eq", _key(a), _key(b)))
        if a.element_type != b.element_type or a.shape != b.shape or a.data != b.data:
            self.failures.append(
                "Expected equality of these values.\n  lhs:\n    "
                + _describe(a)
                + "\n  rhs:\n    "
                + _describe(b)
            )

    def expect_almost_eq(self, device, lhs, rhs, atol: float, rtol: float) -> None:
        self.calls["expect_almost_eq"] += 1
        a, b = _read_view(lhs), _read_view(rhs)
        self.operands.append(("expect_almost_eq", _key(a), _key(b)))
        if a.element_type != b.element_type or a.shape != b.shape:
            self.failures.append(
                "Expected near equality of these values. Types or shapes do not match.\n"
                f"  lhs:\n    {_describe(a)}\n  rhs:\n    {_describe(b)}"
            )
            return
        for index, (x, y) in enumerate(zip(_floats(a), _floats(b))):
            if not _close(x, y, atol, rtol):
                self.failures.append(
                    f"Expected near equality of these values (atol={atol:g}, rtol={rtol:g}): "
                    f"index {index}: lhs {x!r} vs rhs {y!r}.\n"
                    f"  lhs:\n    {_describe(a)}\n  rhs:\n    {_describe(b)}"
                )
                return


# --------------------------------------------------------------------------- running


@dataclass
class OracleRun:
    ok: bool
    checks: int
    calls: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    error: str | None = None
    operands: list = field(default_factory=list)  # IreeCheckOracle.operands


_INSTANCE: rt.VmInstance | None = None
_DEVICES: dict[str, object] = {}


def _instance_and_device(driver: str):
    global _INSTANCE
    if _INSTANCE is None:
        _INSTANCE = rt.VmInstance()
    if driver not in _DEVICES:
        _DEVICES[driver] = rt.get_device(driver)
    return _INSTANCE, _DEVICES[driver]


@atexit.register
def _release() -> None:
    """Drops the cached instance and devices before interpreter exit (otherwise nanobind
    reports them as leaked)."""
    global _INSTANCE
    _INSTANCE = None
    _DEVICES.clear()
    gc.collect()


def load_module(vmfb: Path | bytes) -> rt.VmModule:
    """The module in writable memory (some programs update their constants in place)."""
    instance, _ = _instance_and_device("local-sync")
    data = vmfb if isinstance(vmfb, (bytes, bytearray)) else Path(vmfb).read_bytes()
    return rt.VmModule.copy_buffer(instance, data)


_CCONV = re.compile(r"\((\d[^)]*)\)")


def exported_tests(module: rt.VmModule) -> list[str]:
    """Exported functions taking no arguments (each one a test), in export order."""
    names = []
    for name in module.function_names:
        if name.startswith("__"):
            continue
        m = _CCONV.search(repr(module.lookup_function(name)))
        if m and re.fullmatch(r"0v?_.*", m.group(1)):
            names.append(name)
    return names


def run_function(
    module: rt.VmModule | Path,
    function: str,
    oracle: IreeCheckOracle | None = None,
    *,
    driver: str = "local-sync",
    with_check: bool = True,
) -> OracleRun:
    """Runs one no-argument export in a fresh context with the oracle as `check`."""
    instance, device = _instance_and_device(driver)
    if not isinstance(module, rt.VmModule):
        module = load_module(module)
    oracle = oracle if oracle is not None else IreeCheckOracle()
    error = None
    try:
        modules = [rt.create_hal_module(instance, device)]
        if with_check:
            modules.append(oracle.create_module())
        context = rt.VmContext(instance, modules + [module])
        fn = module.lookup_function(function)
        if fn is None:
            raise KeyError(f"no function {function!r}")
        context.invoke(fn, rt.VmVariantList(0), rt.VmVariantList(4))
    except Exception as e:  # an IREE error status or a bad argument in the oracle
        error = f"{type(e).__name__}: {e}"
    return OracleRun(
        ok=error is None and not oracle.failures,
        checks=oracle.total_calls,
        calls=dict(oracle.calls),
        failures=list(oracle.failures),
        error=error,
        operands=list(oracle.operands),
    )
