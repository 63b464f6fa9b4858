"""The local device's queue: fence-ordered, synchronous execution (hal-abi.md §A.4).

`submit(wait, signal, work)` runs `work` as soon as `wait` is reached: at once, on the
calling thread, when it already is (the common case: compiled code waits on fences it
signaled itself); otherwise when some thread (usually the host) signals it later, on that
thread. Then `signal` is signaled. If `wait` fails, or `work` raises, `signal` fails with
that error instead and the work is skipped. Nothing ever blocks here, so a host that
signals a fence later can never deadlock with the queue.

Ordering: operations become ready when their wait fence is reached and run one at a time
in the order they became ready (submission order for operations released together).
As in IREE, operations are ordered only by their fences.
"""

from __future__ import annotations

import collections
import threading
from typing import Callable

from ..errors import StatusCode, VMError
from .fence import REACHED, Fence


def _nothing() -> None:
    """The work of queue operations that only order (alloca, dealloca, barrier)."""


def _invoke(work: Callable[[], None]) -> None:
    work()


def _apply(fn: Callable[[object], None], arg) -> None:
    """`call`'s work `fn(arg)` in `run_signalling`'s form."""
    fn(arg)


# What LocalQueue.run_now returns when another thread holds the queue.
BUSY = object()


def internal_error(name: str, exc: Exception) -> VMError:
    """A bug or a native failure inside an operation, reported as INTERNAL."""
    error = VMError(StatusCode.INTERNAL, f"{name}: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error



class _Op:
    __slots__ = ("work", "signal_fence", "name", "error", "returned")

    def __init__(self, work, signal_fence, name) -> None:
        self.work = work
        self.signal_fence = signal_fence
        self.name = name
        self.error: VMError | None = None
        self.returned = False  # submit() has returned to its caller


class LocalQueue:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready: collections.deque = collections.deque()
        self._draining = False
        # Errors of deferred operations that had no signal fence to report them on.
        self.lost_errors: list[VMError] = []

    def submit(
        self,
        wait_fence: Fence | None,
        signal_fence: Fence | None,
        work: Callable[[], None],
        name: str = "queue operation",
    ) -> None:
        """Runs `work` once `wait_fence` is reached, then signals `signal_fence`.

        If the work ran before this returns and failed with no signal fence to carry the
        error, the error is raised here.
        """
        self.call(wait_fence, signal_fence, _invoke, work, name)

    def call(
        self,
        wait_fence: Fence | None,
        signal_fence: Fence | None,
        fn: Callable[[object], None],
        arg,
        name: str = "queue operation",
    ) -> None:
        """`submit` of the work `fn(arg)`, without a closure per operation (the per-call
        path of queue.execute.indirect)."""
        if wait_fence is None or wait_fence.state == REACHED or wait_fence.reached_now():
            # The common case: nothing to wait for. When no other thread is draining the
            # queue, run here and now without queueing (same order, same error routing).
            error = self.run_signalling(_apply, fn, arg, signal_fence, name)
            if error is not BUSY:
                if error is not None and signal_fence is None:
                    raise error
                return
        op = _Op(lambda: fn(arg), signal_fence, name)
        if wait_fence is None:
            self._enqueue(op, None)
        else:
            wait_fence.on_complete(lambda error: self._enqueue(op, error))
        with self._lock:
            op.returned = True
            error = op.error
        if error is not None:
            raise error

    def run_signalling(self, fn: Callable[[object, object], None], a, b,
                       signal_fence: Fence | None, name: str):
        """`fn(a, b)` run here and now, as `call` runs work whose wait is over, then
        `signal_fence` (if any) signalled, or failed with the work's error, while the
        queue is still held. Returns the error (None when it ran; the caller raises it
        where no fence carries it), or BUSY without running it when another thread holds
        the queue."""
        if not self.hold():
            return BUSY
        error = None
        try:
            try:
                fn(a, b)
            except VMError as exc:
                error = exc
            except Exception as exc:  # a bug or a native failure: INTERNAL
                error = internal_error(name, exc)
            if signal_fence is not None:
                if error is None:
                    signal_fence.signal()
                else:
                    signal_fence.fail(error)
        finally:
            self.release()
        return error

    def idle(self) -> bool:
        """Whether no thread is running this queue's work now (a hint: the answer may
        go stale at once; callers that act on it still go through `run_now` or the
        imports, which decide under the lock)."""
        return not self._draining

    def hold(self) -> bool:
        """Takes the queue for this thread's exclusive use, as `run_now` does around its
        work: False (nothing taken) where another thread runs it. A True must be followed
        by `release()` (in a `finally`); work in between is the queue's next operation."""
        lock = self._lock
        lock.acquire()
        if self._draining:
            lock.release()
            return False
        self._draining = True
        lock.release()
        return True

    def release(self) -> None:
        """Gives up what `hold` took (running what became ready meanwhile first)."""
        lock = self._lock
        lock.acquire()
        if self._ready:
            lock.release()
            self._drain()
        else:
            self._draining = False
            lock.release()

    def run_now(self, fn: Callable[[object, object], None], a, b, name: str):
        """`fn(a, b)` run here and now with no fence to signal (`run_signalling`), for
        callers whose fences are private (runtime_support/exec/fast.py): None when it ran,
        its error when it failed, or BUSY without running it when another thread holds
        the queue (the caller then submits it through the imports)."""
        return self.run_signalling(fn, a, b, None, name)

    def signal(
        self, wait_fence: Fence | None, signal_fence: Fence | None, name: str = "queue operation"
    ) -> None:
        """`submit` of an operation with no work (alloca, dealloca, barrier): when it is
        ready now and nothing runs ahead of it, its signal fence is signaled at once."""
        if (
            wait_fence is None or wait_fence.state == REACHED or wait_fence.reached_now()
        ) and not self._draining:
            # (`_draining` False means nothing is queued either: an atomic read under the
            # GIL of state that only ever has ready operations while it is True.)
            if signal_fence is not None:
                signal_fence.signal()
            return
        self.call(wait_fence, signal_fence, _invoke, _nothing, name)

    def _enqueue(self, op: _Op, error: VMError | None) -> None:
        with self._lock:
            self._ready.append((op, error))
            if self._draining:
                return  # the thread draining the queue will run it
            self._draining = True
        self._drain()

    def _drain(self) -> None:
        """Runs ready operations until none is left, then gives up the draining role."""
        while True:
            with self._lock:
                if not self._ready:
                    self._draining = False
                    return
                op, error = self._ready.popleft()
            self._run(op, error)

    def _run(self, op: _Op, error: VMError | None) -> None:
        if error is None:
            try:
                op.work()
            except VMError as exc:
                error = exc
            except Exception as exc:  # a bug or a native failure: report it as INTERNAL
                error = internal_error(op.name, exc)
        if op.signal_fence is not None:
            if error is None:
                op.signal_fence.signal()
            else:
                op.signal_fence.fail(error)
        elif error is not None:
            with self._lock:
                if op.returned:
                    self.lost_errors.append(error)
                else:
                    op.error = error
