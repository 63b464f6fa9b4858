"""The state of one loaded translated module, and the Python API generated packages expose.

A generated package calls `ModuleContext(...)` from its `load()`. The context creates the
device, the import modules (`hal`, `check`, ...), the globals and the rodata views,
resolves every import once (so calls are direct Python calls), binds the generated VM
functions to itself, runs `__init`, and exposes one method per export that takes and
returns numpy arrays and scalars (see ../shared/docs/contract.md).
"""

from __future__ import annotations

import re

import mmap
import os
import threading
from pathlib import Path
from typing import Callable, NamedTuple

from runtime_support.api import abi, export_call
from runtime_support.errors import StatusCode, VMError, quote_name
from runtime_support.names import identifier
from runtime_support.vm import args as vm_args
from runtime_support.vm.buffer import VMBuffer
from runtime_support.vm.globals import RefGlobals, new_rwdata

DEVICES = ("local", "local-task", "local-sync", "cuda")

# Devices pyree can create now, and those the contract names that this build lacks.
LOCAL_DEVICES = {"local": "local-task", "local-task": "local-task", "local-sync": "local-sync"}
_UNAVAILABLE_DEVICES: dict[str, str] = {}


def _open_cuda(name: str):
    """`cuda` / `cuda:N` (runtime_support/cuda, imported only here: pycuda is optional)."""
    from runtime_support.cuda.device import open_cuda_device

    try:
        return open_cuda_device(name)
    except VMError as e:
        raise DeviceError(e.code, e.message) from None


class DeviceError(VMError, ValueError):
    """A device that cannot be created: NOT_FOUND (no such device) or UNAVAILABLE (known
    but not usable here). Also a ValueError, as `load(device=...)` raised before.
    `context`: what iree-run-module says it was doing (`creating driver for device`,
    or `creating device` for a path the driver cannot open)."""

    def __init__(self, code, message, *args, context: str = "creating driver for device", **kw):
        super().__init__(code, message, *args, **kw)
        self.context = context


def device_name(device: str) -> str:
    """A device name without an empty URI path: `local-sync://` is `local-sync`, as IREE
    takes `DRIVER://` for the driver's default device."""
    return device[:-3] if device.endswith("://") and len(device) > 3 else device


def make_device(device, workers: int | None = None):
    """A device object from a name (`local`, `local-task`, `local-sync`) or a device.
    `workers`: threads a `local` dispatch may use (default $PYREE_WORKERS or the cores)."""
    from runtime_support.hal.device import LocalDevice

    if not isinstance(device, str):
        return device
    device = device_name(device)
    if workers is not None and (isinstance(workers, bool) or int(workers) < 1):
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    kind = LOCAL_DEVICES.get(device)
    if kind == "local-task":
        return LocalDevice(kind, worker_count=workers)
    if kind is not None:
        return LocalDevice(kind)
    if device.partition(":")[0] == "cuda":
        return _open_cuda(device)
    usable = ", ".join(LOCAL_DEVICES)
    if device in _UNAVAILABLE_DEVICES:
        raise DeviceError(
            StatusCode.UNAVAILABLE,
            f"device '{device}' is not available: {_UNAVAILABLE_DEVICES[device]}; "
            f"use one of {usable}",
        )
    driver, sep, _ = device.partition("://")
    if sep and (driver in LOCAL_DEVICES or driver == "cuda"):
        raise DeviceError(
            StatusCode.NOT_FOUND, "device paths not yet implemented", context="creating device"
        )
    raise DeviceError(StatusCode.NOT_FOUND, f"no driver '{driver}' registered")


