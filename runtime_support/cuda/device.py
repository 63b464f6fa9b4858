"""CudaDevice: the `cuda` HAL device, one GPU through pycuda (IREE's cuda_device.c).

One CUDA context and one stream per device. Every driver call this device makes goes
through a method here (allocate, memset, copies, launch, synchronize), made with the
context current (`active()`, pushed only on a thread where it is not already) and turned
into a one-line VMError carrying the driver's CUresult name, its text and, for kernels,
the export name. Queue work is enqueued on the stream and completed through a CUDA event
(queue.py); host reads wait for the stream first.

`open_cuda_device("cuda")` / `("cuda:1")` is what `load(device=...)` calls.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from runtime_support.cuda.driver import driver_error, open_driver
from runtime_support.cuda.executable_def import FORMAT
from runtime_support.errors import StatusCode, VMError
from runtime_support.hal.device import HalDevice

IDENTIFIER = "cuda"
_MEMSET = {1: "memset_d8_async", 2: "memset_d16_async", 4: "memset_d32_async"}


def parse_device_name(name: str) -> int:
    """`cuda` -> 0, `cuda:N` -> N; anything else NOT_FOUND."""
    kind, sep, ordinal = name.partition(":")
    if kind != IDENTIFIER or (sep and not ordinal.isdigit()):
        raise VMError(StatusCode.NOT_FOUND, f"no device {name!r}; the cuda device is 'cuda' or 'cuda:N' (N a GPU ordinal)")
    return int(ordinal) if sep else 0


def open_cuda_device(name: str = "cuda", driver_module: str = "pycuda.driver") -> "CudaDevice":
    """The device `name` names, or a one-line VMError saying what is missing."""
    ordinal = parse_device_name(name)
    driver = open_driver(driver_module)
    count = driver.Device.count()
    if ordinal >= count:
        raise VMError(StatusCode.UNAVAILABLE, f"device {name!r}: the CUDA driver reports {count} GPU(s) (ordinals 0..{count - 1})")
    return CudaDevice(driver, ordinal)


class CudaDevice(HalDevice):
    """A `!hal.device` on one GPU."""

    def __init__(self, driver, ordinal: int = 0, *, stream_ordered="auto") -> None:
        from runtime_support.cuda.memory import CudaAllocator
        from runtime_support.cuda.pools import open_stream_ordered
        from runtime_support.cuda.queue import CudaQueue

        self.driver = driver
        self.ordinal = ordinal
        self.identifier = IDENTIFIER
        self.worker_count = 1  # workgroup parallelism is the GPU's; the host issues launches
        try:
            self.cu_device = driver.Device(ordinal)
            self.context = self.cu_device.make_context()  # created current on this thread
        except Exception as e:
            raise driver_error(f"creating a context on GPU {ordinal}", e) from None
        try:
            self.stream = driver.Stream()
            # Recorded after each queue operation's work; no timing, as IREE's events.
            self.event = driver.Event(driver.event_flags.DISABLE_TIMING)
            self.stream_ordered = open_stream_ordered(driver, self.cu_device) if stream_ordered == "auto" else stream_ordered
        except Exception as e:
            raise driver_error("creating the stream", e) from None
        finally:
            # Not left current: several devices (cuda:0, cuda:1) may share a thread.
            driver.Context.pop()
        self._local = threading.local()
        self._pending = False  # work enqueued on the stream since the last synchronize
        self.allocator = CudaAllocator(self)
        self.queue = CudaQueue(self)

    def __repr__(self) -> str:
        return f"<CudaDevice {self.identifier}:{self.ordinal}>"

    @property
    def executable_formats(self) -> tuple[str, ...]:
        return (FORMAT,)

    # -- context -----------------------------------------------------------------------

    @contextmanager
    def active(self):
        """The device's context current for the block: pushed on entry when this thread
        does not have it already (nested blocks share one push), popped on exit. Nothing
        stays current between operations: several devices may share a thread, and pycuda
        aborts the process at exit if a context is still on a thread's stack."""
        depth = getattr(self._local, "depth", 0)
        if depth:
            self._local.depth = depth + 1
            try:
                yield
            finally:
                self._local.depth = depth
            return
        try:
            self.context.push()
        except Exception as e:
            raise driver_error("cuCtxPushCurrent", e) from None
        self._local.depth = 1
        try:
            yield
        finally:
            self._local.depth = 0
            self.driver.Context.pop()

    # -- queries -------------------------------------------------------------------------

    def query_i64(self, category, key) -> tuple[int, int]:
        """(ok, value) as IREE's CUDA device answers; (0, 0) for what it does not know."""
        from runtime_support.hal.device import decode_text, glob_match

        category, key = decode_text(category), decode_text(key)
        if category == "hal.device.id":
            return 1, int(glob_match(key, self.identifier))
        if category == "hal.executable.format":
            return 1, int(key == FORMAT)
        if category == "cuda.device" and key in ("compute_capability_major", "compute_capability_minor"):
            major, minor = self.cu_device.compute_capability()
            return 1, major if key.endswith("major") else minor
        return 0, 0

    # -- objects -------------------------------------------------------------------------

    def create_executable(self, format: str, data, constants=None):
        from runtime_support.cuda.executable import CudaHalExecutable
        from runtime_support.errors import LoaderError

        if format != FORMAT:
            raise LoaderError(f"executable format {format!r} cannot run on the cuda device (it runs {FORMAT!r})")
        with self.active():
            return CudaHalExecutable.load(self, data)

    def create_channel(self, rank: int, count: int, group: str = "", uid: bytes | None = None):
        """hal.channel.create: a NCCL communicator (nccl_channel.py)."""
        from runtime_support.cuda.nccl_channel import NcclChannel

        return NcclChannel.create_on(self, rank, count, group, uid)

    def create_command_buffer(self, modes: int, categories: int, binding_capacity: int):
        from runtime_support.cuda.command_buffer import CudaCommandBuffer

        return CudaCommandBuffer(self, modes, categories, binding_capacity)

    # -- driver calls --------------------------------------------------------------------

    def is_current_here(self) -> bool:
        """Whether this thread is inside `active()`: work issued now is the device's own
        (its queue or command buffers), so it goes on the stream."""
        return getattr(self._local, "depth", 0) > 0

    def allocate(self, size: int, *, host: bool = False, stream_ordered: bool = False, managed: bool = False):
        """A DeviceAllocation of at least 4 bytes (as IREE, so a pointer is always valid)."""
        import numpy as np

        from runtime_support.cuda.memory import DeviceAllocation

        size = max(size, 4)
        with self.active():
            try:
                if managed:  # one address for host and GPU (IREE: CU_MEM_ATTACH_GLOBAL)
                    flags = self.driver.mem_attach_flags.GLOBAL
                    array = self.driver.managed_empty(size, np.uint8, mem_flags=flags)
                    return DeviceAllocation(self, array, array.base.get_device_pointer(), size, "managed")
                if stream_ordered and self.stream_ordered is not None:
                    pools, stream = self.stream_ordered, self.stream
                    ptr = pools.alloc(size, stream)
                    self._pending = True
                    return DeviceAllocation(self, None, ptr, size, "async", self._stream_free(pools, ptr))
                if host:
                    flags = self.driver.host_alloc_flags.DEVICEMAP
                    array = self.driver.pagelocked_empty(size, np.uint8, mem_flags=flags)
                    return DeviceAllocation(self, array, array.base.get_device_pointer(), size, "host")
                handle = self.driver.mem_alloc(size)
                return DeviceAllocation(self, handle, int(handle), size, "device")  # pycuda frees it
            except Exception as e:
                routine = (
                    "cuMemAllocManaged" if managed
                    else "cuMemAllocAsync" if stream_ordered and self.stream_ordered
                    else "cuMemHostAlloc" if host else "cuMemAlloc"
                )
                raise driver_error(f"{routine} of {size} bytes", e) from None

    def _stream_free(self, pools, ptr: int):
        """The cuMemFreeAsync of one stream-ordered allocation (no reference to it)."""

        def free():
            with self.active():
                try:
                    pools.free(ptr, self.stream)
                except Exception as e:
                    raise driver_error("cuMemFreeAsync", e) from None
                self._pending = True

        return free

    def memset(self, ptr: int, value: int, width: int, count: int) -> None:
        with self.active():
            try:
                getattr(self.driver, _MEMSET[width])(ptr, value, count, self.stream)
            except Exception as e:
                raise driver_error(f"cuMemsetD{8 * width}Async", e) from None
            self._pending = True

    def copy_host_to_device(self, ptr: int, source, *, sync: bool = False) -> None:
        with self.active():
            try:
                if sync:
                    self.synchronize("upload")
                    self.driver.memcpy_htod(ptr, source)
                else:
                    self.driver.memcpy_htod_async(ptr, source, self.stream)
                    self._pending = True
            except VMError:
                raise
            except Exception as e:
                raise driver_error("cuMemcpyHtoD" + ("" if sync else "Async"), e) from None

    def copy_device_to_device(self, target: int, source: int, length: int) -> None:
        with self.active():
            try:
                self.driver.memcpy_dtod_async(target, source, length, self.stream)
            except Exception as e:
                raise driver_error("cuMemcpyDtoDAsync", e) from None
            self._pending = True

    def copy_device_to_host(self, out, ptr: int) -> None:
        """Reads device memory into the host array `out` once the stream's work is done."""
        with self.active():
            self.synchronize("download")
            try:
                self.driver.memcpy_dtoh(out, ptr)
            except Exception as e:
                raise driver_error("cuMemcpyDtoH", e) from None

    def launch(self, launch) -> None:
        with self.active():
            launch.run(self.stream)
            self._pending = True

    def mark_pending(self) -> None:
        """Work was enqueued on the stream (command buffers launch on it directly)."""
        self._pending = True

    def synchronize(self, what: str = "stream") -> None:
        """Waits for the stream's enqueued work through the device's event (if any)."""
        if not self._pending:
            return
        with self.active():
            self._pending = False
            try:
                self.event.record(self.stream)
                self.event.synchronize()
            except Exception as e:
                raise driver_error(f"cuEventSynchronize after {what}", e) from None


__all__ = ["CudaDevice", "IDENTIFIER", "open_cuda_device", "parse_device_name"]
