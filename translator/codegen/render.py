"""One VM module -> its generated source: the view model (codegen/view.py) of its functions,
rodata, imports and exports, rendered through a template of templates/ (module.py.j2 for
a host module, vmvx_kernel.py.j2 for a VMVX executable's).

    render_module(module, name, pipeline=...) -> GeneratedPackage (source unformatted)

Both the host package (codegen/__init__.py `generate`) and each VMVX kernel module
(translator/vmvx.py) are rendered here, and this module imports neither of them: the
host's generate translates its kernels (vmvx.py), which render through this module,
then renders the host module itself.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

import jinja2

from translator import __version__
from translator.analyses.ownership import export_ownership
from translator.analyses.ref_globals import unchecked_ref_loads
from translator.codegen.escape import comment_text, docstring_literal, string_literal
from translator.codegen.function import FunctionEmitter
from translator.codegen.names import NameTable
from translator.codegen.ops import HELPER_MODULES, OpRenderer
from translator.codegen.passes import (
    MessageTable,
    drop_unread_constants,
    tidy_ifs,
    tidy_releases,
    trim_ref_init,
)
from translator.codegen.printer import Printer
from translator.codegen.queue_programs import ProgramTable
from translator.codegen.view import (
    ExportRow,
    FunctionView,
    ImportRow,
    ModuleView,
    RodataRow,
)
from translator.module import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    Module,
    NameLoc,
)
from translator.pipeline import Pipeline
from translator.template_files import read_template

RODATA_ALIGNMENT = 64


@dataclass
class GeneratedPackage:
    source: str
    rodata: bytes
    rodata_table: list[tuple[int, int]]
    structured_functions: int
    fallback_functions: int
    kernels: list = field(default_factory=list)  # translator.vmvx.KernelFile, one per executable


# A location is a tree the vmfb describes (fused and call-site locations nest); a hostile
# file can make it exponentially wide, so one location visits at most this many nodes.
_LOCATION_NODE_BUDGET = 256


def _format_location(module: Module, index: int, depth: int = 0, budget: list | None = None) -> str | None:
    if budget is None:
        budget = [_LOCATION_NODE_BUDGET]
    budget[0] -= 1
    if budget[0] < 0 or depth > 8 or not 0 <= index < len(module.locations):
        return None
    loc = module.locations[index]
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename}:{loc.line}:{loc.column}" if loc.line else None
    if isinstance(loc, NameLoc):
        child = _format_location(module, loc.child_location, depth + 1, budget)
        return f'"{loc.name}"' + (f"({child})" if child else "")
    if isinstance(loc, CallSiteLoc):
        return _format_location(module, loc.callee, depth + 1, budget)
    if isinstance(loc, FusedLoc):
        found = (_format_location(module, i, depth + 1, budget) for i in loc.locations)
        parts = list(dict.fromkeys(p for p in found if p))
        if len(parts) > 2:  # compact: the first location and how many more were fused
            return f"{parts[0]} (+{len(parts) - 1} more)"
        return ", ".join(parts) if parts else None
    return None


class _Locations:
    """pc -> compact MLIR location text, for the functions whose source map is trustworthy."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.maps: dict[int, dict[int, int]] = {}
        for k in range(module.function_count):
            sm = module.source_map_of(k)
            if sm is not None and sm.local_name in (module.export_names_of(k) or [sm.local_name]):
                self.maps[k] = dict(sm.locations)
        self.cache: dict[int, str | None] = {}

    def has_map(self, k: int) -> bool:
        return bool(self.maps.get(k))

    def has_locations(self, k: int) -> bool:
        """Whether function k shows any source location (a vmfb compiled without a debug
        database has none: its generated code then carries VM provenance comments)."""
        return any(self(k, pc) is not None for pc in self.maps.get(k, ()))

    def __call__(self, k: int, pc: int) -> str | None:
        index = self.maps.get(k, {}).get(pc)
        if index is None:
            return None
        if index not in self.cache:
            self.cache[index] = _format_location(self.module, index)
        return self.cache[index]

    def file_of(self, k: int, pc: int) -> str | None:
        """The file name when the location at (k, pc) is a plain file:line:col."""
        index = self.maps.get(k, {}).get(pc)
        for _ in range(8):  # as _format_location: call sites show the callee
            if index is None or not 0 <= index < len(self.module.locations):
                return None
            loc = self.module.locations[index]
            if isinstance(loc, FileLineColLoc):
                return loc.filename if loc.line else None
            if isinstance(loc, CallSiteLoc):
                index = loc.callee
            elif isinstance(loc, FusedLoc) and len(loc.locations) == 1:
                index = loc.locations[0]
            else:
                return None
        return None


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
    return read_template(name)


def _numeric_ops() -> set[str]:
    from runtime_support.vm.numerics import OPS

    return set(OPS)


def _function_docstring(module: Module, k: int, cc) -> str:
    decl = module.signatures[k].attr("iree.abi.declaration")
    if decl:
        return decl
    exports = module.export_names_of(k)
    if exports:
        return f"VM export {string_literal(exports[0])} (cconv {string_literal(cc.text)}); no ABI declaration."
    return f"Internal VM function {k} (cconv {string_literal(cc.text)})."


