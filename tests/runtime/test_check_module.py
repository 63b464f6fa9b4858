"""runtime_support.modules.check: the `check` import module (hal-abi.md §F).

Unit tests on views built with runtime_support.hal, and agreement with the Python oracle
that runs under iree.runtime (tests/support/iree_check_oracle.py) on the same bytes.
"""

from __future__ import annotations

import math
import re
import subprocess

import numpy as np
import pytest

from runtime_support.errors import StatusCode, VMError
from runtime_support.hal import HalBuffer, HalBufferView, LocalDevice
from runtime_support.hal import element_types as et
from runtime_support.modules import CheckModule
from runtime_support.modules import check as check_mod
from iree_tools import find_tool  # IREE tools on PATH or in the iree packages

DEVICE = LocalDevice("local-sync")


def view(array, element_type=None, shape=None) -> HalBufferView:
    array = np.asarray(array)
    v = HalBufferView.from_numpy(array, DEVICE.allocator, element_type=element_type)
    if shape is not None:
        v = HalBufferView(v.buffer, shape, v.element_type)
    return v


def raw_view(data: bytes, shape, element_type) -> HalBufferView:
    buf = HalBuffer.allocate(len(data))
    if data:
        buf.write(0, np.frombuffer(data, np.uint8))
    return HalBufferView(buf, shape, element_type)


