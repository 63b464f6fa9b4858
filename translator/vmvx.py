"""VMVX executables: VM bytecode modules inside the host module, translated like it.

    find_executables(module)     [(rodata ordinal, bytes)] of its VMVX executables
    translate_kernels(module)    [KernelFile]: one Python module (and rodata file) each

A `vmvx-bytecode-fb` executable is a bytecode archive in the host's format (IREE's
vmvx_module_loader.c loads it with iree_vm_bytecode_module_create), so it goes through
the same reader, decoder, verifier and code generator. Before any code is made it is
held to what IREE's loader requires of it: every export takes the dispatch ABI
(`0rrriiiiiiiii_v`: local memory, constants, bindings, workgroup id, size and count),
and every required import is one the `vmvx` module serves with the same calling
convention. Its numerics are the kernel form (runtime_support/vm/numerics_ftz.py:
denormals flushed, as IREE's workers run them). A fault anywhere is an
InvalidModuleError naming the executable's rodata segment.

The generated module (templates/vmvx_kernel.py.j2) records the sha256 of the
executable's bytes; the host package registers its kernels by that digest, and the
VMVX loader (runtime_support/loaders/vmvx.py) runs the module registered for the bytes
`hal.executable.create` receives. Nothing is translated at run time.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from translator.container import FILE_IDENTIFIER, parse_container
from translator.errors import InvalidModuleError, quote_name
from translator.module import Module

FORMAT = "vmvx-bytecode-fb"
ENTRY_CCONV = "0rrriiiiiiiii_v"
# Entry attributes IREE's loader reads (decimal strings; absent = 0).
ENTRY_ATTRS = ("local_memory", "constant_count", "binding_count")
PAGE = 4096  # IREE_HAL_EXECUTABLE_WORKGROUP_LOCAL_MEMORY_PAGE_SIZE


@dataclass(frozen=True)
class Entry:
    name: str  # export name (raw)
    function: str  # generated function identifier
    local_memory: int  # bytes (IREE reads the attribute, then whole pages)
    constant_count: int
    binding_count: int


@dataclass(frozen=True)
class KernelView:
    sha256: str
    rodata_file: str | None
    entries: list
    vectorized: list  # translator.vmvx_vectorize.Vectorized, one per vectorised entry


@dataclass
class KernelFile:
    rodata_ordinal: int
    sha256: str
    file_name: str  # `vmvx_<ordinal>.py`
    source: str  # unformatted
    rodata_name: str | None
    rodata: bytes
    functions: int
    vectorized: int = 0
    scalar_reasons: dict | None = None  # entry name -> why it runs as its scalar translation


def _is_archive(data: memoryview) -> bool:
    """Whether a rodata segment is a bytecode archive (the container's identifier)."""
    try:
        c = parse_container(data)
    except InvalidModuleError:
        return False
    return bytes(c.flatbuffer[4:8]) == FILE_IDENTIFIER


def find_executables(module: Module) -> list[tuple[int, bytes]]:
    """The VMVX executables a module carries: rodata segments holding a bytecode archive,
    in a module that queries the `vmvx-bytecode-fb` format."""
    from translator.summary import executable_formats

    if FORMAT not in executable_formats(module):
        return []
    return [(s.ordinal, bytes(s.data)) for s in module.rodata if _is_archive(s.data)]


def executable_ordinals(module: Module) -> set[int]:
    """The rodata ordinals of `module`'s VMVX executables."""
    return {k for k, _ in find_executables(module)}


def describe_kernels(ordinal: int, data: bytes) -> tuple[Module, list[Entry]]:
    """The executable's module and entry points (verified), for listings."""
    from translator.codegen.names import NameTable
    from translator.reader import read_module

    where = f"VMVX executable in .rodata[{ordinal}]"
    try:
        sub = read_module(data)
        entries = verify_kernel_module(sub, where)
    except InvalidModuleError as e:
        raise InvalidModuleError(str(e) if str(e).startswith(where) else f"{where}: {e}") from None
    names = NameTable(sub)
    return sub, [
        Entry(n, names.function(k), a["local_memory"], a["constant_count"], a["binding_count"])
        for n, k, a in entries
    ]


def summary_line(module: Module) -> str | None:
    """`pyree-translate`'s line about the VMVX kernels it translated."""
    found = find_executables(module)
    if not found:
        return None
    entries = vectorized = 0
    for ordinal, data in found:
        try:
            sub, listed = describe_kernels(ordinal, data)
            entries += len(listed)
            vectorized += count_vectorized(sub)
        except InvalidModuleError:
            pass
    return (
        f"  VMVX: {len(found)} executable(s), {entries} kernel(s) translated to Python, "
        f"{vectorized} of them vectorised with numpy (the others run as scalar Python)"
    )


def count_vectorized(sub: Module) -> int:
    """How many of a verified executable module's entry points vectorise."""
    return sum(reason is None for reason in scalar_reasons(sub).values())


def scalar_reasons(sub: Module) -> dict:
    """Per export of a verified executable module: None where it vectorises, else why it
    runs as its scalar translation."""
    from translator.codegen.names import NameTable
    from translator.pipeline import Pipeline

    pipeline = Pipeline(sub)
    entries = [(e.local_name, e.internal_ordinal, None) for e in sub.exports]
    reasons = vectorize_entries(pipeline, NameTable(sub), entries)[1]
    return {e.local_name: reasons.get(e.local_name) for e in sub.exports}


def _attr_count(sig, key: str, where: str) -> int:
    text = sig.attr(key)
    if text is None or text == "":
        return 0
    if not text.isdigit() or int(text) >= 1 << 32:
        raise InvalidModuleError(f"{where}: attribute {key} = {quote_name(text)} is not a u32")
    return int(text)


def verify_kernel_module(sub: Module, where: str) -> list[tuple[str, int, dict]]:
    """IREE loader's requirements: [(export name, function ordinal, attrs)]."""
    from runtime_support.modules.vmvx import IMPORTS

    if not sub.exports:
        raise InvalidModuleError(f"{where}: the executable exports no entry point")
    entries = []
    for e in sub.exports:
        if not 0 <= e.internal_ordinal < sub.function_count:
            raise InvalidModuleError(
                f"{where}: export {quote_name(e.local_name)} names function "
                f"{e.internal_ordinal} of {sub.function_count}"
            )
        sig = sub.signatures[e.internal_ordinal]
        if sig.calling_convention != ENTRY_CCONV:
            raise InvalidModuleError(
                f"{where}: entry point {quote_name(e.local_name)} has calling convention "
                f"{quote_name(sig.calling_convention)}; IREE's VMVX loader requires {ENTRY_CCONV!r}"
            )
        attrs = {k: _attr_count(sig, k, f"{where}: entry point {quote_name(e.local_name)}") for k in ENTRY_ATTRS}
        entries.append((e.local_name, e.internal_ordinal, attrs))
    for imp in sub.imports:
        declared = IMPORTS.get(imp.full_name)
        cconv = imp.signature.calling_convention
        if declared == cconv or imp.optional:
            continue  # (an optional import vmvx lacks stays unresolved, as in IREE)
        what = "is not served by the vmvx module" if declared is None else (
            f"has calling convention {quote_name(cconv)} but vmvx.{imp.full_name.partition('.')[2]} "
            f"takes {quote_name(declared)}"
        )
        raise InvalidModuleError(f"{where}: import {imp.ordinal} {quote_name(imp.full_name)} {what}")
    return entries


def translate_kernel(ordinal: int, data: bytes) -> KernelFile:
    from translator import __version__
    from translator.codegen.escape import comment_text, docstring_literal
    from translator.codegen.names import NameTable
    from translator.codegen.render import render_module
    from translator.pipeline import Pipeline
    from translator.reader import read_module
    from runtime_support.vm.numerics_ftz import INLINE

    where = f"VMVX executable in .rodata[{ordinal}]"
    try:
        sub = read_module(data)
        entries = verify_kernel_module(sub, where)
        pipeline = Pipeline(sub)
        pipeline.functions  # noqa: B018  (decoded and verified: InvalidModuleError)
        names = NameTable(sub)
        vectorized, reasons = vectorize_entries(pipeline, names, entries)
        digest = hashlib.sha256(data).hexdigest()
        file_name = f"vmvx_{ordinal}.py"
        rodata_name = f"vmvx_{ordinal}.bin" if sub.rodata else None
        view = KernelView(
            sha256=digest,
            rodata_file=rodata_name,
            entries=[
                Entry(name, names.function(k), a["local_memory"], a["constant_count"], a["binding_count"])
                for name, k, a in entries
            ],
            vectorized=vectorized,
        )
        # Translate-time checks of the module's imports and exports, before its code is made.
        pipeline.check_imports()
        pipeline.check_exports()
        pkg = render_module(
            sub,
            f"vmvx_{ordinal}",
            f".rodata[{ordinal}] ({FORMAT})",
            pipeline=pipeline,
            template="vmvx_kernel.py.j2",
            helper_modules={
                "numerics": "runtime_support.vm.numerics_ftz",
                # (the per-element buffer and list ops in one call each)
                "buffer": "runtime_support.loaders.vmvx_scalar",
                "list": "runtime_support.loaders.vmvx_scalar",
            },
            view_fields={
                "kernel": view,
                "docstring": docstring_literal(
                    f"VMVX kernels translated by pyree from the executable in the host module's\n"
                    f".rodata[{ordinal}] ({len(entries)} entry points, {sub.function_count} functions, "
                    f"{len(sub.imports)} imports).\n"
                    "Generated code, run by runtime_support/loaders/vmvx.py; regenerate the package\n"
                    "rather than editing.\n"
                ),
                "header": [comment_text(f"Translator: pyree {__version__}")],
            },
            queue_programs=False,
            numeric_inline=INLINE,
        )
    except InvalidModuleError as e:
        raise InvalidModuleError(str(e) if str(e).startswith(where) else f"{where}: {e}") from None
    except RecursionError:
        raise InvalidModuleError(f"{where}: nested too deeply") from None
    return KernelFile(
        ordinal, digest, file_name, pkg.source, rodata_name, pkg.rodata, sub.function_count,
        vectorized=len(vectorized), scalar_reasons=reasons,
    )


def vectorize_entries(pipeline, names, entries) -> tuple[list, dict]:
    """([Vectorized], {entry name: reason}) for an executable's entry points
    (translator/vmvx_vectorize/); a kernel that cannot be shown safe keeps its scalar
    translation only."""
    from translator.vmvx_vectorize import vectorize

    out, reasons = [], {}
    for name, k, _ in entries:
        v, reason = vectorize(pipeline.functions[k], names.function(k))
        if v is None:
            reasons[name] = reason
        else:
            out.append(v)
    return out, reasons


def translate_kernels(module: Module) -> list[KernelFile]:
    """Every VMVX executable of `module`, translated (the same bytes once)."""
    out, seen = [], set()
    for ordinal, data in find_executables(module):
        digest = hashlib.sha256(data).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        out.append(translate_kernel(ordinal, data))
    return out


__all__ = ["FORMAT", "KernelFile", "find_executables", "translate_kernels", "verify_kernel_module"]
