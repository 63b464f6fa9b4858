"""One rank of the collectives test (run by tests/runtime/test_collectives.py under mpiexec, or
alone as a one-rank channel); `collectives_worker.py cuda` runs it on the cuda device over
the CUDA driver and NCCL doubles (tests/cuda/test_cuda_collectives.py).

Every operation x reduction x element type runs through the HAL exactly as a translated
program drives it (HalModule.command_buffer_collective on a recorded command buffer, then
execute), on inputs every rank can regenerate for every other rank, and is compared with
numpy computing the same collective over all ranks' inputs. Prints one JSON line:
{"rank": r, "count": ranks, "cases": n, "failures": [...]}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from runtime_support.hal.channel import HalChannel
from runtime_support.hal.collectives import ELEMENT_TYPES, KINDS, REDUCTIONS, _bf16_to_f32, _f32_to_bf16
from runtime_support.hal.module import HalModule
from runtime_support.errors import VMError

N = 8  # elements per rank (divisible by 1, 2, 4 ranks)


def make_input(rank: int, case: int, dtype, element_type: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(1000 * case + rank)
    if element_type in ("f16", "f32", "f64"):
        values = rng.uniform(-4, 4, n).astype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[element_type])
        return values.view(dtype)
    if element_type == "bf16":
        return _f32_to_bf16(rng.uniform(-4, 4, n).astype(np.float32))
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -5), min(info.max, 5)
    return rng.integers(lo, hi + 1, n).astype(dtype)


def arith(element_type: str, storage: np.ndarray) -> np.ndarray:
    if element_type == "f16":
        return storage.view(np.float16)
    if element_type == "bf16":
        return _bf16_to_f32(storage)
    return storage


def expected_reduction(element_type, reduction, rows):
    vals = [arith(element_type, r).copy() for r in rows]
    acc = vals[0]
    for v in vals[1:]:
        acc = {"sum": np.add, "average": np.add, "product": np.multiply, "minimum": np.minimum, "maximum": np.maximum}[reduction](acc, v)
    if reduction == "average":
        if np.issubdtype(acc.dtype, np.integer):
            acc = (np.sign(acc) * (np.abs(acc) // len(rows))).astype(acc.dtype)
        else:
            acc = (acc / len(rows)).astype(acc.dtype)
    if element_type == "f16":
        return acc.astype(np.float16).view(np.uint16)
    if element_type == "bf16":
        return _f32_to_bf16(acc)
    return acc.astype(rows[0].dtype)


def run_case(hal, device, channel, kind, reduction, etype_index, case):
    rank, ranks = channel.rank, channel.count
    element_type, dtype = ELEMENT_TYPES[etype_index]
    es = np.dtype(dtype).itemsize
    inputs = [make_input(r, case, dtype, element_type, N * (ranks if kind == "reduce_scatter" else 1)) for r in range(ranks)]
    root = ranks - 1  # broadcast/reduce root, send/recv peers chosen below
    count = N
    if kind == "all_gather":
        count = N * ranks
        inputs = [make_input(r, case, dtype, element_type, N) for r in range(ranks)]
        expect = np.concatenate(inputs)
    elif kind == "all_reduce":
        expect = expected_reduction(element_type, reduction, inputs)
    elif kind == "all_to_all":
        blocks = [np.split(x, ranks) for x in inputs]
        expect = np.concatenate([blocks[src][rank] for src in range(ranks)])
    elif kind == "broadcast":
        expect = inputs[root]
    elif kind == "reduce":
        expect = expected_reduction(element_type, reduction, inputs) if rank == root else None
    elif kind == "reduce_scatter":
        total = expected_reduction(element_type, reduction, inputs)
        expect = total[rank * N : (rank + 1) * N]
    elif kind in ("send_recv", "send+recv"):  # a ring: to the next rank, from the previous
        expect = inputs[(rank - 1) % ranks]
    else:
        raise AssertionError(kind)
    send = device.allocator.allocate(0x30, 0xC03, inputs[rank].nbytes)
    send.write(0, inputs[rank].tobytes())
    recv = device.allocator.allocate(0x30, 0xC03, count * es if kind != "reduce_scatter" else N * es)
    recv.fill(0, recv.byte_length, 0x5A, 1)
    cb = device.create_command_buffer(0, 3, 0)
    nxt, prev = (rank + 1) % ranks, (rank - 1) % ranks
    if kind == "send+recv":  # two commands in one batch: neither may block the other
        for k, peer in (("send", nxt), ("recv", prev)):
            op = KINDS.index(k) | (etype_index << 16)
            hal.command_buffer_collective(cb, channel, op, peer, 0, 0, send, recv, 0, send.byte_length, 0, recv.byte_length, count)
    else:
        op = KINDS.index(kind) | (REDUCTIONS.index(reduction) << 8) | (etype_index << 16)
        param = root if kind in ("broadcast", "reduce") else 0
        if kind == "send_recv":
            param = (nxt & 0xFFFF) | ((prev & 0xFFFF) << 16)
        hal.command_buffer_collective(cb, channel, op, param, 0, 0, send, recv, 0, send.byte_length, 0, recv.byte_length, count)
    cb.finalize()
    cb.execute(None)
    got = np.frombuffer(recv.read(), dtype=dtype)
    if expect is None:
        return True
    if element_type in ("f16", "bf16", "f32", "f64") and reduction in ("sum", "average", "product"):
        a, b = arith(element_type, got).astype(np.float64), arith(element_type, expect).astype(np.float64)
        return bool(np.allclose(a, b, rtol=1e-2 if element_type in ("f16", "bf16") else 1e-6, atol=1e-2))
    return got.tobytes() == np.asarray(expect, dtype=dtype).tobytes()


def open_device(kind: str):
    """local-sync, or (`cuda`) the cuda device on the CUDA driver and NCCL doubles."""
    if kind != "cuda":
        from runtime_support.hal.device import LocalDevice

        return LocalDevice("local-sync")
    import types

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cuda_driver_double import PyCudaDriverDouble
    from nccl_double import NcclDouble
    from runtime_support.cuda import nccl
    from runtime_support.cuda.device import CudaDevice
    from runtime_support.hal.channel import world_communicator

    driver = PyCudaDriverDouble()
    nccl_double = NcclDouble(driver, world_communicator())
    nccl.load_library = lambda: nccl_double
    nccl.reset()
    return CudaDevice(driver, 0)


# What IREE's CUDA HAL refuses too: NCCL has no 16-bit integer arithmetic.
CUDA_UNIMPLEMENTED = ("<si16>", "<ui16>")


def main() -> int:
    kind = sys.argv[1] if len(sys.argv) > 1 else "local-sync"
    device = open_device(kind)
    hal = HalModule([device])
    channel = device.create_channel(-1, -1) if kind == "cuda" else HalChannel.create(-1, -1)
    device_kind = kind
    failures, cases, unimplemented = [], 0, []
    for kind in ("all_gather", "all_reduce", "all_to_all", "broadcast", "reduce", "reduce_scatter", "send_recv", "send+recv"):
        reductions = ["sum", "product", "minimum", "maximum", "average"] if kind in ("all_reduce", "reduce", "reduce_scatter") else [None]
        for reduction in reductions:
            for etype_index in range(len(ELEMENT_TYPES)):
                cases += 1
                try:
                    ok = run_case(hal, device, channel, kind, reduction, etype_index, cases)
                except VMError as e:
                    ok = False
                    name = f"{kind}.{reduction}<{ELEMENT_TYPES[etype_index][0]}>"
                    if device_kind == "cuda" and reduction and name.endswith(CUDA_UNIMPLEMENTED) and "UNIMPLEMENTED" in str(e):
                        unimplemented.append(name)
                        continue
                    failures.append(f"{kind}.{reduction}<{ELEMENT_TYPES[etype_index][0]}>: {e}")
                    continue
                if not ok:
                    failures.append(f"{kind}.{reduction}<{ELEMENT_TYPES[etype_index][0]}>: wrong result")
    print(json.dumps({"rank": channel.rank, "count": channel.count, "cases": cases, "failures": failures,
                      "unimplemented": unimplemented}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
