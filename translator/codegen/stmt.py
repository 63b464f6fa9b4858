"""The statement tree: what VM ops lower to before any Python text exists.

Ops lower to these nodes (`ops.py`), the structurer nests them into `If`/`While`
(`function.py`), small passes tidy the tree (`passes.py`) and the printer turns it into
lines with the statement forms of `templates/statements.toml` (`printer.py`).

Expressions (`Assign.value`, `If.test`) are Python expression text built by `ops.py` from
register names, helper names and checked literals; statements never hold vmfb text
except in fields the printer escapes (`Raise.message`, `Comment.text`, provenance).
Every node lowered from an op carries its `Provenance`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Provenance:
    function: str  # the VM function's display name
    pc: int
    opcode: str  # VM mnemonic, e.g. "call.variadic"
    location: str | None  # compact MLIR source location (raw text; printed as a comment)
    file: str | None = None  # the file of a plain file:line:col location
    callee: str | None = None  # a call's VM callee (`hal.fence.await`, `@fn`); raw text

    @property
    def what(self) -> str:
        """What the op does, as a reader of `--dump` finds it: the callee of a call."""
        return self.callee if self.callee is not None else f"vm.{self.opcode}"


@dataclass(slots=True)
class Stmt:
    prov: Provenance | None


@dataclass(slots=True)
class Assign(Stmt):
    """`targets = value`; `reads` names the locals the value reads; `unpack`: the value
    is a tuple, unpacked into the targets even where there is one (`(r8,) = value`)."""

    targets: tuple[str, ...]
    value: str
    reads: frozenset[str] = frozenset()
    note: str | None = None  # a trailing comment (e.g. the HAL enum a constant is)
    unpack: bool = False


@dataclass(slots=True)
class Call(Stmt):
    """A call whose result (if any) is dropped."""

    value: str
    reads: frozenset[str] = frozenset()


@dataclass(slots=True)
class Release(Stmt):
    """Ref locals set to None: ownership moved away or the value is dead."""

    names: list[str]


@dataclass(slots=True)
class Raise(Stmt):
    """`raise vm_fail(status, message, function, location)`.

    `message` is raw vmfb text; `message_name`, when a pass hoisted the message to a
    module constant, is that constant's name.
    """

    status: str
    message: str
    function: str
    location: str | None
    message_name: str | None = None


@dataclass(slots=True)
class Return(Stmt):
    values: tuple[str, ...]


@dataclass(slots=True)
class If(Stmt):
    """`if test: body else: orelse`; an `orelse` of one `If` prints as `elif`."""

    test: str
    body: list[Stmt]
    orelse: list[Stmt] = field(default_factory=list)


@dataclass(slots=True)
class While(Stmt):
    """`while True: body` (loops exit by break/return/raise)."""

    body: list[Stmt]


@dataclass(slots=True)
class Break(Stmt):
    pass


@dataclass(slots=True)
class Continue(Stmt):
    pass


@dataclass(slots=True)
class Comment(Stmt):
    """A comment line (raw text; printed through escape.comment_text)."""

    text: str


def ends_control(body: list[Stmt]) -> bool:
    """True when control never falls off the end of `body`."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (Return, Raise, Break, Continue)):
        return True
    if isinstance(last, If):
        return bool(last.orelse) and ends_control(last.body) and ends_control(last.orelse)
    return False


def assigned_names(stmts: list[Stmt], out: set[str] | None = None) -> set[str]:
    """Every local assigned anywhere in `stmts` (nested bodies included)."""
    out = set() if out is None else out
    for s in stmts:
        if isinstance(s, Assign):
            out.update(s.targets)
        elif isinstance(s, If):
            assigned_names(s.body, out)
            assigned_names(s.orelse, out)
        elif isinstance(s, While):
            assigned_names(s.body, out)
    return out
