"""Collectives on the `cuda` device (issue 29): NCCL as IREE's CUDA HAL drives it, against
the NCCL test double (tests/support/nccl_double.py) over the CUDA driver double, no GPU needed.

A sharded stablehlo program (all_reduce, all_gather, reduce_scatter) compiled for cuda
runs under `mpiexec -n 2` (tests/support/cuda_collectives_worker.py): rank 0 makes the NCCL id,
MPI carries it to rank 1, both join the communicator, each collective is one NCCL group
on the device's stream. The exact NCCL call log of both ranks is a golden
(tests/golden/cuda/nccl_sharded.log; `pytest --update-golden` rewrites it); the values
are what the double's host arithmetic gives, checked against numpy.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from test_cuda_device import _check_golden
from test_cuda_executable import cuda_flags
from translator.codegen import write_package
from translator.reader import read_module_file
from helpers_mpi import STABLEHLO, mpi_env, mpiexec, worker_results

REPO = Path(__file__).resolve().parents[2]
WORKER = REPO / "tests" / "support" / "cuda_collectives_worker.py"
SHARDED = STABLEHLO.split("func.func @all_to_all")[0]


@pytest.fixture(scope="module")
def sharded_package(compile_mlir, tmp_path_factory):
    root = tmp_path_factory.mktemp("cuda_coll")
    src = root / "sharded.mlir"
    src.write_text(SHARDED)
    vmfb = compile_mlir(src, ("--iree-input-type=stablehlo", *cuda_flags("sm_80")))
    write_package(read_module_file(vmfb), root / "out", "sharded", format_code=False)
    return root / "out"


def test_sharded_program_on_two_ranks_nccl_log(sharded_package, update_golden):
    cmd = [mpiexec(), "-n", "2", sys.executable, str(WORKER), str(sharded_package), "sharded"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=mpi_env(), cwd=REPO)
    assert res.returncode == 0, res.stderr[-3000:]
    got = {r["rank"]: r for r in worker_results(res.stdout)}
    assert sorted(got) == [0, 1]
    for r in got.values():
        assert r["errors"] == [] and "error" not in r["results"], r
    x = [np.arange(4, dtype=np.float32) + 10 * r for r in range(2)]
    m = np.maximum(np.arange(4) * 1.0, np.arange(4) * 2.0)
    for rank in (0, 1):
        res_ = got[rank]["results"]
        assert res_["all_reduce_sum"] == (x[0] + x[1]).tolist()
        assert res_["all_gather"] == [0, 1, 10, 11]
        assert res_["reduce_scatter"] == m[2 * rank : 2 * rank + 2].tolist()
    lines = []
    for rank in (0, 1):
        lines += [f"== rank {rank} =="] + got[rank]["nccl_log"]
    _check_golden(lines, "nccl_sharded", update_golden)


def test_one_rank_without_launcher(sharded_package):
    """No mpiexec: a one-rank channel, NCCL still initialised with its own id."""
    env = mpi_env()
    res = subprocess.run([sys.executable, str(WORKER), str(sharded_package), "sharded"],
                         capture_output=True, text=True, timeout=240, env=env, cwd=REPO)
    assert res.returncode == 0, res.stderr[-3000:]
    (r,) = worker_results(res.stdout)
    assert r["results"]["all_reduce_sum"] == [0.0, 1.0, 2.0, 3.0] and r["errors"] == []
    assert "ncclCommInitRank comm0 1 nccl-double-id from rank 0 0" in r["nccl_log"]


def test_without_nccl_one_unavailable_line(monkeypatch):
    from cuda_driver_double import PyCudaDriverDouble
    from runtime_support.cuda import nccl
    from runtime_support.cuda.device import CudaDevice
    from runtime_support.errors import StatusCode, VMError

    monkeypatch.setattr(nccl, "_candidates", lambda: ["/nonexistent/libnccl.so.2"])
    nccl.reset()
    device = CudaDevice(PyCudaDriverDouble(), 0)
    with pytest.raises(VMError) as e:
        device.create_channel(-1, -1)
    nccl.reset()
    assert e.value.code == StatusCode.UNAVAILABLE and "\n" not in str(e.value)
    assert "pip install nvidia-nccl-cu12" in str(e.value)


@pytest.mark.parametrize("ranks", [1, 2])
def test_every_collective_kind_and_type_on_the_cuda_device(ranks):
    """collectives_worker.py's 240 cases (every kind x reduction x element type the CPU
    path runs) on the cuda device; the only refusals are IREE's: reductions over 16-bit
    integers, which NCCL has no arithmetic for (UNIMPLEMENTED, one line each)."""
    worker = str(REPO / "tests" / "support" / "collectives_worker.py")
    cmd = [sys.executable, worker, "cuda"]
    if ranks > 1:
        cmd = [mpiexec(), "-n", str(ranks), *cmd]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=mpi_env(), cwd=REPO)
    assert res.returncode == 0, res.stderr[-3000:]
    results = worker_results(res.stdout)
    assert sorted(r["rank"] for r in results) == list(range(ranks))
    for r in results:
        assert r["count"] == ranks and r["cases"] == 240 and r["failures"] == [], r
        assert len(r["unimplemented"]) == 30 and all("16>" in n for n in r["unimplemented"])
