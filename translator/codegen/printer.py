"""Statement tree -> lines of Python, with the forms of `templates/statements.toml`.

The printer adds indentation, the source-location comment where the location changes,
and (with `provenance=True`: `--provenance`, or a function without source locations) one
VM comment per statement group (`provenance_groups`); vmfb text goes through `escape.py`
only.
"""

from __future__ import annotations

from translator.codegen.statement_forms import (
    RELEASE_JOIN,
    RELEASES_PER_LINE,
    SEPARATOR,
    STATEMENTS as S,
)
from translator.codegen.escape import comment_text, string_literal
from translator.codegen.stmt import (
    Assign,
    Break,
    Call,
    Comment,
    Continue,
    If,
    Raise,
    Release,
    Return,
    Stmt,
    While,
)

INDENT = "    "


_CONTROL = (If, While, Return, Raise)
GROUP_NAMES = 3  # names shown per provenance comment, at most
GROUP_TEXT = 64  # characters of names, so that the comment line stays short


def provenance_groups(body: list[Stmt]) -> dict[int, tuple[int, int, list[str]]]:
    """Index of each group's first statement -> (first pc, last pc, what it does).

    A group is a straight run of statements lowered from ops, up to and including the
    next control statement (`if`, `while`, `return`, `raise`): one comment per group, so
    a hundred lines of host calls between two fence checks get one. It names the calls
    the group makes (`hal.command_buffer.dispatch`), else its ops (`vm.add.i32`). A
    group that is only a control statement speaks for itself and gets none.
    """
    heads: dict[int, tuple[int, int, list[str]]] = {}
    start: int | None = None
    pcs: list[int] = []
    calls: list[str] = []
    ops: list[str] = []

    def close() -> None:
        if start is not None and (calls or ops):
            heads[start] = (min(pcs), max(pcs), list(dict.fromkeys(calls or ops)))

    for i, s in enumerate(body):
        if s.prov is None:
            continue
        if start is None:
            start, pcs, calls, ops = i, [], [], []
        pcs.append(s.prov.pc)
        control = isinstance(s, _CONTROL)
        if s.prov.callee is not None:
            calls.append(s.prov.callee)
        elif not control and not isinstance(s, Release):
            ops.append(s.prov.what)
        if control:
            close()
            start = None
    close()
    return heads


def provenance_text(first: int, last: int, names: list[str]) -> str:
    n = 1
    while n < min(len(names), GROUP_NAMES) and len(", ".join(names[: n + 1])) <= GROUP_TEXT:
        n += 1
    shown = ", ".join(names[:n])
    if len(names) > n:
        shown += f" (+{len(names) - n} more)"
    pcs = f"{first:#x}" if first == last else f"{first:#x}-{last:#x}"
    return S["Provenance"].format(pcs=pcs, what=comment_text(shown))


class Printer:
    def __init__(self, provenance: bool = False) -> None:
        self.provenance = provenance
        self.lines: list[str] = []
        self._location: str | None = None
        self._file: str | None = None

    def function_body(self, body: list[Stmt]) -> list[str]:
        self.lines = []
        self._location = None
        self._file = None
        self.block(body, "")
        return self.lines

    def block(self, body: list[Stmt], indent: str) -> None:
        start = len(self.lines)
        heads = provenance_groups(body) if self.provenance else {}
        for i, s in enumerate(body):
            head = heads.get(i)
            if head is not None:
                self._mark(s, indent)  # the location comes first, then the VM comment
                self.lines.append(indent + provenance_text(*head))
            self.stmt(s, indent)
        if all(line.lstrip().startswith("#") for line in self.lines[start:]):
            self.lines.append(indent + S["Pass"])

    def _mark(self, s: Stmt, indent: str) -> None:
        prov = s.prov
        if prov is None:
            return
        if prov.location is not None and prov.location != self._location:
            self._location = prov.location
            text = prov.location
            if prov.file is not None:
                # Same file as the last location printed: only the line and column.
                if prov.file == self._file and text.startswith(prov.file + ":"):
                    text = S["Line"].format(position=text[len(prov.file) + 1 :])
                self._file = prov.file
            self.lines.append(indent + S["Comment"].format(text=comment_text(text)))

    def stmt(self, s: Stmt, indent: str) -> None:
        self._mark(s, indent)
        out = self.lines
        t = type(s)
        if t is Assign:
            targets = SEPARATOR.join(s.targets)
            if s.unpack and len(s.targets) == 1:
                targets = S["One"].format(target=targets)
            line = S["Assign"].format(targets=targets, value=s.value)
            if s.note:
                line = S["Note"].format(statement=line, text=comment_text(s.note))
            out.append(indent + line)
        elif t is Call:
            out.append(indent + S["Call"].format(value=s.value))
        elif t is Release:
            for i in range(0, len(s.names), RELEASES_PER_LINE):
                names = RELEASE_JOIN.join(s.names[i : i + RELEASES_PER_LINE])
                out.append(indent + S["Release"].format(names=names))
        elif t is Raise:
            message = s.message_name or string_literal(s.message)
            location = "None" if s.location is None else string_literal(s.location)
            out.append(
                indent
                + S["Raise"].format(
                    status=s.status, message=message, function=string_literal(s.function), location=location
                )
            )
        elif t is Return:
            if s.values:
                out.append(indent + S["Return"].format(values=SEPARATOR.join(s.values)))
            else:
                out.append(indent + S["ReturnNothing"])
        elif t is If:
            self._if(s, indent, "If")
        elif t is While:
            out.append(indent + S["While"])
            self.block(s.body, indent + INDENT)
        elif t is Break:
            out.append(indent + S["Break"])
        elif t is Continue:
            out.append(indent + S["Continue"])
        elif t is Comment:
            out.append(indent + S["Comment"].format(text=comment_text(s.text)))
        else:
            raise TypeError(f"no printed form for {t.__name__}")

    def _if(self, s: If, indent: str, word: str) -> None:
        while True:
            self.lines.append(indent + S[word].format(test=s.test))
            self.block(s.body, indent + INDENT)
            orelse = s.orelse
            if not orelse:
                return
            if len(orelse) == 1 and type(orelse[0]) is If and orelse[0].prov is None:
                s, word = orelse[0], "Elif"
                continue
            self.lines.append(indent + S["Else"])
            self.block(orelse, indent + INDENT)
            return
