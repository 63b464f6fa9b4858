"""A test double of `pycuda.driver`: no GPU, every call recorded and checked.

This is NOT a CUDA implementation and runs no kernel. It stands in for pycuda so that
pyree's CUDA code runs on machines without a GPU, and it refuses what the real driver
would refuse:

- a module image must be NUL-terminated PTX text (the driver reads a C string) whose
  `.entry` names the function asked for; a prepared
  format must match the `.entry` parameter list (`P` per `.u64` pointer, `I` per `.b32`);
- a launch passes that many arguments, pointers 16-byte aligned (the PTX's `.align 16`)
  and inside a live allocation (or null), constants within 32 bits, block and grid within
  CUDA's limits, dynamic shared memory above 48 KiB only after the opt-in attribute;
- memory: allocations are simulated (bytes, at 256-byte aligned fake device addresses;
  managed memory, cuMemAllocManaged, at its host address: one pointer for host and GPU,
  as CUDA's unified addressing gives);
  every copy and memset must lie inside one live allocation, memsets of 16/32-bit
  patterns must be aligned to their width, async calls must name a stream of this double;
- every call that needs a context needs one current on the calling thread (CUDA's
  per-thread context stack: make_context pushes, Context.pop pops, ctx.push pushes).

`calls` is the log (tuples); `log_lines()` renders it one line per call, with device
addresses, sizes, offsets, grids and parameter buffers spelled out (the golden files;
managed memory, whose host addresses change from run to run, as `managedK+0xOFF`).
Copies really move the simulated bytes, so uploads and downloads round-trip; kernels do
not run, so results are whatever the device memory held, unless a test gives a kernel
a host model (`kernel_models[name] = fn(double, args)`, run at the launch).
"""

from __future__ import annotations

import re
import threading
import types

import numpy as np

_ENTRY = re.compile(r"\.entry\s+(\S+)\s*\((.*?)\)", re.S)
BASE_ADDRESS = 0x7F0000000000
DEFAULT_SHARED = 48 * 1024


def ptx_entries(ptx: str) -> dict[str, list[str]]:
    """`.entry` name -> its parameter types (`.u64` pointer or `.b32`), in order."""
    out = {}
    for name, params in _ENTRY.findall(ptx):
        kinds = []
        for p in params.split(","):
            words = p.split()
            if ".param" in words:
                kinds.append(words[words.index(".param") + 1])
        out[name] = kinds
    return out


class DriverDoubleError(Exception):
    """What the real driver would report as an error (its CUresult name in the text)."""


function_attribute = types.SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES="MAX_DYNAMIC_SHARED_SIZE_BYTES")
device_attribute = types.SimpleNamespace(MEMORY_POOLS_SUPPORTED="MEMORY_POOLS_SUPPORTED")
host_alloc_flags = types.SimpleNamespace(PORTABLE=1, DEVICEMAP=2, WRITECOMBINED=4)
event_flags = types.SimpleNamespace(DEFAULT=0, BLOCKING_SYNC=1, DISABLE_TIMING=2, INTERPROCESS=4)
mem_attach_flags = types.SimpleNamespace(GLOBAL=1, HOST=2, SINGLE=4)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


