"""Each argument's input checks fused into one call (translator/analyses/arguments.py,
runtime_support/hal/fused.py `check_argument`): what the analysis finds and refuses, the
fast path against the general one (the imports in order) on success and on every error,
and the fused package against the unfused one and iree.runtime."""

from __future__ import annotations

from functools import partial

import dataclasses

import numpy as np
import pytest

from bench.programs import PROGRAM_DIR
from runtime_support.errors import VMError
from runtime_support.hal import HalModule, fused
from runtime_support.hal.buffer import fresh_buffer
from runtime_support.hal.buffer_view import HalBufferView
from runtime_support.hal.device import LocalDevice
from runtime_support.run_cli import import_package_as
from runtime_support.vm.buffer import VMBuffer
from tests.helpers_compile import LLVM_CPU_FLAGS, compile_mlir
from translator.analyses import arguments
from translator.codegen import write_package as _write_package
from translator.pipeline import Pipeline
from translator.reader import read_module_file

# These tests are of the fused mechanisms (`--host-path=fused`), kept until issue #25
# deletes them; the default host path is queue programs (tests/test_queue_programs.py).
write_package = partial(_write_package, host_path="fused")

MUL4 = (PROGRAM_DIR / "mul4.mlir").read_text()
F32 = 0x20000020
DENSE = 1


@pytest.fixture(scope="module")
def vmfb(tmp_path_factory):
    return compile_mlir(MUL4, tmp_path_factory.mktemp("args_vmfb"), LLVM_CPU_FLAGS, "mul4")


@pytest.fixture(scope="module")
def packages(vmfb, tmp_path_factory):
    out = tmp_path_factory.mktemp("args_pkgs")
    return {
        fuse: import_package_as(
            f"_args_test_{fuse}",
            write_package(read_module_file(vmfb), out / str(fuse), "mul4", fuse_submissions=fuse),
        )
        for fuse in (True, False)
    }


def _main(vmfb):
    pipeline = Pipeline(read_module_file(vmfb))
    return pipeline.module, next(fn for fn in pipeline.functions if fn.name == "main")


# -- the analysis ------------------------------------------------------------------------


def test_one_group_per_argument(vmfb):
    module, fn = _main(vmfb)
    found = list(arguments.find(module, fn).values())
    assert len(found) == 2
    assert [g.allocator is not None for g in found] == [True, False]
    for g in found:
        assert g.ops[0] is g.view_assert and g.ops[-1] is g.buffer_assert
        assert g.buffer_assert["operands"][0].ordinal == g.view_buffer["results"][0].ordinal


def _patched(fn, op, **changes):
    """`fn` with `op` replaced by a copy whose values are changed."""
    new = dataclasses.replace(op, values={**op.values, **changes})
    blocks = [
        dataclasses.replace(b, ops=[new if o is op else o for o in b.ops]) for b in fn.blocks
    ]
    return dataclasses.replace(fn, blocks=blocks), new


def test_not_found_when_the_buffer_assert_checks_another_buffer(vmfb):
    module, fn = _main(vmfb)
    g = next(iter(arguments.find(module, fn).values()))
    ops = list(g.buffer_assert["operands"])
    other = g.view_assert["operands"][0]  # the view's register, not the buffer's
    fn2, _ = _patched(fn, g.buffer_assert, operands=[other, *ops[1:]])
    assert g.view_assert.pc not in arguments.find(module, fn2)


def test_not_found_when_buffer_reads_another_view(vmfb):
    module, fn = _main(vmfb)
    g = next(iter(arguments.find(module, fn).values()))
    fn2, _ = _patched(fn, g.view_buffer, operands=[g.view_assert["operands"][1]])
    assert g.view_assert.pc not in arguments.find(module, fn2)


def test_not_found_when_an_op_intervenes(vmfb):
    """A rodata move between that writes a register the group reads (the view): refused."""
    module, fn = _main(vmfb)
    g = next(g for g in arguments.find(module, fn).values() if g.rodata)
    view = g.view_assert["operands"][0]
    fn2, _ = _patched(fn, g.rodata[0], value=view)
    assert g.view_assert.pc not in arguments.find(module, fn2)


def test_generated_code_calls_the_helper(packages):
    text = open(packages[True].__file__).read()
    assert "check_input_allocator(" in text and "check_input(" in text
    assert "# fused: buffer_view.assert, buffer_view.buffer, device.allocator, buffer.assert" in text
    assert "hal_buffer_view_assert(" not in text
    plain = open(packages[False].__file__).read()
    assert "check_input" not in plain and "hal_buffer_view_assert(" in plain


# -- fast path == general path -------------------------------------------------------------


def _outcome(run, args):
    try:
        return ("ok", run(*args))
    except VMError as e:
        return ("error", e.code, str(e))
    except Exception as e:  # noqa: BLE001 (compared, not swallowed)
        return ("raised", type(e).__name__, str(e))


