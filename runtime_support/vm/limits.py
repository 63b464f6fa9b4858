"""Allocation limits: every size that comes from a module or a program is checked here
before memory is committed to it.

A request larger than the memory this process can get (the smallest of the available
physical memory, the address-space rlimit and `PYREE_MAX_ALLOCATION_BYTES` when set) is a
`VMError` RESOURCE_EXHAUSTED naming what was asked for, as IREE's allocators answer; so
is a `MemoryError` raised while allocating (`allocating()`). Small requests skip the
check: reading the limits costs a system call.
"""

from __future__ import annotations

import contextlib
import os
import resource

from runtime_support.errors import StatusCode, VMError

__all__ = ["check_allocation", "allocating", "allocation_limit", "exhausted", "ResourceExhausted"]

# Below this many bytes a request is not worth a look at /proc/meminfo.
_CHEAP = 64 << 20


def _available_bytes() -> int:
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        return 1 << 62


def allocation_limit() -> int:
    """The largest single allocation this process may attempt now, in bytes."""
    limit = _available_bytes()
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limit = min(limit, soft)
    override = os.environ.get("PYREE_MAX_ALLOCATION_BYTES")
    if override:
        try:
            limit = min(limit, int(override))
        except ValueError:
            pass
    return limit


class ResourceExhausted(VMError, MemoryError):
    """RESOURCE_EXHAUSTED for an allocation. Also a MemoryError, so callers that add
    context to a failed allocation (`except MemoryError`) keep doing so."""


def exhausted(what: str, nbytes: int, detail: str = "") -> VMError:
    extra = f" ({detail})" if detail else ""
    return ResourceExhausted(
        StatusCode.RESOURCE_EXHAUSTED,
        f"{what}: cannot allocate {nbytes} bytes{extra}",
    )


def check_allocation(what: str, nbytes: int, detail: str = "") -> None:
    """Raises RESOURCE_EXHAUSTED if `nbytes` cannot be allocated (see the module doc)."""
    if nbytes < _CHEAP:
        return
    limit = allocation_limit()
    if nbytes > limit:
        raise exhausted(what, nbytes, f"{detail}; limit {limit}" if detail else f"limit {limit}")


@contextlib.contextmanager
def allocating(what: str, nbytes: int, detail: str = ""):
    """Checks `nbytes` first, and turns a MemoryError inside the block into
    RESOURCE_EXHAUSTED naming the request."""
    check_allocation(what, nbytes, detail)
    try:
        yield
    except MemoryError:
        raise exhausted(what, nbytes, detail) from None
