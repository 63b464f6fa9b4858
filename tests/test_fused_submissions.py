"""Fused per-dispatch submissions.

translator/analyses/submissions.py finds the group (fence.create, queue.alloca,
fence.create, queue.execute.indirect, fence.await; or its last three ops) only where its
fences are private; runtime_support/hal/fused.py's fast path gives what its general path
(the bound imports, one by one) gives, errors included; fused packages give what unfused
ones and iree.runtime give, bit for bit, on local-sync and local.
"""

from __future__ import annotations

from functools import partial

import copy

import numpy as np
import pytest

from bench.programs import chain_source
from runtime_support.errors import StatusCode, VMError
from runtime_support.hal import fused, plan_runner
from runtime_support.hal.buffer import fresh_buffer
from runtime_support.hal.command_buffer import HalCommandBuffer
from runtime_support.hal.device import LocalDevice
from runtime_support.hal.fence import Fence
from runtime_support.loaders import statistics
from runtime_support.run_cli import import_package_as
from tests.helpers_compile import LLVM_CPU_FLAGS, compile_mlir
from translator.analyses import cfg, submissions
from translator.analyses.liveness import RefLiveness
from translator.codegen import write_package as _write_package
from translator.ir import Op, Reg
from translator.isa import BY_MNEMONIC
from translator.pipeline import Pipeline
from translator.reader import read_module_file

# These tests are of the fused mechanisms (`--host-path=fused`), kept until issue #25
# deletes them; the default host path is queue programs (tests/test_queue_programs.py).
write_package = partial(_write_package, host_path="fused")

