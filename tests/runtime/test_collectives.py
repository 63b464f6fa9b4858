"""Collectives on the CPU device: channels (one rank, or MPI ranks under mpiexec) and
every `hal.command_buffer.collective` operation, reduction and element type, checked
against numpy computing the same collective over all ranks' inputs (IREE 3.13's CPU
runtime has no collectives to compare with: it answers UNIMPLEMENTED).

The multi-rank tests need mpi4py and an `mpiexec` (pip install mpi4py mpich); they run
1, 2 and 4 ranks (oversubscribed on small machines) with a bounded timeout each.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from runtime_support.errors import StatusCode, VMError
from runtime_support.hal.channel import HalChannel
from runtime_support.hal.collectives import decode_op
from helpers_mpi import STABLEHLO, mpi_env, mpiexec, worker_results

REPO = Path(__file__).resolve().parents[2]
WORKER = REPO / "tests" / "support" / "collectives_worker.py"


def _run_ranks(n: int, args: list[str], timeout: int = 240, **env) -> subprocess.CompletedProcess:
    cmd = [mpiexec(), "-n", str(n), sys.executable, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=mpi_env(**env), cwd=REPO)


# -- the op word --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "word, text",
    [  # words iree-compile 3.13 emits for stablehlo collectives
        (0x00090101, "all_reduce.sum<f32>"),
        (0x00050000, "all_gather<ui32>"),
        (0x00090405, "reduce_scatter.maximum<f32>"),
        (0x00090002, "all_to_all<f32>"),
        (0x00090008, "send_recv<f32>"),
        (0x000B0504, "reduce.average<bf16>"),
    ],
)
def test_op_words_decode_as_iree_packs_them(word, text):
    assert str(decode_op(word)) == text


@pytest.mark.parametrize(
    "word, message",
    [
        (0x00000009, "unknown collective operation 9"),
        (0x00000601, "unknown collective reduction 6"),
        (0x000C0101, "unknown collective element type 12"),
        (0x00090001, "all_reduce needs reduction"),
        (0x00090100, "all_gather takes no reduction"),
    ],
)
def test_bad_op_words_are_invalid_argument(word, message):
    with pytest.raises(VMError) as info:
        decode_op(word)
    assert info.value.code == StatusCode.INVALID_ARGUMENT and message in str(info.value)


# -- channels -----------------------------------------------------------------------------------


def test_one_rank_channel_without_mpi(monkeypatch):
    for var in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MPI_LOCALRANKID"):
        monkeypatch.delenv(var, raising=False)
    channel = HalChannel.create(-1, -1)
    assert (channel.rank, channel.count, channel.comm) == (0, 1, None)
    assert channel.split(-1, 0) is None and channel.split(3, 0).count == 1
    with pytest.raises(VMError) as info:
        HalChannel.create(0, 2)
    assert info.value.code == StatusCode.UNAVAILABLE
    assert "pip install 'pyree[mpi]'" in str(info.value) and "\n" not in str(info.value)


# -- every operation, reduction and element type --------------------------------------------------


def test_every_collective_on_one_rank():
    res = subprocess.run([sys.executable, str(WORKER)], capture_output=True, text=True, timeout=240, env=mpi_env(), cwd=REPO)
    assert res.returncode == 0, res.stderr[-3000:]
    (result,) = worker_results(res.stdout)
    assert result["count"] == 1 and result["cases"] == 240 and result["failures"] == []


@pytest.mark.parametrize("ranks", [2, 4])
def test_every_collective_across_ranks(ranks):
    res = _run_ranks(ranks, [str(WORKER)])
    assert res.returncode == 0, res.stderr[-3000:]
    results = worker_results(res.stdout)
    assert sorted(r["rank"] for r in results) == list(range(ranks))
    for r in results:
        assert r["count"] == ranks and r["cases"] == 240 and r["failures"] == [], r


# -- a compiled program --------------------------------------------------------------------------

RANK_SCRIPT = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import coll
from mpi4py import MPI
r = MPI.COMM_WORLD.Get_rank()
ctx = coll.load(device=sys.argv[2])
out = {
    "rank": r,
    "all_reduce_sum": ctx.all_reduce_sum(np.arange(4, dtype=np.float32) + 10 * r).tolist(),
    "all_gather": ctx.all_gather(np.arange(2, dtype=np.int32) + 10 * r).tolist(),
    "reduce_scatter": ctx.reduce_scatter(np.arange(4, dtype=np.float32) * (r + 1)).tolist(),
    "all_to_all": ctx.all_to_all(np.arange(4, dtype=np.float32) + 10 * r).tolist(),
    "permute": ctx.permute(np.arange(4, dtype=np.float32) + 10 * r).tolist(),
}
print(json.dumps(out))
"""


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_translated_stablehlo_collectives_on_two_ranks(device, compile_mlir, tmp_path):
    from translator.codegen import write_package
    from translator.reader import read_module_file

    src = tmp_path / "coll.mlir"
    src.write_text(STABLEHLO)
    vmfb = compile_mlir(src, (
        "--iree-input-type=stablehlo", "--iree-hal-target-device=local",
        "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host",
    ))
    write_package(read_module_file(vmfb), tmp_path / "out", "coll")
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    res = _run_ranks(2, [str(script), str(tmp_path / "out"), device])
    assert res.returncode == 0, res.stderr[-3000:]
    got = {r["rank"]: r for r in worker_results(res.stdout)}
    x = [np.arange(4, dtype=np.float32) + 10 * r for r in range(2)]
    assert got[0]["all_reduce_sum"] == got[1]["all_reduce_sum"] == (x[0] + x[1]).tolist()
    assert got[0]["all_gather"] == got[1]["all_gather"] == [0, 1, 10, 11]
    m = np.maximum(np.arange(4) * 1.0, np.arange(4) * 2.0)
    assert got[0]["reduce_scatter"] == m[:2].tolist() and got[1]["reduce_scatter"] == m[2:].tolist()
    assert got[0]["all_to_all"] == [0, 1, 10, 11] and got[1]["all_to_all"] == [2, 3, 12, 13]
    assert got[0]["permute"] == x[1].tolist() and got[1]["permute"] == x[0].tolist()


