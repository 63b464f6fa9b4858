"""A `cuda-nvptx-fb` executable loaded into a CUDA context, and its launches.

Loading follows IREE's CUDA HAL (runtime/src/iree/hal/drivers/cuda/native_executable.c):
each module image goes to the driver (`cuModuleLoadDataEx`; PTX is JIT-compiled there),
each export is looked up by its kernel name (`cuModuleGetFunction`), and an export whose
dynamic shared memory exceeds the default 48 KiB gets the opt-in attribute
(`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).

A launch (`stream_command_buffer.c`): grid = the workgroup count, block = the export's
block dimensions, shared memory = its dynamic size, and the kernel parameters are every
binding's device pointer (buffer base + offsets already applied) followed by every 32-bit
constant. `plan()` turns one dispatch into a `Launch` record, so a recorded command buffer
replays as a prepared launch list with no per-dispatch Python work beyond the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from runtime_support.cuda.driver import driver_error
from runtime_support.cuda.executable_def import CudaExecutableDef, CudaExport, read_cuda_executable
from runtime_support.errors import StatusCode, VMError
from runtime_support.hal.executable import HalExecutable

DEFAULT_DYNAMIC_SHARED_BYTES = 48 * 1024
# cuLaunchKernel's grid limits (every architecture since sm_30).
MAX_GRID = (2**31 - 1, 65535, 65535)


@dataclass(frozen=True)
class Launch:
    """One kernel launch, ready for `Function.prepared_async_call`."""

    export: str
    function: object
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    args: tuple[int, ...]  # binding pointers (format 'P'), then constants (format 'I')

    def run(self, stream) -> None:
        try:
            self.function.prepared_async_call(self.grid, self.block, stream, *self.args, shared_size=self.shared_bytes)
        except Exception as e:
            raise driver_error("cuLaunchKernel", e, export=self.export) from None

    def run_with(self, stream, pointers, grid=None) -> None:
        """This launch with other binding pointers (a binding table's) and, for indirect
        dispatches, another grid (already checked by `CudaExecutable.check_grid`)."""
        args = (*pointers, *self.args[len(pointers) :])
        try:
            self.function.prepared_async_call(
                grid or self.grid, self.block, stream, *args, shared_size=self.shared_bytes
            )
        except Exception as e:
            raise driver_error("cuLaunchKernel", e, export=self.export) from None


class CudaExecutable:
    format = "cuda-nvptx-fb"

    def __init__(self, driver, data: bytes | memoryview) -> None:
        self.definition: CudaExecutableDef = read_cuda_executable(data)
        self.exports: tuple[CudaExport, ...] = self.definition.exports
        self._modules = []
        for i, module in enumerate(self.definition.modules):
            try:
                # PTX goes to the driver as a C string: NUL-terminated (as the FlatBuffer
                # string IREE passes is); a cubin as is.
                image = module.image + b"\0" if module.is_ptx else module.image
                self._modules.append(driver.module_from_buffer(image))
            except Exception as e:
                raise driver_error(f"cuModuleLoadDataEx of module {i}", e) from None
        self._functions = []
        for e in self.exports:
            try:
                fn = self._modules[e.module_ordinal].get_function(e.kernel_name)
                if e.shared_memory_size > DEFAULT_DYNAMIC_SHARED_BYTES:
                    fn.set_attribute(
                        driver.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, e.shared_memory_size
                    )
                fn.prepare("P" * e.binding_count + "I" * e.constant_count)
            except Exception as err:
                raise driver_error("cuModuleGetFunction", err, export=e.kernel_name) from None
            self._functions.append(fn)

    def lookup(self, name: str | bytes) -> int:
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        for e in self.exports:
            if e.kernel_name == name:
                return e.ordinal
        raise VMError(StatusCode.NOT_FOUND, f"executable has no export {name!r}")

    def check_grid(self, ordinal: int, workgroup_count: Sequence[int]) -> tuple[int, int, int]:
        grid = tuple(int(c) for c in workgroup_count)
        if len(grid) != 3 or any(not 0 <= g <= m for g, m in zip(grid, MAX_GRID)):
            raise VMError(
                StatusCode.OUT_OF_RANGE,
                f"workgroup count {grid} of kernel {self.exports[ordinal].kernel_name!r} exceeds CUDA's grid {MAX_GRID}",
            )
        return grid

    def plan(
        self,
        ordinal: int,
        workgroup_count: Sequence[int],
        constants: Sequence[int],
        binding_pointers: Sequence[int],
    ) -> Launch:
        if not 0 <= ordinal < len(self.exports):
            raise VMError(StatusCode.OUT_OF_RANGE, f"export ordinal {ordinal} of {len(self.exports)}")
        e = self.exports[ordinal]
        if len(constants) != e.constant_count or len(binding_pointers) != e.binding_count:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"kernel {e.kernel_name!r} takes {e.binding_count} bindings and {e.constant_count} "
                f"constants; the dispatch passes {len(binding_pointers)} and {len(constants)}",
            )
        grid = self.check_grid(ordinal, workgroup_count)
        args = tuple(int(p) & 0xFFFFFFFFFFFFFFFF for p in binding_pointers) + tuple(
            int(c) & 0xFFFFFFFF for c in constants
        )
        return Launch(e.kernel_name, self._functions[ordinal], grid, e.block_dims, e.shared_memory_size, args)

    def dispatch(self, stream, ordinal, workgroup_count, constants, binding_pointers) -> None:
        launch = self.plan(ordinal, workgroup_count, constants, binding_pointers)
        if 0 not in launch.grid:  # an empty grid launches nothing, as in IREE
            launch.run(stream)



class CudaHalExecutable(HalExecutable):
    """A `!hal.executable` of the cuda device; `native` is its CudaExecutable."""

    @classmethod
    def load(cls, device, data, constants=None) -> "CudaHalExecutable":
        return cls(CudaExecutable(device.driver, data), device=device, format=CudaExecutable.format)

    def export_names(self) -> list[str]:
        return [e.kernel_name for e in self.native.exports]

    def dispatch(self, ordinal, workgroup_count, constants, bindings, workers=1):
        raise VMError(StatusCode.INTERNAL, "cuda executables launch through cuda command buffers only")


__all__ = ["CudaExecutable", "CudaHalExecutable", "Launch"]
