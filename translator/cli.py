"""`pyree-translate`: translate a .vmfb into a Python package, or dump it.

    pyree-translate INPUT.vmfb [-o OUTDIR] [--name NAME] [--dump] [--no-format]

Exit status: 0 success; 1 invalid or unsupported input (one line on stderr naming the
file, the place and the reason), or an internal error (one line naming the input, the
exception and the translator file and function it came from; never a traceback);
2 usage error.
"""

from __future__ import annotations

import argparse
import keyword
import sys
import time
import traceback
from pathlib import Path

from runtime_support.names import identifier
from translator.errors import InvalidModuleError, OutputFolderError


# Top-level modules a generated package imports, itself or through the runtime: a package
# of one of these names in a folder on sys.path would be imported in its place.
SHADOWED_MODULES = frozenset(sys.stdlib_module_names) | {
    "numpy", "runtime_support", "translator", "llvmlite", "elftools",
    "ml_dtypes", "pycuda", "mpi4py", "jinja2", "black", "flatbuffers",
}


def package_name_for(path: str | Path) -> str:
    """The input file's stem turned into a valid Python identifier; `_vmfb` appended
    where that would be the name of a module packages import (`numpy.vmfb`)."""
    stem = Path(path).name
    for suffix in (".vmfb", ".fb"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    name = identifier(stem, prefix="m_") if stem else "module"
    return f"{name}_vmfb" if name in SHADOWED_MODULES else name


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("pyree")
    except Exception:  # not installed (run from a checkout)
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pyree-translate",
        description="Translate an IREE .vmfb module into an importable Python package.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    p.add_argument("input", help="the .vmfb file")
    p.add_argument("-o", "--output-dir", default="out", help="where the package goes (default: ./out)")
    p.add_argument("--name", help="package name (default: the input file's stem)")
    p.add_argument(
        "--dump",
        action="store_true",
        help="print the module like iree-dump-module (metadata and disassembly); write nothing",
    )
    p.add_argument(
        "--dump-output",
        choices=("all", "metadata", "disassembly", "executables"),
        default="all",
        help="with --dump: which parts to print (as iree-dump-module --output=...); "
        "executables (pyree's own) lists the kernels each executable carries",
    )
    p.add_argument(
        "--bytecode-offsets",
        action="store_true",
        help="with --dump: prefix instructions with their pc, like --bytecode_offsets",
    )
    p.add_argument("--no-format", action="store_true", help="do not run black on the output")
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse (exit 1) a module with executables pyree cannot run, instead of warning",
    )
    p.add_argument(
        "-v", "--verbose", action="store_true", help="also list every function in the summary"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace OUT_DIR/NAME even when it is not a package pyree-translate wrote "
        "(by default such a folder, file or link is left as it is: exit 1)",
    )
    p.add_argument(
        "-q", "--quiet", action="store_true", help="print only the package path (no summary)"
    )
    p.add_argument(
        "--provenance",
        action="store_true",
        help="VM comments on every function: one per statement group, its pc range and the "
        "calls it makes (`# pc 0x42-0x9a hal.fence.create, hal.fence.await`); without this "
        "flag only functions that have no source locations get them",
    )
    p.add_argument(
        "--no-fuse",
        action="store_true",
        help="one call of each hal import per VM op, no queue programs (by default each "
        "queue region becomes a queue program, a module constant of named steps run by "
        "runtime_support/exec: docs/design/host-path.md); the same behaviour, slower (for "
        "reading or debugging the host code op by op)",
    )
    return p


def dump_text(module, *, output: str = "all", offsets: bool = False) -> str:
    from translator.disasm import Disassembler
    from translator.pipeline import Pipeline
    from translator.summary import format_metadata

    parts = []
    if output == "executables":  # pyree's own: what iree-dump-module shows as raw .rodata
        from translator.executables import format_executables

        return format_executables(module)
    if output in ("all", "metadata"):
        parts.append(format_metadata(module))
    if output in ("all", "disassembly"):
        functions = Pipeline(module).functions
        parts.append(Disassembler(module).module_text(offsets=offsets, functions=functions))
    return "\n".join(parts)


def _unrunnable_formats(module) -> list[str]:
    """One sentence per executable format in `module` that pyree has no loader for."""
    from runtime_support import executable_formats as ef
    from translator.summary import executable_formats

    return [ef.unsupported_reason(f) for f in executable_formats(module) if not ef.is_supported(f)]


