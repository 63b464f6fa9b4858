"""Runs of submissions: consecutive fused submission calls become one call.

A function that submits dispatch after dispatch, awaiting each before the next (IREE
emits this where values cross `util.optimization_barrier` or other host-visible points),
lowers to one fused call per dispatch (analyses/submissions.py: `alloca_execute_indirect`,
or `execute_indirect` for a dispatch that writes a buffer it was given), each followed by
the same `if status: raise vm_fail(...)`. This pass, over a function's statement tree, finds
runs of two or more such calls with nothing between them but releases and comments, and
writes the run as one call of the context's `run` helper (runtime_support/hal/fused.py),
which runs all its dispatches in one native plan (runtime_support/hal/runs.py).

A step joins the run only where the run's single call is the same program:
- it submits on the same device, and its status check is the same statement;
- none of its operands other than its table's buffers is a register an earlier step
  wrote or a release emptied (the call reads every operand before the first step runs);
- each table buffer is a register from before the run (an *outside* buffer), or holds
  the buffer an earlier step allocated; a register a release emptied ends the run.
After the call, the registers hold what the steps left: the buffers still held come back
as the call's results, the emptied ones are released, and the last status check follows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from translator.codegen.stmt import Assign, Comment, If, Raise, Release, Stmt, Submit, While

_REGISTER = re.compile(r"\b[ri]\d+\b")
MIN_STEPS = 2

# Submit.step positions (ops.py lower_submission: the helper's arguments in order).
DEVICE, WAIT, CMD, TABLE, SLOTS = 0, 3, 11, 13, 14
# Per step of runtime_support/hal/runs.Run, the scalar operands in layout order
# (runs.CREATE_FLAGS .. runs.AWAIT_FLAGS, with WAIT, an index into the fences, third).
_LAYOUT = (1, 2, WAIT, 4, 5, 6, 7, 8, 9, 10, 12, 15, 16)
OWN = -1  # runs.OWN: a table entry holding the buffer its own step allocates


@dataclass
class _Run:
    device: str
    status: str
    check: If
    steps: list[Submit] = field(default_factory=list)
    holder: dict[str, int] = field(default_factory=dict)  # register -> step whose buffer
    emptied: dict[str, None] = field(default_factory=dict)  # released in the run, in order
    outside: dict[str, int] = field(default_factory=dict)
    fences: dict[str, int] = field(default_factory=dict)
    scalars: dict[str, int] = field(default_factory=dict)
    layout: list[tuple] = field(default_factory=list)

    def release(self, names) -> None:
        for n in names:
            self.holder.pop(n, None)
            self.emptied[n] = None

    def fits(self, s: Submit, before: list[str]) -> bool:
        """Whether step `s`, after the releases `before`, keeps the run the same program
        (see module docstring). Reads the run's state only: linear in the step's size."""
        step = s.step
        if step[DEVICE] != self.device or s.targets[-1] != self.status:
            return False
        gone = set(before)
        plain = [text for k, text in enumerate(step) if k not in (TABLE, SLOTS)]
        plain += [text for _, offset, length in step[TABLE] for text in (offset, length)]
        for text in plain:
            for n in _REGISTER.findall(text or ""):
                if n == self.status or n in self.holder or n in self.emptied or n in gone:
                    return False
        for buffer, _, _ in step[TABLE]:
            if buffer is None or (buffer in self.holder and buffer not in gone):
                continue
            if buffer in gone or buffer in self.emptied or not _REGISTER.fullmatch(buffer):
                return False
        return True

    def add(self, s: Submit) -> None:
        """Takes step `s` (which `fits`)."""
        step = s.step
        table = []
        for buffer, offset, length in step[TABLE]:
            if buffer is None:
                source = OWN
            elif buffer in self.holder:
                source = -2 - self.holder[buffer]
            else:
                source = self.outside.setdefault(buffer, len(self.outside))
            table.append((source, self._scalar(offset), self._scalar(length)))
        row = tuple(
            -1 if step[k] is None  # (a step without an alloca: runs.NO_ALLOCA)
            else self.fences.setdefault(step[k], len(self.fences)) if k == WAIT
            else self._scalar(step[k])
            for k in _LAYOUT
        )
        j = len(self.steps)
        self.layout.append(row + (tuple(table),))
        self.steps.append(s)
        if len(s.targets) == 2:  # (the buffer an alloca step allocates)
            self.holder[s.targets[0]] = j
            self.emptied.pop(s.targets[0], None)

    def _scalar(self, text: str) -> int:
        return self.scalars.setdefault(text, len(self.scalars))


def _step_at(body: list[Stmt], i: int) -> tuple[Submit, If, list[str], int] | None:
    """The step starting at body[i] (an optional `fused:` comment, the Submit, releases
    or comments, its status check): (submit, check, names released before the check,
    index after the check)."""
    if i < len(body) and type(body[i]) is Comment and i + 1 < len(body) and type(body[i + 1]) is Submit:
        i += 1
    if i >= len(body) or type(body[i]) is not Submit or not body[i].step:
        return None
    s = body[i]
    released = []
    i += 1
    while i < len(body) and type(body[i]) in (Release, Comment):
        if type(body[i]) is Release:
            released += body[i].names
        i += 1
    if i >= len(body):
        return None
    check = body[i]
    status = s.targets[-1]
    if not (
        type(check) is If
        and check.test == status
        and not check.orelse
        and len(check.body) == 1
        and type(check.body[0]) is Raise
        and check.body[0].status == status
    ):
        return None
    return s, check, released, i + 1


def _same_raise(a: If, b: If) -> bool:
    x, y = a.body[0], b.body[0]
    return (x.status, x.message, x.function, x.location) == (y.status, y.message, y.function, y.location)


class RunTable:
    """The runs of a module: their layouts become module constants (`RUN_0`, ...)."""

    def __init__(self, helper_local, use) -> None:
        self.helper_local = helper_local  # () -> the context's `run` helper local
        self.use = use  # (module key, name) -> name: records a runtime import
        self.constants: list[tuple[str, list[str]]] = []  # (name, source lines)

    def merge(self, body: list[Stmt]) -> list[Stmt]:
        out: list[Stmt] = []
        i = 0
        while i < len(body):
            run, end = self._collect(body, i)
            if run is not None:
                out += self._emit(run)
                i = end
                continue
            s = body[i]
            if isinstance(s, If):
                s.body = self.merge(s.body)
                s.orelse = self.merge(s.orelse)
            elif isinstance(s, While):
                s.body = self.merge(s.body)
            out.append(s)
            i += 1
        return out

    def _collect(self, body: list[Stmt], i: int):
        first = _step_at(body, i)
        if first is None:
            return None, i
        s, check, released, after = first
        run = _Run(s.step[DEVICE], s.targets[-1], check)
        if not run.fits(s, []):
            return None, i
        run.add(s)
        run.release(released)
        end = after
        gap: list[str] = []
        j = after
        while True:
            while j < len(body) and type(body[j]) in (Release, Comment):
                if type(body[j]) is Release:
                    gap += body[j].names
                j += 1
            nxt = _step_at(body, j)
            if nxt is None or not _same_raise(nxt[1], check) or not run.fits(nxt[0], gap):
                break
            run.release(gap)
            run.add(nxt[0])
            run.release(nxt[2])
            run.check = nxt[1]  # (the same statement as the first's, at its own pc)
            end = j = nxt[3]
            gap = []
        if len(run.steps) < MIN_STEPS:
            return None, i
        return run, end

    def _emit(self, run: _Run) -> list[Stmt]:
        name = f"RUN_{len(self.constants)}"
        self.use("fused", "Run")
        outputs = sorted(run.holder.items(), key=lambda kv: kv[1])
        lines = [f"{name} = Run(", "    ("]
        for k, (row, s) in enumerate(zip(run.layout, run.steps)):
            pc = f" (pc {s.prov.pc:#x})" if s.prov is not None else ""
            lines += [f"        # submission {k}{pc}", f"        {row!r},"]
        lines += ["    ),", f"    {_tuple([str(j) for _, j in outputs])},", ")"]
        self.constants.append((name, lines))
        first, last = run.steps[0], run.steps[-1]
        n = len(run.steps)
        args = [
            (name, f"{n} submissions, laid out in {name}"),
            (run.device, "device"),
            (_tuple([s.step[CMD] for s in run.steps]), "command buffers, one per submission"),
            (_tuple(list(run.outside)), "buffers from before the run"),
            (_tuple(list(run.fences)), "wait fences"),
            (_tuple(list(run.scalars)), "flags, sizes, offsets, lengths, timeouts"),
        ]
        call = f"{self.helper_local()}(\n" + "".join(f"{a},  # {label}\n" for a, label in args) + ")"
        reads = frozenset(n for a, _ in args[1:] for n in _REGISTER.findall(a))
        targets = tuple(reg for reg, _ in outputs) + (run.status,)
        stmts: list[Stmt] = [
            Comment(first.prov, f"fused: {n} submissions, each [queue.alloca,] execute.indirect, awaited"),
            Assign(last.prov, targets, call, reads),
        ]
        emptied = [r for r in run.emptied if r not in run.holder]
        if emptied:
            stmts.append(Release(last.prov, emptied))
        stmts.append(run.check)
        return stmts


def _tuple(items: list[str]) -> str:
    if len(items) == 1:
        return f"({items[0]},)"
    return f"({', '.join(items)})"


__all__ = ["RunTable"]
