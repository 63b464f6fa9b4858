"""Translate-time ownership facts of an export (translator/analyses/ownership.py): which
results come back zero-copy and which argument copies the next call may refill.

Each case is a small function of VM ops: a result is fresh only when it is one view this
call created over one buffer this call allocated, stored nowhere and returned once; an
argument is unkept only when neither it nor its buffer is stored, returned (a tied
operand), passed on to a function that may keep it, or held by queue work whose fence
outlives the call. Then a package: zero-copy results stay valid while later calls run.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from translator.analyses.ownership import export_ownership
from translator.cconv import parse_cconv
from translator.ir import IMPORT_BIT, REF_BIT, Block, Function, Op, Reg
from translator.isa import BY_MNEMONIC

IMPORTS = {
    "hal.device.queue.alloca": "0rIrrIiiII_r",
    "hal.buffer_view.create": "0rIIiiCID_r",
    "hal.buffer_view.buffer": "0r_r",
    "hal.buffer.subspan": "0rII_r",
    "hal.fence.create": "0rI_r",
    "hal.fence.await": "0iICrD_i",
    "hal.device.queue.copy": "0rIrrrIrIIi_v",
}
ORDINAL = {name: i for i, name in enumerate(IMPORTS)}
MODULE = SimpleNamespace(
    imports=[
        SimpleNamespace(full_name=name, optional=False, signature=SimpleNamespace(calling_convention=cc))
        for name, cc in IMPORTS.items()
    ]
)


def r(n: int) -> Reg:
    return Reg(REF_BIT | n)


def i(n: int) -> Reg:
    return Reg(n)


class Ops:
    """A straight-line function built op by op (one block)."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def _op(self, mnemonic: str, **values) -> None:
        self.ops.append(Op(len(self.ops) * 8, 8, BY_MNEMONIC[mnemonic], values))

    def call(self, name: str, operands, results=()) -> None:
        self._op("call", callee_ordinal=IMPORT_BIT | ORDINAL[name], operands=tuple(operands),
                 results=tuple(results))

    def internal(self, operands) -> None:
        self._op("call", callee_ordinal=0, operands=tuple(operands), results=())

    def alloca(self, out: int) -> None:  # device r9, fences null
        self.call("hal.device.queue.alloca", [r(9), i(0), r(10), r(10), i(0), i(0), i(0), i(0), i(0)], [r(out)])

    def view(self, out: int, buffer: int) -> None:
        self.call("hal.buffer_view.create", [r(buffer), i(0), i(0), i(0), i(0), i(0)], [r(out)])

    def global_load(self, out: int) -> None:
        self._op("global.load.ref", **{"global": 0, "type_def": 0, "value": r(out)})

    def global_store(self, value: int) -> None:
        self._op("global.store.ref", **{"global": 0, "type_def": 0, "value": r(value)})

    def list_set(self, lst: int, value: int) -> None:
        self._op("list.set.ref", list=r(lst), index=i(0), value=r(value))

    def ret(self, *refs: int) -> Function:
        self._op("return", operands=tuple(r(n) for n in refs))
        return Function(0, "f", [Block(0, 0, self.ops)], len(self.ops) * 8)


def facts(fn: Function, cconv: str):
    return export_ownership(MODULE, fn, parse_cconv(cconv))


def test_a_fresh_alloca_is_returned_zero_copy():
    ops = Ops()
    ops.alloca(5)
    ops.view(6, 5)
    got = facts(ops.ret(6), "0r_r")
    assert got.fresh_results == (0,) and got.unkept_arguments == (0,)


def test_a_global_is_copied():
    ops = Ops()
    ops.global_load(5)
    ops.view(6, 5)
    assert facts(ops.ret(6), "0v_r").fresh_results == ()


def test_a_fresh_buffer_stored_to_a_global_or_a_list_is_copied():
    for store in ("global buffer", "global view", "list"):
        ops = Ops()
        ops.alloca(5)
        ops.view(6, 5)
        if store == "global buffer":
            ops.global_store(5)
        elif store == "global view":
            ops.global_store(6)
        else:
            ops.global_load(7)
            ops.list_set(7, 6)
        assert facts(ops.ret(6), "0v_r").fresh_results == (), store


