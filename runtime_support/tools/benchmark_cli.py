"""`pyree-benchmark`: time one export of a generated package like `iree-benchmark-module`.

    pyree-benchmark PACKAGE_DIR [--function=NAME] [--input=SPEC]... [--device=DEVICE]
                    [--parameters=[SCOPE=]FILE]... [--benchmark_repetitions=N]
                    [--benchmark_min_time=SECONDS[s] | --benchmark_min_time=Nx]
                    [--benchmark_format=console|json]

Inputs, devices and parameters are read exactly as `pyree-run` reads them (same SPEC
syntax, same calling-convention typing). The package is loaded once; one untimed call warms
it up; then each repetition calls the function until `--benchmark_min_time` has passed
(default 0.5 s) or, with `Nx`, exactly N times, timing every call. Output: one Google
Benchmark style row per repetition (mean wall time per call, mean process CPU time per
call, iterations) and, like iree-benchmark-module with repetitions, `_mean`, `_median`,
`_min` and `_max` rows over the repetitions; then the per-call median, minimum and
maximum over every timed call. `--benchmark_format=json` prints the same as JSON.

Exit status: 0 success; 1 when the load, the inputs or a call fail (`CODE; message` on
stderr, as pyree-run); 2 usage errors.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from runtime_support.api.context import python_name
from runtime_support.errors import LoaderError, VMError
from runtime_support.tools.io_specs import SpecError, parse_input
from runtime_support.tools.run_cli import (
    guess_arg_type,
    parse_parameters,
    status_text,
    load_package,
    parse_cconv,
)


class BenchmarkError(Exception):
    """A failure reported as `CODE; message` on stderr (exit 1)."""


def parse_min_time(text: str) -> tuple[float | None, int | None]:
    """`0.5`, `0.5s` -> (0.5, None); `100x` -> (None, 100)."""
    t = text.strip()
    try:
        if t.endswith("x"):
            n = int(t[:-1])
            if n < 1:
                raise ValueError
            return None, n
        seconds = float(t[:-1] if t.endswith("s") else t)
        if not seconds >= 0:
            raise ValueError
        return seconds, None
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid --benchmark_min_time {text!r}: expected seconds (0.5, 0.5s) or a count (100x)"
        ) from None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pyree-benchmark",
        description="Time an export of a pyree-generated package like iree-benchmark-module.",
    )
    p.add_argument("package_dir", metavar="PACKAGE_DIR")
    p.add_argument("--function", default=None, metavar="NAME")
    p.add_argument("--input", action="append", default=[], metavar="SPEC")
    p.add_argument("--device", default="local")
    p.add_argument("--parameters", action="append", default=[], metavar="[SCOPE=]FILE")
    p.add_argument("--benchmark_repetitions", type=int, default=1, metavar="N")
    p.add_argument("--benchmark_min_time", type=parse_min_time, default=(0.5, None), metavar="T")
    p.add_argument("--benchmark_format", choices=("console", "json"), default="console")
    return p


def prepare(args):
    """(callable, inputs, export name) for the run, or BenchmarkError."""
    try:
        pkg = load_package(args.package_dir)
    except FileNotFoundError:
        raise
    except Exception as e:  # a broken package: one line, no traceback
        raise BenchmarkError(
            f"INTERNAL; cannot import package {args.package_dir}: {type(e).__name__}: {e}"
        ) from None
    exports = [n for n in (getattr(pkg, "EXPORTS", {}) or {}) if not n.startswith("__")]
    name = args.function
    if not name:
        if len(exports) != 1:
            raise BenchmarkError(
                "INVALID_ARGUMENT; more than one exported function present; "
                "--function= must be specified explicitly"
            )
        name = exports[0]
    cconv = (getattr(pkg, "CCONVS", None) or {}).get(name)
    try:
        arg_types = parse_cconv(cconv)[0] if cconv else None
    except ValueError as e:
        raise BenchmarkError(f"UNIMPLEMENTED; {e}") from None
    try:
        ctx = pkg.load(device=args.device, parameters=parse_parameters(args.parameters))
    except VMError as e:
        raise BenchmarkError(f"{status_text(e)}; creating run context") from None
    except LoaderError as e:
        raise BenchmarkError(f"INTERNAL; {e}; creating run context") from None
    known = name in (getattr(pkg, "EXPORTS", None) or {name: None})
    method = getattr(ctx, python_name(name), None) if known else None
    if method is None:
        raise BenchmarkError(f"NOT_FOUND; no function `{name}` exported by module")
    if arg_types is not None and len(args.input) != len(arg_types):
        raise BenchmarkError(
            f"INVALID_ARGUMENT; input list and function mismatch; expected {len(arg_types)} "
            f"arguments but passed {len(args.input)}; invoking function '{name}'"
        )
    inputs = []
    for i, spec in enumerate(args.input):
        t = arg_types[i] if arg_types is not None else guess_arg_type(spec)
        try:
            inputs.append(parse_input(spec, t).value)
        except SpecError as e:
            raise BenchmarkError(
                f"{e.code.name}; " + (f"{e.message}; " if e.message else "")
                + f"parsing input `{spec}`; parsing function inputs"
            ) from None
    return method, inputs, name


def repetition(method, inputs, min_time: float | None, count: int | None) -> dict:
    """Per-call wall times of one repetition and its process CPU time."""
    clock = time.perf_counter
    times = []
    cpu0, start = time.process_time(), clock()
    while True:
        t0 = clock()
        method(*inputs)
        times.append(clock() - t0)
        if count is not None:
            if len(times) >= count:
                break
        elif clock() - start >= min_time:
            break
    return {"times": times, "cpu": time.process_time() - cpu0}


def run(args, stdout=None) -> dict:
    stdout = stdout or sys.stdout
    method, inputs, name = prepare(args)
    call = f"invoking function '{name}'"
    try:
        method(*inputs)  # warm-up (first-call work: lazily built tables, page faults)
        min_time, count = args.benchmark_min_time
        reps = [repetition(method, inputs, min_time, count) for _ in range(args.benchmark_repetitions)]
    except VMError as e:
        raise BenchmarkError(f"{status_text(e)}; {call}") from None
    except (TypeError, ValueError) as e:
        raise BenchmarkError(f"INVALID_ARGUMENT; {e}; {call}") from None
    except LoaderError as e:
        raise BenchmarkError(f"INTERNAL; {e}; {call}") from None
    rows = []
    label = f"BM_{name}/process_time/real_time"
    for r in reps:
        n = len(r["times"])
        rows.append({"name": label, "real_time_ms": sum(r["times"]) / n * 1e3,
                     "cpu_time_ms": r["cpu"] / n * 1e3, "iterations": n})
    if len(rows) > 1:
        means = [r["real_time_ms"] for r in rows]
        cpus = [r["cpu_time_ms"] for r in rows]
        for suffix, f in (("mean", statistics.fmean), ("median", statistics.median),
                          ("min", min), ("max", max)):
            rows.append({"name": f"{label}_{suffix}", "real_time_ms": f(means),
                         "cpu_time_ms": f(cpus), "iterations": len(means)})
    every = [t for r in reps for t in r["times"]]
    per_call = {"median_us": statistics.median(every) * 1e6, "min_us": min(every) * 1e6,
                "max_us": max(every) * 1e6, "calls": len(every)}
    result = {"context": {"package": args.package_dir, "device": args.device, "function": name},
              "benchmarks": rows, "per_call": per_call}
    if args.benchmark_format == "json":
        stdout.write(json.dumps(result, indent=2) + "\n")
        return result
    rule = "-" * 80
    stdout.write(f"{rule}\n{'Benchmark':<44}{'Time':>12}{'CPU':>12}{'Iterations':>12}\n{rule}\n")
    for r in rows:
        stdout.write(f"{r['name']:<44}{r['real_time_ms']:>9.4f} ms{r['cpu_time_ms']:>9.4f} ms"
                     f"{r['iterations']:>12}\n")
    stdout.write(
        f"per call: median {per_call['median_us']:.2f} us, min {per_call['min_us']:.2f} us, "
        f"max {per_call['max_us']:.2f} us over {per_call['calls']} calls "
        f"(device {args.device})\n"
    )
    return result


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if args.benchmark_repetitions < 1:
        sys.stderr.write("pyree-benchmark: error: --benchmark_repetitions must be at least 1\n")
        return 2
    try:
        run(args)
    except FileNotFoundError as e:
        sys.stderr.write(f"pyree-benchmark: error: {e}\n")
        return 2
    except BenchmarkError as e:
        sys.stderr.write(f"{e}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
