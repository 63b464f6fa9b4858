"""The steps of a queue program and the step table (docs/design/host-path.md, section 3).

A *step* is one call of a `hal` import that programs the queue (or checks an argument, or
reads device memory back) inside a queue region. Each step kind is a class (`Alloca`,
`Execute`, `Dispatch`...); each import that is a step of that kind gets its own frozen
dataclass under it, generated from the import's `@vm_import` declaration in
runtime_support/hal/module.py, whose keyword fields are the import method's parameter
names in cconv order (`ImportDecl.params`). Nothing here repeats a cconv or a parameter
name: where the declaration changes, the step changes with it.

    STEPS[(full_name, cconv)] -> StepEntry      (the table; `lookup` reads it)
    entry.bind(operands, segments) -> {field: operand | tuple}   by the declaration

A variadic parameter binds to a tuple of operands, or, where its span has several codes
(a dispatch's `bindings`: ordinal, slot, buffer, offset, length), to a tuple of tuples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ..hal.module import HalModule
from ..vm.args import ImportDecl, cconv_arguments


class Step:
    """The root of the step kinds. A concrete step class has, as class attributes, the
    import it calls (`IMPORT`, `CCONV`) and its fields in cconv order (`PARAMS`).

    Steps are frozen records made with keyword fields (every parameter of the import,
    and `out`), compared and hashed by their fields. They are plain classes made with
    `type()` from the declarations (building ~100 dataclasses at import cost 60 ms)."""

    IMPORT: ClassVar[str] = ""
    CCONV: ClassVar[str] = ""
    PARAMS: ClassVar[tuple[str, ...]] = ()
    __slots__ = ("out",)
    # In a queue program (program.py): `out` is the name of the value the call returns,
    # a tuple of names where it returns several, None where it returns nothing.

    def __init__(self, *, out: object = None, **fields) -> None:
        params = self.PARAMS
        if len(fields) != len(params) or any(p not in fields for p in params):
            missing = [p for p in params if p not in fields]
            unknown = [f for f in fields if f not in params]
            raise TypeError(
                f"{type(self).__name__}: "
                + (f"missing fields {missing}" if missing else f"unknown fields {unknown}")
            )
        set_field = object.__setattr__
        set_field(self, "out", out)
        for name in params:
            set_field(self, name, fields[name])

    def _values(self) -> tuple:
        return (self.out, *(getattr(self, p) for p in self.PARAMS))

    def __setattr__(self, name, value) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __delattr__(self, name) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other._values() == self._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{p}={getattr(self, p)!r}" for p in ("out", *self.PARAMS))
        return f"{type(self).__name__}({fields})"


# -- kinds (the imports of each: KINDS below) ------------------------------------------------


class Alloca(Step):
    """A queue-ordered allocation: a new buffer once `wait_fence` is reached."""

    __slots__ = ()


class Dealloca(Step):
    """A queue-ordered release of a buffer."""

    __slots__ = ()


class Execute(Step):
    """A command buffer submitted (with a binding table: the indirect form)."""

    __slots__ = ()


class Fill(Step):
    """A fill: on the queue, or recorded into a command buffer."""

    __slots__ = ()


class Copy(Step):
    """A copy: on the queue, or recorded into a command buffer."""

    __slots__ = ()


class Update(Step):
    """Host bytes written into a buffer: on the queue, or recorded."""

    __slots__ = ()


class Barrier(Step):
    """An ordering point: a queue barrier, or a recorded execution barrier."""

    __slots__ = ()


class Record(Step):
    """A command buffer created for recording."""

    __slots__ = ()


class Finalize(Step):
    """The end of a command buffer's recording."""

    __slots__ = ()


class Dispatch(Step):
    """A dispatch recorded into a command buffer (direct or indirect counts)."""

    __slots__ = ()


class Lookup(Step):
    """An export's function ordinal, by name (resolved at bind in a queue program)."""

    __slots__ = ()


class NewFence(Step):
    """A fence made for a later step to signal."""

    __slots__ = ()


class Join(Step):
    """Fences joined into one."""

    __slots__ = ()


class Await(Step):
    """A wait on fences; its status result feeds the region's fail exit."""

    __slots__ = ()


class Read(Step):
    """A scalar read back from mapped device memory: a region output the host uses."""

    __slots__ = ()


class CheckArgument(Step):
    """An argument's check (its view's shape and type, its buffer's size and usage)."""

    __slots__ = ()


class ViewBuffer(Step):
    """An argument view's buffer (between its two checks)."""

    __slots__ = ()


class ViewDim(Step):
    """One dimension of an argument view (a dynamic shape's size, read before its checks)."""

    __slots__ = ()


class Allocator(Step):
    """The device's allocator (the buffer check's operand)."""

    __slots__ = ()