class PyCudaDriverDouble:
    """Used as the `pycuda.driver` module: `PyCudaDriverDouble(devices=1)`.

    `memory_pools=True` makes devices report MEMORY_POOLS_SUPPORTED (stream-ordered
    allocation is then reached through `stream_ordered_memory()`, not pycuda)."""

    function_attribute = function_attribute
    device_attribute = device_attribute
    host_alloc_flags = host_alloc_flags
    event_flags = event_flags
    mem_attach_flags = mem_attach_flags

    def __init__(self, devices: int = 1, memory_pools: bool = False) -> None:
        self.calls: list[tuple] = []
        self.allocations: dict[int, bytearray] = {}  # base address -> bytes
        self._next = BASE_ADDRESS
        self._tls = threading.local()
        self._streams = 0
        self._events = 0
        self.managed: list[int] = []  # managed allocations' addresses, in allocation order
        self.kernel_models: dict = {}
        double = self

        class Device:
            def __init__(self, ordinal):
                if not 0 <= ordinal < devices:
                    raise DriverDoubleError("cuDeviceGet failed: invalid device ordinal")
                self.ordinal = ordinal

            @staticmethod
            def count():
                double.calls.append(("Device.count",))
                return devices

            def name(self):
                return "pyree test double (no GPU)"

            def compute_capability(self):
                return (8, 0)

            def get_attribute(self, attribute):
                if attribute == device_attribute.MEMORY_POOLS_SUPPORTED:
                    return int(memory_pools)
                raise DriverDoubleError(f"cuDeviceGetAttribute failed: invalid argument ({attribute})")

            def make_context(self, flags=0):
                ctx = _Context(double, self.ordinal)
                double.calls.append(("make_context", self.ordinal))
                double._stack().append(ctx)
                return ctx

        class Context:
            @staticmethod
            def pop():
                stack = double._stack()
                if not stack:
                    raise DriverDoubleError("cuCtxPopCurrent failed: invalid device context")
                double.calls.append(("Context.pop", stack.pop().ordinal))

        self.Device = Device
        self.Context = Context

    # -- bookkeeping ------------------------------------------------------------------

    def _stack(self) -> list:
        stack = getattr(self._tls, "stack", None)
        if stack is None:
            stack = self._tls.stack = []
        return stack

    def _need_context(self, routine: str) -> None:
        if not self._stack():
            raise DriverDoubleError(f"{routine} failed: invalid device context (CUDA_ERROR_INVALID_CONTEXT)")

    def _stream_name(self, stream, routine: str) -> str:
        if isinstance(stream, str):  # tests of the launch layout pass a name
            return stream
        if not isinstance(stream, _Stream) or stream.driver is not self:
            raise DriverDoubleError(f"{routine} failed: invalid resource handle (not a stream of this driver)")
        return stream.name

    def _region(self, ptr, length: int, routine: str) -> tuple[bytearray, int]:
        if not _is_int(ptr):
            raise DriverDoubleError(f"{routine} failed: invalid argument (pointer {ptr!r} is not an int)")
        ptr = int(ptr)
        for base, data in self.allocations.items():
            if base <= ptr and ptr + length <= base + len(data):
                return data, ptr - base
        raise DriverDoubleError(
            f"{routine} failed: invalid argument ([0x{ptr:x}, 0x{ptr + length:x}) is not inside one allocation)"
        )

    def _place(self, data: bytearray) -> int:
        address = self._next
        self.allocations[address] = data
        self._next += (len(data) + 255) // 256 * 256 + 256  # a gap: overruns are caught
        return address

    # -- pycuda.driver API (the parts pyree uses) --------------------------------------

    def init(self, flags=0):
        self.calls.append(("init",))

    def Stream(self, flags=0):
        self._need_context("cuStreamCreate")
        stream = _Stream(self, f"stream{self._streams}")
        self._streams += 1
        self.calls.append(("Stream", stream.name))
        return stream

    def Event(self, flags=0):
        self._need_context("cuEventCreate")
        if not _is_int(flags) or flags & ~0x7:
            raise DriverDoubleError(f"cuEventCreate failed: invalid argument (flags {flags!r})")
        event = _Event(self, f"event{self._events}")
        self._events += 1
        self.calls.append(("Event", event.name, f"flags={flags}"))
        return event

    def mem_alloc(self, size):
        self._need_context("cuMemAlloc")
        if not _is_int(size) or size <= 0:
            raise DriverDoubleError(f"cuMemAlloc failed: invalid argument (size {size!r})")
        allocation = _DeviceAllocation(self, self._place(bytearray(int(size))))
        self.calls.append(("mem_alloc", int(size), int(allocation)))
        return allocation

    def pagelocked_empty(self, shape, dtype, order="C", mem_flags=0):
        self._need_context("cuMemHostAlloc")
        host = _HostAllocation(self, int(np.prod(shape)) * np.dtype(dtype).itemsize, mem_flags)
        self.calls.append(("pagelocked_empty", len(host.data), mem_flags))
        array = np.frombuffer(host.data, dtype=dtype).reshape(shape).view(_PagelockedArray)
        array._host = host
        return array

    def managed_empty(self, shape, dtype, order="C", mem_flags=0):
        """cuMemAllocManaged: host memory the (simulated) GPU reaches at the same address."""
        self._need_context("cuMemAllocManaged")
        size = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if size <= 0 or mem_flags not in (mem_attach_flags.GLOBAL, mem_attach_flags.HOST):
            raise DriverDoubleError(f"cuMemAllocManaged failed: invalid argument (size {size}, flags {mem_flags!r})")
        managed = _ManagedAllocation(self, size)
        self.managed.append(managed.address)
        self.calls.append(("managed_empty", size, managed.address, mem_flags))
        array = managed.data.view(dtype).reshape(shape).view(_PagelockedArray)
        array._host = managed
        return array

    def memcpy_htod(self, dest, src):
        self._need_context("cuMemcpyHtoD")
        source = memoryview(src).cast("B")
        data, offset = self._region(dest, source.nbytes, "cuMemcpyHtoD")
        data[offset : offset + source.nbytes] = source
        self.calls.append(("memcpy_htod", int(dest), source.nbytes))

    def memcpy_htod_async(self, dest, src, stream=None):
        self._need_context("cuMemcpyHtoDAsync")
        name = self._stream_name(stream, "cuMemcpyHtoDAsync")
        source = memoryview(src).cast("B")
        data, offset = self._region(dest, source.nbytes, "cuMemcpyHtoDAsync")
        data[offset : offset + source.nbytes] = source
        self.calls.append(("memcpy_htod_async", int(dest), source.nbytes, name))

    def memcpy_dtoh(self, dest, src):
        self._need_context("cuMemcpyDtoH")
        target = memoryview(dest).cast("B")
        if target.readonly:
            raise DriverDoubleError("cuMemcpyDtoH failed: invalid argument (read-only host buffer)")
        data, offset = self._region(src, target.nbytes, "cuMemcpyDtoH")
        target[:] = data[offset : offset + target.nbytes]
        self.calls.append(("memcpy_dtoh", int(src), target.nbytes))

    def memcpy_dtod_async(self, dest, src, size, stream=None):
        self._need_context("cuMemcpyDtoDAsync")
        name = self._stream_name(stream, "cuMemcpyDtoDAsync")
        s_data, s_off = self._region(src, size, "cuMemcpyDtoDAsync")
        d_data, d_off = self._region(dest, size, "cuMemcpyDtoDAsync")
        d_data[d_off : d_off + size] = bytes(s_data[s_off : s_off + size])
        self.calls.append(("memcpy_dtod_async", int(dest), int(src), int(size), name))

    def _memset(self, width: int, dest, value, count, stream):
        routine = f"cuMemsetD{8 * width}Async"
        self._need_context(routine)
        name = self._stream_name(stream, routine)
        if not _is_int(value) or not 0 <= value < 1 << (8 * width):
            raise DriverDoubleError(f"{routine} failed: invalid argument (value {value!r})")
        if _is_int(dest) and dest % width:
            raise DriverDoubleError(f"{routine} failed: invalid argument (0x{dest:x} not {width}-byte aligned)")
        data, offset = self._region(dest, count * width, routine)
        data[offset : offset + count * width] = int(value).to_bytes(width, "little") * count
        self.calls.append((f"memset_d{8 * width}_async", int(dest), int(value), int(count), name))

    def memset_d8_async(self, dest, data, size, stream=None):
        self._memset(1, dest, data, size, stream)

    def memset_d16_async(self, dest, data, size, stream=None):
        self._memset(2, dest, data, size, stream)

    def memset_d32_async(self, dest, data, size, stream=None):
        self._memset(4, dest, data, size, stream)

    def module_from_buffer(self, image, options=None, message_handler=None):
        self._need_context("cuModuleLoadDataEx")
        if not isinstance(image, (bytes, bytearray)):
            raise DriverDoubleError(f"module image must be bytes, got {type(image).__name__}")
        text = bytes(image).decode("ascii")  # PTX is ASCII; a decode error is a bad image
        if not text.endswith("\0"):
            raise DriverDoubleError("cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX: PTX is not NUL-terminated")
        text = text[:-1]
        if "\0" in text or ".version" not in text or ".target" not in text:
            raise DriverDoubleError("cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX: not a PTX module")
        entries = ptx_entries(text)
        self.calls.append(("module_from_buffer", len(image), sorted(entries)))
        return _Module(self, entries)

    def stream_ordered_memory(self):
        """What runtime_support.cuda.pools would give on a driver with memory pools."""
        return _StreamOrdered(self)

    # -- the log ----------------------------------------------------------------------

    def read(self, ptr: int, length: int) -> bytes:
        data, offset = self._region(ptr, length, "read")
        return bytes(data[offset : offset + length])

    def write(self, ptr: int, payload: bytes) -> None:
        data, offset = self._region(ptr, len(payload), "write")
        data[offset : offset + len(payload)] = payload

    def log_lines(self) -> list[str]:
        return [_render(call, self._name) for call in self.calls]

    def _name(self, value: int) -> str:
        """An address as the log spells it: hex, or `managedK+0xOFF` inside managed memory
        (whose host addresses differ from run to run)."""
        for k, base in enumerate(self.managed):
            data = self.allocations.get(base)
            if base <= value < base + (len(data) if data is not None else 1):
                return f"managed{k}+0x{value - base:x}"
        return f"0x{value:x}"


