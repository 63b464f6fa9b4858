"""Tests of runtime_support.hal: objects, queue/fence model and every `hal.*` import."""

from __future__ import annotations

import ctypes
import dataclasses
import inspect
import re
import subprocess
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from runtime_support.errors import StatusCode, VMError
from runtime_support.hal import (
    Fence,
    HalBuffer,
    HalBufferView,
    HalCommandBuffer,
    HalExecutable,
    HalFile,
    HalModule,
    LocalDevice,
)
from runtime_support.hal import element_types as et
from runtime_support.hal.command_buffer import Binding, BufferRef, resolve_ref
from runtime_support.hal.buffer import Allocation
from iree_tools import find_tool  # IREE tools on PATH or in the iree packages

F32 = et.FLOAT_32
DENSE = et.ENCODING_DENSE_ROW_MAJOR


# -- test doubles ---------------------------------------------------------------------------


def _real_vm_buffer_class():
    try:
        from runtime_support.vm.buffer import VMBuffer
    except ImportError:
        return None
    return VMBuffer


@dataclasses.dataclass
class FakeVMBuffer:
    """Stands in for runtime_support.vm.buffer.VMBuffer: `.data` + `.readonly`."""

    data: memoryview
    readonly: bool


def vmbuf(data: bytes, readonly: bool = False):
    """A `!vm.buffer` holding `data` (rodata when `readonly`): the real VMBuffer when
    runtime_support.vm has it, else the double."""
    storage = bytes(data) if readonly else bytearray(data)
    vm_buffer = _real_vm_buffer_class()
    if vm_buffer is not None:
        return vm_buffer(storage, readonly=readonly)
    return FakeVMBuffer(memoryview(storage), readonly)


@dataclasses.dataclass
class FakeExport:
    name: str
    constant_count: int
    binding_count: int


class FakeNative:
    """A loader Executable double whose kernels are Python functions over raw addresses."""

    def __init__(self, kernels: dict):
        self.kernels = list(kernels.items())
        self.exports = [FakeExport(n, c, b) for n, (c, b, _) in self.kernels]
        self.calls = []

    def lookup(self, name):
        name = name.decode() if isinstance(name, bytes) else name
        for i, e in enumerate(self.exports):
            if e.name == name:
                return i
        raise VMError(StatusCode.NOT_FOUND, f"export {name} not found")

    def dispatch(self, ordinal, workgroup_count, constants, bindings, workers=1):
        self.calls.append((ordinal, tuple(workgroup_count), list(constants), list(bindings)))
        self.kernels[ordinal][1][2](workgroup_count, constants, bindings)


def f32_at(address: int, count: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_float * count).from_address(address))


def mul_kernel(workgroup_count, constants, bindings):
    (a, na), (b, nb), (out, nout) = bindings
    n = nout // 4
    f32_at(out, n)[:] = f32_at(a, n) * f32_at(b, n)


def fake_executable() -> HalExecutable:
    return HalExecutable(
        FakeNative({"mul": (0, 3, mul_kernel), "noop": (2, 2, lambda *a: None)}), format="fake"
    )


def _loader_available() -> bool:
    try:
        from runtime_support.loaders import load_executable, supported_formats  # noqa: F401
    except ImportError:
        return False
    return "embedded-elf-x86_64" in supported_formats()


@pytest.fixture
def device():
    return LocalDevice("local-sync", executable_formats=["embedded-elf-x86_64"])


@pytest.fixture
def hal(device):
    return HalModule([device])


def expect(code, fn, *args, match=None):
    with pytest.raises(VMError) as info:
        fn(*args)
    assert info.value.code == code, info.value
    if match is not None:
        assert re.search(match, info.value.message), info.value.message
    return info.value


def view_of(hal, device, array, element_type=None):
    array = np.ascontiguousarray(array)
    return HalBufferView.from_numpy(array, device.allocator, element_type=element_type)


# -- the import table -----------------------------------------------------------------------


def _doc_table() -> dict[str, str]:
    from conftest import SHARED_DIR

    doc = SHARED_DIR / "docs" / "hal-abi.md"  # ../shared beside the checkout
    if not doc.exists():
        pytest.skip(f"{doc} not found")
    text = doc.read_text()
    section = text[text.index("### A.1") : text.index("### A.2")]
    rows = re.findall(r"^\| `(hal\.[a-z0-9_.]+)` \| `([^`]+)` \|", section, re.M)
    assert len(rows) > 50
    return dict(rows)


def _cconv_arity(cconv: str) -> tuple[int, int]:
    args, results = cconv[1:].split("_")
    args = re.sub(r"C[^D]*D", "S", args)  # a span is one argument
    n_args = 0 if args == "v" else len(args)
    n_results = 0 if results == "v" else len(results)
    return n_args, n_results


def test_imports_match_the_abi_table():
    assert HalModule.IMPORTS == _doc_table()


@pytest.mark.parametrize("full_name", sorted(HalModule.IMPORTS))
def test_every_import_has_a_method_of_the_right_arity(full_name):
    method = getattr(HalModule, HalModule.method_name(full_name))
    n_args, _ = _cconv_arity(HalModule.IMPORTS[full_name])
    params = list(inspect.signature(method).parameters)[1:]  # minus self
    assert len(params) == n_args, (full_name, params)


def test_method_names():
    assert HalModule.method_name("hal.buffer_view.create") == "buffer_view_create"
    assert (
        HalModule.method_name("hal.device.queue.execute.indirect")
        == "device_queue_execute_indirect"
    )


# -- element types --------------------------------------------------------------------------


def test_element_type_encoding_and_dtypes():
    assert F32 == 0x21000020 and et.BOOL_8 == 0x13000008 and et.BFLOAT_16 == 0x22000010
    assert et.to_numpy_dtype(et.FLOAT_16) == np.float16
    assert et.to_numpy_dtype(et.BOOL_8) == np.bool_
    assert et.to_numpy_dtype(et.COMPLEX_64) == np.complex64
    assert et.to_numpy_dtype(et.BFLOAT_16).itemsize == 2
    assert et.from_numpy_dtype(np.float32) == F32
    assert et.from_numpy_dtype(np.bool_) == et.BOOL_8
    assert et.from_numpy_dtype(np.uint32) == et.INT_32  # signless, as compiled code expects
    assert et.from_numpy_dtype(et.to_numpy_dtype(et.BFLOAT_16)) in (et.BFLOAT_16, et.INT_16)
    with pytest.raises(ValueError):
        et.to_numpy_dtype(et.INT_4)


def test_element_type_compatibility():
    assert et.is_compatible(et.SINT_32, et.INT_32)
    assert et.is_compatible(et.UINT_8, et.INT_8)
    assert et.is_compatible(et.OPAQUE_32, F32)
    assert not et.is_compatible(et.INT_32, F32)
    assert not et.is_compatible(et.INT_16, et.INT_32)
    assert not et.is_compatible(et.FLOAT_16, et.BFLOAT_16)


# -- buffers --------------------------------------------------------------------------------


