"""HAL buffer arithmetic against IREE's own HAL (iree.runtime's Python bindings).

Random programs of fills and copies go to pyree's HalBuffer through chains of subspans
(subspans of subspans, offsets and lengths relative to each level) and to IREE's HAL as
command-buffer fill/copy at the absolute offsets those chains denote; the bytes must be
identical. Buffer views over the results, read through IREE's mapping and pyree's
numpy view, must agree too, and out-of-range operations fail on both sides with the same
status. (The Python bindings expose no subspan; IREE's absolute offsets are the oracle
for what a subspan chain addresses.)
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from runtime_support.errors import StatusCode, VMError
from runtime_support.hal.buffer import HalBuffer
from runtime_support.hal.buffer_view import HalBufferView
from runtime_support.hal import element_types

rt = pytest.importorskip("iree.runtime")

SIZE = 256
_STATUS = re.compile(r"\b(" + "|".join(c.name for c in StatusCode if c) + r")\b")


@pytest.fixture(scope="module")
def device():
    return rt.get_device("local-sync")


def _iree_buffer(device, data: np.ndarray):
    return device.allocator.allocate_buffer_copy(
        memory_type=rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE,
        allowed_usage=rt.BufferUsage.DEFAULT | rt.BufferUsage.MAPPING,
        device=device,
        buffer=data,
    )


def _iree_bytes(buf, n: int) -> bytes:
    return np.asarray(buf.map().asarray((n,), np.dtype(np.uint8))).tobytes()


def _chain(rng: random.Random, size: int, depth: int):
    """[(offset, length)] relative subspans, each inside the previous; 4-aligned offsets
    (IREE checks fill alignment on absolute offsets)."""
    chain, length = [], size
    for _ in range(depth):
        off = 4 * rng.randrange(0, max(1, length // 8))
        sub = 4 * rng.randrange(1, max(2, (length - off) // 4 + 1))
        sub = min(sub, length - off)
        chain.append((off, sub))
        length = sub
    return chain


def _resolve(buf: HalBuffer, chain) -> HalBuffer:
    for off, length in chain:
        buf = buf.subspan(off, length)
    return buf


def _program(seed: int):
    rng = random.Random(seed)
    ops = []
    for _ in range(12):
        depth = rng.randrange(0, 4)
        target = _chain(rng, SIZE, depth)
        inner = target[-1][1] if target else SIZE
        if rng.random() < 0.5:
            width = rng.choice((1, 2, 4))
            n = inner // width
            start = rng.randrange(0, n) if n else 0
            count = rng.randrange(0, n - start + 1) if n else 0
            ops.append(("fill", target, start * width, count * width, rng.getrandbits(32), width))
        else:
            source = _chain(rng, SIZE, rng.randrange(0, 4))
            s_inner = source[-1][1] if source else SIZE
            length = rng.randrange(0, min(inner, s_inner) + 1)
            ops.append(("copy", target, rng.randrange(0, inner - length + 1), length, source,
                        rng.randrange(0, s_inner - length + 1)))
    return ops


def _absolute(chain, offset: int) -> int:
    return sum(o for o, _ in chain) + offset


def _run_pyree(ops, init: np.ndarray, src_init: np.ndarray) -> bytes:
    buf = HalBuffer.allocate(SIZE)
    buf.write(0, init)
    src = HalBuffer.allocate(SIZE)
    src.write(0, src_init)
    for op in ops:
        if op[0] == "fill":
            _, chain, off, length, pattern, width = op
            _resolve(buf, chain).fill(off, length, pattern, width)
        else:
            _, chain, off, length, s_chain, s_off = op
            _resolve(buf, chain).copy_from(off, _resolve(src, s_chain), s_off, length)
    return buf.read()


_PATTERN_TYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def _run_iree(device, ops, init, src_init) -> bytes:
    buf = _iree_buffer(device, init)
    src = _iree_buffer(device, src_init)
    cb = rt.HalCommandBuffer(device)
    for op in ops:
        if op[0] == "fill":
            _, chain, off, length, pattern, width = op
            if length:
                value = _PATTERN_TYPES[width](pattern & ((1 << (8 * width)) - 1))
                cb.fill(buf, value, target_offset=_absolute(chain, off), length=length)
        else:
            _, chain, off, length, s_chain, s_off = op
            if length:
                cb.copy(src, buf, source_offset=_absolute(s_chain, s_off),
                        target_offset=_absolute(chain, off), length=length)
    cb.end()
    sem = device.create_semaphore(0)
    device.queue_execute(cb, [], [(sem, 1)])
    sem.wait(1)
    return _iree_bytes(buf, SIZE)


@pytest.mark.parametrize("seed", range(40))
def test_fill_copy_through_subspan_chains(device, seed):
    rng = np.random.default_rng(seed)
    init = rng.integers(0, 256, SIZE, dtype=np.uint8)
    src_init = rng.integers(0, 256, SIZE, dtype=np.uint8)
    ops = _program(seed)
    assert _run_pyree(ops, init, src_init) == _run_iree(device, ops, init, src_init)


def test_programs_nest_subspans():
    """The programs do reach subspans of subspans (of subspans), on both operands."""
    ops = [op for seed in range(40) for op in _program(seed)]
    assert sum(len(op[1]) >= 2 for op in ops) > 50
    assert sum(op[0] == "copy" and len(op[4]) >= 2 for op in ops) > 20


@pytest.mark.parametrize(
    "shape, dtype", [((4, 8), np.float32), ((3, 5, 2), np.int16), ((7,), np.int64), ((), np.int32)]
)
def test_buffer_view_mapping(device, shape, dtype):
    """A view of a buffer's leading bytes reads the same through both mappings."""
    data = np.random.default_rng(1).integers(0, 256, SIZE, dtype=np.uint8)
    theirs = _iree_buffer(device, data)
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    view = theirs.create_view(rt.Shape(list(shape)), np.dtype(dtype).itemsize)
    assert view.byte_length == n
    their_values = np.asarray(view.map().asarray(tuple(shape), np.dtype(dtype)))
    ours = HalBuffer.allocate(SIZE)
    ours.write(0, data)
    our_view = HalBufferView(ours, shape, element_types.from_numpy_dtype(np.dtype(dtype)))
    assert our_view.byte_length == n
    assert our_view.to_numpy().tobytes() == their_values.tobytes()
    # And through a subspan chain: the view's bytes start at the chain's absolute offset.
    sub = ours.subspan(8, SIZE - 8).subspan(8, n)
    sub_view = HalBufferView(sub, shape, our_view.element_type)
    assert sub_view.to_numpy().tobytes() == data[16 : 16 + n].tobytes()


@pytest.mark.parametrize(
    "offset, length",
    [(SIZE - 4, 8), (SIZE, 4), (0, SIZE + 4)],
)
def test_out_of_range_fill_same_status(device, offset, length):
    theirs = _iree_buffer(device, np.zeros(SIZE, np.uint8))
    with pytest.raises(Exception) as err:
        cb = rt.HalCommandBuffer(device)
        cb.fill(theirs, np.uint32(7), target_offset=offset, length=length)
        cb.end()
        sem = device.create_semaphore(0)
        device.queue_execute(cb, [], [(sem, 1)])
        sem.wait(1)
    want = _STATUS.search(str(err.value))
    assert want, err.value
    with pytest.raises(VMError) as ours:
        HalBuffer.allocate(SIZE).subspan(0, SIZE).fill(offset, length, 7, 4)
    assert ours.value.code.name == want.group(1), (ours.value, err.value)
