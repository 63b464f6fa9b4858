"""The GPU check: the conformance suite and the benchmark programs built for CUDA, run under
`iree.runtime` on its `cuda` driver and translated by pyree on `device="cuda"`.

    python -m tests.gpu                       # everything, for the GPU's own sm_XY
    python -m tests.gpu --fast --quick        # one conformance case per folder, short timings
    python -m tests.gpu --filter linalg --skip-bench
    python -m tests.gpu --build-only          # no GPU needed: compile, translate, ptxas all

Needs (except --build-only): pycuda (`python -m runtime_support.cuda.install`), the NVIDIA
driver and a GPU, iree-base-runtime with its cuda driver, and ../shared/iree-e2e for the
conformance part. Without them it stops with one line saying which is missing (exit 2).

Conformance (tests/conformance.py's cases, flags switched from llvm-cpu to
`--iree-hal-target-device=cuda --iree-cuda-target=<sm>`): every exported test runs on both
sides; the check results (passed or not, number of check calls) must be identical, and the
values every check received must be bit-identical, or equal within rtol 1e-5 / atol 1e-6
for floating-point values (reported as `tolerance`: GPU reductions may order sums
differently run to run).

Benchmarks (bench/programs.py, the hand-written programs): `main` on both sides with the
same inputs, outputs compared the same way, then calls timed alternately (bench.timing),
printed side by side: median microseconds per call, pyree / IREE.

A program the pinned iree-compile cannot build for CUDA (6 of the 78 conformance cases
with iree-compile 3.13: sub-byte and fp4 types, two attention variants, one narrow matmul)
is listed as `not built`: there is nothing to compare on either side.

Exit status 0 when every comparison holds, 1 otherwise, 2 when it cannot run here.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

CACHE = REPO / ".pyree-cache" / "gpu"
RTOL, ATOL = 1e-5, 1e-6
_CPU_FLAG_PREFIXES = ("--iree-hal-target-device", "--iree-hal-local-target-device-backends", "--iree-llvmcpu")


def cuda_flags(target: str) -> list[str]:
    return ["--iree-hal-target-device=cuda", f"--iree-cuda-target={target}"]


def case_flags(flags: list[str], target: str) -> list[str]:
    """A CPU case's flags with the target switched to CUDA (other flags kept)."""
    return [f for f in flags if not f.startswith(_CPU_FLAG_PREFIXES)] + cuda_flags(target)


class Unavailable(Exception):
    """Why the GPU check cannot run here (one line)."""


def preflight(driver_module: str = "pycuda.driver", iree_device=None) -> str:
    """The GPU's sm_XY when pycuda, the driver, a GPU and IREE's cuda driver are all there;
    else Unavailable naming what is missing."""
    from runtime_support.cuda.driver import open_driver
    from runtime_support.errors import VMError

    try:
        driver = open_driver(driver_module)
    except VMError as e:
        raise Unavailable(e.message) from None
    major, minor = driver.Device(0).compute_capability()
    try:
        if iree_device is None:
            import iree.runtime as rt

            rt.get_device("cuda")
        else:
            iree_device()
    except Exception as e:  # noqa: BLE001 - whatever IREE says, in one line
        raise Unavailable(f"iree.runtime has no usable cuda device: {' '.join(str(e).split())}") from None
    return f"sm_{major}{minor}"


# -------------------------------------------------------------------------- comparing


def compare_arrays(ours, theirs) -> tuple[str, str | None]:
    """("identical" | "tolerance" | "differ", detail)."""
    a, b = np.asarray(ours), np.asarray(theirs)
    if a.shape != b.shape or a.dtype != b.dtype:
        return "differ", f"{a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
    if a.tobytes() == b.tobytes():
        return "identical", None
    if a.dtype.kind in "fc" and np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True):
        worst = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
        return "tolerance", f"max abs difference {worst:.3g}"
    return "differ", "values differ"


def _operand_array(record):
    """A check operand (element type, shape, raw bytes) as a numpy array (raw bytes when
    the element type has no exact numpy dtype)."""
    from runtime_support.hal import element_types

    if record is None or not isinstance(record, tuple) or len(record) != 3:
        return record
    element_type, shape, raw = record
    try:
        return np.frombuffer(raw, element_types.to_numpy_dtype(element_type)).reshape(shape)
    except (ValueError, TypeError):
        return np.frombuffer(raw, np.uint8)


def compare_operands(ours: list, theirs: list) -> tuple[str, str | None]:
    """Every check call's operands, pyree's against IREE's."""
    if len(ours) != len(theirs):
        return "differ", f"{len(ours)} check calls, IREE {len(theirs)}"
    verdict = "identical"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a == b:
            continue
        if a[0] != b[0] or len(a) != len(b):
            return "differ", f"check call {i}: {a[0]} vs {b[0]}"
        for x, y in zip(a[1:], b[1:]):
            if x == y:
                continue
            if not (isinstance(x, tuple) and isinstance(y, tuple)):
                return "differ", f"check call {i} ({a[0]}): {x!r} vs {y!r}"
            v, detail = compare_arrays(_operand_array(x), _operand_array(y))
            if v == "differ":
                return "differ", f"check call {i} ({a[0]}): {detail}"
            verdict = "tolerance"
    return verdict, None