def test_allocate_aligned_zeroed_and_reports_local_bits(hal, device):
    buf = hal.allocator_allocate(device.allocator, -1, 0x30, 0xC03, 100)
    assert buf.address % 64 == 0
    assert buf.length == 100 and hal.buffer_length(buf) == 100
    assert buf.read() == bytes(100)
    assert buf.memory_types & 0x76 == 0x76
    assert buf.allowed_usage & 0xC03 == 0xC03
    expect(StatusCode.INVALID_ARGUMENT, hal.allocator_allocate, device.allocator, -1, 0, 0, -5)


def test_subspan_shares_storage_and_checks_range(hal, device):
    buf = device.allocator.allocate(0, 0xC03, 32)
    sub = hal.buffer_subspan(buf, 8, 16)
    assert sub.address == buf.address + 8 and sub.length == 16
    hal.buffer_store(0x11223344, sub, 0, 4)
    assert buf.read(8, 4) == bytes([0x44, 0x33, 0x22, 0x11])
    assert hal.buffer_subspan(sub, 4, -1).length == 12
    expect(StatusCode.OUT_OF_RANGE, hal.buffer_subspan, buf, 30, 4)
    expect(StatusCode.OUT_OF_RANGE, hal.buffer_subspan, buf, -1, 4)


def test_load_store(hal, device):
    buf = device.allocator.allocate(0, 0, 8)
    hal.buffer_store(-1, buf, 0, 4)
    assert hal.buffer_load(buf, 0, 4) == -1  # i32 results are signed
    assert hal.buffer_load(buf, 0, 1) == 0xFF  # zero-extended
    assert hal.buffer_load(buf, 0, 2) == 0xFFFF
    hal.buffer_store(0x1234, buf, 6, 2)
    assert hal.buffer_load(buf, 6, 2) == 0x1234
    hal.buffer_store(0xABCDEF, buf, 4, 1)
    assert hal.buffer_load(buf, 4, 1) == 0xEF
    expect(StatusCode.OUT_OF_RANGE, hal.buffer_load, buf, 6, 4)
    expect(StatusCode.OUT_OF_RANGE, hal.buffer_store, 1, buf, 8, 1)


def test_numpy_view_is_zero_copy(device):
    buf = device.allocator.allocate(0, 0, 24)
    view = buf.numpy_view(np.float32, (2, 3))
    view[1, 2] = 5.0
    assert buf.numpy_view(np.float32, (6,))[5] == 5.0
    assert view.ctypes.data == buf.address


def test_allocation_preserve_discard(hal, device):
    buf = device.allocator.allocate(0, 0, 4)
    sub = buf.subspan(0, 2)
    assert hal.buffer_allocation_is_terminal(buf) == 1
    hal.buffer_allocation_preserve(sub)  # counts are per allocation
    assert hal.buffer_allocation_is_terminal(buf) == 0
    assert hal.buffer_allocation_discard(buf) == 0
    assert hal.buffer_allocation_is_terminal(sub) == 1
    assert hal.buffer_allocation_discard(sub) == 1


def test_buffer_assert(hal, device):
    buf = device.allocator.allocate(0x30, 0xC03, 16)
    msg = vmbuf(b"tensor", readonly=True)
    hal.buffer_assert(buf, msg, device.allocator, 16, 0x10, 0xC03)
    hal.buffer_assert(buf, msg, None, 8, 0x46, 0x3)
    err = expect(
        StatusCode.INVALID_ARGUMENT, hal.buffer_assert, buf, msg, device.allocator, 17, 0x10, 0xC03
    )
    assert err.message.startswith("tensor")
    # Length is checked before memory type and usage.
    expect(StatusCode.INVALID_ARGUMENT, hal.buffer_assert, buf, msg, None, 17, 0x80, 0x80000000)
    err = expect(StatusCode.PERMISSION_DENIED, hal.buffer_assert, buf, msg, None, 0, 0x80, 0)
    assert err.message.startswith("tensor")
    expect(StatusCode.PERMISSION_DENIED, hal.buffer_assert, buf, msg, None, 0, 0x10, 0x10000)
    expect(StatusCode.PERMISSION_DENIED, hal.buffer_assert, buf, msg, None, 0, 0, 0x80000)


# -- buffer views ---------------------------------------------------------------------------


def test_buffer_view_create_and_queries(hal, device):
    buf = device.allocator.allocate(0, 0, 64)
    bv = hal.buffer_view_create(buf, 0, 64, F32, DENSE, [4, 4])
    assert hal.buffer_view_buffer(bv) is buf  # whole buffer: no subspan
    assert hal.buffer_view_rank(bv) == 2
    assert hal.buffer_view_dim(bv, 1) == 4
    assert hal.buffer_view_dim(bv, 5) == 0
    assert hal.buffer_view_element_type(bv) == F32
    assert hal.buffer_view_encoding_type(bv) == DENSE
    sub = hal.buffer_view_create(buf, 16, 16, F32, DENSE, [4])
    inner = hal.buffer_view_buffer(sub)
    assert inner.address == buf.address + 16 and inner.length == 16
    assert hal.buffer_view_create(buf, 16, -1, F32, DENSE, [12]).buffer.length == 48
    expect(StatusCode.OUT_OF_RANGE, hal.buffer_view_create, buf, 32, 64, F32, DENSE, [8])
    high = hal.buffer_view_create(buf, 0, 64, -0x7F000000 + 0, DENSE, [1])
    assert hal.buffer_view_element_type(high) == -0x7F000000  # i32 results stay signed


def test_buffer_view_numpy_round_trip(device):
    for array in (
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.array([True, False, True]),
        np.arange(4, dtype=np.float16),
        np.array([1 + 2j], dtype=np.complex64),
        np.array(7, dtype=np.int64),
    ):
        bv = HalBufferView.from_numpy(array, device.allocator)
        out = bv.to_numpy()
        assert out.dtype == array.dtype and out.shape == array.shape
        np.testing.assert_array_equal(out, array)


def test_buffer_view_assert_order_and_codes(hal, device):
    msg = vmbuf(b"input0", readonly=True)
    bv = HalBufferView(device.allocator.allocate(0, 0, 16), [4], et.SINT_32, DENSE)
    hal.buffer_view_assert(bv, msg, et.INT_32, DENSE, [4])  # signedness ignored
    # (1) encoding before (2) element type before (3) rank before (4) dims.
    err = expect(StatusCode.INVALID_ARGUMENT, hal.buffer_view_assert, bv, msg, F32, 2, [1, 1])
    assert err.message.startswith("input0") and "encoding" in err.message
    err = expect(StatusCode.INVALID_ARGUMENT, hal.buffer_view_assert, bv, msg, F32, DENSE, [1, 1])
    assert "element type" in err.message
    err = expect(
        StatusCode.INVALID_ARGUMENT, hal.buffer_view_assert, bv, msg, et.INT_32, DENSE, [1, 1]
    )
    assert "rank" in err.message
    err = expect(
        StatusCode.INVALID_ARGUMENT, hal.buffer_view_assert, bv, msg, et.INT_32, DENSE, [5]
    )
    assert "dimension 0" in err.message
    expect(StatusCode.INVALID_ARGUMENT, hal.buffer_view_assert, bv, msg, et.INT_16, DENSE, [4])
    # Opaque actual encodings and element types pass.
    opaque = HalBufferView(bv.buffer, [4], et.OPAQUE_32, et.ENCODING_OPAQUE)
    hal.buffer_view_assert(opaque, msg, F32, DENSE, [4])


