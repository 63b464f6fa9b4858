"""translator/analyses/ref_globals.py: a ref-global load skips its type check only when
every store that can reach its slot has the same type (or the load takes any ref)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from runtime_support.errors import VMError
from runtime_support.hal.fence import Fence
from runtime_support.vm.globals import RefGlobals, global_load_ref, global_store_ref
from translator.analyses.ref_globals import unchecked_ref_loads
from translator.ir import Block, Function, Op, Reg
from translator.isa import BY_MNEMONIC

TYPES = ("!hal.buffer", "!hal.fence", "!vm.ref<?>", "!vm.ref<!hal.buffer>")
BUFFER, FENCE, ANY, BUFFER_SPELLED = range(4)


def op(mnemonic: str, slot, type_def: int) -> Op:
    values = {"global": slot, "type_def": type_def, "value": Reg(0x8000, "ref")}
    return Op(0, 0, BY_MNEMONIC[mnemonic], values)


def analyse(*ops: Op) -> frozenset:
    fn = Function(0, "f", [Block(0, 0, list(ops))], 0)
    return unchecked_ref_loads(SimpleNamespace(types=TYPES), [fn])


def test_load_of_the_stored_type_is_unchecked():
    got = analyse(op("global.store.ref", 0, BUFFER), op("global.load.ref", 0, BUFFER_SPELLED))
    assert got == {(0, BUFFER_SPELLED)}  # `!vm.ref<!hal.buffer>` is `!hal.buffer`


def test_never_stored_slot_and_wildcard_loads_are_unchecked():
    got = analyse(
        op("global.store.ref", 1, FENCE), op("global.load.ref", 0, FENCE), op("global.load.ref", 1, ANY)
    )
    assert got == {(0, FENCE), (1, ANY)}


def test_other_stored_types_keep_the_check():
    assert analyse(op("global.store.ref", 0, FENCE), op("global.load.ref", 0, BUFFER)) == set()
    # a wildcard store may leave anything in the slot
    assert analyse(op("global.store.ref", 0, ANY), op("global.load.ref", 0, BUFFER)) == set()
    # an indirect store may reach every slot
    got = analyse(
        op("global.store.ref", 0, BUFFER),
        op("global.store.indirect.ref", Reg(1, "i32"), FENCE),
        op("global.load.ref", 0, BUFFER),
    )
    assert got == set()


def test_the_runtime_checks_the_analysis_relies_on():
    refs = RefGlobals(2)
    fence = Fence()
    global_store_ref(refs, 0, "!hal.fence", fence)
    assert refs.get(0) is fence and refs.get(1) is None
    with pytest.raises(VMError, match="type mismatch"):
        global_store_ref(refs, 1, "!hal.buffer", fence)  # stores are always checked
    with pytest.raises(VMError, match="type mismatch"):
        global_load_ref(refs, 0, "!hal.buffer")  # and loads the analysis cannot clear
