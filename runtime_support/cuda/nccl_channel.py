"""`!hal.channel` of the `cuda` device: a NCCL communicator (IREE's nccl_channel.c).

Rank discovery is the CPU path's (channel.py): the MPI world under a launcher, else one
rank. As IREE's MPI channel provider does, rank 0 asks NCCL for the unique id and
broadcasts it over MPI; every rank then joins the communicator (ncclCommInitRank) on its
GPU. A program may pass its own 128-byte id instead.

A command buffer's batch of consecutive collectives is one ncclGroupStart ... ncclGroupEnd
on the device's stream, each entry the NCCL call IREE makes for it (all_to_all: a send
and a receive per peer; send_recv: a send and/or a receive, a receive from no peer
zero-filled). Element types NCCL lacks (16-bit integers) move as bytes where no
arithmetic is needed; a reduction over them is UNIMPLEMENTED, as in IREE.
(IREE maps bf16 to ncclFloat64, which reads the wrong width; here it is ncclBfloat16.)
"""

from __future__ import annotations

import weakref

from runtime_support.cuda import nccl as nccl_module
from runtime_support.errors import StatusCode, VMError
from runtime_support.hal.channel import NO_COLOR, HalChannel
from runtime_support.hal.collectives import byte_counts


class NcclChannel(HalChannel):
    __slots__ = ("device", "nccl", "handle", "_finalizer", "__weakref__")

    def __init__(self, device, nccl, handle: int, rank: int, count: int, comm, group: str) -> None:
        super().__init__(rank, count, comm, group)
        self.device = device
        self.nccl = nccl
        self.handle = handle
        self._finalizer = weakref.finalize(self, nccl.destroy, handle)
        self._finalizer.atexit = False  # the driver may be gone by then

    def __repr__(self) -> str:
        return f"<NcclChannel rank {self.rank} of {self.count} on {self.device!r}>"

    @classmethod
    def create_on(cls, device, rank: int, count: int, group: str = "", uid: bytes | None = None) -> "NcclChannel":
        nccl = nccl_module.open_nccl()  # first: no NCCL is the one line a user must see
        base = HalChannel.create(rank, count, group)
        if uid is not None and len(uid) != nccl_module.UNIQUE_ID_BYTES:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"hal.channel.create: a NCCL id is {nccl_module.UNIQUE_ID_BYTES} bytes, got {len(uid)}",
            )
        with device.active():
            if uid is None:
                uid = nccl.unique_id() if base.rank == 0 else bytes(nccl_module.UNIQUE_ID_BYTES)
                if base.comm is not None:
                    uid = base.comm.bcast(uid, root=0)
            if not any(uid):
                raise VMError(StatusCode.INVALID_ARGUMENT, "hal.channel.create: no NCCL id (all zeros)")
            handle = nccl.init_rank(base.count, uid, base.rank)
        return cls(device, nccl, handle, base.rank, base.count, base.comm, group)

    def split(self, color: int, key: int) -> "NcclChannel | None":
        with self.device.active():
            handle = self.nccl.split(self.handle, nccl_module.SPLIT_NO_COLOR if color == NO_COLOR else color, key)
            if handle is None:
                return None
            rank, count = self.nccl.rank_and_count(handle)
        sub = None
        if self.comm is not None:  # kept for MPI-side agreement checks of later splits
            from mpi4py import MPI

            sub = self.comm.Split(MPI.UNDEFINED if color == NO_COLOR else color, key)
        return NcclChannel(self.device, self.nccl, handle, rank, count, sub, self.group)


# -- a batch of collectives ----------------------------------------------------------------


def _pointer(resolved, op, what: str, needed: int) -> int:
    from runtime_support.cuda.memory import CudaBuffer

    if resolved is None:
        return 0
    buffer, offset, length = resolved
    if not isinstance(buffer, CudaBuffer):
        raise VMError(StatusCode.INVALID_ARGUMENT, f"collective {op} {what}: the buffer is not memory of the cuda device")
    if length < needed:
        raise VMError(StatusCode.OUT_OF_RANGE, f"collective {op} {what}: a range of {length} bytes for {needed} bytes")
    return buffer.address + offset


