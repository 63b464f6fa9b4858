"""The state of one loaded translated module, and the Python API generated packages expose.

A generated package calls `ModuleContext(...)` from its `load()`. The context creates the
device, the import modules (`hal`, `check`, ...), the globals and the rodata views,
resolves every import once (so calls are direct Python calls), binds the generated VM
functions to itself, runs `__init`, and exposes one method per export that takes and
returns numpy arrays and scalars (see ../shared/docs/contract.md).
"""

from __future__ import annotations

import keyword
import mmap
import os
import re
import threading
from pathlib import Path
from typing import Callable

from runtime_support import abi
from runtime_support.errors import StatusCode, VMError
from runtime_support.vm.buffer import VMBuffer
from runtime_support.vm.globals import RefGlobals, new_rwdata

DEVICES = ("local", "local-task", "local-sync", "cuda")


def make_device(device):
    """A device object from a name (`local`, `local-task`, `local-sync`) or a device."""
    from runtime_support.hal.device import LocalDevice

    if not isinstance(device, str):
        return device
    if device in ("local", "local-task"):
        return LocalDevice("local-task")
    if device == "local-sync":
        return LocalDevice("local-sync")
    if device == "cuda":
        raise ValueError("device 'cuda' is not supported by this build of pyree yet")
    raise ValueError(f"unknown device {device!r}; expected one of {', '.join(DEVICES)}")


def default_modules(device, parameters=None) -> dict[str, object]:
    """The import modules a context provides unless the caller overrides them."""
    from runtime_support.hal.module import HalModule
    from runtime_support.modules.check import CheckModule
    from runtime_support.modules.hal_inline import HalInlineModule
    from runtime_support.modules.hal_loader import HalLoaderModule
    from runtime_support.modules.io_parameters import IoParametersModule

    # `parameters`: None, [(scope, path)], {scope: path(s)}... (params.build_providers).
    # io_parameters is always there: without parameters a lookup fails with NOT_FOUND.
    return {
        "hal": HalModule([device]),
        "hal_inline": HalInlineModule(),
        "hal_loader": HalLoaderModule(),
        "check": CheckModule(),
        "io_parameters": IoParametersModule(parameters),
    }


def python_name(name: str) -> str:
    """An export name as a Python attribute name (`main$async` -> `main_async`)."""
    ident = re.sub(r"\W", "_", name, flags=re.ASCII) or "_"
    if ident[0].isdigit():
        ident = "_" + ident
    if keyword.iskeyword(ident):
        ident += "_"
    return ident


def vm_fail(status: int, message: str, function: str, location: str | None) -> VMError:
    """The error `vm.fail` raises (status is already known to be non-zero)."""
    return VMError(status, message, function=function, location=location)


