"""`python -m bench`: pyree against iree.runtime on the same vmfbs, interleaved call by call.

    python -m bench [--quick] [--programs mul4,chain100,...] [--devices sync,task]
                    [--json FILE] [--target-cpu host] [--cache DIR] [--no-fresh] [--list]

For each program (bench/programs.py: hand-written MLIR under bench/programs and the
PyTorch example models): compile with the pinned iree-compile for this CPU (cached),
translate with pyree (timed), then for each device pair load both runtimes (timed), call
`setup` once where the program has one, time the first call, check that both give the same
bytes (a program whose results differ gets no timing), and time calls alternately, one
pyree call then one IREE call, the order flipping each round. Device pairs: `sync` is
pyree local-sync against IREE local-sync; `task` is pyree `local` against IREE local-task.

Translated packages are cached too (keyed by the vmfb and the translator's sources); a
cached one reports the translation time measured when it was made (`--retranslate` redoes
it).

Each package is also imported and loaded in fresh processes (bench/fresh.py): what a
user's script pays, runtime import and native code included, numpy and llvmlite not.

Host cost per dispatch comes from the chain programs: chainN makes N dependent
4-element dispatches, chain1 one of the same, so (median(chainN) - median(chain1)) / (N-1)
is what each extra dispatch costs on the host (the kernels themselves take nanoseconds).

A program pyree cannot load (e.g. generated code Python cannot compile) is reported as
"does not load" with the error, and IREE is timed alone for that row.
Timings share the machine with whatever else runs: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from bench import build, fresh, report, timing
from bench.programs import BY_NAME, CHAIN_LENGTH, PROGRAMS

DEVICE_PAIRS = {"sync": ("local-sync", "local-sync"), "task": ("local", "local-task")}
MODES = {  # min seconds per (program, device pair), min and max interleaved rounds
    "quick": dict(min_time=0.25, min_reps=5, max_reps=3000),
    "full": dict(min_time=1.0, min_reps=10, max_reps=20000),
}


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}"[:160]


def as_list(result) -> list:
    if result is None:
        return []
    return list(result) if isinstance(result, (tuple, list)) else [result]


def same_bits(ours, theirs) -> str | None:
    """None if equal, else what differs."""
    ours, theirs = as_list(ours), as_list(theirs)
    if len(ours) != len(theirs):
        return f"{len(ours)} results vs {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
            return f"result {i}: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}, bytes differ"
    return None


def prepare(program, args):
    """(vmfb, main inputs, setup inputs or None, compile seconds or None, PyTorch's output
    or None)."""
    if program.model is not None:
        exported, seconds = build.export_model(
            program.model, args.cache, args.target_cpu, program.dynamic_batch
        )
        inputs, expected = (np.load(exported.input),), np.load(exported.expected)
        return exported.vmfb, inputs, None, seconds, expected
    vmfb, seconds = build.compile_program(program.source, args.cache, args.target_cpu)
    rng = np.random.default_rng(0)
    inputs = program.inputs(rng)
    setup = program.setup(rng) if program.setup else None
    return vmfb, inputs, setup, seconds, None


def run_program(program, args) -> list[dict]:
    from bench.iree_side import IreeProgram

    base = {"program": program.name, "title": program.title}
    try:
        vmfb, inputs, setup, compile_s, expected = prepare(program, args)
    except Exception as e:  # noqa: BLE001 - a program that does not build is a table row
        return [dict(base, status=f"does not build: {one_line(e)}")]
    base["compile_s"] = compile_s
    try:
        pkg_dir, base["translate_s"], base["translate_cached"] = build.translate(
            vmfb, args.cache, program.name.replace("-", "_"), reuse=not args.retranslate,
            queue_programs=program.queue_programs,
        )
    except Exception as e:  # noqa: BLE001
        return [dict(base, status=f"does not translate: {one_line(e)}")]
    if args.fresh:
        base["fresh"] = fresh.measure(pkg_dir, "local-sync", runs=3 if args.mode == "full" else 1,
                                      repo=build.REPO)
    module, rows = None, []
    for pair in args.devices:
        ours_device, theirs_device = DEVICE_PAIRS[pair]
        row = dict(base, pair=pair, devices=f"{ours_device} / {theirs_device}", status="ok")
        rows.append(row)
        try:
            t0 = time.perf_counter()
            theirs_program = IreeProgram(vmfb, theirs_device)
            theirs = theirs_program.function("main")
            row["iree_load_s"] = time.perf_counter() - t0
            if setup is not None:
                theirs_program.function("setup")(*setup)
            out_theirs, row["iree_first_call_s"] = timing.first_call(theirs, inputs)
        except Exception as e:  # noqa: BLE001 - nothing to check pyree against
            row["status"] = f"IREE fails: {one_line(e)}"
            continue
        ours = None
        try:
            t0 = time.perf_counter()
            if module is None:  # the first load includes importing the package
                module = build.import_package(pkg_dir)
            ctx = module.load(device=ours_device)
            row["pyree_load_s"] = time.perf_counter() - t0
            if setup is not None:
                ctx.setup(*setup)
            ours = ctx.main
        except Exception as e:  # noqa: BLE001 - IndentationError, RecursionError, VMError...
            row["status"] = f"does not load: {one_line(e)}"
        if ours is None:
            _, samples = timing.interleave(lambda *a: None, theirs, inputs, **MODES[args.mode])
            row["iree"] = timing.stats(samples)
            continue
        try:
            out_ours, row["pyree_first_call_s"] = timing.first_call(ours, inputs)
        except Exception as e:  # noqa: BLE001
            row["status"] = f"fails: {one_line(e)}"
            continue
        diff = same_bits(out_ours, out_theirs)
        if expected is not None and diff is None:  # (JSON only) how far both are from eager
            got = np.asarray(as_list(out_ours)[0], np.float64)
            row["rel_err_vs_torch"] = float(
                np.max(np.abs(got - expected)) / max(np.max(np.abs(expected)), 1e-30)
            )
        del out_ours, out_theirs
        if diff is not None:
            row["status"] = f"results differ from IREE: {diff}"
            continue
        try:
            ta, tb = timing.interleave(ours, theirs, inputs, **MODES[args.mode])
        except Exception as e:  # noqa: BLE001 - a call that fails later (state, resources)
            row["status"] = f"fails while timed: {one_line(e)}"
            continue
        row["pyree"], row["iree"] = timing.stats(ta), timing.stats(tb)
        row["ratio"] = row["pyree"]["median_us"] / row["iree"]["median_us"]
        row["paired_ratio"] = timing.paired_ratio(ta, tb)
        del ctx, ours
    if module is not None and all(r["status"] == "ok" for r in rows) and len(rows) == 2:
        local_against_sync(module, setup, inputs, rows, args)
    return rows


def local_against_sync(module, setup, inputs, rows, args) -> None:
    """pyree `local` against pyree local-sync, interleaved with each other: the two runs
    above each sit between calls of a different IREE device (local-task's threads are still
    winding down when the next call starts), which skews a comparison of their medians."""
    calls = []
    try:
        for device in ("local", "local-sync"):
            ctx = module.load(device=device)
            if setup is not None:
                ctx.setup(*setup)
            calls.append(ctx.main)
        ta, tb = timing.interleave(*calls, inputs, **MODES[args.mode])
    except Exception as e:  # noqa: BLE001 - both ran above; a failure here is only noted
        rows[-1]["local_vs_sync_error"] = one_line(e)
        return
    for row in rows:
        row["pyree_local_direct"], row["pyree_sync_direct"] = timing.stats(ta), timing.stats(tb)


# The chain rows host cost per dispatch comes from: (program, form of its queue calls).
CHAINS = (
    (f"chain{CHAIN_LENGTH}", "one queue program call"),
    (f"chain{CHAIN_LENGTH}-steps", "one import call per op"),
)


def dispatch_costs(rows: list[dict]) -> list[dict]:
    """Host cost per dispatch from the chain rows, per device pair, chain form and
    runtime: (median(chainN) - median(chain1)) / (N - 1)."""
    out = []
    by = {(r["program"], r.get("pair")): r for r in rows}
    pairs = [(pair, chain) for pair in DEVICE_PAIRS for chain in CHAINS]
    for pair, (chain, form) in pairs:
        ours_device, theirs_device = DEVICE_PAIRS[pair]
        one, many = by.get(("chain1", pair)), by.get((chain, pair))
        if one is None or many is None:
            continue
        entry = {"pair": pair, "devices": f"{ours_device} / {theirs_device}", "form": form}
        for side in ("pyree", "iree"):
            if side in one and side in many:
                entry[f"{side}_us"] = (
                    many[side]["median_us"] - one[side]["median_us"]
                ) / (CHAIN_LENGTH - 1)
            else:
                entry[f"{side}_us"] = None
        if entry["pyree_us"] is not None and entry["iree_us"]:
            entry["ratio"] = entry["pyree_us"] / entry["iree_us"]
        out.append(entry)
    return out


def local_vs_sync(rows: list[dict]) -> list[dict]:
    """pyree `local` over pyree local-sync, per program: interleaved with each other
    (`ratio`), and from the medians of the two runs against IREE (`ratio_via_iree_runs`)."""
    out = []
    by = {(r["program"], r.get("pair")): r for r in rows}
    for program in dict.fromkeys(r["program"] for r in rows):
        sync, task = by.get((program, "sync")), by.get((program, "task"))
        if sync and task and "pyree" in sync and "pyree" in task:
            via = task["pyree"]["median_us"] / sync["pyree"]["median_us"]
            entry = {"program": program, "ratio_via_iree_runs": via}
            if "pyree_local_direct" in task:
                local, local_sync = (
                    task["pyree_local_direct"]["median_us"], task["pyree_sync_direct"]["median_us"]
                )
            else:
                local, local_sync = task["pyree"]["median_us"], sync["pyree"]["median_us"]
            entry.update(local_us=local, local_sync_us=local_sync, ratio=local / local_sync)
            out.append(entry)
    return out


def warm_up_imports() -> None:
    """Imports what every load needs once, before any load is timed, and starts the native
    dispatch loop (once per process): the main table's load column is the load alone. The
    issue's target (import and load, numpy and llvmlite imported already) is what
    bench/fresh.py times, in fresh processes."""
    import runtime_support.api.context  # noqa: F401
    import runtime_support.hal.module  # noqa: F401
    from runtime_support.loaders import executable

    if hasattr(executable, "native_loop"):
        executable.native_loop()


def select(args) -> list:
    if args.programs:
        names = [n.strip() for n in args.programs.split(",") if n.strip()]
        unknown = [n for n in names if n not in BY_NAME]
        if unknown:
            raise SystemExit(f"unknown program(s) {', '.join(unknown)}; --list shows them")
        chains = [n for n in names if n.startswith(f"chain{CHAIN_LENGTH}")]
        if chains and "chain1" not in names:
            names.insert(names.index(chains[0]), "chain1")  # their baseline
        chosen = [BY_NAME[n] for n in names]
    else:
        chosen = [p for p in PROGRAMS if p.quick or args.mode == "full"]
    if args.skip_models:
        chosen = [p for p in chosen if p.model is None]
    return chosen


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--quick", dest="mode", action="store_const", const="quick", default="full",
                    help="0.25 s per program and device pair, and only the small example "
                         "model (a few minutes on 2 cores)")
    ap.add_argument("--programs", help="comma-separated program names (see --list)")
    ap.add_argument("--skip-models", action="store_true", help="leave out the PyTorch models")
    ap.add_argument("--devices", default="sync,task",
                    help="device pairs: sync (local-sync vs local-sync), task (local vs "
                         "local-task); default both")
    ap.add_argument("--json", type=Path, help="also write the results to this file")
    ap.add_argument("--target-cpu", default="host", help="--iree-llvmcpu-target-cpu (default host)")
    ap.add_argument("--cache", type=Path, default=build.DEFAULT_CACHE,
                    help=f"compiled programs and exported models (default {build.DEFAULT_CACHE})")
    ap.add_argument("--retranslate", action="store_true",
                    help="translate again even where the cache holds the package")
    ap.add_argument("--no-fresh", dest="fresh", action="store_false",
                    help="leave out the import and load of each package in fresh processes")
    ap.add_argument("--vmvx", nargs="?", const="also", default="off",
                    choices=("off", "also", "only"),
                    help="VMVX rows (bench/vmvx.py): each program built for VMVX, pyree "
                         "against IREE's VMVX interpreter, local-sync; `--vmvx` adds them, "
                         "`--vmvx=only` runs them alone (no llvm-cpu ratio then)")
    ap.add_argument("--list", action="store_true", help="list the programs and exit")
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.list:
        for p in PROGRAMS:
            print(f"{p.name:16} {'quick ' if p.quick else 'full  '} {p.title}")
        return 0
    args.devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    bad = [d for d in args.devices if d not in DEVICE_PAIRS]
    if bad:
        raise SystemExit(f"unknown device pair(s) {', '.join(bad)}; expected sync, task")
    sys.path.insert(0, str(build.REPO))
    programs = select(args)
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mode": args.mode,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "target_cpu": args.target_cpu,
        "iree": _version("iree-base-runtime"),
        "iree_compiler": _version("iree-base-compiler"),
        "chain_length": CHAIN_LENGTH,
        "argv": sys.argv[1:] if argv is None else list(argv),
    }
    warm_up_imports()
    rows = []
    for program in programs if args.vmvx != "only" else ():
        print(f"[bench] {program.name} ...", file=sys.stderr, flush=True)
        rows.extend(run_program(program, args))
    data = {"meta": meta, "rows": rows, "dispatch_cost": dispatch_costs(rows),
            "local_vs_sync": local_vs_sync(rows)}
    if args.vmvx != "off":
        from bench import vmvx

        data["vmvx_rows"] = []
        for program in programs:
            print(f"[bench] {program.name} (vmvx) ...", file=sys.stderr, flush=True)
            data["vmvx_rows"].append(vmvx.run_program(program, args, rows))
    if rows:
        print(report.markdown(data))
    if data.get("vmvx_rows"):
        from bench import vmvx

        print(("\n" if rows else "") + vmvx.markdown(data["vmvx_rows"]))
    if args.json:
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    return 0


def _version(dist: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
