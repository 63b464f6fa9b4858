"""Typed errors raised by the translator."""

from __future__ import annotations

from runtime_support.errors import one_line, quote_name

__all__ = ["TranslatorError", "InvalidModuleError", "OutputFolderError", "quote_name"]


class TranslatorError(Exception):
    """Base class of translator errors."""


class InvalidModuleError(TranslatorError):
    """A malformed or unsupported .vmfb.

    Carries where the problem is: a byte offset into the file, or a function and a
    pc inside its bytecode, so that the CLI can print one precise line. Names from the
    vmfb are quoted with `quote_name` where a message cites them; the formatted text is
    one line whatever they hold.
    """

    def __init__(
        self,
        reason: str,
        *,
        offset: int | None = None,
        function: str | None = None,
        pc: int | None = None,
        path: str | None = None,
    ) -> None:
        self.reason = reason
        self.offset = offset
        self.function = function
        self.pc = pc
        self.path = path
        super().__init__(self._format())

    def _format(self) -> str:
        parts = []
        if self.path is not None:
            parts.append(str(self.path))
        if self.function is not None:
            name = str(self.function)
            where = f"function {name if name.isprintable() else quote_name(name)}"
            if self.pc is not None:
                where += f" pc 0x{self.pc:08X}"
            parts.append(where)
        elif self.offset is not None:
            parts.append(f"byte offset {self.offset}")
        parts.append(self.reason)
        return one_line(": ".join(parts))

    def with_path(self, path: str) -> "InvalidModuleError":
        """Returns a copy of this error that names the input file."""
        return InvalidModuleError(
            self.reason, offset=self.offset, function=self.function, pc=self.pc, path=path
        )


class OutputFolderError(TranslatorError):
    """The package cannot go where it was asked to: OUT_DIR/NAME exists and is not a
    package pyree wrote (replacing it could destroy a user's files)."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))
