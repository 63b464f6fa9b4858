"""Differential tests: runtime_support.vm.numerics against the IREE 3.13 VM.

One VM-dialect module with one exported function per scalar op (built from the op
shapes in shared/reference/isa.json) is compiled once per session and run through
`iree.runtime` on edge-case inputs.  Results are compared bit for bit (floats by their
IEEE bit pattern, NaN sign included).

Documented exceptions:
* Transcendental f32 ops (glibc `sinf`, `log10f`, ...) may differ by up to 2 ulp: pyree
  computes them in double and rounds once (see numerics.py).  f64 transcendentals call the same
  glibc as IREE and are compared exactly.
* add/sub/mul/div/fma with two or more NaN operands: C returns the first NaN, CPython
  either one, so only NaN-ness is compared there.
* Integer division/remainder by zero and MIN/-1 crash the IREE process (hardware trap);
  they are not sent to IREE.  pyree raises VMError instead (tested on its own).
* `cast.si32.f64`, `cast.ui32.f64`, `cast.f64.si32`, `cast.f64.ui32` have no VM-dialect
  op in the 3.13 compiler, so they are tested against their definition only.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import struct
import subprocess
from pathlib import Path

import pytest

from runtime_support.errors import StatusCode, VMError
from runtime_support.vm import numerics as N

from conftest import SHARED_DIR
from iree_tools import find_tool  # IREE tools on PATH or in the iree packages

ISA_PATH = SHARED_DIR / "reference" / "isa.json"  # ../shared beside the checkout
if not ISA_PATH.exists():  # (a checkout without ../shared: these tests read its ISA table)
    pytest.skip("../shared/reference/isa.json absent", allow_module_level=True)

VM_FLAGS = (
    "--compile-mode=vm",
    "--iree-vm-target-extension-f32",
    "--iree-vm-target-extension-f64",
)

SCALAR_CLASSES = {
    "unary",
    "binary",
    "ternary",
    "shift",
    "binary_comparison",
    "unary_comparison",
    "conversion",
}
# No VM-dialect op in the 3.13 compiler (vm-bytecode.md §8.5).
NOT_COMPILABLE = {"cast.si32.f64", "cast.ui32.f64", "cast.f64.si32", "cast.f64.ui32"}
TRANSCENDENTAL = {
    "atan", "atan2", "cos", "sin", "exp", "exp2", "expm1",
    "log", "log10", "log1p", "log2", "pow", "tanh", "erf",
}  # fmt: skip


# glibc's older float routines (log10f, ...) are off by up to ~2 ulp; pyree's are
# computed in double and rounded once.
F32_ULP_TOLERANCE = 2
# With two NaN operands C returns the first one; CPython's float `+`/`*` may return either
# (its specialized and generic paths differ).  Only the NaN's sign/payload is affected.
NAN_CHOICE_OPS = {"add", "sub", "mul", "div", "fma"}


def _load_isa():
    return json.loads(ISA_PATH.read_text())


def scalar_op_shapes() -> dict[str, tuple[list[str], str]]:
    """mnemonic -> (operand banks, result bank) for every scalar op of isa.json."""
    isa = _load_isa()
    encodings = isa["encodings"]
    classes = isa["operation_classes"]
    out = {}
    for ins in isa["instructions"]:
        enc = encodings.get(ins.get("encoding") or "")
        if not enc or enc.get("class") not in SCALAR_CLASSES:
            continue
        params = enc.get("parameters", {})
        banks_in, bank_out = [], None
        for field in classes[enc["class"]]["fields"]:
            bank = field["bank"]
            if bank.startswith("$"):
                bank = params[bank[1:]]
            if field["access"] == "read":
                banks_in.append(bank)
            else:
                bank_out = bank
        out[ins["mnemonic"]] = (banks_in, bank_out)
    return out


SHAPES = scalar_op_shapes()
NON_REF = {m: s for m, s in SHAPES.items() if "ref" not in s[0]}


def _fn(mnemonic: str) -> str:
    return mnemonic.replace(".", "_")


def _mlir_for(mnemonic: str, banks_in, bank_out) -> str:
    args = ", ".join(f"%a{k}: {t}" for k, t in enumerate(banks_in))
    operands = ", ".join(f"%a{k}" for k in range(len(banks_in)))
    head = mnemonic.split(".")[0]
    if head in ("cast", "bitcast") or (head in ("trunc", "ext")):
        ty = f"{banks_in[0]} -> {bank_out}"
    else:
        ty = banks_in[0]
    fn = _fn(mnemonic)
    return (
        f"  vm.func @{fn}({args}) -> {bank_out} {{\n"
        f"    %0 = vm.{mnemonic} {operands} : {ty}\n"
        f"    vm.return %0 : {bank_out}\n"
        f"  }}\n"
        f"  vm.export @{fn}\n"
    )


def _compiled_ops():
    # cast.ui64.f32 last: iree-dump-module 3.13 aborts on it.
    names = sorted(
        (m for m in NON_REF if m not in NOT_COMPILABLE),
        key=lambda m: (m == "cast.ui64.f32", m),
    )
    return names


def _compile(source: str, out_dir: Path) -> Path:
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    out = out_dir / f"m-{key}.vmfb"
    if not out.exists():
        src = out.with_suffix(".mlir")
        src.write_text(source)
        subprocess.run(
            ["iree-compile", *VM_FLAGS, str(src), "-o", str(out)],
            check=True,
            capture_output=True,
            text=True,
        )
    return out


class IreeModule:
    def __init__(self, path: Path):
        import iree.runtime as rt

        self.rt = rt
        self.instance = rt.VmInstance()
        self.module = rt.VmModule.copy_buffer(self.instance, path.read_bytes())
        self.context = rt.VmContext(self.instance, [self.module])
        self._fns = {}

    def call(self, name: str, *args):
        rt = self.rt
        fn = self._fns.get(name)
        if fn is None:
            fn = self._fns[name] = self.module.lookup_function(name)
        a = rt.VmVariantList(len(args))
        for x in args:
            if isinstance(x, float):
                a.push_float(x)
            else:
                a.push_int(x)
        r = rt.VmVariantList(1)
        self.context.invoke(fn, a, r)
        return r.get_variant(0)


@pytest.fixture(scope="module")
def ops_module(tmp_path_factory):
    pytest.importorskip("iree.runtime")
    if find_tool("iree-compile") is None:
        pytest.skip("iree-compile not available")
    src = "vm.module @m {\n"
    for m in _compiled_ops():
        src += _mlir_for(m, *NON_REF[m])
    src += "}\n"
    path = _compile(src, tmp_path_factory.mktemp("vm_numerics"))
    return path, IreeModule(path)


# --------------------------------------------------------------------------------------
# Inputs

f32 = N.f32
I32 = [
    0, 1, -1, 2, -2, 3, -3, 7, -7, 8, 31, 32, 33, 63, 64, 65, 100, -100, 127, 128,
    255, 256, -129, 0x7FFF, 0x8000, 0xFFFF, 0x10000, -0x8001, 1 << 30, 0x12345678,
    -0x12345678, 0x7FFFFFFF, -0x80000000, -0x7FFFFFFF, 16777217, -16777217,
]  # fmt: skip
I64 = [
    0, 1, -1, 2, -2, 3, -7, 31, 32, 63, 64, 65, 255, 0x7FFFFFFF, -0x80000000,
    0xFFFFFFFF, 1 << 32, (1 << 32) + 1, (1 << 53) + 1, -(1 << 53) - 1, 1 << 62,
    0x123456789ABCDEF0, -0x123456789ABCDEF0, 0x7FFFFFFFFFFFFFFF, -0x8000000000000000,
    -0x7FFFFFFFFFFFFFFF, 0x7FFFFF8000000000, 0x7FFFFFC000000001, 0x20000010000000,
    0x20000030000000, 0x20000010000001,
]  # fmt: skip
_F_COMMON = [
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 5.5, -5.5, 0.1, -0.1,
    2.7, -2.7, 0.49999997, 1e-3, 3.0, 7.0, 100.0, 1e10, -1e10, 1e30, -1e30,
    3.4028234663852886e38, -3.4028234663852886e38, 1.1754943508222875e-38,
    1.401298464324817e-45, -1.401298464324817e-45, 8388609.0, 2.0**31, -(2.0**31),
    2.0**31 - 128, 3e9, -3e9, 2.0**32, 2.0**63, -(2.0**63), 1e19, 2.0**64, 1e20,
    math.pi, -math.e, 88.5, -104.0, 709.0, 0.75, 1.25,
    float("inf"), float("-inf"), N.NAN, N.NEG_NAN,
]  # fmt: skip
F32 = sorted({struct.pack("<d", f32(x)): f32(x) for x in _F_COMMON}.items())
F32 = [v for _, v in F32]
F64 = [v for _, v in sorted({struct.pack("<d", x): x for x in _F_COMMON + [
    0.49999999999999994, 4503599627370497.0, 4503599627370496.5, 1e300, -1e300,
    5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1 + 0.2, 1e-300,
    9223372036854774784.0, 2.0**52 + 1, 1e19 + 2048,
]}.items())]  # fmt: skip
SHIFTS = [0, 1, 5, 31, 32, 33, 63, 64, 65, -1, 100]

VALUES = {"i32": I32, "i64": I64, "f32": F32, "f64": F64}


def _inputs(mnemonic: str, banks_in):
    if mnemonic.split(".")[0] in ("shl", "shr"):
        base = VALUES[banks_in[0]]
        return [(a, n) for a in base for n in SHIFTS]
    if len(banks_in) == 1:
        return [(a,) for a in VALUES[banks_in[0]]]
    if len(banks_in) == 2:
        vals = VALUES[banks_in[0]]
        return [(a, b) for a in vals for b in vals]
    # ternary fma: a reduced cross product, plus the non-fused witness.
    vals = VALUES[banks_in[0]]
    small = vals[:: max(1, len(vals) // 9)]
    cases = [(a, b, c) for a in small for b in small for c in small]
    if banks_in[0] == "f32":
        cases.append((f32(1 + 2.0**-23), f32(1 - 2.0**-23), -1.0))
    if banks_in[0] == "f64":
        cases.append((1 + 2.0**-52, 1 - 2.0**-52, -1.0))
    return cases


def _random_value(rng: random.Random, bank: str):
    if bank == "i32":
        return rng.choice(
            [rng.randrange(-(1 << 31), 1 << 31), rng.randrange(-300, 300)]
        )
    if bank == "i64":
        k = rng.choice([8, 31, 32, 53, 63])
        return rng.randrange(-(1 << k), 1 << k)
    if bank == "f32":
        if rng.random() < 0.5:  # any bit pattern
            return N.from_bits_f32(rng.getrandbits(32))
        return f32(
            rng.choice([-1, 1]) * rng.uniform(0, 1) * 10.0 ** rng.randrange(-8, 12)
        )
    if rng.random() < 0.5:
        return N.from_bits_f64(rng.getrandbits(64))
    return rng.choice([-1, 1]) * rng.uniform(0, 1) * 10.0 ** rng.randrange(-20, 25)


def _random_inputs(mnemonic: str, banks_in, count: int = 300):
    rng = random.Random(mnemonic)
    if mnemonic.split(".")[0] in ("shl", "shr"):
        return [
            (_random_value(rng, banks_in[0]), rng.randrange(-200, 200))
            for _ in range(count)
        ]
    return [tuple(_random_value(rng, b) for b in banks_in) for _ in range(count)]


def _traps(mnemonic: str, args) -> bool:
    head = mnemonic.split(".")[0]
    if head not in ("div", "rem") or mnemonic.endswith(("f32", "f64")):
        return False
    a, b = args
    if b == 0:
        return True
    return mnemonic.endswith(".s") and b == -1 and a in (N.I32_MIN, N.I64_MIN)


def _key(value, bank):
    if bank in ("f32", "f64"):
        return struct.pack("<d", value)
    return value


def _ulp_diff32(x: float, y: float) -> int:
    if math.isnan(x) or math.isnan(y):
        same = struct.pack("<d", x) == struct.pack("<d", y)
        return 0 if same else 1 << 31

    def ordered(v):
        i = struct.unpack("<i", struct.pack("<f", v))[0]
        return i if i >= 0 else -(i & 0x7FFFFFFF)

    return abs(ordered(x) - ordered(y))


# --------------------------------------------------------------------------------------
# Tests


def test_ops_table_matches_isa():
    scalar = set(SHAPES)
    ours = set(N.OPS)
    assert ours == scalar, (sorted(scalar - ours), sorted(ours - scalar))
    for m, fn in N.OPS.items():
        assert callable(fn), m


def test_compiled_functions_contain_their_op(ops_module):
    path, _ = ops_module
    if find_tool("iree-dump-module") is None:
        pytest.skip("iree-dump-module not available")
    text = subprocess.run(
        ["iree-dump-module", "--output=disassembly", str(path)],
        capture_output=True,
        text=True,
    ).stdout
    funcs = dict(re.findall(r"vm\.func @(\w+)\(.*?\n(.*?)\n}", text, re.S))
    checked = 0
    for m in _compiled_ops():
        if m == "cast.ui64.f32":  # the 3.13 disassembler cannot print it
            continue
        body = funcs.get(_fn(m))
        assert body is not None, m
        assert f"vm.{m} " in body, (m, body)
        checked += 1
    assert checked == len(_compiled_ops()) - 1


@pytest.mark.parametrize(
    "mnemonic", sorted(m for m in NON_REF if m not in NOT_COMPILABLE)
)
def test_op_against_iree(ops_module, mnemonic):
    _, mod = ops_module
    banks_in, bank_out = NON_REF[mnemonic]
    ours = N.OPS[mnemonic]
    base = mnemonic.split(".")[0]
    transcendental = base in TRANSCENDENTAL and bank_out == "f32"
    extra = []
    if base in TRANSCENDENTAL:
        # a sweep of ordinary arguments for the libm functions
        vals = [(-20.0 + k * 0.37) for k in range(110)] + [
            k * 0.0917 for k in range(60)
        ]
        vals = [f32(v) for v in vals] if banks_in[0] == "f32" else vals
        if len(banks_in) == 1:
            extra = [(v,) for v in vals]
        else:
            extra = [(v, w) for v in vals[::9] for w in vals[::7]]
    mismatches = []
    ulp_diffs = 0
    for args in (
        _inputs(mnemonic, banks_in) + extra + _random_inputs(mnemonic, banks_in)
    ):
        if _traps(mnemonic, args):
            continue
        want = mod.call(_fn(mnemonic), *args)
        got = ours(*args)
        if bank_out in ("i32", "i64"):
            assert type(got) is int, (mnemonic, args, got)
        else:
            assert type(got) is float, (mnemonic, args, got)
            if bank_out == "f32":
                assert f32(got) == got or math.isnan(got), (mnemonic, args, got)
        if _key(got, bank_out) == _key(want, bank_out):
            continue
        if (
            base in NAN_CHOICE_OPS
            and sum(1 for x in args if x != x) >= 2
            and math.isnan(got)
            and math.isnan(want)
        ):
            continue  # which NaN operand propagates is unspecified in CPython
        if transcendental and _ulp_diff32(got, want) <= F32_ULP_TOLERANCE:
            ulp_diffs += 1
            continue
        mismatches.append((args, got, want))
    assert (
        not mismatches
    ), f"{mnemonic}: {len(mismatches)} mismatches, e.g. {mismatches[:8]}"


@pytest.mark.parametrize(
    "mnemonic, args",
    [
        ("div.i32.s", (7, 0)),
        ("div.i32.s", (N.I32_MIN, -1)),
        ("div.i32.u", (7, 0)),
        ("rem.i32.s", (7, 0)),
        ("rem.i32.s", (N.I32_MIN, -1)),
        ("rem.i32.u", (-1, 0)),
        ("div.i64.s", (7, 0)),
        ("div.i64.s", (N.I64_MIN, -1)),
        ("div.i64.u", (7, 0)),
        ("rem.i64.s", (7, 0)),
        ("rem.i64.s", (N.I64_MIN, -1)),
        ("rem.i64.u", (7, 0)),
    ],
)
def test_integer_division_traps_raise(mnemonic, args):
    with pytest.raises(VMError) as info:
        N.OPS[mnemonic](*args)
    assert info.value.code == StatusCode.INVALID_ARGUMENT
    assert mnemonic in info.value.message


def test_documented_observations():
    # vm-bytecode.md §5 observations, independent of IREE.
    assert N.OPS["shl.i32"](1, 33) == 2
    assert N.OPS["abs.i32"](N.I32_MIN) == N.I32_MIN
    assert N.OPS["ctlz.i32"](0) == 32
    assert N.OPS["ctlz.i64"](0) == 64
    assert N.OPS["rem.f32"](5.5, 2.0) == -0.5
    assert N.OPS["rem.f64"](2.5, 1.0) == 0.5
    assert N.OPS["rem.f64"](3.5, -1.0) == -0.5
    assert N.OPS["fma.f32"](f32(1 + 2.0**-23), f32(1 - 2.0**-23), -1.0) == 0.0
    assert N.OPS["min.f32"](2.7, N.NAN) == 2.7
    assert math.isnan(N.OPS["min.f32"](N.NAN, 2.0))
    assert N.OPS["cmp.ne.f32.o"](N.NAN, 1.0) == 1
    assert N.OPS["cast.f32.si32"](2.5) == 3
    assert N.OPS["cast.f32.si32"](-2.5) == -3
    assert N.OPS["cast.f32.si32"](5.5) == 6
    assert N.OPS["cast.f32.si32"](N.NAN) == 0
    assert N.OPS["cast.f64.si64"](2.5) == 3


def test_uncompilable_casts_by_definition():
    for a in I32:
        assert N.OPS["cast.si32.f64"](a) == float(a)
        assert N.OPS["cast.ui32.f64"](a) == float(a & 0xFFFFFFFF)
    for x in F64:
        assert N.OPS["cast.f64.si32"](x) == N.OPS["cast.f32.si32"](f32(x))
        assert N.OPS["cast.f64.ui32"](x) == N.OPS["cast.f32.ui32"](f32(x))


def test_helpers():
    assert N.wrap_i32(0xFFFFFFFF) == -1
    assert N.wrap_i32(0x80000000) == N.I32_MIN
    assert N.wrap_i64(1 << 63) == N.I64_MIN
    assert N.to_u32(-1) == 0xFFFFFFFF
    assert N.to_u64(-1) == (1 << 64) - 1
    assert N.f32(1e39) == math.inf and N.f32(-1e39) == -math.inf
    assert N.f32(3.4028235677973366e38) == math.inf  # the tie rounds to even: inf
    assert N.f32(3.4028235677973362e38) == 3.4028234663852886e38
    assert math.isnan(N.f32(N.NAN))
    assert struct.pack("<d", N.f32(N.NEG_NAN)) == struct.pack("<d", N.NEG_NAN)
    assert N.f32(0.1) == struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert N.f32(1.401298464324817e-45 / 2) == 0.0  # tie to even (zero)
    assert N.f32(1.401298464324817e-45 * 0.75) == 1.401298464324817e-45
    assert N.bits_f32(-0.0) == N.I32_MIN
    assert N.from_bits_f32(0x3F800000) == 1.0
    assert N.bits_f64(1.0) == 0x3FF0000000000000
    assert N.from_bits_f64(N.bits_f64(-2.5)) == -2.5
