"""Typed runtime errors with IREE status codes."""

from __future__ import annotations

import enum


def quote_name(name: str) -> str:
    """A name from a vmfb (function, export, import, module, file) as it appears in an
    error message: a quoted Python string literal. Line breaks (`\\n`, U+2028, U+0085...),
    control and format characters and lone surrogates come out escaped, so one error stays
    one line and the name reads back exactly (`eval(quote_name(x)) == x`)."""
    return repr(str(name))


def one_line(text: str) -> str:
    """`text` with every non-printable character escaped as in a Python literal: the last
    guard that keeps an error message built from vmfb names on one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _plain_or_quoted(text: str) -> str:
    return text if text.isprintable() else quote_name(text)


class StatusCode(enum.IntEnum):
    """IREE status codes (runtime/src/iree/base/status.h)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16
    DEFERRED = 17
    INCOMPATIBLE = 18

    @classmethod
    def from_code(cls, code: int) -> "StatusCode":
        code &= 0x1F
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


class RuntimeSupportError(Exception):
    """Base class of runtime errors."""


class VMError(RuntimeSupportError):
    """A failed VM invocation: `vm.fail`, a failed check, a bad buffer/list access...

    `code` is an IREE `StatusCode`; `function` and `location` say where (the VM function
    and, when the debug database has it, the MLIR source location).
    """

    def __init__(
        self,
        code: int | StatusCode,
        message: str,
        *,
        function: str | None = None,
        location: str | None = None,
    ) -> None:
        self.code = StatusCode.from_code(int(code))
        self.message = message
        self.function = function
        self.location = location
        super().__init__(self._format())

    def _format(self) -> str:
        text = f"{self.code.name}; {self.message}"
        # Function and location come from the vmfb: quoted unless plainly printable.
        if self.function:
            text += f"; in {_plain_or_quoted(self.function)}"
        if self.location:
            text += f" at {_plain_or_quoted(self.location)}"
        return text

    def with_context(self, function: str | None, location: str | None) -> "VMError":
        """Fills in function/location if not already known (innermost wins)."""
        if self.function is None and function is not None:
            self.function = function
        if self.location is None and location is not None:
            self.location = location
        self.args = (self._format(),)
        return self


class LoaderError(RuntimeSupportError):
    """An executable could not be loaded (bad ELF, unsupported relocation or format...)."""
