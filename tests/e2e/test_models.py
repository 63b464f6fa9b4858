"""Real PyTorch models through pyree: examples/models exported with iree-turbine, compiled for
llvm-cpu, translated, and run.

For each model (MLP, ResNet-18-shaped CNN, GPT-2-style decoder) and each way of carrying the
weights (inlined into the vmfb; externalized into a .irpa loaded through `io_parameters`):

* the translated package's output equals iree.runtime's on the same vmfb bit for bit
  (both local-sync);
* it is close to PyTorch eager: max|pyree - torch| / max|torch| <= 1e-4 (the error relative
  to the largest reference magnitude, computed in float64; per-element relative error is
  meaningless for outputs near zero).

turbine exports carry no `iree.abi.declaration`; they come as `main` (synchronous) and
`main$async` (coarse fences), and both are exercised.

Exported and compiled artifacts are cached like the corpus vmfbs (tests/conftest.py): per run,
and persistently under `<cache>/models/`, keyed by the example sources, torch, iree-turbine and
compiler versions, compile flags and, for `--iree-llvmcpu-target-cpu=host`, this CPU's name
and features. Skipped (with the reason) only when torch or iree-turbine cannot be imported.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT, compiler_version, persistent_cache_dir
from iree_oracle import iree_run
from differential import load_package
from translator.codegen import write_package
from translator.reader import read_module_file

pytestmark = [
    pytest.mark.slow,
    # Noise from torch.export / iree-turbine internals, not from pyree.
    pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning"),
    pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning"),
]

MODELS_DIR = REPO_ROOT / "examples" / "models"
MODELS = ("mlp", "resnet18", "gpt2")
PARAMS = ("inline", "external")
TARGET_CPU = "host"
REL_TOL = 1e-4


def _import_error(name: str) -> str | None:
    try:
        __import__(name)
    except Exception as e:  # ImportError, or a broken install raising anything else
        return f"{type(e).__name__}: {e}"
    return None


def _require_exporter():
    for name in ("torch", "iree.turbine.aot"):
        err = _import_error(name)
        if err is not None:
            pytest.skip(f"{name} is not importable ({err}); pip install '.[test]' installs it")


def load_examples():
    """examples/models as a package under a private name (its `export` module)."""
    name = "_pyree_example_models"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, MODELS_DIR / "__init__.py", submodule_search_locations=[str(MODELS_DIR)]
        )
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return importlib.import_module(f"{name}.export")


def rel_error(actual, reference) -> float:
    """max|actual - reference| / max|reference|, in float64."""
    a = np.asarray(actual, np.float64)
    r = np.asarray(reference, np.float64)
    return float(np.max(np.abs(a - r)) / np.max(np.abs(r)))


# --- artifacts: export + compile, cached -------------------------------------------------------


def _host_cpu() -> str:
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_name() + " " + llvm.get_host_cpu_features().flatten()


def artifact_key(model: str, params: str, flags, dynamic_batch: bool = False) -> str:
    h = hashlib.sha256()
    if dynamic_batch:
        h.update(b"dynamic_batch\0")
    for path in sorted(MODELS_DIR.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for dist in ("torch", "iree-turbine"):
        h.update(f"{dist}={importlib.metadata.version(dist)}\0".encode())
    h.update(compiler_version().encode() + b"\0")
    h.update(f"{model}\0{params}\0".encode() + "\n".join(flags).encode())
    if any(f.endswith("target-cpu=host") for f in flags):
        h.update(_host_cpu().encode())
    return h.hexdigest()


def _cached_export(model: str, params: str, run_dir: Path, dynamic_batch: bool = False):
    """The Exported record for (model, params[, a dynamic batch dim]): from this run, the
    persistent cache, or made."""
    export = load_examples()
    flags = export.compile_flags(TARGET_CPU)
    key = artifact_key(model, params, flags, dynamic_batch)
    tag = "_dynbatch" if dynamic_batch else ""
    name = f"{model}{tag}-{params}-{key[:16]}"
    roots = [run_dir]
    persistent = persistent_cache_dir()
    if persistent is not None:
        roots.append(persistent / "models")
    for root in roots:
        meta = root / name / f"{model}_{params}{tag}.json"
        if meta.is_file():
            return export.Exported.from_json(root / name, json.loads(meta.read_text()))
    # Export into a scratch folder in the persistent cache (this run's folder if that is not
    # writable), then rename it into place: a folder with its .json is always complete.
    for root in reversed(roots):
        try:
            root.mkdir(parents=True, exist_ok=True)
            scratch = Path(tempfile.mkdtemp(dir=root, prefix=f".{name}."))
            break
        except OSError:
            continue
    export.export_model(model, params, scratch, target_cpu=TARGET_CPU, keep_mlir=False,
                        dynamic_batch=dynamic_batch)
    final = scratch.parent / name
    try:
        os.replace(scratch, final)
    except OSError:  # another process got there first
        shutil.rmtree(scratch, ignore_errors=True)
    meta = json.loads((final / f"{model}_{params}{tag}.json").read_text())
    return export.Exported.from_json(final, meta)


@pytest.fixture(scope="session")
def model_artifacts(tmp_path_factory):
    """Callable (model, params) -> Exported (vmfb, irpa, input, expected, ...), cached."""
    run_dir = tmp_path_factory.mktemp("models")
    made = {}

    def get(model: str, params: str, dynamic_batch: bool = False):
        _require_exporter()
        if (model, params, dynamic_batch) not in made:
            made[model, params, dynamic_batch] = _cached_export(model, params, run_dir,
                                                                dynamic_batch)
        return made[model, params, dynamic_batch]

    return get


# --- iree.runtime --------------------------------------------------------------------------------


# --- pyree ---------------------------------------------------------------------------------------


def translate_and_load(art, tmp_path, device="local-sync", **translate):
    pkg = load_package(
        write_package(read_module_file(art.vmfb), tmp_path, f"{art.model}_{art.params}", **translate)
    )
    parameters = {art.scope: str(art.irpa)} if art.irpa is not None else None
    return pkg, pkg.load(device=device, parameters=parameters)


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("model", MODELS)
def test_model_matches_iree_runtime_and_torch(model, params, model_artifacts, tmp_path):
    art = model_artifacts(model, params)
    x = np.load(art.input)
    expected = np.load(art.expected)
    pkg, ctx = translate_and_load(art, tmp_path)
    # turbine's exports: no ABI declarations, a sync `main` over a coarse-fences `main$async`.
    assert pkg.EXPORTS == {"main$async": None, "main": None, "__init": None}

    ours = ctx.main(x)
    parameters = [(art.scope, art.irpa)] if art.irpa is not None else None
    [theirs] = iree_run(art.vmfb, "main", [x], parameters=parameters)
    assert ours.dtype == np.float32 and ours.shape == expected.shape
    assert (
        ours.tobytes() == theirs.tobytes()
    ), f"pyree differs from iree.runtime: max abs diff {np.max(np.abs(ours - theirs))}"
    err = rel_error(ours, expected)
    assert err <= REL_TOL, f"relative error vs torch eager {err:.3g} > {REL_TOL}"
    # The async export with fences supplied by the wrapper gives the same bits.
    assert ctx.main_async(x).tobytes() == ours.tobytes()
    ctx.close()


def _executable(ctx):
    from runtime_support.hal.executable import HalExecutable

    return next(r for r in ctx.refs._slots.values() if isinstance(r, HalExecutable))


def test_repeated_calls_and_failures_through_main(model_artifacts, tmp_path):
    """`main` over `main$async` call after call: its wrapper specializes after the first
    call (no declaration: context.py learns the types), the same bits as iree.runtime
    for every input; and what fails inside main$async (a dispatch of a closed
    executable, whose failure reaches main's `hal.fence.await` through the fence the
    queue chain signals; an input the module's checks reject) raises through main the
    VMError an unspecialized wrapper and the --no-fuse package raise."""
    from iree_oracle import IreeSession
    from runtime_support.errors import VMError

    art = model_artifacts("mlp", "inline")
    x = np.load(art.input)
    theirs = IreeSession(art.vmfb, driver="local-sync")
    pkg, ctx = translate_and_load(art, tmp_path / "programs")
    main = ctx.main
    for k in range(4):
        xk = (x * (k + 1) - k).astype(np.float32)
        [want] = theirs.call("main", [xk])
        assert main(xk).tobytes() == want.tobytes(), k
    assert "_switch" not in main.__code__.co_names  # (specialized, the same function object)
    per_op = load_package(
        write_package(read_module_file(art.vmfb), tmp_path / "per_op", "mlp_per_op",
                      queue_programs=False)
    )

    def failures(context):
        out = []
        for bad in (np.zeros((2, 784), np.float32), x.astype(np.float64)):
            with pytest.raises(VMError) as e:
                context.main(bad)
            out.append(str(e.value))
        _executable(context).close()
        with pytest.raises(VMError) as e:
            context.main(x)
        return out + [str(e.value)]

    got = failures(ctx)
    assert "executable is closed" in got[-1]
    assert got == failures(pkg.load(device="local-sync"))  # (first calls: not specialized)
    assert got == failures(per_op.load(device="local-sync"))


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_dynamic_batch_calls_match_iree_runtime(model_artifacts, tmp_path, device, monkeypatch):
    """The MLP exported with a dynamic batch dim (each call records its one-shot command
    buffers): batch sizes in and out of order, each call bit-identical to iree.runtime,
    every call running one plan per batch size."""
    from helpers_plans import launched_plans, one_plan_per_key, plans_per_call
    from iree_oracle import IreeSession
    from runtime_support.native import jit as native_jit

    launched = launched_plans(monkeypatch)

    art = model_artifacts("mlp", "inline", dynamic_batch=True)
    x = np.load(art.input)
    theirs = IreeSession(art.vmfb, driver="local-sync")
    _, ctx = translate_and_load(art, tmp_path, device=device)
    rng = np.random.default_rng(7)
    calls = []
    for batch in (4, 1, 4, 4, 9, 1, 9, 4, 1):
        xb = rng.standard_normal((batch, *x.shape[1:])).astype(np.float32)

        def call(xb=xb, batch=batch):
            [want] = theirs.call("main", [xb])
            got = ctx.main(xb)
            assert got.shape == want.shape and got.tobytes() == want.tobytes(), batch

        calls.append((batch, call))
    per_call = plans_per_call(calls, launched)
    if native_jit.native_runtime() is not None:
        assert one_plan_per_key(per_call), per_call
    ctx.close()


def test_async_export_with_explicit_fences(model_artifacts, tmp_path):
    art = model_artifacts("mlp", "inline")
    x = np.load(art.input)
    pkg, ctx = translate_and_load(art, tmp_path, device="local")
    want = ctx.main(x)

    # Work waits for `wait`; results are device values, valid once `signal` is reached.
    wait, signal = ctx.create_fence(), ctx.create_fence()
    view = ctx.main_async(x, wait, signal)
    assert not signal.is_reached
    wait.signal()
    assert signal.wait(timeout=60)
    assert view.to_numpy().tobytes() == want.tobytes()

    # Chained: the second call consumes the first one's fence.
    first, second = ctx.create_fence(), ctx.create_fence()
    ctx.main_async(x, None, first)
    out = ctx.main_async(x, first, second)
    assert second.wait(timeout=60)
    assert out.to_numpy().tobytes() == want.tobytes()

    with pytest.raises(TypeError, match="wait_fence"):
        ctx.main_async(x, object(), None)
    with pytest.raises(TypeError, match="or 3 with wait and signal fences"):
        ctx.main_async(x, None)
    ctx.close()


def test_external_weights_are_not_in_the_vmfb(model_artifacts):
    inline = model_artifacts("resnet18", "inline")
    external = model_artifacts("resnet18", "external")
    weights = external.irpa.stat().st_size
    assert weights > 40_000_000  # 11.7M float32 parameters
    assert external.vmfb.stat().st_size < weights // 50 < inline.vmfb.stat().st_size
    assert b"io_parameters.load" in external.vmfb.read_bytes()


ASYNC_DECLARED = """
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.subf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def test_declared_async_export_both_forms(tmp_path):
    """An export declared `async` (--iree-execution-model=async-external) is called like
    turbine's `main$async`: without fences (numpy out) or with them (device values out)."""
    from helpers_compile import LLVM_CPU_FLAGS, compile_mlir

    flags = LLVM_CPU_FLAGS + ("--iree-execution-model=async-external",)
    vmfb = compile_mlir(ASYNC_DECLARED, tmp_path, flags=flags, name="async_f")
    pkg = load_package(write_package(read_module_file(vmfb), tmp_path / "out", "async_f"))
    assert pkg.EXPORTS["f"].startswith("async func @f(")
    ctx = pkg.load(device="local-sync")
    a = np.arange(4, dtype=np.float32)
    b = np.full(4, 0.5, np.float32)
    assert ctx.f(a, b).tolist() == [-0.5, 0.5, 1.5, 2.5]
    wait, signal = ctx.create_fence(), ctx.create_fence()
    view = ctx.f(a, b, wait, signal)
    assert not signal.is_reached
    wait.signal()
    assert signal.wait(timeout=60)
    assert view.to_numpy().tolist() == [-0.5, 0.5, 1.5, 2.5]
    with pytest.raises(ValueError, match="dimension 0"):  # declared shapes still checked
        ctx.f(a[:3], b, None, None)


DENORMALS = """
func.func @f(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = arith.mulf %a, %b : tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_kernels_flush_denormals_like_iree(device, tmp_path):
    """IREE runs every dispatch with denormals flushed to zero (FTZ and DAZ on x86-64):
    models whose activations underflow are bit-exact only if pyree does the same. The
    thread's own FPU state (numpy here) is left as it was."""
    from helpers_compile import compile_mlir

    flags = load_examples().compile_flags(TARGET_CPU)
    vmfb = compile_mlir(DENORMALS, tmp_path, flags=flags, name="denormals")
    pkg = load_package(write_package(read_module_file(vmfb), tmp_path / "out", "denormals"))
    a = np.array([1e-20, 1e-40, 3e-39, -1e-20, 1.0, 2.0, 1e-30, 0.5], np.float32)
    b = np.array([1e-20, 1.0, 2.0, 1e-21, 1e-40, 1.0, 1e-10, 1e-38], np.float32)
    ours = pkg.load(device=device).f(a, b)
    [theirs] = iree_run(vmfb, "f", [a, b])
    assert ours.tobytes() == theirs.tobytes()
    assert ours[0] == 0 and ours[1] == 0  # a denormal result, a denormal operand
    assert np.float32(1e-20) * np.float32(1e-20) != 0  # numpy still has gradual underflow