def _shown(name: str) -> str:
    """A vmfb name for a one-line message: as is when plain, else as a literal."""
    return name if name.isascii() and name.isprintable() and name.strip() == name else repr(name)


def _summary(module, package: Path, seconds: float, verbose: bool) -> None:
    """What was translated and written, on stderr (stdout keeps the package path alone)."""
    from translator.summary import executable_formats

    exports = [e.local_name for e in module.exports]
    lines = [
        f"pyree-translate: wrote {package} in {seconds:.2f} s",
        f"  {module.function_count} functions, {len(exports)} exports "
        f"({', '.join(_shown(n) for n in exports[:8])}{', ...' if len(exports) > 8 else ''}), "
        f"{len(module.imports)} imports",
        f"  executable formats: {', '.join(executable_formats(module)) or 'none'}",
        "  files: " + ", ".join(
            f"{f.name} ({f.stat().st_size:,} bytes)"
            for f in sorted(package.iterdir())
            if f.is_file() and not f.name.startswith(".")  # (the marker is no product)
        ),
    ]
    from translator.vmvx import summary_line

    vmvx = summary_line(module)
    if vmvx:
        lines.insert(3, vmvx)
    if verbose:
        for k in range(module.function_count):
            lines.append(f"  function {k}: {_shown(module.function_display_name(k))}")
    print("\n".join(lines), file=sys.stderr)


def internal_error_line(path, exc: BaseException) -> str:
    """One ASCII line for an unexpected exception: the input, the exception, and the
    innermost frame (file, line and function) it came from."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        f = frames[-1]
        where = f" (in {_short(f.filename)}:{f.lineno} {f.name})"
    text = ascii(str(exc))[1:-1]
    if len(text) > 300:
        text = text[:300] + "..."
    return (
        f"pyree-translate: internal error: {ascii(str(path))[1:-1]}: "
        f"{type(exc).__name__}: {text}{where}"
    )


def _short(filename: str) -> str:
    """A source file relative to the repository when it lies inside it."""
    root = Path(__file__).resolve().parents[1]
    try:
        return ascii(str(Path(filename).resolve().relative_to(root)))[1:-1]
    except ValueError:
        return ascii(filename)[1:-1]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    path = args.input
    try:
        return _translate(args, path)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - the translator never ends in a traceback
        print(internal_error_line(path, e), file=sys.stderr)
        return 1


def _translate(args, path) -> int:
    from translator.reader import read_module_file

    try:
        module = read_module_file(path)
        if args.dump:
            sys.stdout.write(
                dump_text(module, output=args.dump_output, offsets=args.bytecode_offsets)
            )
            return 0
        from translator.codegen import write_package
        from translator.pipeline import Pipeline

        unrunnable = _unrunnable_formats(module)
        for reason in unrunnable:
            kind = "error" if args.strict else "warning"
            print(f"pyree-translate: {kind}: {path}: {reason}", file=sys.stderr)
        if unrunnable and args.strict:
            return 1

        name = args.name or package_name_for(path)
        if not name.isidentifier() or keyword.iskeyword(name):
            print(f"pyree-translate: --name {name!r} is not a valid Python identifier", file=sys.stderr)
            return 2
        if name in SHADOWED_MODULES:
            print(
                f"pyree-translate: --name {name!r} is the name of a module generated packages "
                "import; a package so named would replace it for every program that imports "
                "from the output folder: choose another name",
                file=sys.stderr,
            )
            return 2
        if not args.name and name.endswith("_vmfb") and name[:-5] in SHADOWED_MODULES:
            print(
                f"pyree-translate: warning: {path}: the package is named {name!r}, not "
                f"{name[:-5]!r}, the name of a module generated packages import (--name "
                "chooses another)",
                file=sys.stderr,
            )
        started = time.perf_counter()
        out = write_package(
            module,
            Path(args.output_dir),
            name,
            format_code=not args.no_format,
            source_name=Path(path).name,
            provenance=args.provenance,
            pipeline=Pipeline(module),
            queue_programs=not args.no_fuse,
            force=args.force,
        )
        print(out)
        if not args.quiet:
            _summary(module, Path(out), time.perf_counter() - started, args.verbose)
        return 0
    except InvalidModuleError as e:
        print(f"pyree-translate: error: {e.with_path(path)}", file=sys.stderr)
        return 1
    except OutputFolderError as e:
        print(f"pyree-translate: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        where = e.filename or path  # the output path when writing failed, not the input's
        print(f"pyree-translate: error: {where}: {e.strerror or e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
