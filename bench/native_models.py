"""pyree `local` vs `local-sync` vs iree.runtime on compiled example models, interleaved.

    python3 bench/native_models.py VMFB INPUT.npy [--iters 30] [--workers N]

VMFB and INPUT come from `python3 bench/models.py --out DIR` (DIR/NAME_inline.vmfb and
DIR/NAME_input.npy). Translates the vmfb, checks pyree's result bits equal IREE's on
every device, then alternates one call each: pyree local-sync, pyree local, IREE
local-sync, IREE local-task. Prints medians (ms) and the per-dispatch statistics of one
pyree `local` call. Shared machines are noisy: compare only within one run.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics as st
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vmfb", type=Path)
    parser.add_argument("input", type=Path)
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--function", default="main")
    args = parser.parse_args(argv)

    import iree.runtime as rt

    from runtime_support.hal.device import LocalDevice
    from runtime_support.loaders import statistics
    from translator.codegen import write_package
    from translator.reader import read_module_file

    out = Path(tempfile.mkdtemp(prefix="pyree-native-models-"))
    pkg_dir = write_package(read_module_file(args.vmfb), out, "model")
    spec = importlib.util.spec_from_file_location(
        "_native_models_pkg", pkg_dir / "__init__.py", submodule_search_locations=[str(pkg_dir)]
    )
    pkg = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = pkg
    spec.loader.exec_module(pkg)
    x = np.load(args.input)

    calls = {}
    calls["pyree local-sync"] = getattr(pkg.load(device="local-sync"), args.function)
    local = pkg.load(device=LocalDevice("local-task", worker_count=args.workers))
    calls["pyree local"] = getattr(local, args.function)
    for driver in ("local-sync", "local-task"):
        config = rt.Config(driver)
        ctx = rt.SystemContext(config=config)
        ctx.add_vm_module(rt.VmModule.mmap(config.vm_instance, str(args.vmfb)))
        fn = ctx.modules.module[args.function]
        calls[f"IREE {driver}"] = lambda fn=fn: fn(x).to_host()
    expected = np.asarray(calls["IREE local-sync"]()).tobytes()
    for name, fn in calls.items():
        got = fn() if name.startswith("IREE") else fn(x)
        assert np.asarray(got).tobytes() == expected, name
    times = {name: [] for name in calls}
    for _ in range(args.iters):
        for name, fn in calls.items():
            t0 = time.perf_counter()
            fn() if name.startswith("IREE") else fn(x)
            times[name].append(time.perf_counter() - t0)
    for name, values in times.items():
        print(f"{name:18s} median {st.median(values) * 1e3:8.3f} ms  min {min(values) * 1e3:8.3f} ms")
    statistics.enable()
    calls["pyree local"](x)
    statistics.enable(False)
    print(statistics.table())


if __name__ == "__main__":
    main()