def test_an_argument_returned_or_tied_is_copied_and_kept():
    ops = Ops()  # returned as is
    got = facts(ops.ret(0), "0r_r")
    assert got.fresh_results == () and got.unkept_arguments == ()
    ops = Ops()  # tied: a new view of the argument's buffer
    ops.call("hal.buffer_view.buffer", [r(0)], [r(5)])
    ops.view(6, 5)
    got = facts(ops.ret(6), "0r_r")
    assert got.fresh_results == () and got.unkept_arguments == ()


def test_returned_twice_is_copied():
    ops = Ops()
    ops.alloca(5)
    ops.view(6, 5)
    assert facts(ops.ret(6, 6), "0v_rr").fresh_results == ()
    ops = Ops()  # two views of one buffer
    ops.alloca(5)
    ops.view(6, 5)
    ops.view(7, 5)
    assert facts(ops.ret(6, 7), "0v_rr").fresh_results == ()
    ops = Ops()  # two buffers: both fresh
    ops.alloca(5)
    ops.alloca(6)
    ops.view(7, 5)
    ops.view(8, 6)
    assert facts(ops.ret(7, 8), "0v_rr").fresh_results == (0, 1)


def test_a_subspan_is_copied():
    ops = Ops()
    ops.alloca(5)
    ops.call("hal.buffer.subspan", [r(5), i(0), i(0)], [r(6)])
    ops.view(7, 6)
    assert facts(ops.ret(7), "0v_r").fresh_results == ()


def test_arguments_passed_on_stored_or_left_to_pending_work_are_kept():
    ops = Ops()
    ops.internal([r(0)])  # an internal function may keep it
    ops.global_store(1)
    ops.call("hal.buffer_view.buffer", [r(2)], [r(5)])
    ops.call("hal.fence.create", [r(9), i(0)], [r(6)])
    ops.call("hal.buffer_view.buffer", [r(3)], [r(8)])
    ops.alloca(11)
    # a queue copy out of argument 2's buffer signalling a fence stored in a global:
    # the copy may still be pending when the call returns
    ops.call("hal.device.queue.copy", [r(9), i(0), r(10), r(6), r(5), i(0), r(11), i(0), i(0), i(0)])
    ops.global_store(6)
    # argument 3's buffer read by a copy whose fence is awaited here: let go
    ops.call("hal.fence.create", [r(9), i(0)], [r(7)])
    ops.call("hal.device.queue.copy", [r(9), i(0), r(10), r(7), r(8), i(0), r(11), i(0), i(0), i(0)])
    ops.call("hal.fence.await", [i(0), i(0), r(7)], [i(1)])
    got = facts(ops.ret(), "0rrrr_v")
    assert got.unkept_arguments == (3,)


def test_zero_copy_results_stay_valid_while_later_calls_run(compile_mlir, tmp_path):
    """A package's fresh results (Export.fresh_results) come back zero-copy, and the
    storage behind each stays its own while later calls run and reuse argument copies
    and recycled buffers."""
    from helpers_compile import LLVM_CPU_FLAGS
    from differential import load_package
    from translator.codegen import write_package
    from translator.reader import read_module_file

    source = """
func.func @mul(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = arith.muli %a, %b : tensor<4xi32>
  return %0 : tensor<4xi32>
}
"""
    src = tmp_path / "own.mlir"
    src.write_text(source)
    vmfb = compile_mlir(src, LLVM_CPU_FLAGS)
    package = load_package(write_package(read_module_file(vmfb), tmp_path / "pkg", "own"))
    assert package._EXPORTS["mul"].fresh_results == (0,)
    ctx = package.load(device="local-sync")
    outs = [ctx.mul(np.full(4, k, np.int32), np.arange(4, dtype=np.int32)) for k in range(40)]
    assert all(not out.flags.owndata for out in outs)
    assert [out.tolist() for out in outs] == [[0, k, 2 * k, 3 * k] for k in range(40)]
    addresses = {out.ctypes.data for out in outs}
    assert len(addresses) == len(outs)  # no two results share storage