def _cases(device):
    buf = fresh_buffer(16, 0x30, 0xC03, device.allocator)
    view = HalBufferView(buf, (4,), F32, DENSE)
    msg, msg2 = VMBuffer(b"input0"), VMBuffer(b"tensor")
    ok = [view, msg, F32, DENSE, (4,), device, msg2, 16, 0x10, 0x3]  # (a tuple shape, as generated)
    changes = {
        "ok": {},
        "element type": {2: 0x20000010},
        "element type (negative i32)": {2: F32 - (1 << 32)},
        "encoding": {3: 7},
        "rank": {4: (4, 1)},
        "shape": {4: (5,)},
        "list shape (general path)": {4: [4]},
        "short buffer": {7: 17},
        "memory type": {8: 0x40},
        "usage": {9: 0x800},
        "null view": {0: None},
        "not a view": {0: buf},
        "null message": {1: None},
        "bytes message": {1: b"input0"},
        "null device": {5: None},
        "wrong device": {5: buf},
        "null message2": {6: None},
    }
    for name, change in changes.items():
        args = list(ok)
        for k, v in change.items():
            args[k] = v
        yield name, args


@pytest.mark.parametrize("with_allocator", [True, False])
def test_fast_equals_general(with_allocator):
    device = LocalDevice("local-sync")
    hal = HalModule([device])
    if with_allocator:
        helper = fused.check_argument_allocator(
            hal.buffer_view_assert, hal.buffer_view_buffer, hal.device_allocator, hal.buffer_assert
        )
    else:
        helper = fused.check_argument(hal.buffer_view_assert, hal.buffer_view_buffer, hal.buffer_assert)
    assert helper is not helper.general
    kinds = set()
    for name, args in _cases(device):
        if not with_allocator:
            if name in ("null device",):
                args[5] = None  # a null allocator: accepted
            elif name == "wrong device":
                args[5] = args[0].buffer if args[0] is not None else None  # not an allocator
            else:
                args[5] = device.allocator
        fast, general = _outcome(helper, args), _outcome(helper.general, args)
        assert fast == general, name
        kinds.add(fast[0])
        if name == "ok":
            want = (args[0].buffer, device.allocator) if with_allocator else args[0].buffer
            assert fast == ("ok", want)
    assert kinds == {"ok", "error"}


def _python_calls(run, args) -> list[str]:
    import sys

    seen = []
    sys.setprofile(lambda frame, event, arg: event == "call" and seen.append(frame.f_code.co_name))
    try:
        run(*args)
    finally:
        sys.setprofile(None)
    return seen


def test_fast_path_calls_no_import():
    """On success the fast path is one frame: none of the imports (nor `general`) runs."""
    device = LocalDevice("local-sync")
    hal = HalModule([device])
    helper = fused.check_argument_allocator(
        hal.buffer_view_assert, hal.buffer_view_buffer, hal.device_allocator, hal.buffer_assert
    )
    _, args = next(_cases(device))
    assert _python_calls(helper, args) == ["fast"]
    assert "buffer_assert" in _python_calls(helper.general, args)


def test_foreign_imports_get_the_general_path():
    device = LocalDevice("local-sync")
    hal = HalModule([device])
    calls = []

    def spy(f):
        def g(*a):
            calls.append(f.__name__)
            return f(*a)

        return g

    helper = fused.check_argument(
        spy(hal.buffer_view_assert), spy(hal.buffer_view_buffer), spy(hal.buffer_assert)
    )
    assert not hasattr(helper, "general")
    name, args = next(_cases(device))
    args[5] = device.allocator
    assert helper(*args) is args[0].buffer
    assert calls == ["buffer_view_assert", "buffer_view_buffer", "buffer_assert"]


# -- differential: fused == unfused == iree.runtime ----------------------------------------


@pytest.mark.parametrize("device, driver", [("local-sync", "local-sync"), ("local", "local-task")])
def test_fused_matches_iree(vmfb, packages, device, driver):
    rt = pytest.importorskip("iree.runtime")
    ctx = rt.SystemContext(config=rt.Config(driver))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes()))
    ours = {fuse: packages[fuse].load(device=device).main for fuse in (True, False)}
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(4).astype(np.float32) for _ in range(2))
    want = ctx.modules.module.main(a, b).to_host()
    for fuse in (True, False):
        np.testing.assert_array_equal(np.asarray(ours[fuse](a, b)), want)
    # Views the ABI layer passes as they are: a wrong shape, element type, encoding, a
    # short buffer; the fused and unfused programs refuse each with the same error.
    alloc = LocalDevice("local-sync").allocator
    good = fresh_buffer(16, 0x30, 0xC03, alloc)
    bad_views = [
        HalBufferView(fresh_buffer(20, 0x30, 0xC03, alloc), (5,), F32, DENSE),
        HalBufferView(good, (4,), 0x10000020, DENSE),
        HalBufferView(good, (4,), F32, 7),
        HalBufferView(good.subspan(0, 8), (4,), F32, DENSE),
        HalBufferView(fresh_buffer(16, 0x30, 0x1, alloc), (4,), F32, DENSE),
    ]
    for bad in bad_views:
        errors = []
        for fuse in (True, False):
            with pytest.raises(VMError) as e:
                ours[fuse](bad, b)
            errors.append((e.value.code, str(e.value)))
        assert errors[0] == errors[1]


