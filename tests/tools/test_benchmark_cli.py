"""`pyree-benchmark` on a real generated package: it times the export it is asked for with
the inputs pyree-run would parse, and fails like pyree-run (one `CODE; message` line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime_support.tools import benchmark_cli
from runtime_support.tools.benchmark_cli import main, parse_min_time
from translator.codegen import write_package
from translator.reader import read_module_file

SOURCE = Path(__file__).resolve().parents[2] / "bench" / "programs" / "mul4.mlir"
FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
)


@pytest.fixture(scope="module")
def package(compile_mlir, tmp_path_factory) -> Path:
    vmfb = compile_mlir(SOURCE, FLAGS)
    return write_package(read_module_file(vmfb), tmp_path_factory.mktemp("pkg"), "mul4")


def test_times_the_export(package, capsys, monkeypatch):
    calls = []
    real = benchmark_cli.repetition

    def spy(method, inputs, min_time, count):
        calls.append(method(*inputs))  # the values the timed calls compute
        return real(method, inputs, min_time, count)

    monkeypatch.setattr(benchmark_cli, "repetition", spy)
    argv = [str(package), "--function=main", "--device=local-sync", "--input=4xf32=1 2 3 4",
            "--input=4xf32=2", "--benchmark_repetitions=3", "--benchmark_min_time=7x",
            "--benchmark_format=json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert [c.tolist() for c in calls] == [[2, 4, 6, 8]] * 3
    names = [b["name"] for b in out["benchmarks"]]
    assert names[:3] == ["BM_main/process_time/real_time"] * 3
    assert [n.rsplit("_", 1)[1] for n in names[3:]] == ["mean", "median", "min", "max"]
    assert [b["iterations"] for b in out["benchmarks"][:3]] == [7, 7, 7]
    pc = out["per_call"]
    assert pc["calls"] == 21 and 0 < pc["min_us"] <= pc["median_us"] <= pc["max_us"]


def test_console_output_and_default_function(package, capsys):
    assert main([str(package), "--input=4xf32=1", "--input=4xf32=1",
                 "--benchmark_min_time=0.01s"]) == 0
    out = capsys.readouterr().out
    assert "BM_main/process_time/real_time" in out and "per call: median" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--function=nope"], "NOT_FOUND; no function `nope`"),
        (["--input=4xf32=1"], "INVALID_ARGUMENT; input list and function mismatch"),
        (["--input=4xf32=1", "--input=3xf32=1"], "INVALID_ARGUMENT; argument 'input1'"),
        (["--input=4xq9=1", "--input=4xf32=1"], "parsing input `4xq9=1`"),
    ],
)
def test_failures_are_one_status_line(package, capsys, argv, message):
    assert main([str(package), *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_usage_errors(tmp_path, capsys):
    assert main([str(tmp_path / "missing")]) == 2
    assert main(["x", "--benchmark_min_time=abc"]) == 2
    assert parse_min_time("0.25s") == (0.25, None) and parse_min_time("12x") == (None, 12)
