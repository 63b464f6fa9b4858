"""Compiling small MLIR test programs with the pinned iree-compile (test-only helper).

Superseded by the shared `compile_mlir` fixture in tests/conftest.py once that exists.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

LLVM_CPU_FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
)
VM_FLAGS = (
    "--compile-mode=vm",
    "--iree-vm-target-extension-f32",
    "--iree-vm-target-extension-f64",
)


def compile_mlir(
    source: str, out_dir: Path, flags=LLVM_CPU_FLAGS, name: str = "m"
) -> Path:
    """Compiles `source` into out_dir/NAME-HASH.vmfb (reused when already there)."""
    key = hashlib.sha256((source + "\0" + "\0".join(flags)).encode()).hexdigest()[:16]
    out = Path(out_dir) / f"{name}-{key}.vmfb"
    if out.exists():
        return out
    src = out.with_suffix(".mlir")
    src.write_text(source)
    subprocess.run(
        ["iree-compile", *flags, str(src), "-o", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out


def dump_module(path: Path, output: str = "metadata") -> str:
    return subprocess.run(
        ["iree-dump-module", f"--output={output}", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
