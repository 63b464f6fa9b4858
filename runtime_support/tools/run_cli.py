"""`pyree-run`: run one export of a generated package like `iree-run-module` would.

    pyree-run PACKAGE_DIR [--function=NAME] [--input=SPEC]... [--device=DEVICE]
              [--parameters=[SCOPE=]FILE]... [--output=MODE]...
              [--output_max_element_count=N]   (alias: --print_max_element_count)
              [--print_statistics]   (per-dispatch table on stderr after the call)

What this expects from a generated package (PACKAGE_DIR/__init__.py):

* `load(device=..., parameters=...) -> ctx`. `device` is the `--device` string (default
  "local"), or the list of them in order when several are given; `parameters` is None, or a list of `(scope, path)` pairs in flag order (scope ""
  for `--parameters=FILE`).
* `ctx.call_vm(NAME, *vm_args)` (a translated package's context) runs the export at the
  VM level, as iree-run-module does: inputs become buffer views of their own shape and
  type, results are the VM's (vm_level_call). Other contexts: `getattr(ctx, NAME)(*args)`
  calls the export; it returns None (no results), one value, or a tuple (several results). Refs are numpy arrays (a `runtime_support.tools.io_specs.HalArray`
  when the exact IREE element type matters: signless vs signed ints, bf16), None for null,
  a list for `!vm.list`; scalars are Python or numpy numbers.
* `EXPORTS`: dict export name -> ABI declaration string (or None).
* Optional `CCONVS`: dict export name -> VM calling convention (`"0rI_rf"`). With it, inputs
  are parsed per argument type exactly like iree-run-module (`--input=5` feeding an f32
  argument is 5.0, feeding a ref is an error) and scalar results print with their VM type.
  Without it every argument is a ref except bare numbers (an integer literal is i32/i64, any
  other number f32/f64), and scalar result types are inferred (numpy scalars are exact).

Exit status: 0 success; 1 when iree-run-module would report a status (bad SPEC, unknown
function, the function failed: `VMError`, with `CODE; message` on stderr); 2 usage errors.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import os
import re
import signal
import sys
import traceback

import numpy as np

from runtime_support.api.context import DeviceError, is_coarse_fences
from runtime_support.errors import LoaderError, StatusCode, VMError
from runtime_support.loaders import statistics as dispatch_statistics
from runtime_support.tools.io_format import (
    format_results,
    format_value,
    to_numpy_for_output,
    write_npy,
)
from runtime_support.tools.trace import TraceWriter
from runtime_support.tools.io_specs import SpecError, StorageInput, parse_inputs
from runtime_support.tools.run_flags import (
    FlagfileError,
    build_parser,
    expand_flagfiles,
    iree_flag_values,
    parse_args_linear,
)
from runtime_support.cache.package_cache import package_for, package_for_data

_VM_TYPES = {"i": "i32", "I": "i64", "f": "f32", "F": "f64", "r": "ref"}


class RunError(Exception):
    """A failure reported like an IREE status: `CODE; message` on stderr, exit 1."""

    def __init__(self, code: StatusCode, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code.name}; {message}")


def _cconv_arg_codes(cconv: str) -> list[str]:
    return list(cconv[1:].partition("_")[0])


def parse_cconv(cconv: str) -> tuple[list[str], list[str]]:
    """`"0rI_rf"` -> (["ref", "i64"], ["ref", "f32"]). Spans are not supported in exports."""
    if not cconv or cconv[0] != "0":
        raise ValueError(f"unsupported calling convention {cconv!r}")
    args, _, results = cconv[1:].partition("_")

    def frag(text: str) -> list[str]:
        if text in ("", "v"):
            return []
        if any(c not in _VM_TYPES for c in text):
            raise ValueError(f"unsupported calling convention {cconv!r}")
        return [_VM_TYPES[c] for c in text]

    return frag(args), frag(results)


def load_package(package_dir: str, source: bytes | None = None):
    """Imports PACKAGE_DIR/__init__.py as a package (under a private module name); with
    `source`, that source (checked by package_cache) instead of the file's, and no
    bytecode is read or written for it."""
    package_dir = os.path.abspath(package_dir)
    init = os.path.join(package_dir, "__init__.py")
    if not os.path.isfile(init):
        raise FileNotFoundError(
            f"{package_dir}: not a generated package (no __init__.py)"
        )
    base = re.sub(r"\W", "_", os.path.basename(package_dir)) or "pkg"
    name = f"_pyree_run_{base}_{abs(hash(package_dir)) & 0xFFFFFFFF:08x}"
    if name in sys.modules:
        return sys.modules[name]
    return import_package_as(name, package_dir, source)


class _CheckedSourceLoader(importlib.machinery.SourceFileLoader):
    """Loads a module from source bytes already read and checked: the file is not read
    again, and no .pyc is read or written."""

    def __init__(self, name: str, path: str, source: bytes):
        super().__init__(name, path)
        self._source = source

    def get_data(self, path):
        if path == self.path:
            return self._source
        raise OSError(f"{path}: bytecode is not used for checked sources")

    def set_data(self, path, data, *, _mode=0o666):
        pass


def import_package_as(name: str, package_dir, source: bytes | None = None) -> object:
    """Imports PACKAGE_DIR/__init__.py (or `source`, read and checked by the caller) as
    package `name`; nothing is left in sys.modules when the import fails (SyntaxError,
    IndentationError and the like surface here)."""
    package_dir = os.fspath(package_dir)
    init = os.path.join(package_dir, "__init__.py")
    loader = _CheckedSourceLoader(name, init, source) if source is not None else None
    spec = importlib.util.spec_from_file_location(
        name, init, loader=loader, submodule_search_locations=[package_dir]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def default_function(exports) -> str:
    """The export to run when `--function` is left out, by iree-run-module's rule: the one
    export whose name neither starts with `__` (module initializers) nor holds a `$`
    (`main$async` twins and other special ABIs)."""
    candidates = [n for n in exports if not n.startswith("__") and "$" not in n]
    if not candidates:
        raise RunError(
            StatusCode.INVALID_ARGUMENT,
            "no exported functions found in module; at least one must be present",
        )
    if len(candidates) > 1:
        raise RunError(
            StatusCode.INVALID_ARGUMENT,
            "more than one exported function present; "
            "--function= must be specified explicitly",
        )
    return candidates[0]


def lookup_export(ctx, name: str):
    """The numpy-level callable of export `name` (its VM name, which need not be a Python
    identifier: `i32i32.i32`), or None. Contexts with `call(name, ...)` are asked by VM
    name; other objects by attribute (the name as is, then its identifier form)."""
    exports = getattr(ctx, "exports", None)
    call = getattr(ctx, "call", None)
    if callable(call) and isinstance(exports, (tuple, list, dict)) and name in exports:
        return lambda *args: call(name, *args)
    method = getattr(ctx, name, None) if name.isidentifier() else None
    if method is None:
        from runtime_support.api.context import python_name

        method = getattr(ctx, python_name(name), None)
    return method if callable(method) else None


def vm_level_call(ctx, name: str, arg_types: list[str], coarse_fences: bool):
    """A callable running export `name` of a translated context as iree-run-module
    runs it: at the VM level, the parsed inputs becoming VM values (arrays: buffer views
    of their own shape and element type, scalars: the register values), the function's
    own code checking them (its `hal.buffer_view.assert`s; an identity export takes any
    view, as in IREE), and the results as the VM holds them (an i8 result is the whole
    i32 register). Coarse-fences exports get a null wait fence and a signal fence that
    is waited for. None when `ctx` has no VM-level entry (`call_vm`)."""
    call_vm = getattr(ctx, "call_vm", None)
    device = getattr(ctx, "device", None)
    if not callable(call_vm) or device is None:
        return None
    from runtime_support.api import abi
    from runtime_support.vm.refs import ref_type_name

    codes = {"i32": "i", "i64": "I", "f32": "f", "f64": "F"}

    def argument(i: int, value, vm_type: str):
        label = f"input{i}"
        if vm_type != "ref":
            return abi.to_scalar(value, label, codes[vm_type])
        if value is None or ref_type_name(value) is not None:
            return value
        if isinstance(value, StorageInput):  # `&SPEC`: the view's buffer alone
            return abi.to_buffer_view(value.array, label, None, device).buffer
        return abi.to_buffer_view(value, label, None, device)

    def result(value):
        return abi.from_vm(value, None) if isinstance(value, abi.HalBufferView) else value

    def run(*inputs):
        vm_args = [argument(i, v, t) for i, (v, t) in enumerate(zip(inputs, arg_types))]
        signal = None
        if coarse_fences:
            signal = ctx.create_fence()
            vm_args += [None, signal]
        raw = call_vm(name, *vm_args)
        if signal is not None:
            try:
                signal.wait()
            except VMError as e:
                raise e.with_context(name, None) from None
        if isinstance(raw, tuple):
            return tuple(result(v) for v in raw)
        return result(raw)

    return run


def vm_module_name(pkg) -> str:
    """The VM module name a package's exports are imported under (`a` in `a.add`)."""
    name = getattr(pkg, "VM_MODULE_NAME", None)
    return name if isinstance(name, str) and name else "module"


