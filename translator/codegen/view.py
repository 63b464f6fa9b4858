"""The view model `templates/module.py.j2` renders: plain dataclasses, no behaviour.

Raw vmfb text (names, declarations, cconvs, messages) stays raw here; the template
writes it only through the `pyrepr` filter (`escape.string_literal`). Function bodies
arrive as printed lines (`printer.py`); comments arrive already made safe.

`ExportRow` and `ImportRow` are written into the package as
`runtime_support.api.context.Export(...)` / `Import(...)`, the row types `ModuleContext`
reads: the contract between generated code and runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExportRow:
    name: str  # the export's VM name (raw)
    function: str  # the generated function's identifier
    arguments: str  # cconv argument codes, e.g. "rrI"
    results: str  # cconv result codes
    declaration: str | None  # iree.abi.declaration (raw)
    # translator/analyses/ownership.py: results returned zero-copy, arguments not kept
    fresh_results: tuple[int, ...] = ()
    unkept_arguments: tuple[int, ...] = ()


@dataclass(frozen=True)
class ImportRow:
    name: str  # full VM name (raw), e.g. "hal.buffer_view.create"
    cconv: str  # raw
    optional: bool
    local: str  # the identifier it is bound to in `_bind`


@dataclass(frozen=True)
class RodataRow:
    local: str
    offset: int
    length: int


@dataclass
class FunctionView:
    name: str  # identifier
    vm_name: str  # raw VM name (shown only through escape.comment_text)
    params: list[str]
    docstring: str  # raw
    body: list[str]  # printed lines, relative indentation


@dataclass
class ModuleView:
    docstring: str  # a checked literal
    header: list[str]  # comment texts (already one-line ASCII)
    module_name: str  # raw
    package_name: str
    helper_imports: list[tuple[str, list[str]]]
    exports: list[ExportRow]
    imports: list[ImportRow]
    rodata: list[RodataRow]
    messages: list[tuple[str, str]]  # (constant name, raw text)
    global_bytes: int
    global_refs: int
    functions: list[FunctionView]
    # A VMVX kernel module's own rows (translator/vmvx.py), None for a host package.
    kernel: object = None
    # Host package: its VMVX kernels as (executable sha256, kernel file name).
    vmvx_kernels: tuple = ()
    # Queue programs (codegen/queue_programs.py): (constant name, source text), and
    # (local, constant) pairs `_bind` binds.
    programs: list = field(default_factory=list)
    program_locals: list = field(default_factory=list)
