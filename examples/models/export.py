"""Export the example PyTorch models with iree-turbine and compile them for the local CPU.

    python3 examples/models/export.py --model resnet18 --params inline --out DIR
    python3 examples/models/export.py --model all --params both --out DIR [--target-cpu generic]

For each (model, params) this writes into DIR:

    NAME_PARAMS.mlirbc   the exported program (MLIR bytecode, torch dialect)
    NAME_PARAMS.vmfb     compiled with iree-compile for llvm-cpu (`local` device)
    NAME.irpa            the weights, for --params external (parameter scope "model")
    NAME_input.npy       the example input (fixed seed)
    NAME_expected.npy    PyTorch eager output for that input
    NAME_PARAMS.json     flags, versions, parameter scope and timings (seconds)

With --params inline the weights are constants inside the vmfb; with --params external
they are `#flow.parameter.named<"model"::...>` globals loaded through `io_parameters` from
NAME.irpa at module initialisation: run with `load(parameters={"model": "NAME.irpa"})`
(pyree) or an `io_parameters` module over an `iree.runtime.ParameterIndex` (IREE).

Importable (tests and bench/models.py use it): `export_model(...)`, `compile_vmfb(...)`,
`compile_flags(...)`. Needs torch, iree-turbine and iree-base-compiler (the test extra).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

if __package__:
    from .definitions import MODELS, build
else:  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from definitions import MODELS, build

PARAMS = ("inline", "external")
PARAMETER_SCOPE = "model"

BASE_FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
)


def compile_flags(target_cpu: str = "host") -> tuple[str, ...]:
    """iree-compile flags. `host` tunes kernels for this CPU (AVX-512 here: ResNet-18 runs
    about 5x faster than with `generic`, and compiles about 30% slower); the vmfb then runs
    only on CPUs with the same features. `generic` runs on any x86-64."""
    return BASE_FLAGS + (f"--iree-llvmcpu-target-cpu={target_cpu}",)


def _version(dist: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def iree_compile_tool() -> str:
    """The real iree-compile binary of the installed iree-base-compiler."""
    from iree.compiler.tools.binaries import find_tool

    return find_tool("iree-compile")


@dataclass
class Exported:
    """Paths and timings of one exported (and possibly compiled) model."""

    model: str
    params: str
    mlir: Path
    vmfb: Path | None
    irpa: Path | None
    input: Path
    expected: Path
    scope: str | None
    flags: tuple[str, ...]
    times: dict = field(default_factory=dict)  # build, eager, export, save_params, compile
    versions: dict = field(default_factory=dict)  # torch, iree-turbine, iree-base-compiler

    def to_json(self) -> dict:
        d = asdict(self)
        for k in ("mlir", "vmfb", "irpa", "input", "expected"):
            d[k] = None if d[k] is None else Path(d[k]).name
        return d

    @classmethod
    def from_json(cls, out_dir: Path, d: dict) -> "Exported":
        d = dict(d)
        for k in ("mlir", "vmfb", "irpa", "input", "expected"):
            d[k] = None if d[k] is None else Path(out_dir) / d[k]
        d["flags"] = tuple(d["flags"])
        return cls(**d)


# The example input's batch for a dynamic-batch export (torch.export specializes a dim of 1).
DYNAMIC_BATCH = 4


def export_model(
    name: str,
    params: str,
    out_dir,
    *,
    target_cpu: str = "host",
    compile: bool = True,
    keep_mlir: bool = True,
    seed: int = 0,
    dynamic_batch: bool = False,
) -> Exported:
    """Builds, runs (eager reference), exports and compiles one model into `out_dir`.

    keep_mlir=False deletes the MLIR once the vmfb is compiled (record's `mlir` is None).
    dynamic_batch=True exports the input's first dim as dynamic (torch.export.Dim), with a
    batch of DYNAMIC_BATCH in the example input (torch.export specializes a dim of 1),
    and names the files `NAME_PARAMS_dynbatch`.
    """
    import numpy as np
    import torch
    from iree.turbine import aot

    if params not in PARAMS:
        raise ValueError(f"params must be one of {PARAMS}, got {params!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    times = {}

    t0 = time.perf_counter()
    model, inputs = build(name, seed)
    if dynamic_batch:
        inputs = (torch.cat([inputs[0]] * DYNAMIC_BATCH),)
    times["build"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    with torch.no_grad():
        expected = model(*inputs)
    times["eager"] = time.perf_counter() - t0
    tag = "_dynbatch" if dynamic_batch else ""
    input_path = out_dir / f"{name}{tag}_input.npy"
    expected_path = out_dir / f"{name}{tag}_expected.npy"
    np.save(input_path, inputs[0].numpy())
    np.save(expected_path, expected.numpy())

    stem = f"{name}_{params}" + ("_dynbatch" if dynamic_batch else "")
    t0 = time.perf_counter()
    if params == "external":
        aot.externalize_module_parameters(model, external_scope=PARAMETER_SCOPE)
    dynamic = ({0: torch.export.Dim("batch")},) if dynamic_batch else None
    exported = aot.export(model, args=inputs, dynamic_shapes=dynamic)
    mlir = out_dir / f"{stem}.mlirbc"
    exported.save_mlir(mlir)
    times["export"] = time.perf_counter() - t0

    irpa = None
    if params == "external":
        irpa = out_dir / f"{name}.irpa"
        t0 = time.perf_counter()
        aot.save_module_parameters(irpa, model)
        times["save_params"] = time.perf_counter() - t0

    flags = compile_flags(target_cpu)
    result = Exported(
        model=name,
        params=params,
        mlir=mlir,
        vmfb=None,
        irpa=irpa,
        input=input_path,
        expected=expected_path,
        scope=PARAMETER_SCOPE if params == "external" else None,
        flags=flags,
        times=times,
        versions={d: _version(d) for d in ("torch", "iree-turbine", "iree-base-compiler")},
    )
    if compile:
        result.vmfb = out_dir / f"{stem}.vmfb"
        times["compile"] = compile_vmfb(mlir, result.vmfb, flags)
        if not keep_mlir:
            mlir.unlink()
            result.mlir = None
    (out_dir / f"{stem}.json").write_text(json.dumps(result.to_json(), indent=2) + "\n")
    return result


def compile_vmfb(mlir, vmfb, flags) -> float:
    """Compiles `mlir` into `vmfb` (written atomically); returns the seconds it took."""
    vmfb = Path(vmfb)
    fd, tmp = tempfile.mkstemp(dir=vmfb.parent, prefix=vmfb.name, suffix=".tmp")
    os.close(fd)
    cmd = [iree_compile_tool(), *flags, str(mlir), "-o", tmp]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if res.returncode != 0:
        os.unlink(tmp)
        raise RuntimeError(
            f"iree-compile failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-4000:]}"
        )
    os.chmod(tmp, 0o644)
    os.replace(tmp, vmfb)
    return elapsed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=(*MODELS, "all"), required=True)
    ap.add_argument("--params", choices=(*PARAMS, "both"), default="inline")
    ap.add_argument("--out", type=Path, required=True, help="output directory")
    ap.add_argument(
        "--target-cpu", default="host", help="host (default) or generic, or an LLVM CPU name"
    )
    ap.add_argument("--no-compile", action="store_true", help="export MLIR only")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    models = MODELS if args.model == "all" else (args.model,)
    params = PARAMS if args.params == "both" else (args.params,)
    for name in models:
        for p in params:
            r = export_model(
                name,
                p,
                args.out,
                target_cpu=args.target_cpu,
                compile=not args.no_compile,
                seed=args.seed,
            )
            made = [x for x in (r.mlir, r.vmfb, r.irpa) if x is not None]
            times = " ".join(f"{k}={v:.2f}s" for k, v in r.times.items())
            print(f"{name} {p}: {' '.join(str(x) for x in made)}  ({times})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
