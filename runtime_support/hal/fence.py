"""Fences: sets of timepoints that are pending, reached or failed.

A `Timepoint` stands for one (semaphore, value) pair of the C runtime; a `Fence` is a set
of timepoints and is reached when all of them are, failed when any of them is. Joined
fences share their inputs' timepoints, so signaling either signals both.

A fresh fence is its own single timepoint (`Fence` extends `Timepoint`): the common life
of a fence on a synchronous queue (created, signaled once, awaited) is one object and a
few attribute reads, with no timepoint object or tuple behind it.

All state changes happen under one module-wide lock (`_cond` is a condition on it for
`Fence.wait`), so any thread may signal, fail or wait. Completion callbacks
(`Fence.on_complete`) run outside the lock, on the thread that completed the last
timepoint (or at once, if already complete).
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterable

from ..errors import StatusCode, VMError

_lock = threading.Lock()
_cond = threading.Condition(_lock)
# Bound once: `with _lock` costs twice an acquire/release pair through these.
_acquire, _release = _lock.acquire, _lock.release
_blocked = 0  # threads inside _cond.wait() (changed under _lock)

_PENDING = 0
_REACHED = 1
_FAILED = 2
# `fence.state == REACHED` is a sufficient (lock-free, frame-free) test that a fence is
# reached: a fresh fence's state is its own, and a joined fence's own state stays pending
# (its inputs' timepoints carry it), so only `reached_now()` can say yes for that one.
REACHED = _REACHED

# Result of `Fence.query` for a pending fence.
DEFERRED = int(StatusCode.DEFERRED)


class _Waiter:
    """One `on_complete` registration spanning several timepoints."""

    __slots__ = ("remaining", "callback", "done")

    def __init__(self, remaining: int, callback: Callable[[VMError | None], None]) -> None:
        self.remaining = remaining
        self.callback = callback
        self.done = False

    # Both are called with _cond held; they return the callback to run, if any.
    def reached(self):
        self.remaining -= 1
        if self.remaining == 0 and not self.done:
            self.done = True
            return self.callback, None
        return None

    def failed(self, error: VMError):
        if not self.done:
            self.done = True
            return self.callback, error
        return None


class Timepoint:
    __slots__ = ("state", "error", "waiters")

    def __init__(self) -> None:
        self.state = _PENDING
        self.error: VMError | None = None
        self.waiters: list[_Waiter] | None = None  # made on the first registration


def _complete(timepoints: Iterable[Timepoint], error: VMError | None) -> None:
    """Marks pending timepoints reached (error None) or failed, then runs callbacks."""
    ready = []
    _acquire()
    try:
        for tp in timepoints:
            if tp.state != _PENDING:
                continue  # reached stays reached; the first failure wins
            tp.state = _REACHED if error is None else _FAILED
            tp.error = error
            waiters, tp.waiters = tp.waiters, None
            if waiters:
                for waiter in waiters:
                    fire = waiter.reached() if error is None else waiter.failed(error)
                    if fire is not None:
                        ready.append(fire)
        if _blocked:  # only threads blocked in Fence.wait need waking
            _cond.notify_all()
    finally:
        _release()
    for callback, err in ready:
        callback(err)


def as_error(code: int, message: str) -> VMError:
    return VMError(code or StatusCode.UNKNOWN, message)


class Fence(Timepoint):
    """A `!hal.fence`. A fresh one is its own single timepoint (`_set` None); a joined
    one holds its inputs' timepoints in `_set` and its own state fields are unused."""

    __slots__ = ("_set", "__weakref__")

    def __init__(self, timepoints: Iterable[Timepoint] | None = None) -> None:
        self.state = _PENDING
        self.error = None
        self.waiters = None
        self._set: tuple[Timepoint, ...] | None = (
            None if timepoints is None else tuple(timepoints)
        )

    @property
    def timepoints(self) -> tuple[Timepoint, ...]:
        tps = self._set
        return (self,) if tps is None else tps

    def __repr__(self) -> str:
        return f"<Fence {self.query()}>"

    @classmethod
    def join(cls, fences: Iterable["Fence | None"]) -> "Fence | None":
        """A fence over every timepoint of `fences` (None entries skipped). None when there
        are no timepoints at all (which counts as already reached)."""
        seen: dict[int, Timepoint] = {}
        for fence in fences:
            if fence is None:
                continue
            for tp in fence.timepoints:
                seen.setdefault(id(tp), tp)
        return cls(seen.values()) if seen else None

    @classmethod
    def join_fresh(cls, fences) -> "Fence | None":
        """`join` for the import: when every input is None or a fresh fence already
        reached (what a synchronous queue leaves behind), a new reached fence, which
        nothing can tell from their join (reached is final: signal and fail do nothing
        to it); otherwise `join`."""
        some = False
        for fence in fences:
            if fence is not None:
                if fence._set is not None or fence.state != _REACHED:
                    return cls.join(list(fences))
                some = True
        if not some:
            return None
        return cls.reached()

    @classmethod
    def reached(cls) -> "Fence":
        """A new fence already signalled: what fence.create and a completed signal on a
        synchronous queue leave behind (built without `__init__`'s call: fast paths
        make one per submission)."""
        fence = object.__new__(cls)
        fence.state = _REACHED
        fence.error = fence.waiters = fence._set = None
        return fence

    # -- state ----------------------------------------------------------------------------

    def _failure(self) -> VMError | None:
        for tp in self.timepoints:
            if tp.state == _FAILED:
                return tp.error
        return None

    def query(self) -> int:
        """0 if reached, DEFERRED (17) if pending, else the failure's status code."""
        with _cond:
            error = self._failure()
            if error is not None:
                return int(error.code)
            if all(tp.state == _REACHED for tp in self.timepoints):
                return 0
            return DEFERRED

    def reached_now(self) -> bool:
        """True if every timepoint is reached. Lock-free: reached is a final state, so a
        True answer cannot go stale (False may be, and callers then take the slow path)."""
        tps = self._set
        if tps is None:
            return self.state == _REACHED
        for tp in tps:
            if tp.state != _REACHED:
                return False
        return True

    @property
    def is_reached(self) -> bool:
        return self.query() == 0

    def signal(self) -> None:
        if self._set is None:
            # A fresh fence nobody waits on (what a synchronous queue signals): flip it
            # under the lock; anything else goes through _complete.
            _acquire()
            if self.waiters is None and not _blocked:
                if self.state == _PENDING:
                    self.state = _REACHED
                _release()
                return
            _release()
        _complete(self.timepoints, None)

    def fail(self, error: VMError | int, message: str | None = None) -> None:
        """Fails every pending timepoint with `error` (a VMError or a status code; the
        code is masked with 0x1F, OK becomes UNKNOWN)."""
        if not isinstance(error, VMError):
            code = StatusCode.from_code(int(error)) or StatusCode.UNKNOWN
            error = as_error(code, message or f"fence failed with status {code.name}")
        _complete(self.timepoints, error)

    def wait(self, timeout: float | None = None) -> bool:
        """Waits until reached. True when reached, False on timeout (seconds; None =
        forever, 0 = poll). Raises the failure's VMError if the fence failed."""
        global _blocked
        if self.reached_now():
            return True
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        with _cond:
            while True:
                error = self._failure()
                if error is not None:  # a fresh error each time: callers annotate it
                    raise VMError(error.code, error.message) from error
                if all(tp.state == _REACHED for tp in self.timepoints):
                    return True
                remaining = None
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                _blocked += 1
                try:
                    _cond.wait(remaining)
                finally:
                    _blocked -= 1

    def on_complete(self, callback: Callable[[VMError | None], None]) -> None:
        """Calls `callback(None)` once every timepoint is reached, or `callback(error)` on
        the first failure; at once (on this thread) if that has already happened."""
        with _cond:
            error = self._failure()
            pending = [tp for tp in self.timepoints if tp.state == _PENDING]
            if error is None and pending:
                waiter = _Waiter(len(pending), callback)
                for tp in pending:
                    if tp.waiters is None:
                        tp.waiters = [waiter]
                    else:
                        tp.waiters.append(waiter)
                return
        callback(error)


def wait_all(fences: Iterable[Fence | None], timeout: float | None = None) -> bool:
    """Waits for every fence (None entries are reached). See `Fence.wait`."""
    fences = list(fences)
    for f in fences:
        if f is not None and not f.reached_now():
            break
    else:
        return True
    joined = Fence.join(fences)
    return True if joined is None else joined.wait(timeout)
