"""All-reduce bandwidth: pyree's hal.command_buffer.collective against mpi4py's own
Allreduce on numpy arrays, interleaved call by call in the same processes.

    mpiexec -n 2 python3 bench/collectives.py [--mb 64] [--reps 10]

Rank 0 prints the medians and the ratio (pyree / mpi4py).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from mpi4py import MPI

from runtime_support.hal.buffer import HalBuffer
from runtime_support.hal.channel import HalChannel
from runtime_support.hal.command_buffer import HalCommandBuffer
from runtime_support.hal.device import LocalDevice
from runtime_support.hal.module import HalModule


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--mb", type=int, default=64)
    p.add_argument("--reps", type=int, default=10)
    args = p.parse_args()
    comm = MPI.COMM_WORLD
    n = args.mb * 1024 * 1024 // 4
    channel = HalChannel.create(-1, -1)
    device = LocalDevice("local-sync")
    hal = HalModule([device])
    send, recv = HalBuffer.allocate(4 * n), HalBuffer.allocate(4 * n)
    send.bytes_view().view(np.float32)[:] = comm.Get_rank() + 1
    cb = HalCommandBuffer(device, 0, 3, 0)
    hal.command_buffer_collective(cb, channel, 0x00090101, 0, 0, 0, send, recv, 0, 4 * n, 0, 4 * n, n)
    cb.finalize()
    a = np.full(n, comm.Get_rank() + 1, dtype=np.float32)
    b = np.empty_like(a)
    pyree_t, mpi_t = [], []
    for _ in range(args.reps + 1):
        comm.Barrier()
        t = time.perf_counter()
        cb.execute(None)
        pyree_t.append(time.perf_counter() - t)
        comm.Barrier()
        t = time.perf_counter()
        comm.Allreduce(a, b, MPI.SUM)
        mpi_t.append(time.perf_counter() - t)
    assert recv.bytes_view().view(np.float32).tobytes() == b.tobytes()
    if comm.Get_rank() == 0:
        p_med, m_med = statistics.median(pyree_t[1:]), statistics.median(mpi_t[1:])
        print(f"| all-reduce f32 {args.mb} MB x {comm.Get_size()} ranks | pyree {p_med * 1e3:.1f} ms | "
              f"mpi4py {m_med * 1e3:.1f} ms | ratio {p_med / m_med:.2f}x |")


if __name__ == "__main__":
    main()