def bf16(values) -> np.ndarray:
    """bf16 bit patterns (round-to-nearest-even) of float32 values."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype(np.uint16)


def fails(fn, *args) -> str:
    with pytest.raises(VMError) as info:
        fn(*args)
    assert info.value.code == StatusCode.FAILED_PRECONDITION
    return info.value.message


# --------------------------------------------------------------------------- conventions


def test_imports_table_and_method_names():
    assert CheckModule.IMPORTS == {
        "check.expect_true": "0i_v",
        "check.expect_false": "0i_v",
        "check.expect_all_true": "0rr_v",
        "check.expect_eq": "0rrr_v",
        "check.expect_almost_eq": "0rrrff_v",
    }
    for full_name in CheckModule.IMPORTS:
        method = full_name[len("check.") :].replace(".", "_")
        assert callable(getattr(CheckModule(), method))


CHECKS_MLIR = """
func.func @t() {
  %p = util.unfoldable_constant 1 : i32
  check.expect_true(%p) : i32
  check.expect_false(%p) : i32
  %a = util.unfoldable_constant dense<[1, 2]> : tensor<2xi32>
  check.expect_all_true(%a) : tensor<2xi32>
  check.expect_eq(%a, %a) : tensor<2xi32>
  %f = util.unfoldable_constant dense<[1.0, 2.0]> : tensor<2xf32>
  check.expect_almost_eq(%f, %f) : tensor<2xf32>
  return
}
"""


@pytest.mark.skipif(find_tool("iree-compile") is None, reason="iree-compile not installed")
def test_imports_match_compiled_module(tmp_path):
    from helpers_compile import compile_mlir, dump_module

    vmfb = compile_mlir(CHECKS_MLIR, tmp_path)
    text = subprocess.run(
        ["iree-dump-module", str(vmfb)], check=True, capture_output=True, text=True
    ).stdout
    declared = dict(re.findall(r'vm\.import optional @(check\.[\w.]+) cconv "([^"]+)"', text))
    assert declared == CheckModule.IMPORTS
    del dump_module


# --------------------------------------------------------------------------- scalars


def test_expect_true_false_and_counts():
    check = CheckModule()
    check.expect_true(1)
    check.expect_true(-1)
    check.expect_false(0)
    assert "Expected 0 to be nonzero." in fails(check.expect_true, 0)
    assert "Expected 7 to be zero." in fails(check.expect_false, 7)
    assert check.calls == {"expect_true": 3, "expect_false": 2}
    assert check.total_calls == 5
    assert len(check.failures) == 2
    check.reset()
    assert check.total_calls == 0 and not check.failures


def test_no_raise_records_and_continues():
    check = CheckModule(raise_on_failure=False)
    check.expect_true(0)
    check.expect_eq(DEVICE, view([1, 2]), view([1, 3]))
    check.expect_eq(DEVICE, view([1, 2]), view([1, 2]))
    assert check.calls == {"expect_true": 1, "expect_eq": 2}
    assert len(check.failures) == 2


# --------------------------------------------------------------------------- expect_eq


@pytest.mark.parametrize(
    "dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.float16, np.float32, np.float64, np.bool_]
)
def test_expect_eq_types(dtype):
    check = CheckModule()
    a = np.array([[1, 0, 1], [1, 1, 0]]).astype(dtype)
    check.expect_eq(DEVICE, view(a), view(a.copy()))
    b = a.copy()
    b[1, 2] = 1 if dtype is np.bool_ else 5
    fails(check.expect_eq, DEVICE, view(a), view(b))
    assert check.calls["expect_eq"] == 2


def test_expect_eq_message_shows_contents():
    check = CheckModule()
    msg = fails(check.expect_eq, DEVICE, view(np.array([[1, 2, 3], [4, 5, 6]], np.int32)),
                view(np.array([[1, 2, 3], [4, 5, 7]], np.int32)))
    assert msg == (
        "Expected equality of these values. Contents does not match.\n"
        "  lhs:\n    2x3xi32=[1 2 3][4 5 6]\n"
        "  rhs:\n    2x3xi32=[1 2 3][4 5 7]"
    )


def test_expect_eq_type_and_shape_mismatch():
    check = CheckModule()
    msg = fails(check.expect_eq, DEVICE, view(np.array([1, 2], np.int32)),
                view(np.array([1, 2], np.int32), element_type=et.SINT_32))
    assert "Element types do not match." in msg and "Shapes" not in msg
    msg = fails(check.expect_eq, DEVICE, view(np.arange(6, dtype=np.int32)),
                view(np.arange(6, dtype=np.int32).reshape(2, 3)))
    assert "Shapes do not match." in msg and "Element types" not in msg
    assert "6xi32=0 1 2 3 4 5" in msg and "2x3xi32=[0 1 2][3 4 5]" in msg
    # Same bytes, different float/int type: not equal.
    bits = np.array([1.0], np.float32)
    fails(check.expect_eq, DEVICE, view(bits), view(bits.view(np.int32)))


def test_expect_eq_rank0_empty_i1_and_packed_i4():
    check = CheckModule()
    check.expect_eq(DEVICE, view(np.array(20, np.int32)), view(np.array(20, np.int32)))
    msg = fails(check.expect_eq, DEVICE, view(np.array(20, np.int32)), view(np.array(21, np.int32)))
    assert "i32=20" in msg and "i32=21" in msg
    check.expect_eq(DEVICE, view(np.zeros((0, 4), np.float32)), view(np.zeros((0, 4), np.float32)))
    # i1 is bool8 (one byte per element): compared bytewise.
    t = np.array([True, False, True])
    check.expect_eq(DEVICE, view(t), view(t.copy()))
    assert view(t).element_type == et.BOOL_8
    msg = fails(check.expect_eq, DEVICE, view(t), view(~t))
    assert "3xi1=01 00 01" in msg
    # i4: 4 elements packed in 2 bytes.
    check.expect_eq(DEVICE, raw_view(b"\x21\x43", [4], et.INT_4), raw_view(b"\x21\x43", [4], et.INT_4))
    fails(check.expect_eq, DEVICE, raw_view(b"\x21\x43", [4], et.INT_4), raw_view(b"\x21\x44", [4], et.INT_4))


def test_expect_eq_const_convenience():
    check = CheckModule()
    check.expect_eq_const(DEVICE, view(np.array([1, 2], np.int32)), [1, 2])
    fails(check.expect_eq_const, DEVICE, view(np.array([1, 2], np.int32)), [1, 3])
    check.expect_almost_eq_const(DEVICE, view(np.array([1.0], np.float32)), [1.00005])
    assert check.calls == {"expect_eq": 2, "expect_almost_eq": 1}


# --------------------------------------------------------------------------- expect_almost_eq


def test_almost_eq_default_tolerance():
    check = CheckModule()
    a = view(np.array([1.0, 2.0], np.float32))
    check.expect_almost_eq(DEVICE, a, view(np.array([1.00009, 2.0], np.float32)),
                           check_mod.DEFAULT_ATOL, check_mod.DEFAULT_RTOL)
    msg = fails(check.expect_almost_eq, DEVICE, a, view(np.array([1.0, 2.0002], np.float32)),
                check_mod.DEFAULT_ATOL, 0.0)
    assert msg.startswith(
        "Expected near equality of these values. Contents does not match to tolerance "
        "parameters atol=0.0001, rtol=0. The first failure occurs at index 1 as the lhs "
        "value 2 differs from the rhs value 2.0002 by 0.000200033."
    )
    assert "\n  lhs:\n    2xf32=1 2\n  rhs:\n    2xf32=1 2.0002" in msg


def test_almost_eq_rtol_uses_rhs_as_expected():
    check = CheckModule()
    # |100 - 110| = 10 <= 0 + 0.1 * 110 = 11 but not <= 0.1 * 100 = 10... (= 10: passes too)
    check.expect_almost_eq(DEVICE, view(np.float32([100.0])), view(np.float32([110.0])), 0.0, 0.1)
    # |100 - 90| = 10 > 0.1 * 90 = 9: fails; swapped it passes (not symmetric).
    fails(check.expect_almost_eq, DEVICE, view(np.float32([100.0])), view(np.float32([90.0])), 0.0, 0.1)
    check.expect_almost_eq(DEVICE, view(np.float32([90.0])), view(np.float32([99.0])), 0.0, 0.1)


def test_almost_eq_special_values():
    check = CheckModule()
    nan, inf = math.nan, math.inf

    def ok(a, b):
        check.expect_almost_eq(DEVICE, view(np.float32(a)), view(np.float32(b)), 1e-4, 0.0)

    def bad(a, b):
        fails(check.expect_almost_eq, DEVICE, view(np.float32(a)), view(np.float32(b)), 1e-4, 0.0)

    ok([nan, inf, -inf, 0.0], [nan, inf, -inf, -0.0])
    bad([1.0], [nan])
    bad([nan], [1.0])
    bad([inf], [-inf])
    bad([1e30], [inf])
    bad([inf], [1e30])


@pytest.mark.parametrize("kind", ["f16", "bf16", "f64"])
def test_almost_eq_other_float_types(kind):
    check = CheckModule()
    values = [0.5, -1.25, 3.0]
    near = [0.50004, -1.25, 3.0]
    far = [0.5, -1.0, 3.0]
    if kind == "f16":
        mk = lambda v: view(np.array(v, np.float16))
        near = [0.5, -1.25, 3.0]
    elif kind == "bf16":
        mk = lambda v: raw_view(bf16(v).tobytes(), [len(v)], et.BFLOAT_16)
        near = [0.5, -1.25, 3.0]
    else:
        mk = lambda v: view(np.array(v, np.float64))
    check.expect_almost_eq(DEVICE, mk(values), mk(near), 1e-4, 0.0)
    msg = fails(check.expect_almost_eq, DEVICE, mk(values), mk(far), 1e-4, 0.0)
    assert "index 1" in msg and "lhs value -1.25 differs from the rhs value -1 by 0.25" in msg
    assert f"3x{kind}=0.5 -1.25 3" in msg


def test_f8_and_bf16_decoding_matches_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    raw = np.arange(256, dtype=np.uint8)
    for element_type, name in [
        (et.FLOAT_8_E5M2, "float8_e5m2"),
        (et.FLOAT_8_E4M3FN, "float8_e4m3fn"),
        (et.FLOAT_8_E5M2_FNUZ, "float8_e5m2fnuz"),
        (et.FLOAT_8_E4M3_FNUZ, "float8_e4m3fnuz"),
        (et.FLOAT_8_E8M0_FNU, "float8_e8m0fnu"),
    ]:
        ours = check_mod.float_values(raw, element_type)
        theirs = raw.view(getattr(ml_dtypes, name)).astype(np.float64)
        np.testing.assert_array_equal(ours, theirs, err_msg=name)
    bits = np.arange(0, 65536, 37, dtype=np.uint16)
    ours = check_mod.float_values(bits.view(np.uint8), et.BFLOAT_16)
    with np.errstate(invalid="ignore"):
        theirs = bits.view(ml_dtypes.bfloat16).astype(np.float64)
    np.testing.assert_array_equal(ours, theirs)


def test_almost_eq_f8():
    check = CheckModule()
    # f8E4M3FN: 0x38 = 1.0, 0x39 = 1.125
    a = raw_view(b"\x38\x39", [2], et.FLOAT_8_E4M3FN)
    check.expect_almost_eq(DEVICE, a, raw_view(b"\x38\x39", [2], et.FLOAT_8_E4M3FN), 1e-4, 0.0)
    check.expect_almost_eq(DEVICE, a, raw_view(b"\x38\x38", [2], et.FLOAT_8_E4M3FN), 0.2, 0.0)
    msg = fails(check.expect_almost_eq, DEVICE, a, raw_view(b"\x38\x38", [2], et.FLOAT_8_E4M3FN), 1e-4, 0.0)
    assert "2xf8E4M3FN=1 1.125" in msg


def test_almost_eq_mismatched_types_shapes_and_unsupported():
    check = CheckModule()
    msg = fails(check.expect_almost_eq, DEVICE, view(np.float32([1, 2])), view(np.float64([1, 2])), 1e-4, 0.0)
    assert msg.startswith("Expected near equality of these values. Element types do not match.")
    msg = fails(check.expect_almost_eq, DEVICE, view(np.float32([1, 2])), view(np.float32([[1, 2]])), 1e-4, 0.0)
    assert "Shapes do not match." in msg
    with pytest.raises(VMError) as info:
        check.expect_almost_eq(DEVICE, view(np.int32([1])), view(np.int32([1])), 1e-4, 0.0)
    assert info.value.code == StatusCode.INVALID_ARGUMENT
    assert "unsupported element type" in info.value.message


def test_bad_arguments_are_invalid_argument():
    check = CheckModule(raise_on_failure=False)
    for call in (
        lambda: check.expect_eq(DEVICE, None, view([1])),
        lambda: check.expect_eq(None, view([1]), view([1])),
        lambda: check.expect_almost_eq(DEVICE, view([1.0]), "x", 0.0, 0.0),
        lambda: check.expect_all_true(DEVICE, None),
    ):
        with pytest.raises(VMError) as info:
            call()
        assert info.value.code == StatusCode.INVALID_ARGUMENT


# --------------------------------------------------------------------------- expect_all_true


def test_expect_all_true():
    check = CheckModule()
    for dtype in (np.int8, np.uint16, np.int32, np.int64, np.float32, np.float64, np.bool_):
        check.expect_all_true(DEVICE, view(np.array([1, 2, 1]).astype(dtype)))
        msg = fails(check.expect_all_true, DEVICE, view(np.array([1, 0, 1]).astype(dtype)))
        assert msg.startswith("Expected all true values")
    check.expect_all_true(DEVICE, view(np.float32([math.nan])))  # NaN != 0
    fails(check.expect_all_true, DEVICE, view(np.float32([-0.0])))
    with pytest.raises(VMError) as info:
        check.expect_all_true(DEVICE, view(np.float16([1.0])))
    assert info.value.code == StatusCode.INVALID_ARGUMENT
    assert check.calls["expect_all_true"] == 17


# --------------------------------------------------------------------------- formatting


def test_format_buffer_view():
    fmt = check_mod.format_buffer_view
    assert fmt(view(np.float32([[1.5, -2], [1e-8, np.inf]]))) == "2x2xf32=[1.5 -2][1E-08 INF]"
    assert fmt(view(np.array(5, np.int64))) == "i64=5"
    assert fmt(view(np.zeros((2, 0), np.float32))) == "2x0xf32=[][]"
    assert fmt(view(np.uint8([255, 0]), element_type=et.UINT_8)) == "2xui8=255 0"
    assert fmt(view(np.uint8([255, 0]))) == "2xi8=-1 0"
    assert fmt(view(np.float32([[1, 2, 3], [4, 5, 6]])), 4) == "2x3xf32=[1 2 3][4...]"
    big = fmt(view(np.zeros(2000, np.int32)))
    data = big.split("=", 1)[1].split(" ")
    assert len(data) == 1024 and data[-1] == "0..."


# --------------------------------------------------------------------------- oracle agreement


def _cases():
    f32 = lambda v: (np.float32(v).tobytes(), [len(v)], et.FLOAT_32)
    f16 = lambda v: (np.float16(v).tobytes(), [len(v)], et.FLOAT_16)
    bfl = lambda v: (bf16(v).tobytes(), [len(v)], et.BFLOAT_16)
    i32 = lambda v: (np.int32(v).tobytes(), [len(v)], et.INT_32)
    i8 = lambda v: (np.int8(v).tobytes(), [len(v)], et.INT_8)
    b8 = lambda v: (np.bool_(v).tobytes(), [len(v)], et.BOOL_8)
    f8 = lambda b: (bytes(b), [len(b)], et.FLOAT_8_E5M2_FNUZ)
    nan, inf = math.nan, math.inf
    eq = [
        (i32([1, 2, 3]), i32([1, 2, 3])),
        (i32([1, 2, 3]), i32([1, 2, 4])),
        (i8([1, -2]), i8([1, -2])),
        (b8([True, False]), b8([True, True])),
        (f32([1.0]), i32([1065353216])),
        ((np.int32([1, 2]).tobytes(), [1, 2], et.INT_32), i32([1, 2])),
        ((b"\x21\x43", [4], et.INT_4), (b"\x21\x43", [4], et.INT_4)),
        ((b"\x21\x43", [4], et.INT_4), (b"\x21\x53", [4], et.INT_4)),
    ]
    almost = [
        (f32([1.0, 2.0]), f32([1.00009, 2.0]), 1e-4, 0.0),
        (f32([1.0, 2.0]), f32([1.0002, 2.0]), 1e-4, 0.0),
        (f32([100.0]), f32([90.0]), 0.0, 0.1),
        (f32([90.0]), f32([99.0]), 0.0, 0.1),
        (f32([nan, inf, -inf]), f32([nan, inf, -inf]), 1e-4, 0.0),
        (f32([1.0]), f32([nan]), 1e-4, 0.0),
        (f32([inf]), f32([1e30]), 1e-4, 0.0),
        (f32([1e30]), f32([inf]), 1e-4, 0.0),
        (f16([0.1, 0.2]), f16([0.1, 0.2001]), 1e-4, 0.0),
        (f16([0.1, 0.2]), f16([0.1, 0.25]), 1e-2, 0.0),
        (bfl([1.0, 3.0]), bfl([1.0, 3.01]), 1e-4, 0.0),
        (bfl([1.0, 3.0]), bfl([1.0, 3.01]), 0.02, 0.0),
        (f8([0x40, 0x44]), f8([0x40, 0x45]), 1e-4, 0.0),
        (f8([0x40, 0x80]), f8([0x40, 0x80]), 1e-4, 0.0),
        (f32([1.0]), f32([1.0, 1.0]), 1e-4, 0.0),
    ]
    return eq, almost


def test_agreement_with_oracle():
    rt = pytest.importorskip("iree.runtime")
    oracle_mod = pytest.importorskip("iree_check_oracle")
    device = rt.get_device("local-sync")

    def iree_view(data, shape, element_type):
        buf = device.allocator.allocate_buffer_copy(
            memory_type=rt.MemoryType.DEVICE_LOCAL,
            allowed_usage=rt.BufferUsage.DEFAULT | rt.BufferUsage.MAPPING,
            device=device,
            buffer=np.frombuffer(data, np.uint8) if data else np.zeros(1, np.uint8),
        )
        return rt.HalBufferView(buf, shape, element_type)

    eq, almost = _cases()
    outcomes = []
    for lhs, rhs in eq:
        oracle, ours = oracle_mod.IreeCheckOracle(), CheckModule(raise_on_failure=False)
        oracle.expect_eq(None, iree_view(*lhs).ref, iree_view(*rhs).ref)
        ours.expect_eq(DEVICE, raw_view(*lhs), raw_view(*rhs))
        assert bool(oracle.failures) == bool(ours.failures), (lhs, rhs, oracle.failures, ours.failures)
        outcomes.append(bool(ours.failures))
    for lhs, rhs, atol, rtol in almost:
        atol, rtol = float(np.float32(atol)), float(np.float32(rtol))
        oracle, ours = oracle_mod.IreeCheckOracle(), CheckModule(raise_on_failure=False)
        oracle.expect_almost_eq(None, iree_view(*lhs).ref, iree_view(*rhs).ref, atol, rtol)
        ours.expect_almost_eq(DEVICE, raw_view(*lhs), raw_view(*rhs), atol, rtol)
        assert bool(oracle.failures) == bool(ours.failures), (lhs, rhs, oracle.failures, ours.failures)
        if oracle.failures and "index" in oracle.failures[0]:
            index = re.search(r"index (\d+)", oracle.failures[0]).group(1)
            assert f"at index {index} " in ours.failures[0]
        outcomes.append(bool(ours.failures))
    assert outcomes.count(True) >= 8 and outcomes.count(False) >= 8