# -------------------------------------------------------------------------- conformance


@dataclass
class Row:
    kind: str  # "conformance" or "bench"
    name: str
    verdict: str  # identical | tolerance | differ | error
    detail: str | None = None
    iree_us: float | None = None
    pyree_us: float | None = None


def run_conformance(cases, target: str, cache: Path) -> list[Row]:
    import conformance
    from iree_check_oracle import exported_tests, load_module, run_function

    rows = []
    for case in cases:
        try:
            vmfb = conformance.compile_source(
                case.source.read_text(), case_flags(case.flags, target), case.name, cache / target
            )
        except conformance.CompileError as e:
            rows.append(Row("conformance", case.name, "not built", f"iree-compile cannot build it for CUDA: {str(e).splitlines()[0][:160]}"))
            continue
        module = load_module(vmfb)
        for name in case.functions if case.functions is not None else exported_tests(module):
            theirs = run_function(module, name, driver="cuda")
            ours: list = []
            ok, checks, error = conformance.run_translated(
                vmfb, name, out_root=cache / "packages", device="cuda", operands=ours
            )
            label = f"{case.name}:{name}"
            if (ok, checks) != (theirs.ok, theirs.checks):
                detail = f"pyree ok={ok} checks={checks} ({error}); IREE ok={theirs.ok} checks={theirs.checks} ({theirs.error})"
                rows.append(Row("conformance", label, "differ", detail))
                continue
            verdict, detail = compare_operands(ours, theirs.operands)
            rows.append(Row("conformance", label, verdict, detail))
    return rows


# -------------------------------------------------------------------------- benchmarks


class IreeCuda:
    """A vmfb under iree.runtime's cuda driver, one context: numpy in, numpy out (results
    copied to the host through DeviceArray, as device-local memory cannot be mapped)."""

    def __init__(self, vmfb: Path) -> None:
        import iree.runtime as rt

        config = rt.Config("cuda")
        self.context = rt.SystemContext(config=config)
        self.context.add_vm_module(rt.VmModule.mmap(config.vm_instance, str(vmfb)))

    def function(self, name: str):
        fn = self.context.modules.module[name]

        def call(*arrays):
            out = fn(*arrays)
            out = out if isinstance(out, (tuple, list)) else [out]
            return [o.to_host() if hasattr(o, "to_host") else np.asarray(o) for o in out]

        return call


def run_bench(programs, target: str, cache: Path, mode: dict) -> list[Row]:
    import conformance
    from bench import build, timing

    rows = []
    for program in programs:
        try:
            vmfb = conformance.compile_source(program.source.read_text(), cuda_flags(target), program.name, cache / target)
            pkg_dir, _, _ = build.translate(vmfb, cache, program.name.replace("-", "_"))
            rng = np.random.default_rng(0)
            inputs = program.inputs(rng)
            setup = program.setup(rng) if program.setup else None
            iree = IreeCuda(vmfb)
            theirs = iree.function("main")
            ctx = build.import_package(pkg_dir).load(device="cuda")
            if setup is not None:
                iree.function("setup")(*setup)
                ctx.setup(*setup)
            ours = ctx.main
            a = ours(*inputs)
            b = theirs(*inputs)
        except Exception as e:  # noqa: BLE001 - one row per program
            rows.append(Row("bench", program.name, "error", " ".join(f"{type(e).__name__}: {e}".split())[:200]))
            continue
        a = list(a) if isinstance(a, (tuple, list)) else [a]
        verdicts = [compare_arrays(x, y) for x, y in zip(a, b)] if len(a) == len(b) else [("differ", "result count")]
        worst = next((v for v in verdicts if v[0] == "differ"), None) or next(
            (v for v in verdicts if v[0] == "tolerance"), ("identical", None)
        )
        row = Row("bench", program.name, *worst)
        if worst[0] != "differ":
            ta, tb = timing.interleave(ours, theirs, inputs, **mode)
            row.pyree_us = timing.stats(ta)["median_us"]
            row.iree_us = timing.stats(tb)["median_us"]
        rows.append(row)
    return rows


def bench_programs(names: str | None = None, quick: bool = False):
    """The hand-written bench programs (the PyTorch models are CPU exports: left out)."""
    from bench.programs import PROGRAMS

    chosen = [p for p in PROGRAMS if p.model is None and p.source is not None]
    if names:
        wanted = {n.strip() for n in names.split(",")}
        chosen = [p for p in chosen if p.name in wanted]
    elif quick:
        chosen = [p for p in chosen if p.quick]
    return chosen


# -------------------------------------------------------------------------- no GPU: builds


