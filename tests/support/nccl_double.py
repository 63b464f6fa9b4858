"""A test double of libnccl for the `cuda` device: no GPU, no NCCL, every call recorded.

It stands where runtime_support.cuda.nccl.load_library's ctypes library would (each
entry point a method taking what ctypes would be given: ints, pointers, a UniqueId, and
returning an ncclResult_t), and refuses what NCCL would: a call without a current CUDA
context, an unknown communicator, data types and reductions outside nccl.h, buffers not
inside one allocation of the CUDA driver double, a group end without a start, ranks whose
unique ids differ (the id exchange went wrong), ranks that disagree on a collective.

The data really moves: at ncclGroupEnd (or at a call outside a group) every rank's
operations and send bytes are exchanged over MPI (mpi4py's communicator given to the
double; none for one rank) and each rank's receive buffers, in the driver double's
memory, get what NCCL would write. `log_lines()` renders the calls one per line: device
addresses as the driver double names them, types and reductions by their nccl.h names,
communicators as comm0, comm1...
"""

from __future__ import annotations

import numpy as np

DTYPES = (  # ncclDataType_t -> (name, numpy storage dtype)
    ("ncclInt8", np.int8), ("ncclUint8", np.uint8), ("ncclInt32", np.int32), ("ncclUint32", np.uint32),
    ("ncclInt64", np.int64), ("ncclUint64", np.uint64), ("ncclFloat16", np.float16),
    ("ncclFloat32", np.float32), ("ncclFloat64", np.float64), ("ncclBfloat16", np.uint16),
)
REDOPS = ("ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg")
SUCCESS, INVALID_ARGUMENT, INVALID_USAGE = 0, 4, 5
ERRORS = {INVALID_ARGUMENT: b"invalid argument", INVALID_USAGE: b"invalid usage", 3: b"internal error"}


class NcclDoubleError(Exception):
    def __init__(self, rc: int, text: str) -> None:
        super().__init__(text)
        self.rc = rc


class _Comm:
    def __init__(self, name: str, rank: int, count: int, mpi) -> None:
        self.name, self.rank, self.count, self.mpi = name, rank, count, mpi


def _bf16_to_f32(words):
    return (words.astype(np.uint32) << 16).view(np.float32)


def _f32_to_bf16(values):
    bits = values.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


