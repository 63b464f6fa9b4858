"""`hal.command_buffer.collective` on the CPU: IREE's collective operations over a channel.

The op word packs, little-endian, the kind (byte 0), the reduction (byte 1) and the element
type (byte 2) (runtime/src/iree/hal/command_buffer.h, `iree_hal_collective_op_t`; the
values below were checked against what iree-compile 3.13 emits for stablehlo collectives).
Element counts are what iree-compile 3.13 passes (checked on stablehlo collectives):

    all_gather      send n/ranks, recv n          all_reduce  send n, recv n
    all_to_all      send n, recv n (n/ranks each) broadcast   n from rank `param`
    reduce          send n, recv n on `param`     reduce_scatter  send n*ranks, recv n
    send / recv     n to / from rank `param`
    send_recv       param = send peer (low int16) | recv peer (high int16), -1 for none;
                    a rank that receives nothing gets zeros

Before a batch starts, the ranks compare what they recorded (one small all-gather): ranks
that disagree on an operation's type, count or root get INVALID_ARGUMENT instead of MPI
silently reading or writing the wrong amount. Consecutive collectives of a command buffer
form one batch, as IREE groups them
(ncclGroupStart/End): every operation of the batch is started, non-blocking, in recorded
order, then all are waited for, so paired sends and receives cannot deadlock. Data moves
straight between the HAL buffers' memory and MPI (no staging copies) except where MPI has
no arithmetic for the type (f16, bf16) or the reduction (average): those gather the ranks'
contributions and reduce them here in rank order. A wait longer than the timeout
(PYREE_COLLECTIVE_TIMEOUT seconds, default 300) is DEADLINE_EXCEEDED naming the operation:
a rank that never joins ends in an error, not a silent hang.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..env_knobs import float_knob
from ..errors import StatusCode, VMError

KINDS = (
    "all_gather", "all_reduce", "all_to_all", "broadcast", "reduce",
    "reduce_scatter", "send", "recv", "send_recv",
)
REDUCTIONS = (None, "sum", "product", "minimum", "maximum", "average")
REDUCING = {"all_reduce", "reduce", "reduce_scatter"}
NEEDS_SEND = {"all_gather", "all_reduce", "all_to_all", "broadcast", "reduce", "reduce_scatter", "send", "send_recv"}
NEEDS_RECV = {"all_gather", "all_reduce", "all_to_all", "broadcast", "reduce", "reduce_scatter", "recv", "send_recv"}
# iree_hal_collective_element_type_t -> (name, storage dtype). f16 and bf16 are moved as
# 16-bit words; their arithmetic is done here (`_reduce_rows`).
ELEMENT_TYPES = (
    ("si8", np.int8), ("ui8", np.uint8), ("si16", np.int16), ("ui16", np.uint16),
    ("si32", np.int32), ("ui32", np.uint32), ("si64", np.int64), ("ui64", np.uint64),
    ("f16", np.uint16), ("f32", np.float32), ("f64", np.float64), ("bf16", np.uint16),
)


_MAX_TIMEOUT_S = 7 * 24 * 3600  # a week: longer is a hang, not a slow rank


def _timeout() -> float:
    return float_knob("PYREE_COLLECTIVE_TIMEOUT", 300.0, 0.0, _MAX_TIMEOUT_S)


@dataclass(frozen=True)
class CollectiveOp:
    kind: str
    reduction: str | None
    element_type: str
    dtype: type

    @property
    def element_size(self) -> int:
        return np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        return f"{self.kind}{'.' + self.reduction if self.reduction else ''}<{self.element_type}>"


def decode_op(word: int) -> CollectiveOp:
    """The packed op word, checked as IREE's HAL validates it."""
    kind, reduction, element = word & 0xFF, (word >> 8) & 0xFF, (word >> 16) & 0xFF
    if kind >= len(KINDS):
        raise VMError(StatusCode.INVALID_ARGUMENT, f"unknown collective operation {kind} (op 0x{word & 0xFFFFFFFF:08X})")
    if reduction >= len(REDUCTIONS):
        raise VMError(StatusCode.INVALID_ARGUMENT, f"unknown collective reduction {reduction} (op 0x{word & 0xFFFFFFFF:08X})")
    if element >= len(ELEMENT_TYPES):
        raise VMError(StatusCode.INVALID_ARGUMENT, f"unknown collective element type {element} (op 0x{word & 0xFFFFFFFF:08X})")
    name = KINDS[kind]
    if (name in REDUCING) != (reduction != 0):
        raise VMError(
            StatusCode.INVALID_ARGUMENT,
            f"collective {name} {'needs' if name in REDUCING else 'takes no'} reduction operation",
        )
    type_name, dtype = ELEMENT_TYPES[element]
    return CollectiveOp(name, REDUCTIONS[reduction], type_name, dtype)


