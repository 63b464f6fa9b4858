"""The per-call shortcuts of the hal module and queue (hal/fence.py, queue.py,
module.py) give what the general paths give: fences a synchronous queue leaves reached,
operations with no work, tables handed on as spans."""

from __future__ import annotations

import threading

import pytest

from runtime_support.errors import StatusCode, VMError
from runtime_support.hal import Fence, HalModule, LocalDevice


@pytest.fixture
def device():
    return LocalDevice("local-sync")


@pytest.fixture
def hal(device):
    return HalModule([device])


def test_join_of_reached_fences_is_reached_and_final(hal, device):
    a, b = hal.fence_create(device, 0), hal.fence_create(device, 0)
    hal.fence_signal(a)
    hal.fence_signal(b)
    joined = hal.fence_join(0, [a, None, b])
    assert joined is not a and joined is not b
    assert hal.fence_query(joined) == 0 and hal.fence_await(0, 0, [joined]) == 0
    hal.fence_fail(joined, StatusCode.ABORTED)  # reached is final, as for the real join
    assert hal.fence_query(joined) == 0 and hal.fence_query(a) == 0
    # One pending or failed input: the real join (shared timepoints, first failure wins).
    c = Fence()
    pending = hal.fence_join(0, [a, c])
    assert hal.fence_query(pending) == 17
    hal.fence_signal(c)
    assert hal.fence_query(pending) == 0
    d = Fence()
    d.fail(StatusCode.DATA_LOSS)
    assert hal.fence_query(hal.fence_join(0, [a, d])) == StatusCode.DATA_LOSS


def test_no_work_operations_signal_at_once_or_in_order(hal, device):
    ready = Fence()
    hal.device_queue_barrier(device, -1, None, ready, 0)
    assert ready.reached_now()
    # Waiting on a pending fence: signaled only once it is, after earlier operations.
    host, first, second = Fence(), Fence(), Fence()
    order = []
    device.queue.submit(host, first, lambda: order.append("work"))
    hal.device_queue_barrier(device, -1, first, second, 0)
    second.on_complete(lambda error: order.append(("barrier", error)))
    assert order == [] and hal.fence_query(second) == 17
    host.signal()
    assert order == ["work", ("barrier", None)]


def test_a_waiter_registered_on_a_fresh_fence_is_woken(device):
    f = Fence()
    seen = []
    f.on_complete(seen.append)
    threading.Timer(0.02, f.signal).start()
    assert f.wait(5) is True and seen == [None]


def test_queue_call_routes_errors_like_submit(device):
    def boom(arg):
        raise VMError(StatusCode.INTERNAL, f"failed on {arg}")

    signal = Fence()
    device.queue.call(None, signal, boom, "x")
    with pytest.raises(VMError, match="failed on x"):
        signal.wait(0)
    with pytest.raises(VMError, match="failed on y"):  # no signal fence: raised here
        device.queue.call(None, None, boom, "y")

    def bug(arg):
        raise ValueError("bad")

    with pytest.raises(VMError, match=r"op: ValueError: bad") as caught:  # INTERNAL
        device.queue.call(None, None, bug, 0, "op")
    assert caught.value.code == StatusCode.INTERNAL


def test_buffer_view_create_ranges_and_negative_dims(hal, device):
    from runtime_support.hal.buffer import HalBuffer

    buffer = HalBuffer.allocate(16)
    whole = hal.buffer_view_create(buffer, 0, -1, 0x21000020, 1, [4])
    assert whole.buffer is buffer and whole.shape == (4,)
    assert hal.buffer_view_create(buffer, 0, 16, 0x21000020, 1, [2, 2]).buffer is buffer
    for offset, length, expected in ((4, -1, (4, 12)), (0, 8, (0, 8)), (8, 8, (8, 8))):
        view = hal.buffer_view_create(buffer, offset, length, 0x21000020, 1, [expected[1] // 4])
        assert view.buffer is not buffer
        assert (view.buffer.offset, view.buffer.length) == expected
    with pytest.raises(VMError) as err:
        hal.buffer_view_create(buffer, 0, 16, 0x21000020, 1, [2, -3, -1])
    assert err.value.code == StatusCode.INVALID_ARGUMENT
    assert "hal.buffer_view.create: shape dimension 1 is negative (-3)" in str(err.value)
    with pytest.raises(VMError) as err:
        hal.buffer_view_create(buffer, 8, 12, 0x21000020, 1, [3])
    assert err.value.code == StatusCode.OUT_OF_RANGE