class ModuleContext:
    """One instance of a translated module: independent of every other instance."""

    def __init__(
        self,
        *,
        package_file: str,
        bind: Callable[["ModuleContext"], dict[str, Callable]],
        imports: tuple[tuple[str, str, bool], ...],
        rodata: tuple[tuple[int, int], ...],
        global_bytes: int,
        global_refs: int,
        exports: dict[str, tuple[str, tuple[str, ...], tuple[str, ...], str | None]],
        device="local",
        parameters=None,
        modules: dict[str, object] | None = None,
    ) -> None:
        self.device = make_device(device)
        self.modules = default_modules(self.device, parameters)
        if modules:
            self.modules.update(modules)
        self.rwdata = new_rwdata(global_bytes)
        self.refs = RefGlobals(global_refs)
        self.rodata = self._map_rodata(Path(package_file).with_name("rodata.bin"), rodata)
        self.imports = tuple(self._resolve(name, cconv, optional) for name, cconv, optional in imports)
        # One call at a time per context: threads sharing a context (a user's thread pool)
        # queue up here. Re-entrant so a call that re-enters its own context (an import
        # module calling back) does not deadlock.
        self._lock = threading.RLock()
        self._functions = bind(self)
        self._exports: dict[str, Callable] = {}
        self._vm_exports: dict[str, Callable] = {}
        for export_name, (function, arg_codes, result_codes, declaration) in exports.items():
            wrapper = self._make_export(
                export_name, self._functions[function], arg_codes, result_codes, declaration
            )
            self._exports[export_name] = wrapper
            self._vm_exports[export_name] = self._functions[function]
            attr = python_name(export_name)
            if not hasattr(type(self), attr) and attr not in self.__dict__:
                setattr(self, attr, wrapper)
        # The VM's module lifecycle hooks, found by export name like IREE's context does.
        deinit = exports.get("__deinit")
        self._deinit = self._functions[deinit[0]] if deinit is not None else None
        init = exports.get("__init")
        if init is not None:
            self._call_vm("__init", self._functions[init[0]], ())

    # -- setup -----------------------------------------------------------------------
    @staticmethod
    def _map_rodata(path: Path, table) -> list[VMBuffer]:
        if not table:
            return []
        # A private copy-on-write mapping: the VM sees read-only buffers, yet kernels
        # that write into imported constants (hal-abi.md §I) touch only this context's
        # private pages, never the file or another context.
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            mapped = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY) if size else bytearray()
        view = memoryview(mapped)
        out = []
        for offset, length in table:
            if offset < 0 or length < 0 or offset + length > size:
                raise VMError(StatusCode.DATA_LOSS, f"{path}: rodata segment out of range")
            out.append(VMBuffer(view[offset : offset + length], readonly=True))
        return out

    def _resolve(self, full_name: str, cconv: str, optional: bool):
        module_name, _, rest = full_name.partition(".")
        module = self.modules.get(module_name)
        fn = None
        if module is not None:
            declared = getattr(module, "IMPORTS", {}).get(full_name)
            if declared is not None and declared != cconv:
                if optional:
                    return None
                raise VMError(
                    StatusCode.INVALID_ARGUMENT,
                    f"import {full_name} has calling convention {cconv!r} but the "
                    f"{module_name} module provides {declared!r}",
                )
            fn = getattr(module, rest.replace(".", "_"), None)
        if fn is None and not optional:
            raise VMError(
                StatusCode.NOT_FOUND,
                f"required import {full_name} is not provided "
                f"(module {module_name!r} {'lacks it' if module is not None else 'is not available'})",
            )
        return fn

    # -- calls -----------------------------------------------------------------------
    def _call_vm(self, name: str, fn: Callable, args: tuple):
        self._lock.acquire()
        try:
            return fn(*args)
        except VMError as e:
            raise e.with_context(name, None)
        finally:
            self._lock.release()

    def _make_export(
        self,
        name: str,
        fn: Callable,
        arg_codes: tuple[str, ...],
        result_codes: tuple[str, ...],
        declaration: str | None,
    ) -> Callable:
        """The numpy-level method for one export (arguments checked before any call).

        Coarse-fences exports take `(args..., wait_fence, signal_fence)` at the VM level:
        those declared `async`, and, since iree-turbine exports carry no declaration, those
        named `NAME$async` whose last two arguments are refs. They can be called two ways:

        * `ctx.main_async(x)`: the wrapper passes a null wait fence and a fresh signal fence,
          waits for it, and returns numpy results (like the synchronous export);
        * `ctx.main_async(x, wait_fence, signal_fence)` with fences from `ctx.create_fence()`
          (or None): nothing waits; the work runs once `wait_fence` is reached and results
          come back as device values (`HalBufferView`) that are valid once `signal_fence`
          is reached (`signal_fence.wait()`, then `.to_numpy()`). They can be passed on to
          the next call, fence-ordered, without a round trip through numpy.

        A ref argument takes a numpy array (made into a buffer view), None (a null ref) or
        a VM ref object (`HalBufferView`, `Fence`, ...) as is.
        """
        decl = abi.parse_declaration(declaration, name)
        codes = list(arg_codes)
        coarse_fences = codes[-2:] == ["r", "r"] and (
            decl.is_async if decl is not None else name.endswith("$async")
        )
        if coarse_fences:
            codes = codes[:-2]  # wait and signal fences
        arg_types = [t for _, t in decl.arguments] if decl else []
        arg_names = [n for n, _ in decl.arguments] if decl else []
        if len(arg_types) != len(codes):
            arg_types, arg_names = [None] * len(codes), [f"arg{i}" for i in range(len(codes))]
        result_types = [t for _, t in decl.results] if decl else []
        if len(result_types) != len(result_codes):
            result_types = [None] * len(result_codes)
        device = self.device
        hal = self.modules["hal"]
        from runtime_support.hal.fence import Fence
        from runtime_support.vm.refs import ref_type_name

        def convert(args):
            out = []
            for value, code, ty, arg in zip(args, codes, arg_types, arg_names):
                if code == "r":
                    if (
                        value is None
                        or ref_type_name(value) is not None
                        or not isinstance(ty, (abi.TensorType, type(None)))
                    ):
                        out.append(value)
                    else:
                        out.append(abi.to_buffer_view(value, arg, ty, device))
                else:
                    out.append(abi.to_scalar(value, arg, code))
            return out

        def results(result, convert_result):
            if not result_codes:
                return None
            if len(result_codes) == 1:
                return convert_result(result, result_types[0])
            return tuple(convert_result(v, t) for v, t in zip(result, result_types))

        def export(*args):
            user_fences = coarse_fences and len(args) == len(codes) + 2
            if len(args) != len(codes) and not user_fences:
                expected = f"{len(codes)} argument(s)"
                if coarse_fences:
                    expected += f" (or {len(codes) + 2} with wait and signal fences)"
                raise TypeError(f"{name}() takes {expected}, got {len(args)}")
            if user_fences:
                fences = args[len(codes) :]
                for label, fence in zip(("wait_fence", "signal_fence"), fences):
                    if fence is not None and not isinstance(fence, Fence):
                        raise TypeError(
                            f"{name}(): {label} must be a fence from create_fence() or None, "
                            f"got {type(fence).__name__}"
                        )
                vm_args = convert(args[: len(codes)]) + list(fences)
                result = self._call_vm(name, fn, tuple(vm_args))
                return results(result, lambda v, t: v)
            vm_args = convert(args)
            signal = None
            if coarse_fences:
                signal = hal.fence_create(device, 0)
                vm_args += [None, signal]
            result = self._call_vm(name, fn, tuple(vm_args))
            if signal is not None:
                hal.fence_await(-1, 0, [signal])
            return results(result, abi.from_vm)

        export.__name__ = python_name(name)
        export.__qualname__ = f"{type(self).__name__}.{export.__name__}"
        export.__doc__ = declaration or f"{name}: no ABI declaration"
        return export

    def create_fence(self):
        """A new unsignaled fence on this context's device, for the explicit-fence form of
        coarse-fences exports (`ctx.main_async(x, wait, signal)`); `fence.signal()`
        reaches it, `fence.wait(timeout=None)` waits for it (raising the VMError of a
        failed one), `fence.is_reached` polls it."""
        return self.modules["hal"].fence_create(self.device, 0)

    def call_vm(self, name: str, *args):
        """Calls export `name` with VM-level values in cconv order (ints, floats,
        `HalBufferView` and other ref objects, None for null; coarse-fences exports
        take their two fences too) and returns VM-level results: no numpy marshalling,
        no ABI checks beyond the VM's own. For tools and tests that need device values."""
        try:
            fn = self._vm_exports[name]
        except KeyError:
            raise AttributeError(f"no export named {name!r}") from None
        return self._call_vm(name, fn, args)

    def call(self, name: str, *args):
        """Calls an export by its VM name (for names that are not identifiers)."""
        try:
            fn = self._exports[name]
        except KeyError:
            raise AttributeError(f"no export named {name!r}") from None
        return fn(*args)

    @property
    def exports(self) -> tuple[str, ...]:
        return tuple(self._exports)

    def close(self) -> None:
        deinit, self._deinit = self._deinit, None
        if deinit is not None:
            self._call_vm("__deinit", deinit, ())
        self.refs.clear()
