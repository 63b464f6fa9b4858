"""The `cuda` device's queue: fence ordering of LocalQueue, work on the CUDA stream.

A queue operation runs once its wait fence is reached (LocalQueue's rules, unchanged): its
work enqueues driver calls on the device's one stream, then a CUDA event is recorded after
them and waited for, and only then is the signal fence signaled. So a fence is reached
when the GPU has finished the work (IREE signals its semaphores from the completion of
such an event), and a failure in a kernel (an illegal address...) fails the signal fence
with the driver's error. Operations are ordered by their fences, and the one stream keeps
the order in which they were issued.
"""

from __future__ import annotations

from runtime_support.hal.queue import LocalQueue


class CudaQueue(LocalQueue):
    def __init__(self, device) -> None:
        super().__init__()
        self.device = device

    def submit(self, wait_fence, signal_fence, work, name: str = "queue operation") -> None:
        device = self.device

        def on_stream():
            with device.active():
                work()
                device.synchronize(name)

        super().submit(wait_fence, signal_fence, on_stream, name)


__all__ = ["CudaQueue"]