def default_modules(devices, parameters=None, needed=None) -> dict[str, object]:
    """The import modules a context provides unless the caller overrides them: `hal` over
    `devices` (one device or the ordered list; the context itself uses it), and of the others those named in `needed` (the module
    names a vmfb imports from; None: all). The others are neither imported nor built."""
    from runtime_support.hal.module import HalModule
    from runtime_support.tools.trace import TraceWriter

    def hal_inline():
        from runtime_support.modules.hal_inline import HalInlineModule

        return HalInlineModule(trace_sink=TraceWriter())

    def hal_loader():
        from runtime_support.modules.hal_loader import HalLoaderModule

        return HalLoaderModule()

    def check():
        from runtime_support.modules.check import CheckModule

        return CheckModule()

    def io_parameters():
        from runtime_support.modules.io_parameters import IoParametersModule

        # `parameters`: None, [(scope, path)], {scope: path(s)}... (params.build_providers);
        # without parameters a lookup fails with NOT_FOUND.
        return IoParametersModule(parameters)

    # flow.tensor.trace blocks go to stderr, as iree-run-module and iree.runtime print.
    devices = list(devices) if isinstance(devices, (list, tuple)) else [devices]
    modules: dict[str, object] = {"hal": HalModule(devices, trace_sink=TraceWriter())}
    for name, make in (("hal_inline", hal_inline), ("hal_loader", hal_loader),
                       ("check", check), ("io_parameters", io_parameters)):
        if needed is None or name in needed:
            modules[name] = make()
    return modules


def python_name(name: str) -> str:
    """An export name as a Python attribute name (`main$async` -> `main_async`), by the
    identifier rule the translator names generated code with (runtime_support/names.py)."""
    return identifier(name)


def _shared_device(device, modules: dict, index: int = 0):
    """The device of the translated contexts among `modules` when `device` names the same
    kind: modules of one VM context share their devices (buffers and fences pass between
    them); a different kind is an error. `index`: the device's place in the list."""
    for name, module in modules.items():
        if not isinstance(module, ContextModule):
            continue
        devices = module.context.devices
        if index >= len(devices):
            raise DeviceError(
                StatusCode.INVALID_ARGUMENT,
                f"import module {name!r} was loaded with {len(devices)} device(s), fewer "
                f"than given here; load both with the same devices",
            )
        theirs = devices[index]
        if not isinstance(device, str):
            if device is not theirs:
                raise DeviceError(
                    StatusCode.INVALID_ARGUMENT,
                    f"import module {name!r} runs on another device; pass device= its device",
                )
            return device
        kind = LOCAL_DEVICES.get(device_name(device), device_name(device))
        if getattr(theirs, "identifier", None) != kind:
            raise DeviceError(
                StatusCode.INVALID_ARGUMENT,
                f"import module {name!r} was loaded with device "
                f"'{getattr(theirs, 'identifier', theirs)}', not '{device}'; load both with "
                f"the same device",
            )
        return theirs
    return device


# More devices than any program addresses (IREE's compiler numbers a kind's devices with
# small ordinals): a bound on what a flag list or a caller can make us create.
MAX_DEVICES = 64


def device_list(device) -> list:
    """`load(device=...)`'s value as the ordered list of devices it names: one name or
    device object, or a list or tuple of them (iree-run-module's repeated --device)."""
    if isinstance(device, (list, tuple)):
        devices = list(device)
        if not devices:
            raise DeviceError(StatusCode.INVALID_ARGUMENT, "no device given (an empty list)")
        if len(devices) > MAX_DEVICES:
            raise DeviceError(
                StatusCode.INVALID_ARGUMENT,
                f"{len(devices)} devices given; at most {MAX_DEVICES} are supported",
            )
        return devices
    return [device]


def make_devices(device, modules: dict, workers: int | None = None) -> list:
    """The context's devices, in order: each one made (or shared with the translated
    contexts among `modules`, device by device)."""
    devices = []
    for i, d in enumerate(device_list(device)):
        try:
            made = make_device(shared := _shared_device(d, modules, i), workers)
        except DeviceError as e:
            e.device = d if isinstance(d, str) else None  # which one, for pyree-run's line
            raise
        if isinstance(shared, str) and hasattr(made, "pool_ordinal"):
            made.pool_ordinal = i  # (a device made here: the i-th worker pool, its own)
        devices.append(made)
    return devices


