"""Every string slot of a vmfb, filled with hostile text, reaches generated code inert.

A vmfb is untrusted. One MLIR program puts a fixed-width placeholder in each string slot the
translator reads (module name, function and export names, the import's module, the ABI
declaration, reflection attribute keys and values, the source file name, an op's location,
a `cf.assert` message; executable and rodata names derive from the function name). Each test
patches one slot's placeholder bytes in the compiled vmfb with one hostile string of the same
byte length, translates the result, imports the package in a fresh interpreter and runs its
export: nothing may run that the module did not ask for, the text must come back verbatim
(as the FlatBuffer reader decodes it), and every error is one clean line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from translator.cli import main as translate_main  # noqa: F401  (the CLI is exercised below)
from translator.codegen import write_package
from translator.errors import InvalidModuleError
from translator.reader import read_module
from hostile_util import HOSTILE

REPO = Path(__file__).resolve().parents[2]
WIDTH = 50  # bytes per placeholder


def _ph(tag: str) -> str:
    return ("PH" + tag).ljust(WIDTH, "Z")


SLOTS = {
    "module": _ph("MOD"),
    "function": _ph("FUN"),
    "import": _ph("IMP"),
    "attr_key": _ph("KEY"),
    "attr_value": _ph("VAL"),
    "fail_message": _ph("MSG"),
    "location": _ph("LOC"),
    "source_file": _ph("SRC"),
}

PROGRAM = """
module @{module} {{
  func.func private @{import}.fn(i32) -> i32
  func.func @"{function}"(%a: tensor<4xf32>, %c: i32) -> (tensor<4xf32>, i32)
      attributes {{iree.reflection = {{{attr_key} = "{attr_value}"}}}} {{
    %c0 = arith.constant 0 : i32
    %ok = arith.cmpi ne, %c, %c0 : i32
    cf.assert %ok, "{fail_message}"
    %0 = arith.mulf %a, %a : tensor<4xf32> loc("{location}":7:9)
    return %0, %c : tensor<4xf32>, i32
  }}
  func.func @calls_import(%x: i32) -> i32 {{
    %r = call @{import}.fn(%x) : (i32) -> i32
    return %r : i32
  }}
}}
"""

def _patch(data: bytes, placeholder: str, text: bytes) -> bytes:
    ph = placeholder.encode()
    assert len(text) <= len(ph), text
    new = text + b"x" * (len(ph) - len(text))
    assert ph in data, placeholder
    return data.replace(ph, new)


@pytest.fixture(scope="module")
def base_vmfb(tmp_path_factory, compile_mlir) -> bytes:
    d = tmp_path_factory.mktemp("hostile")
    src = d / (SLOTS["source_file"] + ".mlir")
    src.write_text(PROGRAM.format(**SLOTS))
    flags = (
        "--iree-hal-target-device=local",
        "--iree-hal-local-target-device-backends=llvm-cpu",
        "--iree-llvmcpu-target-cpu=host",
    )
    data = Path(compile_mlir(src, flags)).read_bytes()
    for slot, ph in SLOTS.items():
        assert ph.encode() in data, f"slot {slot} does not reach the vmfb"
    return data


_CHILD = r"""
import importlib.util, json, os, sys
import numpy as np
pkg_dir, expected = sys.argv[1], json.loads(sys.argv[2])
spec = importlib.util.spec_from_file_location("hostile_pkg", os.path.join(pkg_dir, "__init__.py"),
                                              submodule_search_locations=[pkg_dir])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
out = {"module_name": m.VM_MODULE_NAME, "exports": sorted(m.EXPORTS)}
# The program's one custom import, served by a Python module under its (hostile) name.
full, cconv, _ = [i for i in m._IMPORTS if i[0].endswith(".fn")][0]
class Custom:
    IMPORTS = {full: cconv}
    def fn(self, x):
        return x + 1
try:
    ctx = m.load(device="local-sync", modules={full.partition(".")[0]: Custom()})
except Exception as e:
    out["load_error"] = f"{type(e).__name__}: {e}"
else:
    fn = expected["function"]
    a = np.arange(4, dtype=np.float32)
    r = ctx.call(fn, a, 5)
    out["ok"] = [r[0].tolist(), int(r[1])]
    try:
        ctx.call(fn, a, 0)
    except Exception as e:
        out["fail_error"] = f"{type(e).__name__}: {e}"
    out["import"] = ctx.call("calls_import", 7)
print(json.dumps(out))
"""


def _decoded(text: bytes) -> str:
    return text.decode("utf-8", "replace")


def _padded(text: bytes) -> str:
    """The slot's text as the FlatBuffer reader decodes it after `_patch`."""
    return _decoded(text + b"x" * (WIDTH - len(text)))


@pytest.mark.parametrize("slot", sorted(SLOTS))
def test_hostile_string_slot(slot, base_vmfb, tmp_path):
    results = []
    for i, text in enumerate(HOSTILE):
        data = _patch(base_vmfb, SLOTS[slot], text)
        try:
            module = read_module(data)
            pkg = write_package(module, tmp_path, f"p{i}", source_name=_decoded(text))
        except InvalidModuleError as e:
            assert "\n" not in str(e)
            results.append("rejected")
            continue
        source = (pkg / "__init__.py").read_text(encoding="utf-8")
        compile(source, str(pkg), "exec")  # valid Python whatever the text
        expected = {"function": SLOTS["function"]}
        if slot == "function":
            expected["function"] = module.exports[0].local_name
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(pkg), json.dumps(expected)],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        )
        assert not (tmp_path / "PWNED").exists(), f"code ran from slot {slot}: {text!r}"
        assert proc.returncode == 0, (text, proc.stderr[-2000:])
        out = json.loads(proc.stdout)
        if slot == "module":
            assert out["module_name"] == module.name == _padded(text)
        if slot == "function":
            assert module.exports[0].local_name in out["exports"]
        if "load_error" in out:
            # e.g. a NUL in a function name ends the C string of the kernel's export name,
            # so the executable's lookup fails: a clean, one-line VMError.
            assert out["load_error"].startswith("VMError: ") and "\n" not in out["load_error"]
            results.append("load-error")
            continue
        assert out["import"] == 8
        assert out["ok"] == [[0.0, 1.0, 4.0, 9.0], 5]
        assert "fail_error" in out
        if slot == "fail_message":
            message = _padded(text)
            assert message in out["fail_error"] or repr(message)[1:-1] in out["fail_error"]
        results.append("ran")
    assert results.count("ran") >= len(HOSTILE) - 2, results
