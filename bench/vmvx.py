"""The VMVX rows of `python -m bench` (`--vmvx`): each program built for VMVX
(`--iree-hal-local-target-device-backends=vmvx`: kernels as VM bytecode), pyree's
translation (kernels as Python, vectorised with numpy where translator/vmvx_vectorize/
can show it safe) against IREE's VMVX interpreter on the same vmfb, local-sync on both
sides, calls interleaved as for the llvm-cpu rows, results checked bit for bit.

IREE's interpreter takes seconds per call on the big programs (matmul512: ~4 s), so
these rows run fewer rounds (VMVX_MODES) and warm up once. Beside each row: how many of
its kernels pyree vectorised, and each side's VMVX time over its own llvm-cpu time from
the same run (the llvm-cpu row of the program, when it ran).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from bench import build, timing

VMVX_MODES = {
    "quick": dict(min_time=0.25, min_reps=3, max_reps=1000, warmup=1),
    "full": dict(min_time=1.0, min_reps=5, max_reps=5000, warmup=1),
}
PAIR = ("sync", "local-sync", "local-sync")


def _export_model_vmvx(program, cache: Path):
    """(Exported record, seconds; None when cached): the model exported as for its llvm-cpu
    row (weights inline), compiled for VMVX."""
    export = build._examples_export()
    out = cache / "models" / f"{program.model}-vmvx"
    stem = f"{program.model}_inline" + ("_dynbatch" if program.dynamic_batch else "")
    record = out / f"{stem}.vmvx.json"
    if record.is_file():
        exported = export.Exported.from_json(out, json.loads(record.read_text()))
        versions = {d: export._version(d) for d in exported.versions}
        if exported.vmfb and exported.vmfb.is_file() and versions == exported.versions:
            return exported, None
    t0 = time.perf_counter()
    exported = export.export_model(program.model, "inline", out, compile=False,
                                   dynamic_batch=program.dynamic_batch)
    exported.vmfb = out / f"{stem}.vmvx.vmfb"
    exported.flags = build.VMVX_FLAGS
    export.compile_vmfb(exported.mlir, exported.vmfb, build.VMVX_FLAGS)
    record.write_text(json.dumps(exported.to_json(), indent=2) + "\n")
    return exported, time.perf_counter() - t0


def prepare(program, args):
    """(vmfb, main inputs, setup inputs or None, compile seconds or None)."""
    if program.model is not None:
        exported, seconds = _export_model_vmvx(program, args.cache)
        return exported.vmfb, (np.load(exported.input),), None, seconds
    vmfb, seconds = build.compile_program(program.source, args.cache, args.target_cpu, "vmvx")
    rng = np.random.default_rng(0)  # the same inputs as the llvm-cpu rows
    inputs = program.inputs(rng)
    setup = program.setup(rng) if program.setup else None
    return vmfb, inputs, setup, seconds


def kernel_counts(vmfb: Path) -> tuple[int, int]:
    """(kernels, vectorised kernels) of a VMVX vmfb, as pyree-translate counts them."""
    from translator.reader import read_module_file
    from translator.vmvx import count_vectorized, describe_kernels, find_executables

    kernels = vectorized = 0
    for ordinal, data in find_executables(read_module_file(vmfb)):
        sub, entries = describe_kernels(ordinal, data)
        kernels += len(entries)
        vectorized += count_vectorized(sub)
    return kernels, vectorized


def run_program(program, args, llvm_rows: list[dict]) -> dict:
    from bench.cli import one_line, same_bits
    from bench.iree_side import IreeProgram

    pair, ours_device, theirs_device = PAIR
    row = {"program": program.name, "title": program.title, "backend": "vmvx", "pair": pair,
           "devices": f"{ours_device} / {theirs_device}", "status": "ok"}
    try:
        vmfb, inputs, setup, row["compile_s"] = prepare(program, args)
    except Exception as e:  # noqa: BLE001 - a program that does not build is a table row
        row["status"] = f"does not build: {one_line(e)}"
        return row
    try:
        row["kernels"], row["vectorized"] = kernel_counts(vmfb)
        pkg_dir, row["translate_s"], row["translate_cached"] = build.translate(
            vmfb, args.cache, program.name.replace("-", "_") + "_vmvx",
            reuse=not args.retranslate, queue_programs=program.queue_programs,
        )
    except Exception as e:  # noqa: BLE001
        row["status"] = f"does not translate: {one_line(e)}"
        return row
    try:
        t0 = time.perf_counter()
        theirs_program = IreeProgram(vmfb, theirs_device)
        theirs = theirs_program.function("main")
        row["iree_load_s"] = time.perf_counter() - t0
        if setup is not None:
            theirs_program.function("setup")(*setup)
        out_theirs, row["iree_first_call_s"] = timing.first_call(theirs, inputs)
    except Exception as e:  # noqa: BLE001
        row["status"] = f"IREE fails: {one_line(e)}"
        return row
    try:
        t0 = time.perf_counter()
        ctx = build.import_package(pkg_dir).load(device=ours_device)
        row["pyree_load_s"] = time.perf_counter() - t0
        if setup is not None:
            ctx.setup(*setup)
        ours = ctx.main
        out_ours, row["pyree_first_call_s"] = timing.first_call(ours, inputs)
    except Exception as e:  # noqa: BLE001
        row["status"] = f"fails: {one_line(e)}"
        return row
    diff = same_bits(out_ours, out_theirs)
    del out_ours, out_theirs
    if diff is not None:
        row["status"] = f"results differ from IREE: {diff}"
        return row
    try:
        ta, tb = timing.interleave(ours, theirs, inputs, **VMVX_MODES[args.mode])
    except Exception as e:  # noqa: BLE001
        row["status"] = f"fails while timed: {one_line(e)}"
        return row
    row["pyree"], row["iree"] = timing.stats(ta), timing.stats(tb)
    row["ratio"] = row["pyree"]["median_us"] / row["iree"]["median_us"]
    row["paired_ratio"] = timing.paired_ratio(ta, tb)
    llvm = next((r for r in llvm_rows if r["program"] == program.name and r.get("pair") == pair
                 and "iree" in r), None)
    if llvm is not None:
        row["iree_vs_llvm_cpu"] = row["iree"]["median_us"] / llvm["iree"]["median_us"]
        if "pyree" in llvm:
            row["pyree_vs_llvm_cpu"] = row["pyree"]["median_us"] / llvm["pyree"]["median_us"]
    return row


def markdown(rows: list[dict]) -> str:
    from bench.report import _ratio, _s, _us

    lines = [
        "VMVX builds (`--iree-hal-local-target-device-backends=vmvx`): pyree's translated "
        "kernels (numpy-vectorised where shown safe) against IREE's VMVX interpreter on the "
        "same vmfb, local-sync, interleaved, results bit-identical; `vs llvm-cpu`: each "
        "side's VMVX median over its own llvm-cpu median above.",
        "",
        "| program | pyree | IREE | ratio | paired | rounds | vectorised kernels "
        "| vs llvm-cpu (pyree / IREE) | translate | first call (pyree / IREE) | status |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ours, theirs = r.get("pyree") or {}, r.get("iree") or {}
        kernels = f"{r['vectorized']} of {r['kernels']}" if "kernels" in r else "—"
        lines.append("| " + " | ".join([
            r["program"],
            _us(ours.get("median_us")),
            _us(theirs.get("median_us")),
            _ratio(r.get("ratio")),
            _ratio(r.get("paired_ratio")),
            str(ours.get("reps", "—")),
            kernels,
            f"{_ratio(r.get('pyree_vs_llvm_cpu'))} / {_ratio(r.get('iree_vs_llvm_cpu'))}",
            _s(r.get("translate_s")) + (" (cached)" if r.get("translate_cached") else ""),
            f"{_s(r.get('pyree_first_call_s'), 'ms', 1e3)} / "
            f"{_s(r.get('iree_first_call_s'), 'ms', 1e3)}",
            r.get("status", "ok").replace("|", "\\|"),
        ]) + " |")
    return "\n".join(lines)
