"""The markdown report of a `python -m bench` run (the same data --json writes)."""

from __future__ import annotations


def _us(x) -> str:
    if x is None:
        return "—"
    return f"{x / 1000:.2f} ms" if x >= 1000 else f"{x:.1f} µs"


def _s(x, unit="s", scale=1.0) -> str:
    return "—" if x is None else f"{x * scale:.3g} {unit}"


def _ratio(x) -> str:
    return "—" if x is None else f"{x:.2f}×"


def _first_rows(rows: list[dict]) -> list[dict]:
    """One row per program (the fields every device pair's row shares come from the first)."""
    return list({r["program"]: r for r in reversed(rows)}.values())[::-1]


def markdown(data: dict) -> str:
    m = data["meta"]
    lines = [
        f"pyree vs iree.runtime {m['iree']} — {m['date']}, {m['mode']} run, {m['cpus']} CPUs, "
        f"Python {m['python']}, kernels for --iree-llvmcpu-target-cpu={m['target_cpu']}. "
        "Calls interleaved one by one in one process; per-call median (min–max). "
        "ratio: of the two medians; paired: the median of each round's pyree / IREE "
        "(the two calls of a round back to back: what the machine's speed drift cancels in).",
        "",
        "| program | devices (pyree / IREE) | pyree | IREE | ratio | paired | pyree min–max "
        "| IREE min–max | translate | load (pyree / IREE) | first call (pyree / IREE) | status |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        ours, theirs = r.get("pyree") or {}, r.get("iree") or {}
        lines.append(
            "| " + " | ".join([
                r["program"],
                r.get("devices", "—"),
                _us(ours.get("median_us")),
                _us(theirs.get("median_us")),
                _ratio(r.get("ratio")),
                _ratio(r.get("paired_ratio")),
                f"{_us(ours.get('min_us'))}–{_us(ours.get('max_us'))}" if ours else "—",
                f"{_us(theirs.get('min_us'))}–{_us(theirs.get('max_us'))}" if theirs else "—",
                _s(r.get("translate_s")) + (" (cached)" if r.get("translate_cached") else ""),
                f"{_s(r.get('pyree_load_s'), 'ms', 1e3)} / {_s(r.get('iree_load_s'), 'ms', 1e3)}",
                f"{_s(r.get('pyree_first_call_s'), 'ms', 1e3)} / "
                f"{_s(r.get('iree_first_call_s'), 'ms', 1e3)}",
                r.get("status", "ok").replace("|", "\\|"),
            ]) + " |"
        )
    if data["dispatch_cost"]:
        n = m["chain_length"]
        lines += [
            "",
            f"Host cost per dispatch: (median(chain{n}) − median(chain1)) / {n - 1}; "
            f"pyree's queue calls as translated (one queue program call), and as "
            f"chain{n}-steps leaves them (--no-fuse: one import call per op).",
            "",
            "| devices (pyree / IREE) | pyree queue calls | pyree | IREE | ratio |",
            "|---|---|---|---|---|",
        ]
        for d in data["dispatch_cost"]:
            pyree = "does not load" if d["pyree_us"] is None else _us(d["pyree_us"])
            lines.append(
                f"| {d['devices']} | {d.get('form', '')} | {pyree} | {_us(d['iree_us'])} "
                f"| {_ratio(d.get('ratio'))} |"
            )
    fresh = [(r["program"], r["fresh"]) for r in _first_rows(data["rows"]) if r.get("fresh")]
    if fresh:
        lines += [
            "",
            "Fresh process (bench/fresh.py): `import PACKAGE` (runtime_support included) and "
            "`PACKAGE.load(device=\"local-sync\")` after numpy and llvmlite were imported; "
            "median of the runs after the first (the first may fill pyree's cache folder).",
            "",
            "| program | import | load | import + load | first run (import + load) |",
            "|---|---|---|---|---|",
        ]
        for program, f in fresh:
            if "error" in f:
                lines.append(f"| {program} | fails: {f['error'].replace('|', '/')} | | | |")
                continue
            first = f["first"]["import_s"] + f["first"]["load_s"]
            lines.append(
                f"| {program} | {_s(f['import_s'], 'ms', 1e3)} | {_s(f['load_s'], 'ms', 1e3)} "
                f"| {_s(f['import_s'] + f['load_s'], 'ms', 1e3)} | {_s(first, 'ms', 1e3)} |"
            )
    if data["local_vs_sync"]:
        lines += [
            "",
            "pyree `local` against its own local-sync, interleaved with each other (last "
            "column: the ratio of the two pyree medians above, each measured between calls "
            "of a different IREE device).",
            "",
            "| program | local | local-sync | local / local-sync | from the runs above |",
            "|---|---|---|---|---|",
        ]
        for d in data["local_vs_sync"]:
            lines.append(
                f"| {d['program']} | {_us(d['local_us'])} | {_us(d['local_sync_us'])} "
                f"| {_ratio(d['ratio'])} | {_ratio(d.get('ratio_via_iree_runs'))} |"
            )
    return "\n".join(lines)
