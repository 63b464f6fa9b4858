"""`pyree-run` plumbing: package import, argument typing, printing, --output, exit codes.

The generated package here is a TEST DOUBLE of the package API (`load`, `EXPORTS`, `CCONVS`,
one method per export), written into a temp dir; it implements the same identity
functions as the MLIR module below so the CLI's output can be compared with
iree-run-module's. End-to-end runs on real generated packages come with the code generator.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import textwrap
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from runtime_support.tools.run_cli import main, parse_cconv

HAVE_IREE = (
    shutil.which("iree-run-module") is not None
    and shutil.which("iree-compile") is not None
)
needs_iree = pytest.mark.skipif(
    not HAVE_IREE, reason="needs iree-base-compiler/iree-base-runtime"
)

FAKE_PACKAGE = '''
"""Test double of a pyree-generated package (API shape only)."""
import numpy as np
from runtime_support.errors import VMError

EXPORTS = {"id_f32": None, "id2_i32": None, "two": None, "none": None, "s_f64": None,
           "fail": None, "lst": None, "id_any": None, "s_i64": None}
CCONVS = {"id_f32": "0r_r", "id2_i32": "0r_r", "two": "0ri_ri", "none": "0v_v",
          "s_f64": "0F_F", "fail": "0i_i", "lst": "0v_r", "id_any": "0r_r", "s_i64": "0I_I"}
LOADS = []


class _Context:
    def __init__(self, device, parameters):
        self.device = device
        self.parameters = parameters

    def id_f32(self, a):
        return a

    def id2_i32(self, a):
        return a

    def id_any(self, a):
        return a

    def two(self, a, b):
        return a, b

    def none(self):
        return None

    def s_f64(self, x):
        return x

    def s_i64(self, x):
        return x

    def fail(self, a):
        if a <= 0:
            raise VMError(9, "a must be positive", function="fail", location="m.mlir:9:5")
        return a

    def lst(self):
        return [np.int64(7), [np.float32(2.5)], None]

    def device_info(self):
        return self.device, self.parameters


def load(device="local", parameters=None):
    LOADS.append((device, parameters))
    return _Context(device, parameters)
'''


@pytest.fixture()
def pkg(tmp_path) -> Path:
    d = tmp_path / "fake_model"
    d.mkdir()
    (d / "__init__.py").write_text(FAKE_PACKAGE)
    return d


def run_cli(argv, cwd=None):
    out, err = io.StringIO(), io.StringIO()
    import os

    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            rc = main([str(a) for a in argv])
    finally:
        os.chdir(old)
    return rc, out.getvalue(), err.getvalue()


IDENTITY_MLIR = """
module {
  func.func @id_f32(%a: tensor<?xf32>) -> tensor<?xf32> { return %a : tensor<?xf32> }
  func.func @id2_i32(%a: tensor<?x?xi32>) -> tensor<?x?xi32> { return %a : tensor<?x?xi32> }
  func.func @two(%a: tensor<?xf32>, %b: i32) -> (tensor<?xf32>, i32) { return %a, %b : tensor<?xf32>, i32 }
  func.func @none() { return }
  func.func @s_f64(%a: f64) -> f64 { return %a : f64 }
  func.func @s_i64(%a: i64) -> i64 { return %a : i64 }
}
"""


@pytest.fixture(scope="module")
def id_vmfb(tmp_path_factory):
    from helpers_compile import LLVM_CPU_FLAGS, compile_mlir

    return compile_mlir(
        IDENTITY_MLIR,
        tmp_path_factory.mktemp("cli"),
        LLVM_CPU_FLAGS + ("--iree-input-demote-f64-to-f32=false",),
        name="cli_id",
    )


def iree(vmfb, args, cwd=None):
    p = subprocess.run(
        ["iree-run-module", "--device=local-sync", f"--module={vmfb}", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )
    return p.returncode, p.stdout, p.stderr


DIFF_CASES = [
    ["--function=id_f32", "--input=4xf32=1 2 3 4"],
    [
        "--function=id_f32",
        "--input=3xf32=0.1 1e-8 -nan",
        "--output_max_element_count=2",
    ],
    ["--function=id2_i32", "--input=2x3xi32=1 2 3 4 5 6"],
    ["--function=id2_i32", "--input=2x3xsi32=[1 2 3][4 5 6]"],
    ["--function=two", "--input=2xf32=1,2", "--input=7"],
    ["--function=two", "--input=2xf32=1,2", "--input=4294967295"],
    ["--function=none"],
    ["--function=s_f64", "--input=0.3333333333333333"],
    ["--function=s_f64", "--input=5"],
    ["--function=s_i64", "--input=0x7fffffffffffffff"],
    ["--function=two", "--input=2xf32=1,2", "--input=7", "--output=-", "--output="],
    ["--function=two", "--input=2xf32=1,2", "--input=7", "--output=", "--output=-"],
]


@needs_iree
@pytest.mark.parametrize("args", DIFF_CASES, ids=[" ".join(a) for a in DIFF_CASES])
def test_output_matches_iree_run_module(pkg, id_vmfb, args):
    rc_ref, out_ref, _ = iree(id_vmfb, args)
    rc, out, err = run_cli([pkg, *args])
    assert (rc, out) == (rc_ref, out_ref), err


ERROR_CASES = [
    (["--function=id_f32", "--input=4xf32=1 2"], "OUT_OF_RANGE"),
    (["--function=id_f32", "--input=5"], "INVALID_ARGUMENT"),
    (["--function=s_f64", "--input=abc"], "INVALID_ARGUMENT"),
    (["--function=two", "--input=2xf32=1,2"], "INVALID_ARGUMENT"),
    (["--function=id_f32", "--input=1xf32=1", "--input=1xf32=1"], "INVALID_ARGUMENT"),
    (["--function=nope"], "NOT_FOUND"),
    (
        ["--function=two", "--input=2xf32=1,2", "--input=7", "--output=-"],
        "OUT_OF_RANGE",
    ),
    (["--function=id_f32", "--input=1xf32=1", "--output=xyz"], "UNIMPLEMENTED"),
]


@needs_iree
@pytest.mark.parametrize(
    "args,code", ERROR_CASES, ids=[" ".join(a) for a, _ in ERROR_CASES]
)
def test_errors_match_iree_run_module(pkg, id_vmfb, args, code):
    rc_ref, _, err_ref = iree(id_vmfb, args)
    rc, _, err = run_cli([pkg, *args])
    assert rc_ref == 1 and rc == 1
    assert code in err_ref and err.startswith(code), err


@needs_iree
def test_npy_outputs_match_iree_run_module(pkg, id_vmfb, tmp_path):
    args = [
        "--function=two",
        "--input=2xf32=1,2",
        "--input=7",
        "--output=@a.npy",
        "--output=+a.npy",
    ]
    ref_dir, our_dir = tmp_path / "ref", tmp_path / "ours"
    ref_dir.mkdir()
    our_dir.mkdir()
    assert iree(id_vmfb, args, cwd=ref_dir)[0] == 0
    assert run_cli([pkg, *args], cwd=our_dir)[0] == 0
    with open(ref_dir / "a.npy", "rb") as f1, open(our_dir / "a.npy", "rb") as f2:
        for _ in range(2):
            a, b = np.load(f1), np.load(f2)
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    args = ["--function=id2_i32", "--input=2x2xi32=1 2 3 4", "--output=@b.bin"]
    assert iree(id_vmfb, args, cwd=ref_dir)[0] == 0
    assert run_cli([pkg, *args], cwd=our_dir)[0] == 0
    assert (ref_dir / "b.bin").read_bytes() == (our_dir / "b.bin").read_bytes()


def test_vm_error_reports_code_message_location(pkg):
    rc, out, err = run_cli([pkg, "--function=fail", "--input=-1"])
    assert rc == 1
    assert out == "EXEC @fail\n"
    assert err.startswith("m.mlir:9:5: FAILED_PRECONDITION; a must be positive")
    assert "invoking function 'fail'" in err


def test_list_results_and_device_parameters(pkg):
    rc, out, _ = run_cli([pkg, "--function=lst"])
    assert rc == 0
    assert out == (
        "EXEC @lst\nresult[0]: vm.list\nchild_list[0]: i64=7\n"
        "child_list[1]: vm.list\nchild_list[0]: f32=2.5\n\nchild_list[2]: (null)\n\n"
    )
    rc, _, _ = run_cli(
        [
            pkg,
            "--function=none",
            "--device=local-sync",
            "--parameters=model=w.irpa",
            "--parameters=x.gguf",
        ]
    )
    assert rc == 0
    mod = [
        m
        for n, m in sys.modules.items()
        if n.startswith("_pyree_run_")
        and Path(getattr(m, "__file__", "")).parent == pkg
    ]
    assert mod and mod[0].LOADS[-1] == (
        "local-sync",
        [("model", "w.irpa"), ("", "x.gguf")],
    )


def test_usage_errors_exit_2(pkg, tmp_path):
    assert run_cli([])[0] == 2
    assert run_cli([tmp_path / "missing", "--function=x"])[0] == 2
    assert run_cli([pkg, "--function=id_f32", "--bogus"])[0] == 2
    # (`--output_max_element_count=abc` is 0, as C atoi reads it in iree-run-module.)
    assert run_cli([pkg, "--output_max_element_count", "abc"])[0] == 2
    rc, _, err = run_cli([pkg])  # several exports and no --function
    assert rc == 1 and "--function= must be specified" in err


def test_without_cconvs_bare_numbers_are_scalars(tmp_path):
    d = tmp_path / "nocc"
    d.mkdir()
    (d / "__init__.py").write_text(textwrap.dedent("""
        EXPORTS = {"f": None}
        class C:
            def f(self, *args):
                return args
        def load(device="local", parameters=None):
            return C()
    """))
    rc, out, _ = run_cli([d, "--input=3", "--input=1.5", "--input=2xi32=1 2"])
    assert rc == 0
    assert out == (
        "EXEC @f\nresult[0]: i32=3\nresult[1]: f32=1.5\n"
        "result[2]: hal.buffer_view\n2xi32=1 2\n"
    )


def test_print_max_element_count_alias(pkg):
    rc, out, _ = run_cli(
        [
            pkg,
            "--function=id_f32",
            "--input=4xf32=1 2 3 4",
            "--print_max_element_count=2",
        ]
    )
    assert rc == 0 and out.endswith("4xf32=1 2...\n")


def test_parse_cconv():
    assert parse_cconv("0rI_rf") == (["ref", "i64"], ["ref", "f32"])
    assert parse_cconv("0v_v") == ([], [])
    with pytest.raises(ValueError):
        parse_cconv("0CiD_v")


def test_console_entry_point_runs(pkg):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "runtime_support.tools.run_cli",
            str(pkg),
            "--function=id_f32",
            "--input=2xf32=1 2",
        ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == "EXEC @id_f32\nresult[0]: hal.buffer_view\n2xf32=1 2\n"


# -- hostile flagfiles (issue #27 item 8) ----------------------------------------------------


def _one_error_line(rc, err, code=2):
    lines = err.splitlines()
    assert rc == code and len(lines) == 1 and "Traceback" not in err, (rc, err)
    return lines[0]


def test_flagfile_including_itself_is_a_usage_error(pkg, tmp_path):
    """iree-run-module recurses until its stack overflows (SIGSEGV); one line, exit 2."""
    (tmp_path / "self.txt").write_text(f"--flagfile={tmp_path / 'self.txt'}\n")
    line = _one_error_line(*run_cli([pkg, f"--flagfile={tmp_path / 'self.txt'}"])[::2])
    assert "includes itself" in line and "self.txt -> self.txt" in line
    (tmp_path / "a.txt").write_text("--flagfile=b.txt\n")
    (tmp_path / "b.txt").write_text("--input=1\n--flagfile=a.txt\n")
    line = _one_error_line(*run_cli([pkg, "--flagfile=a.txt"], cwd=tmp_path)[::2])
    assert "a.txt -> b.txt -> a.txt" in line


def test_flagfile_nesting_depth_is_bounded(pkg, tmp_path):
    from runtime_support.tools.run_flags import FLAGFILE_MAX_DEPTH

    for i in range(FLAGFILE_MAX_DEPTH + 1):
        (tmp_path / f"f{i}.txt").write_text(f"--flagfile=f{i + 1}.txt\n")
    (tmp_path / f"f{FLAGFILE_MAX_DEPTH + 1}.txt").write_text("--input=1\n")
    line = _one_error_line(*run_cli([pkg, "--flagfile=f0.txt"], cwd=tmp_path)[::2])
    assert "nested more than" in line


def test_flagfile_bytes_that_are_not_utf8_pass_through(pkg, tmp_path):
    """As on a command line (iree-run-module takes the bytes): an unknown function."""
    (tmp_path / "bin.txt").write_bytes(b"--function=id\xff\xfe_f32\n--input=2xf32=1\n")
    rc, _, err = run_cli([pkg, f"--flagfile={tmp_path / 'bin.txt'}"])
    line = _one_error_line(rc, err, code=1)
    assert line.startswith("NOT_FOUND; no function `id")


def test_flagfile_reads_are_bounded(pkg, tmp_path, monkeypatch):
    """/dev/zero never ends: the read stops at the size cap, in bounded chunks."""
    import runtime_support.tools.run_flags as run_flags

    monkeypatch.setattr(run_flags, "FLAGFILE_MAX_BYTES", 1 << 20)
    line = _one_error_line(*run_cli([pkg, "--flagfile=/dev/zero"])[::2])
    assert "/dev/zero: larger than" in line
    # All the files of a command line together: a file included many times over.
    monkeypatch.setattr(run_flags, "FLAGFILE_MAX_TOTAL_BYTES", 1000)
    (tmp_path / "leaf.txt").write_text("--input=1\n" * 20)
    (tmp_path / "mid.txt").write_text("--flagfile=leaf.txt\n" * 10)
    line = _one_error_line(*run_cli([pkg, "--flagfile=mid.txt"], cwd=tmp_path)[::2])
    assert "leaf.txt: larger than" in line


# -- a long command line in linear time (issue #27 item 9) -----------------------------------


def _namespace_or_error(parse, argv):
    err = io.StringIO()
    try:
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            return ("ok", vars(parse(argv)))
    except SystemExit as e:
        return ("exit", e.code, err.getvalue())


ARGV_VARIANTS = [
    ["p", "--input=1", "--input=2", "--output=-", "--function=f", "--function=g"],
    ["p", "--input=1", "--input", "2", "--input=3"],  # a two-token form: argparse's order
    ["p", "--inp=1", "--input=2"],  # an abbreviation
    ["p", "--in=1"],  # an ambiguous one
    ["p", "--expected_rtol=x", "--expected_rtol=1", "--input=1"],  # argparse's own error
    ["p", "--expected_rtol=1", "--expected_rtol=x"],
    ["p", "--equality_mode=exact", "--equality_mode=bogus", "--equality_mode=approximate"],
    ["p", "--print_statistics", "--print_statistics", "--print_statistics=1"],
    ["p", "--output_max_element_count=3", "--print_max_element_count=4"],
    ["p", "--device", "--input=1"],
    ["p", "--", "--input=1"],
    ["--module=a", "--module=b", "--parameters=s=x.irpa", "--expected_output=1"],
    ["p", "q", "--input=1"],
    ["p", "--bogus=1", "--input=1"],
    ["--input=1", "p", "--input=2", "--version"],
]


@pytest.mark.parametrize("argv", ARGV_VARIANTS, ids=[" ".join(a) for a in ARGV_VARIANTS])
def test_linear_parse_equals_argparse(argv):
    from runtime_support.tools.run_flags import build_parser, parse_args_linear

    ours = _namespace_or_error(lambda a: parse_args_linear(build_parser(), a), argv)
    assert ours == _namespace_or_error(build_parser().parse_args, argv)


def test_argparse_sees_a_bounded_command_line(monkeypatch):
    """30,000 flags: argparse (quadratic in the flags it sees) gets a handful."""
    import argparse

    from runtime_support.tools import run_flags as rc

    seen = []
    real = argparse.ArgumentParser.parse_args
    monkeypatch.setattr(
        argparse.ArgumentParser, "parse_args", lambda self, a=None, n=None: seen.append(len(a)) or real(self, a, n)
    )
    n = 30_000
    argv = ["pkg"] + [f"--input={i}" for i in range(n)] + ["--function=f"] * n + ["--print_statistics"] * n
    args = rc.parse_args_linear(rc.build_parser(), argv)
    assert seen == [3] and args.input == [str(i) for i in range(n)] and args.function == "f"


def test_fuzz_findings_are_one_line_errors(pkg, tmp_path):
    """What tests/fuzz_cli.py found: argparse echoing a line break, a NUL or lone
    surrogate in a file name, integers past Python's int() digit limit."""
    rc, _, err = run_cli([pkg, "--function=id_f32", "a\nb\x85c"])
    assert _one_error_line(rc, err).startswith("pyree-run: error: unrecognized arguments")
    for spec in ("2xf32=@a\x00b", "2xf32=@a\ud800b", "@x\x00.npy"):
        rc, _, err = run_cli([pkg, "--function=id_f32", f"--input={spec}"])
        assert _one_error_line(rc, err, code=1).startswith("UNKNOWN; unable to open file")
    rc, out, err = run_cli([pkg, "--function=id_f32", "--input=3xf32=1",
                            "--output_max_element_count=" + "9" * 10_000])
    assert rc == 0 and out.endswith("3xf32=1 1 1\n"), err
    rc, _, err = run_cli([pkg, "--function=s_i64", "--input=" + "9" * 10_000])
    assert _one_error_line(rc, err, code=1).startswith("INVALID_ARGUMENT; parsing value")