def _devices_arg(flags: list[str]):
    """`load(device=...)`'s value for the --device flags: the one name (default `local`),
    or the list of them in order when several are given."""
    return flags if len(flags) > 1 else (flags[0] if flags else "local")


def load_contexts(packages, device="local", parameters=None, trace_stream=None):
    """Loads packages in order, each one's exports serving as imports of the later ones
    (iree-run-module --module=a --module=b), and returns the last one's context. With
    `trace_stream`, every context's `flow.tensor.trace` blocks go there."""
    loaded: dict = {}
    ctx = None
    for pkg in packages:
        kwargs = {"device": device, "parameters": parameters}
        if loaded:
            kwargs["modules"] = dict(loaded)
        try:
            ctx = pkg.load(**kwargs)
        except VMError as e:
            e.vm_module = vm_module_name(pkg)  # whose dependencies were being resolved
            raise
        if trace_stream is not None:
            route_traces(ctx, trace_stream)
        loaded[vm_module_name(pkg)] = ctx
    return ctx


def route_traces(ctx, stream) -> None:
    """Points the default trace sinks of `ctx`'s `hal` and `hal_inline` modules at
    `stream` (a sink the caller put there instead is left alone)."""
    for module in (getattr(ctx, "modules", None) or {}).values():
        sink = getattr(module, "trace_sink", None)
        if isinstance(sink, TraceWriter):
            sink.stream = stream


