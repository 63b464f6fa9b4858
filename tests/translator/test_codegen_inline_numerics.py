"""The inline forms generated code uses for simple numeric ops
(`runtime_support.vm.numerics.INLINE`) equal the runtime functions they stand for, on edge
values of every operand bank: wrapping bounds, signedness, shift amounts past the width,
NaN and signed zeros, null and distinct refs. The translator's op lowering reads the same
table, so a form that drifts from its function fails here."""

from __future__ import annotations

import itertools
import math
import struct

import pytest

from runtime_support.vm import numerics
from translator.isa import BY_MNEMONIC

I32 = (0, 1, -1, 2, 7, 31, 32, 33, 63, 64, 65, 0xFF, 0x100, 0xFFFF, 0x10000, -0x80, -0x8000,
       2**31 - 1, -(2**31), -(2**31) + 1, 0x55555555, -0x55555556)  # fmt: skip
I64 = I32 + (2**32 - 1, 2**32, -(2**32), 2**63 - 1, -(2**63), -(2**63) + 1, 0x5555555555555555)
F = (0.0, -0.0, 1.0, -1.5, math.inf, -math.inf, math.nan, numerics.NEG_NAN, 3.4028234663852886e38, 1e-45)
REFS = (None, object(), object())
VALUES = {"i32": I32, "i64": I64, "f32": F, "f64": F, "ref": REFS}


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("mnemonic", sorted(numerics.INLINE))
def test_inline_form_equals_the_runtime_function(mnemonic):
    spec = BY_MNEMONIC[mnemonic]
    operands = [f for f in spec.fields if not f.write]
    assert all(f.is_register for f in operands), mnemonic
    code = compile(numerics.INLINE[mnemonic].format(**{f.name: f.name for f in operands}), mnemonic, "eval")
    fn = numerics.OPS[mnemonic]
    checked = 0
    for args in itertools.product(*(VALUES[f.bank] for f in operands)):
        expected = fn(*args)
        got = eval(code, {}, {f.name: a for f, a in zip(operands, args)})
        assert _same(got, expected), (mnemonic, args, got, expected)
        checked += 1
    assert checked >= len(REFS)


def test_every_inline_form_is_a_numeric_op_the_translator_lowers():
    from translator.codegen.ops import NUMERIC_INLINE

    assert NUMERIC_INLINE is numerics.INLINE
    assert set(numerics.INLINE) <= set(numerics.OPS)


def _kernel_forms():
    from runtime_support.vm import numerics_ftz

    return sorted(set(numerics_ftz.INLINE) - set(numerics.INLINE))


@pytest.mark.parametrize("mnemonic", _kernel_forms())
def test_kernel_inline_form_equals_the_kernel_function(mnemonic):
    """VMVX kernels' extra inline forms (numerics_ftz.INLINE: wrapping integer arithmetic)
    equal numerics_ftz's functions, as the host forms equal numerics.py's."""
    from runtime_support.vm import numerics_ftz

    spec = BY_MNEMONIC[mnemonic]
    operands = [f for f in spec.fields if not f.write]
    assert all(f.is_register for f in operands), mnemonic
    code = compile(numerics_ftz.INLINE[mnemonic].format(**{f.name: f.name for f in operands}), mnemonic, "eval")
    fn = numerics_ftz.OPS[mnemonic]
    for args in itertools.product(*(VALUES[f.bank] for f in operands)):
        got = eval(code, {}, {f.name: a for f, a in zip(operands, args)})
        assert _same(got, fn(*args)), (mnemonic, args)


def test_kernel_forms_extend_the_host_forms():
    from runtime_support.vm import numerics_ftz

    assert {k: v for k, v in numerics_ftz.INLINE.items() if k in numerics.INLINE} == numerics.INLINE
    assert set(_kernel_forms()) == {f"{op}.{t}" for op in ("add", "sub", "mul", "fma") for t in ("i32", "i64")}