class NcclDouble:
    def __init__(self, driver, world=None, version: int = 21903) -> None:
        self.driver = driver  # the CUDA driver double whose memory the buffers are in
        self.world = world  # mpi4py communicator of the ranks, or None for one process
        self.version = version
        self.calls: list[tuple] = []
        self.comms: dict[int, _Comm] = {}
        self.errors: list[str] = []  # what made a call fail (the test shows it)
        self._group: list | None = None
        self._depth = 0

    # -- plumbing ---------------------------------------------------------------------

    def _entry(fn):  # noqa: N805 - a decorator over the methods below
        def wrapper(self, *args):
            try:
                fn(self, *args)
            except NcclDoubleError as e:
                self.errors.append(f"{fn.__name__}: {e}")
                return e.rc
            return SUCCESS

        wrapper.__name__ = fn.__name__
        return wrapper

    def _need_context(self, routine: str) -> None:
        if not self.driver._stack():
            raise NcclDoubleError(INVALID_USAGE, f"{routine}: no current CUDA context")

    def _comm(self, handle) -> _Comm:
        comm = self.comms.get(int(handle or 0))
        if comm is None:
            raise NcclDoubleError(INVALID_ARGUMENT, f"unknown communicator {handle!r}")
        return comm

    def _dtype(self, value) -> tuple[str, type]:
        if not 0 <= value < len(DTYPES):
            raise NcclDoubleError(INVALID_ARGUMENT, f"data type {value}")
        return DTYPES[value]

    def _redop(self, value) -> str:
        if not 0 <= value < len(REDOPS):
            raise NcclDoubleError(INVALID_ARGUMENT, f"reduction {value}")
        return REDOPS[value]

    def _check_region(self, ptr, nbytes: int, routine: str) -> None:
        try:
            self.driver._region(ptr, nbytes, routine)
        except Exception as e:  # the driver double's refusal
            raise NcclDoubleError(INVALID_ARGUMENT, str(e)) from None

    def _record(self, *call) -> None:
        self.calls.append(call)

    # -- setup ------------------------------------------------------------------------

    def ncclGetErrorString(self, rc):  # noqa: N802
        return ERRORS.get(rc, b"unhandled error")

    @_entry
    def ncclGetVersion(self, out):  # noqa: N802
        out[0] = self.version
        self._record("ncclGetVersion", self.version)

    @_entry
    def ncclGetUniqueId(self, out):  # noqa: N802
        rank = self.world.Get_rank() if self.world is not None else 0
        out.contents.internal = b"nccl-double-id from rank %d" % rank
        self._record("ncclGetUniqueId")

    @_entry
    def ncclCommInitRank(self, out, count, uid, rank):  # noqa: N802
        self._need_context("ncclCommInitRank")
        key = bytes(uid.internal)
        if not any(key):
            raise NcclDoubleError(INVALID_ARGUMENT, "empty unique id")
        mpi = None
        if count > 1:
            if self.world is None or self.world.Get_size() != count:
                raise NcclDoubleError(INVALID_USAGE, f"{count} ranks but no MPI world of that size")
            ids = self.world.allgather(key)
            if len(set(ids)) != 1:
                raise NcclDoubleError(INVALID_USAGE, "ranks joined with different unique ids")
            mpi = self.world.Split(0, rank)
        handle = self._new_comm(rank, count, mpi)
        out[0] = handle
        self._record("ncclCommInitRank", self.comms[handle].name, count, key.rstrip(b"\0").decode(), rank)

    def _new_comm(self, rank, count, mpi) -> int:
        self._made = getattr(self, "_made", 0) + 1
        handle = 0xC0000 + 16 * self._made
        self.comms[handle] = _Comm(f"comm{self._made - 1}", rank, count, mpi)
        return handle

    @_entry
    def ncclCommSplit(self, comm, color, key, out, config):  # noqa: N802
        self._need_context("ncclCommSplit")
        parent = self._comm(comm)
        sub = None
        if parent.mpi is not None:
            from mpi4py import MPI

            sub = parent.mpi.Split(MPI.UNDEFINED if color == -1 else color, key)
            if sub == MPI.COMM_NULL:
                sub = None
        if color == -1:
            out[0] = None
            self._record("ncclCommSplit", parent.name, color, key, "NULL")
            return
        rank, count = (sub.Get_rank(), sub.Get_size()) if sub is not None else (0, 1)
        handle = self._new_comm(rank, count, sub)
        out[0] = handle
        self._record("ncclCommSplit", parent.name, color, key, self.comms[handle].name)

    @_entry
    def ncclCommUserRank(self, comm, out):  # noqa: N802
        out[0] = self._comm(comm).rank

    @_entry
    def ncclCommCount(self, comm, out):  # noqa: N802
        out[0] = self._comm(comm).count

    @_entry
    def ncclCommFinalize(self, comm):  # noqa: N802
        self._record("ncclCommFinalize", self._comm(comm).name)

    @_entry
    def ncclCommDestroy(self, comm):  # noqa: N802
        self._record("ncclCommDestroy", self.comms.pop(int(comm)).name)

    # -- groups -------------------------------------------------------------------------

    @_entry
    def ncclGroupStart(self):  # noqa: N802
        if self._depth == 0:
            self._group = []
        self._depth += 1
        self._record("ncclGroupStart")

    @_entry
    def ncclGroupEnd(self):  # noqa: N802
        if self._depth == 0:
            raise NcclDoubleError(INVALID_USAGE, "ncclGroupEnd without ncclGroupStart")
        self._depth -= 1
        self._record("ncclGroupEnd")
        if self._depth == 0:
            ops, self._group = self._group, None
            self._run(ops)

    def _enqueue(self, op: dict) -> None:
        if self._group is not None:
            self._group.append(op)
        else:
            self._run([op])

    # -- collectives --------------------------------------------------------------------

    def _collective(self, routine, send, recv, count, datatype, comm, stream, *, redop=None, root=None, peer=None):
        self._need_context(routine)
        c = self._comm(comm)
        name, dtype = self._dtype(datatype)
        size = np.dtype(dtype).itemsize
        send_n = {"ncclReduceScatter": count * c.count}.get(routine, count)
        recv_n = {"ncclAllGather": count * c.count}.get(routine, count)
        reads = routine != "ncclRecv" and not (routine == "ncclBroadcast" and c.rank != root)
        if reads:
            self._check_region(send, send_n * size, routine)
        if routine != "ncclSend" and not (routine == "ncclReduce" and c.rank != root):
            self._check_region(recv, recv_n * size, routine)
        for bound, what in ((root, "root"), (peer, "peer")):
            if bound is not None and not 0 <= bound < c.count:
                raise NcclDoubleError(INVALID_ARGUMENT, f"{what} {bound} of {c.count} ranks")
        extra = [self._redop(redop)] if redop is not None else []
        extra += [f"root={root}"] if root is not None else []
        extra += [f"peer={peer}"] if peer is not None else []
        self._record(routine, *(v for v in (send, recv) if v is not None), count, name, *extra, c.name, f"stream=0x{int(stream or 0):x}")
        data = self.driver.read(send, send_n * size) if reads else None
        self._enqueue(dict(routine=routine, comm=c, send=data, recv=recv, count=count, dtype=dtype,
                           dtype_name=name, redop=extra[0] if redop is not None else None, root=root, peer=peer))

    @_entry
    def ncclAllReduce(self, send, recv, count, datatype, redop, comm, stream):  # noqa: N802
        self._collective("ncclAllReduce", send, recv, count, datatype, comm, stream, redop=redop)

    @_entry
    def ncclAllGather(self, send, recv, count, datatype, comm, stream):  # noqa: N802
        self._collective("ncclAllGather", send, recv, count, datatype, comm, stream)

    @_entry
    def ncclReduceScatter(self, send, recv, count, datatype, redop, comm, stream):  # noqa: N802
        self._collective("ncclReduceScatter", send, recv, count, datatype, comm, stream, redop=redop)

    @_entry
    def ncclBroadcast(self, send, recv, count, datatype, root, comm, stream):  # noqa: N802
        self._collective("ncclBroadcast", send, recv, count, datatype, comm, stream, root=root)

    @_entry
    def ncclReduce(self, send, recv, count, datatype, redop, root, comm, stream):  # noqa: N802
        self._collective("ncclReduce", send, recv, count, datatype, comm, stream, redop=redop, root=root)

    @_entry
    def ncclSend(self, send, count, datatype, peer, comm, stream):  # noqa: N802
        self._collective("ncclSend", send, None, count, datatype, comm, stream, peer=peer)

    @_entry
    def ncclRecv(self, recv, count, datatype, peer, comm, stream):  # noqa: N802
        self._collective("ncclRecv", None, recv, count, datatype, comm, stream, peer=peer)

    # -- the data -------------------------------------------------------------------------

    def _run(self, ops: list[dict]) -> None:
        """Every rank's ops of this group, exchanged; then each receive written."""
        by_comm: dict[str, list[dict]] = {}
        for op in ops:
            by_comm.setdefault(op["comm"].name, []).append(op)
        for group in by_comm.values():
            comm = group[0]["comm"]
            mine = [(o["routine"], o["count"], o["dtype_name"], o["redop"], o["root"], o["peer"], o["send"]) for o in group]
            everyone = comm.mpi.allgather(mine) if comm.mpi is not None else [mine]
            collective = [[m for m in ops_ if m[0] not in ("ncclSend", "ncclRecv")] for ops_ in everyone]
            if any([m[:5] for m in c] != [m[:5] for m in collective[comm.rank]] for c in collective):
                raise NcclDoubleError(INVALID_USAGE, "ranks disagree on the group's collectives")
            k = 0
            received: dict[int, int] = {}
            for op in group:
                if op["routine"] in ("ncclSend", "ncclRecv"):
                    if op["routine"] == "ncclRecv":
                        self._recv(op, everyone, received)
                    continue
                self._write(op, [collective[r][k][6] for r in range(comm.count)])
                k += 1

    def _recv(self, op, everyone, received) -> None:
        peer, me = op["peer"], op["comm"].rank
        sends = [m for m in everyone[peer] if m[0] == "ncclSend" and m[5] == me]
        index = received.get(peer, 0)
        if index >= len(sends):
            raise NcclDoubleError(INVALID_USAGE, f"ncclRecv from {peer}: no matching ncclSend")
        received[peer] = index + 1
        self.driver.write(op["recv"], sends[index][6])

    def _write(self, op, contributions: list[bytes]) -> None:
        dtype, routine, comm = op["dtype"], op["routine"], op["comm"]
        rows = [np.frombuffer(c, dtype) for c in contributions] if contributions[0] is not None else []
        if routine == "ncclAllGather":
            out = np.concatenate(rows)
        elif routine == "ncclBroadcast":
            out = np.frombuffer(contributions[op["root"]], dtype)
        else:
            total = self._reduce(op, rows)
            if routine == "ncclReduceScatter":
                n = op["count"]
                out = total[comm.rank * n : (comm.rank + 1) * n]
            elif routine == "ncclReduce" and comm.rank != op["root"]:
                return
            else:
                out = total
        self.driver.write(op["recv"], out.tobytes())

    def _reduce(self, op, rows):
        bf16 = op["dtype_name"] == "ncclBfloat16"
        values = [_bf16_to_f32(r) if bf16 else r for r in rows]
        fn = {"ncclSum": np.add, "ncclAvg": np.add, "ncclProd": np.multiply, "ncclMax": np.maximum, "ncclMin": np.minimum}[op["redop"]]
        acc = values[0].copy()
        for v in values[1:]:
            acc = fn(acc, v).astype(acc.dtype)
        if op["redop"] == "ncclAvg":
            if np.issubdtype(acc.dtype, np.integer):
                acc = (np.sign(acc) * (np.abs(acc) // len(rows))).astype(acc.dtype)
            else:
                acc = (acc / len(rows)).astype(acc.dtype)
        return _f32_to_bf16(acc) if bf16 else acc

    # -- the log ------------------------------------------------------------------------

    def log_lines(self) -> list[str]:
        out = []
        for kind, *rest in self.calls:
            words = [self.driver._name(int(v)) if isinstance(v, int) and v > 0xFFFF else str(v) for v in rest]
            out.append(" ".join([kind, *words]))
        return out


__all__ = ["NcclDouble", "NcclDoubleError"]
