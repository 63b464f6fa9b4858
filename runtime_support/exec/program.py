"""A queue program: the steps of one queue region as a module constant (docs/design/host-path.md §2).

The translator writes one `QueueProgram` per queue region of a function and one call
where the region was; `general.py` runs it. A program is data, built from the classes
here and the step classes of steps.py, never source text:

    QUEUE_0 = QueueProgram(
        function="main",
        inputs=("r0", "i22"),                 # the call's arguments: registers live on entry
        steps=(
            CommandBufferCreate(out="cmd0", device="r3", modes=1, ...),
            CommandBufferDispatch(command_buffer="cmd0", workgroup_x="t0", ...),
            ...
            FailIf(test="status0", status="status0", message="failed to wait on timepoint"),
        ),
        outputs=("buffer0", "status0"),      # what the call returns, in this order
    )

A field's value is a *reference* or a constant:

- a `str` names a value: one of `inputs` (a register's name, `r3`, `i22`) or one a step
  made (`cmd0`, `fence1`, `t0`: a step's `out`);
- an `int` or a `float` is that constant (the translator folds registers that dataflow
  proves constant); `None` is a null ref;
- `Rodata(k)` is the module's rodata segment `k` (a buffer of the context);
- a `tuple` is a variadic span: of references, or, where each item has several operands
  (a dispatch's bindings), of tuples of references.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Rodata:
    """The module's rodata segment `ordinal` (resolved to the context's buffer at bind);
    `name` is the segment's name in the generated module, for the reader."""

    ordinal: int
    name: str = ""


@dataclass(frozen=True, kw_only=True)
class Compute:
    """A VM op that cannot fail, computed from the program's values: `out = op(*args)`
    with `op` the VM mnemonic (`mul.i64`, `select.i32`...) as runtime_support.vm.numerics
    implements it. These are the integer ops IREE interleaves with the queue calls (tile
    counts, truncations, shifts): the program computes them where they were."""

    out: str
    op: str
    args: tuple


@dataclass(frozen=True, kw_only=True)
class FailIf:
    """A fail exit: the region's branch whose other arm only fails. When `test` is
    non-zero (zero, with `negate`) the call raises what `vm.fail` raises there: `status`,
    `message` and the source `location`."""

    test: object
    status: object
    message: str
    location: str | None = None
    negate: bool = False


@dataclass(frozen=True, kw_only=True)
class Loop:
    """The host loop whose body is a program and integer ops (docs/design/host-path.md
    §18): its call site is `queue_n.loop(...)`, which runs iterations one after another
    and returns the state of the last call, from which the generated loop goes on.

    Names here are the function's registers. An iteration, from the call: the call
    (`inputs` read, its outputs written to `targets`), the ops `after` it, the branch on
    `test` (back where it is non-zero; zero with `negate`) with the back edge's `copies`
    (source, destination), the ops `before` the call at the loop's head. The loop call's
    arguments are the program's inputs and then `registers`; it returns the outputs and
    then the values `kept` held at the last call. (Its arguments are positional however
    many there are: one call per loop, not per iteration.)"""

    targets: tuple[str, ...]
    registers: tuple[str, ...]
    after: tuple
    test: str
    copies: tuple[tuple[str, str], ...]
    before: tuple
    kept: tuple[str, ...]
    negate: bool = False


@dataclass(frozen=True)
class QueueProgram:
    """One queue region of `function`: the call's `inputs` (names), its `steps` in
    program order, and the `outputs` the call returns (names of values, in order).

    `carried`: (output, input) pairs of a program that is a host loop's body, whose back
    edge moves each output into that input for the next call (docs/design/host-path.md
    §5.4). Its call site is then `queue_n.step(...)` and each way out of the loop reads
    the last results through `queue_n.results(...)` (exec/loops.py).

    `loop`: the host loop this program is the body of, where its call site is
    `queue_n.loop(...)` (Loop, exec/host_loops.py)."""

    function: str
    inputs: tuple[str, ...]
    steps: tuple
    outputs: tuple[str, ...]
    carried: tuple[tuple[str, str], ...] = ()
    loop: Loop | None = None

    @property
    def packed(self) -> bool:
        """Whether the call passes its inputs as one tuple (more than 10 of them)."""
        return len(self.inputs) > MAX_POSITIONAL


# A call passes at most this many positional arguments; more travel as one tuple.
MAX_POSITIONAL = 10


def fields_read(step) -> tuple:
    """The field values a step of a program reads: a Compute's operands, a FailIf's test
    and status, a queue step's fields in cconv order."""
    if isinstance(step, Compute):
        return step.args
    if isinstance(step, FailIf):
        return (step.test, step.status)
    return tuple(getattr(step, p) for p in step.PARAMS)


def names_in(value) -> Iterator[str]:
    """The names of values a field value reads (itself, or those inside a span), in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, tuple):
        for v in value:
            yield from names_in(v)

__all__ = [
    "Compute", "FailIf", "Loop", "MAX_POSITIONAL", "QueueProgram", "Rodata", "fields_read", "names_in",
]