def guess_arg_type(spec: str) -> str:
    """Argument type of a SPEC when the package gives no calling convention: integer
    literals are i32 (i64 when out of i32 range), other bare numbers f32, the rest refs.
    """
    text = spec.strip()
    if re.fullmatch(r"[+-]?(0[xX][0-9a-fA-F]+|[0-9]+)", text):
        if len(re.sub(r"^[+-]?(0[xX])?0*", "", text)) > 20:  # (past int64, not converted)
            return "i64"
        v = int(text, 0) if re.search(r"[xX]", text) else int(text, 10)
        return "i32" if -(2**31) <= v < 2**31 else "i64"
    if re.fullmatch(
        r"[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))",
        text,
    ):
        return "f32"
    return "ref"


def parse_parameters(values: list[str]) -> list[tuple[str, str]] | None:
    if not values:
        return None
    out = []
    for v in values:
        scope, eq, path = v.partition("=")
        out.append((scope, path) if eq else ("", v))
    return out


def _write_output(mode: str, value, vm_type: str | None, max_count, stdout) -> None:
    if mode == "":
        return
    if mode == "-":
        stdout.write(format_value(value, vm_type, max_count))
        return
    if mode[0] not in "@+":
        raise RunError(
            StatusCode.UNIMPLEMENTED, f"unsupported output mode specification '{mode}'"
        )
    path = mode[1:]
    append = mode[0] == "+"
    npy = path.endswith(".npy")
    try:  # opened first, as iree-run-module does (a value it cannot write leaves it empty)
        f = open(path, "ab" if append else "wb")
    except OSError:
        raise RunError(
            StatusCode.UNKNOWN, f"unable to open file `{path}` with mode {12 if append else 5}"
        ) from None
    with f:
        arr = to_numpy_for_output(value, vm_type, npy=npy)
        if npy:
            write_npy(f, arr)
        else:
            f.write(arr.tobytes())


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _fail(stderr, text: str) -> int:
    stderr.write(" ".join(text.split("\n")).rstrip() + "\n")
    return 1


