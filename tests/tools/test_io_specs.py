"""`--input` parsing and result printing, differential against iree-run-module 3.13.

Every case feeds the same SPEC to iree-run-module (on identity functions compiled from
MLIR) and to our parse -> format round trip, and compares the printed text exactly; for
specs iree-run-module rejects, both must fail with the same status code.
"""

from __future__ import annotations

import math
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from iree_tools import find_tool  # IREE tools on PATH or in the iree packages
from helpers_compile import LLVM_CPU_FLAGS, compile_mlir
from runtime_support.tools.io_format import format_results, format_value
from runtime_support.tools.io_specs import HalArray, SpecError, parse_input

pytestmark = pytest.mark.skipif(
    find_tool("iree-run-module") is None or find_tool("iree-compile") is None,
    reason="needs iree-base-compiler/iree-base-runtime",
)

TYPES = [
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "si8",
    "si16",
    "si32",
    "si64",
    "ui8",
    "ui16",
    "ui32",
    "ui64",
    "f16",
    "bf16",
    "f32",
    "f64",
]
SCALARS = {"i32": "i", "i64": "I", "f32": "f", "f64": "F"}


def _identity_module() -> str:
    lines = ["module {"]
    for t in TYPES:
        lines.append(
            f"  func.func @id0_{t}(%a: tensor<{t}>) -> tensor<{t}> {{ return %a : tensor<{t}> }}"
        )
        for r in (1, 2, 3):
            ty = "tensor<" + "?x" * r + t + ">"
            lines.append(
                f"  func.func @id{r}_{t}(%a: {ty}) -> {ty} {{ return %a : {ty} }}"
            )
    for t in SCALARS:
        lines.append(f"  func.func @s_{t}(%a: {t}) -> {t} {{ return %a : {t} }}")
    lines.append("  func.func @none() { return }")
    lines.append(
        "  func.func @two(%a: tensor<?xf32>, %b: i32) -> (tensor<?xf32>, i32) "
        "{ return %a, %b : tensor<?xf32>, i32 }"
    )
    lines.append("}")
    return "\n".join(lines) + "\n"


LIST_MODULE = """
module {
  func.func @empty() -> !util.list<?> {
    %c0 = arith.constant 0 : index
    %l = util.list.create %c0 : !util.list<?>
    return %l : !util.list<?>
  }
  func.func @nested() -> (!util.list<?>, i32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %inner = util.list.create %c1 : !util.list<?>
    util.list.resize %inner, %c1 : !util.list<?>
    %f = arith.constant 2.5 : f32
    util.list.set %inner[%c0], %f : f32 -> !util.list<?>
    %l = util.list.create %c3 : !util.list<?>
    util.list.resize %l, %c3 : !util.list<?>
    %v = arith.constant 7 : i64
    util.list.set %l[%c0], %v : i64 -> !util.list<?>
    util.list.set %l[%c1], %inner : !util.list<?> -> !util.list<?>
    %t = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    %bv = hal.tensor.export %t : tensor<2x2xf32> -> !hal.buffer_view
    util.list.set %l[%c2], %bv : !hal.buffer_view -> !util.list<?>
    %r = arith.constant 9 : i32
    return %l, %r : !util.list<?>, i32
  }
}
""".replace(
    "%c3 = arith.constant 3 : index",
    "%c2 = arith.constant 2 : index\n    %c3 = arith.constant 3 : index",
)

FLAGS = LLVM_CPU_FLAGS + ("--iree-input-demote-f64-to-f32=false",)


