"""Command buffers of the `cuda` device, replayed as a prerecorded launch list.

Recording is HalCommandBuffer's (the same checks and commands). The first execution after
`finalize` turns the commands into a list of steps, each a closure over everything fixed
at record time: a dispatch whose bindings are direct buffers becomes one `Launch` (kernel,
grid, block, shared memory, packed parameters; executable.py) built once, so replaying it
is one cuLaunchKernel call; a dispatch through a binding table keeps its checked launch
and fills in only the table's device pointers (+ offsets) per execution. Fill, update and copy
become cuMemsetD*Async / cuMemcpyHtoDAsync / cuMemcpyDtoDAsync on the stream; a batch of
collectives one NCCL group on it (nccl_channel.py). The one
stream runs steps in order, so execution barriers need no work.
(IREE's graph_command_buffer.c builds a CUDA graph instead; pycuda has no graph API.)
"""

from __future__ import annotations

import numpy as np

from runtime_support.cuda.memory import CudaBuffer
from runtime_support.errors import StatusCode, VMError
from runtime_support.hal.command_buffer import (
    Binding,
    BufferRef,
    HalCommandBuffer,
    CollectiveBatch,
    CopyCommand,
    DispatchCommand,
    FillCommand,
    UpdateCommand,
    require_buffer,
    resolve_ref,
)


def _device_pointer(resolved, what: str) -> int:
    """The device pointer of a resolved binding (buffer base + offsets); 0 for null."""
    if resolved is None:
        return 0
    buffer, offset, _ = resolved
    if not isinstance(buffer, CudaBuffer):
        raise VMError(StatusCode.INVALID_ARGUMENT, f"{what}: the buffer is host memory, not memory of the cuda device")
    return buffer.address + offset


def _dispatch_step(device, command: DispatchCommand):
    executable = command.executable
    native = getattr(executable, "native", None)
    if not hasattr(native, "plan"):
        raise VMError(StatusCode.INVALID_ARGUMENT, f"dispatch: executable {executable!r} is not a cuda-nvptx-fb executable")
    what = [f"dispatch binding {i}" for i in range(len(command.bindings))]
    direct = [r.buffer is not None for r in command.bindings]
    indirect = isinstance(command.workgroups, BufferRef)
    # Checked once: ordinal, binding and constant counts, the grid when it is static.
    fixed = [_device_pointer(resolve_ref(r, None, w), w) if d else 0 for r, d, w in zip(command.bindings, direct, what)]
    launch = native.plan(command.ordinal, (1, 1, 1) if indirect else command.workgroups, command.constants, fixed)
    stream = device.stream
    if all(direct) and not indirect:  # everything is known now: replayed as is
        if 0 in launch.grid:  # an empty grid launches nothing, as in IREE
            return None
        return lambda table: launch.run(stream)
    slots = [(i, r, w) for i, (r, d, w) in enumerate(zip(command.bindings, direct, what)) if not d]

    def step(table):
        pointers = list(fixed)
        for i, ref, w in slots:
            pointers[i] = _device_pointer(resolve_ref(ref, table, w), w)
        grid = None
        if indirect:
            w = "dispatch.indirect workgroups"
            buffer, offset, _ = require_buffer(resolve_ref(command.workgroups, table, w), w)
            counts = tuple(int(v) for v in buffer.bytes_view(offset, 12).view(np.uint32))
            grid = native.check_grid(command.ordinal, counts)
        if 0 not in (grid or launch.grid):
            launch.run_with(stream, pointers, grid)

    return step


def _transfer_step(command):
    """Fill, update and copy: resolved per execution, enqueued by the CudaBuffer."""
    def step(table):
        command.execute(table, 1)
    return step


def build_steps(device, commands) -> list:
    steps = []
    for command in commands:
        if isinstance(command, DispatchCommand):
            step = _dispatch_step(device, command)
        elif isinstance(command, (FillCommand, UpdateCommand, CopyCommand)):
            step = _transfer_step(command)
        elif isinstance(command, CollectiveBatch):
            from runtime_support.cuda.nccl_channel import batch_step

            step = batch_step(device, command)
        else:
            raise VMError(StatusCode.INTERNAL, f"cuda command buffer: unknown command {type(command).__name__}")
        if step is not None:
            steps.append(step)
    return steps


class CudaCommandBuffer(HalCommandBuffer):
    """A `!hal.command_buffer` of a `cuda` device."""

    def execute(self, binding_table=None, workers=None) -> None:
        if self.recording:
            raise VMError(StatusCode.FAILED_PRECONDITION, "execute: command buffer is not finalized")
        if self.one_shot and self.executions:
            raise VMError(StatusCode.FAILED_PRECONDITION, "execute: one-shot command buffer already executed")
        self.executions += 1
        steps = self._plan
        if steps is None:
            steps = self._plan = build_steps(self.device, self.commands)
        table = [Binding(*entry) for entry in binding_table] if binding_table else None
        device = self.device
        with device.active():
            for step in steps:
                step(table)
            if steps:
                device.mark_pending()


__all__ = ["CudaCommandBuffer", "build_steps"]