def byte_counts(op: CollectiveOp, count: int, ranks: int) -> tuple[int, int]:
    """(send bytes, recv bytes) the operation touches."""
    n = count * op.element_size
    if op.kind in ("all_gather", "all_to_all") and count % ranks:
        raise VMError(
            StatusCode.INVALID_ARGUMENT, f"collective {op}: {count} elements do not split over {ranks} ranks"
        )
    send = {"reduce_scatter": n * ranks, "all_gather": n // ranks}.get(op.kind, n)
    return (send if op.kind in NEEDS_SEND else 0), (n if op.kind in NEEDS_RECV else 0)


# -- arithmetic -------------------------------------------------------------------------------


def _bf16_to_f32(words: np.ndarray) -> np.ndarray:
    return (words.astype(np.uint32) << 16).view(np.float32)


def _f32_to_bf16(values: np.ndarray) -> np.ndarray:
    bits = values.astype(np.float32).view(np.uint32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
    out = (rounded >> 16).astype(np.uint16)
    nan = np.isnan(values)
    out[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)  # keep NaNs quiet NaNs
    return out


_NUMPY_REDUCE: dict[str, Callable] = {
    "sum": np.add, "average": np.add, "product": np.multiply,
    "minimum": np.minimum, "maximum": np.maximum,
}


def _reduce_rows(op: CollectiveOp, rows: np.ndarray) -> np.ndarray:
    """Reduces `rows` (ranks x n, storage dtype) in rank order; returns storage dtype."""
    if op.element_type == "f16":
        values = rows.view(np.float16)
    elif op.element_type == "bf16":
        values = _bf16_to_f32(rows)
    else:
        values = rows
    fn = _NUMPY_REDUCE[op.reduction]
    acc = values[0].copy()
    for row in values[1:]:
        fn(acc, row, out=acc)
    if op.reduction == "average":
        acc = _average(acc, len(rows))
    if op.element_type == "f16":
        return acc.astype(np.float16).view(np.uint16)
    if op.element_type == "bf16":
        return _f32_to_bf16(acc)
    return acc


def _average(total: np.ndarray, ranks: int) -> np.ndarray:
    if np.issubdtype(total.dtype, np.integer):  # NCCL's integer average truncates
        return (np.sign(total) * (np.abs(total) // ranks)).astype(total.dtype)
    return (total / ranks).astype(total.dtype)


def _mpi_op(op: CollectiveOp):
    """MPI's own reduction for `op`, or None when it must be done here."""
    if op.element_type in ("f16", "bf16") or op.reduction == "average":
        return None
    from mpi4py import MPI

    return {"sum": MPI.SUM, "product": MPI.PROD, "minimum": MPI.MIN, "maximum": MPI.MAX}[op.reduction]


# -- execution --------------------------------------------------------------------------------


@dataclass
class Collective:
    """One recorded collective with its buffers resolved for this execution."""

    channel: object  # HalChannel
    op: CollectiveOp
    param: int
    send: np.ndarray | None  # uint8 view of the send range
    recv: np.ndarray | None  # uint8 view of the receive range
    count: int

    def typed(self, view: np.ndarray | None, elements: int) -> np.ndarray | None:
        if view is None:
            return None
        return view[: elements * self.op.element_size].view(self.op.dtype)


def _peer(value: int) -> int:
    value &= 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def _signature(batch: list[Collective]) -> np.ndarray:
    """[entries, digest] of what this rank is about to run: every rank of the channel must
    agree (kind, reduction, type, count, root), or MPI would read or write past buffers or
    mix up data silently. Point-to-point peers and counts legitimately differ per rank."""
    parts = []
    for c in batch:
        if c.op.kind in ("send", "recv", "send_recv"):
            parts.append(c.op.kind)
        else:
            root = c.param if c.op.kind in ("broadcast", "reduce") else 0
            parts.append(f"{c.op}:{c.count}:{root}")
    import hashlib  # (here: most processes never make a channel, and it costs ~5 ms)

    digest = int.from_bytes(hashlib.blake2b("|".join(parts).encode(), digest_size=7).digest(), "little")
    return np.array([len(batch), digest], dtype=np.int64)


def _check_agreement(batch: list[Collective]) -> None:
    channel = batch[0].channel
    mine = _signature(batch)
    everyone = np.empty((channel.count, 2), dtype=np.int64)
    _wait([channel.comm.Iallgather(mine, everyone)], batch)
    differ = [r for r in range(channel.count) if not np.array_equal(everyone[r], mine)]
    if differ:
        raise VMError(
            StatusCode.INVALID_ARGUMENT,
            f"collective batch [{', '.join(str(c.op) for c in batch)}] on rank {channel.rank}: "
            f"rank(s) {', '.join(map(str, differ))} recorded different collectives "
            "(operation, element type, element count or root)",
        )


def run_batch(batch: list[Collective]) -> None:
    """Starts every collective of the batch in order, then waits for all of them."""
    requests, finishers, local_sends = [], [], {}
    if batch and batch[0].channel.comm is not None and all(c.channel is batch[0].channel for c in batch):
        _check_agreement(batch)
    for c in batch:
        if c.channel.comm is None:
            _start_local(c, local_sends, finishers)
        else:
            _start_mpi(c, requests, finishers)
    if requests:
        _wait(requests, batch)
    for finish in finishers:
        finish()


def _start_local(c: Collective, local_sends: dict, finishers: list) -> None:
    """A one-rank channel: every operation is a copy (the single contribution)."""
    n = c.count
    send, recv = c.typed(c.send, n), c.typed(c.recv, n)  # one rank: n*ranks == n
    kind = c.op.kind
    if kind in ("broadcast", "reduce", "send", "recv") and c.param != 0:
        raise VMError(StatusCode.INVALID_ARGUMENT, f"{c.op}: rank {c.param} on a one-rank channel")
    if kind == "send":
        local_sends.setdefault(0, []).append(send.copy())
        return
    if kind == "recv":
        finishers.append(lambda: _local_recv(c, recv, local_sends))
        return
    if kind == "send_recv":
        sendid, recvid = _peer(c.param), _peer(c.param >> 16)
        if sendid not in (-1, 0) or recvid not in (-1, 0):
            raise VMError(StatusCode.INVALID_ARGUMENT, f"{c.op}: peers ({sendid}, {recvid}) on a one-rank channel")
        if recvid == -1:
            recv[...] = 0
        elif sendid == 0:
            recv[...] = send
        return
    if recv is None:  # broadcast/reduce root may have no receive buffer
        return
    if c.op.reduction == "average" or c.op.element_type in ("f16", "bf16") and c.op.reduction:
        recv[...] = _reduce_rows(c.op, send[None, :])
    else:
        recv[...] = send


def _local_recv(c: Collective, recv, local_sends) -> None:
    pending = local_sends.get(0)
    if not pending:
        raise VMError(StatusCode.FAILED_PRECONDITION, f"{c.op}: no matching send from rank 0 in the batch")
    recv[...] = pending.pop(0)


def _start_mpi(c: Collective, requests: list, finishers: list) -> None:
    from mpi4py import MPI

    comm, ranks, n, op = c.channel.comm, c.channel.count, c.count, c.op
    kind = op.kind
    try:
        if kind == "all_gather":
            requests.append(comm.Iallgather(c.typed(c.send, n // ranks), c.typed(c.recv, n)))
        elif kind == "all_to_all":
            requests.append(comm.Ialltoall(c.typed(c.send, n), c.typed(c.recv, n)))
        elif kind == "broadcast":
            root = c.param
            buf = c.typed(c.send, n) if c.channel.rank == root else c.typed(c.recv, n)
            requests.append(comm.Ibcast(buf, root=root))
            if c.channel.rank == root and c.recv is not None and c.recv.ctypes.data != c.send.ctypes.data:
                finishers.append(lambda: np.copyto(c.typed(c.recv, n), c.typed(c.send, n)))
        elif kind in ("all_reduce", "reduce", "reduce_scatter"):
            _start_reduction(c, comm, ranks, requests, finishers)
        elif kind == "send":
            requests.append(comm.Isend(c.typed(c.send, n), dest=c.param))
        elif kind == "recv":
            requests.append(comm.Irecv(c.typed(c.recv, n), source=c.param))
        elif kind == "send_recv":
            sendid, recvid = _peer(c.param), _peer(c.param >> 16)
            if sendid != -1:
                requests.append(comm.Isend(c.typed(c.send, n), dest=sendid))
            if recvid != -1:
                requests.append(comm.Irecv(c.typed(c.recv, n), source=recvid))
            else:
                c.typed(c.recv, n)[...] = 0
    except MPI.Exception as e:
        raise VMError(StatusCode.INTERNAL, f"{op} on rank {c.channel.rank}: MPI: {' '.join(str(e).split())}") from None


def _start_reduction(c: Collective, comm, ranks: int, requests: list, finishers: list) -> None:
    from mpi4py import MPI

    n, op, kind = c.count, c.op, c.op.kind
    mpi_op = _mpi_op(op)
    send_n = n * ranks if kind == "reduce_scatter" else n
    send = c.typed(c.send, send_n)
    if mpi_op is not None:
        if kind == "all_reduce":
            recv = c.typed(c.recv, n)
            same = recv.ctypes.data == send.ctypes.data
            requests.append(comm.Iallreduce(MPI.IN_PLACE if same else send, recv, mpi_op))
        elif kind == "reduce":
            recv = c.typed(c.recv, n) if c.channel.rank == c.param else None
            requests.append(comm.Ireduce(send, recv, mpi_op, root=c.param))
        else:
            requests.append(comm.Ireduce_scatter_block(send, c.typed(c.recv, n), mpi_op))
        return
    # Arithmetic MPI lacks: gather every rank's contribution, reduce in rank order here.
    rows = np.empty((ranks, send_n), dtype=op.dtype)
    requests.append(comm.Iallgather(send, rows))

    def finish():
        total = _reduce_rows(op, rows)
        if kind == "all_reduce":
            c.typed(c.recv, n)[...] = total
        elif kind == "reduce":
            if c.channel.rank == c.param:
                c.typed(c.recv, n)[...] = total
        else:
            c.typed(c.recv, n)[...] = total[c.channel.rank * n : (c.channel.rank + 1) * n]

    finishers.append(finish)


def _wait(requests: list, batch: list[Collective]) -> None:
    from mpi4py import MPI

    deadline = time.monotonic() + _timeout()
    delay = 0.0
    try:
        while not MPI.Request.Testall(requests):
            if time.monotonic() > deadline:
                names = ", ".join(str(c.op) for c in batch)
                rank = batch[0].channel.rank
                raise VMError(
                    StatusCode.DEADLINE_EXCEEDED,
                    f"collective batch [{names}] on rank {rank} did not complete within "
                    f"{_timeout():g} s: a rank did not join or the ranks disagree "
                    "(PYREE_COLLECTIVE_TIMEOUT sets the limit)",
                )
            time.sleep(delay)
            delay = min(0.002, delay + 0.00005)
    except MPI.Exception as e:
        raise VMError(
            StatusCode.INVALID_ARGUMENT,
            f"collective batch on rank {batch[0].channel.rank} failed in MPI: {' '.join(str(e).split())}",
        ) from None


__all__ = ["Collective", "CollectiveOp", "byte_counts", "decode_op", "run_batch"]
