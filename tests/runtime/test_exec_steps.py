"""The step table (runtime_support/exec/steps.py) against the `hal` module's declarations."""

from __future__ import annotations

import inspect

import pytest

from runtime_support.exec import steps
from runtime_support.hal.module import HalModule
from runtime_support.vm.args import cconv_arguments


@pytest.mark.parametrize("key", sorted(steps.STEPS), ids=lambda k: k[0])
def test_entry_is_the_declaration(key):
    full_name, cconv = key
    entry = steps.STEPS[key]
    assert HalModule.IMPORTS[full_name] == cconv
    method = getattr(HalModule, HalModule.method_name(full_name))
    decl = method.__vm_import__
    assert (decl.full_name, decl.cconv) == (entry.full_name, entry.cconv) == key
    # every field is a real parameter of the method, in its order, and nothing else
    # (but `out`, the name a queue program gives the call's result)
    params = list(inspect.signature(inspect.unwrap(method)).parameters)[1:]
    names = list(entry.cls.__slots__)  # (the class's own fields, after Step's `out`)
    assert names == params == list(entry.params)
    assert len(params) == len(cconv_arguments(cconv))
    assert issubclass(entry.cls, entry.kind) and entry.kind is steps.KINDS[full_name]
    assert entry.cls.IMPORT == full_name and entry.cls.CCONV == cconv


def test_every_kind_is_in_the_table():
    assert set(steps.KINDS) == {name for name, _ in steps.STEPS}
    assert steps.lookup("hal.fence.create", "0rI_r").kind is steps.NewFence
    assert steps.lookup("hal.fence.create", "0ri_r") is None  # another cconv: not a step


def test_bind_spans_by_segments():
    entry = steps.lookup("hal.command_buffer.dispatch", HalModule.IMPORTS["hal.command_buffer.dispatch"])
    ops = [f"o{i}" for i in range(7 + 1 + 10)]
    fields = entry.bind(ops, [0xFFFF] * 7 + [1, 2])
    assert fields["command_buffer"] == "o0" and fields["workgroup_z"] == "o5"
    assert fields["constants"] == ("o7",)
    assert fields["bindings"] == (tuple(ops[8:13]), tuple(ops[13:18]))
    step = entry.cls(**fields)
    assert isinstance(step, steps.Dispatch) and step.flags == "o6"
    with pytest.raises(ValueError):
        entry.bind(ops[:-1], [0xFFFF] * 7 + [1, 2])
    with pytest.raises(AttributeError):
        step.flags = 1
    # records compared and hashed by their fields; every field required, no other
    same = entry.cls(**fields)
    assert same == step and hash(same) == hash(step) and same != entry.cls(**fields, out="x")
    assert "flags='o6'" in repr(step)
    with pytest.raises(TypeError):
        entry.cls(**{k: v for k, v in fields.items() if k != "flags"})
    with pytest.raises(TypeError):
        entry.cls(**fields, colour=1)
