"""Recycled storage of small fresh buffers (runtime_support/hal/buffer.py fresh_buffer).

Storage is handed out again only when nothing can reach it any more: not a buffer, a
subspan, an allocation, a numpy view (a zero-copy result included), a memoryview or a
ctypes object over it, and never to two threads at once; what comes back is zero-filled.
End to end, results kept by the caller and values kept in globals stay intact over many
later calls, equal to iree.runtime's.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

from runtime_support.hal import buffer as bm
from runtime_support.hal.allocator import HalAllocator
from runtime_support.hal.buffer_view import HalBufferView

SIZE = 48  # a size no other test in this process recycles through this module's calls

# Each test starts from empty pools, whatever ran before it in this process (under xdist a
# worker runs this file after an arbitrary set of others).
pytestmark = pytest.mark.usefixtures("empty_recycle_pools")


def _fresh(size: int = SIZE):
    return bm.fresh_buffer(size, 0, bm.USAGE_DEFAULT, None)


def _storage(buffer):
    return buffer.allocation.array


# SIZE, and a small CNN's 40 KiB transient (below the recycling limit too); the second
# takes a size of its own, like SIZE
@pytest.mark.parametrize("size", [SIZE, 40960 + 64])
def test_dropped_storage_comes_back_zero_filled(size):
    first = _fresh(size)
    first.write(0, b"\xff" * size)
    storage, address = id(_storage(first)), first.address  # (the pool keeps it alive)
    del first
    again = _fresh(size)
    assert id(_storage(again)) == storage and again.address == address
    assert again.read() == bytes(size)
    other = _fresh(size)  # (while `again` lives: a new entry, sharing the zero source)
    other.write(0, b"\x11" * size)
    del other
    assert _fresh(size).read() == bytes(size) and again.read() == bytes(size)
    assert again.address % bm.ALIGNMENT == 0
    assert again.allocation.preserve_count == 1 and not again.readonly


@pytest.mark.parametrize(
    "hold",
    ["buffer", "subspan", "allocation", "numpy view", "typed view", "memoryview", "ctypes"],
)
def test_storage_anything_can_reach_is_not_handed_out(hold):
    buffer = _fresh()
    buffer.write(0, b"\x5a" * SIZE)
    keep = {
        "buffer": lambda: buffer,
        "subspan": lambda: buffer.subspan(16, 16),
        "allocation": lambda: buffer.allocation,
        "numpy view": lambda: buffer.bytes_view(8, 8),
        "typed view": lambda: buffer.numpy_view(np.float32, (4,), 16),
        "memoryview": lambda: memoryview(buffer.allocation.array),
        "ctypes": lambda: (ctypes.c_char * SIZE).from_buffer(buffer.allocation.array),
    }[hold]()
    address = buffer.address
    del buffer
    others = [_fresh() for _ in range(3 * bm._RECYCLE_DEPTH)]
    assert all(o.address != address for o in others), hold
    assert all(o.read() == bytes(SIZE) for o in others)
    assert (ctypes.c_char * SIZE).from_address(address).raw == b"\x5a" * SIZE
    del keep


def test_a_zero_copy_result_keeps_its_storage():
    from runtime_support.api import abi

    def filled():
        buffer = _fresh(16)
        buffer.write(0, np.arange(4, dtype=np.float32).tobytes())
        return buffer

    view = HalBufferView(filled(), (4,), 0x21000020)
    out = abi.view_to_numpy(view, True)  # (a result the translator proved fresh)
    del view
    assert not out.flags.owndata  # recycled storage is handed out zero-copy too
    others = [_fresh(16) for _ in range(3 * bm._RECYCLE_DEPTH)]
    for other in others:
        other.write(0, b"\x01" * 16)
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert all(not np.shares_memory(out, _storage(o)) for o in others)


def test_allocator_accounting_unchanged():
    allocator = HalAllocator()
    for _ in range(5):
        allocator.allocate(0, bm.USAGE_DEFAULT, SIZE)
    assert allocator.bytes_allocated == 5 * SIZE


def test_threads_never_share_storage():
    """Eight threads each fill fresh buffers with their own byte and check it is still
    there after the others ran: storage handed to two threads at once would show."""
    errors = []
    barrier = threading.Barrier(8)

    def work(tag: int):
        barrier.wait()
        for _ in range(2000):
            held = [_fresh(32) for _ in range(2)]
            for b in held:
                if b.read() != bytes(32):
                    errors.append("not zero-filled")
                b.write(0, bytes([tag]) * 32)
            for b in held:
                if b.read() != bytes([tag]) * 32:
                    errors.append(f"thread {tag}: storage changed under it")

    threads = [threading.Thread(target=work, args=(t + 1,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# -- end to end ---------------------------------------------------------------------------

SOURCE = """
util.global private mutable @acc = dense<0.0> : tensor<4xf32>
func.func @step(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s0 = arith.addf %a, %b : tensor<4xf32>
  %k0 = util.optimization_barrier %s0 : tensor<4xf32>
  %s1 = arith.mulf %k0, %b : tensor<4xf32>
  %k1 = util.optimization_barrier %s1 : tensor<4xf32>
  %g = util.global.load @acc : tensor<4xf32>
  %s2 = arith.addf %g, %k1 : tensor<4xf32>
  util.global.store %s2, @acc : tensor<4xf32>
  %s3 = arith.subf %k1, %a : tensor<4xf32>
  return %s2, %s3 : tensor<4xf32>, tensor<4xf32>
}
"""


def test_kept_results_and_globals_match_iree(compile_mlir, tmp_path):
    rt = pytest.importorskip("iree.runtime")
    from helpers_compile import LLVM_CPU_FLAGS
    from differential import load_package
    from translator.codegen import write_package
    from translator.reader import read_module_file

    src = tmp_path / "recycle.mlir"
    src.write_text(SOURCE)
    vmfb = compile_mlir(src, LLVM_CPU_FLAGS)
    ctx = load_package(write_package(read_module_file(vmfb), tmp_path / "pkg", "recycle"))
    ctx = ctx.load(device="local-sync")
    config = rt.Config("local-sync")
    vm_module = rt.VmModule.mmap(config.vm_instance, str(vmfb))
    theirs = rt.SystemContext(vm_modules=[vm_module], config=config).modules.module
    rng = np.random.default_rng(7)
    ours_kept, theirs_kept = [], []
    for i in range(40):
        a = rng.standard_normal(4).astype(np.float32)
        b = rng.standard_normal(4).astype(np.float32)
        ours = ctx.step(a, b)
        ref = [np.asarray(x.to_host()).copy() for x in theirs.step(a, b)]
        if i % 3:  # some results are kept, some dropped at once
            ours_kept.append(ours)
            theirs_kept.append(ref)
    for ours, ref in zip(ours_kept, theirs_kept):
        assert [o.tobytes() for o in ours] == [r.tobytes() for r in ref]
