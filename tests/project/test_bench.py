"""`python -m bench` end to end on its smallest program, and the row a program gets when
pyree cannot load it. (The timings themselves are never asserted: benchmarks, not tests.)"""

from __future__ import annotations

import json
import statistics

import pytest

pytest.importorskip("iree.runtime")

from bench import build, cli  # noqa: E402
from bench.programs import (  # noqa: E402
    ATTENTION_BLOCKS,
    CHAIN_LENGTH,
    DYNAMIC_CHAIN_LENGTH,
    PROGRAM_DIR,
    attention_source,
    chain_source,
    dynamic_chain_source,
)


def test_chain_files_are_what_the_generator_writes():
    for n in (1, CHAIN_LENGTH):
        assert (PROGRAM_DIR / f"chain{n}.mlir").read_text() == chain_source(n)
    n = DYNAMIC_CHAIN_LENGTH
    assert (PROGRAM_DIR / f"dynamic_chain{n}.mlir").read_text() == dynamic_chain_source(n)
    assert (PROGRAM_DIR / "attention_dyn.mlir").read_text() == attention_source(ATTENTION_BLOCKS)


def test_every_program_source_exists():
    from bench.programs import PROGRAMS

    for p in PROGRAMS:
        assert p.model is not None or p.source.is_file(), p.name


def _run(tmp_path, capsys, *extra):
    out = tmp_path / "r.json"
    argv = ["--quick", "--programs", "mul4", "--devices", "sync,task",
            "--cache", str(tmp_path / "cache"), "--json", str(out), *extra]
    assert cli.main(argv) == 0
    return json.loads(out.read_text()), capsys.readouterr().out


def test_quick_run_prints_and_writes_the_table(tmp_path, capsys):
    data, text = _run(tmp_path, capsys)
    rows = data["rows"]
    assert [(r["program"], r["devices"]) for r in rows] == [
        ("mul4", "local-sync / local-sync"), ("mul4", "local / local-task")]
    for r in rows:
        assert r["status"] == "ok"  # results were checked equal to IREE's before timing
        assert r["pyree"]["reps"] == r["iree"]["reps"] >= 5
        assert r["ratio"] == pytest.approx(r["pyree"]["median_us"] / r["iree"]["median_us"])
        assert r["paired_ratio"] > 0
        assert r["translate_s"] > 0 and r["pyree_load_s"] > 0 and r["iree_first_call_s"] > 0
    assert "| mul4 | local-sync / local-sync |" in text and "| ratio |" in text
    # the package imported and loaded in fresh processes (runtime import included)
    fresh = rows[0]["fresh"]
    assert fresh["runs"] == 1 and fresh["import_s"] > 0 and fresh["load_s"] > 0
    assert "| mul4 | " in text.split("Fresh process")[1]
    # pyree local against pyree local-sync, interleaved with each other.
    [direct] = data["local_vs_sync"]
    assert rows[1]["pyree_local_direct"]["reps"] == rows[1]["pyree_sync_direct"]["reps"] >= 5
    assert direct["ratio"] == pytest.approx(direct["local_us"] / direct["local_sync_us"])
    assert direct["local_us"] == rows[1]["pyree_local_direct"]["median_us"]
    assert "| mul4 |" in text.split("pyree `local` against its own local-sync")[1]
    # The second run reuses the compiled vmfb and the translated package.
    data, _ = _run(tmp_path, capsys)
    assert data["rows"][0]["compile_s"] is None and data["rows"][0]["translate_cached"]


def test_a_package_that_does_not_load_is_a_row(tmp_path, capsys, monkeypatch):
    def broken(pkg_dir):
        raise IndentationError("too many levels of indentation")

    monkeypatch.setattr(build, "import_package", broken)
    data, text = _run(tmp_path, capsys, "--devices", "sync")
    (row,) = data["rows"]
    assert row["status"].startswith("does not load: IndentationError")
    assert "pyree" not in row and row["iree"]["reps"] >= 5  # IREE is still timed alone
    assert "does not load" in text


def test_an_iree_failure_is_a_row(tmp_path, capsys, monkeypatch):
    import bench.iree_side

    class Broken:
        def __init__(self, vmfb, driver):
            raise RuntimeError("no such driver")

    monkeypatch.setattr(bench.iree_side, "IreeProgram", Broken)
    data, _ = _run(tmp_path, capsys, "--devices", "sync")
    (row,) = data["rows"]
    assert row["status"] == "IREE fails: RuntimeError: no such driver"
    assert "pyree" not in row and "iree" not in row


def test_host_cost_per_dispatch_for_both_chain_forms():
    """dispatch_costs: (median(chainN) - median(chain1)) / (N - 1) for the chain as
    translated and for chainN-steps, per device pair."""
    def row(program, pair, ours, theirs):
        return {"program": program, "pair": pair, "status": "ok",
                "pyree": {"median_us": ours}, "iree": {"median_us": theirs}}

    n = CHAIN_LENGTH
    rows = [row("chain1", "sync", 5.0, 8.0), row(f"chain{n}", "sync", 5.0 + (n - 1) * 0.1, 8.0 + (n - 1)),
            row(f"chain{n}-steps", "sync", 5.0 + (n - 1) * 2.0, 8.0 + (n - 1))]
    costs = cli.dispatch_costs(rows)
    assert [(c["form"], round(c["pyree_us"], 6), round(c["iree_us"], 6)) for c in costs] == [
        ("one queue program call", 0.1, 1.0), ("one import call per op", 2.0, 1.0)]
    assert costs[1]["ratio"] == pytest.approx(2.0)


def test_paired_ratio_cancels_a_drift_between_rounds():
    """Each round's two calls run at one machine speed: their ratio does not move when the
    speed does, where the medians' ratio picks calls from rounds of different speeds."""
    from bench.timing import paired_ratio

    pyree = [1.0, 1.0, 1.0, 10.0, 10.0]  # half as long as IREE's call in every round,
    iree = [2.0, 2.0, 20.0, 20.0, 20.0]  # the machine 10x slower from the third round on
    assert paired_ratio(pyree, iree) == pytest.approx(0.5)
    assert statistics.median(pyree) / statistics.median(iree) == pytest.approx(0.05)
