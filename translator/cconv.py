"""Calling-convention strings (vmfb-format.md §7.2).

    cconv    := '0' fragment [ '_' fragment ]
    fragment := 'v' | item*                  ('v' alone, or empty: no values)
    item     := 'i' | 'I' | 'f' | 'F' | 'r' | span
    span     := 'C' scalar+ 'D'              (no nesting; one variadic argument)

`parse_cconv("0rrIiiiICiDCiirIID_v")` gives arguments
`('r', 'r', 'I', 'i', 'i', 'i', 'I', ('i',), ('i', 'i', 'r', 'I', 'I'))` and results `()`.
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.errors import InvalidModuleError

# One value: 'i' i32, 'I' i64, 'f' f32, 'F' f64, 'r' ref. A span is a tuple of values.
VALUE_CODES = frozenset("iIfFr")
Item = str | tuple[str, ...]

# How iree-dump-module names each value code.
DUMP_TYPE_NAMES = {"i": "i32", "I": "i64", "f": "f32", "F": "f64", "r": "!vm.ref<?>"}


@dataclass(frozen=True)
class CConv:
    text: str
    arguments: tuple[Item, ...]
    results: tuple[Item, ...]

    @property
    def has_spans(self) -> bool:
        return any(isinstance(x, tuple) for x in self.arguments + self.results)


def _error(text: str, why: str, function: str | None) -> InvalidModuleError:
    return InvalidModuleError(
        f"malformed calling convention {text!r}: {why}", function=function
    )


def parse_fragment(
    fragment: str, text: str = "", function: str | None = None
) -> tuple[Item, ...]:
    if fragment in ("", "v"):
        return ()
    items: list[Item] = []
    i = 0
    n = len(fragment)
    while i < n:
        c = fragment[i]
        if c in VALUE_CODES:
            items.append(c)
            i += 1
        elif c == "C":
            j = i + 1
            span: list[str] = []
            while j < n and fragment[j] in VALUE_CODES:
                span.append(fragment[j])
                j += 1
            if j >= n or fragment[j] != "D":
                why = (
                    "unterminated span"
                    if j >= n
                    else f"unexpected {fragment[j]!r} in span"
                )
                raise _error(text or fragment, why, function)
            if not span:
                raise _error(text or fragment, "empty span", function)
            items.append(tuple(span))
            i = j + 1
        else:
            raise _error(text or fragment, f"unexpected {c!r}", function)
    return tuple(items)


def split_cconv(text: str, function: str | None = None) -> tuple[str, str]:
    """(argument fragment, result fragment) of a cconv string, checking the version."""
    if text == "":
        return "", ""
    if text[0] != "0":
        raise _error(text, "unsupported version (must start with '0')", function)
    body = text[1:]
    args, sep, results = body.partition("_")
    return args, results


def parse_cconv(text: str, function: str | None = None) -> CConv:
    """Parses a cconv; InvalidModuleError (naming `function`) when malformed."""
    args, results = split_cconv(text, function)
    return CConv(
        text=text,
        arguments=parse_fragment(args, text, function),
        results=parse_fragment(results, text, function),
    )


def format_items(items: tuple[Item, ...]) -> str:
    """Types as iree-dump-module prints them: `i32, tuple<i64>..., !vm.ref<?>`."""
    parts = []
    for item in items:
        if isinstance(item, tuple):
            parts.append(
                "tuple<" + ", ".join(DUMP_TYPE_NAMES[c] for c in item) + ">..."
            )
        else:
            parts.append(DUMP_TYPE_NAMES[item])
    return ", ".join(parts)
