"""`pyree-translate --dump` end to end, run as a subprocess from the repository root.

Exit status contract (translator/cli.py): 0 success; 1 invalid input with exactly one
line on stderr naming the file, the place (byte offset, or function and pc) and the
reason; 2 usage error.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import corpus_cases

from translator.container import parse_container
from translator.decoder import decode_function
from translator.reader import read_module

REPO = Path(__file__).resolve().parents[2]

# Corpus programs used here (compiled with their manifest flags).
CORPUS_VM = "vm_list"
CORPUS_TENSOR = "tensor_elementwise"


def run_cli(*args, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "translator.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def iree_dump(path: Path, output: str, offsets: bool = False) -> str:
    cmd = ["iree-dump-module", f"--output={output}", str(path)]
    if offsets:
        cmd.insert(1, "--bytecode_offsets")
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def _corpus_vmfb(compile_mlir, name: str) -> Path:
    for case in corpus_cases():
        if case.name == name:
            return compile_mlir(case.source, case.flags)
    raise AssertionError(f"corpus program {name} not in the manifest")


@pytest.fixture(scope="module")
def vm_vmfb(compile_mlir) -> Path:
    return _corpus_vmfb(compile_mlir, CORPUS_VM)


@pytest.fixture(scope="module")
def tensor_vmfb(compile_mlir) -> Path:
    return _corpus_vmfb(compile_mlir, CORPUS_TENSOR)


# -- success --------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["vm", "tensor"])
def test_dump_prints_metadata_and_disassembly(which, vm_vmfb, tensor_vmfb):
    path = vm_vmfb if which == "vm" else tensor_vmfb
    r = run_cli("--dump", path)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    out = r.stdout
    for section in ("Required Types:", "Exported Functions:", "// Sections", "// Bytecode"):
        assert section in out
    assert re.search(r"^vm\.module @\w+ version \d+$", out, re.M)
    assert re.search(r"^vm\.func @", out, re.M)
    assert re.search(r"^\^bb0:$", out, re.M)
    assert "vm.return" in out
    # Metadata comes first, then the disassembly.
    assert out.index("Exported Functions:") < out.index("vm.module @")


@pytest.mark.parametrize("which", ["vm", "tensor"])
@pytest.mark.parametrize("output", ["all", "metadata", "disassembly"])
@pytest.mark.parametrize("offsets", [False, True])
def test_dump_text_equals_iree_dump_module(which, output, offsets, vm_vmfb, tensor_vmfb):
    # These modules have none of the reference tool's known bugs, so the whole text matches.
    path = vm_vmfb if which == "vm" else tensor_vmfb
    args = ["--dump", "--dump-output", output, path]
    if offsets:
        args.insert(1, "--bytecode-offsets")
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    assert r.stdout == iree_dump(path, output, offsets)


def test_dump_writes_nothing(vm_vmfb, tmp_path):
    r = run_cli("--dump", "-o", tmp_path / "out", vm_vmfb)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "out").exists()


def test_dump_from_another_directory(vm_vmfb, tmp_path):
    # The entry point works when run from elsewhere, with a relative input path.
    import os
    import shutil

    shutil.copy(vm_vmfb, tmp_path / "m.vmfb")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "translator.cli",
            "--dump",
            "--dump-output",
            "disassembly",
            "m.vmfb",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("vm.module @")


# -- invalid input: exit 1, one line ------------------------------------------------------


def expect_error_line(r: subprocess.CompletedProcess, path: Path, *patterns: str) -> str:
    assert r.returncode == 1, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert "Traceback" not in line
    assert str(path) in line, line
    for p in patterns:
        assert re.search(p, line), f"{p!r} not in {line!r}"
    return line


@pytest.mark.parametrize("keep", [0, 3, 40, 200, "half", "fb_end-1"])
def test_truncated_file(vm_vmfb, tmp_path, keep):
    # (Bytes after the FlatBuffer, e.g. the ZIP end records, are not needed: cutting the
    # file's last byte is not an error, for IREE either; cut the FlatBuffer instead.)
    data = vm_vmfb.read_bytes()
    c = parse_container(data)
    n = {"half": len(data) // 2, "fb_end-1": c.fb_start + c.size - 1}.get(keep, keep)
    bad = tmp_path / "truncated.vmfb"
    bad.write_bytes(data[:n])
    line = expect_error_line(run_cli("--dump", bad), bad, r"byte offset \d+|function \S+ pc 0x")
    assert line.startswith("pyree-translate: error: ")


def test_wrong_identifier(vm_vmfb, tmp_path):
    data = bytearray(vm_vmfb.read_bytes())
    i = data.find(b"IREE")
    assert i > 0
    data[i : i + 4] = b"XXXX"
    bad = tmp_path / "ident.vmfb"
    bad.write_bytes(bytes(data))
    expect_error_line(run_cli("--dump", bad), bad, r"byte offset \d+", "identifier", "XXXX")


def test_not_a_vmfb(tmp_path):
    bad = tmp_path / "text.vmfb"
    bad.write_text("this is not a module\n" * 10)
    expect_error_line(run_cli("--dump", bad), bad, r"byte offset \d+")


def _function_patch(
    path: Path, mnemonic: str, field_pc_offset: int, fmt: str, value
) -> tuple[bytes, str, int]:
    """Patches an operand of the first `mnemonic` op of any function; returns (bytes, fn, pc)."""
    data = path.read_bytes()
    module = read_module(data)
    for k in range(module.function_count):
        fn = decode_function(module, k)
        for op in fn.ops():
            if op.mnemonic == mnemonic:
                code = bytes(module.function_bytecode(k))
                base = data.find(code)
                assert base >= 0 and data.find(code, base + 1) < 0
                out = bytearray(data)
                struct.pack_into(fmt, out, base + op.pc + field_pc_offset, value(op, fn, module))
                return bytes(out), fn.name, op.pc
    raise AssertionError(f"no {mnemonic} in {path}")


def test_out_of_range_ordinal(tensor_vmfb, tmp_path):
    # The first import call retargeted at an import that does not exist.
    data, fn, pc = _function_patch(
        tensor_vmfb, "call", 1, "<I", lambda op, fn, m: 0x80000000 | (len(m.imports) + 5)
    )
    bad = tmp_path / "ordinal.vmfb"
    bad.write_bytes(data)
    expect_error_line(
        run_cli("--dump", bad),
        bad,
        rf"function {re.escape(fn)} pc 0x{pc:08X}",
        "import ordinal",
        "out of range",
    )


def test_rodata_ordinal_out_of_range(tensor_vmfb, tmp_path):
    data, fn, pc = _function_patch(
        tensor_vmfb, "const.ref.rodata", 1, "<I", lambda op, fn, m: len(m.rodata)
    )
    bad = tmp_path / "rodata.vmfb"
    bad.write_bytes(data)
    expect_error_line(
        run_cli("--dump", bad),
        bad,
        rf"function {re.escape(fn)} pc 0x{pc:08X}",
        "rodata ordinal",
        "out of range",
    )


@pytest.mark.parametrize("program", [CORPUS_TENSOR, "cf_unstructured"])
def test_branch_into_middle_of_instruction(program, compile_mlir, tmp_path):
    src = _corpus_vmfb(compile_mlir, program)
    try:
        data, fn, pc = _function_patch(src, "br", 1, "<I", lambda op, fn, m: op["dest_pc"] + 1)
    except AssertionError:
        data, fn, pc = _function_patch(
            src, "cond_br", 3, "<I", lambda op, fn, m: op["true_dest_pc"] + 1
        )
    bad = tmp_path / "branch.vmfb"
    bad.write_bytes(data)
    expect_error_line(
        run_cli("--dump", bad),
        bad,
        rf"function {re.escape(fn)} pc 0x{pc:08X}",
        "not the start of a block",
    )


def test_bad_function_fails_even_for_metadata_only(tensor_vmfb, tmp_path):
    # --dump-output metadata does not decode code, so it succeeds; disassembly fails.
    data, fn, pc = _function_patch(tensor_vmfb, "br", 1, "<I", lambda op, fn, m: op["dest_pc"] + 1)
    bad = tmp_path / "branch.vmfb"
    bad.write_bytes(data)
    r = run_cli("--dump", "--dump-output", "metadata", bad)
    assert r.returncode == 0, r.stderr
    expect_error_line(run_cli("--dump", "--dump-output", "disassembly", bad), bad, f"pc 0x{pc:08X}")


def test_nonexistent_file(tmp_path):
    missing = tmp_path / "does-not-exist.vmfb"
    expect_error_line(run_cli("--dump", missing), missing, "No such file")


def test_directory_as_input(tmp_path):
    expect_error_line(run_cli("--dump", tmp_path), tmp_path)


def test_empty_file(tmp_path):
    bad = tmp_path / "empty.vmfb"
    bad.write_bytes(b"")
    expect_error_line(run_cli("--dump", bad), bad, r"byte offset \d+")


# -- usage errors: exit 2 --------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--dump"],
        ["--no-such-option", "x.vmfb"],
        ["--dump", "--dump-output", "flatbuffer-json", "x.vmfb"],
        ["--dump", "a.vmfb", "b.vmfb"],
    ],
    ids=["no-args", "no-input", "unknown-option", "bad-choice", "two-inputs"],
)
def test_usage_errors(args):
    r = run_cli(*args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stdout == ""
    assert "usage: pyree-translate" in r.stderr


def test_help():
    r = run_cli("--help")
    assert r.returncode == 0
    assert "--dump" in r.stdout and "--bytecode-offsets" in r.stdout


def test_translate_prints_a_summary_and_quiet_silences_it(tensor_vmfb, tmp_path):
    r = run_cli(tensor_vmfb, "-o", tmp_path, "--name", "pkg")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "pkg")  # stdout: the package path alone
    lines = r.stderr.splitlines()
    assert re.fullmatch(rf"pyree-translate: wrote {re.escape(str(tmp_path / 'pkg'))} in \d+\.\d\d s", lines[0])
    assert re.fullmatch(r"  \d+ functions, \d+ exports \(.+\), \d+ imports", lines[1])
    assert lines[2] == "  executable formats: embedded-elf-x86_64"
    assert re.fullmatch(r"  files: __init__\.py \([\d,]+ bytes\), rodata\.bin \([\d,]+ bytes\)", lines[3])
    verbose = run_cli(tensor_vmfb, "-o", tmp_path, "--name", "pkg", "-v")
    assert any(line.startswith("  function 0: ") for line in verbose.stderr.splitlines())
    quiet = run_cli(tensor_vmfb, "-o", tmp_path, "--name", "pkg", "-q")
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout.strip() == str(tmp_path / "pkg")


def test_no_fuse_keeps_one_call_per_op(tensor_vmfb, tmp_path):
    programs = run_cli(tensor_vmfb, "-o", tmp_path / "on", "--name", "pkg", "-q")
    plain = run_cli(tensor_vmfb, "-o", tmp_path / "off", "--name", "pkg", "-q", "--no-fuse")
    assert programs.returncode == plain.returncode == 0, (programs.stderr, plain.stderr)
    on = (tmp_path / "on" / "pkg" / "__init__.py").read_text()
    off = (tmp_path / "off" / "pkg" / "__init__.py").read_text()
    assert "= QueueProgram(" in on
    assert "= hal_fence_await(" not in on and "= hal_fence_await(" in off
    assert "QueueProgram" not in off


def test_package_help_and_dir_show_the_api(tensor_vmfb, tmp_path):
    run_cli(tensor_vmfb, "-o", tmp_path, "--name", "pkg", "-q")
    code = (
        "import pkg, pydoc; print(sorted(dir(pkg))); "
        "print(pydoc.render_doc(pkg, renderer=pydoc.plaintext))"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert r.returncode == 0, r.stderr
    first, _, rest = r.stdout.partition("\n")
    assert first == "['CCONVS', 'EXPORTS', 'PACKAGE_NAME', 'VM_MODULE_NAME', 'load']"
    assert "Exports (ctx = load()" in rest and "sync func @" in rest
    assert "vm_fail" not in rest and "add_i32" not in rest
    assert "workers: threads" in rest  # load()'s docstring documents every argument


def test_translating_writes_a_package(vm_vmfb, tmp_path):
    """The translate path (not only --dump) runs from the command line."""
    res = run_cli(vm_vmfb, "-o", tmp_path, "--name", "pkg")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "pkg" / "__init__.py").is_file()


@pytest.mark.parametrize(
    "exc",
    [RecursionError("maximum recursion depth exceeded"), KeyError("x\ny"), MemoryError()],
    ids=["recursion", "keyerror", "memory"],
)
def test_unexpected_exception_is_one_line_internal_error(exc, vm_vmfb, tmp_path, monkeypatch, capsys):
    """Anything unexpected inside the translator ends as one line and exit 1, naming the
    input and the translator file and function it came from; never a traceback."""
    import translator.codegen as codegen
    from translator.cli import main

    def boom(*a, **k):
        raise exc

    monkeypatch.setattr(codegen, "write_package", boom)
    assert main([str(vm_vmfb), "-o", str(tmp_path), "--name", "pkg"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pyree-translate: internal error: ")
    assert str(vm_vmfb) in err and type(exc).__name__ in err
    assert "test_cli.py" in err and "boom" in err
    assert "Traceback" not in err
