"""End to end on the bundled example: MLIR -> vmfb -> Python package -> run.

    python3 examples/demo.py [--keep]

Compiles examples/simple_mul.mlir with the pinned iree-compile (test extra), translates it
with `pyree-translate` into out/simple_mul/, runs it with `pyree-run` and through the Python
API, and compares with IREE's own runtime on the same vmfb. Exits non-zero on a mismatch.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "simple_mul.mlir"
OUT = REPO / "out"


def main() -> int:
    OUT.mkdir(exist_ok=True)
    vmfb = OUT / "simple_mul.vmfb"
    compiler = shutil.which("iree-compile") or "iree-compile"
    subprocess.run(
        [compiler, "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
         "--iree-llvmcpu-target-cpu=generic", str(EXAMPLE), "-o", str(vmfb)],
        check=True,
    )
    print(f"compiled   {vmfb.relative_to(REPO)} ({vmfb.stat().st_size} bytes)")

    subprocess.run([sys.executable, "-m", "translator.cli", str(vmfb), "-o", str(OUT)], check=True, cwd=REPO)
    print(f"translated {OUT.relative_to(REPO)}/simple_mul/__init__.py")

    spec = ["--input=4xf32=1 2 3 4", "--input=4xf32=5 6 7 8"]
    run = subprocess.run(
        [sys.executable, "-m", "runtime_support.tools.run_cli", str(OUT / "simple_mul"), "--function=simple_mul", *spec],
        check=True, capture_output=True, text=True, cwd=REPO,
    )
    print("pyree-run output:\n" + run.stdout)

    sys.path.insert(0, str(OUT))
    import simple_mul  # the generated package

    a = np.array([1, 2, 3, 4], np.float32)
    b = np.array([5, 6, 7, 8], np.float32)
    ctx = simple_mul.load(device="local-sync")
    t0 = time.perf_counter()
    ours = ctx.simple_mul(a, b)
    t1 = time.perf_counter()

    import iree.runtime as rt  # the oracle, from the test extra

    module = rt.load_vm_flatbuffer_file(str(vmfb), driver="local-sync")
    theirs = np.asarray(module.simple_mul(a, b))
    err = float(np.max(np.abs(ours - theirs)))
    print(f"pyree:        {ours}  ({(t1 - t0) * 1e6:.0f} us)")
    print(f"iree.runtime: {theirs}")
    print(f"numpy:        {a * b}")
    print(f"max |pyree - iree.runtime| = {err}")
    ok = ours.tobytes() == theirs.tobytes() and np.array_equal(ours, a * b)
    print("OK: bit-identical" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