def _peer(value: int) -> int:
    value &= 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def _calls(channel: NcclChannel, op, param: int, send: int, recv: int, count: int, stream: int) -> list[tuple]:
    """The NCCL calls for one collective: (routine, args...) as IREE makes them."""
    datatype = nccl_module.DATA_TYPES[op.element_type]
    if datatype is None:  # 16-bit integers: bytes, where nothing is computed
        if op.reduction:
            raise VMError(StatusCode.UNIMPLEMENTED, f"collective {op}: NCCL has no 16-bit integer arithmetic")
        datatype, count, scale = nccl_module.BYTES_TYPE, count * 2, 2
    else:
        scale = 1
    comm, kind = channel.handle, op.kind
    redop = nccl_module.REDUCTIONS.get(op.reduction)
    if kind == "all_gather":  # count: the gathered total; NCCL takes the per-rank part
        return [("ncclAllGather", send, recv, count // channel.count, datatype, comm, stream)]
    if kind == "all_reduce":
        return [("ncclAllReduce", send, recv, count, datatype, redop, comm, stream)]
    if kind == "reduce_scatter":
        return [("ncclReduceScatter", send, recv, count, datatype, redop, comm, stream)]
    if kind == "broadcast":
        return [("ncclBroadcast", send, recv, count, datatype, param, comm, stream)]
    if kind == "reduce":
        return [("ncclReduce", send, recv, count, datatype, redop, param, comm, stream)]
    if kind == "send":
        return [("ncclSend", send, count, datatype, param, comm, stream)]
    if kind == "recv":
        return [("ncclRecv", recv, count, datatype, param, comm, stream)]
    if kind == "all_to_all":
        part = count // channel.count
        step = part if scale == 2 else part * op.element_size  # bytes between peers' parts
        out = []
        for r in range(channel.count):
            out.append(("ncclSend", send + r * step, part, datatype, r, comm, stream))
            out.append(("ncclRecv", recv + r * step, part, datatype, r, comm, stream))
        return out
    if kind == "send_recv":
        sendid, recvid = _peer(param), _peer(param >> 16)
        out = []
        if sendid != -1:
            out.append(("ncclSend", send, count, datatype, sendid, comm, stream))
        if recvid != -1:
            out.append(("ncclRecv", recv, count, datatype, recvid, comm, stream))
        else:
            out.append(("memset", recv, count * op.element_size // scale))
        return out
    raise VMError(StatusCode.INTERNAL, f"collective {op}: unknown kind")


def batch_step(device, batch):
    """A command buffer step running `batch` (command_buffer.CollectiveBatch) on the
    device's stream: one NCCL group per execution."""
    from runtime_support.hal.command_buffer import resolve_ref

    def step(table):
        stream = device.stream
        handle = stream.handle
        calls = []
        for channel, op, param, send_ref, recv_ref, count in batch.entries:
            if not isinstance(channel, NcclChannel):
                raise VMError(
                    StatusCode.INVALID_ARGUMENT,
                    f"collective {op}: channel {channel!r} was not created on the cuda device",
                )
            if op.kind in ("all_to_all", "all_gather") and count % channel.count:
                raise VMError(StatusCode.INVALID_ARGUMENT, f"collective {op}: {count} elements do not split over {channel.count} ranks")
            send_bytes, recv_bytes = byte_counts(op, count, channel.count)
            send = _pointer(resolve_ref(send_ref, table, f"collective {op} send"), op, "send", send_bytes)
            recv = _pointer(resolve_ref(recv_ref, table, f"collective {op} recv"), op, "recv", recv_bytes)
            calls += _calls(channel, op, param, send, recv, count, handle)
        nccl = batch.entries[0][0].nccl
        nccl.call("ncclGroupStart")
        try:
            for routine, *args in calls:
                if routine == "memset":
                    device.memset(args[0], 0, 1, args[1])
                else:
                    nccl.call(routine, *args)
        except BaseException:
            try:  # the group is closed either way; the first error is the one reported
                nccl.call("ncclGroupEnd")
            except VMError:
                pass
            raise
        nccl.call("ncclGroupEnd")

    return step


__all__ = ["NcclChannel", "batch_step"]