def test_buffer_view_trace(device):
    seen = []
    hal = HalModule([device], trace_sink=lambda key, views: seen.append((key, views)))
    bv = HalBufferView.from_numpy(np.zeros(2, np.float32), device.allocator)
    hal.buffer_view_trace(vmbuf(b"key", True), [bv])
    assert seen == [("key", [bv])]
    HalModule([device]).buffer_view_trace(vmbuf(b"key", True), [bv])  # no sink: no-op


# -- allocator.import / select --------------------------------------------------------------


def test_allocator_import_read_only_rules(hal, device):
    alloc = device.allocator
    rodata = vmbuf(b"0123456789abcdef", readonly=True)
    # Read-only source without SHARING_IMMUTABLE: null with try, PERMISSION_DENIED without.
    assert hal.allocator_import(alloc, 1, -1, 0x30, 0xC03, rodata, 0, 16) is None
    expect(
        StatusCode.PERMISSION_DENIED, hal.allocator_import, alloc, 0, -1, 0x30, 0xC03, rodata, 0, 16
    )
    # With SHARING_IMMUTABLE: zero-copy and read-only.
    buf = hal.allocator_import(alloc, 0, -1, 0x30, 0xC03 | 0x80000, rodata, 4, -1)
    assert buf.length == 12 and buf.readonly and buf.read() == b"456789abcdef"
    assert buf.address == np.frombuffer(rodata.data, np.uint8).ctypes.data + 4
    expect(StatusCode.PERMISSION_DENIED, hal.buffer_store, 0, buf, 0, 1)
    # Mutable source: writable, zero-copy, unless usage says immutable.
    mutable = vmbuf(bytes(8))
    buf = hal.allocator_import(alloc, 0, -1, 0x30, 0xC03, mutable, 0, 8)
    assert not buf.readonly
    hal.buffer_store(0x7F, buf, 3, 1)
    assert mutable.data[3] == 0x7F
    assert hal.allocator_import(alloc, 0, -1, 0, 0x80000, mutable, 0, 8).readonly
    # Out of range is INVALID_ARGUMENT even with try.
    expect(
        StatusCode.INVALID_ARGUMENT, hal.allocator_import, alloc, 1, -1, 0, 0x80000, rodata, 8, 9
    )
    expect(
        StatusCode.INVALID_ARGUMENT, hal.allocator_import, alloc, 0, -1, 0, 0x80000, rodata, 17, -1
    )


def test_allocator_select(hal, device):
    other = LocalDevice("local-task", worker_count=2)
    assert hal.allocator_select(0, 0, 0, [(device, -1), (other, 1)]) == (device, -1)
    expect(StatusCode.INVALID_ARGUMENT, hal.allocator_select, 0, 0, 0, [])


# -- devices --------------------------------------------------------------------------------


def test_devices_and_queries(hal, device):
    assert hal.devices_count() == 1
    assert hal.devices_get(0) is device
    assert hal.devices_get(1) is None and hal.devices_get(-1) is None
    assert hal.device_allocator(device) is device.allocator
    q = lambda c, k: hal.device_query_i64(device, vmbuf(c, True), vmbuf(k, True))  # noqa: E731
    assert q(b"hal.device.id", b"local*") == (1, 1)
    assert q(b"hal.device.id", b"local-?ync") == (1, 1)
    assert q(b"hal.device.id", b"local-task") == (1, 0)
    assert q(b"hal.device.id", b"cuda") == (1, 0)
    assert q(b"hal.executable.format", b"embedded-elf-x86_64") == (1, 1)
    assert q(b"hal.executable.format", b"cuda-nvptx-fb") == (1, 0)
    assert q(b"hal.device", b"concurrency") == (1, 1)
    assert q(b"hal.dispatch", b"concurrency") == (1, 1)
    assert q(b"hal.cpu", b"definitely-not-a-feature")[1] == 0
    assert q(b"hal.nonsense", b"key") == (0, 0)
    task = LocalDevice("local-task", worker_count=3)
    assert hal.device_query_i64(task, b"hal.dispatch", b"concurrency") == (1, 3)
    assert hal.device_query_i64(task, b"hal.device.id", b"local*") == (1, 1)


def test_executable_format_query_uses_the_loaders():
    formats = LocalDevice().executable_formats
    try:
        from runtime_support.loaders import supported_formats
    except ImportError:
        assert formats == ()
    else:
        assert formats == tuple(supported_formats())


def test_cpu_feature_query_matches_cpuinfo():
    from runtime_support.hal.device import host_cpu_features

    device = LocalDevice()
    if "avx2" in host_cpu_features():
        assert device.query_i64("hal.cpu", "avx2") == (1, 1)
    if "sse4_2" in host_cpu_features():
        assert device.query_i64("hal.cpu", "sse4.2") == (1, 1)


def test_check_deref_errors_name_import_and_argument(hal, device):
    err = expect(StatusCode.INVALID_ARGUMENT, hal.device_allocator, None)
    assert "hal.device.allocator" in err.message and "device" in err.message
    err = expect(StatusCode.INVALID_ARGUMENT, hal.buffer_length, Fence())
    assert "hal.buffer.length" in err.message and "'buffer'" in err.message
    err = expect(StatusCode.INVALID_ARGUMENT, hal.fence_await, -1, 0, [Fence(), "x"])
    assert "fences[1]" in err.message
    err = expect(
        StatusCode.INVALID_ARGUMENT,
        hal.buffer_view_assert,
        HalBufferView(device.allocator.allocate(0, 0, 4), [1], F32),
        None,
        F32,
        DENSE,
        [1],
    )
    assert "message" in err.message
    expect(StatusCode.INVALID_ARGUMENT, hal.device_query_i64, device, 5, b"x")


def test_fence_signal_query_join(hal, device):
    a, b = hal.fence_create(device, 0), hal.fence_create(device, 0)
    assert hal.fence_query(a) == 17
    assert hal.fence_join(0, []) is None and hal.fence_join(0, [None, None]) is None
    joined = hal.fence_join(0, [a, None, b])
    hal.fence_signal(a)
    assert hal.fence_query(a) == 0 and hal.fence_query(joined) == 17
    assert hal.fence_await(0, 0, [joined]) == 4  # poll
    hal.fence_signal(b)
    assert hal.fence_query(joined) == 0
    assert hal.fence_await(-1, 0, [joined, None]) == 0
    assert hal.fence_await(-1, 0, []) == 0
    # Signaling a joined fence signals its inputs' timepoints.
    c, d = Fence(), Fence()
    hal.fence_signal(hal.fence_join(0, [c, d]))
    assert c.query() == 0 and d.query() == 0