def _hex(value, name=None) -> str:
    if not _is_int(value):
        return str(value)
    return name(int(value)) if name else f"0x{value:x}"


def _render(call: tuple, name=None) -> str:
    kind, *rest = call
    if kind == "launch":
        name_, grid, block, shared, stream, args, formats = rest
        params = " ".join(f"{f}:{_hex(a, name)}" for f, a in zip(formats, args))
        return f"launch {name_} grid={grid} block={block} shared={shared} {stream} params=[{params}]"
    return " ".join([kind] + [_hex(v, name) if _is_int(v) and v > 0xFFFF else str(v) for v in rest])


class _Context:
    def __init__(self, driver, ordinal) -> None:
        self.driver = driver
        self.ordinal = ordinal

    def push(self):
        self.driver._stack().append(self)
        self.driver.calls.append(("Context.push", self.ordinal))

    def detach(self):
        self.driver.calls.append(("Context.detach", self.ordinal))


class _Stream:
    def __init__(self, driver, name) -> None:
        self.driver = driver
        self.name = name
        self.handle = 0x5000 + len(name)

    def synchronize(self):
        self.driver._need_context("cuStreamSynchronize")
        self.driver.calls.append(("stream.synchronize", self.name))


class _Event:
    def __init__(self, driver, name) -> None:
        self.driver = driver
        self.name = name
        self.recorded = False

    def record(self, stream=None):
        self.driver._need_context("cuEventRecord")
        self.recorded = True
        self.driver.calls.append(("event.record", self.name, self.driver._stream_name(stream, "cuEventRecord")))

    def synchronize(self):
        self.driver._need_context("cuEventSynchronize")
        if not self.recorded:
            raise DriverDoubleError("cuEventSynchronize failed: invalid resource handle (never recorded)")
        self.driver.calls.append(("event.synchronize", self.name))

    def query(self):
        return True