# -- ranks that disagree ------------------------------------------------------------------------

NEVER_JOINS = """
import sys
import numpy as np
from runtime_support.errors import VMError
from runtime_support.hal.buffer import HalBuffer
from runtime_support.hal.channel import HalChannel
from runtime_support.hal.command_buffer import HalCommandBuffer
from runtime_support.hal.device import LocalDevice
from runtime_support.hal.module import HalModule
channel = HalChannel.create(-1, -1)
if channel.rank == 1:
    print("rank 1 skips the collective", flush=True)
    sys.exit(0)
device = LocalDevice("local-sync")
hal = HalModule([device])
send, recv = HalBuffer.allocate(16), HalBuffer.allocate(16)
cb = HalCommandBuffer(device, 0, 3, 0)
hal.command_buffer_collective(cb, channel, 0x00090101, 0, 0, 0, send, recv, 0, 16, 0, 16, 4)
cb.finalize()
try:
    cb.execute(None)
except VMError as e:
    print("ERROR", e, flush=True)
    import os
    os._exit(3)
"""


def test_a_rank_that_never_joins_is_a_bounded_error(tmp_path):
    script = tmp_path / "never.py"
    script.write_text(NEVER_JOINS)
    res = _run_ranks(2, [str(script)], timeout=120, PYREE_COLLECTIVE_TIMEOUT="3")
    out = res.stdout  # (mpiexec may join the ranks' lines: look for the message itself)
    assert out.count("ERROR DEADLINE_EXCEEDED") == 1, (out, res.stderr[-2000:])
    assert "all_reduce.sum<f32>] on rank 0 did not complete" in out and "a rank did not join" in out


@pytest.mark.slow
def test_sharded_mlp_example_matches_the_whole_model():
    mpiexec()
    res = subprocess.run(
        [sys.executable, str(REPO / "examples" / "sharded_mlp.py")],
        capture_output=True, text=True, timeout=600, env=mpi_env(), cwd=REPO,
    )
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    assert "max relative difference" in res.stdout