def build_only(cases, programs, target: str, cache: Path) -> list[Row]:
    """Compile for CUDA, translate, and assemble every PTX module with ptxas."""
    import conformance
    from runtime_support.cuda.executable_def import MAGIC, read_cuda_executable
    from translator.codegen import write_package
    from translator.reader import read_module_file

    ptxas = shutil.which("ptxas")
    sources = [(c.name, c.source, case_flags(c.flags, target)) for c in cases]
    sources += [(p.name, p.source, cuda_flags(target)) for p in programs]
    rows = []
    for name, source, flags in sources:
        try:
            vmfb = conformance.compile_source(source.read_text(), flags, name, cache / target)
        except conformance.CompileError as e:
            rows.append(Row("build", name, "not built", f"iree-compile cannot build it for CUDA: {str(e).splitlines()[0][:160]}"))
            continue
        try:
            module = read_module_file(vmfb)
            with tempfile.TemporaryDirectory() as tmp:
                write_package(module, Path(tmp), "pkg", format_code=False)
                for segment in module.rodata:
                    if bytes(segment.data[:4]) != MAGIC:
                        continue
                    for i, m in enumerate(read_cuda_executable(bytes(segment.data)).modules):
                        if ptxas is None or not m.is_ptx:
                            continue
                        src = Path(tmp) / f"m{i}.ptx"
                        src.write_bytes(m.image)
                        res = subprocess.run(
                            [ptxas, f"-arch={m.ptx_target()}", str(src), "-o", str(src.with_suffix(".cubin"))],
                            capture_output=True, text=True,
                        )
                        if res.returncode:
                            raise RuntimeError(f"ptxas: {res.stderr.strip().splitlines()[0]}")
        except Exception as e:  # noqa: BLE001
            rows.append(Row("build", name, "error", " ".join(f"{type(e).__name__}: {e}".split())[:200]))
            continue
        rows.append(Row("build", name, "identical", "translates" + (", PTX assembles" if ptxas else "")))
    return rows


# -------------------------------------------------------------------------- report


def report(rows: list[Row], out=sys.stdout) -> bool:
    ok = True
    for kind in ("build", "conformance", "bench"):
        part = [r for r in rows if r.kind == kind]
        if not part:
            continue
        print(f"\n## {kind}\n", file=out)
        if kind == "bench":
            print("| program | outputs | IREE us | pyree us | pyree/IREE |", file=out)
            print("|---|---|---:|---:|---:|", file=out)
            for r in part:
                ratio = f"{r.pyree_us / r.iree_us:.2f}" if r.pyree_us and r.iree_us else "-"
                times = [f"{t:.1f}" if t is not None else "-" for t in (r.iree_us, r.pyree_us)]
                print(f"| {r.name} | {r.verdict}{': ' + r.detail if r.detail else ''} | {times[0]} | {times[1]} | {ratio} |", file=out)
        else:
            for r in part:
                print(f"- {r.verdict:9} {r.name}{': ' + r.detail if r.detail else ''}", file=out)
        counts = {v: sum(r.verdict == v for r in part) for v in ("identical", "tolerance", "differ", "error", "not built")}
        print(f"\n{kind}: " + ", ".join(f"{n} {v}" for v, n in counts.items()), file=out)
        ok = ok and counts["differ"] == 0 and counts["error"] == 0
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.gpu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="auto", help="sm_XY to build for (default: the GPU's own)")
    ap.add_argument("--filter", help="conformance cases whose name matches (glob or substring)")
    ap.add_argument("--fast", action="store_true", help="one conformance case per folder")
    ap.add_argument("--programs", help="comma-separated bench programs")
    ap.add_argument("--quick", action="store_true", help="short timings, quick programs only")
    ap.add_argument("--skip-conformance", action="store_true")
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--build-only", action="store_true", help="no GPU: compile, translate and ptxas every build")
    ap.add_argument("--json", type=Path, help="also write the rows to this file")
    ap.add_argument("--cache", type=Path, default=CACHE)
    args = ap.parse_args(argv)

    target = args.target
    if not args.build_only:
        try:
            found = preflight()
        except Unavailable as e:
            print(f"tests.gpu: cannot run here: {e}", file=sys.stderr)
            return 2
        target = found if target == "auto" else target
    elif target == "auto":
        target = "sm_80"

    import conformance

    cases = []
    if not args.skip_conformance:
        if not conformance.e2e_available():
            print(f"tests.gpu: cannot run here: no conformance data at {conformance.E2E_DIR}", file=sys.stderr)
            return 2
        cases = conformance.filter_cases(conformance.load_cases(), args.filter)
        cases = conformance.fast_subset(cases) if args.fast else cases
    programs = [] if args.skip_bench else bench_programs(args.programs, args.quick)

    if args.build_only:
        rows = build_only(cases, programs, target, args.cache)
    else:
        from bench.cli import MODES

        rows = run_conformance(cases, target, args.cache)
        rows += run_bench(programs, target, args.cache, MODES["quick" if args.quick else "full"])
    ok = report(rows)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