MUL4 = """
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
# Sorted in place: the dispatch writes its argument's buffer (no alloca in the group).
SORT = """
func.func @sort(%a: tensor<6xf32>) -> tensor<6xf32> {
  %0 = iree_linalg_ext.sort dimension(0) outs(%a : tensor<6xf32>) {
  ^bb0(%x: f32, %y: f32):
    %c = arith.cmpf olt, %x, %y : f32
    iree_linalg_ext.yield %c : i1
  } -> tensor<6xf32>
  return %0 : tensor<6xf32>
}
"""
# Dynamic shapes: a one-shot command buffer recorded per call, run by queue.execute.
DYN_ADD = """
func.func @dyn_add(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = arith.addf %a, %b : tensor<?xf32>
  return %0 : tensor<?xf32>
}
"""
SOURCES = {"mul4": MUL4, "chain5": chain_source(5), "sort": SORT, "dyn_add": DYN_ADD}
REF_BIT = 0x8000


@pytest.fixture(scope="module")
def vmfbs(tmp_path_factory):
    out = tmp_path_factory.mktemp("fused_vmfb")
    return {name: compile_mlir(src, out, LLVM_CPU_FLAGS, name) for name, src in SOURCES.items()}


@pytest.fixture(scope="module")
def packages(vmfbs, tmp_path_factory):
    """name -> {fused: bool -> package module}."""
    out = tmp_path_factory.mktemp("fused_pkgs")
    pkgs = {}
    for name, vmfb in vmfbs.items():
        for fuse in (True, False):
            where = out / ("fused" if fuse else "unfused")
            pkg = write_package(read_module_file(vmfb), where, name, fuse_submissions=fuse)
            pkgs.setdefault(name, {})[fuse] = import_package_as(f"_fused_test_{name}_{fuse}", pkg)
    return pkgs


# -- the analysis ---------------------------------------------------------------------


def _function(pipeline: Pipeline, name: str):
    k = next(k for k, fn in enumerate(pipeline.functions) if fn.name == name)
    return pipeline.functions[k]


def _groups(pipeline, fn):
    return submissions.find(pipeline.module, fn, RefLiveness(fn, cfg.analyze(fn)))


def _ref(ordinal: int) -> Reg:
    return Reg(REF_BIT | ordinal)


def _store(ordinal: int, pc: int) -> Op:
    """`vm.global.store.ref` of register `ordinal`: a use that makes a fence escape."""
    values = {"global": 0, "type_def": 0, "value": _ref(ordinal)}
    return Op(pc, 0, BY_MNEMONIC["global.store.ref"], values)


def _with_operand(op: Op, index: int, reg: Reg) -> Op:
    values = dict(op.values)
    operands = list(values["operands"])
    operands[index] = reg
    values["operands"] = operands
    return Op(op.pc, op.length, op.spec, values)


@pytest.fixture
def mul4_main(vmfbs):
    """(pipeline, a private copy of @main, its group block index, the group)."""
    pipeline = Pipeline.from_file(vmfbs["mul4"])
    fn = copy.deepcopy(_function(pipeline, "main"))
    groups = _groups(pipeline, fn)
    assert len(groups) == 1
    (index, group), = groups.items()
    return pipeline, fn, index, group


def test_group_found_with_the_new_buffer_slot(mul4_main):
    _, fn, index, group = mul4_main
    assert group.kind == "alloca_execute_indirect"
    assert list(fn.blocks[index].ops[-5:-1]) == list(group.ops)
    assert group.await_op is fn.blocks[index].ops[-1]
    table = group.execute["operands"][6:]
    buf = group.alloca["results"][0].ordinal
    assert group.slots == (2,) and table[6].ordinal == buf


def test_group_without_alloca_found(vmfbs):
    pipeline = Pipeline.from_file(vmfbs["sort"])
    (group,) = _groups(pipeline, _function(pipeline, "sort")).values()
    assert group.kind == "execute_indirect" and group.alloca is None and group.slots == ()


def test_group_with_direct_execute_found(vmfbs):
    pipeline = Pipeline.from_file(vmfbs["dyn_add"])
    (group,) = _groups(pipeline, _function(pipeline, "dyn_add")).values()
    assert group.kind == "execute" and group.alloca is None


def test_chain_has_one_group_per_dispatch(vmfbs):
    pipeline = Pipeline.from_file(vmfbs["chain5"])
    groups = _groups(pipeline, _function(pipeline, "main"))
    assert [g.kind for g in groups.values()] == ["alloca_execute_indirect"] * 5


def _kinds(pipeline, fn):
    return [g.kind for g in _groups(pipeline, fn).values()]


def _fences(group):
    return group.ops[0]["results"][0].ordinal, group.ops[2]["results"][0].ordinal


def test_not_found_when_the_signal_fence_escapes(mul4_main):
    pipeline, fn, index, group = mul4_main
    _, f1 = _fences(group)
    nxt = fn.blocks[index + 1]
    nxt.ops.insert(0, _store(f1, 0xFFFF00))  # read after the await: live out
    assert _groups(pipeline, fn) == {}


def test_not_found_when_the_alloca_fence_escapes(mul4_main):
    pipeline, fn, index, group = mul4_main
    f0, _ = _fences(group)
    fn.blocks[index + 1].ops.insert(0, _store(f0, 0xFFFF00))  # live after the execute
    # Only the execute and the await are fused, the escaping fence their wait fence.
    (group,) = _groups(pipeline, fn).values()
    assert group.kind == "execute_indirect" and group.execute["operands"][2].ordinal == f0


@pytest.mark.parametrize("which", [0, 1])
def test_not_found_when_a_fence_is_used_twice(mul4_main, which):
    pipeline, fn, index, group = mul4_main
    fence = _fences(group)[which]
    ops = fn.blocks[index].ops
    k = ops.index(group.execute)
    ops[k] = _with_operand(group.execute, 6, _ref(fence))  # also a table buffer
    # (the group without the alloca may stay: f0 is then only a wait fence and a table
    # buffer, which the helper hands to the imports as they are)
    assert _kinds(pipeline, fn) == ([] if which else ["execute_indirect"])


def test_not_found_when_devices_differ(mul4_main):
    pipeline, fn, index, group = mul4_main
    ops = fn.blocks[index].ops
    k = ops.index(group.ops[2])
    cmd = group.execute["operands"][4]
    ops[k] = _with_operand(group.ops[2], 0, _ref(cmd.ordinal))  # second create elsewhere
    assert _groups(pipeline, fn) == {}


def test_not_found_when_an_op_using_the_fence_intervenes(mul4_main):
    pipeline, fn, index, group = mul4_main
    f0, _ = _fences(group)
    ops = fn.blocks[index].ops
    ops.insert(ops.index(group.ops[2]), _store(f0, 0xFFFF00))
    assert _kinds(pipeline, fn) == ["execute_indirect"]  # f0 only as its wait fence
    ops.insert(ops.index(group.execute), _store(group.ops[2]["results"][0].ordinal, 0xFFFF01))
    assert _groups(pipeline, fn) == {}


def test_not_found_when_the_await_waits_on_another_fence(mul4_main):
    pipeline, fn, index, group = mul4_main
    f0, _ = _fences(group)
    fn.blocks[index].ops[-1] = _with_operand(group.await_op, 2, _ref(f0))
    assert _groups(pipeline, fn) == {}


def test_generated_code_calls_the_helper(vmfbs, tmp_path):
    from translator.codegen import generate

    module = read_module_file(vmfbs["mul4"])
    on = generate(module, "m", host_path="fused").source
    off = generate(module, "m", fuse_submissions=False, host_path="fused").source
    assert "submit_alloca_execute_indirect(" in on and "ALLOCATED" in on
    assert "hal_fence_create(" not in on.split("def main")[1]
    assert "submit_" not in off and "hal_device_queue_execute_indirect(" in off


def test_fused_call_reads_its_wait_fence_even_where_the_group_rewrites_it(vmfbs):
    """In mul4 the alloca waits on r2 and the second fence goes to r2: the call still
    reads r2 (passes that trim releases rely on `reads`)."""
    from translator.codegen import _Locations, _numeric_ops
    from translator.codegen.function import FunctionEmitter
    from translator.codegen.names import NameTable
    from translator.codegen.ops import OpRenderer
    from translator.codegen.stmt import Assign

    pipeline = Pipeline.from_file(vmfbs["mul4"])
    module = pipeline.module
    k = next(k for k, fn in enumerate(pipeline.functions) if fn.name == "main")
    renderer = OpRenderer(module, NameTable(module), pipeline.cconvs, _numeric_ops(), _Locations(module))
    fn = pipeline.functions[k]
    emitter = FunctionEmitter(renderer, fn, pipeline.cconvs[k], module.descriptors[k].ref_register_count)
    (index, group), = emitter.groups.items()
    wait = f"r{group.alloca['operands'][2].ordinal}"
    assert wait == f"r{group.ops[2]['results'][0].ordinal}"  # the case this test is about
    (call,) = [s for s in emitter.terminator(index).pre if isinstance(s, Assign)]
    assert wait in call.reads and call.targets[0] not in call.reads


# -- the helper: fast path == general path -----------------------------------------------


def _refs_of(ctx, cls):
    return next(ctx.refs[k] for k in range(len(ctx.refs)) if isinstance(ctx.refs[k], cls))


@pytest.fixture
def mul4_parts(packages):
    """A fresh local-sync mul4 context: (hal module, device, recorded command buffer)."""
    ctx = packages["mul4"][True].load(device="local-sync")
    return ctx.modules["hal"], _refs_of(ctx, LocalDevice), _refs_of(ctx, HalCommandBuffer)


def _input(device, values) -> object:
    buf = fresh_buffer(16, 0x30, 0xC03, device.allocator)
    buf.write(0, np.asarray(values, np.float32).tobytes())
    return buf


def _submit(helper, hal, device, cmd, *, table=None, pool=0, size=16, wait=None, timeout=-1):
    a, b = _input(device, [1, 2, 3, 4]), _input(device, [5, 6, 7, 8])
    if table is None:
        table = [(a, 0, 16), (b, 0, 16), (fused.ALLOCATED, 0, 16)]
    try:
        buffer, status = helper(
            device, 0, -1, wait, pool, 48, 3075, size, 0, 0, -1, cmd, 0, table, (2,), timeout, 0
        )
    except VMError as e:
        return ("error", e.code, e.message)
    return ("ok", buffer, status)


def _both(mul4_parts, packages, cmd=None, warm=False, **kw):
    """The fast helper and its general path, each on its own fresh context. `warm`: the
    fast helper ran once before, so the command buffer has its native plan and the call
    goes through the call site's compiled fast path (plan_runner.compile_alloca); with
    "uncompiled", through the fast path as it is where that declines."""
    out = []
    for general in (False, True):
        hal, device, own_cmd = mul4_parts if not general else _fresh(packages)
        cmd = own_cmd if cmd is None or isinstance(cmd, HalCommandBuffer) else cmd
        helper = fused.alloca_execute_indirect(
            hal.fence_create, hal.device_queue_alloca, hal.device_queue_execute_indirect,
            hal.fence_await,
        )
        assert helper is not helper.general  # a fast path was built
        if warm and not general:
            for _ in range(2):
                assert _submit(helper, hal, device, own_cmd)[0] == "ok"
            assert own_cmd._plan.allocas[(2,)] is not None
            if warm == "uncompiled":
                own_cmd._plan.allocas[(2,)] = None  # (as for a plan compile_alloca declines)
                assert _submit(helper, hal, device, own_cmd)[0] == "ok"
        before = device.allocator.bytes_allocated
        got = _submit(helper.general if general else helper, hal, device, cmd, **kw)
        out.append((got, device.allocator.bytes_allocated - before))
    return out


def _fresh(packages):
    ctx = packages["mul4"][True].load(device="local-sync")
    return ctx.modules["hal"], _refs_of(ctx, LocalDevice), _refs_of(ctx, HalCommandBuffer)


_WARM = pytest.mark.parametrize(
    "warm", [False, "uncompiled", True], ids=["first-call", "uncompiled", "compiled-alloca"]
)


@_WARM
def test_fast_path_result_and_accounting_equal_general(mul4_parts, packages, monkeypatch, warm):
    allocs = []
    real = fused.fresh_buffer
    count = lambda *a: allocs.append(a) or real(*a)  # noqa: E731
    monkeypatch.setattr(fused, "fresh_buffer", count)
    monkeypatch.setattr(plan_runner, "fresh_buffer", count)
    mul4_parts[2]._plan and mul4_parts[2]._plan.allocas.clear()  # (compiled with `count`)
    (fast, fast_bytes), (gen, gen_bytes) = _both(mul4_parts, packages, warm=warm)
    # the fast path allocated (its warm-up calls too), the general one went to the import
    assert len(allocs) == 1 + 2 * bool(warm) + (warm == "uncompiled")
    assert fast[0] == gen[0] == "ok" and fast[2] == gen[2] == 0
    assert fast[1].read() == gen[1].read() == np.float32([5, 12, 21, 32]).tobytes()
    assert fast_bytes == gen_bytes  # inputs + the allocated buffer


@pytest.mark.parametrize(
    "kw, code",
    [
        ({"pool": 1}, StatusCode.UNIMPLEMENTED),
        ({"size": -1}, StatusCode.INVALID_ARGUMENT),
        ({"table": [(None, 0, 16), (None, 0, 16), (fused.ALLOCATED, 0, 16)]}, StatusCode.INVALID_ARGUMENT),
        ({"table": [(Fence(), 0, 16), (None, 0, 16), (fused.ALLOCATED, 0, 16)]}, StatusCode.INVALID_ARGUMENT),
        ({"size": 8}, StatusCode.OUT_OF_RANGE),  # the new buffer shorter than its slot
    ],
    ids=["pool", "negative-size", "null-slot", "wrong-ref-type", "short-buffer"],
)
@_WARM
def test_fast_path_errors_equal_general(mul4_parts, packages, kw, code, warm):
    (fast, fast_bytes), (gen, gen_bytes) = _both(mul4_parts, packages, warm=warm, **kw)
    assert fast == gen, (fast, gen)
    assert fast[0] == "error" and fast[1] == code
    assert fast_bytes == gen_bytes


def test_wrong_command_buffer_type_is_the_imports_error(mul4_parts, packages):
    (fast, fast_bytes), (gen, gen_bytes) = _both(mul4_parts, packages, cmd=Fence())
    assert fast == gen and fast_bytes == gen_bytes
    assert fast[0] == "error" and fast[1] == StatusCode.INVALID_ARGUMENT
    assert "command_buffer" in fast[2]


def test_unreached_wait_fence_takes_the_general_path(mul4_parts, packages):
    results = []
    for general in (False, True):
        hal, device, cmd = _fresh(packages)
        helper = fused.alloca_execute_indirect(
            hal.fence_create, hal.device_queue_alloca, hal.device_queue_execute_indirect,
            hal.fence_await,
        )
        wait = Fence()
        kind, buffer, status = _submit(
            helper.general if general else helper, hal, device, cmd, wait=wait, timeout=0
        )
        early = buffer.read()
        wait.signal()  # the queued work runs now
        results.append((kind, status, early, buffer.read()))
    assert results[0] == results[1]
    assert results[0][1] == StatusCode.DEADLINE_EXCEEDED
    assert results[0][3] == np.float32([5, 12, 21, 32]).tobytes()


def test_foreign_imports_get_the_general_path_only(mul4_parts):
    hal, _, _ = mul4_parts
    calls = []

    def spy(f):
        return lambda *a: calls.append(f.__name__) or f(*a)

    helper = fused.alloca_execute_indirect(
        spy(hal.fence_create), spy(hal.device_queue_alloca),
        spy(hal.device_queue_execute_indirect), spy(hal.fence_await),
    )
    assert not hasattr(helper, "general")  # the general path is the helper
    hal, device, cmd = mul4_parts
    kind, buffer, status = _submit(helper, hal, device, cmd)
    assert (kind, status) == ("ok", 0)
    assert calls == [
        "fence_create", "device_queue_alloca", "fence_create",
        "device_queue_execute_indirect", "fence_await",
    ]


def test_execute_only_helper_equals_general(packages):
    outs = []
    for general in (False, True):
        ctx = packages["sort"][True].load(device="local-sync")
        hal = ctx.modules["hal"]
        device, cmd = _refs_of(ctx, LocalDevice), _refs_of(ctx, HalCommandBuffer)
        helper = fused.execute_indirect(
            hal.fence_create, hal.device_queue_execute_indirect, hal.fence_await
        )
        run = helper.general if general else helper
        buf = fresh_buffer(24, 0x30, 0xC03, device.allocator)
        buf.write(0, np.float32([3, 1, 2, 6, 5, 4]).tobytes())
        got = [run(device, 0, -1, None, cmd, 0, [(buf, 0, 24)], -1, 0), buf.read()]
        try:
            run(device, 0, -1, None, cmd, 0, [(None, 0, 24)], -1, 0)
        except VMError as e:
            got.append((e.code, e.message))
        outs.append(got)
    assert outs[0] == outs[1]
    assert outs[0][1] == np.float32([1, 2, 3, 4, 5, 6]).tobytes()
    assert outs[0][2][0] == StatusCode.INVALID_ARGUMENT


def test_direct_execute_helper_equals_general():
    """A one-shot command buffer: run before it is finalized, once (a fill), then again:
    the errors (the queue's, raised by the await) and the fill are the same on both
    paths."""
    from runtime_support.hal import HalModule
    from runtime_support.hal.command_buffer import BufferRef

    outs = []
    for general in (False, True):
        device = LocalDevice("local-sync")
        hal = HalModule([device])
        helper = fused.execute(hal.fence_create, hal.device_queue_execute, hal.fence_await)
        assert helper is not helper.general
        run = helper.general if general else helper
        buf = fresh_buffer(16, 0x30, 0xC03, device.allocator)
        cmd = device.create_command_buffer(1, 3, 0)  # one-shot
        cmd.fill(BufferRef(buf, 0, 4, 8), 0x01020304, 4)
        got = []
        for k in range(3):
            if k == 1:
                cmd.finalize()
            try:
                got.append(run(device, 0, -1, None, cmd, 0, -1, 0))
            except VMError as e:
                got.append((e.code, e.message))
        outs.append((got, buf.read()))
    assert outs[0] == outs[1]
    (unfinalized, first, again), _ = outs[0]
    assert unfinalized[0] == again[0] == StatusCode.FAILED_PRECONDITION and first == 0
    assert outs[0][1] == bytes(4) + bytes([4, 3, 2, 1]) * 2 + bytes(4)


def test_statistics_count_each_fused_dispatch(packages):
    ctx = packages["chain5"][True].load(device="local-sync")
    a = np.arange(4, dtype=np.float32)
    statistics.reset()
    statistics.enable()
    try:
        for _ in range(3):
            ctx.main(a, a)
        counts = {name: c for name, (c, _) in statistics.snapshot().items()}
    finally:
        statistics.enable(False)
        statistics.reset()
    assert sum(counts.values()) == 15  # 5 dispatches x 3 calls


# -- differential: fused == unfused == iree.runtime ----------------------------------------


INPUTS = {
    "mul4": lambda r: (r.standard_normal(4).astype(np.float32), r.standard_normal(4).astype(np.float32)),
    "chain5": lambda r: (r.standard_normal(4).astype(np.float32), r.standard_normal(4).astype(np.float32)),
    "sort": lambda r: (r.standard_normal(6).astype(np.float32),),
    "dyn_add": lambda r: (r.standard_normal(7).astype(np.float32), r.standard_normal(7).astype(np.float32)),
}
EXPORT = {"mul4": "main", "chain5": "main", "sort": "sort", "dyn_add": "dyn_add"}


@pytest.mark.parametrize("name", sorted(SOURCES))
@pytest.mark.parametrize("device, driver", [("local-sync", "local-sync"), ("local", "local-task")])
def test_fused_packages_match_iree(vmfbs, packages, name, device, driver):
    rt = pytest.importorskip("iree.runtime")
    config = rt.Config(driver)
    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfbs[name].read_bytes()))
    iree_fn = getattr(ctx.modules.module, EXPORT[name])
    ours = {fuse: getattr(packages[name][fuse].load(device=device), EXPORT[name]) for fuse in (True, False)}
    rng = np.random.default_rng(7)
    for _ in range(5):
        args = INPUTS[name](rng)
        want = np.asarray(iree_fn(*args).to_host()).tobytes()
        assert np.asarray(ours[True](*args)).tobytes() == want
        assert np.asarray(ours[False](*args)).tobytes() == want
