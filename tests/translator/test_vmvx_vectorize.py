"""VMVX kernels vectorised at translate time (translator/vmvx_vectorize/): the numpy
program gives the scalar translation's bits and IREE's (tests/runtime/test_vmvx.py runs every
corpus VMVX build, now on the vectorised path, against iree.runtime); its dispatch-time
checks send a dispatch back to the scalar path."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import corpus_cases
from translator.reader import read_module_file
from translator.codegen import write_package

DENORMALS = np.array([1e-39, -1e-40, 0.0, -0.0, 3e-38, 1.5, -2.25, 7.0], dtype=np.float32)


def _case(name):
    return next(c for c in corpus_cases(variants=("vmvx",)) if c.name == name)


def _package(compile_mlir, tmp_path, name):
    from runtime_support.tools.run_cli import import_package_as

    case = _case(name)
    vmfb = compile_mlir(case.source, case.flags)
    pkg_dir = write_package(read_module_file(vmfb), tmp_path, "pkg")
    return vmfb, import_package_as(f"_vec_{name}_{tmp_path.name}", pkg_dir)


def _inputs(session, function):
    rng = np.random.default_rng(7)
    sig = session.signature(function)
    out = []
    for spec in sig.args:
        shape = [int(d) for d in spec.shape]
        x = rng.standard_normal(shape).astype(np.float32)
        flat = x.reshape(-1)
        n = min(flat.size, DENORMALS.size)
        flat[:n] = DENORMALS[:n]
        out.append(x)
    return sig, out


@pytest.mark.parametrize("name", ["tensor_matmul", "tensor_conv"])
def test_vectorised_equals_scalar_and_iree(name, compile_mlir, tmp_path, monkeypatch):
    """The same package run vectorised and with PYREE_VMVX_SCALAR=1: the same bits, and
    IREE's (inputs with denormals of both signs)."""
    from iree_oracle import IreeSession
    from translator.reader import read_module
    from translator.vmvx import count_vectorized, find_executables

    from runtime_support.loaders import vmvx_arrays as A

    monkeypatch.setattr(A, "SMALL_WORK", 0)  # (every dispatch on the vectorised path)
    vmfb, pkg = _package(compile_mlir, tmp_path, name)
    module = read_module(vmfb.read_bytes())
    assert sum(count_vectorized(read_module(d)) for _, d in find_executables(module)) >= 1
    session = IreeSession(vmfb)
    function = _first_export(module)
    sig, args = _inputs(session, function)
    expected = [np.asarray(e).tobytes() for e in session.call(function, args, sig)]
    outs = {}
    for mode in ("0", "1"):
        monkeypatch.setenv("PYREE_VMVX_SCALAR", mode)
        got = getattr(pkg.load(device="local-sync"), function)(*args)
        got = got if isinstance(got, (list, tuple)) else [got]
        outs[mode] = [np.asarray(g).tobytes() for g in got]
    assert outs["0"] == outs["1"] == expected


def _first_export(module):
    return next(e.local_name for e in module.exports if not e.local_name.startswith("__"))


def test_injective_and_disjoint_checks():
    from runtime_support.loaders import vmvx_arrays as A

    assert A.injective(((512, 64), (1, 64), (32768, 8), (64, 8)))
    assert not A.injective(((1, 64), (32, 64)))  # rows overlap
    assert A.injective(((0, 1), (1, 10)))  # a unit extent never collides
    assert A.disjoint([(0, 16), (16, 16), (64, 8)], (2,))
    assert not A.disjoint([(0, 16), (8, 16)], (1,))


def test_overlapping_bindings_fall_back(compile_mlir, tmp_path, monkeypatch):
    """A vectorised kernel refuses (returns False, having written nothing) when a written
    binding overlaps another one: the loader then runs the scalar translation."""
    from runtime_support.loaders import vmvx_arrays as A

    monkeypatch.setattr(A, "SMALL_WORK", 0)  # (else a small grid refuses before the check)
    from runtime_support.loaders.vmvx import _kernel_module, _KernelContext
    from runtime_support.modules.vmvx import VmvxModule
    from runtime_support.vm.buffer import VMBuffer

    _, pkg = _package(compile_mlir, tmp_path, "tensor_matmul")
    pkg.load(device="local-sync")  # (registers the kernels)
    from runtime_support.loaders.vmvx import _registry

    ns = None
    for digest in list(_registry):
        try:
            candidate = _kernel_module(digest, 0)
        except Exception:  # noqa: BLE001  (other tests' kernels)
            continue
        if any(k.startswith("vectorized:") for k in candidate["bind"](_KernelContext(candidate, VmvxModule()))):
            ns = candidate
            break
    assert ns is not None
    functions = ns["bind"](_KernelContext(ns, VmvxModule()))
    vec = next(f for k, f in functions.items() if k.startswith("vectorized:"))
    memory = bytearray(1 << 16)
    before = bytes(memory)
    views = [A.Binding(memoryview(memory)) for _ in range(8)]
    ranges = [(0, len(memory))] * 8  # every binding the same memory
    assert vec(views, VMBuffer(bytes(64), readonly=True), ranges, (1, 1, 1)) is False
    assert bytes(memory) == before


def test_translate_summary_counts_vectorised(compile_mlir):
    from translator.reader import read_module
    from translator.vmvx import summary_line

    case = _case("tensor_matmul")
    line = summary_line(read_module(compile_mlir(case.source, case.flags).read_bytes()))
    assert "2 kernel(s) translated to Python, 2 of them vectorised" in line
