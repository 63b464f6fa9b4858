"""The code objects the runtime compiles from its own generated source, kept between
processes (runtime_support/code_cache.py), and the import-time steps that use it."""

from __future__ import annotations

import inspect
import shutil
from pathlib import Path

import pytest
from helpers_process import run_json

from runtime_support import code_cache
from runtime_support.hal.module import HalModule
from runtime_support.modules import CheckModule
from runtime_support.vm import args as vm_args

# A fresh process: import the runtime (every declared import's wrapper, the one-frame
# merges, the abi probes), run a merged import, report what the cache gave.
_PROBE = """
import json
from runtime_support import code_cache
before = set(code_cache._load())  # (what the file held when this process started)
from runtime_support.hal.buffer import HalBuffer
from runtime_support.hal.module import HalModule

hal = HalModule([])
buffer = HalBuffer.allocate(8)
buffer.write(0, bytes([0xFF, 2, 3, 4, 5, 6, 7, 8]))
print(json.dumps({
    "hits": len(before & set(code_cache._used)),
    "used": len(code_cache._used),
    "dirty": code_cache._dirty,
    "load": [hal.buffer_load(buffer, 0, 4), hal.buffer_load(buffer, 0, 1)],
    "merged": HalModule.buffer_load.__code__.co_filename.endswith("module.py"),
}))
"""


def _probe(cache: Path) -> dict:
    return run_json(_PROBE, cache)


def test_compiled_keeps_what_make_returns_and_nothing_for_none(monkeypatch, tmp_path):
    monkeypatch.setenv("PYREE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(code_cache, "_stored", None)
    monkeypatch.setattr(code_cache, "_used", {})
    calls = []

    def make():
        calls.append(1)
        return compile("x = 1", "<t>", "exec")

    a = code_cache.compiled(("test", "a"), make)
    b = code_cache.compiled(("test", "a"), make)
    assert a is b and len(calls) == 1
    assert code_cache.compiled(("test", "none"), lambda: None) is None
    assert code_cache.compiled(("test", "none"), make) is not None  # (None was not kept)


def test_parameters_as_inspect_reads_them():
    """vm/args.py reads an import method's parameter names off its code object."""
    checked = 0
    for cls in (HalModule, CheckModule):
        for name, value in vars(cls).items():
            fn = getattr(value, "__wrapped__", value)
            if getattr(value, "__vm_import__", None) is None or not inspect.isfunction(fn):
                continue
            assert vm_args._parameters(fn) == list(inspect.signature(fn).parameters), name
            checked += 1
    assert checked > 50


_MUL = """
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

# What loading and calling a plain module must not import: the formatter of traces and
# CLI values, the import modules it does not use, ml_dtypes (no bf16/f8 values), OpenSSL's
# hashlib, Python threads' executor, and subprocess (find_library ran `ldconfig -p`).
_NOT_LOADED = ("runtime_support.io_format", "runtime_support.io_specs",
               "runtime_support.modules.check", "runtime_support.modules.io_parameters",
               "ml_dtypes", "hashlib", "concurrent.futures", "subprocess")


def test_a_load_imports_only_what_the_module_uses(tmp_path):
    if shutil.which("iree-compile") is None:
        pytest.skip("needs iree-compile")
    from helpers_compile import compile_mlir
    from translator.codegen import write_package
    from translator.reader import read_module_file

    vmfb = compile_mlir(_MUL, tmp_path, name="mul")
    write_package(read_module_file(vmfb), tmp_path / "out", "mul_pkg")
    probe = (
        "import json, sys\n"
        "import numpy as np\n"
        "import mul_pkg\n"
        "ctx = mul_pkg.load(device='local-sync')\n"
        "got = ctx.main(np.ones(4, np.float32), np.full(4, 3, np.float32)).tolist()\n"
        f"loaded = [m for m in {_NOT_LOADED!r} if m in sys.modules]\n"
        "print(json.dumps({'got': got, 'loaded': loaded, 'modules': sorted(ctx.modules)}))\n"
    )
    out = run_json(probe, tmp_path / "cache", path=(tmp_path / "out",))
    assert out == {"got": [3.0] * 4, "loaded": [], "modules": ["hal"]}