class _DeviceAllocation:
    def __init__(self, driver, address) -> None:
        self.driver = driver
        self.address = address

    def __int__(self) -> int:
        return self.address

    __index__ = __int__

    def free(self):
        self.driver._need_context("cuMemFree")
        if self.driver.allocations.pop(self.address, None) is None:
            raise DriverDoubleError(f"cuMemFree failed: invalid argument (0x{self.address:x} freed twice)")
        self.driver.calls.append(("mem_free", self.address))


class _PagelockedArray(np.ndarray):
    """pycuda's page-locked arrays have the HostAllocation as their `base`."""

    @property
    def base(self):
        return getattr(self, "_host", None)


class _HostAllocation:
    """Page-locked host memory mapped into the device: one buffer, two addresses."""

    def __init__(self, driver, size, flags) -> None:
        self.driver = driver
        self.data = bytearray(size)
        self.flags = flags
        self.device_pointer = driver._place(self.data) if flags & host_alloc_flags.DEVICEMAP else None

    def get_device_pointer(self):
        if self.device_pointer is None:
            raise DriverDoubleError("cuMemHostGetDevicePointer failed: invalid argument (not DEVICEMAP)")
        return self.device_pointer


class _ManagedAllocation:
    """Managed memory: 256-byte aligned host bytes registered at their own address."""

    def __init__(self, driver, size) -> None:
        raw = np.zeros(size + 256, np.uint8)
        skew = (-raw.ctypes.data) % 256
        self.data = raw[skew : skew + size]
        self.address = int(self.data.ctypes.data)
        driver.allocations[self.address] = memoryview(self.data)  # (bytearray-like slicing)

    def get_device_pointer(self):
        return self.address


