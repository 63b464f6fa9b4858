"""Exports whose calling convention disagrees with how they are called.

* A lifecycle hook (`__init`, `__deinit`) is called by the runtime with no arguments. A
  file whose `__init` declares one (its cconv patched from `0v_v` to `0i_v`) made `load()`
  end in a Python TypeError; the translator now rejects it in one line. (IREE's context
  calls the hook with an empty argument buffer and reads past it.)
* `ctx.call_vm(name, *args)` with a count other than the export's cconv is
  INVALID_ARGUMENT, as IREE's invoke answers (it raised TypeError).
"""

from __future__ import annotations

import pytest

from helpers_compile import LLVM_CPU_FLAGS
from hostile_util import load_package, translate
from runtime_support.errors import StatusCode, VMError

PROGRAM = """
util.global private mutable @count = 7 : i32

func.func @bump(%x: i32) -> i32 {
  %v = util.global.load @count : i32
  %s = arith.addi %v, %x : i32
  util.global.store %s, @count : i32
  return %s : i32
}
"""


@pytest.fixture(scope="module")
def vmfb(compile_mlir, tmp_path_factory):
    src = tmp_path_factory.mktemp("arity") / "arity.mlir"
    src.write_text(PROGRAM)
    return compile_mlir(src, LLVM_CPU_FLAGS)


def test_lifecycle_export_with_arguments_is_rejected(vmfb, tmp_path):
    from translator.reader import read_module

    data = vmfb.read_bytes()
    module = read_module(data)
    init = next(e for e in module.exports if e.local_name == "__init")
    assert module.signatures[init.internal_ordinal].calling_convention == "0v_v"
    # Every `0v_v` signature (the hook's among them) becomes `0i_v`: same length, and the
    # function bodies stay consistent with their new cconv.
    needle = b"\x04\x00\x00\x000v_v"
    assert needle in data
    bad = tmp_path / "bad.vmfb"
    bad.write_bytes(data.replace(needle, b"\x04\x00\x00\x000i_v"))
    assert read_module(bad.read_bytes()).signatures[init.internal_ordinal].calling_convention == "0i_v"
    res = translate(bad, tmp_path / "out", "m")
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert lines[0].startswith("pyree-translate: error: ")
    assert "export __init has calling convention '0i_v'" in lines[0], lines[0]


def test_call_vm_with_the_wrong_argument_count(vmfb, tmp_path):
    res = translate(vmfb, tmp_path / "out", "m")
    assert res.returncode == 0, res.stderr
    ctx = load_package(tmp_path / "out" / "m").load(device="local-sync")
    assert ctx.call_vm("bump", 5) == 12
    for args in ((), (1, 2)):
        with pytest.raises(VMError) as info:
            ctx.call_vm("bump", *args)
        assert info.value.code == StatusCode.INVALID_ARGUMENT
        assert f"takes 1 arguments, got {len(args)}" in str(info.value)
        assert "\n" not in str(info.value)
    assert ctx.call_vm("bump", 1) == 13  # the context is unharmed


def test_memory_error_in_a_call_is_resource_exhausted(vmfb, tmp_path):
    """Running out of memory where no limit check foresaw it is RESOURCE_EXHAUSTED naming
    the export, never a MemoryError traceback."""
    res = translate(vmfb, tmp_path / "out", "m")
    assert res.returncode == 0, res.stderr

    def greedy(x):
        raise MemoryError()

    ctx = load_package(tmp_path / "out" / "m").load(device="local-sync")
    ctx._vm_exports["bump"] = greedy
    with pytest.raises(VMError) as info:
        ctx.call_vm("bump", 1)
    assert info.value.code == StatusCode.RESOURCE_EXHAUSTED
    assert "'bump'" in str(info.value)
