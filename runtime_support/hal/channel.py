"""`!hal.channel`: the group of ranks a collective runs over.

The default provider, as IREE's channel provider answers `hal.channel.create` with rank and
count -1: MPI's world communicator when mpi4py can be imported and the process was
started by an MPI launcher (mpiexec/mpirun set PMI_*, OMPI_* or similar variables),
otherwise a one-rank channel. An explicit rank/count must agree with that group; asking
for several ranks without MPI is a one-line error naming what to install.

`split(color, key)` is a communicator split (color -1: this rank takes no part and gets a
null channel, as NCCL's NCCL_SPLIT_NOCOLOR).
"""

from __future__ import annotations

import os

from ..errors import StatusCode, VMError

MPI_HINT = "run under mpiexec with mpi4py installed: pip install 'pyree[mpi]'"
# Variables the common MPI launchers set in every rank they start.
_LAUNCHER_VARIABLES = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MPI_LOCALRANKID")
NO_COLOR = -1


def launched_by_mpi() -> bool:
    return any(v in os.environ for v in _LAUNCHER_VARIABLES)


def world_communicator():
    """mpi4py's COMM_WORLD when this process is an MPI rank, else None."""
    if not launched_by_mpi():
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        raise VMError(
            StatusCode.UNAVAILABLE,
            f"this process was started by an MPI launcher but mpi4py is not installed; {MPI_HINT}",
        ) from None
    return MPI.COMM_WORLD


class HalChannel:
    """A rank in a group of `count` ranks; `comm` is the mpi4py communicator (None for a
    one-rank channel, which needs no MPI at all)."""

    __slots__ = ("rank", "count", "comm", "group")

    def __init__(self, rank: int, count: int, comm=None, group: str = "") -> None:
        self.rank = rank
        self.count = count
        self.comm = comm
        self.group = group

    def __repr__(self) -> str:
        return f"<HalChannel rank {self.rank} of {self.count}>"

    @classmethod
    def create(cls, rank: int, count: int, group: str = "") -> "HalChannel":
        comm = world_communicator()
        world_rank, world_count = (comm.Get_rank(), comm.Get_size()) if comm is not None else (0, 1)
        if rank == -1 and count == -1:
            rank, count = world_rank, world_count
        if count > world_count or (count == world_count and rank != world_rank and comm is None):
            raise VMError(
                StatusCode.UNAVAILABLE,
                f"hal.channel.create: the program asks for {count} ranks but this process runs "
                f"{world_count}; {MPI_HINT} (e.g. mpiexec -n {count} pyree-run ...)",
            )
        if not (0 <= rank < count):
            raise VMError(StatusCode.INVALID_ARGUMENT, f"hal.channel.create: rank {rank} of {count}")
        if count == 1:
            return cls(0, 1, None, group)
        if count != world_count:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"hal.channel.create: {count} ranks asked for in a world of {world_count}; "
                "use hal.channel.split for subgroups",
            )
        if rank != world_rank:  # an explicit rank order: renumber the world by key
            comm = comm.Split(0, rank)
        return cls(rank, count, comm, group)

    def split(self, color: int, key: int) -> "HalChannel | None":
        if self.comm is None:
            return None if color == NO_COLOR else HalChannel(0, 1, None, self.group)
        from mpi4py import MPI

        sub = self.comm.Split(MPI.UNDEFINED if color == NO_COLOR else color, key)
        if sub == MPI.COMM_NULL:
            return None
        return HalChannel(sub.Get_rank(), sub.Get_size(), sub, self.group)


__all__ = ["HalChannel", "MPI_HINT", "launched_by_mpi", "world_communicator"]
