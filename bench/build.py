"""Compiling (cached), exporting the example models (cached), translating and loading.

Programs are compiled with the pinned iree-compile for this CPU
(`--iree-llvmcpu-target-cpu=host`) into the cache folder, keyed by source text, flags and
compiler version, so a second run skips compilation. Translation always runs: its time is
one of the figures reported.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import itertools
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
DEFAULT_CACHE = REPO / ".pyree-cache" / "bench"


VMVX_FLAGS = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx")


def compile_flags(target_cpu: str, backend: str = "llvm-cpu") -> tuple[str, ...]:
    if backend == "vmvx":  # (portable bytecode kernels: no target CPU)
        return VMVX_FLAGS
    return (
        "--iree-hal-target-device=local",
        "--iree-hal-local-target-device-backends=llvm-cpu",
        f"--iree-llvmcpu-target-cpu={target_cpu}",
    )


def _compiler_version() -> str:
    try:
        return importlib.metadata.version("iree-base-compiler")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _iree_compile() -> str:
    from iree.compiler.tools.binaries import find_tool

    return find_tool("iree-compile")


def compile_program(
    source: Path, cache: Path, target_cpu: str, backend: str = "llvm-cpu"
) -> tuple[Path, float | None]:
    """(vmfb path, seconds spent compiling; None when it came from the cache)."""
    flags = compile_flags(target_cpu, backend)
    key = hashlib.sha256(
        "\0".join((source.read_text(), *flags, _compiler_version())).encode()
    ).hexdigest()[:16]
    out = cache / "vmfb" / f"{source.stem}-{key}.vmfb"
    if out.is_file():
        return out, None
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=out.name, suffix=".tmp")
    os.close(fd)
    t0 = time.perf_counter()
    res = subprocess.run([_iree_compile(), *flags, str(source), "-o", tmp], capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if res.returncode != 0:
        os.unlink(tmp)
        raise RuntimeError(f"iree-compile {source.name} failed: {res.stderr.strip()[-2000:]}")
    os.replace(tmp, out)
    return out, elapsed


def _examples_export():
    from bench.models import load_examples  # examples/models/export.py, imported once

    return load_examples()


def export_model(model: str, cache: Path, target_cpu: str, dynamic_batch: bool = False):
    """(Exported record, seconds spent exporting+compiling; None when cached). Weights
    inline. The record's vmfb, input and expected output are files in the cache."""
    export = _examples_export()
    out = cache / "models" / f"{model}-{target_cpu}"
    record = out / (f"{model}_inline" + ("_dynbatch" if dynamic_batch else "") + ".json")
    if record.is_file():
        exported = export.Exported.from_json(out, json.loads(record.read_text()))
        versions = {d: export._version(d) for d in exported.versions}
        if exported.vmfb and exported.vmfb.is_file() and versions == exported.versions:
            return exported, None
    t0 = time.perf_counter()
    exported = export.export_model(
        model, "inline", out, target_cpu=target_cpu, keep_mlir=False, dynamic_batch=dynamic_batch
    )
    return exported, time.perf_counter() - t0


def _translator_key() -> str:
    """A hash of the translator's own sources (translator/, templates/)."""
    h = hashlib.sha256()
    for folder in ("translator", "templates"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix in (".py", ".j2", ".toml") and path.is_file():
                h.update(path.relative_to(REPO).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def translate(
    vmfb: Path, cache: Path, name: str, *, reuse: bool = True, queue_programs: bool = True,
) -> tuple[Path, float, bool]:
    """(package folder, seconds, reused): read + decode + verify + codegen + black + write.

    Packages are kept in the cache keyed by the vmfb, the translator's sources and the
    options; a reused one reports the time its translation took when it was made."""
    from translator.codegen import write_package
    from translator.reader import read_module_file

    options = b"" if queue_programs else b"no-fuse"
    key = hashlib.sha256(vmfb.read_bytes() + _translator_key().encode() + options).hexdigest()[:16]
    out_dir = cache / "packages" / f"{name}-{key}"
    record = out_dir / "translate.json"
    if reuse and record.is_file() and (out_dir / name / "__init__.py").is_file():
        return out_dir / name, json.loads(record.read_text())["seconds"], True
    t0 = time.perf_counter()
    pkg = write_package(read_module_file(vmfb), out_dir, name, queue_programs=queue_programs)
    seconds = time.perf_counter() - t0
    record.write_text(json.dumps({"seconds": seconds}) + "\n")
    return pkg, seconds, False


_counter = itertools.count()


def import_package(pkg_dir: Path):
    """Imports a generated package under a private module name (SyntaxError and
    IndentationError surface here for code Python cannot compile)."""
    from runtime_support.tools.run_cli import import_package_as

    return import_package_as(f"_pyree_bench_{pkg_dir.name}_{next(_counter)}", pkg_dir)
