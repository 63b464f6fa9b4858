"""Small passes over a function's statement tree, run before printing.

- `trim_ref_init`: refs assigned before any read need no opening `= None`.
- `tidy_releases`: drops releases of locals already known to be None (the function's
  initial `r0 = r1 = None` makes most first releases redundant) and releases the very
  next statement overwrites or a `return`/`raise` ends anyway; merges adjacent release
  chains.
- `tidy_ifs`: `if c: <nothing> else: X` becomes `if not c: X`.
- `MessageTable.hoist`: `vm.fail` messages longer than a line become module constants
  (`MESSAGE_3`), so a 2 KB target description does not sit inside a `raise`.

None of them changes behaviour: releases only drop references that are already None or
replaced one statement later.
"""

from __future__ import annotations

from templates.statements import STATEMENTS
from translator.codegen.stmt import (
    Assign,
    Call,
    Comment,
    If,
    Raise,
    Release,
    Return,
    Stmt,
    While,
    assigned_names,
    ends_control,
)

LONG_MESSAGE = 60


def trim_ref_init(body: list[Stmt]) -> list[Stmt]:
    """Drops refs from the function's opening `rX = None` that straight-line code assigns
    before anything reads them (the opening release must be `body[0]`)."""
    if not body or not isinstance(body[0], Release) or body[0].prov is not None:
        return body
    pending = set(body[0].names)
    dropped: set[str] = set()
    for s in body[1:]:
        if not pending:
            break
        if isinstance(s, (Assign, Call)):
            pending -= s.reads
            if isinstance(s, Assign):
                dropped |= pending & set(s.targets)
                pending -= set(s.targets)
        elif isinstance(s, Release):
            dropped |= pending & set(s.names)
            pending -= set(s.names)
        elif not isinstance(s, Comment):
            break
    names = [n for n in body[0].names if n not in dropped]
    return ([Release(None, names)] if names else []) + body[1:]


def tidy_releases(body: list[Stmt]) -> list[Stmt]:
    out, _ = _releases(body, set())
    return out


def _releases(body: list[Stmt], none: set[str]) -> tuple[list[Stmt], set[str]]:
    """Returns the rewritten body and the locals known None where it falls through."""
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, Release):
            names = [n for n in dict.fromkeys(s.names) if n not in none]
            none.update(names)
            if not names:
                continue
            if out and isinstance(out[-1], Release):
                out[-1].names.extend(names)
                continue
            s.names = names
        elif isinstance(s, Assign):
            if out and isinstance(out[-1], Release):
                prev = out[-1]
                keep = [n for n in prev.names if n not in s.targets or n in s.reads]
                if len(keep) != len(prev.names):
                    if keep:
                        prev.names = keep
                    else:
                        out.pop()
            none.difference_update(s.targets)
        elif isinstance(s, Return):
            # Returning frees every local at once; releasing some just before is noise.
            if out and isinstance(out[-1], Release):
                keep = [n for n in out[-1].names if n in s.values]
                if keep:
                    out[-1].names = keep
                else:
                    out.pop()
        elif isinstance(s, Raise):
            # So does raising (the frame's locals go with the exception's traceback), and
            # a raise reads no ref: the releases just before it are noise.
            while out and isinstance(out[-1], Release):
                out.pop()
        elif isinstance(s, If):
            s.body, after_body = _releases(s.body, set(none))
            s.orelse, after_else = _releases(s.orelse, set(none))
            ends = [a for arm, a in ((s.body, after_body), (s.orelse, after_else)) if not ends_control(arm)]
            none = set.intersection(*ends) if ends else set()
        elif isinstance(s, While):
            inside = none - assigned_names(s.body)
            s.body, _ = _releases(s.body, set(inside))
            none = inside
        out.append(s)
    return out, none


def tidy_ifs(body: list[Stmt]) -> None:
    for s in body:
        if isinstance(s, If):
            tidy_ifs(s.body)
            tidy_ifs(s.orelse)
            if not s.body and s.orelse:
                s.test = STATEMENTS["Not"].format(test=s.test)
                s.body, s.orelse = s.orelse, []
        elif isinstance(s, While):
            tidy_ifs(s.body)


class MessageTable:
    """Long `vm.fail` messages, hoisted to module constants (one per distinct text)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def hoist(self, body: list[Stmt]) -> None:
        for s in body:
            if isinstance(s, Raise) and len(s.message) > LONG_MESSAGE:
                name = self.names.get(s.message)
                if name is None:
                    name = self.names[s.message] = f"MESSAGE_{len(self.names)}"
                s.message_name = name
            elif isinstance(s, If):
                self.hoist(s.body)
                self.hoist(s.orelse)
            elif isinstance(s, While):
                self.hoist(s.body)

    def constants(self) -> list[tuple[str, str]]:
        """(name, message) pairs in first-use order."""
        return [(name, text) for text, name in self.names.items()]
