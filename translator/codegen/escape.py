"""The one path by which text from a vmfb reaches generated source.

A vmfb is untrusted: module, function, import and export names, declarations, attribute
values, messages and file names can hold any text, quotes and line breaks included. They
reach generated code only as

- `string_literal(text)`: a Python literal made by `repr()`, checked to read back as the
  same text (so no character can end the literal early);
- `docstring_literal(text)`: a triple-quoted literal when the text cannot close or escape
  one, else the `repr()` literal;
- `comment_text(text)`: the body of a `#` comment, printable ASCII on one line.

Identifiers go through `names.identifier`, which keeps [A-Za-z0-9_] only.
"""

from __future__ import annotations

import ast
import re

_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")
# Plain docstring text: printable ASCII and newlines, no quotes or backslashes at all.
_PLAIN_DOC = re.compile(r"[\x20-\x21\x23-\x5b\x5d-\x7e\n]*")


def string_literal(text: str) -> str:
    literal = repr(text)
    if ast.literal_eval(literal) != text or "\n" in literal or "\r" in literal:
        raise AssertionError(f"repr() did not make a one-line literal of {literal[:80]}")
    return literal


def docstring_literal(text: str) -> str:
    if _PLAIN_DOC.fullmatch(text):
        return '"""' + text + '"""'
    return string_literal(text)


def comment_text(text: str, limit: int = 200) -> str:
    """Text safe inside a `#` comment: one line, printable ASCII only."""
    text = _UNPRINTABLE.sub("?", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."