class _StreamOrdered:
    def __init__(self, driver) -> None:
        self.driver = driver

    def alloc(self, size, stream):
        self.driver._need_context("cuMemAllocAsync")
        name = self.driver._stream_name(stream, "cuMemAllocAsync")
        address = self.driver._place(bytearray(size))
        self.driver.calls.append(("cuMemAllocAsync", size, address, name))
        return address

    def free(self, ptr, stream):
        self.driver._need_context("cuMemFreeAsync")
        name = self.driver._stream_name(stream, "cuMemFreeAsync")
        if self.driver.allocations.pop(ptr, None) is None:
            raise DriverDoubleError(f"cuMemFreeAsync failed: invalid argument (0x{ptr:x})")
        self.driver.calls.append(("cuMemFreeAsync", ptr, name))


class _Module:
    def __init__(self, driver, entries) -> None:
        self.driver = driver
        self.entries = entries

    def get_function(self, name):
        self.driver._need_context("cuModuleGetFunction")
        if name not in self.entries:
            raise DriverDoubleError(f"cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND: no kernel {name!r}")
        self.driver.calls.append(("get_function", name))
        return _Function(self.driver, name, self.entries[name])


class _Function:
    def __init__(self, driver, name, params) -> None:
        self.driver = driver
        self.name = name
        self.params = params
        self.format = None
        self.max_shared = DEFAULT_SHARED

    def set_attribute(self, attribute, value):
        if attribute != function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES or not _is_int(value) or value < 0:
            raise DriverDoubleError("cuFuncSetAttribute failed: invalid argument")
        self.max_shared = int(value)
        self.driver.calls.append(("set_attribute", self.name, attribute, value))

    def prepare(self, fmt):
        expected = "".join({".u64": "P", ".b32": "I"}[k] for k in self.params)
        if fmt != expected:
            raise DriverDoubleError(f"format {fmt!r} does not match the kernel's parameters {expected!r}")
        self.format = fmt
        self.driver.calls.append(("prepare", self.name, fmt))

    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        driver = self.driver
        driver._need_context("cuLaunchKernel")
        name = driver._stream_name(stream, "cuLaunchKernel")
        if self.format is None:
            raise DriverDoubleError("prepared_async_call before prepare")
        if len(args) != len(self.format):
            raise DriverDoubleError(f"{len(args)} arguments for format {self.format!r}")
        for kind, value in zip(self.format, args):
            if not _is_int(value):
                raise DriverDoubleError(f"argument {value!r} is not an int")
            if kind == "P" and (not 0 <= value < 2**64 or value % 16):
                raise DriverDoubleError(f"pointer 0x{value:x} is not a 16-byte aligned device address")
            if kind == "P" and value and not any(
                b <= value < b + max(len(d), 1) for b, d in driver.allocations.items()
            ):
                raise DriverDoubleError(f"cuLaunchKernel: pointer 0x{value:x} is in no allocation (CUDA_ERROR_ILLEGAL_ADDRESS)")
            if kind == "I" and not 0 <= value < 2**32:
                raise DriverDoubleError(f"constant {value} does not fit 32 bits")
        if len(block) != 3 or min(block) < 1 or block[0] * block[1] * block[2] > 1024:
            raise DriverDoubleError("cuLaunchKernel failed: invalid argument (block)")
        if len(grid) != 3 or min(grid) < 1 or grid[0] >= 2**31 or max(grid[1:]) > 65535:
            raise DriverDoubleError("cuLaunchKernel failed: invalid argument (grid)")
        if not _is_int(shared_size) or shared_size > self.max_shared:
            raise DriverDoubleError(
                f"cuLaunchKernel failed: invalid argument ({shared_size} bytes of dynamic shared memory, "
                f"{self.max_shared} allowed)"
            )
        driver.calls.append(("launch", self.name, tuple(grid), tuple(block), shared_size, name, tuple(args), self.format))
        model = driver.kernel_models.get(self.name)
        if model is not None:
            model(driver, args)