# -- dynamic dims: the byte length computed between the assert and the buffer ---------------

DYNAMIC = (PROGRAM_DIR / "dynamic_shapes.mlir").read_text()


@pytest.fixture(scope="module")
def dynamic_vmfb(tmp_path_factory):
    return compile_mlir(
        DYNAMIC, tmp_path_factory.mktemp("dyn_vmfb"), LLVM_CPU_FLAGS, "dynamic_shapes"
    )


@pytest.fixture(scope="module")
def dynamic_packages(dynamic_vmfb, tmp_path_factory):
    out = tmp_path_factory.mktemp("dyn_pkgs")
    return {
        fuse: import_package_as(
            f"_dyn_args_test_{fuse}",
            write_package(
                read_module_file(dynamic_vmfb), out / str(fuse), "dyn", fuse_submissions=fuse
            ),
        )
        for fuse in (True, False)
    }


def test_dynamic_dims_group_takes_the_length_computation(dynamic_vmfb):
    module, fn = _main(dynamic_vmfb)
    found = list(arguments.find(module, fn).values())
    assert len(found) == 2
    for g in found:
        assert [op.mnemonic for op in g.scalars] == ["mul.i64"]
        length = g.scalars[0]["result"].ordinal
        assert g.buffer_assert["operands"][3].ordinal == length  # the minimum length


def test_dynamic_dims_group_refused_when_unsafe(dynamic_vmfb):
    """The integer op would run before the assert: refused when the assert reads what it
    writes but in its shape (then the shape is read into a tuple first: `snapshot`), and
    when it can fail (a division: its error must come after the assert's)."""
    from translator.isa import BY_MNEMONIC

    module, fn = _main(dynamic_vmfb)
    g = next(iter(arguments.find(module, fn).values()))
    assert not g.snapshot
    mul = g.scalars[0]
    dim = g.view_assert["operands"][4]  # the shape's one dim, which the assert reads
    fn2, _ = _patched(fn, mul, result=dataclasses.replace(mul["result"], raw=dim.raw))
    assert arguments.find(module, fn2)[g.view_assert.pc].snapshot
    element = g.view_assert["operands"][2]  # the element type, which the assert reads too
    fn3, _ = _patched(fn, mul, result=dataclasses.replace(mul["result"], raw=element.raw))
    assert g.view_assert.pc not in arguments.find(module, fn3)
    div = dataclasses.replace(mul, spec=BY_MNEMONIC["div.i64.s"])
    blocks = [
        dataclasses.replace(b, ops=[div if o is mul else o for o in b.ops]) for b in fn.blocks
    ]
    assert g.view_assert.pc not in arguments.find(module, dataclasses.replace(fn, blocks=blocks))


def test_dynamic_dims_fused_matches_unfused_and_iree(dynamic_vmfb, dynamic_packages):
    rt = pytest.importorskip("iree.runtime")
    ctx = rt.SystemContext(config=rt.Config("local-sync"))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, dynamic_vmfb.read_bytes()))
    text = open(dynamic_packages[True].__file__).read()
    assert "check_input_allocator(" in text and "hal_buffer_view_assert(" not in text
    ours = {fuse: dynamic_packages[fuse].load(device="local-sync").main for fuse in (True, False)}
    rng = np.random.default_rng(5)
    for n in (0, 3, 1024):
        a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
        want = np.asarray(ctx.modules.module.main(a, b).to_host())
        for fuse in (True, False):
            assert np.asarray(ours[fuse](a, b)).tobytes() == want.tobytes()
    # Views passed as they are: each check of either argument fails the same way fused
    # and unfused (the short buffer against the length the hoisted multiply computed).
    alloc = LocalDevice("local-sync").allocator
    good = fresh_buffer(16, 0x30, 0xC03, alloc)
    ok = HalBufferView(good, (4,), F32, DENSE)
    bad_views = [
        HalBufferView(good, (2, 2), F32, DENSE),  # rank
        HalBufferView(good, (4,), 0x10000020, DENSE),
        HalBufferView(good, (4,), F32, 7),
        HalBufferView(good.subspan(0, 8), (4,), F32, DENSE),  # 8 bytes for 4 x f32
        HalBufferView(fresh_buffer(16, 0x30, 0x1, alloc), (4,), F32, DENSE),  # usage
    ]
    for bad in bad_views:
        for args in ((bad, ok), (ok, bad)):
            errors = []
            for fuse in (True, False):
                with pytest.raises(VMError) as e:
                    ours[fuse](*args)
                errors.append((e.value.code, str(e.value)))
            assert errors[0] == errors[1]
