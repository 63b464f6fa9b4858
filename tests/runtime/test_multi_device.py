"""Programs compiled for several devices (issue 29), differential against iree-run-module
and iree.runtime.

Each program is compiled as IREE's own multi-device tooling test is, for two local devices
(`device_a=local[0]`, `device_b=local[1]`), and run with two `--device` flags (or
`load(device=[...])`), the local device kinds mixed; a run given one device fails with
IREE's own one-line error.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from runtime_support.api.context import MAX_DEVICES, DeviceError
from runtime_support.errors import StatusCode, VMError
from runtime_support.tools.run_cli import load_package, main as run_main
from translator.cli import main as translate_main

HAVE_IREE = shutil.which("iree-run-module") is not None and shutil.which("iree-compile") is not None
pytestmark = pytest.mark.skipif(not HAVE_IREE, reason="needs iree-base-compiler/iree-base-runtime")

TWO_DEVICES = (
    "--iree-hal-target-device=device_a=local[0]",
    "--iree-hal-target-device=device_b=local[1]",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
)

# Computes on device_a, moves the result to device_b, computes there, moves it back.
TRANSFER = """
func.func public @pipeline(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %arg0, %arg0 : tensor<4xf32>
  %1 = flow.tensor.transfer %0 : tensor<4xf32> to #hal.device.promise<@device_b>
  %2 = arith.addf %1, %1 : tensor<4xf32>
  %3 = flow.tensor.transfer %2 : tensor<4xf32> to #hal.device.promise<@device_a>
  %4 = arith.subf %3, %arg0 : tensor<4xf32>
  return %4 : tensor<4xf32>
}
"""

# Arguments and results placed on each device.
AFFINITIES = """
func.func public @affinities(
    %a: tensor<4xf32> {iree.abi.affinity = #hal.device.promise<@device_a>},
    %b: tensor<4xf32> {iree.abi.affinity = #hal.device.promise<@device_b>})
    -> (tensor<4xf32> {iree.abi.affinity = #hal.device.promise<@device_b>},
        tensor<4xf32> {iree.abi.affinity = #hal.device.promise<@device_a>}) {
  %0 = arith.mulf %a, %a : tensor<4xf32>
  %1 = flow.tensor.transfer %0 : tensor<4xf32> to #hal.device.promise<@device_b>
  %2 = arith.addf %1, %b : tensor<4xf32>
  %3 = flow.tensor.transfer %2 : tensor<4xf32> to #hal.device.promise<@device_a>
  %4 = arith.mulf %3, %a : tensor<4xf32>
  return %2, %4 : tensor<4xf32>, tensor<4xf32>
}
"""


def _dense(a: np.ndarray) -> str:
    rows = ",".join("[" + ",".join(f"{v:.6e}" for v in row) + "]" for row in a)
    return f"dense<[{rows}]>"


def _mlp_source() -> str:
    """A 16-32-8 MLP whose first layer (matmul + relu) runs on device_a and second on
    device_b, its hidden activations moved between them, the result moved back."""
    rng = np.random.default_rng(29)
    w1 = (rng.standard_normal((16, 32)) * 0.25).astype(np.float32)
    w2 = (rng.standard_normal((32, 8)) * 0.25).astype(np.float32)
    return f"""
func.func public @mlp(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {{
  %w1 = arith.constant {_dense(w1)} : tensor<16x32xf32>
  %w2 = arith.constant {_dense(w2)} : tensor<32x8xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x32xf32>) -> tensor<4x32xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<4x16xf32>, tensor<16x32xf32>)
                     outs(%f1 : tensor<4x32xf32>) -> tensor<4x32xf32>
  %r = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}}
      ins(%h : tensor<4x32xf32>) outs(%e1 : tensor<4x32xf32>) {{
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  }} -> tensor<4x32xf32>
  %t = flow.tensor.transfer %r : tensor<4x32xf32> to #hal.device.promise<@device_b>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%t, %w2 : tensor<4x32xf32>, tensor<32x8xf32>)
                     outs(%f2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %back = flow.tensor.transfer %y : tensor<4x8xf32> to #hal.device.promise<@device_a>
  return %back : tensor<4x8xf32>
}}
"""


MLP = _mlp_source()
ASYNC = TWO_DEVICES + ("--iree-execution-model=async-external",)

# Device pairs: both kinds, mixed either way.
PAIRS = [("local-task", "local-task"), ("local-sync", "local-task"), ("local-task", "local-sync")]


def cli(entry, argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = entry([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def build(compile_mlir, tmp_path_factory):
    """build(name, mlir_text, flags) -> (vmfb path, translated package dir)."""
    root = tmp_path_factory.mktemp("multi_device")

    def _build(name: str, text: str, flags=TWO_DEVICES):
        src = root / f"{name}.mlir"
        src.write_text(text)
        vmfb = Path(compile_mlir(src, flags))
        pkg = root / "out" / name
        if not pkg.exists():
            rc, _, err = cli(translate_main, [vmfb, "-o", root / "out", "--name", name])
            assert rc == 0, err
        return vmfb, pkg

    return _build


def iree_run_module(vmfb, args):
    p = subprocess.run(
        ["iree-run-module", f"--module={vmfb}", *args], capture_output=True, text=True, timeout=120
    )
    return p.returncode, p.stdout, p.stderr


def _status_line(stderr: str) -> str:
    """The status part of an error line (iree-run-module prefixes a source file:line)."""
    line = stderr.strip()
    assert "\n" not in line, stderr
    return line[line.index(": ") + 2 :] if line.startswith(("c/", "<vm>")) else line


def devices(*kinds):
    return [f"--device={k}" for k in kinds]


# -- pyree-run against iree-run-module -------------------------------------------------


@pytest.mark.parametrize("pair", PAIRS, ids="+".join)
def test_transfer_program_same_as_iree_run_module(build, pair):
    vmfb, pkg = build("transfer", TRANSFER)
    args = [*devices(*pair), "--function=pipeline", "--input=4xf32=1 2 3 4"]
    ref = iree_run_module(vmfb, args)
    ours = cli(run_main, [pkg, *args])
    assert ref[0] == 0, ref[2]
    assert ours[:2] == ref[:2], ours[2]
    assert ours[1].endswith("4xf32=1 6 15 28\n")


def test_arguments_and_results_on_each_device_same_as_iree_run_module(build):
    vmfb, pkg = build("affinities", AFFINITIES)
    args = [*devices("local-task", "local-sync"), "--function=affinities",
            "--input=4xf32=1 2 3 4", "--input=4xf32=10 20 30 40"]
    ref = iree_run_module(vmfb, args)
    assert ref[0] == 0, ref[2]
    assert cli(run_main, [pkg, *args])[:2] == ref[:2]


def test_async_mlp_pipeline_same_as_iree_run_module(build):
    vmfb, pkg = build("mlp_async", MLP, ASYNC)
    args = [*devices("local-task", "local-sync"), "--function=mlp", "--input=4x16xf32=0.5"]
    ref = iree_run_module(vmfb, args)
    assert ref[0] == 0, ref[2]
    assert cli(run_main, [pkg, *args])[:2] == ref[:2]


@pytest.mark.parametrize("given", [(), ("local-task",), ("local-sync",)])
def test_one_device_for_a_two_device_program_is_irees_error(build, given):
    vmfb, pkg = build("transfer", TRANSFER)
    args = [*devices(*given), "--function=pipeline", "--input=4xf32=1 2 3 4"]
    ref = iree_run_module(vmfb, args)
    rc, out, err = cli(run_main, [pkg, *args])
    assert (rc, out) == (ref[0], ref[1]) == (1, "")
    assert _status_line(err) == _status_line(ref[2])
    assert _status_line(err).startswith("INCOMPATIBLE; HAL device `device_b` not found")


def test_bad_second_device_is_irees_error(build):
    vmfb, pkg = build("transfer", TRANSFER)
    args = [*devices("local-task", "nope"), "--function=pipeline", "--input=4xf32=1 2 3 4"]
    ref = iree_run_module(vmfb, args)
    rc, out, err = cli(run_main, [pkg, *args])
    assert (rc, out) == (ref[0], ref[1]) == (1, "")
    assert _status_line(err) == _status_line(ref[2])
    assert "creating driver for device 'nope'" in err


# -- the Python API against iree.runtime -------------------------------------------------


# iree.runtime objects kept to the end of the process: tearing a two-device context down
# in the middle of a test crashed iree.runtime 3.13 here (segfault in its destructors).
_IREE_KEEP: list = []


def iree_runtime(vmfb, function, kinds, inputs):
    """`function(*inputs)` under iree.runtime in a context of one fresh device per kind."""
    rt = pytest.importorskip("iree.runtime")
    instance = rt.VmInstance()
    devs = [rt.get_driver(k).create_default_device() for k in kinds]
    hal = rt.create_hal_module(instance, devices=devs)
    module = rt.VmModule.copy_buffer(instance, Path(vmfb).read_bytes())
    context = rt.VmContext(instance, modules=[hal, module])
    results = rt.FunctionInvoker(context, devs[0], module.lookup_function(function))(*inputs)
    results = results if isinstance(results, tuple) else (results,)
    _IREE_KEEP.append((devs, hal, module, context, results))
    return [np.array(r.to_host(), copy=True) for r in results]  # before the devices go


@pytest.mark.parametrize("pair", PAIRS, ids="+".join)
def test_affinities_from_python_same_as_iree_runtime(build, pair):
    vmfb, pkg = build("affinities", AFFINITIES)
    a = np.array([1, 2, 3, 4], np.float32)
    b = np.array([10, 20, 30, 40], np.float32)
    ctx = load_package(pkg).load(device=list(pair))
    assert [d.identifier for d in ctx.devices] == list(pair)
    ours = ctx.affinities(a, b)
    ref = iree_runtime(vmfb, "affinities", pair, [a, b])
    for x, y in zip(ours, ref, strict=True):
        np.testing.assert_array_equal(x, y)


def test_transfer_from_python_same_as_iree_runtime(build):
    vmfb, pkg = build("transfer", TRANSFER)
    x = np.array([1.5, -2, 3, 4.25], np.float32)
    ctx = load_package(pkg).load(device=["local", "local-sync"])
    np.testing.assert_array_equal(
        ctx.pipeline(x), iree_runtime(vmfb, "pipeline", ("local-task", "local-sync"), [x])[0]
    )


def test_mlp_pipeline_several_calls_in_flight(build, tmp_path):
    """Three calls through the async-external ABI wait on one host fence: none runs until
    it is signaled, each stage on its own device's queue; the results equal
    iree-run-module's, call by call."""
    vmfb, pkg = build("mlp_async", MLP, ASYNC)
    ctx = load_package(pkg).load(device=["local", "local"])
    assert ctx.devices[0] is not ctx.devices[1]
    assert ctx.devices[0].queue is not ctx.devices[1].queue
    xs = [np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16) * (i + 1) for i in range(3)]
    gate = ctx.create_fence()
    signals = [ctx.create_fence() for _ in xs]
    views = [ctx.mlp(x, gate, s) for x, s in zip(xs, signals)]
    assert not any(s.reached_now() for s in signals)  # all in flight behind the gate
    gate.signal()
    for i, (x, s, view) in enumerate(zip(xs, signals, views)):
        assert s.wait(60)
        np.save(tmp_path / f"x{i}.npy", x)
        rc, _, err = iree_run_module(vmfb, [
            *devices("local-task", "local-task"), "--function=mlp",
            f"--input=@{tmp_path / f'x{i}.npy'}", f"--output=@{tmp_path / f'y{i}.npy'}",
        ])
        assert rc == 0, err
        np.testing.assert_array_equal(view.to_numpy(), np.load(tmp_path / f"y{i}.npy"))
    # the coarse-fences form with the fences supplied by the context agrees
    np.testing.assert_array_equal(ctx.mlp(xs[0]), views[0].to_numpy())


def test_one_device_for_a_two_device_program_from_python(build):
    _, pkg = build("transfer", TRANSFER)
    with pytest.raises(VMError, match="HAL device `device_b` not found or unavailable") as e:
        load_package(pkg).load(device="local")
    assert e.value.code == StatusCode.INCOMPATIBLE
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "device, message",
    [([], "no device given"), (["local"] * (MAX_DEVICES + 1), f"at most {MAX_DEVICES}"),
     (["local", "nope"], "no driver 'nope' registered")],
)
def test_bad_device_lists(build, device, message):
    _, pkg = build("transfer", TRANSFER)
    with pytest.raises(DeviceError, match=message):
        load_package(pkg).load(device=device)


def test_declared_affinities_are_parsed():
    from runtime_support.api.abi import TensorType, parse_declaration

    decl = parse_declaration(
        "sync func @f(%a: tensor<4xf32> {iree.abi.affinity = #hal.device.promise<@device_b>}, "
        "%b: tensor<2x?xi8>) -> (%r: tensor<4xf32> {iree.abi.affinity = "
        "#hal.device.affinity<@gpu, [0]>, iree.abi.name = \"r\"})"
    )
    assert decl.arguments == (
        ("a", TensorType((4,), "f32", decl.arguments[0][1].element_type, "device_b")),
        ("b", TensorType((2, None), "i8", decl.arguments[1][1].element_type, None)),
    )
    assert decl.results[0][1].affinity == "gpu"


# -- worker pools: one per device ----------------------------------------------------------

# A grid of many workgroups on each device (one function per device), large enough that it
# runs split across the device's workers.
N_POOLED = 1 << 20
PER_DEVICE = f"""
func.func public @on_a(%x: tensor<{N_POOLED}xf32> {{iree.abi.affinity = #hal.device.promise<@device_a>}})
    -> (tensor<{N_POOLED}xf32> {{iree.abi.affinity = #hal.device.promise<@device_a>}}) {{
  %0 = arith.mulf %x, %x : tensor<{N_POOLED}xf32>
  %1 = arith.addf %0, %x : tensor<{N_POOLED}xf32>
  return %1 : tensor<{N_POOLED}xf32>
}}
func.func public @on_b(%x: tensor<{N_POOLED}xf32> {{iree.abi.affinity = #hal.device.promise<@device_b>}})
    -> (tensor<{N_POOLED}xf32> {{iree.abi.affinity = #hal.device.promise<@device_b>}}) {{
  %0 = arith.mulf %x, %x : tensor<{N_POOLED}xf32>
  %1 = arith.subf %0, %x : tensor<{N_POOLED}xf32>
  return %1 : tensor<{N_POOLED}xf32>
}}
"""


def test_each_device_has_its_own_worker_pool(build):
    """As each --device=local-task of iree-run-module creates its own driver and with it
    its own task executor (iree/tooling/device_util.c: iree_hal_create_device per device;
    iree/hal/drivers/local_task/registration/driver_module.c: executors made per driver),
    the devices of a context split their grids on pools of their own; a one-worker device
    has none. The results equal iree.runtime's."""
    from runtime_support.native import pool as native_pool

    vmfb, pkg = build("per_device", PER_DEVICE)
    x = np.linspace(-2, 2, N_POOLED, dtype=np.float32)
    ctx = load_package(pkg).load(device=["local", "local"], workers=2)
    assert [d.pool_ordinal for d in ctx.devices] == [0, 1]
    a, b = ctx.on_a(x), ctx.on_b(x)
    ref = iree_runtime(vmfb, "on_a", ("local-task", "local-task"), [x])[0]
    np.testing.assert_array_equal(a, ref)
    np.testing.assert_array_equal(b, iree_runtime(vmfb, "on_b", ("local-task",) * 2, [x])[0])
    first, second = native_pool.current_pool(0), native_pool.current_pool(1)
    assert first is not None and second is not None and first is not second
    assert first.address != second.address and second.threads >= 1
    # a local-sync second device (one worker) splits nothing, so uses no pool
    sync = load_package(pkg).load(device=["local", "local-sync"])
    assert sync.devices[1].worker_count == 1
    np.testing.assert_array_equal(sync.on_b(x), b)


def test_grids_on_two_devices_at_once_finish(build):
    """Two threads, each calling a function on another device of its own context, many
    times at once: both pools run grids at the same time (on a 2-CPU machine their workers
    share the CPUs) and every call finishes with the one-device run's result."""
    import threading

    _, pkg = build("per_device", PER_DEVICE)
    x = np.linspace(-2, 2, N_POOLED, dtype=np.float32)
    want = {"on_a": x * x + x, "on_b": x * x - x}
    contexts = [load_package(pkg).load(device=["local", "local"]) for _ in range(2)]
    for name in want:  # one device's results, as run alone
        want[name] = np.asarray(getattr(contexts[0], name)(x))
    errors, done = [], []

    def calls(ctx, name):
        try:
            for _ in range(30):
                np.testing.assert_array_equal(getattr(ctx, name)(x), want[name])
            done.append(name)
        except BaseException as e:  # (reported by the main thread)
            errors.append(e)

    threads = [threading.Thread(target=calls, args=(ctx, name), daemon=True)
               for ctx, name in zip(contexts, want)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "grids on two devices did not finish"
    assert not errors, errors[0]
    assert sorted(done) == ["on_a", "on_b"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_starts_each_devices_pool_afresh(build):
    """After fork() every device's pool is forgotten (its threads did not survive): the
    child's grids on both devices make new pools and finish with the same results."""
    from runtime_support.native import pool as native_pool

    _, pkg = build("per_device", PER_DEVICE)
    x = np.linspace(-2, 2, N_POOLED, dtype=np.float32)
    ctx = load_package(pkg).load(device=["local", "local"], workers=2)
    a, b = np.asarray(ctx.on_a(x)), np.asarray(ctx.on_b(x))
    parents = native_pool.current_pool(0), native_pool.current_pool(1)
    assert None not in parents
    pid = os.fork()
    if pid == 0:  # (the child reports by its exit status only)
        ok = False
        try:
            forgotten = native_pool.current_pool(0) is None and native_pool.current_pool(1) is None
            same = (np.array_equal(ctx.on_a(x), a) and np.array_equal(ctx.on_b(x), b))
            fresh = all(native_pool.current_pool(k) not in (None, *parents) for k in (0, 1))
            ok = forgotten and same and fresh
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