class ContextModule:
    """A loaded translated context serving as an import module of another one, as a second
    `--module=` does in iree-run-module: its exports become imports `NAME.EXPORT`.

    Follows the import-module protocol (ARCHITECTURE.md): `IMPORTS` declares every export
    it serves (full name -> cconv), and each is an attribute named after the export with
    `.` replaced by `_`, taking and returning VM-level values (ints, floats, refs).
    """

    def __init__(self, context: "ModuleContext", name: str) -> None:
        self.context = context
        self.name = name
        self.IMPORTS = {f"{name}.{export}": cconv for export, cconv in context.cconvs.items()}
        # Looked up by __getattr__, so no export name can shadow the attributes above.
        self._served = {
            export.replace(".", "_"): self._bind(export, context._vm_exports[export])
            for export in context.cconvs
        }

    def __getattr__(self, attr: str):
        served = self.__dict__.get("_served")
        if served is not None and attr in served:
            return served[attr]
        raise AttributeError(attr)

    def _bind(self, export: str, fn: Callable) -> Callable:
        call = self.context._call_vm

        def imported(*args):
            return call(export, fn, args)

        imported.__name__ = python_name(export)
        return imported


def _trusted(module) -> bool:
    """Whether an import module's results are VM values by construction: pyree's own
    modules and translated contexts (ContextModule). Any other object's integer and float
    results are checked (vm.args.checked_results)."""
    return type(module).__module__.partition(".")[0] == "runtime_support"


def _explain_device_mismatch(e: VMError, device=None) -> VMError:
    """The VM's device-matching failure (`HAL device ... not found or unavailable` and a
    dump of every target) as one sentence naming the formats and what to do."""
    from runtime_support import executable_formats as ef

    named = re.search(r"HAL device `([^`]*)` not found", e.message)
    if named and not named.group(1).startswith("__device_"):
        # A device the program names (compiled for several: `gpu=cuda`), missing from
        # those given: IREE's own line, as iree-run-module prints it (at `<vm>:0`).
        return VMError(e.code, e.message, function=e.function)
    formats = [f for f in ef.formats_in_device_error(e.message) if not ef.runs_on(f, device)]
    if not formats:
        return e
    reasons = "; ".join(ef.unsupported_reason(f, device) for f in formats)
    return VMError(
        e.code, f"module has no executables pyree can run: {reasons}", function=e.function
    )


def is_coarse_fences(name: str, arg_codes, declaration: str | None) -> bool:
    """Whether an export takes `(args..., wait_fence, signal_fence)` (IREE's `coarse-fences`
    ABI model): declared `async`, or, since iree-turbine exports carry no declaration,
    named `NAME$async`; either way its last two arguments must be refs."""
    codes = list(arg_codes)
    if codes[-2:] != ["r", "r"]:
        return False
    decl = abi.parse_declaration(declaration, name)
    return decl.is_async if decl is not None else name.endswith("$async")


def closed_error(name: str) -> VMError:
    """The error of a call on a context after its close()."""
    return VMError(
        StatusCode.FAILED_PRECONDITION,
        f"calling {quote_name(name)} on a closed context (close() was called); load() a new one",
    )


def vm_fail(status: int, message: str, function: str, location: str | None) -> VMError:
    """The error `vm.fail` raises (status is already known to be non-zero)."""
    return VMError(status, message, function=function, location=location)


def describe_exports(doc: str | None, exports: dict) -> str:
    """A generated package's docstring with its exports listed, for `help(pkg)`.

    Built at import time from the `_EXPORTS` literals, so no vmfb text is ever written
    into a docstring of the generated source (export names and declarations are
    untrusted); names that are not plain printable text are shown as literals."""
    lines = [doc.rstrip() if doc else "", "", "Exports (ctx = load(); ctx.NAME(...), or ctx.call(NAME, ...)):"]
    for name, e in exports.items():
        if name.startswith("__"):  # __init/__deinit: the module's own lifecycle, run by load()
            continue
        shown = name if name.isprintable() and name.isascii() and name.strip() == name else repr(name)
        decl = e.declaration
        if decl is None or not (decl.isprintable() and decl.isascii()):
            decl = f"cconv {e.cconv}" if decl is None else repr(decl)
        lines.append(f"    {shown}: {decl}")
    return "\n".join(lines) + "\n"


