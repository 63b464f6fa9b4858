"""A tensor-parallel MLP over 2 ranks: IREE collectives run translated under mpiexec.

    python3 examples/sharded_mlp.py          (needs: pip install '.[mpi]')

The MLP y = relu(x @ W1 + b1) @ W2 + b2 (64 -> 128 -> 32, batch 8) is written twice in
stablehlo: whole, and sharded Megatron-style for 2 ranks (each rank holds half of W1's
columns and b1, and the matching half of W2's rows; the partial products are summed with
`stablehlo.all_reduce`). Both are compiled for the CPU with the pinned iree-compile and
translated. The sharded one runs under `mpiexec -n 2` with pyree's collectives; the whole
one runs in this process. The sum over the hidden layer happens in a different order
(two halves of 64 terms, then their sum), so the results agree to float32 rounding, not
bit for bit: the script prints the largest difference and fails above 1e-5 relative.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
B, D, H, O = 8, 64, 128, 32


def mlp(hidden: int, sharded: bool) -> str:
    reduce = ""
    out = "%p"
    if sharded:
        reduce = """
  %r = "stablehlo.all_reduce"(%p) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
        replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}
      : (tensor<BxOxf32>) -> tensor<BxOxf32>"""
        out = "%r"
    text = f"""
func.func @forward(%x: tensor<BxDxf32>, %w1: tensor<DxHxf32>, %b1: tensor<Hxf32>,
                   %w2: tensor<HxOxf32>, %b2: tensor<Oxf32>) -> tensor<BxOxf32> {{
  %h0 = stablehlo.dot %x, %w1 : (tensor<BxDxf32>, tensor<DxHxf32>) -> tensor<BxHxf32>
  %bb1 = stablehlo.broadcast_in_dim %b1, dims = [1] : (tensor<Hxf32>) -> tensor<BxHxf32>
  %h1 = stablehlo.add %h0, %bb1 : tensor<BxHxf32>
  %zero = stablehlo.constant dense<0.0> : tensor<BxHxf32>
  %h = stablehlo.maximum %h1, %zero : tensor<BxHxf32>
  %p = stablehlo.dot %h, %w2 : (tensor<BxHxf32>, tensor<HxOxf32>) -> tensor<BxOxf32>{reduce}
  %bb2 = stablehlo.broadcast_in_dim %b2, dims = [1] : (tensor<Oxf32>) -> tensor<BxOxf32>
  %y = stablehlo.add {out}, %bb2 : tensor<BxOxf32>
  return %y : tensor<BxOxf32>
}}
"""
    for k, v in (("BxDx", f"{B}x{D}x"), ("DxHx", f"{D}x{hidden}x"), ("BxHx", f"{B}x{hidden}x"),
                 ("HxOx", f"{hidden}x{O}x"), ("BxOx", f"{B}x{O}x"), ("Hx", f"{hidden}x"), ("Ox", f"{O}x")):
        text = text.replace(k, v)
    return text


RANK = """
import sys
import numpy as np
from mpi4py import MPI
sys.path.insert(0, sys.argv[1])
import sharded
rank = MPI.COMM_WORLD.Get_rank()
d = np.load(sys.argv[2])
half = slice(rank * d["w1"].shape[1] // 2, (rank + 1) * d["w1"].shape[1] // 2)
y = sharded.load(device="local-sync").forward(d["x"], np.ascontiguousarray(d["w1"][:, half]),
                                              d["b1"][half], np.ascontiguousarray(d["w2"][half]), d["b2"])
np.save(sys.argv[3].format(rank=rank), y)
"""


def compile_and_translate(source: str, name: str, work: Path) -> Path:
    from iree.compiler import compile_str  # the pinned compiler (test/example dependency)

    from translator.codegen import write_package
    from translator.reader import read_module

    vmfb = compile_str(source, input_type="stablehlo", target_backends=["llvm-cpu"],
                       extra_args=["--iree-llvmcpu-target-cpu=host"])
    return write_package(read_module(vmfb), work / "out", name)


def main() -> int:
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        print("examples/sharded_mlp.py: no mpiexec; install with: pip install '.[mpi]'", file=sys.stderr)
        return 1
    rng = np.random.default_rng(0)
    data = {
        "x": rng.standard_normal((B, D), dtype=np.float32),
        "w1": rng.standard_normal((D, H), dtype=np.float32) / 8,
        "b1": rng.standard_normal(H, dtype=np.float32),
        "w2": rng.standard_normal((H, O), dtype=np.float32) / 8,
        "b2": rng.standard_normal(O, dtype=np.float32),
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        compile_and_translate(mlp(H, sharded=False), "whole", work)
        compile_and_translate(mlp(H // 2, sharded=True), "sharded", work)
        np.savez(work / "data.npz", **data)
        (work / "rank.py").write_text(RANK)
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        subprocess.run(
            [mpiexec, "-n", "2", sys.executable, str(work / "rank.py"), str(work / "out"),
             str(work / "data.npz"), str(work / "y{rank}.npy")],
            check=True, env=env, timeout=300,
        )
        sys.path.insert(0, str(work / "out"))
        import whole

        reference = whole.load(device="local-sync").forward(*data.values())
        ranks = [np.load(work / f"y{r}.npy") for r in range(2)]
    assert ranks[0].tobytes() == ranks[1].tobytes(), "the ranks disagree after the all-reduce"
    err = float(np.max(np.abs(ranks[0] - reference)) / np.max(np.abs(reference)))
    print(f"sharded MLP on 2 ranks vs whole on 1: max relative difference {err:.2e} "
          f"(bit-identical: {ranks[0].tobytes() == reference.tobytes()})")
    return 0 if err < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