@pytest.fixture(scope="session")
def work(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("io_specs")
    _write_data_files(d)
    return d


@pytest.fixture(scope="session")
def id_vmfb(work) -> Path:
    return compile_mlir(_identity_module(), work, FLAGS, name="identity")


def iree_run(vmfb: Path, function: str, specs, extra=(), cwd=None):
    cmd = [
        "iree-run-module",
        "--device=local-sync",
        f"--module={vmfb}",
        f"--function={function}",
        *[f"--input={s}" for s in specs],
        *extra,
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=60)
    return p.returncode, p.stdout, p.stderr


def status_code(stderr: str) -> str:
    m = re.search(r"\b([A-Z_]{4,}); ", stderr) or re.search(r"\b([A-Z_]{4,})\b", stderr)
    return m.group(1) if m else "?"


# ------------------------------------------------------------------------- data files


def _write_data_files(d: Path) -> None:
    np.save(d / "f32.npy", np.arange(6, dtype=np.float32).reshape(2, 3) / 3)
    np.save(d / "bool.npy", np.array([True, False, True]))
    np.save(d / "scalar.npy", np.float32(3.5))
    for dt in [
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float64",
        "complex64",
        "complex128",
    ]:
        np.save(d / f"dt_{dt}.npy", (np.arange(5) - 2).astype(dt))
    np.save(d / "dt_V2.npy", np.zeros(2, dtype="V2"))
    np.save(d / "empty.npy", np.zeros((0, 4), dtype=np.float32))
    np.save(d / "rank3.npy", np.arange(24, dtype=np.int32).reshape(2, 3, 4))
    np.save(
        d / "fortran.npy",
        np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
    )
    np.save(d / "bigendian.npy", np.arange(3, dtype=">f4"))
    np.save(d / "object.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    np.save(d / "unicode.npy", np.array(["ab"]))
    with open(d / "multi.npy", "wb") as f:
        np.save(f, np.array([1, 2], dtype=np.int32))
        np.save(f, np.array([3.5], dtype=np.float32))
    np.array([0x7E01, 0xFE00, 0xFC00, 0x8000, 0x0001], dtype=np.uint16).view(
        np.float16
    ).tofile(d / "f16_special.bin")
    np.array([0xFFC0, 0x7FC1, 0xFF80, 0x0001], dtype=np.uint16).tofile(
        d / "bf16_special.bin"
    )
    np.array([0xFFC00000, 0x7FC00001, 0x80000000, 1], dtype=np.uint32).tofile(
        d / "f32_special.bin"
    )
    np.arange(4, dtype=np.int32).tofile(d / "a.bin")
    np.arange(3, dtype=np.int32).tofile(d / "short.bin")


# ---------------------------------------------------------------------------- cases

# (function, spec[, max_element_count]) for ref identities; spec parsed as one ref input.
FLOAT_VALUES = [
    "0.3333333333333333",
    "1e-8",
    "1e20",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "-0",
    "65504",
    "65520",
    "1e-7",
    "1.00390625",
    "1.005",
    "3.14159",
    "100000",
    "123456789",
    "0.0001",
    "0.00001",
    "1e40",
    "1e-40",
    "1e-45",
    "0x1p-3",
    "16777217",
    "3abc",
    "1e-300",
    "1e300",
    "0" * 30 + "1",
    "0" * 31 + "1",
]
INT_VALUES = [
    "-129",
    "-128",
    "-1",
    "127",
    "128",
    "255",
    "256",
    "-32769",
    "65535",
    "65536",
    "-2147483649",
    "2147483648",
    "4294967295",
    "4294967296",
    "-4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "0x10",
    "010",
    "08",
    "1.5",
    "7x",
    # Length limits: 15 characters for <= 32-bit ints, 31 for 64-bit ints.
    "0" * 14 + "1",
    "0" * 15 + "1",
    "0" * 30 + "1",
    "0" * 31 + "1",
    "0xffffffffffff",
    "0.11111111111111",
]

REF_CASES: list[tuple] = []
for t in TYPES:
    if t == "i1":
        continue
    REF_CASES += [
        (f"id1_{t}", f"6x{t}=0 1 -1 127 -128 255"),
        (f"id1_{t}", f"4x{t}"),
        (f"id1_{t}", f"4x{t}=7"),
        (f"id2_{t}", f"2x3x{t}=1 2 3 4 5 6"),
        (f"id3_{t}", f"2x2x2x{t}=[[1 2][3 4]][[5 6][7 8]]"),
        (f"id0_{t}", f"{t}=5"),
        (f"id1_{t}", f"0x{t}"),
        (f"id2_{t}", f"0x4x{t}"),
        (f"id2_{t}", f"2x0x{t}"),
        (f"id3_{t}", f"2x2x0x{t}"),
        (f"id3_{t}", f"1x1x1x{t}=2"),
    ]
for t in ("f16", "bf16", "f32", "f64"):
    REF_CASES += [(f"id1_{t}", f"1x{t}={v}") for v in FLOAT_VALUES]
for t in (
    "i8",
    "si8",
    "ui8",
    "i16",
    "si16",
    "ui16",
    "i32",
    "si32",
    "ui32",
    "i64",
    "si64",
    "ui64",
):
    REF_CASES += [(f"id1_{t}", f"1x{t}={v}") for v in INT_VALUES]
# Dims as iree-run-module reads them: C strtoll base 0 over the longest prefix, at most
# 31 characters, within int64, not negative; counts that overflow a 64-bit device size.
REF_CASES += [
    ("id1_f32", "0X10xf32=1"),
    ("id2_f32", "010x2xf32=1"),
    ("id2_f32", "08x0xf32"),
    ("id2_f32", "-0x2xf32"),
    ("id2_f32", "2abcx2xf32=3"),
    ("id2_f32", "0XGx2xf32"),
    ("id2_f32", "1e3x2xf32"),
    ("id2_f32", "-1x4xf32=1"),
    ("id2_f32", "0x10xf32=1"),
    ("id2_f32", "99999999999999999999x4xf32=1"),
    ("id2_f32", "9223372036854775808x0xf32"),
    ("id2_f32", "0X8000000000000000x0xf32"),
    ("id2_f32", "0" * 31 + "2x0xf32"),
    ("id2_f32", "0" * 32 + "2x0xf32"),
    ("id2_f32", "9223372036854775807x4xf32=1"),
    ("id3_f32", "3x9223372036854775807x2xf32"),
    ("id2_f32", "2305843009213693952x2xf32"),
    ("id2_i8", "4611686018427387904x4xi8=1"),
]
REF_CASES += [
    # i1 and other types without a value parser: hex bytes.
    ("id1_i1", "2xi1=01 00"),
    ("id1_i1", "2xi1=01"),
    ("id1_i1", "8xi1=ff"),
    ("id1_i1", "2xi1=0 1"),
    ("id1_i1", "2xi1=z1"),
    ("id1_i1", "2xi1=1z"),
    ("id1_i1", "2xi1=a0"),
    ("id1_i1", "2xi1"),
    ("id1_i1", "2xi1="),
    ("id1_i1", "2xi1=0100"),
    ("id2_i1", "2x2xi1=01 00 01 01"),
    ("id1_f32", "1xcf64=0000803F00000040"),
    ("id1_f32", "2x*16=abcd 0102"),
    ("id1_f32", "2xcf32=01"),
    # Separators, brackets, splats, zero fill.
    ("id1_f32", "4xf32="),
    ("id1_f32", "4xf32=1,2,3,4"),
    ("id1_f32", "4xf32=1, 2 ,3,,4"),
    ("id1_f32", "4xf32=[1 2 3 4]"),
    ("id1_f32", "4xf32=[1 2][3 4]"),
    ("id1_f32", "4xf32=[7]"),
    ("id1_f32", "4xf32= 7 "),
    ("id1_f32", "4xf32=1;2;3;4"),
    ("id1_f32", "4xf32=1\t2\n3\r4"),
    ("id1_f32", "4xf32=1 2 3 4 ,"),
    ("id2_f32", "2x2xf32=[1 2 3 4]"),
    ("id1_f32", "1xf32=,5"),
    ("id1_f32", "4xf32=1=2"),
    ("id1_f32", "  4xf32=1 2 3 4  "),
    ("id1_f32", " 4 xf32=1"),
    ("id0_f32", "xf32=1"),
    ("id0_f32", "f32="),
    ("id1_f32", "4xf32=1 2 3 4x"),
    ("id1_f32", "4xf32=0x10 1e2 -inf nan(123)"),
    # Raw binary files.
    ("id2_i32", "2x2xi32=@a.bin"),
    ("id1_f32", "4xf32=@a.bin"),
    ("id1_i32", "2xi32=@a.bin"),
    ("id1_i32", "4xi32=+a.bin"),
    ("id1_f16", "5xf16=@f16_special.bin"),
    ("id1_bf16", "4xbf16=@bf16_special.bin"),
    ("id1_f32", "4xf32=@f32_special.bin"),
    # numpy files.
    ("id2_f32", "@f32.npy"),
    ("id2_f32", "+f32.npy"),
    ("id1_i1", "@bool.npy"),
    ("id0_f32", "@scalar.npy"),
    ("id1_f32", "@multi.npy"),
    ("id2_f32", "@empty.npy"),
    ("id3_i32", "@rank3.npy"),
    ("id1_f32", "@dt_V2.npy"),
    *[
        ("id1_f32", f"@dt_{dt}.npy")
        for dt in [
            "int8",
            "int16",
            "int32",
            "int64",
            "uint8",
            "uint16",
            "uint32",
            "uint64",
            "float16",
            "float64",
            "complex64",
            "complex128",
        ]
    ],
    ("id1_f32", "(null)"),
    # Errors.
    ("id1_f32", "4xf32=1 2"),
    ("id1_f32", "4xf32=1 2 3 4 5"),
    ("id1_f32", "4xf32=1 2 3 x"),
    ("id1_f32", "4xf32=[]"),
    ("id1_f32", "4xf32=,"),
    ("id1_f32", "0xf32=1"),
    ("id0_f32", "f32=1 2"),
    ("id1_f32", "4xF32=1"),
    ("id1_f32", "4x f32=1"),
    ("id1_f32", "x4xf32=1"),
    ("id1_f32", "4xxf32=1"),
    ("id1_f32", "-1xf32=1"),
    ("id1_f32", "4x?xf32=1"),
    ("id1_f32", "4xf32x=1"),
    ("id1_f32", "=1"),
    ("id1_f32", "4x2=1"),
    ("id1_f32", "4x=1"),
    ("id1_f32", "abc=1"),
    ("id1_f32", "2xbool=1"),
    ("id1_f32", "2xi=1"),
    ("id1_f32", "2xi256=1"),
    ("id1_f32", "2xint8=1"),
    ("id1_f32", "2xu8=1"),
    ("id1_f32", "1xf32=1e-46"),
    ("id1_f32", "1xf16=1e-50"),
    ("id1_f32", "4xf32=1 . 2 3"),
    ("id1_f32", "5"),
    ("id1_f32", "1.5"),
    ("id1_f32", "f32"),
    ("id1_f32", ""),
    ("id1_f32", "   "),
    ("id1_f32", "4xi32=@short.bin"),
    ("id1_f32", "4xi32=@nonexistent.bin"),
    ("id1_f32", "@nonexistent.npy"),
    ("id1_f32", "@a.bin"),
    ("id2_f32", "@fortran.npy"),
    ("id1_f32", "@bigendian.npy"),
    ("id1_f32", "@object.npy"),
    ("id1_f32", "@unicode.npy"),
]

SCALAR_CASES = []
for t in SCALARS:
    for v in [
        "5",
        "-3",
        "0x10",
        "-0x10",
        "010",
        "08",
        "1.5",
        "1e3",
        "5abc",
        "5 6",
        " 5",
        "5,",
        "2147483648",
        "4294967295",
        "-2147483649",
        "9223372036854775807",
        "9223372036854775808",
        "99999999999999999999",
        "0.3333333333333333",
        "1e-8",
        "1e20",
        "1e40",
        "1e-40",
        "1e-46",
        "1e-400",
        "1e400",
        "nan",
        "-nan",
        "NaN",
        "inf",
        "-inf",
        "infinity",
        "-0",
        "0x1p3",
        "3.4028235e38",
        "16777217",
        "123456789.123",
        "abc",
        ".5",
        "-",
        "+5",
        "true",
        "0" * 14 + "1",
        "0" * 15 + "1",
        "0" * 30 + "1",
        "0" * 31 + "1",
        "0.5",
        "0.1111111111",
        "0.11111111111111",
        "f32=5",
        "i32=5",
        "",
        "@scalar.npy",
        "@a.bin",
    ]:
        SCALAR_CASES.append((f"s_{t}", v))

ELIDE_CASES = (
    [("id1_f32", "3xf32=1 2 3", n) for n in (0, 1, 2, 3, 4, -1)]
    + [("id2_f32", "2x3xf32=1 2 3 4 5 6", n) for n in (0, 3, 4, 6)]
    + [("id3_f32", "2x2x2xf32=1 2 3 4 5 6 7 8", n) for n in (0, 1, 5, 8)]
    + [
        ("id0_f32", "f32=1", 0),
        ("id1_f32", "0xf32", 0),
        ("id2_i1", "2x2xi1=01 00 01 01", 3),
        ("id1_f32", "1025xf32=1", None),
        ("id1_i32", "2000xi32=3", 1500),
    ]
)


@pytest.fixture(scope="session")
def reference(id_vmfb, work):
    """iree-run-module's (rc, stdout, stderr) for every case, run a few at a time."""
    jobs = {}
    for fn, spec in REF_CASES + SCALAR_CASES:
        jobs[(fn, spec, None)] = (fn, [spec], ())
    for fn, spec, n in ELIDE_CASES:
        extra = () if n is None else (f"--output_max_element_count={n}",)
        jobs[(fn, spec, n)] = (fn, [spec], extra)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futs = {
            k: pool.submit(iree_run, id_vmfb, fn, specs, extra, work)
            for k, (fn, specs, extra) in jobs.items()
        }
        return {k: f.result() for k, f in futs.items()}


def ours(function: str, spec: str, arg_type: str, cwd: Path, max_count=1024):
    """(ok, text or status code) for our parse -> format round trip."""
    import os

    old = os.getcwd()
    os.chdir(cwd)
    try:
        parsed = parse_input(spec, arg_type)
    except SpecError as e:
        return False, e.code.name, e.message
    finally:
        os.chdir(old)
    result_type = None if arg_type == "r" else parsed.vm_type
    return (
        True,
        format_results(
            function,
            [parsed.value],
            [result_type],
            1024 if max_count is None else max_count,
        ),
        None,
    )


def _compare(reference, work, fn, spec, arg_type, n=None):
    rc, out, err = reference[(fn, spec, n)]
    ok, text, msg = ours(fn, spec, arg_type, work, n)
    if rc == 0:
        assert ok, f"iree-run-module accepts {spec!r} but we raise {text}: {msg}\n{out}"
        assert text == out
    else:
        # iree-run-module's own errors (e.g. a wrongly typed identity) are not SPEC errors.
        assert (
            not ok
        ), f"iree-run-module rejects {spec!r} ({err.strip()}) but we print\n{text}"
        assert text == status_code(err), err
        if msg:
            assert msg in err


@pytest.mark.parametrize("fn,spec", REF_CASES, ids=[f"{f}:{s!r}" for f, s in REF_CASES])
def test_ref_spec_matches_iree_run_module(reference, work, fn, spec):
    _compare(reference, work, fn, spec, "r")


@pytest.mark.parametrize(
    "fn,spec", SCALAR_CASES, ids=[f"{f}:{s!r}" for f, s in SCALAR_CASES]
)
def test_scalar_spec_matches_iree_run_module(reference, work, fn, spec):
    _compare(reference, work, fn, spec, SCALARS[fn[2:]])


@pytest.mark.parametrize(
    "fn,spec,n", ELIDE_CASES, ids=[f"{f}:{s[:12]!r}:{n}" for f, s, n in ELIDE_CASES]
)
def test_elision_matches_iree_run_module(reference, work, fn, spec, n):
    _compare(reference, work, fn, spec, "r", n)


def test_multiple_results_and_no_results(id_vmfb, work):
    rc, out, _ = iree_run(id_vmfb, "two", ["2xf32=1 2", "7"], cwd=work)
    assert rc == 0
    a = parse_input("2xf32=1 2", "r").value
    b = parse_input("7", "i").value
    assert format_results("two", [a, b], [None, "i32"]) == out
    rc, out, _ = iree_run(id_vmfb, "none", [], cwd=work)
    assert rc == 0 and format_results("none", []) == out


def test_vm_list_printing(work):
    vmfb = compile_mlir(LIST_MODULE, work, LLVM_CPU_FLAGS, name="lists")
    rc, out, _ = iree_run(vmfb, "empty", [])
    assert rc == 0 and format_results("empty", [[]]) == out
    rc, out, _ = iree_run(vmfb, "nested", [])
    value = [np.int64(7), [np.float32(2.5)], np.array([[1, 2], [3, 4]], np.float32)]
    assert rc == 0 and format_results("nested", [value, 9], [None, "i32"]) == out


def test_computed_i1_and_random_floats_match(work):
    """Values produced by real computation (not echoed input): i1 compares, random floats."""
    src = """
    module {
      func.func @cmp(%a: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<6xi1> {
        %0 = arith.cmpf olt, %a, %b : tensor<6xf32>
        return %0 : tensor<6xi1>
      }
      func.func @half(%a: tensor<3x4xf16>) -> tensor<3x4xf16> {
        %0 = arith.addf %a, %a : tensor<3x4xf16>
        return %0 : tensor<3x4xf16>
      }
      func.func @div(%a: tensor<8xf64>, %b: tensor<8xf64>) -> tensor<8xf64> {
        %0 = arith.divf %a, %b : tensor<8xf64>
        return %0 : tensor<8xf64>
      }
    }
    """
    vmfb = compile_mlir(src, work, FLAGS, name="computed")
    rc, out, _ = iree_run(vmfb, "cmp", ["6xf32=1 2 3 4 5 6", "6xf32=2 2 2 5 5 7"])
    assert rc == 0
    assert format_results("cmp", [np.array([1, 0, 0, 1, 0, 1], dtype=bool)]) == out
    rng = np.random.default_rng(0)
    h = (rng.standard_normal((3, 4)) * 1000).astype(np.float16)
    rc, out, _ = iree_run(
        vmfb, "half", ["3x4xf16=" + " ".join(repr(float(v)) for v in h.ravel())]
    )
    assert rc == 0 and format_results("half", [h + h]) == out
    a = rng.standard_normal(8) * 10.0 ** rng.integers(-30, 30, 8)
    b = rng.standard_normal(8)
    rc, out, _ = iree_run(
        vmfb,
        "div",
        [
            "8xf64=" + " ".join(repr(float(v)) for v in a),
            "8xf64=" + " ".join(repr(float(v)) for v in b),
        ],
    )
    assert rc == 0 and format_results("div", [a / b]) == out


# ------------------------------------------------------------------ unit-level checks


def test_parse_results_are_typed():
    p = parse_input("2x2xsi32=1 2 3 4")
    assert isinstance(p.value, HalArray) and p.value.element_type == "si32"
    assert p.value.dtype == np.int32 and p.value.shape == (2, 2)
    assert parse_input("2xbf16=1 2").value.dtype == np.uint16
    assert parse_input("2xi1=01 00").value.dtype == np.bool_
    s = parse_input("7", "i")
    assert s.value == 7 and isinstance(s.value, int) and s.vm_type == "i32"
    f = parse_input("0.1", "f")
    assert f.vm_type == "f32" and f.value == float(np.float32(0.1))
    assert parse_input("(null)").value is None
    assert math.copysign(1, parse_input("-0", "F").value) == -1


def test_plain_numpy_results_format_as_signless():
    assert format_value(np.array([1, -2], np.int32)) == "hal.buffer_view\n2xi32=1 -2\n"
    assert format_value(np.array([1, 2], np.uint8)) == "hal.buffer_view\n2xui8=1 2\n"
    assert format_value(np.float32(0.5)) == "f32=0.5\n"
    assert format_value(3, "i64") == "i64=3\n"
    assert format_value(None) == "(null)\n"


def test_npy_header_that_lies_about_its_size_is_one_status(tmp_path):
    # A header promising 10**15 elements: end of file, not a huge allocation.
    import io as _io

    from runtime_support.tools.io_specs import parse_inputs

    buf = _io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<f4", "fortran_order": False, "shape": (10**15,)}
    )
    (tmp_path / "lie.npy").write_bytes(buf.getvalue())
    with pytest.raises(SpecError) as e:
        parse_inputs([f"@{tmp_path / 'lie.npy'}"], ["ref"])
    assert e.value.code.name == "OUT_OF_RANGE" and "npy contents" in e.value.message
    (tmp_path / "neg.npy").write_bytes(
        buf.getvalue().replace(b"(1000000000000000,)", b"(-5,)              ")
    )
    with pytest.raises(SpecError) as e:
        parse_inputs([f"@{tmp_path / 'neg.npy'}"], ["ref"])
    assert e.value.code.name == "INVALID_ARGUMENT"


# Views too large to allocate, and npy headers with huge or hex dims: the status code
# iree-run-module reports (the message is ours), one line.
HUGE_CASES = [
    ("id2_f32", "99999999999x4xf32=1"),
    ("id2_f32", "99999999999x4xf32"),
    ("id2_f32", "4294967296x4xf32=1"),
    ("id2_i8", "4611686018427387904x3xi8"),
    ("id1_i8", "9223372036854775807xi8"),
]
NPY_SHAPES = {"huge": "(99999999999999999999, 4)", "hex": "(0x10, 1)", "ovf": "(4611686018427387904, 4)",
              "bytes": "(2305843009213693952, 4)", "u64": "(18446744073709551615,)"}


def _npy_with_shape(path: Path, shape_text: str) -> Path:
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape_text
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + bytes(64))
    return path


@pytest.mark.parametrize("fn,spec", HUGE_CASES + [("id2_f32", f"@{k}") for k in NPY_SHAPES])
def test_huge_dims_give_iree_run_modules_status(id_vmfb, tmp_path, fn, spec):
    if spec.startswith("@"):
        spec = f"@{_npy_with_shape(tmp_path / (spec[1:] + '.npy'), NPY_SHAPES[spec[1:]])}"
    rc, _, err = iree_run(id_vmfb, fn, [spec])
    try:
        parse_input(spec, "r")
        ok, code, msg = True, None, ""
    except SpecError as e:
        ok, code, msg = False, e.code.name, e.message
    assert ok == (rc == 0), (spec, err)
    if not ok:
        assert code == status_code(err), (spec, msg, err)
        assert "\n" not in msg and len(msg) < 200, msg
