"""The executables a vmfb carries, listed for `pyree-translate --dump-output=executables`.

iree-dump-module shows an executable only as an external `.rodata` segment. This listing
goes one level in: each segment is recognised by its content (an ELF image, or the
`cuda-nvptx-fb` FlatBuffer, which is read and checked in full) and summarised in the same
column style. Names from the file are printed through `repr()` when they are not plain
printable ASCII, so every entry stays on its line.
"""

from __future__ import annotations

import re

from runtime_support.cuda.executable_def import (
    BINDING_INDIRECT,
    BINDING_READ_ONLY,
    FORMAT as CUDA_FORMAT,
    MAGIC as CUDA_MAGIC,
    read_cuda_executable,
)
from runtime_support.errors import LoaderError

_PLAIN = re.compile(r"[\x21-\x7e]+")


def _name(text: str) -> str:
    return text if _PLAIN.fullmatch(text) else repr(text)


def _flags(bits: int) -> str:
    names = [n for bit, n in ((BINDING_READ_ONLY, "READ_ONLY"), (BINDING_INDIRECT, "INDIRECT")) if bits & bit]
    rest = bits & ~(BINDING_READ_ONLY | BINDING_INDIRECT)
    if rest:
        names.append(f"0x{rest:X}")
    return "|".join(names) or "0"


def _cuda_lines(index: int, data: bytes) -> list[str]:
    try:
        exe = read_cuda_executable(data)
    except LoaderError as e:
        return [f"  .rodata[{index:3}] {CUDA_FORMAT}: invalid: {e}"]
    out = [
        f"  .rodata[{index:3}] {CUDA_FORMAT}, {len(data)} bytes: "
        f"{len(exe.modules)} module(s), {len(exe.exports)} export(s)"
    ]
    for i, m in enumerate(exe.modules):
        kind = f"PTX, .target {m.ptx_target() or '?'}" if m.is_ptx else "cubin"
        out.append(f"    module[{i}]: {kind}, {len(m.image)} bytes")
    for e in exe.exports:
        x, y, z = e.block_dims
        out.append(
            f"    export[{e.ordinal}] {_name(e.kernel_name)}: module {e.module_ordinal}, "
            f"block ({x}, {y}, {z}), shared memory {e.shared_memory_size} bytes, "
            f"{e.constant_count} constants, {e.binding_count} bindings "
            f"[{', '.join(_flags(f) for f in e.binding_flags)}]"
        )
        if e.location is not None:
            out.append(f"        location: {_name(e.location.filename)}:{e.location.line}")
    return out


def _vmvx_lines(index: int, data: bytes) -> list[str]:
    from translator.errors import InvalidModuleError
    from translator.vmvx import FORMAT, describe_kernels, scalar_reasons

    try:
        module, entries = describe_kernels(index, data)
    except InvalidModuleError as e:
        return [f"  .rodata[{index:3}] {FORMAT}: invalid: {e}"]
    out = [
        f"  .rodata[{index:3}] {FORMAT}, {len(data)} bytes: VM module {_name(module.name)}, "
        f"{len(entries)} entry point(s), {module.function_count} function(s), "
        f"{len(module.imports)} import(s); translated to vmvx_{index}.py"
    ]
    try:
        reasons = scalar_reasons(module)
    except InvalidModuleError as e:
        reasons = {e_.name: f"not decoded ({e})" for e_ in entries}
    for k, e in enumerate(entries):
        reason = reasons.get(e.name, "not analysed")
        how = "vectorised (numpy over the grid)" if reason is None else f"scalar: {reason}"
        out.append(
            f"    export[{k}] {_name(e.name)}: {e.binding_count} bindings, {e.constant_count} "
            f"constants, local memory {e.local_memory} bytes -> {e.function}; {how}"
        )
    for imp in module.imports:
        out.append(f"    import {_name(imp.full_name)} {imp.signature.calling_convention}")
    return out


def format_executables(module) -> str:
    from translator.vmvx import executable_ordinals

    lines = ["Executables:"]
    found = 0
    vmvx = executable_ordinals(module)
    for seg in module.rodata:
        if seg.ordinal in vmvx:
            found += 1
            lines += _vmvx_lines(seg.ordinal, bytes(seg.data))
            continue
        data = bytes(seg.data[:8])
        if data.startswith(b"\x7fELF"):
            found += 1
            lines.append(f"  .rodata[{seg.ordinal:3}] ELF image, {len(seg)} bytes")
        elif data.startswith(CUDA_MAGIC):
            found += 1
            lines += _cuda_lines(seg.ordinal, bytes(seg.data))
    if not found:
        lines.append("  (none)")
    return "\n".join(lines) + "\n"


__all__ = ["format_executables"]
