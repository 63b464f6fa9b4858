"""End to end on a real model: PyTorch -> iree-turbine -> vmfb -> pyree -> numbers.

    python3 examples/model_demo.py [--model mlp|resnet18|gpt2] [--params inline|external]
                                   [--out DIR]

Builds the model with random weights (fixed seed, nothing downloaded), exports it with
iree-turbine (weights inlined, or externalized to a `.irpa` archive), compiles it with the
pinned iree-compile, translates it with pyree, runs it translated (local-sync), under the
IREE runtime and in PyTorch eager, and prints the max errors. Exit status 1 if pyree and
IREE differ in any bit or the error against PyTorch exceeds 1e-4 relative.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from examples.models.export import MODELS, export_model  # noqa: E402
from translator.codegen import write_package  # noqa: E402
from translator.reader import read_module_file  # noqa: E402


def _import(pkg_dir: Path):
    spec = importlib.util.spec_from_file_location(
        f"_demo_{pkg_dir.name}", pkg_dir / "__init__.py", submodule_search_locations=[str(pkg_dir)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _iree_run(vmfb: Path, x: np.ndarray, irpa: Path | None, scope: str | None) -> np.ndarray:
    import iree.runtime as rt

    config = rt.Config("local-sync")
    modules = [rt.create_hal_module(config.vm_instance, config.device)]
    if irpa is not None:
        index = rt.ParameterIndex()
        index.load(str(irpa))
        modules.append(
            rt.create_io_parameters_module(
                config.vm_instance, index.create_provider(scope=scope)
            )
        )
    main = rt.VmModule.mmap(config.vm_instance, str(vmfb))
    ctx = rt.SystemContext(vm_modules=[*modules, main], config=config)
    return np.asarray(ctx.modules.module["main"](x).to_host())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="mlp")
    parser.add_argument("--params", choices=("inline", "external"), default="external")
    parser.add_argument("--out", type=Path, default=REPO / "out" / "model_demo")
    args = parser.parse_args(argv)

    exported = export_model(args.model, args.params, args.out)
    print(f"exported {args.model} ({args.params} weights) -> {exported.vmfb.name}: "
          f"export {exported.times['export']:.2f} s, compile {exported.times['compile']:.2f} s")

    t0 = time.perf_counter()
    pkg_dir = write_package(read_module_file(exported.vmfb), args.out, f"{args.model}_{args.params}")
    print(f"translated -> {pkg_dir} in {time.perf_counter() - t0:.2f} s")

    x = np.load(exported.input)
    expected = np.load(exported.expected)
    pkg = _import(Path(pkg_dir))
    parameters = {exported.scope: str(exported.irpa)} if exported.irpa else None
    t0 = time.perf_counter()
    ctx = pkg.load(device="local-sync", parameters=parameters)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = np.asarray(ctx.main(x))
    call_s = time.perf_counter() - t0
    theirs = _iree_run(exported.vmfb, x, exported.irpa, exported.scope)

    identical = ours.dtype == theirs.dtype and ours.tobytes() == theirs.tobytes()
    scale = float(np.max(np.abs(expected))) or 1.0
    vs_torch = float(np.max(np.abs(ours.astype(np.float64) - expected))) / scale
    vs_iree = float(np.max(np.abs(ours.astype(np.float64) - theirs)))
    print(f"pyree load {load_s * 1e3:.1f} ms, first call {call_s * 1e3:.1f} ms; output {ours.shape} {ours.dtype}")
    print(f"max |pyree - iree.runtime| = {vs_iree:.3g} (bit-identical: {identical})")
    print(f"max |pyree - torch eager| / max |torch| = {vs_torch:.3g}")
    ok = identical and vs_torch <= 1e-4
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