class Export(NamedTuple):
    """One row of a generated package's export table (`_EXPORTS`)."""

    function: str  # name of the generated function in `_bind`'s table
    arguments: str  # cconv argument codes, e.g. "rrI"
    results: str  # cconv result codes
    declaration: str | None  # iree.abi.declaration, None where the vmfb has none
    # Translate-time facts (translator/analyses/ownership.py): result positions the
    # function proved fresh (allocated by the call, stored nowhere: returned zero-copy),
    # and argument positions it keeps no reference to (their copies may be refilled by
    # the next call). Empty (copy everything, reuse nothing) where unknown.
    fresh_results: tuple[int, ...] = ()
    unkept_arguments: tuple[int, ...] = ()

    @property
    def cconv(self) -> str:
        return f"0{self.arguments or 'v'}_{self.results or 'v'}"


class Import(NamedTuple):
    """One row of a generated package's import table (`_IMPORTS`), by import ordinal."""

    name: str  # full VM name, e.g. "hal.buffer_view.create"
    cconv: str  # its calling convention, e.g. "0rIiiI_r"
    optional: bool  # unresolved (None) rather than NOT_FOUND when no module provides it


class ModuleContext:
    """One instance of a translated module: independent of every other instance."""

    def __init__(
        self,
        *,
        package_file: str,
        bind: Callable[["ModuleContext"], dict[str, Callable]],
        imports: tuple[Import, ...],
        rodata: tuple[tuple[int, int], ...],
        global_bytes: int,
        global_refs: int,
        exports: dict[str, Export],
        device="local",
        parameters=None,
        modules: dict[str, object] | None = None,
        workers: int | None = None,
    ) -> None:
        modules = {
            name: ContextModule(module, name) if isinstance(module, ModuleContext) else module
            for name, module in (modules or {}).items()
        }
        # The devices in order (`hal.devices.get(i)`); the first is the one numpy
        # arguments are placed on and fences made on, as iree-run-module's inputs are.
        self.devices = make_devices(device, modules, workers)
        self.device = self.devices[0]
        # Parameter archives are opened only for a module that imports io_parameters, as
        # IREE creates that module only as a dependency (an unused bad path is no error).
        if not any(name.startswith("io_parameters.") for name, _, _ in imports):
            parameters = None
        needed = {name.partition(".")[0] for name, _, _ in imports}
        self.modules = default_modules(self.devices, parameters, needed - set(modules))
        self.modules.update(modules)
        self.rwdata = new_rwdata(global_bytes)
        self.refs = RefGlobals(global_refs)
        self.rodata = self._map_rodata(Path(package_file).with_name("rodata.bin"), rodata)
        self.imports = tuple(self._resolve(name, cconv, optional) for name, cconv, optional in imports)
        # One call at a time per context: threads sharing a context (a user's thread pool)
        # queue up here. Re-entrant so a call that re-enters its own context (an import
        # module calling back) does not deadlock.
        self._lock = threading.RLock()
        self._closed = False
        self._functions = bind(self)
        self._exports: dict[str, Callable] = {}
        self._vm_exports: dict[str, Callable] = {}
        self._vm_arity = {name: len(row[1]) for name, row in exports.items()}
        self.cconvs = {  # export name -> VM calling convention (`0ri_r`)
            name: f"0{''.join(row[1]) or 'v'}_{''.join(row[2]) or 'v'}"
            for name, row in exports.items()
        }
        for export_name, row in exports.items():
            function = row[0]
            wrapper = self._make_export(
                export_name, self._functions[function], *row[1:6]
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
            try:
                self._call_vm("__init", self._functions[init[0]], ())
            except VMError as e:
                raise _explain_device_mismatch(e, self.device) from None

    # -- setup -----------------------------------------------------------------------
    @staticmethod
    def _map_rodata(path: Path, table) -> list[VMBuffer]:
        if not table:
            return []
        # A private copy-on-write mapping: the VM sees read-only buffers, yet kernels
        # that write into imported constants (hal-abi.md §I) touch only this context's
        # private pages, never the file or another context.
        try:
            f = open(path, "rb")
        except OSError as e:
            raise VMError(
                StatusCode.DATA_LOSS,
                f"package {path.parent.name} is incomplete: cannot read its constants file "
                f"{path.name} ({e.strerror or e}); translate the .vmfb again",
            ) from None
        with f:
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
        """The callable serving import `full_name`, or None for an unresolved optional one.

        Only what a module declares resolves: its `IMPORTS` table (full name -> cconv) must
        list the import, and the method is named by the full name minus the module prefix
        with `.` -> `_`. User-provided modules (`load(modules=...)`) declare `IMPORTS` the
        same way. Anything else (`check.__init__`, an undeclared method) is NOT_FOUND when
        required and unresolved when optional, as in IREE."""
        module_name, _, rest = full_name.partition(".")
        module = self.modules.get(module_name)
        fn = None
        if module is not None:
            table = getattr(module, "IMPORTS", None)
            declared = table.get(full_name) if isinstance(table, dict) else None
            if declared is not None and declared != cconv:
                if optional:
                    return None
                raise VMError(
                    StatusCode.INVALID_ARGUMENT,
                    f"import {quote_name(full_name)} has calling convention {cconv!r} but the "
                    f"{quote_name(module_name)} module provides {declared!r}",
                )
            if declared is not None:
                fn = getattr(module, rest.replace(".", "_"), None)
                fn = fn if callable(fn) else None
            if fn is not None and not _trusted(module):
                fn = vm_args.checked_results(full_name, cconv, fn)
        if fn is None and not optional:
            raise VMError(
                StatusCode.NOT_FOUND,
                f"required import {quote_name(full_name)} is not provided (module "
                f"{quote_name(module_name)} "
                f"{'does not declare it' if module is not None else 'is not available'})",
            )
        return fn

    # -- calls -----------------------------------------------------------------------
    def _call_vm(self, name: str, fn: Callable, args: tuple):
        self._lock.acquire()
        # Checked under the lock: a call that queued behind close() must not run on the
        # globals close() cleared.
        if self._closed:
            self._lock.release()
            raise closed_error(name)
        try:
            return fn(*args)
        except VMError as e:
            raise e.with_context(name, None)
        except MemoryError:  # an allocation no limit check foresaw: still not a traceback
            raise VMError(
                StatusCode.RESOURCE_EXHAUSTED, f"out of memory while running {quote_name(name)}"
            ) from None
        finally:
            self._lock.release()

    def _make_export(
        self,
        name: str,
        fn: Callable,
        arg_codes: tuple[str, ...],
        result_codes: tuple[str, ...],
        declaration: str | None,
        fresh_results: tuple[int, ...] = (),
        unkept_arguments: tuple[int, ...] = (),
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

        A ref argument takes a numpy array (copied into a new buffer view, as iree.runtime
        does; `wrap_array` is the zero-copy opt-in), None (a null ref) or a VM ref object
        (`HalBufferView`, `Fence`, ...) as is. Tensor results come back as numpy arrays
        the caller owns (abi.view_to_numpy: zero-copy when nothing else can reach them).

        Everything the declaration fixes is worked out here, once: per-argument converters
        (abi.tensor_argument), arity, which results are tensors. A call only runs them.
        """
        decl = abi.parse_declaration(declaration, name)
        codes = list(arg_codes)
        coarse_fences = is_coarse_fences(name, codes, declaration)
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
        from runtime_support.hal.buffer_view import HalBufferView
        from runtime_support.hal.fence import Fence
        from runtime_support.vm.refs import ref_type_name

        # Per-argument converters, built once: a call only runs them (abi.tensor_argument).
        ref_types = (abi.TensorType, type(None))

        def ref_argument(arg, ty):
            def general(value):
                if value is None or ref_type_name(value) is not None:
                    return value  # a null ref or a VM ref object, passed as is
                return abi.to_buffer_view(value, arg, ty, device)

            return abi.tensor_argument(arg, ty, device, general)

        def scalar_argument(arg, code):
            return lambda value: abi.to_scalar(value, arg, code)

        converters = tuple(
            (ref_argument(arg, ty) if isinstance(ty, ref_types) else (lambda v: v))
            if code == "r"
            else scalar_argument(arg, code)
            for code, ty, arg in zip(codes, arg_types, arg_names)
        )
        arity = len(codes)
        result_count = len(result_codes)
        tensor_results = tuple(
            isinstance(t, (abi.TensorType, type(None))) for t in result_types
        )
        fresh = set(fresh_results)
        result_converters = tuple(
            abi.tensor_result(t, i in fresh) for i, t in enumerate(result_types)
        )

        def convert(args):
            return [c(v) for c, v in zip(converters, args)]

        def results(result, convert_result):
            if not result_codes:
                return None
            if len(result_codes) == 1:
                return convert_result(result, result_types[0])
            return tuple(convert_result(v, t) for v, t in zip(result, result_types))

        def to_numpy(result):
            """VM results -> numpy; buffer views through abi.tensor_result's converters
            (zero-copy where the translator proved the result fresh, else a copy)."""
            if result_count == 1:
                if type(result) is HalBufferView and tensor_results[0]:
                    return result_converters[0](result)
                return abi.from_vm(result, result_types[0])
            if result_count == 0:
                return None
            out = []
            for i, value in enumerate(result):
                if type(value) is HalBufferView and tensor_results[i]:
                    out.append(result_converters[i](value))
                else:
                    out.append(abi.from_vm(value, result_types[i]))
            return tuple(out)

        def call_and_wait(vm_args):
            """A coarse-fences call with a fresh signal fence, waited for."""
            signal = hal.fence_create(device, 0)
            vm_args += [None, signal]
            result = self._call_vm(name, fn, vm_args)
            hal.fence_await(-1, 0, [signal])
            return result

        def export(*args):
            if len(args) == arity:
                vm_args = [c(v) for c, v in zip(converters, args)]
                if not coarse_fences:
                    return to_numpy(self._call_vm(name, fn, vm_args))
                return to_numpy(call_and_wait(vm_args))
            if not (coarse_fences and len(args) == arity + 2):
                expected = f"{arity} argument(s)"
                if coarse_fences:
                    expected += f" (or {arity + 2} with wait and signal fences)"
                raise TypeError(f"{name}() takes {expected}, got {len(args)}")
            fences = args[arity:]
            for label, fence in zip(("wait_fence", "signal_fence"), fences):
                if fence is not None and not isinstance(fence, Fence):
                    raise TypeError(
                        f"{name}(): {label} must be a fence from create_fence() or None, "
                        f"got {type(fence).__name__}"
                    )
            vm_args = convert(args[:arity]) + list(fences)
            result = self._call_vm(name, fn, vm_args)
            return results(result, lambda v, t: v)

        if not coarse_fences:
            unkept = set(unkept_arguments)

            def plan_of(convs, result_convs):
                single = result_count == 1 and tensor_results[0]
                return export_call.Plan(
                    convs,
                    [
                        getattr(c, "give_back", None) if i in unkept else None
                        for i, c in enumerate(convs)
                    ],
                    result_convs[0] if single else None,
                    result_types[0] if result_types else None,
                    to_numpy,
                )

            undeclared = [
                i for i, (code, ty) in enumerate(zip(codes, arg_types)) if code == "r" and ty is None
            ]
            if not undeclared and not (result_count == 1 and result_types[0] is None):
                learn = None
            else:
                # No declaration to specialize by (iree-turbine exports): the first call
                # that returns tells (abi.observed_*), and the closure is rebound to
                # converters as if those types were declared, every fast path falling
                # back to the undeclared converters, so any later call gets what it
                # would have got.
                def learn(args, result):
                    try:
                        return specialized(args, result)
                    except Exception:  # noqa: BLE001 - a value no hint fits: as it was
                        return plan_of(converters, result_converters)

                def specialized(args, result):
                    spec = list(converters)
                    for i in undeclared:
                        hint = abi.observed_argument(args[i])
                        if hint is not None:
                            spec[i] = abi.tensor_argument(arg_names[i], hint, device, converters[i])
                    spec_results = result_converters
                    if result_count == 1 and result_types[0] is None:
                        observed = abi.observed_result(result)
                        spec_results = (abi.tensor_result(observed, 0 in fresh),)
                    return plan_of(spec, spec_results)

            export = export_call.export_function(
                self, name, fn, plan_of(converters, result_converters), export, closed_error,
                abi.from_vm, learn,
            )
        export.__name__ = python_name(name)
        export.__qualname__ = f"{type(self).__name__}.{export.__name__}"
        export.__doc__ = declaration or f"{name}: no ABI declaration"
        return export

    def wrap_array(self, array):
        """A `HalBufferView` over a numpy array's own memory, without a copy: the opt-in
        form of zero-copy arguments (numpy arguments are otherwise copied, as iree.runtime
        copies them). Pass it where the export takes the array. The program then reads the
        array's memory during the call and may write into it (IREE-compiled programs
        write into argument buffers with tied operands, iree-org/iree#16168) or keep it in
        a global past the call; use it only where that is what the caller wants. The array
        must be writable, C-contiguous, native-endian and 64-byte aligned, as kernels
        assume of bindings (`runtime_support.hal.buffer.aligned_empty` makes one)."""
        import numpy as np

        from runtime_support.hal import element_types
        from runtime_support.hal.buffer import ALIGNMENT, USAGE_DEFAULT
        from runtime_support.hal.buffer_view import HalBufferView

        if not isinstance(array, np.ndarray):
            raise TypeError(f"wrap_array() takes a numpy array, got {type(array).__name__}")
        problems = [
            what
            for what, ok in (
                ("writable", array.flags.writeable),
                ("C-contiguous", array.flags.c_contiguous),
                ("native-endian", array.dtype.isnative),
                (f"{ALIGNMENT}-byte aligned", array.ctypes.data % ALIGNMENT == 0),
            )
            if not ok
        ]
        if problems:
            raise ValueError(f"wrap_array(): the array is not {', '.join(problems)}")
        element_type = element_types.from_numpy_dtype(array.dtype)
        buffer = self.device.allocator.import_host(
            array.reshape(-1).view(np.uint8), False, 0, USAGE_DEFAULT, owner=array
        )
        if buffer is None:  # device memory (cuda) cannot alias host memory
            raise ValueError(
                f"wrap_array(): device '{self.device.identifier}' cannot use host memory "
                "without a copy; pass the array itself"
            )
        return HalBufferView(buffer, array.shape, element_type)

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
        expected = self._vm_arity[name]
        if len(args) != expected:  # as IREE's invoke: its cconv fixes the count
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"export {quote_name(name)} (cconv {self.cconvs[name]}) takes {expected} "
                f"arguments, got {len(args)}",
            )
        return self._call_vm(name, fn, args)

    def __getattr__(self, attr: str):
        # Only reached where normal lookup fails: an export under its VM name where that
        # is not its attribute name (`getattr(ctx, "while")`, `getattr(ctx, "i8i8.i32")`),
        # as iree.runtime's `ctx.modules.module[name]` finds it.
        exports = self.__dict__.get("_exports")
        if exports is not None and attr in exports:
            return exports[attr]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")

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
        """Runs `__deinit` and releases the context's globals. Calls in flight on other
        threads finish first (close takes the call lock); calls after it raise
        FAILED_PRECONDITION."""
        with self._lock:
            deinit, self._deinit = self._deinit, None
            if deinit is not None:
                self._call_vm("__deinit", deinit, ())
            self._closed = True
            self.refs.clear()
