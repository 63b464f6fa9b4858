"""LocalDevice: the local CPU device (`local-sync` or `local-task`).

A device holds its allocator, its queue and a worker count (the workgroup parallelism a
dispatch may use: `local-task` defaults to $PYREE_WORKERS or the cores this process may
run on), and answers `hal.device.query.i64` (hal-abi.md §A.2). Its threads are the native
worker pool of native/pool.py numbered `pool_ordinal`: 0 (the first device of a
context, or one made on its own) unless the context made it as its k-th device, which
then has pool k of its own, as each `--device=local-task` of iree-run-module creates its
own driver and task executor (iree/tooling/device_util.c creates each device with
iree_hal_create_device, which creates a driver per call; the local-task driver factory
creates its executors in iree/hal/drivers/local_task/registration/driver_module.c). The
pool is made at the device's first grid split across workers; a one-worker device
(`local-sync`, workers=1) never makes one.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .allocator import HalAllocator
from .command_buffer import HalCommandBuffer
from .executable import HalExecutable
from .queue import LocalQueue

DEVICE_IDS = ("local-sync", "local-task")

# IREE's CPU feature names that /proc/cpuinfo spells differently.
_CPUINFO_NAMES = {
    "sse3": "pni",
    "sse4.1": "sse4_1",
    "sse4.2": "sse4_2",
    "lzcnt": "abm",
    "avxvnni": "avx_vnni",
    "avxvnniint8": "avx_vnni_int8",
    "avx512vnni": "avx512_vnni",
    "avx512bf16": "avx512_bf16",
    "avx512fp16": "avx512_fp16",
    "avx512vbmi2": "avx512_vbmi2",
    "avx512bitalg": "avx512_bitalg",
    "avx512vpopcntdq": "avx512_vpopcntdq",
    "amx-tile": "amx_tile",
    "amx-int8": "amx_int8",
    "amx-bf16": "amx_bf16",
    "amx-fp16": "amx_fp16",
}


@lru_cache(maxsize=1)
def host_cpu_features() -> frozenset[str]:
    """CPU feature flags of the host (Linux /proc/cpuinfo; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


def has_cpu_feature(name: str) -> bool:
    name = name.strip().lstrip("+").lower()
    features = host_cpu_features()
    return name in features or _CPUINFO_NAMES.get(name, name) in features


def glob_match(pattern: str, text: str) -> bool:
    """IREE's identifier glob: `*` matches any run, `?` any one character."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, text, re.DOTALL) is not None


def decode_text(value) -> str:
    if isinstance(value, str):
        return value
    return bytes(value).decode("utf-8", errors="replace")


def _loader_formats() -> tuple[str, ...]:
    try:
        from ..loaders import supported_formats
    except ImportError:
        return ()
    return tuple(supported_formats())


class HalDevice:
    """What every pyree `!hal.device` is (LocalDevice here, CudaDevice in
    runtime_support/cuda): the class import modules check device arguments against."""

    __slots__ = ()


class LocalDevice(HalDevice):
    """A `!hal.device` running kernels on the host CPU."""

    def __init__(
        self,
        identifier: str = "local-task",
        *,
        worker_count: int | None = None,
        executable_formats=None,
    ) -> None:
        if identifier not in DEVICE_IDS:
            raise ValueError(f"unknown local device {identifier!r}; expected one of {DEVICE_IDS}")
        if identifier == "local-sync":
            worker_count = 1
        elif worker_count is None:
            from ..native.pool import default_worker_count

            worker_count = default_worker_count()  # $PYREE_WORKERS, else the usable cores
        self.identifier = identifier
        self.worker_count = max(1, int(worker_count))
        self._formats = None if executable_formats is None else tuple(executable_formats)
        self.allocator = HalAllocator(self)
        self.queue = LocalQueue()
        self.pool_ordinal = 0  # whose worker pool its grids split on (context.make_devices)

    def __repr__(self) -> str:
        return f"<LocalDevice {self.identifier} workers={self.worker_count}>"

    @property
    def executable_formats(self) -> tuple[str, ...]:
        return self._formats if self._formats is not None else _loader_formats()

    def query_i64(self, category, key) -> tuple[int, int]:
        """(ok, value) for a §A.2 query; (0, 0) for unknown categories and keys."""
        category, key = decode_text(category), decode_text(key)
        if category == "hal.device.id":
            return 1, int(glob_match(key, self.identifier))
        if category == "hal.executable.format":
            return 1, int(key in self.executable_formats)
        if category == "hal.device" and key == "concurrency":
            return 1, 1  # one queue
        if category == "hal.dispatch" and key == "concurrency":
            return 1, self.worker_count
        if category == "hal.cpu":
            return 1, int(has_cpu_feature(key))
        return 0, 0

    def create_executable(self, format: str, data, constants=None) -> HalExecutable:
        return HalExecutable.load(self, format, data, constants)

    def create_command_buffer(self, modes: int, categories: int, binding_capacity: int):
        return HalCommandBuffer(self, modes, categories, binding_capacity)
