"""A test double of `pycuda.driver`: no GPU, every call recorded and checked.

This is not a CUDA implementation. It stands in for pycuda so that pyree's CUDA code runs
on machines without a GPU, and it checks what the real driver would reject: a module image
must be PTX text whose `.entry` names the function asked for, a prepared format must match
the `.entry` parameter list (`P` for each `.u64` pointer, `I` for each `.b32`), a launch
must pass that many arguments with pointers 16-byte aligned (the PTX's `.align 16`) and
constants within 32 bits, and block and grid must fit CUDA's limits. `calls` is the log.
"""

from __future__ import annotations

import re
import types

_ENTRY = re.compile(r"\.entry\s+(\S+)\s*\((.*?)\)", re.S)


def ptx_entries(ptx: str) -> dict[str, list[str]]:
    """`.entry` name -> its parameter types (`.u64` pointer or `.b32`), in order."""
    out = {}
    for name, params in _ENTRY.findall(ptx):
        kinds = []
        for p in params.split(","):
            words = p.split()
            if ".param" in words:
                kinds.append(words[words.index(".param") + 1])
        out[name] = kinds
    return out


class DriverDoubleError(Exception):
    """What the real driver would report as an error."""


function_attribute = types.SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES="MAX_DYNAMIC_SHARED_SIZE_BYTES")


class PyCudaDriverDouble:
    """Used as the `pycuda.driver` module: `PyCudaDriverDouble(devices=1)`."""

    def __init__(self, devices: int = 1) -> None:
        self.calls: list[tuple] = []
        self.function_attribute = function_attribute
        double = self

        class Device:
            @staticmethod
            def count():
                double.calls.append(("Device.count",))
                return devices

        self.Device = Device

    def init(self):
        self.calls.append(("init",))

    def module_from_buffer(self, image):
        if not isinstance(image, (bytes, bytearray)):
            raise DriverDoubleError(f"module image must be bytes, got {type(image).__name__}")
        text = bytes(image).decode("ascii")  # PTX is ASCII; a decode error is a bad image
        if "\0" in text or ".version" not in text or ".target" not in text:
            raise DriverDoubleError("CUDA_ERROR_INVALID_PTX: not a PTX module")
        entries = ptx_entries(text)
        self.calls.append(("module_from_buffer", len(image), sorted(entries)))
        return _Module(self, entries)


class _Module:
    def __init__(self, driver, entries) -> None:
        self.driver = driver
        self.entries = entries

    def get_function(self, name):
        if name not in self.entries:
            raise DriverDoubleError(f"CUDA_ERROR_NOT_FOUND: no kernel {name!r}")
        self.driver.calls.append(("get_function", name))
        return _Function(self.driver, name, self.entries[name])


class _Function:
    def __init__(self, driver, name, params) -> None:
        self.driver = driver
        self.name = name
        self.params = params
        self.format = None

    def set_attribute(self, attribute, value):
        if not isinstance(value, int) or value < 0:
            raise DriverDoubleError("CUDA_ERROR_INVALID_VALUE")
        self.driver.calls.append(("set_attribute", self.name, attribute, value))

    def prepare(self, fmt):
        expected = "".join({".u64": "P", ".b32": "I"}[k] for k in self.params)
        if fmt != expected:
            raise DriverDoubleError(f"format {fmt!r} does not match the kernel's parameters {expected!r}")
        self.format = fmt
        self.driver.calls.append(("prepare", self.name, fmt))

    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        if self.format is None:
            raise DriverDoubleError("prepared_async_call before prepare")
        if len(args) != len(self.format):
            raise DriverDoubleError(f"{len(args)} arguments for format {self.format!r}")
        for kind, value in zip(self.format, args):
            if not isinstance(value, int):
                raise DriverDoubleError(f"argument {value!r} is not an int")
            if kind == "P" and (not 0 <= value < 2**64 or value % 16):
                raise DriverDoubleError(f"pointer 0x{value:x} is not a 16-byte aligned device address")
            if kind == "I" and not 0 <= value < 2**32:
                raise DriverDoubleError(f"constant {value} does not fit 32 bits")
        if len(block) != 3 or block[0] * block[1] * block[2] > 1024:
            raise DriverDoubleError("CUDA_ERROR_INVALID_VALUE: block too large")
        if len(grid) != 3 or min(grid) < 1:
            raise DriverDoubleError("CUDA_ERROR_INVALID_VALUE: bad grid")
        self.driver.calls.append(
            ("launch", self.name, tuple(grid), tuple(block), shared_size, stream, tuple(args))
        )
