"""HalExecutable: a loaded kernel library (`!hal.executable`) on a device.

Wraps a loader `Executable` (runtime_support/loaders): export lookup by name and launch
with resolved binding addresses.
"""

from __future__ import annotations

import inspect
import time


class HalExecutable:
    def __init__(self, native, *, device=None, format: str | None = None) -> None:
        self.native = native
        self.device = device
        self.format = format if format is not None else getattr(native, "format", None)
        self._workers_param: bool | None = None
        self._tile_ns: dict[int, float] = {}  # per export: last inline run's ns per workgroup
        self._flat = None  # the loader's dispatch_flat (False: none)
        self._ordinals: dict = {}  # lookup's answers (a dynamic-shape call looks up per call)

    def __repr__(self) -> str:
        return f"<HalExecutable {self.format} exports={self.export_names()}>"

    @classmethod
    def load(cls, device, format: str, data, constants=None) -> "HalExecutable":
        """Loads `data` with the loader for `format` (LoaderError if none)."""
        from ..loaders import load_executable

        return cls(load_executable(format, data, constants), device=device, format=format)

    @property
    def exports(self) -> list:
        return list(getattr(self.native, "exports", []) or [])

    def export_names(self) -> list[str]:
        return [getattr(e, "name", "?") for e in self.exports]

    def lookup(self, name: bytes | str) -> int:
        """Export ordinal of `name`; NOT_FOUND if absent."""
        cached = type(name) is bytes or type(name) is str
        ordinal = self._ordinals.get(name) if cached else None
        if ordinal is None:
            ordinal = int(self.native.lookup(name))
            if cached:  # (found names only: the dict stays as small as the exports)
                self._ordinals[name] = ordinal
        return ordinal

    def dispatch(
        self, ordinal: int, workgroup_count, constants, bindings, workers: int = 1
    ) -> None:
        """Launches export `ordinal` over `workgroup_count` (x, y, z) with u32
        `constants` and `bindings` = [(address, length), ...], on up to `workers`
        threads when the loader supports that (see `_on_one_thread`). The loader
        validates the counts."""
        counts = tuple(workgroup_count)
        one = self._on_one_thread(ordinal, counts, workers)
        if one is None:
            self._pooled(ordinal, counts, constants, bindings, workers)
        elif one:
            start = time.perf_counter_ns()
            self.native.dispatch(ordinal, counts, constants, bindings)
            self._tile_ns[ordinal] = (time.perf_counter_ns() - start) / _tiles(counts)
        else:
            self.native.dispatch(ordinal, counts, constants, bindings)

    def dispatch_flat(self, ordinal: int, counts, constants, flat, workers: int = 1) -> None:
        """`dispatch` with `flat` = the binding addresses, then their lengths, and `counts`
        a tuple: the per-call form of a one-shot command buffer's dispatch (the loader's
        `dispatch_flat` where it has one; the same one-thread-or-pool choice)."""
        inline = self._flat
        if inline is None:
            inline = self._flat = getattr(self.native, "dispatch_flat", False)
        if not inline:
            n = len(flat) // 2
            self.dispatch(ordinal, counts, constants, list(zip(flat[:n], flat[n:])), workers)
            return
        one = self._on_one_thread(ordinal, counts, workers)
        if one is None:
            n = len(flat) // 2
            self._pooled(ordinal, counts, constants, list(zip(flat[:n], flat[n:])), workers)
        elif one:
            start = time.perf_counter_ns()
            inline(ordinal, counts, constants, flat)
            self._tile_ns[ordinal] = (time.perf_counter_ns() - start) / _tiles(counts)
        else:
            inline(ordinal, counts, constants, flat)

    def _pooled(self, ordinal: int, counts, constants, bindings, workers: int) -> None:
        """A grid split on the pool of this executable's device (a context's later devices
        each have their own: LocalDevice.pool_ordinal)."""
        k = getattr(self.device, "pool_ordinal", 0)
        if k:
            self.native.dispatch(ordinal, counts, constants, bindings, workers, pool_ordinal=k)
        else:
            self.native.dispatch(ordinal, counts, constants, bindings, workers)

    def _on_one_thread(self, ordinal: int, counts: tuple, workers: int):
        """How a grid runs: None on the pool; True on the calling thread, timed; False
        on the calling thread. As recorded plans do (native/plan.ll), a grid of
        several workgroups runs on one thread (and is timed) while this export's last
        one-thread run says it takes under $PYREE_INLINE_US, or no run says yet: waking
        workers costs more than small grids gain. Single workgroups and loaders without
        a worker parameter always run on the calling thread."""
        if workers > 1 and _tiles(counts) > 1 and self._takes_workers():
            per_tile = self._tile_ns.get(ordinal, -1.0)
            return True if per_tile < 0 or per_tile * _tiles(counts) < _inline_ns() else None
        return False

    def _takes_workers(self) -> bool:
        if self._workers_param is None:
            try:
                params = inspect.signature(self.native.dispatch).parameters
            except (TypeError, ValueError):
                params = {}
            self._workers_param = "workers" in params
        return self._workers_param

    def close(self) -> None:
        close = getattr(self.native, "close", None)
        if close is not None:
            close()


_threshold: list[int] = []


def _inline_ns() -> int:
    if not _threshold:
        from ..native.jit import inline_ns

        _threshold.append(inline_ns())
    return _threshold[0]


def _tiles(counts: tuple) -> int:
    """The workgroups of an (x, y, z) count (0 for another shape: the loader rejects it)."""
    return counts[0] * counts[1] * counts[2] if len(counts) == 3 else 0
