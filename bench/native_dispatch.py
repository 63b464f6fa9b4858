"""Host-overhead measurements for the native dispatch path (pyree against iree.runtime).

    python3 bench/native_dispatch.py [--iters 2000] [--chain 40] [--out DIR]

Compiles two small programs with the pinned iree-compile (host CPU), translates them
in-process, checks pyree and iree.runtime give the same bits, then alternates calls one
by one in this process and prints per-call medians (microseconds):

    mul:   examples/simple_mul.mlir (host overhead only)
    chain: N `arith.addf` on tensor<4xf32> separated by util.optimization_barrier

for pyree local-sync / IREE local-sync and pyree local / IREE local-task.
Timings on a shared machine are noisy: only the interleaved ratios mean anything.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
)


def chain_mlir(n: int) -> str:
    lines = ["func.func @chain(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {"]
    prev = "%a"
    for i in range(n):
        lines.append(f"  %s{i} = arith.addf {prev}, %b : tensor<4xf32>")
        lines.append(f"  %o{i} = util.optimization_barrier %s{i} : tensor<4xf32>")
        prev = f"%o{i}"
    lines.append(f"  return {prev} : tensor<4xf32>")
    lines.append("}")
    return "\n".join(lines) + "\n"


def build(source: str, name: str, out: Path):
    from translator.codegen import write_package
    from translator.reader import read_module_file

    src = out / f"{name}.mlir"
    src.write_text(source)
    vmfb = out / f"{name}.vmfb"
    subprocess.run(["iree-compile", *FLAGS, str(src), "-o", str(vmfb)], check=True)
    pkg_dir = write_package(read_module_file(vmfb), out, name)
    spec = importlib.util.spec_from_file_location(
        f"_native_bench_{name}", pkg_dir / "__init__.py", submodule_search_locations=[str(pkg_dir)]
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return vmfb, mod


class Iree:
    def __init__(self, vmfb: Path, driver: str, fn: str) -> None:
        import iree.runtime as rt

        config = rt.Config(driver)
        self.ctx = rt.SystemContext(config=config)
        self.ctx.add_vm_module(rt.VmModule.mmap(config.vm_instance, str(vmfb)))
        self.fn = self.ctx.modules.module[fn]

    def __call__(self, *args):
        return self.fn(*args).to_host()


def interleave(calls, iters: int):
    times = [[] for _ in calls]
    for _ in range(10):
        for c in calls:
            c()
    clock = time.perf_counter_ns
    for _ in range(iters):
        for i, c in enumerate(calls):
            t0 = clock()
            c()
            times[i].append(clock() - t0)
    return [statistics.median(t) / 1000 for t in times]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--chain", type=int, default=40)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="pyree-native-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    a = np.arange(1, 5, dtype=np.float32)
    b = np.full(4, 0.5, dtype=np.float32)
    programs = [
        ("simple_mul", (REPO / "examples" / "simple_mul.mlir").read_text(), "simple_mul"),
        (f"chain{args.chain}", chain_mlir(args.chain), "chain"),
    ]
    print("| program | pyree device / IREE device | pyree µs | IREE µs | ratio |")
    print("|---|---|---|---|---|")
    for name, source, fn in programs:
        vmfb, mod = build(source, name, out)
        for ours, theirs in (("local-sync", "local-sync"), ("local", "local-task")):
            ctx = mod.load(device=ours)
            py = getattr(ctx, fn)
            ir = Iree(vmfb, theirs, fn)
            assert np.asarray(py(a, b)).tobytes() == np.asarray(ir(a, b)).tobytes(), name
            p, i = interleave([lambda: py(a, b), lambda: ir(a, b)], args.iters)
            print(f"| {name} | {ours} / {theirs} | {p:.1f} | {i:.1f} | {p / i:.2f} |")


if __name__ == "__main__":
    main()