def test_fence_await_timeout(hal, device):
    f = hal.fence_create(device, 0)
    start = time.monotonic()
    assert hal.fence_await(50, 0, [f]) == 4
    assert time.monotonic() - start >= 0.04


def test_fence_await_wakes_on_signal_from_another_thread(hal, device):
    f = hal.fence_create(device, 0)
    threading.Timer(0.05, f.signal).start()
    assert hal.fence_await(-1, 0, [f]) == 0


def test_fence_fail(hal, device):
    f = hal.fence_create(device, 0)
    hal.fence_fail(f, 0x20 | 10)  # masked with 0x1F: ABORTED
    assert hal.fence_query(f) == 10
    err = expect(StatusCode.ABORTED, hal.fence_await, -1, 0, [f])
    assert err.code == StatusCode.ABORTED
    # A failed input fails a join; signaling a failed fence leaves it failed.
    g = Fence()
    joined = hal.fence_join(0, [g, f])
    assert hal.fence_query(joined) == 10
    hal.fence_signal(f)
    assert hal.fence_query(f) == 10
    # A waiter blocked on a pending fence is woken by its failure.
    h = Fence()
    threading.Timer(0.05, lambda: h.fail(StatusCode.DATA_LOSS)).start()
    expect(StatusCode.DATA_LOSS, hal.fence_await, -1, 0, [h])


def test_fence_callbacks():
    a, b = Fence(), Fence()
    seen = []
    Fence.join([a, b]).on_complete(seen.append)
    a.signal()
    assert seen == []
    b.signal()
    assert seen == [None]
    Fence.join([a]).on_complete(seen.append)  # already reached: at once
    assert seen == [None, None]
    c = Fence()
    c.on_complete(seen.append)
    c.fail(StatusCode.CANCELLED)
    assert seen[-1].code == StatusCode.CANCELLED


# -- command buffers: refs, binding tables, transfers ---------------------------------------


def test_resolve_ref_binding_table_rules(device):
    buf = device.allocator.allocate(0, 0, 64)
    table = [Binding(buf, 16, 32), Binding(buf, 8, -1), Binding(None, 0, 0)]
    assert resolve_ref(BufferRef(buf, 9, 4, 8), table) == (buf, 4, 8)  # direct buffer wins
    assert resolve_ref(BufferRef(buf, 0, 4, -1), None) == (buf, 4, 60)
    assert resolve_ref(BufferRef(None, 0, 0, 8), None) is None  # no table: null binding
    assert resolve_ref(BufferRef(None, 0, 4, 8), table) == (buf, 20, 8)
    assert resolve_ref(BufferRef(None, 0, 4, -1), table) == (buf, 20, 28)  # T.length - offset
    assert resolve_ref(BufferRef(None, 1, 0, -1), table) == (buf, 8, 56)  # buffer.length - T.offset
    assert resolve_ref(BufferRef(None, 1, 6, -1), table) == (buf, 14, 50)
    with pytest.raises(VMError) as info:  # a used slot without a buffer: as IREE's validation
        resolve_ref(BufferRef(None, 2, 0, 4), table)
    assert info.value.code == StatusCode.INVALID_ARGUMENT
    assert "binding table slot requires a buffer but none was provided" in str(info.value)
    for ref in (
        BufferRef(None, 3, 0, 4),  # slot >= count
        BufferRef(None, 0, 0, 33),  # past the table range (32 bytes)
        BufferRef(None, 0, 30, 4),
        BufferRef(None, 1, 60, -1),
        BufferRef(buf, 0, 60, 8),
    ):
        with pytest.raises(VMError) as info:
            resolve_ref(ref, table)
        assert info.value.code == StatusCode.OUT_OF_RANGE, ref
    with pytest.raises(VMError) as info:  # the table entry itself out of the buffer
        resolve_ref(BufferRef(None, 0, 0, 4), [Binding(buf, 60, 8)])
    assert info.value.code == StatusCode.OUT_OF_RANGE


def _run(hal, device, cb, table=None):
    """queue.execute(.indirect) with a fresh signal fence; returns fence.await's result."""
    signal = hal.fence_create(device, 0)
    if table is None:
        hal.device_queue_execute(device, -1, None, signal, cb, 0)
    else:
        hal.device_queue_execute_indirect(device, -1, None, signal, cb, 0, table)
    return hal.fence_await(-1, 0, [signal])


@pytest.mark.parametrize(
    "pattern, length, expected",
    [
        (0xAB, 1, bytes([0xAB]) * 8),
        (0x12345678ABCD, 2, bytes([0xCD, 0xAB]) * 4),
        (0x11223344, 4, bytes([0x44, 0x33, 0x22, 0x11]) * 2),
        (-1, 4, bytes([0xFF]) * 8),
    ],
)
def test_fill_patterns(hal, device, pattern, length, expected):
    buf = device.allocator.allocate(0, 0, 16)
    cb = hal.command_buffer_create(device, 1, 3, -1, 0)
    hal.command_buffer_fill_buffer(cb, buf, 4, 8, 0, pattern, length, 0)
    hal.command_buffer_finalize(cb)
    assert _run(hal, device, cb) == 0
    assert buf.read() == bytes(4) + expected + bytes(4)
    # queue.fill does the same, queue-ordered.
    other = device.allocator.allocate(0, 0, 16)
    hal.device_queue_fill(device, -1, None, None, other, 4, 8, pattern, length, 0)
    assert other.read() == buf.read()


