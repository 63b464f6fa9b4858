"""Times the example PyTorch models (examples/models) end to end, pyree against iree.runtime.

    python3 bench/models.py [--models mlp,resnet18,gpt2] [--params inline|external|both]
                            [--iters 20] [--target-cpu host] [--out DIR]

For each model and weight placement it exports with iree-turbine and compiles with
iree-compile (into --out, a temporary folder by default), translates the vmfb in-process
(read + codegen + black + write), loads it under pyree and under iree.runtime, checks both
give the same bits, and times calls. Calls alternate between the two runtimes (after two
warm-up calls each) so that load on the machine hits both alike; latencies are the median
and the minimum over --iters calls. Devices: pyree `local-sync` vs IREE `local-sync`
(single thread), and pyree `local` vs IREE `local-task` (worker threads).

Output: one header line, then one line of plain numbers per (model, params); seconds for
one-off steps, milliseconds per call. Needs the test extra (torch, iree-turbine, iree).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MODELS_DIR = REPO / "examples" / "models"

COLUMNS = (
    ("model", "{}"),
    ("params", "{}"),
    ("export_s", "{:.2f}"),
    ("compile_s", "{:.2f}"),
    ("translate_s", "{:.2f}"),
    ("pyree_load_s", "{:.3f}"),
    ("iree_load_s", "{:.3f}"),
    ("pyree_sync_ms", "{:.3f}"),
    ("iree_sync_ms", "{:.3f}"),
    ("pyree_sync_min_ms", "{:.3f}"),
    ("iree_sync_min_ms", "{:.3f}"),
    ("pyree_local_ms", "{:.3f}"),
    ("iree_task_ms", "{:.3f}"),
    ("rel_err_vs_torch", "{:.2e}"),
)


def load_examples():
    name = "_pyree_example_models"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, MODELS_DIR / "__init__.py", submodule_search_locations=[str(MODELS_DIR)]
        )
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return importlib.import_module(f"{name}.export")


class IreeModule:
    """One vmfb under iree.runtime (with io_parameters for external weights)."""

    def __init__(self, art, driver: str) -> None:
        import iree.runtime as rt

        self.rt = rt
        self.instance = rt.VmInstance()
        self.device = rt.get_device(driver)
        modules = [rt.create_hal_module(self.instance, self.device)]
        if art.irpa is not None:
            index = rt.ParameterIndex()
            index.load(str(art.irpa))
            provider = index.create_provider(scope=art.scope)
            modules.insert(0, rt.create_io_parameters_module(self.instance, provider))
        self.vm = rt.VmModule.mmap(self.instance, str(art.vmfb))
        self.context = rt.VmContext(self.instance, modules=modules + [self.vm])
        self.fn = self.vm.lookup_function("main")

    def __call__(self, x: np.ndarray) -> np.ndarray:
        rt = self.rt
        element = {np.dtype(np.float32): "FLOAT_32", np.dtype(np.int64): "INT_64"}[x.dtype]
        args, rets = rt.VmVariantList(1), rt.VmVariantList(1)
        args.push_ref(
            self.device.allocator.allocate_buffer_copy(
                memory_type=rt.MemoryType.DEVICE_LOCAL,
                allowed_usage=rt.BufferUsage.DEFAULT,
                device=self.device,
                buffer=x,
                element_type=getattr(rt.HalElementType, element),
            )
        )
        self.context.invoke(self.fn, args, rets)
        out = rets.get_as_object(0, rt.HalBufferView)
        return np.array(out.map().asarray(tuple(out.shape), np.dtype(np.float32)), copy=True)


def load_package(pkg_dir: Path):
    name = f"_bench_{pkg_dir.name}"
    spec = importlib.util.spec_from_file_location(
        name, pkg_dir / "__init__.py", submodule_search_locations=[str(pkg_dir)]
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def alternate(a, b, x, iters: int) -> tuple[list[float], list[float]]:
    """Per-call seconds of a(x) and b(x), called alternately after two warm-up calls each."""
    for _ in range(2):
        a(x)
        b(x)
    ta, tb = [], []
    for _ in range(iters):
        t0 = time.perf_counter()
        a(x)
        t1 = time.perf_counter()
        b(x)
        t2 = time.perf_counter()
        ta.append(t1 - t0)
        tb.append(t2 - t1)
    return ta, tb


def bench_one(export, model: str, params: str, out: Path, iters: int, target_cpu: str) -> dict:
    from runtime_support.loaders.executable import native_loop
    from translator.codegen import write_package
    from translator.reader import read_module_file

    art = export.export_model(model, params, out, target_cpu=target_cpu)
    row = {
        "model": model,
        "params": params,
        "export_s": art.times["export"] + art.times.get("save_params", 0.0),
        "compile_s": art.times["compile"],
    }

    t0 = time.perf_counter()
    pkg_dir = write_package(read_module_file(art.vmfb), out / "pkgs", f"{model}_{params}")
    row["translate_s"] = time.perf_counter() - t0

    native_loop()  # the process-wide JIT dispatch loop: a one-off, not part of a load
    parameters = {art.scope: str(art.irpa)} if art.irpa is not None else None
    t0 = time.perf_counter()
    pkg = load_package(pkg_dir)
    ours = pkg.load(device="local-sync", parameters=parameters)
    row["pyree_load_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    theirs = IreeModule(art, "local-sync")
    row["iree_load_s"] = time.perf_counter() - t0

    x = np.load(art.input)
    y = ours.main(x)
    if y.tobytes() != theirs(x).tobytes():
        raise SystemExit(f"{model} {params}: pyree and iree.runtime results differ")
    ref = np.load(art.expected).astype(np.float64)
    row["rel_err_vs_torch"] = float(np.max(np.abs(y - ref)) / np.max(np.abs(ref)))

    ta, tb = alternate(ours.main, theirs, x, iters)
    row["pyree_sync_ms"] = statistics.median(ta) * 1e3
    row["iree_sync_ms"] = statistics.median(tb) * 1e3
    row["pyree_sync_min_ms"] = min(ta) * 1e3
    row["iree_sync_min_ms"] = min(tb) * 1e3

    ours_mt = pkg.load(device="local", parameters=parameters)
    theirs_mt = IreeModule(art, "local-task")
    ta, tb = alternate(ours_mt.main, theirs_mt, x, iters)
    row["pyree_local_ms"] = statistics.median(ta) * 1e3
    row["iree_task_ms"] = statistics.median(tb) * 1e3
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="mlp,resnet18,gpt2")
    ap.add_argument("--params", choices=("inline", "external", "both"), default="inline")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--target-cpu", default="host")
    ap.add_argument("--out", type=Path, default=None, help="keep artifacts here")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    export = load_examples()
    params = ("inline", "external") if args.params == "both" else (args.params,)
    with tempfile.TemporaryDirectory(prefix="pyree-bench-models-") as tmp:
        out = args.out or Path(tmp)
        print(" ".join(name for name, _ in COLUMNS), flush=True)
        for model in args.models.split(","):
            for p in params:
                row = bench_one(export, model, p, out, args.iters, args.target_cpu)
                print(" ".join(fmt.format(row[name]) for name, fmt in COLUMNS), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