def process_rank() -> int:
    """This process's MPI rank from the launcher's environment (0 outside MPI)."""
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return 0


def _per_rank(specs: list[str] | None) -> list[str] | None:
    """`{rank}` in input/output specs becomes this rank (mpiexec -n N pyree-run ...)."""
    if specs is None:
        return None
    rank = str(process_rank())
    return [spec.replace("{rank}", rank) for spec in specs]


def run(args: argparse.Namespace, stdout=None, stderr=None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    args.input = _per_rank(args.input) or []
    args.output = _per_rank(args.output)
    paths = list(getattr(args, "module", None) or [])
    if args.package_dir:
        paths.append(args.package_dir)
    if not paths:
        stderr.write(
            "pyree-run: error: no module given; pass a translated package directory "
            "(PACKAGE_DIR or --module=PACKAGE_DIR) (see --help)\n"
        )
        return 2
    try:  # a .vmfb is translated on the fly (the translator is then needed)
        from translator.errors import InvalidModuleError
    except ImportError:  # pragma: no cover - runtime-only install
        InvalidModuleError = ()  # noqa: N806
    packages = []
    for path in paths:  # like --module= in iree-run-module: the last one is the main one
        try:
            if path == "-":  # the module's bytes on stdin, as iree-run-module takes them
                packages.append(load_package(*package_for_data(sys.stdin.buffer.read(), "-")))
                continue
            packages.append(load_package(*package_for(path)))
        except InvalidModuleError as e:
            return _fail(stderr, f"INVALID_ARGUMENT; {e.with_path(path)}; loading module")
        except FileNotFoundError as e:
            stderr.write(f"pyree-run: error: {e}\n")
            return 2
        except Exception as e:  # a broken package: report, do not crash with a traceback
            return _fail(
                stderr,
                f"INTERNAL; cannot import package {path}: {type(e).__name__}: {e}",
            )
    pkg = packages[-1]
    exports = dict(getattr(pkg, "EXPORTS", {}) or {})
    name = args.function
    if not name:
        try:
            name = default_function(exports)
        except RunError as e:
            return _fail(stderr, f"{e}; creating run context")
    if exports and name not in exports:
        return _fail(
            stderr,
            f"NOT_FOUND; no function `{name}` exported by module; "
            f"looking up function '{name}'; creating run context",
        )

    cconv = (getattr(pkg, "CCONVS", None) or {}).get(name)
    arg_types = result_types = None
    coarse_fences = False
    if cconv:
        try:
            arg_types, result_types = parse_cconv(cconv)
        except ValueError as e:
            return _fail(stderr, f"UNIMPLEMENTED; {e}")
        if is_coarse_fences(name, _cconv_arg_codes(cconv), exports.get(name)):
            # async-external: pyree-run supplies and waits on the two fences, as
            # iree-run-module does, so the command line gives only the user's inputs.
            arg_types = arg_types[:-2]
            coarse_fences = True

    try:
        ctx = load_contexts(
            packages, _devices_arg(args.device), parse_parameters(args.parameters),
            trace_stream=stderr,
        )
    except VMError as e:
        # iree-run-module creates devices and parameter providers as the dependencies of
        # the module importing them, then runs the initializers: its error chains.
        if e.function is None and e.location is None:  # not raised by VM code
            chain = (
                f"resolving dependencies for '{getattr(e, 'vm_module', 'module')}'; "
                "creating VM context; creating run context"
            )
            if isinstance(e, DeviceError):
                chain = f"{e.context} '{getattr(e, 'device', None) or (args.device or ['local'])[0]}'; {chain}"
            return _fail(stderr, f"{e.code.name}; {e.message}; {chain}")
        return _fail(stderr, f"{status_text(e)}; creating VM context; creating run context")
    except LoaderError as e:
        return _fail(stderr, f"INTERNAL; {e}; creating run context")
    except (OSError, ValueError, TypeError) as e:
        return _fail(stderr, f"INVALID_ARGUMENT; {_one_line(e)}; creating run context")
    method = None
    if arg_types is not None:
        method = vm_level_call(ctx, name, arg_types, coarse_fences)
    if method is None:
        method = lookup_export(ctx, name)
    if method is None:
        return _fail(
            stderr,
            f"NOT_FOUND; no function `{name}` exported by module; "
            f"looking up function '{name}'; creating run context",
        )

    # From here on iree-run-module ends every error with the function's ABI declaration.
    declaration = exports.get(name)
    suffix = f"; `{declaration}`" if isinstance(declaration, str) and declaration else ""

    def fail(text: str) -> int:
        return _fail(stderr, text + suffix)

    # Inputs, parsed as one list (files shared along it, `*FILE.npy` gives several).
    try:
        inputs = parse_inputs(args.input, arg_types, guess_arg_type)
    except SpecError as e:
        return fail(
            f"{e.code.name}; "
            + (f"{e.message}; " if e.message else "")
            + f"parsing input `{e.spec}`; parsing function inputs",
        )
    # Call (iree-run-module prints EXEC once the inputs parsed, before the VM checks their
    # count against the function's).
    stdout.write(f"EXEC @{name}\n")
    stdout.flush()
    if arg_types is not None and len(inputs) != len(arg_types):
        return fail(
            f"INVALID_ARGUMENT; input list and function mismatch; expected "
            f"{len(arg_types)} arguments but passed {len(inputs)}; "
            f"invoking function '{name}'",
        )
    if getattr(args, "print_statistics", False):
        dispatch_statistics.reset()
        dispatch_statistics.enable()
    try:
        raw = method(*inputs)
    except VMError as e:
        stdout.flush()
        return fail(f"{status_text(e)}; invoking function '{name}'")
    except (TypeError, ValueError) as e:
        stdout.flush()
        return fail(f"INVALID_ARGUMENT; {e}; invoking function '{name}'")
    except LoaderError as e:
        stdout.flush()
        return fail(f"INTERNAL; {e}; invoking function '{name}'")
    finally:
        if getattr(args, "print_statistics", False):
            dispatch_statistics.enable(False)
            stderr.write(f"Dispatch statistics (@{name}):\n{dispatch_statistics.table()}\n")

    if result_types is not None:
        if len(result_types) == 0:
            results = ()
        elif len(result_types) == 1:
            results = (raw,)
        else:
            results = tuple(raw)
    else:
        results = () if raw is None else raw if isinstance(raw, tuple) else (raw,)
    types = [t if t != "ref" else None for t in result_types] if result_types else None

    if getattr(args, "expected_output", None):
        return _check_expected(args, results, result_types, stdout, fail)

    # Outputs.
    try:
        if args.output is None:
            stdout.write(
                format_results(name, results, types, args.max_count, include_exec=False)
            )
        else:
            if len(args.output) != len(results):
                raise RunError(
                    StatusCode.OUT_OF_RANGE,
                    f"{len(args.output)} outputs specified but the provided variant list only "
                    f"has {len(results)} elements",
                )
            for i, mode in enumerate(args.output):
                _write_output(
                    mode,
                    results[i],
                    types[i] if types else None,
                    args.max_count,
                    stdout,
                )
    except (RunError, SpecError) as e:
        stdout.flush()
        return fail(f"{e}; outputting results; processing function outputs")
    except BrokenPipeError:
        raise  # stdout's reader went away: main() ends quietly
    except OSError as e:
        stdout.flush()
        return fail(
            f"UNKNOWN; {e}; outputting results; processing function outputs"
        )
    stdout.flush()
    return 0


def _check_expected(args, results, result_types, stdout, fail) -> int:
    """--expected_output: parse each SPEC for its result's type, compare, report
    (`fail(text)` reports an error and returns the exit status)."""
    from runtime_support.tools.expected_output import Tolerances, compare, parse_expected_list

    types = result_types
    if types is None:  # a package without calling conventions: as the results look
        types = [_guess_result_type(r) for r in results]
    try:
        expected = parse_expected_list(args.expected_output, types)
    except SpecError as e:
        stdout.flush()
        return fail(
            f"{e.code.name}; "
            + (f"{e.message}; " if e.message else "")
            + f"parsing input `{e.spec}`; parsing expected function outputs; "
            "processing function outputs",
        )
    tol = Tolerances(
        mode=args.equality_mode,
        f16=float(np.float32(args.expected_f16_threshold)),
        f32=float(np.float32(args.expected_f32_threshold)),
        f64=args.expected_f64_threshold,
        bf16=float(np.float32(args.expected_bf16_threshold)),
        rtol=args.expected_rtol,
    )
    text, ok = compare(list(results), result_types, expected, tol)
    stdout.write(text)
    stdout.flush()
    return 0 if ok else 1


def _guess_result_type(value) -> str:
    from runtime_support.tools.io_format import scalar_vm_type

    if isinstance(value, (int, float, np.generic)):
        return scalar_vm_type(value)
    return "ref"


def status_text(e: VMError) -> str:
    """`<vm>:0: CODE; message; ` as iree-run-module prints a status raised by VM code
    (the stack annotation after the message is empty); where the module's debug
    database gives pyree the MLIR source location, it stands in that prefix's place
    (IREE's `vm.fail` has none to print)."""
    return f"{e.location or '<vm>:0'}: {e.code.name}; {e.message}; "


def _stdout_closed() -> int:
    """Ends as iree-run-module does when stdout's reader goes away (`| head`): the tool
    dies of SIGPIPE, silently (pip's launcher script then exits 243, a shell says 141).
    Where there is no SIGPIPE, exit status 1 without a message."""
    try:  # the interpreter's last flush must not fail, should the signal not end us
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
    sigpipe = getattr(signal, "SIGPIPE", None)
    if sigpipe is not None:
        signal.signal(sigpipe, signal.SIG_DFL)
        os.kill(os.getpid(), sigpipe)
    return 1


def parse_command_line(argv: list[str], stderr=None):
    """pyree-run's command line -> its flags (argparse.Namespace), or the exit status
    of a usage error, `--help` or `--version` (the message on `stderr`): flagfiles
    expanded, iree-run-module's flag values read as it reads them."""
    stderr = stderr or sys.stderr
    parser = build_parser()
    try:
        argv = expand_flagfiles(list(argv))
    except OSError as e:
        where = " ".join(str(e.filename).split())
        stderr.write(f"pyree-run: error: --flagfile: {where}: {e.strerror}\n")
        return 2
    except (FlagfileError, ValueError) as e:  # ValueError: a NUL in the path
        stderr.write(f"pyree-run: error: --flagfile: {_one_line(e)}\n")
        return 2
    except MemoryError:
        stderr.write("pyree-run: error: --flagfile: out of memory expanding the flagfiles\n")
        return 2
    argv = iree_flag_values(argv)
    try:
        return parse_args_linear(parser, argv)
    except SystemExit as e:  # argparse: usage error (2) or --help (0)
        return int(e.code or 0)


def main(argv: list[str] | None = None) -> int:
    args = parse_command_line(sys.argv[1:] if argv is None else argv)
    if isinstance(args, int):
        return args
    try:
        return run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _stdout_closed()
    except Exception as e:  # a bug in pyree: say so in one line (traceback on request)
        if os.environ.get("PYREE_DEBUG"):
            traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.write(
            f"INTERNAL; pyree-run failed unexpectedly: {type(e).__name__}: {_one_line(e)} "
            "(a pyree bug; set PYREE_DEBUG=1 for the traceback)\n"
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
