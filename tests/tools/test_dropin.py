"""pyree-run as a drop-in for iree-run-module on real translated packages (issue 13).

Each test compiles a small MLIR program with the pinned iree-compile, translates it with
`pyree-translate`, and runs the same command line through `pyree-run` and
`iree-run-module`, comparing stdout and exit status byte for byte.
"""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from helpers_process import cli

from runtime_support.api.context import python_name

from runtime_support.tools.run_cli import load_package, main as run_main
from translator.cli import main as translate_main

HAVE_IREE = shutil.which("iree-run-module") is not None and shutil.which("iree-compile") is not None
pytestmark = pytest.mark.skipif(not HAVE_IREE, reason="needs iree-base-compiler/iree-base-runtime")

CPU = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
)
ASYNC = CPU + ("--iree-execution-model=async-external",)


@pytest.fixture(scope="module")
def build(compile_mlir, tmp_path_factory):
    """build(mlir_text, flags=CPU, name=...) -> (vmfb path, translated package dir)."""
    root = tmp_path_factory.mktemp("dropin")

    def _build(text: str, flags=CPU, name: str = "m"):
        key = hashlib.sha256((text + "\0".join(flags)).encode()).hexdigest()[:12]
        src = root / f"{name}_{key}.mlir"
        if not src.exists():
            src.write_text(text)
        vmfb = Path(compile_mlir(src, flags))
        pkg = root / "out" / f"{name}_{key}"
        if not pkg.exists():
            local = root / f"{name}_{key}.vmfb"
            shutil.copyfile(vmfb, local)
            rc, _, err = cli(translate_main, [local, "-o", root / "out", "--name", pkg.name])
            assert rc == 0, err
        return vmfb, pkg

    return _build