def test_iree_single_rank_all_reduce_runs_in_one_process(compile_mlir, tmp_path, monkeypatch):
    """IREE's tests/e2e/collectives SingleRank case: all_reduce([1, 2, 3, 4]) over one rank,
    no launcher (iree-run-module 3.13 fails it with UNIMPLEMENTED on the CPU)."""
    from differential import load_package
    from translator.codegen import write_package
    from translator.reader import read_module_file

    for var in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MPI_LOCALRANKID"):
        monkeypatch.delenv(var, raising=False)
    src = tmp_path / "one.mlir"
    src.write_text(STABLEHLO.split("func.func @all_gather")[0].replace(
        "dense<[[0, 1]]> : tensor<1x2xi64>", "dense<[[0]]> : tensor<1x1xi64>"))
    vmfb = compile_mlir(src, ("--iree-input-type=stablehlo", "--iree-hal-target-device=local",
                              "--iree-hal-local-target-device-backends=llvm-cpu"))
    module = read_module_file(vmfb)
    assert "hal.command_buffer.collective" in {i.full_name for i in module.imports}
    pkg = load_package(write_package(module, tmp_path / "out", "one"))
    x = np.array([1, 2, 3, 4], dtype=np.float32)
    for device in ("local-sync", "local"):
        assert pkg.load(device=device).all_reduce_sum(x).tolist() == [1, 2, 3, 4]


def test_pyree_run_under_mpiexec_with_per_rank_files(compile_mlir, tmp_path):
    """`mpiexec -n 2 pyree-run PKG --input=@x{rank}.npy --output=@y{rank}.npy`."""
    from translator.codegen import write_package
    from translator.reader import read_module_file

    src = tmp_path / "ar.mlir"
    src.write_text(STABLEHLO.split("func.func @all_gather")[0])
    vmfb = compile_mlir(src, ("--iree-input-type=stablehlo", "--iree-hal-target-device=local",
                              "--iree-hal-local-target-device-backends=llvm-cpu"))
    pkg = write_package(read_module_file(vmfb), tmp_path / "out", "ar")
    for r in range(2):
        np.save(tmp_path / f"x{r}.npy", np.arange(4, dtype=np.float32) * (r + 1))
    res = _run_ranks(2, ["-m", "runtime_support.tools.run_cli", str(pkg), "--function=all_reduce_sum",
                         f"--input=@{tmp_path}/x{{rank}}.npy", f"--output=@{tmp_path}/y{{rank}}.npy"])
    assert res.returncode == 0, res.stderr[-3000:]
    for r in range(2):
        assert np.load(tmp_path / f"y{r}.npy").tolist() == [0.0, 3.0, 6.0, 9.0]


DIFFERENT_SIZES = NEVER_JOINS.replace(
    '''if channel.rank == 1:
    print("rank 1 skips the collective", flush=True)
    sys.exit(0)
''', "").replace(
    "hal.command_buffer_collective(cb, channel, 0x00090101, 0, 0, 0, send, recv, 0, 16, 0, 16, 4)",
    "n = 4 if channel.rank == 0 else 2\n"
    "hal.command_buffer_collective(cb, channel, 0x00090101, 0, 0, 0, send, recv, 0, 16, 0, 16, n)",
).replace(
    # Both ranks fail here; a rank's nonzero exit makes mpiexec kill the other, so each waits
    # until both have printed their error.
    "    os._exit(3)", "    channel.comm.Barrier()\n    os._exit(3)",
)


def test_ranks_that_disagree_on_sizes_end_in_an_error(tmp_path):
    script = tmp_path / "sizes.py"
    script.write_text(DIFFERENT_SIZES)
    res = _run_ranks(2, [str(script)], timeout=120, PYREE_COLLECTIVE_TIMEOUT="3")
    # MPICH runs a mismatched all-reduce without complaint (wrong data, silently); the
    # ranks' agreement check before the batch turns it into an error on both ranks. (mpiexec
    # may join the ranks' lines, so count the messages, not lines.)
    out = res.stdout
    assert out.count("INVALID_ARGUMENT") == 2, (res.returncode, out, res.stderr[-2000:])
    for rank, other in ((0, 1), (1, 0)):
        assert f"on rank {rank}: rank(s) {other} recorded different collectives" in out