# Which import is which kind. Only the full name is written here; the cconv and the
# fields come from the declaration.
KINDS: dict[str, type[Step]] = {
    "hal.device.queue.alloca": Alloca,
    "hal.device.queue.dealloca": Dealloca,
    "hal.device.queue.execute": Execute,
    "hal.device.queue.execute.indirect": Execute,
    "hal.device.queue.fill": Fill,
    "hal.device.queue.copy": Copy,
    "hal.device.queue.update": Update,
    "hal.device.queue.barrier": Barrier,
    "hal.command_buffer.create": Record,
    "hal.command_buffer.finalize": Finalize,
    "hal.command_buffer.dispatch": Dispatch,
    "hal.command_buffer.dispatch.indirect": Dispatch,
    "hal.command_buffer.fill_buffer": Fill,
    "hal.command_buffer.copy_buffer": Copy,
    "hal.command_buffer.update_buffer": Update,
    "hal.command_buffer.execution_barrier": Barrier,
    "hal.executable.lookup.function": Lookup,
    "hal.fence.create": NewFence,
    "hal.fence.join": Join,
    "hal.fence.await": Await,
    "hal.buffer.load": Read,
    "hal.buffer_view.assert": CheckArgument,
    "hal.buffer.assert": CheckArgument,
    "hal.buffer_view.buffer": ViewBuffer,
    "hal.buffer_view.dim": ViewDim,
    "hal.device.allocator": Allocator,
}


@dataclass(frozen=True)
class StepEntry:
    """One row of the step table: an import, its kind and its step class."""

    full_name: str
    cconv: str
    kind: type[Step]
    cls: type[Step]
    params: tuple[str, ...]
    codes: tuple = field(repr=False, default=())  # cconv_arguments(cconv), per param

    def bind(self, operands, segments=None) -> dict[str, object]:
        """The call's operands by field name. `segments`: the call's segment sizes (a
        variadic call's: one per cconv argument, the count of each span), None for a
        call with no spans."""
        out: dict[str, object] = {}
        i = 0
        for k, (name, code) in enumerate(zip(self.params, self.codes)):
            if not isinstance(code, tuple):
                out[name] = operands[i]
                i += 1
                continue
            if segments is None:
                raise ValueError(f"{self.full_name}: a span ({name}) without segment sizes")
            n, width = segments[k], len(code)
            items = operands[i : i + n * width]
            out[name] = tuple(items) if width == 1 else tuple(
                tuple(items[j : j + width]) for j in range(0, len(items), width)
            )
            i += n * width
        if i != len(operands):
            raise ValueError(f"{self.full_name}: {len(operands)} operands, the cconv takes {i}")
        return out


def _camel(method: str) -> str:
    return "".join(part.capitalize() for part in method.split("_"))


def _build() -> dict[tuple[str, str], StepEntry]:
    table: dict[tuple[str, str], StepEntry] = {}
    for full_name, kind in KINDS.items():
        method = getattr(HalModule, HalModule.method_name(full_name))
        decl: ImportDecl = method.__vm_import__
        params = decl.params
        cls = type(
            _camel(HalModule.method_name(full_name)),
            (kind,),
            {
                "__slots__": params,
                "__module__": __name__,
                "__doc__": f"`{decl.full_name}` ({decl.cconv}) as a {kind.__name__} step.",
                "IMPORT": decl.full_name,
                "CCONV": decl.cconv,
                "PARAMS": params,
            },
        )
        table[(decl.full_name, decl.cconv)] = StepEntry(
            decl.full_name, decl.cconv, kind, cls, params, tuple(cconv_arguments(decl.cconv))
        )
    return table


STEPS: dict[tuple[str, str], StepEntry] = _build()
# Each import's step class by its name, for generated modules to import
# (`from runtime_support.exec.steps import CommandBufferDispatch`).
globals().update({entry.cls.__name__: entry.cls for entry in STEPS.values()})
STEP_CLASSES: tuple[str, ...] = tuple(sorted({entry.cls.__name__ for entry in STEPS.values()}))


def lookup(full_name: str, cconv: str) -> StepEntry | None:
    """The step table's row for an import as a module declares it (name and cconv must
    both match the `hal` module's declaration), else None."""
    return STEPS.get((full_name, cconv))


__all__ = [
    "KINDS", "STEPS", "Alloca", "Allocator", "Await", "Barrier", "CheckArgument", "Copy",
    "Dealloca", "Dispatch", "Execute", "Fill", "Finalize", "Join", "Lookup", "NewFence",
    "Read", "Record", "STEP_CLASSES", "Step", "StepEntry", "Update", "ViewBuffer", "ViewDim",
    "lookup",
    *STEP_CLASSES,
]