def iree_run(modules, args, cwd=None):
    p = subprocess.run(
        ["iree-run-module", "--device=local-sync", *[f"--module={m}" for m in modules], *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )
    return p.returncode, p.stdout, p.stderr


def pyree_run(pkg, args, extra=()):
    return cli(run_main, [pkg, "--device=local-sync", *extra, *args])


def same_as_iree(vmfb, pkg, args):
    ref = iree_run([vmfb], args)
    ours = pyree_run(pkg, args)
    assert (ours[0], ours[1]) == (ref[0], ref[1]), (ours[2], ref[2])
    return ours


# -- export names that are not Python identifiers -------------------------------------

DOTTED = """
func.func @"i32i32.i32"(%a: i32, %b: i32) -> i32 {
  %c = arith.addi %a, %b : i32
  return %c : i32
}
func.func @"f.x-y"(%a: tensor<2xf32>) -> tensor<2xf32> {
  %c = arith.addf %a, %a : tensor<2xf32>
  return %c : tensor<2xf32>
}
func.func @while(%a: i32) -> i32 {
  %c = arith.muli %a, %a : i32
  return %c : i32
}
"""


def test_dotted_export_names_run_by_vm_name(build):
    vmfb, pkg = build(DOTTED, name="dotted")
    same_as_iree(vmfb, pkg, ["--function=i32i32.i32", "--input=3", "--input=4"])
    rc, out, _ = same_as_iree(vmfb, pkg, ["--function=f.x-y", "--input=2xf32=1 2.5"])
    assert rc == 0 and out.endswith("2xf32=2 5\n")


def test_dotted_export_names_from_python(build):
    _, pkg = build(DOTTED, name="dotted")
    ctx = load_package(pkg).load(device="local-sync")
    assert ctx.call("i32i32.i32", 3, 4) == 7
    assert "i32i32.i32" in ctx.exports
    # getattr by VM name too (IREE's e2e names exports `while`, `i8i8.i32`), beside the
    # identifier attribute the generated code names them by
    assert getattr(ctx, "i32i32.i32")(3, 4) == 7
    assert getattr(ctx, "while")(5) == getattr(ctx, python_name("while"))(5) == 25
    assert ctx.i32i32_i32(1, 2) == 3
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ctx.nope


# -- --function left out ----------------------------------------------------------------

ONE_EXPORT = """
util.global private mutable @g = dense<[1.0, 2.0]> : tensor<2xf32>
func.func @only(%a: tensor<2xf32>) -> tensor<2xf32> {
  %g = util.global.load @g : tensor<2xf32>
  %c = arith.addf %a, %g : tensor<2xf32>
  util.global.store %c, @g : tensor<2xf32>
  return %c : tensor<2xf32>
}
"""


@pytest.mark.parametrize(
    "text,flags,args",
    [
        (ONE_EXPORT, CPU, ["--input=2xf32=4 5"]),  # an __init export next to the user's
        (ONE_EXPORT, ASYNC, ["--input=2xf32=4 5"]),  # async-external: `$async`-free name
        (DOTTED, CPU, ["--input=1"]),  # two user exports: an error, as in IREE
    ],
    ids=["with-init", "async-external", "two-exports"],
)
def test_function_left_out_follows_iree_run_module(build, text, flags, args):
    vmfb, pkg = build(text, flags, name="one")
    if text is ONE_EXPORT:
        assert "__init" in load_package(pkg).EXPORTS
    ref = iree_run([vmfb], args)
    ours = pyree_run(pkg, args)
    assert (ours[0], ours[1]) == (ref[0], ref[1]), (ours[2], ref[2])
    if ref[0]:
        assert ref[2].strip().endswith(ours[2].strip().split("; ", 1)[1]), (ours[2], ref[2])


# -- every CLI error is one line --------------------------------------------------------


def _one_line_error(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("device,code", [("cuda", "UNAVAILABLE"), ("cpu", "NOT_FOUND")])
def test_unusable_device_is_one_line_like_iree(build, device, code):
    vmfb, pkg = build(DOTTED, name="dotted")
    args = ["--function=i32i32.i32", "--input=1", "--input=2"]
    ref = subprocess.run(
        ["iree-run-module", f"--device={device}", f"--module={vmfb}", *args],
        capture_output=True, text=True, timeout=60,
    )
    rc, out, err = cli(run_main, [pkg, f"--device={device}", *args])
    assert rc == ref.returncode == 1 and out == ref.stdout == ""
    assert f"{code};" in ref.stderr
    assert _one_line_error(err).startswith(f"{code}; ") and device in err, err
    assert err.rstrip().endswith("; creating run context")


def test_usage_error_is_one_line_exit_2(build):
    _, pkg = build(DOTTED, name="dotted")
    rc, _, err = cli(run_main, [pkg, "--bogus-flag"])
    assert rc == 2 and _one_line_error(err).startswith("pyree-run: error:"), err


def test_missing_rodata_is_one_line(build, tmp_path):
    _, pkg = build(ONE_EXPORT, name="one")
    broken = tmp_path / "broken"
    shutil.copytree(pkg, broken)
    (broken / "rodata.bin").unlink()
    rc, _, err = cli(run_main, [broken, "--input=2xf32=1 2"])
    assert rc == 1 and "rodata.bin" in _one_line_error(err) and "incomplete" in err, err


def test_closed_context_says_so(build):
    from runtime_support.errors import StatusCode, VMError

    _, pkg = build(ONE_EXPORT, name="one")
    ctx = load_package(pkg).load(device="local-sync")
    ctx.close()
    with pytest.raises(VMError, match="closed context") as e:
        ctx.only(np.ones(2, np.float32))
    assert e.value.code == StatusCode.FAILED_PRECONDITION


def test_unexpected_exception_is_one_line(tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    (d / "__init__.py").write_text(
        "EXPORTS = {'f': None}\n"
        "class C:\n    def f(self):\n        raise RuntimeError('boom\\nsecond line')\n"
        "def load(device='local', parameters=None):\n    return C()\n"
    )
    rc, _, err = cli(run_main, [d])
    assert rc == 1 and _one_line_error(err).startswith("INTERNAL; ") and "boom" in err


def test_translate_output_error_names_the_output(build, tmp_path):
    vmfb, _ = build(DOTTED, name="dotted")
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    rc, _, err = cli(translate_main, [vmfb, "-o", blocker])
    assert rc == 1 and str(blocker) in _one_line_error(err) and vmfb.name not in err, err


# -- element types: every one iree-run-module prints, in and out ------------------------

TYPES = {  # MLIR element type -> input spec data (iree-run-module syntax)
    "i1": "01 00 01",
    "i8": "-128 127 5",
    "i16": "-3 40000 7",
    "i32": "1 -2 2147483647",
    "i64": "-9223372036854775808 3 4",
    "f16": "1 65520 0.1",
    "f32": "0.1 1e-8 -nan",
    "f64": "0.3333333333333333 1e300 -0",
    "bf16": "1 2.5 1e30",
    "f8E5M2": "1 61440 1e-5",
    "f8E4M3FN": "448 464 0.001953125",
    "f8E5M2FNUZ": "-0 57344 inf",
    "f8E4M3FNUZ": "240 248 0.1",
    "f8E8M0FNU": "1.5 -3 1e30",
}
SPELLING = {"i1": "i1", "complex<f32>": "cf64"}
IDENTITY = "\n".join(
    f"func.func @id_{i}(%a: tensor<?x{t}>) -> tensor<?x{t}> {{ return %a : tensor<?x{t}> }}"
    for i, t in enumerate(TYPES)
)
ARITH = """
func.func @add_bf16(%a: tensor<4xbf16>, %b: tensor<4xbf16>) -> tensor<4xbf16> {
  %c = arith.addf %a, %b : tensor<4xbf16>
  return %c : tensor<4xbf16>
}
func.func @scale_f8(%a: tensor<3xf8E4M3FN>, %s: f32) -> (tensor<3xf8E4M3FN>, tensor<3xf32>) {
  %e = arith.extf %a : tensor<3xf8E4M3FN> to tensor<3xf32>
  %init = tensor.empty() : tensor<3xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%e : tensor<3xf32>) outs(%init : tensor<3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %s : f32
    linalg.yield %y : f32
  } -> tensor<3xf32>
  %t = arith.truncf %m : tensor<3xf32> to tensor<3xf8E4M3FN>
  return %t, %m : tensor<3xf8E4M3FN>, tensor<3xf32>
}
"""
TYPE_CASES = [
    [f"--function=id_{i}", f"--input=3x{SPELLING.get(t, t)}={data}"]
    for i, (t, data) in enumerate(TYPES.items())
] + [
    ["--function=id_2", "--input=3xsi16=-3 4 5"],  # signed spellings print back as given
    ["--function=id_3", "--input=3xui32=1 2 4294967295"],
    ["--function=id_8", "--input=5xbf16=1 2 3 4 5", "--output_max_element_count=4"],
    ["--function=id_9", "--input=3xf8E5M2=@BIN3"],  # raw bytes from a file
    ["--function=id_8", "--input=3xbf16=1 2 3", "--output=@OUT.bin"],
]


@pytest.mark.parametrize("args", TYPE_CASES, ids=[a[1] for a in TYPE_CASES])
def test_element_types_match_iree_run_module(build, tmp_path, args):
    vmfb, pkg = build(IDENTITY, CPU + ("--iree-input-demote-f64-to-f32=false",), name="types")
    (tmp_path / "b3.bin").write_bytes(bytes([0x3C, 0x7C, 0xFE]))
    args = [a.replace("@BIN3", f"@{tmp_path / 'b3.bin'}") for a in args]
    ref_args = [a.replace("@OUT", f"@{tmp_path / 'ref'}") for a in args]
    our_args = [a.replace("@OUT", f"@{tmp_path / 'ours'}") for a in args]
    ref = iree_run([vmfb], ref_args)
    ours = pyree_run(pkg, our_args)
    assert (ours[0], ours[1]) == (ref[0], ref[1]), (ours[2], ref[2])
    if any("@OUT" in a for a in args):
        assert (tmp_path / "ours.bin").read_bytes() == (tmp_path / "ref.bin").read_bytes()


@pytest.mark.parametrize(
    "args",
    [
        ["--function=add_bf16", "--input=4xbf16=1 2.5 -3 1e30", "--input=4xbf16=1 2.5 -3 1e30"],
        ["--function=scale_f8", "--input=3xf8E4M3FN=1 0.3 -448", "--input=1.7"],
    ],
    ids=["bf16-add", "f8-scale"],
)
def test_narrow_float_arithmetic_matches_iree_run_module(build, args):
    vmfb, pkg = build(ARITH, name="narrow")
    rc, out, _ = same_as_iree(vmfb, pkg, args)
    assert rc == 0
    if "add_bf16" in args[0]:
        assert out.endswith("4xbf16=2 5 -6 2.00051E+30\n")


def test_narrow_floats_without_ml_dtypes(build):
    """Without ml_dtypes, bf16/f8 still parse and print as IREE does (not as raw uints)."""
    vmfb, pkg = build(ARITH, name="narrow")
    args = ["--function=add_bf16", "--input=4xbf16=1 2.5 -3 1e30", "--input=4xbf16=1 2.5 -3 1e30"]
    ref = iree_run([vmfb], args)
    code = (
        "import sys; sys.modules['ml_dtypes'] = None\n"
        "from runtime_support.tools.run_cli import main\n"
        f"sys.exit(main({[str(pkg), '--device=local-sync', *args]!r}))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert (p.returncode, p.stdout) == (ref[0], ref[1]), p.stderr


def test_narrow_floats_from_python(build):
    """The Python API takes and returns ml_dtypes arrays for bf16 and f8."""
    import ml_dtypes
    from iree_oracle import IreeSession

    vmfb, pkg = build(ARITH, name="narrow")
    ctx = load_package(pkg).load(device="local-sync")
    a = np.array([1, 2.5, -3, 1e30], dtype=ml_dtypes.bfloat16)
    got = ctx.add_bf16(a, a)
    assert got.dtype == ml_dtypes.bfloat16
    x = np.array([1, 0.3, -448], dtype=ml_dtypes.float8_e4m3fn)
    t, m = ctx.scale_f8(x, 1.7)
    assert t.dtype == ml_dtypes.float8_e4m3fn
    ref = IreeSession(vmfb, driver="local-sync")
    (want,) = ref.call("add_bf16", [a, a])
    assert np.asarray(want).view(np.uint16).tobytes() == got.view(np.uint16).tobytes()
    # iree.runtime's helper has no f8 types: compare with iree-run-module's printout.
    from runtime_support.tools.io_format import format_results

    rc, want_out, _ = iree_run([vmfb], ["--function=scale_f8", "--input=3xf8E4M3FN=1 0.3 -448", "--input=1.7"])
    assert rc == 0 and format_results("scale_f8", [t, m]) == want_out


# -- async-external and several modules in one context ----------------------------------

ASYNC_ADD = """
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.addf %a, %b : tensor<4xf32>
  return %c : tensor<4xf32>
}
func.func @pair(%a: tensor<?xf32>, %b: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %c = arith.mulf %a, %b : tensor<?xf32>
  return %c, %a : tensor<?xf32>, tensor<?xf32>
}
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--function=add", "--input=4xf32=1 2 3 4", "--input=4xf32=10 20 30 40"],
        ["--function=pair", "--input=3xf32=1 2 3", "--input=3xf32=2.5"],
    ],
    ids=["add", "dynamic-two-results"],
)
def test_async_external_module_runs(build, args):
    vmfb, pkg = build(ASYNC_ADD, ASYNC, name="asyncx")
    rc, _, _ = same_as_iree(vmfb, pkg, args)
    assert rc == 0


MODULE_A = """
module @a {
  util.global private mutable @count = 0 : i32
  func.func @add(%x: i32, %y: i32) -> i32 {
    %c = arith.addi %x, %y : i32
    %n = util.global.load @count : i32
    %one = arith.constant 1 : i32
    %n1 = arith.addi %n, %one : i32
    util.global.store %n1, @count : i32
    return %n1 : i32
  }
  func.func @double(%t: tensor<4xf32>) -> tensor<4xf32> {
    %c = arith.addf %t, %t : tensor<4xf32>
    return %c : tensor<4xf32>
  }
}
"""
MODULE_B = """
module @b {
  func.func private @a.add(i32, i32) -> i32
  func.func private @a.double(tensor<4xf32>) -> tensor<4xf32>
  func.func @run(%x: i32, %t: tensor<4xf32>) -> (i32, i32, tensor<4xf32>) {
    %s = call @a.add(%x, %x) : (i32, i32) -> i32
    %s2 = call @a.add(%x, %x) : (i32, i32) -> i32
    %d = call @a.double(%t) : (tensor<4xf32>) -> tensor<4xf32>
    %e = arith.mulf %d, %d : tensor<4xf32>
    return %s, %s2, %e : i32, i32, tensor<4xf32>
  }
}
"""
RUN_B = ["--input=5", "--input=4xf32=1 2 3 4"]


@pytest.mark.parametrize("layout", ["positional", "modules-only"])
def test_several_modules_in_one_context(build, layout):
    a_vmfb, a_pkg = build(MODULE_A, name="mod_a")
    b_vmfb, b_pkg = build(MODULE_B, name="mod_b")
    ref = iree_run([a_vmfb, b_vmfb], RUN_B)
    if layout == "positional":
        argv = [b_pkg, "--device=local-sync", f"--module={a_pkg}", *RUN_B]
    else:
        argv = ["--device=local-sync", f"--module={a_pkg}", f"--module={b_pkg}", *RUN_B]
    ours = cli(run_main, argv)
    assert ref[0] == 0 and (ours[0], ours[1]) == (ref[0], ref[1]), (ours[2], ref[2])
    assert "i32=2" in ours[1]  # a's state is shared between b's two calls


def test_missing_import_module_is_one_line(build):
    _, b_pkg = build(MODULE_B, name="mod_b")
    rc, _, err = pyree_run(b_pkg, RUN_B)
    assert rc == 1 and _one_line_error(err).startswith("NOT_FOUND; ") and "a.add" in err


def test_translated_context_as_import_module_from_python(build):
    from runtime_support.tools.io_format import format_results

    a_vmfb, a_pkg = build(MODULE_A, name="mod_a")
    b_vmfb, b_pkg = build(MODULE_B, name="mod_b")
    a = load_package(a_pkg).load(device="local-sync")
    b = load_package(b_pkg).load(device="local-sync", modules={"a": a})
    got = b.run(5, np.array([1, 2, 3, 4], np.float32))
    ref = iree_run([a_vmfb, b_vmfb], ["--function=run", *RUN_B])
    assert format_results("run", got) == ref[1]
    assert b.run(5, np.ones(4, np.float32))[0] == 3  # a's global kept counting
    with pytest.raises(ValueError, match="same device"):
        load_package(b_pkg).load(device="local", modules={"a": a})


class PyModuleA:
    """A custom import module in Python, standing in for module `a` (the README example)."""

    IMPORTS = {"a.add": "0ii_i", "a.double": "0r_r"}

    def __init__(self):
        self.calls = 0

    def add(self, x, y):
        self.calls += 1
        return x * 100 + y

    def double(self, view):
        from runtime_support.hal.buffer_view import HalBufferView

        return HalBufferView.from_numpy(view.to_numpy() * 2)


def test_custom_python_import_module(build):
    _, b_pkg = build(MODULE_B, name="mod_b")
    a = PyModuleA()
    b = load_package(b_pkg).load(device="local-sync", modules={"a": a})
    s, s2, e = b.run(5, np.array([1, 2, 3, 4], np.float32))
    assert (s, s2, a.calls) == (505, 505, 2)
    assert np.array_equal(e, (np.array([1, 2, 3, 4], np.float32) * 2) ** 2)


def test_import_with_wrong_calling_convention_is_refused(build):
    from runtime_support.errors import VMError

    _, b_pkg = build(MODULE_B, name="mod_b")
    bad = PyModuleA()
    bad.IMPORTS = {"a.add": "0I_i", "a.double": "0r_r"}
    with pytest.raises(VMError, match="calling convention"):
        load_package(b_pkg).load(device="local-sync", modules={"a": bad})


# -- executables pyree cannot run ---------------------------------------------------------

UNRUNNABLE = {
    "arm64": (
        "--iree-hal-target-device=local",
        "--iree-hal-local-target-device-backends=llvm-cpu",
        "--iree-llvmcpu-target-triple=aarch64-unknown-linux-gnu",
    ),
    "vulkan": ("--iree-hal-target-backends=vulkan-spirv",),
    "cuda": ("--iree-hal-target-backends=cuda",),
}
UNRUNNABLE_FORMAT = {
    "arm64": "embedded-elf-arm_64",
    "vulkan": "vulkan-spirv-fb",
    "cuda": "cuda-nvptx-fb",
}


def test_vmvx_build_runs_like_iree_run_module(compile_mlir, tmp_path):
    """A VMVX build (issue #26) translates without a warning and pyree-run prints what
    iree-run-module prints for it."""
    src = tmp_path / "m.mlir"
    src.write_text(MODULE_A)
    flags = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx")
    vmfb = Path(compile_mlir(src, flags))
    rc, _, err = cli(translate_main, [vmfb, "-o", tmp_path / "out", "--name", "m", "--strict", "-q"])
    assert rc == 0 and "warning" not in err, err
    args = ["--function=double", "--input=4xf32=1.5 2 -3 4e-3"]  # (a dispatch)
    rc, out, err = pyree_run(tmp_path / "out" / "m", args)
    expected = subprocess.run(
        ["iree-run-module", f"--module={vmfb}", "--device=local-sync", *args],
        capture_output=True, text=True,
    )
    assert rc == 0 and expected.returncode == 0, err
    assert out == expected.stdout


@pytest.mark.parametrize("target", list(UNRUNNABLE))
def test_unrunnable_executables_warn_then_fail_in_one_line(compile_mlir, tmp_path, target):
    src = tmp_path / "m.mlir"
    src.write_text(MODULE_A)
    vmfb = Path(compile_mlir(src, UNRUNNABLE[target]))
    fmt = UNRUNNABLE_FORMAT[target]
    rc, _, err = cli(translate_main, [vmfb, "-o", tmp_path / "out", "--name", "m", "-q"])
    assert rc == 0 and err.startswith("pyree-translate: warning:"), err
    assert f"'{fmt}'" in _one_line_error(err) and "recompile with" in err
    rc, _, err = cli(translate_main, [vmfb, "-o", tmp_path / "strict", "--name", "m", "--strict"])
    assert rc == 1 and f"'{fmt}'" in _one_line_error(err) and not (tmp_path / "strict").exists()
    rc, out, err = pyree_run(tmp_path / "out" / "m", ["--function=add", "--input=1", "--input=2"])
    assert rc == 1 and out == "" and f"'{fmt}'" in _one_line_error(err), err
    assert "recompile with" in err and "#hal.device.target" not in err and len(err) < 600


def test_runnable_module_translates_without_warning(build, tmp_path):
    vmfb, _ = build(MODULE_A, name="mod_a")
    rc, _, err = cli(translate_main, [vmfb, "-o", tmp_path, "--strict", "-q"])
    assert rc == 0 and err == ""  # -q: no summary either


# -- --expected_output, a .vmfb instead of a package, --flagfile, --help, --version --------

EXPECT_MLIR = """
func.func @two(%a: tensor<?xf32>, %b: i32) -> (tensor<?xf32>, i32) {
  return %a, %b : tensor<?xf32>, i32
}
func.func @ints(%a: tensor<?xi32>) -> tensor<?xi32> { return %a : tensor<?xi32> }
func.func @halves(%a: tensor<?xbf16>, %b: tensor<?xf16>) -> (tensor<?xbf16>, tensor<?xf16>) {
  return %a, %b : tensor<?xbf16>, tensor<?xf16>
}
"""
TWO = ["--function=two", "--input=3xf32=1 2 3", "--input=7"]
EXPECT_CASES = [
    [*TWO, "--expected_output=3xf32=1 2.00001 3", "--expected_output=(ignored)"],
    [*TWO, "--expected_output=3xf32=1 2.1 3", "--expected_output=(ignored)"],
    [*TWO, "--expected_output=3xf32=1 2 3", "--expected_output=7"],  # IREE: scalars never match
    [*TWO, "--expected_output=4xf32=1 2 3 4", "--expected_output=(null)"],
    [*TWO, "--expected_output=3xi32=1 2 3"],
    [*TWO, "--expected_output=(ignored)", "--expected_output=7", "--expected_output=7"],
    [*TWO, "--expected_output=3xf32=1 2 3.00003", "--expected_output=(ignored)", "--equality_mode=exact"],
    [*TWO, "--expected_output=3xf32=1 2 3.1", "--expected_output=(ignored)", "--expected_f32_threshold=0.2"],
    [*TWO, "--expected_output=3xf32=1 2 nan", "--expected_output=(ignored)"],
    ["--function=ints", "--input=3xi32=1 2 3", "--expected_output=3xi32=1 2 4"],
    ["--function=ints", "--input=3xi32=1 2 3", "--expected_output=3xi32=1 2 3"],
    ["--function=ints", "--input=3xi32=1 2 3", "--expected_output=7"],
    ["--function=halves", "--input=2xbf16=1 2", "--input=2xf16=1 2",
     "--expected_output=2xbf16=1.005 2", "--expected_output=2xf16=1 2.0015"],
    ["--function=halves", "--input=2xbf16=1 2", "--input=2xf16=1 2",
     "--expected_output=2xbf16=1.02 2", "--expected_output=2xf16=1 2.01"],
]


@pytest.mark.parametrize("args", EXPECT_CASES, ids=[" ".join(a[2:]) for a in EXPECT_CASES])
def test_expected_output_matches_iree_run_module(build, args):
    vmfb, pkg = build(EXPECT_MLIR, name="expect")
    ref = iree_run([vmfb], args)
    ours = pyree_run(pkg, args)
    assert (ours[0], ours[1]) == (ref[0], ref[1]), (ours[2], ref[2])
    if ref[2]:  # a parse error: the same status, message and declaration, one line
        assert ref[2].endswith(_one_line_error(ours[2])), (ours[2], ref[2])


def test_vmfb_runs_through_a_translation_cache(build, tmp_path, monkeypatch):
    monkeypatch.setenv("PYREE_CACHE_DIR", str(tmp_path / "cache"))
    a_vmfb, _ = build(MODULE_A, name="mod_a")
    b_vmfb, _ = build(MODULE_B, name="mod_b")
    for argv in ([b_vmfb, f"--module={a_vmfb}"], [f"--module={a_vmfb}", f"--module={b_vmfb}"]):
        ours = cli(run_main, [*argv, "--device=local-sync", *RUN_B])
        ref = iree_run([a_vmfb, b_vmfb], RUN_B)
        assert (ours[0], ours[1]) == (ref[0], ref[1]), ours[2]
    entries = sorted((tmp_path / "cache" / "packages").iterdir())
    assert len(entries) == 2  # one package per module content, reused by the second run
    bad = tmp_path / "bad.vmfb"
    bad.write_bytes(b"not a module")
    rc, _, err = cli(run_main, [bad])
    assert rc == 1 and "bad.vmfb" in _one_line_error(err) and err.startswith("INVALID_ARGUMENT")


def test_vmfb_runs_without_a_writable_cache_folder(build, tmp_path, monkeypatch):
    """A read-only home: the translation goes to a folder of the run's own."""
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    monkeypatch.setenv("PYREE_CACHE_DIR", str(blocker / "cache"))  # (under a file)
    a_vmfb, _ = build(MODULE_A, name="mod_a")
    b_vmfb, _ = build(MODULE_B, name="mod_b")
    ours = cli(run_main, [f"--module={a_vmfb}", f"--module={b_vmfb}", "--device=local-sync",
                          *RUN_B])
    ref = iree_run([a_vmfb, b_vmfb], RUN_B)
    assert (ours[0], ours[1]) == (ref[0], ref[1]) and ref[0] == 0, ours[2]


def test_flagfile(build, tmp_path):
    vmfb, pkg = build(DOTTED, name="dotted")
    flags = tmp_path / "flags.txt"
    flags.write_text("# the add\n--function=i32i32.i32\n\n--input=3\n--input=4\n")
    ours = pyree_run(pkg, [f"--flagfile={flags}"])
    ref = iree_run([vmfb], [f"--flagfile={flags}"])
    assert (ours[0], ours[1]) == (ref[0], ref[1]) and ref[0] == 0
    rc, _, err = pyree_run(pkg, [f"--flagfile={tmp_path / 'missing.txt'}"])
    assert rc == 2 and "missing.txt" in _one_line_error(err)


def test_help_and_version():
    for entry, prog in ((run_main, "pyree-run"), (translate_main, "pyree-translate")):
        out = io.StringIO()
        with redirect_stdout(out), pytest.raises(SystemExit) as e:
            entry(["--version"]) if entry is translate_main else sys.exit(entry(["--version"]))
        assert e.value.code in (0, None) and out.getvalue().startswith(prog + " ")
    rc, out, _ = cli(run_main, ["--help"])
    assert rc == 0 and "local-sync" in out and "cuda" in out
    for flag in ("--function", "--input", "--device", "--parameters", "--output ",
                 "--expected_output", "--module", "--output_max_element_count"):
        block = out.split(flag, 1)[1].split("\n  --", 1)[0]
        assert len(block.split()) > 3, f"{flag} has no sentence in --help"


# -- programs the corpus never exercised: stdout, stderr and status as iree-run-module ---


def _status_line(err: str) -> str:
    """IREE prefixes a status with its C source location (`c/runtime/src/...:LINE: `);
    pyree prints `CODE; message` alone: compare from the status code on."""
    return re.sub(r"^c/runtime/src/\S+:\d+: ", "", err)


def same_streams_as_iree(vmfb, pkg, args):
    """Exit status, stdout and stderr all as iree-run-module's (stderr up to the source
    location prefix of a status line)."""
    ref = iree_run([vmfb], args)
    ours = pyree_run(pkg, args)
    assert ours[0] == ref[0], (ours, ref)
    assert ours[1] == ref[1], (ours, ref)
    assert _status_line(ours[2]) == _status_line(ref[2]), (ours[2], ref[2])
    return ours


TRACE = """
func.func @main(%a: tensor<2x3xf32>, %s: tensor<i32>) -> tensor<2x3xf32> {
  %0 = arith.addf %a, %a : tensor<2x3xf32>
  %big = arith.constant dense<1.5> : tensor<1100xf16>
  flow.tensor.trace "a b=c" = [%0 : tensor<2x3xf32>, %s : tensor<i32>]
  flow.tensor.trace "big" = [%big : tensor<1100xf16>]
  return %0 : tensor<2x3xf32>
}
"""


def test_tensor_trace_prints_like_iree_run_module(build):
    # `=== KEY ===`, each view unabridged (no 1024-element elision), an empty line.
    vmfb, pkg = build(TRACE, name="trace")
    rc, _, err = same_streams_as_iree(vmfb, pkg, ["--input=2x3xf32=1 2 3 4 5 6", "--input=i32=7"])
    assert rc == 0 and err.startswith("=== a b=c ===\n2x3xf32=[2 4 6][8 10 12]\ni32=7\n\n")


def test_tensor_trace_from_python_goes_to_stderr(build, capsys):
    # iree.runtime prints the same block to stderr.
    _, pkg = build(TRACE, name="trace")
    ctx = load_package(pkg).load(device="local-sync")
    ctx.main(np.ones((2, 3), np.float32), np.array(3, np.int32))
    err = capsys.readouterr().err
    assert err.startswith("=== a b=c ===\n2x3xf32=[2 2 2][2 2 2]\ni32=3\n\n=== big ===\n")
    assert err.endswith(" 1.5\n\n") and err.count("1.5") == 1100


NARROW_SCALARS = """
func.func @id_i8(%a: i8) -> i8 { return %a : i8 }
func.func @id_i1(%a: i1) -> i1 { return %a : i1 }
func.func @add_i16(%a: i16, %b: i16) -> i16 {
  %c = arith.addi %a, %b : i16
  return %c : i16
}
func.func @mix(%a: i32, %b: f32) -> (f32, i32) {
  %x = arith.sitofp %a : i32 to f32
  %y = arith.addf %x, %b : f32
  return %y, %a : f32, i32
}
"""


@pytest.mark.parametrize(
    "args",
    [
        # i1/i8/i16 travel in i32 registers; iree-run-module prints the register whole.
        ["--function=id_i8", "--input=200"],
        ["--function=id_i1", "--input=2"],
        ["--function=add_i16", "--input=30000", "--input=30000"],
        # Errors after the context exists end with the function's ABI declaration.
        ["--function=mix", "--input=abc"],
        ["--function=mix", "--input=1", "--input=2", "--input=3"],
        ["--function=mix", "--input=1", "--input=2", "--output=-"],
        ["--function=mix", "--input=1", "--input=2", "--expected_output=1", "--expected_output=2",
         "--expected_output=3"],
        # Too few inputs: the VM refuses the call, after EXEC is printed.
        ["--function=mix", "--input=1"],
    ],
    ids=["i8", "i1", "i16-sum", "bad-scalar", "too-many", "outputs", "expected", "too-few"],
)
def test_scalar_results_and_errors_like_iree_run_module(build, args):
    vmfb, pkg = build(NARROW_SCALARS, name="narrow")
    same_streams_as_iree(vmfb, pkg, args)


def test_narrow_scalar_results_from_python_keep_their_type(build):
    # The Python API returns declared types (an i8 is an int in [-128, 128)); pyree-run
    # prints the register (it calls at the VM level), as iree-run-module does.
    _, pkg = build(NARROW_SCALARS, name="narrow")
    ctx = load_package(pkg).load(device="local-sync")
    assert ctx.id_i8(200) == -56 and ctx.call_vm("id_i8", 200) == 200


PASS_THROUGH = """
func.func @id(%a: tensor<3xf64>) -> tensor<3xf64> { return %a : tensor<3xf64> }
func.func @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


@pytest.mark.parametrize(
    "args",
    [
        # f64 is demoted: the declaration says tensor<3xf32>, yet an identity export
        # asserts nothing and returns the f64 view it got, in iree-run-module too.
        ["--function=id", "--input=3xf64=0.1 1e300 -0"],
        ["--function=id", "--input=2x2xi8=1 2 3 4"],
    ],
    ids=["f64-demoted", "any-view"],
)
def test_views_reach_the_function_unchecked_like_iree_run_module(build, args):
    vmfb, pkg = build(PASS_THROUGH, name="pass")
    same_streams_as_iree(vmfb, pkg, args)


@pytest.mark.parametrize(
    "arg,message",
    [
        ("3xf32=1 2 3", "input0 shape dimension 0 mismatch; expected 4 but have 3"),
        ("4xi32=1 2 3 4", "input0 element type mismatch; expected f32 (21000020) but have i32"),
        ("2x2xf32=1 2 3 4", "input0 shape rank mismatch; expected 1 but have 2"),
    ],
)
def test_mismatched_inputs_fail_in_the_functions_own_assert(build, arg, message):
    # The function's hal.buffer_view.assert reports it, as in IREE (IREE adds its import
    # stack trace on more lines; pyree's error stays one line).
    vmfb, pkg = build(PASS_THROUGH, name="pass")
    args = ["--function=twice", f"--input={arg}"]
    ref = iree_run([vmfb], args)
    rc, out, err = pyree_run(pkg, args)
    assert (rc, out) == (ref[0], ref[1]) == (1, "EXEC @twice\n")
    assert f"INVALID_ARGUMENT; {message}" in ref[2] and f"INVALID_ARGUMENT; {message}" in err
    assert _one_line_error(err).rstrip().endswith(ref[2].rstrip().rsplit("; invoking", 1)[1])


FILES_AND_REFS = """
func.func @two(%a: tensor<?xf32>, %b: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  return %a, %b : tensor<?xf32>, tensor<?xf32>
}
func.func @bv(%a: !hal.buffer_view) -> !hal.buffer_view { return %a : !hal.buffer_view }
func.func @buf(%x: i32) -> !util.buffer {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %b = util.buffer.alloc uninitialized : !util.buffer{%c8}
  %z = arith.constant 0 : i8
  util.buffer.fill %z, %b[%c0 for %c8] : i8 -> !util.buffer{%c8}
  util.buffer.store %x, %b[%c4 for %c4] : i32 -> !util.buffer{%c8}
  return %b : !util.buffer
}
func.func @lst(%a: tensor<2xf32>) -> !util.list<?> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %l = util.list.create %c1 : !util.list<?>
  util.list.resize %l, %c1 : !util.list<?>
  %v = hal.tensor.export %a : tensor<2xf32> -> !hal.buffer_view
  util.list.set %l[%c0], %v : !hal.buffer_view -> !util.list<?>
  return %l : !util.list<?>
}
"""


@pytest.fixture
def npy_files(tmp_path):
    with open(tmp_path / "pair.npy", "wb") as f:  # two arrays, one after the other
        np.save(f, np.array([1, 2], np.float32))
        np.save(f, np.array([3, 4, 5], np.float32))
    np.arange(3, dtype=np.float32).tofile(tmp_path / "raw.bin")
    (tmp_path / "short.npy").write_bytes(b"\x93NUM")
    (tmp_path / "magic.npy").write_bytes(b"NOTNUMPY" + b"\0" * 8)
    (tmp_path / "version.npy").write_bytes(b"\x93NUMPY\x07\x00" + b"\0" * 8)
    (tmp_path / "empty.npy").write_bytes(b"")
    return tmp_path


@pytest.mark.parametrize(
    "args",
    [
        # One file feeds several inputs: `@` reads from the start, `+` goes on, `*` takes
        # every array left (one argument each).
        ["--function=two", "--input=@pair.npy", "--input=+pair.npy"],
        ["--function=two", "--input=+pair.npy", "--input=+pair.npy"],
        ["--function=two", "--input=@pair.npy", "--input=@pair.npy"],
        ["--function=two", "--input=*pair.npy"],
        ["--function=two", "--input=@pair.npy", "--input=*pair.npy"],
        ["--function=two", "--input=*pair.npy", "--input=*pair.npy"],
        ["--function=two", "--input=@pair.npy", "--input=+pair.npy", "--input=+pair.npy"],
        ["--function=two", "--input=2xf32=@raw.bin", "--input=1xf32=+raw.bin"],
        ["--function=two", "--input=*pair.npy", "--expected_output=@pair.npy",
         "--expected_output=+pair.npy"],
        ["--function=two", "--input=@PAIR.NPY", "--input=@pair.npy"],  # `.npy`, exactly
        # What IREE's npy reader says about files it cannot read.
        ["--function=two", "--input=@short.npy", "--input=@pair.npy"],
        ["--function=two", "--input=@magic.npy", "--input=@pair.npy"],
        ["--function=two", "--input=@version.npy", "--input=@pair.npy"],
        ["--function=two", "--input=@empty.npy", "--input=@pair.npy"],
        # A null result written to npy is an empty i8 array; a list cannot be written.
        ["--function=bv", "--input=(null)", "--output=@null.npy"],
        ["--function=lst", "--input=2xf32=1 2", "--output=@list.npy"],
        ["--function=bv", "--input=(null)", "--output=@missing/x.npy"],
        ["--function=bv", "--input=(null)", "--output=+missing/x.bin"],
        # `&SPEC`: the view's buffer (a !hal.buffer), printed as IREE prints one.
        ["--function=bv", "--input=&4xf32=1"],
        # Ref results print IREE's type names.
        ["--function=buf", "--input=258"],
        ["--function=lst", "--input=2xf32=1 2", "--expected_output=2xf32=1 2"],
        ["--function=two", "--input=1xf32=1", "--input=1xf32=2", "--expected_output=&1xf32=1",
         "--expected_output=(ignored)"],
        # Opaque element types (`*32`) pass through, print as hex and save as `<V4`.
        ["--function=two", "--input=2x*32=0A0B0C0D 01020304", "--input=1x*8=0F"],
        ["--function=two", "--input=2x*32=0A0B0C0D 01020304", "--input=1x*8=0F",
         "--output=@op.npy", "--output=+op.npy"],
    ],
)
def test_input_files_and_ref_outputs_like_iree_run_module(build, npy_files, args, monkeypatch):
    vmfb, pkg = build(FILES_AND_REFS, name="files")
    monkeypatch.chdir(npy_files)
    outputs = [a.split("@", 1)[1] for a in args if a.startswith("--output=@")]
    same_streams_as_iree(vmfb, pkg, args)
    ref = {name: (npy_files / name).read_bytes() for name in outputs if (npy_files / name).exists()}
    for name in ref:
        (npy_files / name).unlink()
    pyree_run(pkg, args)
    assert ref == {name: (npy_files / name).read_bytes() for name in ref}


def test_storage_input_and_buffer_output_files(build, tmp_path, monkeypatch):
    # A !hal.buffer result written to npy is its bytes as i8, in IREE too. (A !vm.buffer
    # result is written the same way by pyree; iree-run-module 3.13 fails to wrap its
    # 16-byte-aligned memory, "imported heap buffer data must be aligned to 64".)
    vmfb, pkg = build(FILES_AND_REFS, name="files")
    monkeypatch.chdir(tmp_path)
    args = ["--function=bv", "--input=&2xf32=1 2", "--output=@b.npy"]
    assert iree_run([vmfb], args)[0] == 0
    ref = np.load(tmp_path / "b.npy")
    assert pyree_run(pkg, args)[0] == 0
    ours = np.load(tmp_path / "b.npy")
    assert ref.dtype == ours.dtype == np.int8 and np.array_equal(ref, ours)
    assert pyree_run(pkg, ["--function=buf", "--input=258", "--output=@v.npy"])[0] == 0
    assert np.load(tmp_path / "v.npy").tolist() == [0, 0, 0, 0, 2, 1, 0, 0]


FLAG_FORMS = """
func.func @m(%a: tensor<3x4xf32>) -> tensor<3x4xf32> { return %a : tensor<3x4xf32> }
"""


@pytest.mark.parametrize(
    "args",
    [
        # Values as IREE's flag library reads them: `--name=value` trimmed, a string
        # flag's surrounding quotes dropped, numbers by C atoi/atof, bools true only
        # for ``/`true`/`1`, any --equality_mode but `approximate` is exact.
        ['--function="m"', "--input=3x4xf32=2"],
        [" --function = m ", "--input=3x4xf32=2", "--output_max_element_count="],
        ["--function=m", "--input=3x4xf32=2", "--output_max_element_count=abc"],
        ["--function=m", "--input=3x4xf32=2", "--output_max_element_count=3.5"],
        ["--function=m", "--input=3x4xf32=2", "--print_statistics=false"],
        ["--function=m", "--input=3x4xf32=1", "--expected_output=3x4xf32=1.00001",
         "--equality_mode=weird"],
        ["--function=m", "--input=3x4xf32=1", "--expected_output=3x4xf32=1.1",
         "--expected_f32_threshold=0.2abc"],
        # IREE's runtime knobs change nothing a program computes: accepted, ignored.
        ["--function=m", "--input=3x4xf32=2", "--trace_execution", "--device_allocator=caching",
         "--task_topology_max_group_count=2", "--module_mode=preload"],
        ["--function=m", "--input=3x4xf32=2", "--print_device_statistics",
         "--parameter_mode=file"],
        # Inline tensor data may be quoted, one `"` at each end.
        ["--function=m", '--input="3x4xf32=1 2 3 4 5 6 7 8 9 10 11 12"'],
        ["--function=m", '--input="3x4xf32=2'],
    ],
)
def test_flag_values_read_like_iree_run_module(build, args):
    vmfb, pkg = build(FLAG_FORMS, name="flags")
    same_streams_as_iree(vmfb, pkg, args)


@pytest.mark.parametrize("device", ["local-sync://", "local-task://"])
def test_device_uri_with_empty_path(build, device):
    vmfb, pkg = build(FLAG_FORMS, name="flags")
    args = ["--function=m", "--input=3x4xf32=2"]
    ref = subprocess.run(
        ["iree-run-module", f"--device={device}", f"--module={vmfb}", *args],
        capture_output=True, text=True, timeout=60,
    )
    ours = cli(run_main, [pkg, f"--device={device}", *args])
    assert (ours[0], ours[1]) == (ref.returncode, ref.stdout) == (0, ref.stdout)


def test_one_module_under_two_names_and_from_stdin(build, tmp_path, monkeypatch):
    # The cache is keyed by content and package name: a copy of a module under another
    # file name is translated again (it found the first name's package missing before),
    # and `--module=-` reads the module from stdin, as iree-run-module does.
    monkeypatch.setenv("PYREE_CACHE_DIR", str(tmp_path / "cache"))
    vmfb, _ = build(FLAG_FORMS, name="flags")
    copy = tmp_path / "copy.vmfb"
    shutil.copyfile(vmfb, copy)
    args = ["--device=local-sync", "--function=m", "--input=3x4xf32=2"]
    ref = iree_run([vmfb], args[1:])
    assert cli(run_main, [vmfb, *args])[:2] == ref[:2]
    assert cli(run_main, [copy, *args])[:2] == ref[:2]
    script = "import sys; from runtime_support.tools.run_cli import main; sys.exit(main())"
    with open(vmfb, "rb") as stdin:
        p = subprocess.run(
            [sys.executable, "-c", script, "--module=-", *args], stdin=stdin,
            capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2],
        )
    assert (p.returncode, p.stdout) == ref[:2], p.stderr


def test_context_errors_carry_iree_run_modules_chain(build, tmp_path):
    # Devices and parameter archives are the dependencies of the module that needs them:
    # iree-run-module's error chain says so, and an archive no module reads is no error.
    vmfb, pkg = build(PASS_THROUGH, name="pass")  # (it dispatches: it needs a device)
    args = ["--function=twice", "--input=4xf32=2"]
    same_streams_as_iree(vmfb, pkg, [*args, f"--parameters=model={tmp_path / 'no.irpa'}"])
    for device in ("cpu", "local-sync://0"):
        ref = subprocess.run(
            ["iree-run-module", f"--device={device}", f"--module={vmfb}", *args],
            capture_output=True, text=True, timeout=60,
        )
        ours = cli(run_main, [pkg, f"--device={device}", *args])
        assert ours[:2] == (ref.returncode, ref.stdout) == (1, "")
        assert _status_line(ours[2]) == _status_line(ref.stderr), (ours[2], ref.stderr)


ASSERTS = """
func.func private @inner(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %ok = arith.cmpi sgt, %a, %c0 : i32
  cf.assert %ok, "inner: a must be positive"
  return %a : i32
}
func.func @outer(%a: i32) -> i32 {
  %r = call @inner(%a) : (i32) -> i32
  return %r : i32
}
"""


def test_failed_assert_prints_like_iree_run_module(build):
    # vm.fail: `<vm>:0: CODE; message; ` (IREE's empty stack annotation), the call, the
    # declaration; pyree puts the MLIR source location in `<vm>:0`'s place when the
    # module's debug database has it.
    vmfb, pkg = build(ASSERTS, name="asserts")
    args = ["--function=outer", "--input=-1"]
    ref = iree_run([vmfb], args)
    rc, out, err = pyree_run(pkg, args)
    assert (rc, out) == ref[:2] == (1, "EXEC @outer\n")
    tail = "FAILED_PRECONDITION; inner: a must be positive; ; invoking function 'outer'; `sync"
    assert ref[2].startswith(f"<vm>:0: {tail}")
    location, _, rest = err.partition(": ")
    assert location.endswith(".mlir:5:3") and ref[2] == f"<vm>:0: {rest}"


def test_closed_stdout_ends_quietly_like_iree_run_module(build):
    # `pyree-run ... | head`: no error line, and the process dies of SIGPIPE as the
    # native tool does (the result, 80 KB of text, outgrows any pipe buffer).
    vmfb, pkg = build(FILES_AND_REFS, name="files")
    args = ["--device=local-sync", "--function=two", "--input=40000xf32=1", "--input=1xf32=1",
            "--output_max_element_count=-1"]
    script = "import sys; from runtime_support.tools.run_cli import main; sys.exit(main())"
    results = []
    for cmd in (["iree-run-module", f"--module={vmfb}"], [sys.executable, "-c", script, str(pkg)]):
        p = subprocess.Popen(
            [*cmd, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=Path(__file__).parents[2],
        )
        p.stdout.close()
        results.append((p.wait(), p.stderr.read().decode()))
    assert results[0] == results[1] == (-13, "")


F16_BITS = """
func.func @bits(%a: tensor<6xf16>) -> tensor<6xi16> {
  %0 = arith.bitcast %a : tensor<6xf16> to tensor<6xi16>
  return %0 : tensor<6xi16>
}
func.func @bits32(%a: tensor<4xf32>) -> tensor<4xi32> {
  %0 = arith.bitcast %a : tensor<4xf32> to tensor<4xi32>
  return %0 : tensor<4xi32>
}
func.func @scalar_bits(%a: f32) -> i32 {
  %0 = arith.bitcast %a : f32 to i32
  return %0 : i32
}
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--function=bits32", "--input=4xf32=nan(0x1) -nan(123) nan(0xFFFFFFFFFFFFFFFFF) nan(x)"],
        ["--function=scalar_bits", "--input=NAN(077)"],
    ],
)
def test_nan_payloads_parse_as_c_strtof(build, args):
    # `nan(CHARS)`: the payload glibc's strtof puts in the mantissa, which IREE passes on.
    vmfb, pkg = build(F16_BITS, name="f16bits")
    same_streams_as_iree(vmfb, pkg, args)


def test_f16_inputs_narrow_as_iree_narrows(build):
    # IREE narrows a parsed f32 to f16 with its own rounding: NaN with every mantissa
    # bit set, values under the smallest subnormal to zero (numpy's cast gave 0x7E00
    # and 2**-24); the program sees the bits.
    vmfb, pkg = build(F16_BITS, name="f16bits")
    args = ["--function=bits", "--input=6xf16=nan -nan 3e-8 5.96e-8 6e-8 65520"]
    rc, out, _ = same_streams_as_iree(vmfb, pkg, args)
    assert out.endswith("6xi16=32767 -1 0 0 1 31744\n")
