"""Small passes over a function's statement tree, run before printing.

- `trim_ref_init`: refs assigned before any read need no opening `= None`.
- `tidy_releases`: drops releases of locals already known to be None (the function's
  initial `r0 = r1 = None` makes most first releases redundant) and releases the very
  next statement overwrites or a `return`/`raise` ends anyway; merges adjacent release
  chains.
- `tidy_ifs`: `if c: <nothing> else: X` becomes `if not c: X`.
- `drop_unread_constants`: `i3 = 3075` where nothing in the function reads `i3` (a
  constant whose only readers became literals of a queue program).
- `MessageTable.hoist`: `vm.fail` messages longer than a line become module constants
  (`MESSAGE_3`), so a 2 KB target description does not sit inside a `raise`.

None of them changes behaviour: releases only drop references that are already None or
replaced one statement later, and a dropped constant is an integer nothing reads.
"""

from __future__ import annotations

import re

from translator.codegen.statement_forms import STATEMENTS
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


_INT_LITERAL = re.compile(r"-?\d+")
_NAME = re.compile(r"[A-Za-z_]\w*")


def drop_unread_constants(body: list[Stmt]) -> list[Stmt]:
    """Drops `iN = <integer>` statements whose local no statement of the function reads
    (after queue programs took their readers' operands as literals, IREE's hoisted
    constants are often read by nothing). A read is a name in any statement's `reads`
    or in any text a statement prints (conservative: a name that appears is kept)."""
    read: set[str] = set()
    _collect_reads(body, read)
    return _drop_constants(body, read)


def _collect_reads(body: list[Stmt], read: set[str]) -> None:
    for s in body:
        if isinstance(s, (Assign, Call)):
            read |= s.reads
            read.update(_NAME.findall(s.value))
        elif isinstance(s, If):
            read.update(_NAME.findall(s.test))
            _collect_reads(s.body, read)
            _collect_reads(s.orelse, read)
        elif isinstance(s, While):
            _collect_reads(s.body, read)
        elif isinstance(s, Return):
            for v in s.values:
                read.update(_NAME.findall(v))
        elif isinstance(s, Raise):
            read.update(_NAME.findall(s.status))


def _drop_constants(body: list[Stmt], read: set[str]) -> list[Stmt]:
    out = []
    for s in body:
        if (
            type(s) is Assign
            and len(s.targets) == 1
            and s.targets[0] not in read
            and s.targets[0][:1] == "i"
            and _INT_LITERAL.fullmatch(s.value)
        ):
            continue
        if isinstance(s, If):
            s.body = _drop_constants(s.body, read)
            s.orelse = _drop_constants(s.orelse, read)
        elif isinstance(s, While):
            s.body = _drop_constants(s.body, read)
        out.append(s)
    return out


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
