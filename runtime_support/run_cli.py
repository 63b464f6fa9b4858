"""`pyree-run`: run one export of a generated package like `iree-run-module` would.

    pyree-run PACKAGE_DIR [--function=NAME] [--input=SPEC]... [--device=DEVICE]
              [--parameters=[SCOPE=]FILE]... [--output=MODE]...
              [--output_max_element_count=N]   (alias: --print_max_element_count)
              [--print_statistics]   (per-dispatch table on stderr after the call)

What this expects from a generated package (PACKAGE_DIR/__init__.py):

* `load(device=..., parameters=...) -> ctx`. `device` is the `--device` string (default
  "local"); `parameters` is None, or a list of `(scope, path)` pairs in flag order (scope ""
  for `--parameters=FILE`).
* `getattr(ctx, NAME)(*args)` calls the export; it returns None (no results), one value, or
  a tuple (several results). Refs are numpy arrays (a `runtime_support.io_specs.HalArray`
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
import importlib.util
import os
import re
import sys
import traceback

import numpy as np

from runtime_support.errors import LoaderError, StatusCode, VMError
from runtime_support.loaders import statistics as dispatch_statistics
from runtime_support.io_format import (
    DEFAULT_MAX_ELEMENT_COUNT,
    format_results,
    format_value,
    to_numpy_for_output,
)
from runtime_support.io_specs import SpecError, parse_input

_VM_TYPES = {"i": "i32", "I": "i64", "f": "f32", "F": "f64", "r": "ref"}


class RunError(Exception):
    """A failure reported like an IREE status: `CODE; message` on stderr, exit 1."""

    def __init__(self, code: StatusCode, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code.name}; {message}")


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


def load_package(package_dir: str):
    """Imports PACKAGE_DIR/__init__.py as a package (under a private module name)."""
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
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[package_dir]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _guess_arg_type(spec: str) -> str:
    """Argument type of a SPEC when the package gives no calling convention: integer
    literals are i32 (i64 when out of i32 range), other bare numbers f32, the rest refs.
    """
    text = spec.strip()
    if re.fullmatch(r"[+-]?(0[xX][0-9a-fA-F]+|[0-9]+)", text):
        v = int(text, 0) if re.search(r"[xX]", text) else int(text, 10)
        return "i32" if -(2**31) <= v < 2**31 else "i64"
    if re.fullmatch(
        r"[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))",
        text,
    ):
        return "f32"
    return "ref"


def _parse_parameters(values: list[str]) -> list[tuple[str, str]] | None:
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
    file_mode = "ab" if mode[0] == "+" else "wb"
    arr = to_numpy_for_output(value, vm_type)
    with open(path, file_mode) as f:
        if path.lower().endswith(".npy"):
            np.save(f, arr, allow_pickle=False)
        else:
            f.write(arr.tobytes())


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pyree-run",
        description="Run an export of a pyree-generated package like iree-run-module.",
    )
    p.add_argument("package_dir", metavar="PACKAGE_DIR")
    p.add_argument("--function", default=None, metavar="NAME")
    p.add_argument("--input", action="append", default=[], metavar="SPEC")
    p.add_argument("--device", default="local")
    p.add_argument("--parameters", action="append", default=[], metavar="[SCOPE=]FILE")
    p.add_argument("--output", action="append", default=None, metavar="MODE")
    p.add_argument(
        "--output_max_element_count",
        "--print_max_element_count",
        dest="max_count",
        type=int,
        default=DEFAULT_MAX_ELEMENT_COUNT,
        metavar="N",
    )
    p.add_argument(
        "--print_statistics",
        action="store_true",
        help="after the call, print per-dispatch statistics to stderr: executable export "
        "name, count, total and mean time (off by default; costs nothing when off)",
    )
    return p


def _fail(stderr, text: str) -> int:
    stderr.write(text.rstrip("\n") + "\n")
    return 1


def run(args: argparse.Namespace, stdout=None, stderr=None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        pkg = load_package(args.package_dir)
    except FileNotFoundError as e:
        stderr.write(f"pyree-run: error: {e}\n")
        return 2
    except Exception as e:  # a broken package: report, do not crash with a traceback
        return _fail(
            stderr,
            f"INTERNAL; cannot import package {args.package_dir}: "
            f"{type(e).__name__}: {e}",
        )
    exports = dict(getattr(pkg, "EXPORTS", {}) or {})
    name = args.function
    if not name:
        if len(exports) != 1:
            return _fail(
                stderr,
                "INVALID_ARGUMENT; more than one exported function present; "
                "--function= must be specified explicitly",
            )
        name = next(iter(exports))
    if exports and name not in exports:
        return _fail(
            stderr,
            f"NOT_FOUND; no function `{name}` exported by module; "
            f"looking up function '{name}'",
        )

    cconv = (getattr(pkg, "CCONVS", None) or {}).get(name)
    arg_types = result_types = None
    if cconv:
        try:
            arg_types, result_types = parse_cconv(cconv)
        except ValueError as e:
            return _fail(stderr, f"UNIMPLEMENTED; {e}")

    try:
        ctx = pkg.load(
            device=args.device, parameters=_parse_parameters(args.parameters)
        )
    except VMError as e:
        return _fail(stderr, f"{_status_text(e)}; creating run context")
    except LoaderError as e:
        return _fail(stderr, f"INTERNAL; {e}; creating run context")
    method = getattr(ctx, name, None)
    if method is None:
        return _fail(
            stderr,
            f"NOT_FOUND; no function `{name}` exported by module; "
            f"looking up function '{name}'",
        )

    # Inputs.
    inputs = []
    for i, spec in enumerate(args.input):
        if arg_types is not None and i >= len(arg_types):
            return _fail(
                stderr,
                f"INVALID_ARGUMENT; function expected fewer input values; "
                f"parsing input `{spec}`; parsing function inputs",
            )
        t = arg_types[i] if arg_types is not None else _guess_arg_type(spec)
        try:
            inputs.append(parse_input(spec, t).value)
        except SpecError as e:
            return _fail(
                stderr,
                f"{e.code.name}; "
                + (f"{e.message}; " if e.message else "")
                + f"parsing input `{spec}`; parsing function inputs",
            )
    if arg_types is not None and len(inputs) != len(arg_types):
        return _fail(
            stderr,
            f"INVALID_ARGUMENT; input list and function mismatch; expected "
            f"{len(arg_types)} arguments but passed {len(inputs)}; "
            f"invoking function '{name}'",
        )

    # Call.
    stdout.write(f"EXEC @{name}\n")
    stdout.flush()
    if getattr(args, "print_statistics", False):
        dispatch_statistics.reset()
        dispatch_statistics.enable()
    try:
        raw = method(*inputs)
    except VMError as e:
        stdout.flush()
        return _fail(stderr, f"{_status_text(e)}; invoking function '{name}'")
    except (TypeError, ValueError) as e:
        stdout.flush()
        return _fail(stderr, f"INVALID_ARGUMENT; {e}; invoking function '{name}'")
    except LoaderError as e:
        stdout.flush()
        return _fail(stderr, f"INTERNAL; {e}; invoking function '{name}'")
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
        return _fail(stderr, f"{e}; outputting results; processing function outputs")
    except OSError as e:
        stdout.flush()
        return _fail(
            stderr, f"UNKNOWN; {e}; outputting results; processing function outputs"
        )
    stdout.flush()
    return 0


def _status_text(e: VMError) -> str:
    """`LOCATION: CODE; message[; in FUNCTION]` (iree-run-module prints `<vm>:0:` when the
    module carries no source location)."""
    text = f"{e.location or '<vm>:0'}: {e.code.name}; {e.message}"
    if e.function:
        text += f"; in {e.function}"
    return text


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse: usage error (2) or --help (0)
        return int(e.code or 0)
    try:
        return run(args)
    except KeyboardInterrupt:
        return 130
    except Exception:  # a bug in pyree: say so, do not pretend it is a module failure
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