@pytest.mark.parametrize("length", [4, 8, 64, 68, 200])
@pytest.mark.parametrize("pattern_length", [1, 2, 4])
def test_queue_fill_of_a_subspan(hal, device, length, pattern_length):
    """queue.fill writes the pattern's low bytes, little-endian, over exactly the range
    of a buffer that starts inside its allocation (small fills and large ones)."""
    import numpy as np

    whole = device.allocator.allocate(0, 0, 512)
    whole.write(0, bytes(range(256)) * 2)
    before = whole.read()
    part = whole.subspan(36, 300)
    pattern = -0x12345679  # (negative: only its low bytes count)
    hal.device_queue_fill(device, -1, None, None, part, 8, length, pattern, pattern_length, 0)
    row = (pattern & ((1 << (8 * pattern_length)) - 1)).to_bytes(pattern_length, "little")
    want = bytearray(before)
    want[44 : 44 + length] = row * (length // pattern_length)
    assert whole.read() == bytes(want)
    assert np.frombuffer(part.read(), np.uint8)[8:12].tobytes() == (row * 4)[:4]


def test_fill_validation(hal, device):
    buf = device.allocator.allocate(0, 0, 16)
    cb = hal.command_buffer_create(device, 0, 3, -1, 1)
    expect(StatusCode.INVALID_ARGUMENT, hal.command_buffer_fill_buffer, cb, buf, 2, 8, 0, 0, 4, 0)
    expect(StatusCode.INVALID_ARGUMENT, hal.command_buffer_fill_buffer, cb, buf, 0, 6, 0, 0, 4, 0)
    expect(StatusCode.INVALID_ARGUMENT, hal.command_buffer_fill_buffer, cb, buf, 0, 6, 0, 0, 3, 0)
    expect(StatusCode.OUT_OF_RANGE, hal.command_buffer_fill_buffer, cb, buf, 8, 12, 0, 0, 4, 0)
    # queue.fill errors fail the signal fence; await raises them.
    signal = hal.fence_create(device, 0)
    hal.device_queue_fill(device, -1, None, signal, buf, 0, 20, 0, 1, 0)
    assert hal.fence_query(signal) == StatusCode.OUT_OF_RANGE
    expect(StatusCode.OUT_OF_RANGE, hal.fence_await, -1, 0, [signal])
    # every kind of queue.fill error, the buffer untouched: pattern length, range (the
    # whole-buffer length from an offset past the end too), alignment, a read-only buffer
    buf.write(0, bytes(range(16)))
    ro = HalBuffer.over(Allocation.wrap(bytes(16), readonly=True), 0x46, 3, None)
    for target, args, code in (
        (buf, (0, 4, 7, 3), StatusCode.INVALID_ARGUMENT),
        (buf, (12, 8, 7, 4), StatusCode.OUT_OF_RANGE),
        (buf, (20, -1, 7, 4), StatusCode.OUT_OF_RANGE),
        (buf, (-4, 4, 7, 4), StatusCode.OUT_OF_RANGE),
        (buf, (2, 4, 7, 4), StatusCode.INVALID_ARGUMENT),
        (buf, (0, 6, 7, 4), StatusCode.INVALID_ARGUMENT),
        (ro, (0, 4, 7, 4), StatusCode.PERMISSION_DENIED),
    ):
        signal = hal.fence_create(device, 0)
        hal.device_queue_fill(device, -1, None, signal, target, *args, 0)
        assert hal.fence_query(signal) == code, args
    assert buf.read() == bytes(range(16)) and ro.read() == bytes(16)
    hal.device_queue_fill(device, -1, None, None, buf, 4, -1, 0x0102, 2, 0)  # (to the end)
    assert buf.read() == bytes(range(4)) + bytes((2, 1)) * 6


def test_update_captures_bytes_at_record_time(hal, device):
    source = vmbuf(b"abcdefgh")
    target = device.allocator.allocate(0, 0, 8)
    cb = hal.command_buffer_create(device, 0, 3, -1, 1)
    hal.command_buffer_update_buffer(cb, source, 2, None, 1, 4, 0, 0)
    hal.command_buffer_finalize(cb)
    source.data[2:6] = b"XXXX"  # after recording: must not be seen
    assert _run(hal, device, cb, [(target, 0, -1)]) == 0
    assert target.read() == b"\0cdef\0\0\0"
    expect(
        StatusCode.OUT_OF_RANGE,
        hal.command_buffer_update_buffer,
        hal.command_buffer_create(device, 0, 3, -1, 1),
        source,
        6,
        None,
        0,
        4,
        0,
        0,
    )


def test_queue_update_captures_at_submit(hal, device):
    source = vmbuf(b"12345678")
    target = device.allocator.allocate(0, 0, 8)
    wait, signal = Fence(), Fence()
    hal.device_queue_update(device, -1, wait, signal, source, 4, target, 0, 4, 0)
    source.data[4:8] = b"zzzz"
    wait.signal()
    assert hal.fence_await(-1, 0, [signal]) == 0
    assert target.read(0, 4) == b"5678"


def test_copy_buffer_and_queue_copy(hal, device):
    src = HalBufferView.from_numpy(np.arange(8, dtype=np.uint8), device.allocator).buffer
    dst = device.allocator.allocate(0, 0, 8)
    cb = hal.command_buffer_create(device, 0, 3, -1, 2)
    hal.command_buffer_copy_buffer(cb, 0, 1, None, 2, None, 0, 4, 0)
    hal.command_buffer_execution_barrier(cb, 28, 13, 0)
    hal.command_buffer_copy_buffer(cb, 0, 0, src, 0, dst, 4, 2, 0)  # direct buffers
    hal.command_buffer_finalize(cb)
    assert _run(hal, device, cb, [(src, 0, 8), (dst, 0, 8)]) == 0
    assert dst.read() == bytes([2, 3, 4, 5, 0, 1, 0, 0])
    # Reusable: runs again against a different table.
    dst2 = device.allocator.allocate(0, 0, 8)
    assert _run(hal, device, cb, [(src, 2, 6), (dst2, 0, 8)]) == 0
    assert dst2.read() == bytes([4, 5, 6, 7, 0, 0, 0, 0])
    hal.device_queue_copy(device, -1, None, None, src, 0, dst, 0, 8, 0)
    assert dst.read() == src.read()
    # Overlapping copy within one allocation.
    hal.device_queue_copy(device, -1, None, None, dst, 0, dst, 1, 7, 0)
    assert dst.read() == bytes([0, 0, 1, 2, 3, 4, 5, 6])


def test_copy_out_of_table_range_fails_the_fence(hal, device):
    src = device.allocator.allocate(0, 0, 8)
    cb = hal.command_buffer_create(device, 0, 3, -1, 2)
    hal.command_buffer_copy_buffer(cb, 0, 1, None, 0, None, 0, 8, 0)
    hal.command_buffer_finalize(cb)
    expect(StatusCode.OUT_OF_RANGE, _run, hal, device, cb, [(src, 0, 8), (src, 4, -1)])
    expect(StatusCode.OUT_OF_RANGE, _run, hal, device, cb, [(src, 0, 8)])  # slot 1 missing


def test_command_buffer_states(hal, device):
    buf = device.allocator.allocate(0, 0, 8)
    cb = hal.command_buffer_create(device, 1, 3, -1, 0)  # one-shot
    hal.command_buffer_begin_debug_group(cb, vmbuf(b"group", True))
    hal.command_buffer_advise_buffer(cb, buf, 0, 0, 0, 0)
    hal.command_buffer_flush_buffer(cb, 0, buf, 0, 8)
    hal.command_buffer_invalidate_buffer(cb, 0, None, 0, -1)
    hal.command_buffer_end_debug_group(cb)
    expect(StatusCode.FAILED_PRECONDITION, _run, hal, device, cb)  # not finalized
    hal.command_buffer_finalize(cb)
    expect(
        StatusCode.FAILED_PRECONDITION, hal.command_buffer_fill_buffer, cb, buf, 0, 8, 0, 0, 1, 0
    )
    expect(StatusCode.FAILED_PRECONDITION, hal.command_buffer_finalize, cb)
    assert _run(hal, device, cb) == 0
    expect(StatusCode.FAILED_PRECONDITION, _run, hal, device, cb)  # one-shot: once
    expect(StatusCode.INVALID_ARGUMENT, hal.command_buffer_create, device, 0, 3, -1, -1)
    # Slots beyond the binding capacity are rejected when recorded.
    cb = hal.command_buffer_create(device, 0, 3, -1, 1)
    expect(StatusCode.OUT_OF_RANGE, hal.command_buffer_fill_buffer, cb, None, 0, 4, 1, 0, 1, 0)
    # Capacity 0 too: IREE's command buffer validation rejects any indirect slot then
    # (fuzz input c2d8e3f3...vmfb:31488 recorded a dispatch with a null binding on a
    # capacity-0 command buffer: IREE failed OUT_OF_RANGE, pyree ran the kernel).
    cb = hal.command_buffer_create(device, 0, 3, -1, 0)
    expect(StatusCode.OUT_OF_RANGE, hal.command_buffer_fill_buffer, cb, None, 0, 4, 0, 0, 1, 0)
    exe = fake_executable()
    expect(
        StatusCode.OUT_OF_RANGE,
        hal.command_buffer_dispatch, cb, exe, 0, 1, 1, 1, 0, [], [(0, 0, None, 0, 16)],
    )


# -- dispatch -------------------------------------------------------------------------------


def test_dispatch_resolves_binding_addresses_at_execute_time(hal, device):
    exe = fake_executable()
    assert hal.executable_lookup_function(exe, vmbuf(b"mul", True)) == 0
    expect(StatusCode.NOT_FOUND, hal.executable_lookup_function, exe, vmbuf(b"nope", True))
    cb = hal.command_buffer_create(device, 0, 3, -1, 3)
    bindings = [(0, 0, None, 0, 16), (0, 1, None, 0, 16), (0, 2, None, 0, -1)]
    hal.command_buffer_dispatch(cb, exe, 0, 1, 1, 1, 0, [], bindings)
    hal.command_buffer_execution_barrier(cb, 28, 13, 0)
    hal.command_buffer_finalize(cb)
    a = HalBufferView.from_numpy(np.array([1, 2, 3, 4], np.float32), device.allocator).buffer
    b = HalBufferView.from_numpy(np.array([5, 6, 7, 8], np.float32), device.allocator).buffer
    out = device.allocator.allocate(0x30, 0xC03, 32)
    assert _run(hal, device, cb, [(a, 0, 16), (b, 0, 16), (out, 16, 16)]) == 0
    np.testing.assert_array_equal(out.numpy_view(np.float32, (8,))[4:], [5, 12, 21, 32])
    ordinal, counts, constants, resolved = exe.native.calls[-1]
    assert (ordinal, counts, constants) == (0, (1, 1, 1), [])
    assert resolved == [(a.address, 16), (b.address, 16), (out.address + 16, 16)]


def test_a_bad_table_reference_stops_the_submission_before_any_command_runs(hal, device):
    """IREE validates every command's binding-table references when a command buffer is
    submitted: a copy whose target lies past its table slot fails the submission with
    OUT_OF_RANGE before the dispatch recorded ahead of it runs (fuzz input
    8967b654...vmfb:18376: pyree ran that dispatch, on a misaligned binding, and crashed)."""
    exe = fake_executable()
    BINDINGS = [(0, 0, None, 0, 16), (0, 1, None, 0, 16), (0, 2, None, 0, 16)]
    cb = hal.command_buffer_create(device, 0, 3, -1, 4)
    hal.command_buffer_dispatch(cb, exe, 0, 1, 1, 1, 0, [], BINDINGS)
    hal.command_buffer_copy_buffer(cb, 0, 3, None, 0, None, 0x3800000040, 16, 0)
    hal.command_buffer_finalize(cb)
    a = HalBufferView.from_numpy(np.arange(4, dtype=np.float32), device.allocator).buffer
    out = device.allocator.allocate(0x30, 0xC03, 16)
    big = device.allocator.allocate(0x30, 0xC03, 128)
    table = [(a, 0, 16), (a, 0, 16), (out, 0, 16), (big, 0, 128)]
    expect(StatusCode.OUT_OF_RANGE, _run, hal, device, cb, table)
    assert exe.native.calls == []  # the dispatch did not run
    # A good table runs both commands.
    cb2 = hal.command_buffer_create(device, 0, 3, -1, 4)
    hal.command_buffer_dispatch(cb2, exe, 0, 1, 1, 1, 0, [], BINDINGS)
    hal.command_buffer_copy_buffer(cb2, 0, 3, None, 0, None, 64, 16, 0)
    hal.command_buffer_finalize(cb2)
    assert _run(hal, device, cb2, table) == 0
    assert len(exe.native.calls) == 1


def test_dispatch_constants_are_u32(hal, device):
    exe = fake_executable()
    buf = device.allocator.allocate(0x30, 0xC03, 8)
    cb = hal.command_buffer_create(device, 0, 3, -1, 0)
    hal.command_buffer_dispatch(
        cb, exe, 1, 2, 3, 4, 0, [-1, 7], [(0, 0, buf, 0, 4), (0, 0, buf, 4, 4)]
    )
    hal.command_buffer_dispatch(
        cb, exe, 1, 0, 3, 4, 0, [0, 0], [(0, 0, buf, 0, 4)] * 2
    )  # empty grid
    # A null binding is an indirect slot: out of range of a capacity-0 command buffer,
    # as IREE's validation says (pyree used to pass the kernel a null pointer).
    expect(
        StatusCode.OUT_OF_RANGE,
        hal.command_buffer_dispatch, cb, exe, 1, 2, 3, 4, 0, [0, 0], [(0, 0, None, 0, 4)] * 2,
    )
    hal.command_buffer_finalize(cb)
    assert _run(hal, device, cb) == 0
    assert exe.native.calls == [
        (1, (2, 3, 4), [0xFFFFFFFF, 7], [(buf.address, 4), (buf.address + 4, 4)])
    ]


def test_dispatch_indirect_reads_workgroups_at_execution(hal, device):
    exe = fake_executable()
    params = device.allocator.allocate(0, 0x100, 16)
    cb = hal.command_buffer_create(device, 0, 3, -1, 1)
    hal.command_buffer_dispatch_indirect(
        cb, exe, 1, 0, None, 4, 0, [1, 2], [(0, 0, None, 0, 4)] * 2
    )
    hal.command_buffer_finalize(cb)
    params.numpy_view(np.uint32, (4,))[:] = [0, 5, 6, 7]  # written after recording
    assert _run(hal, device, cb, [(params, 0, 16)]) == 0
    assert exe.native.calls[-1][1] == (5, 6, 7)


def test_executable_create_validates_constants(hal, device):
    expect(
        StatusCode.INVALID_ARGUMENT,
        hal.executable_create,
        device,
        -1,
        vmbuf(b"embedded-elf-x86_64", True),
        vmbuf(b"\x7fELF", True),
        vmbuf(b"abc", True),
    )
    expect(
        StatusCode.INVALID_ARGUMENT, hal.executable_create, device, -1, None, vmbuf(b"", True), None
    )


def test_executable_create_unknown_format_is_a_loader_error(hal, device):
    from runtime_support.errors import LoaderError

    with pytest.raises(LoaderError, match="vulkan-spirv-fb"):
        hal.executable_create(
            device, -1, vmbuf(b"vulkan-spirv-fb", True), vmbuf(b"\0" * 16, True), None
        )
    # VMVX runs only as translated Python: bytes no package translated are refused.
    with pytest.raises(LoaderError, match="was not translated"):
        hal.executable_create(
            device, -1, vmbuf(b"vmvx-bytecode-fb", True), vmbuf(b"\0" * 16, True), None
        )


# -- queue ordering -------------------------------------------------------------------------


def test_queue_ops_wait_for_a_fence_the_host_signals_later(hal, device):
    buf = device.allocator.allocate(0, 0, 4)
    host = hal.fence_create(device, 0)
    f1, f2, f3 = (hal.fence_create(device, 0) for _ in range(3))
    hal.device_queue_fill(device, -1, host, f1, buf, 0, 4, 0x01, 1, 0)
    hal.device_queue_fill(device, -1, f1, f2, buf, 0, 2, 0x02, 1, 0)
    update = vmbuf(b"\x03")
    hal.device_queue_update(device, -1, f2, f3, update, 0, buf, 0, 1, 0)
    # Nothing ran: every op waits (directly or through the chain) on the host fence.
    assert buf.read() == bytes(4)
    assert [hal.fence_query(f) for f in (f1, f2, f3)] == [17, 17, 17]
    assert hal.fence_await(0, 0, [f3]) == 4
    # Two ops released by the same fence run in submission order.
    order = []
    f4 = hal.fence_create(device, 0)
    device.queue.submit(host, None, lambda: order.append("a"))
    device.queue.submit(host, f4, lambda: order.append("b"))
    hal.fence_signal(host)
    assert hal.fence_await(-1, 0, [f3, f4]) == 0
    assert buf.read() == bytes([3, 2, 1, 1]) and order == ["a", "b"]


def test_queue_host_signal_from_another_thread_does_not_deadlock(hal, device):
    buf = device.allocator.allocate(0, 0, 4)
    host, done = Fence(), Fence()
    hal.device_queue_fill(device, -1, host, done, buf, 0, 4, 0x5A, 1, 0)
    threading.Timer(0.05, host.signal).start()
    assert hal.fence_await(5000, 0, [done]) == 0
    assert buf.read() == bytes([0x5A]) * 4


def test_queue_long_chain_released_later_runs_without_recursion(hal, device):
    buf = device.allocator.allocate(0, 0, 4)
    host = Fence()
    wait = host
    for i in range(3000):
        signal = Fence()
        hal.device_queue_fill(device, -1, wait, signal, buf, 0, 4, i, 4, 0)
        wait = signal
    assert buf.read() == bytes(4)
    threading.Timer(0.01, host.signal).start()
    assert hal.fence_await(-1, 0, [wait]) == 0
    assert hal.buffer_load(buf, 0, 4) == 2999


def test_queue_wait_failure_propagates(hal, device):
    buf = device.allocator.allocate(0, 0, 4)
    wait, signal, after = Fence(), Fence(), Fence()
    hal.device_queue_fill(device, -1, wait, signal, buf, 0, 4, 0x11, 1, 0)
    hal.device_queue_barrier(device, -1, signal, after, 0)
    hal.fence_fail(wait, StatusCode.ABORTED)
    assert buf.read() == bytes(4)  # skipped
    assert hal.fence_query(signal) == StatusCode.ABORTED
    expect(StatusCode.ABORTED, hal.fence_await, -1, 0, [after])


def test_queue_alloca_dealloca_barrier(hal, device):
    f0, f1, f2 = Fence(), Fence(), Fence()
    buf = hal.device_queue_alloca(device, -1, None, f0, 0, 0x30, 0xC03, 16, 0)
    assert buf.length == 16 and hal.fence_query(f0) == 0
    hal.buffer_assert(buf, vmbuf(b"out", True), device.allocator, 16, 0x10, 0xC03)
    late = hal.device_queue_alloca(device, -1, f1, f2, 0, 0x30, 0xC03, 8, 0)
    assert late.length == 8 and hal.fence_query(f2) == 17
    hal.device_queue_barrier(device, -1, None, f1, 0)
    assert hal.fence_query(f2) == 0
    f3 = Fence()
    hal.device_queue_dealloca(device, -1, f2, f3, buf, 0)
    assert hal.fence_query(f3) == 0
    hal.device_queue_flush(device, -1)
    expect(
        StatusCode.UNIMPLEMENTED,
        hal.device_queue_alloca,
        device,
        -1,
        None,
        None,
        1,
        0x30,
        0xC03,
        8,
        0,
    )


def test_files_read_only_from_memory(hal, device):
    data = vmbuf(b"0123456789", readonly=True)
    file = hal.ex_file_from_memory(device, -1, 1, data, 2, 6, 0)
    assert isinstance(file, HalFile) and file.length == 6
    expect(StatusCode.PERMISSION_DENIED, hal.ex_file_from_memory, device, -1, 3, data, 0, 4, 0)
    expect(StatusCode.OUT_OF_RANGE, hal.ex_file_from_memory, device, -1, 1, data, 8, 4, 0)
    target = device.allocator.allocate(0, 0, 8)
    signal = Fence()
    hal.device_queue_read(device, -1, None, signal, file, 1, target, 2, 4, 0)
    assert hal.fence_await(-1, 0, [signal]) == 0
    assert target.read() == b"\0\x003456\0\0"
    bad = Fence()
    hal.device_queue_write(device, -1, None, bad, target, 0, file, 0, 4, 0)
    expect(StatusCode.PERMISSION_DENIED, hal.fence_await, -1, 0, [bad])
    bad = Fence()
    hal.device_queue_read(device, -1, None, bad, file, 4, target, 0, 4, 0)
    expect(StatusCode.OUT_OF_RANGE, hal.fence_await, -1, 0, [bad])


# -- ref types ------------------------------------------------------------------------------


def test_ref_types_registered_when_the_vm_has_a_registry(device):
    refs = pytest.importorskip("runtime_support.vm.refs")
    from runtime_support.hal import REF_TYPES

    assert set(REF_TYPES) == {
        "!hal.buffer",
        "!hal.buffer_view",
        "!hal.device",
        "!hal.allocator",
        "!hal.command_buffer",
        "!hal.executable",
        "!hal.fence",
        "!hal.file",
        "!hal.channel",
    }
    registered = refs.registered_types()
    for name, cls in REF_TYPES.items():
        assert registered[name] is cls
    buf = device.allocator.allocate(0, 0, 4)
    assert refs.type_matches(buf, "!vm.ref<!hal.buffer>")
    assert not refs.type_matches(buf, "!hal.buffer_view")
    assert refs.type_matches(Fence(), "!hal.fence")
    assert refs.type_matches(device, "!hal.device")


def test_vm_buffer_arguments_are_checked(hal, device):
    vm_buffer = _real_vm_buffer_class()
    assert vm_buffer is not None, "runtime_support.vm.buffer must be importable"
    assert isinstance(vmbuf(b"x", True), vm_buffer)
    buf = device.allocator.allocate(0, 0, 4)
    err = expect(
        StatusCode.INVALID_ARGUMENT, hal.executable_lookup_function, fake_executable(), buf
    )
    assert "hal.executable.lookup.function" in err.message and "'name'" in err.message


# -- end to end: the §A.4 call sequence against a real kernel -------------------------------

MUL_MLIR = """
func.func @mul(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


@pytest.fixture(scope="module")
def mul_vmfb(tmp_path_factory) -> Path:
    compiler = find_tool("iree-compile")
    if compiler is None:
        pytest.skip("iree-compile not installed")
    work = tmp_path_factory.mktemp("mul")
    (work / "mul.mlir").write_text(MUL_MLIR)
    subprocess.run(
        [
            compiler,
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            "--iree-llvmcpu-target-cpu=generic",
            str(work / "mul.mlir"),
            "-o",
            str(work / "mul.vmfb"),
        ],
        check=True,
    )
    return work / "mul.vmfb"


@pytest.mark.parametrize("device_id", ["local-sync", "local-task"])
def test_end_to_end_elementwise_multiply(mul_vmfb, device_id):
    with zipfile.ZipFile(mul_vmfb) as z:
        (kernel_name,) = [n for n in z.namelist() if n.endswith(".so")]
        kernel = z.read(kernel_name)
    device = LocalDevice(device_id, worker_count=2)
    hal = HalModule([device])
    rodata = lambda b: vmbuf(b, readonly=True)  # noqa: E731

    # __init: find the device, create the executable.
    count = hal.devices_count()
    found = None
    for i in range(count):
        dev = hal.devices_get(i)
        ok, value = hal.device_query_i64(dev, rodata(b"hal.device.id"), rodata(b"local*"))
        if not (ok and value):
            continue
        ok, value = hal.device_query_i64(
            dev, rodata(b"hal.executable.format"), rodata(b"embedded-elf-x86_64")
        )
        if ok and value:
            found = dev
            break
    assert found is device
    exe = hal.executable_create(device, -1, rodata(b"embedded-elf-x86_64"), rodata(kernel), None)

    # The memoized command buffer, recorded once with null buffers and slots 0..2.
    cb = hal.command_buffer_create(device, 0, 3, -1, 3)
    fid = hal.executable_lookup_function(exe, rodata(b"mul_dispatch_0_elementwise_4_f32"))
    assert fid == 0
    hal.command_buffer_dispatch(
        cb,
        exe,
        fid,
        1,
        1,
        1,
        0,
        [],
        [(0, 0, None, 0, 16), (0, 1, None, 0, 16), (0, 2, None, 0, 16)],
    )
    hal.command_buffer_execution_barrier(cb, 28, 13, 0)
    hal.command_buffer_finalize(cb)

    # @mul, called twice through the same command buffer.
    for a_np, b_np in (
        (np.array([1.5, -2.0, 3.0, 4.25], np.float32), np.array([2.0, 3.0, -0.5, 8.0], np.float32)),
        (
            np.random.default_rng(0).standard_normal(4).astype(np.float32),
            np.full(4, 3.0, np.float32),
        ),
    ):
        in0 = HalBufferView.from_numpy(a_np, device.allocator)
        in1 = HalBufferView.from_numpy(b_np, device.allocator)
        hal.buffer_view_assert(in0, rodata(b"input0"), 0x21000020, 1, [4])
        buf0 = hal.buffer_view_buffer(in0)
        allocator = hal.device_allocator(device)
        hal.buffer_assert(buf0, rodata(b"tensor"), allocator, 16, 0x10, 0xC03)
        hal.buffer_view_assert(in1, rodata(b"input1"), 0x21000020, 1, [4])
        buf1 = hal.buffer_view_buffer(in1)
        hal.buffer_assert(buf1, rodata(b"tensor"), allocator, 16, 0x10, 0xC03)
        f0 = hal.fence_create(device, 0)
        out = hal.device_queue_alloca(device, -1, None, f0, 0, 0x30, 0xC03, 16, 0)
        f1 = hal.fence_create(device, 0)
        hal.device_queue_execute_indirect(
            device, -1, f0, f1, cb, 0, [(buf0, 0, 16), (buf1, 0, 16), (out, 0, 16)]
        )
        assert hal.fence_await(-1, 0, [f1]) == 0
        result = hal.buffer_view_create(out, 0, 16, 0x21000020, 1, [4])
        np.testing.assert_array_equal(result.to_numpy(), a_np * b_np)


def test_command_buffer_categories_are_checked_as_iree_validates_them(device):
    """A command needs its category in the command buffer's categories: dispatch and
    collective need DISPATCH, fill/update/copy/advise need TRANSFER. IREE answers
    FAILED_PRECONDITION "operation requires categories DISPATCH but command buffer only
    supports 40000000h" (iree.runtime 3.13 on fuzz input 8311a8db...vmfb:10128,
    --base-seed 3, whose mutated categories register was also a workgroup count: pyree
    recorded the dispatch and the kernel ran 2^30 workgroups into a 12-byte buffer)."""
    from runtime_support.hal.command_buffer import format_categories

    assert [format_categories(v) for v in (0, 1, 2, 3, 0x40000000, 0x40000002, 0x40000003)] == [
        "", "TRANSFER", "DISPATCH", "ANY", "40000000h", "DISPATCH|40000000h", "ANY|40000000h",
    ]
    target = HalBuffer.allocate(16)
    ref = BufferRef(target, 0, 0, 16)
    transfer_only = HalCommandBuffer(device, 0, 0x1, 0)
    with pytest.raises(VMError) as info:
        transfer_only.dispatch(None, 0, (1, 1, 1), (), [ref])
    assert info.value.code == StatusCode.FAILED_PRECONDITION
    assert (
        "dispatch: operation requires categories DISPATCH but command buffer only supports "
        "TRANSFER" in str(info.value)
    )
    dispatch_only = HalCommandBuffer(device, 0, 0x40000002, 0)
    for record in (
        lambda cb: cb.fill(ref, 0, 4),
        lambda cb: cb.update(b"1234", BufferRef(target, 0, 0, 4)),
        lambda cb: cb.copy(ref, ref),
    ):
        with pytest.raises(VMError) as info:
            record(dispatch_only)
        assert info.value.code == StatusCode.FAILED_PRECONDITION
        assert "requires categories TRANSFER but command buffer only supports " \
            "DISPATCH|40000000h" in str(info.value)
    assert dispatch_only.commands == [] and transfer_only.commands == []
    # Both categories: everything records.
    both = HalCommandBuffer(device, 0, 0x3, 0)
    both.fill(ref, 0, 4)
    assert len(both.commands) == 1
