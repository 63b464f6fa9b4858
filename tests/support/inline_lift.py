"""Rewrites an e2e test module so that `--iree-execution-model=inline-dynamic` can compile it.

IREE 3.13 cannot lower `check.*` ops on tensors in the inline execution model (the check
imports take a `!hal.device`, which that model does not have: "failed to legalize
unresolved source materialization from !hal.buffer_view"), nor constant-pool subspans
behind `util.unfoldable_constant` ("failed to legalize operation 'util.buffer.subspan'").
So, per test function (public, no arguments, no results):

* every `util.unfoldable_constant` / `flow.tensor.dynamic_constant` becomes a function
  argument, and its literal becomes the value the runner passes at run time (still
  unfoldable: the compiler never sees it);
* every `check.*` call is removed and its operands (the `_const` forms' literal becomes an
  `arith.constant`) become extra results; the runner applies the check to the results
  on the host, for IREE's run and for pyree's alike.

Optionally `util.optimization_barrier` ops are dropped (`barriers=False`): some programs put
one on a compile-time-evaluated tensor, which hits the same subspan limitation. Functions
whose checks are not in straight-line code of the function body are reported, not lifted.

Uses the MLIR Python bindings of the pinned compiler (test-only code).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

CONST_OPS = ("util.unfoldable_constant", "flow.tensor.dynamic_constant")
DEFAULT_ATOL, DEFAULT_RTOL = 1e-4, 0.0  # CheckOps.td defaults (hal-abi.md §F)


@dataclass
class Input:
    mlir_type: str  # the argument's type as the function declares it
    static_type: str  # the literal's own (static) type, e.g. "tensor<4x4xi32>" or "index"
    shape: tuple[int, ...] | None  # None for a scalar
    data: bytes  # dense row-major contents (tensors)
    scalar: int | float | None = None


@dataclass
class Check:
    kind: str  # expect_true | expect_false | expect_all_true | expect_eq | expect_almost_eq
    # Its operands (lhs, rhs): a result index of the lifted function, or a literal (the
    # expected value of a `_const` form or of an `arith.constant` operand).
    results: list[int | Input]
    location: str
    atol: float = DEFAULT_ATOL
    rtol: float = DEFAULT_RTOL


@dataclass
class LiftedTest:
    inputs: list[Input] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    result_types: list[str] = field(default_factory=list)
    error: str | None = None  # why the test could not be lifted


def _literal(ir, attr) -> Input:
    static_type = str(attr.type)
    if not isinstance(attr.type, ir.ShapedType):
        if isinstance(attr.type, ir.FloatType):
            return Input(static_type, static_type, None, b"", scalar=ir.FloatAttr(attr).value)
        return Input(static_type, static_type, None, b"", scalar=ir.IntegerAttr(attr).value)
    dense = ir.DenseElementsAttr(attr)
    shape = tuple(ir.RankedTensorType(dense.type).shape)
    element = str(ir.RankedTensorType(dense.type).element_type)
    array = np.array(dense)
    if _storage_bits(element) != array.dtype.itemsize * 8:
        # f8/f4/sub-byte literals: the bindings' numpy view is not IREE's storage layout.
        raise ValueError(f"no byte-exact numpy form for {element} literals")
    if array.shape != shape:  # a splat comes back as one element
        array = np.broadcast_to(array.reshape(-1)[:1].reshape(()), shape)
    return Input(static_type, static_type, shape, np.ascontiguousarray(array).tobytes())


def _storage_bits(element: str) -> int | None:
    """Bits per element in IREE's dense storage for the element types numpy holds
    byte-exactly (None for the others: f8, f4, sub-byte integers, ...)."""
    if element == "i1":
        return 8
    m = re.fullmatch(r"[su]?i(8|16|32|64)|f(16|32|64)|(bf16)|complex<f(32|64)>", element)
    if not m:
        return None
    if m.group(3):
        return 16
    if m.group(4):
        return 2 * int(m.group(4))
    return int(m.group(1) or m.group(2))


def _constant_literal(ir, value) -> Input | None:
    """The literal of a check operand defined by `arith.constant` (IREE 3.13's inline model
    cannot return a constant tensor: "source_buffer is null"), else None."""
    owner = value.owner
    if not hasattr(owner, "name") or owner.name != "arith.constant":
        return None
    if not isinstance(value.type, ir.ShapedType):
        return None
    try:
        return _literal(ir, owner.attributes["value"])
    except Exception:
        return None


def _walk(op, visit, depth=0):
    for region in op.regions:
        for block in region.blocks:
            for inner in list(block.operations):
                if visit(inner.operation, depth) is not False:
                    _walk(inner.operation, visit, depth + 1)


def _is_scalar_check(op) -> bool:
    """`check.expect_true/false` on an integer: lowers fine in the inline model, so one
    inside a region stays a real check call (pyree's `check` module runs it)."""
    return op.name in ("check.expect_true", "check.expect_false")


def _drop_barriers(module) -> None:
    def visit(op, depth):
        if op.name == "util.optimization_barrier":
            for res, operand in zip(op.results, op.operands):
                res.replace_all_uses_with(operand)
            op.erase()
            return False
        return True

    _walk(module.operation, visit)


def lift(text: str, *, barriers: bool = True) -> tuple[str, dict[str, LiftedTest]]:
    """(rewritten MLIR, {test function: LiftedTest})."""
    from iree.compiler import ir

    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    module = ir.Module.parse(text, ctx)
    if not barriers:
        _drop_barriers(module)
    tests: dict[str, LiftedTest] = {}
    unliftable = []
    with ctx, ir.Location.unknown(ctx):
        for func in module.body.operations:
            op = func.operation
            if op.name != "func.func" or not op.regions[0].blocks:
                continue
            attrs = op.attributes
            if "sym_visibility" in attrs and ir.StringAttr(attrs["sym_visibility"]).value != "public":
                continue
            ftype = ir.FunctionType(ir.TypeAttr(attrs["function_type"]).value)
            if len(ftype.inputs) or len(ftype.results):
                continue
            name = ir.StringAttr(attrs["sym_name"]).value
            tests[name] = _lift_function(ir, op)
            if tests[name].error:
                unliftable.append(op)
        # A test left as written would keep tensor checks the inline model cannot
        # compile: drop it from the module (the runner reports it as not lifted).
        for op in unliftable:
            op.erase()
    return str(module), tests


def _lift_function(ir, func) -> LiftedTest:
    test = LiftedTest()
    blocks = list(func.regions[0].blocks)
    entry = blocks[0]
    consts, nested_checks = [], []

    def visit(op, depth):
        if op.name.startswith("check.") and depth > 0 and not _is_scalar_check(op):
            nested_checks.append(op)
        if op.name in CONST_OPS:
            consts.append(op)
        return True

    _walk(func, visit)
    if nested_checks or len(blocks) != 1:
        test.error = "check calls are not in straight-line code of the test function"
        return test
    literals = []
    for op in consts:  # all literals first: a function is rewritten whole or not at all
        value = op.attributes["value"]
        try:
            literals.append(_literal(ir, value))
        except Exception as e:  # a literal numpy cannot hold (e.g. dense_resource, f8)
            test.error = f"cannot pass {op.name} literal of type {value.type} ({e})"
            return test
    for op, literal in zip(consts, literals):
        result = op.results[0]
        literal.mlir_type = str(result.type)
        arg = entry.add_argument(result.type, ir.Location.unknown())
        result.replace_all_uses_with(arg)
        op.erase()
        test.inputs.append(literal)

    results, ret = [], None
    for inner in list(entry.operations):
        op = inner.operation
        if op.name == "func.return":
            ret = op
        if not op.name.startswith("check."):
            continue
        kind = op.name[len("check.") :]
        attrs = {k: op.attributes[k] for k in op.attributes}
        operands: list = []
        for value in op.operands:
            literal = _constant_literal(ir, value)
            if literal is not None:
                operands.append(literal)
            else:
                operands.append(len(results))
                results.append(value)
        if kind.endswith("_const"):
            operands.append(_literal(ir, attrs["value"]))
            kind = kind[: -len("_const")]
        check = Check(kind, operands, str(op.location))
        if kind == "expect_almost_eq":
            if "atol" in attrs:
                check.atol = ir.FloatAttr(attrs["atol"]).value
            if "rtol" in attrs:
                check.rtol = ir.FloatAttr(attrs["rtol"]).value
        test.checks.append(check)
        op.erase()
    if ret is None:
        test.error = "test function has no func.return"
        return test
    with ir.InsertionPoint(ret):
        ir.Operation.create("func.return", operands=list(ret.operands) + results)
    ret.erase()
    func.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([a.type for a in entry.arguments], [v.type for v in results])
    )
    test.result_types = [str(v.type) for v in results]
    return test
