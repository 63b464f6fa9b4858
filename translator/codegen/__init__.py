"""Op IR -> a Python package: `__init__.py` (rendered from templates/) and `rodata.bin`.

    write_package(module, out_dir, name) -> Path of the package directory

Output is deterministic: the same module gives byte-identical files.
"""

from __future__ import annotations

import importlib.resources
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import jinja2

from translator.codegen.function import FunctionEmitter
from translator.codegen.escape import comment_text, docstring_literal, string_literal
from translator.codegen.names import NameTable
from translator.codegen.ops import HELPER_MODULES, OpRenderer
from translator.decoder import decode_function
from translator.imports import check_imports
from translator.module import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    Module,
    NameLoc,
)
from translator.verifier import function_cconvs, verify_function

RODATA_ALIGNMENT = 64


@dataclass
class GeneratedPackage:
    source: str
    rodata: bytes
    rodata_table: list[tuple[int, int]]
    structured_functions: int
    fallback_functions: int


def _format_location(module: Module, index: int, depth: int = 0) -> str | None:
    if depth > 8 or not 0 <= index < len(module.locations):
        return None
    loc = module.locations[index]
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename}:{loc.line}:{loc.column}"
    if isinstance(loc, NameLoc):
        child = _format_location(module, loc.child_location, depth + 1)
        return f'"{loc.name}"' + (f"({child})" if child else "")
    if isinstance(loc, CallSiteLoc):
        return _format_location(module, loc.callee, depth + 1)
    if isinstance(loc, FusedLoc):
        parts = [p for p in (_format_location(module, i, depth + 1) for i in loc.locations) if p]
        return parts[0] if len(parts) == 1 else ("[" + ", ".join(parts) + "]" if parts else None)
    return None


class _Locations:
    """pc -> formatted MLIR location, for the functions whose source map is trustworthy."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.maps: dict[int, dict[int, int]] = {}
        for k in range(module.function_count):
            sm = module.source_map_of(k)
            if sm is not None and sm.local_name in (module.export_names_of(k) or [sm.local_name]):
                self.maps[k] = dict(sm.locations)
        self.last: dict[int, str | None] = {}

    def __call__(self, k: int, pc: int) -> str | None:
        index = self.maps.get(k, {}).get(pc)
        if index is None:
            return None
        text = _format_location(self.module, index)
        if text is None or self.last.get(k) == text:
            return None  # only print a location when it changes
        self.last[k] = text
        return comment_text(text)


def _pyrepr(value) -> str:
    """Literals of untrusted text go through the one checked escaping path."""
    if isinstance(value, str):
        return string_literal(value)
    if isinstance(value, (tuple, list)):
        items = [_pyrepr(v) for v in value]
        if isinstance(value, tuple):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if value is None or isinstance(value, (bool, int)):
        return repr(value)
    raise TypeError(f"no literal for {type(value).__name__}")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_load_template),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters["pyrepr"] = _pyrepr
    return env


def _load_template(name: str) -> str:
    return importlib.resources.files("templates").joinpath(name).read_text(encoding="utf-8")


def _numeric_ops() -> set[str]:
    from runtime_support.vm.numerics import OPS

    return set(OPS)


def generate(module: Module, name: str, source_name: str = "") -> GeneratedPackage:
    check_imports(module)
    cconvs = function_cconvs(module)
    names = NameTable(module)
    locations = _Locations(module)
    renderer = OpRenderer(module, names, cconvs, _numeric_ops(), locations)
    functions = []
    structured = fallback = 0
    for k in range(module.function_count):
        fn = decode_function(module, k)
        verify_function(module, fn, cconvs)
        fn.name = module.function_display_name(k)
        code = FunctionEmitter(renderer, fn, cconvs[k], module.descriptors[k].ref_register_count).generate()
        code.name = names.function(k)
        decl = module.signatures[k].attr("iree.abi.declaration")
        exports = module.export_names_of(k)
        if decl:
            code.docstring = decl
        elif exports:
            code.docstring = f"VM export {string_literal(exports[0])} (cconv {string_literal(cconvs[k].text)}); no ABI declaration."
        else:
            code.docstring = f"Internal VM function {k} (cconv {string_literal(cconvs[k].text)})."
        if len(fn.blocks) > 1:
            if code.structured:
                structured += 1
            else:
                fallback += 1
        functions.append(code)

    # Rodata: every segment, 64-aligned, in one file read back zero-copy.
    blob = bytearray()
    table = []
    for seg in module.rodata:
        blob += b"\0" * (-len(blob) % RODATA_ALIGNMENT)
        table.append((len(blob), len(seg)))
        blob += seg.data

    helper_imports = []
    for key, modname in HELPER_MODULES.items():
        used = sorted(renderer.helpers[key])
        if used:
            helper_imports.append((modname, used))
    if renderer.helpers["context"]:
        helper_imports.append(("runtime_support.context", sorted(renderer.helpers["context"])))

    export_table = []
    for e in module.exports:
        cc = cconvs[e.internal_ordinal]
        export_table.append(
            (
                e.local_name,
                names.function(e.internal_ordinal),
                tuple(cc.arguments),
                tuple(cc.results),
                module.signatures[e.internal_ordinal].attr("iree.abi.declaration"),
            )
        )
    # No vmfb text inside the docstring: names travel as checked literals and comments.
    docstring = docstring_literal(
        f"Package translated by pyree from the VM module named in VM_MODULE_NAME.\n\n"
        f"{module.function_count} functions, {len(module.imports)} imports, "
        f"{len(module.rodata)} rodata segments.\n"
        "Generated code; regenerate with pyree-translate rather than editing.\n"
    )
    header_comment = comment_text(f"Source: {source_name}") if source_name else None
    source = _environment().get_template("module.py.j2").render(
        docstring=docstring,
        header_comment=header_comment,
        module_name=module.name,
        package_name=name,
        helper_imports=helper_imports,
        exports=[(e.local_name, module.signatures[e.internal_ordinal].attr("iree.abi.declaration")) for e in module.exports],
        cconvs=[(e.local_name, cconvs[e.internal_ordinal].text) for e in module.exports],
        export_table=export_table,
        imports=[(i.full_name, i.signature.calling_convention, i.optional) for i in module.imports],
        rodata=table,
        global_bytes=module.global_bytes_capacity,
        global_refs=module.global_ref_count,
        import_names=[names.import_name(i.ordinal) for i in module.imports],
        rodata_names=[names.rodata(s.ordinal) for s in module.rodata],
        functions=functions,
        function_map=[(names.function(k), names.function(k)) for k in range(module.function_count)],
    )
    return GeneratedPackage(source, bytes(blob), table, structured, fallback)


def format_source(source: str) -> str:
    import black

    return black.format_str(source, mode=black.Mode(line_length=100))


def write_package(
    module: Module, out_dir: Path, name: str, *, format_code: bool = True, source_name: str = ""
) -> Path:
    """Writes OUT_DIR/NAME/{__init__.py, rodata.bin}; returns the package directory."""
    pkg = generate(module, name, source_name)
    source = format_source(pkg.source) if format_code else pkg.source
    target = Path(out_dir) / name
    target.mkdir(parents=True, exist_ok=True)
    _atomic_write(target / "rodata.bin", pkg.rodata)
    _atomic_write(target / "__init__.py", source.encode("utf-8"))
    return target


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