def render_module(
    module: Module,
    name: str,
    source_name: str = "",
    *,
    pipeline: Pipeline,
    provenance: bool = False,
    queue_programs: bool = True,
    template: str = "module.py.j2",
    helper_modules: dict[str, str] | None = None,
    view_fields: dict | None = None,
    numeric_inline: dict | None = None,
) -> GeneratedPackage:
    """The module's source and rodata (its `kernels` left empty). `pipeline`: the module's
    front end (decoded, verified functions and their analyses), its translate-time checks
    (check_imports, check_exports) already run. `provenance`: VM comments (`# pc 0x42
    hal.fence.await`) on every function; without it, only on functions that show no
    source location. `queue_programs`: every queue region becomes a queue program
    (codegen/queue_programs.py, docs/design/host-path.md); False (--no-fuse) keeps one
    import call per op. `template`, `helper_modules` (helper kind -> module, over
    ops.HELPER_MODULES), `view_fields` (extra ModuleView fields) and `numeric_inline`: a
    VMVX kernel module's (translator/vmvx.py)."""
    functions = pipeline.functions
    cconvs = pipeline.cconvs
    names = NameTable(module)
    locations = _Locations(module)
    renderer = OpRenderer(module, names, cconvs, _numeric_ops(), locations)
    if numeric_inline is not None:  # (a VMVX kernel's: translator/vmvx.py)
        renderer.numeric_inline = numeric_inline
    renderer.unchecked_ref_loads = unchecked_ref_loads(module, functions)
    if queue_programs:
        renderer.programs = ProgramTable(renderer.use, names.rodata)
    messages = MessageTable()
    views = []
    structured = fallback = 0
    for k, fn in enumerate(functions):
        ref_count = module.descriptors[k].ref_register_count
        tree = FunctionEmitter(renderer, fn, cconvs[k], ref_count, pipeline.cfg(k)).generate()
        body = tidy_releases(trim_ref_init(tree.body))
        tidy_ifs(body)
        if queue_programs:
            body = drop_unread_constants(body)
        messages.hoist(body)
        printer = Printer(provenance=provenance or not locations.has_locations(k))
        views.append(
            FunctionView(
                name=names.function(k),
                vm_name=fn.name,
                params=tree.params,
                docstring=_function_docstring(module, k, cconvs[k]),
                body=printer.function_body(body),
            )
        )
        if len(fn.blocks) > 1:
            if tree.structured:
                structured += 1
            else:
                fallback += 1

    # Rodata: every segment, 64-aligned, in one file read back zero-copy.
    blob = bytearray()
    table = []
    for seg in module.rodata:
        blob += b"\0" * (-len(blob) % RODATA_ALIGNMENT)
        table.append((len(blob), len(seg)))
        blob += seg.data

    helper_imports = []
    context_names = {"Export", "ModuleContext", "describe_exports"} | renderer.helpers["context"]
    if module.imports:
        context_names.add("Import")
    helper_imports.append(("runtime_support.api.context", sorted(context_names)))
    for key, modname in {**HELPER_MODULES, **(helper_modules or {})}.items():
        used = sorted(renderer.helpers[key])
        if used:
            helper_imports.append((modname, used))

    exports = []
    for e in module.exports:
        cc = cconvs[e.internal_ordinal]
        owned = export_ownership(module, functions[e.internal_ordinal], cc)
        exports.append(
            ExportRow(
                fresh_results=owned.fresh_results,
                unkept_arguments=owned.unkept_arguments,
                name=e.local_name,
                function=names.function(e.internal_ordinal),
                arguments="".join(cc.arguments),
                results="".join(cc.results),
                declaration=module.signatures[e.internal_ordinal].attr("iree.abi.declaration"),
            )
        )
    # No vmfb text inside the docstring: names travel as checked literals and comments.
    docstring = docstring_literal(
        f"Package translated by pyree from the VM module named in VM_MODULE_NAME.\n\n"
        f"{module.function_count} functions, {len(module.imports)} imports, "
        f"{len(module.rodata)} rodata segments.\n"
        "Generated code; regenerate with the command below rather than editing.\n"
    )
    source = source_name or "INPUT.vmfb"
    header = [
        comment_text(f"Source: {source_name or '(not recorded)'}"),
        comment_text(f"Translator: pyree {__version__}"),
        comment_text(f"Regenerate: pyree-translate {shlex.quote(source)} -o OUT_DIR --name {name}"),
    ]
    fields = {"docstring": docstring, "header": header, **(view_fields or {})}
    view = ModuleView(
        module_name=module.name,
        package_name=name,
        helper_imports=helper_imports,
        exports=exports,
        imports=[
            ImportRow(i.full_name, i.signature.calling_convention, i.optional, names.import_name(i.ordinal))
            for i in module.imports
        ],
        rodata=[RodataRow(names.rodata(s.ordinal), off, length) for s, (off, length) in zip(module.rodata, table)],
        messages=messages.constants(),
        programs=renderer.programs.constants if renderer.programs else [],
        program_locals=renderer.programs.locals if renderer.programs else [],
        global_bytes=module.global_bytes_capacity,
        global_refs=module.global_ref_count,
        functions=views,
        **fields,
    )
    text = _environment().get_template(template).render(m=view)
    return GeneratedPackage(text, bytes(blob), table, structured, fallback)


