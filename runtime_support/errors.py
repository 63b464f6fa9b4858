"""Typed runtime errors with IREE status codes."""

from __future__ import annotations

import enum


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
        if self.function:
            text += f"; in {self.function}"
        if self.location:
            text += f" at {self.location}"
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
