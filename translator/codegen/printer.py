"""Statement tree -> lines of Python, with the forms of `templates/statements.py`.

The printer adds indentation, the source-location comment where the location changes,
and (with `provenance=True`, or for functions without a source map) a `# pc 0x42 vm.op`
comment per op; vmfb text goes through `escape.py` only.
"""

from __future__ import annotations

from templates.statements import (
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


class Printer:
    def __init__(self, provenance: bool = False) -> None:
        self.provenance = provenance
        self.lines: list[str] = []
        self._location: str | None = None
        self._file: str | None = None
        self._pc: int | None = None

    def function_body(self, body: list[Stmt]) -> list[str]:
        self.lines = []
        self._location = None
        self._file = None
        self._pc = None
        self.block(body, "")
        return self.lines

    def block(self, body: list[Stmt], indent: str) -> None:
        start = len(self.lines)
        for s in body:
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
        if self.provenance and prov.pc != self._pc:
            self._pc = prov.pc
            self.lines.append(indent + S["Provenance"].format(pc=prov.pc, opcode=comment_text(prov.opcode)))

    def stmt(self, s: Stmt, indent: str) -> None:
        self._mark(s, indent)
        out = self.lines
        t = type(s)
        if t is Assign:
            line = S["Assign"].format(targets=SEPARATOR.join(s.targets), value=s.value)
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
