"""Argument checks shared by the import modules (`hal`, `hal_inline`, `hal_loader`,
`io_parameters`): what IREE's `*_check_deref` helpers do, with messages that name the
import (`hal_loader.executable.dispatch: argument 'executable' is null; ...`)."""

from __future__ import annotations

from ..errors import StatusCode, VMError


def error(code: StatusCode, module: str, name: str, message: str) -> VMError:
    return VMError(code, f"{module}.{name}: {message}")


def invalid(module: str, name: str, message: str) -> VMError:
    return error(StatusCode.INVALID_ARGUMENT, module, name, message)


def deref(value, cls, type_name: str, module: str, name: str, arg: str, nullable: bool = False):
    """`value` must be a `cls` (or None when `nullable`); INVALID_ARGUMENT otherwise."""
    if value is None:
        if nullable:
            return None
        raise invalid(module, name, f"argument '{arg}' is null; expected {type_name}")
    if not isinstance(value, cls):
        raise invalid(
            module, name, f"argument '{arg}' is {type(value).__name__}; expected {type_name}"
        )
    return value


def vm_bytes(value, module: str, name: str, arg: str, nullable: bool = False):
    """A `!vm.buffer` argument as (byte memoryview, readonly), or None when null and
    `nullable`. Accepts VMBuffer (`.data`, `.readonly`) and, for hosts and tests,
    bytes / bytearray / memoryview."""
    if value is None:
        if nullable:
            return None
        raise invalid(module, name, f"argument '{arg}' is null; expected !vm.buffer")
    if hasattr(value, "data") and hasattr(value, "readonly"):
        data = memoryview(value.data).cast("B")
        return data, bool(value.readonly) or data.readonly
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = memoryview(value).cast("B")
        return data, data.readonly
    raise invalid(module, name, f"argument '{arg}' is {type(value).__name__}; expected !vm.buffer")


def vm_text(value, module: str, name: str, arg: str) -> str:
    """A `!vm.buffer` argument holding a string (invalid UTF-8 replaced)."""
    data, _ = vm_bytes(value, module, name, arg)
    return bytes(data).decode("utf-8", errors="replace")
