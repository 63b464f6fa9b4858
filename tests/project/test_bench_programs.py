"""The bench's programs (bench/programs/*.mlir) against iree.runtime on the same vmfb:
queue programs on the fast and the general path (PYREE_QUEUE_FAST=0) and the `--no-fuse`
translation (one import call per op), on both local devices, several calls each, every
result bit-identical. The bench times these programs; this says they compute the same.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.programs import PROGRAMS
from runtime_support.tools.run_cli import import_package_as
from helpers_compile import LLVM_CPU_FLAGS
from translator.codegen import write_package
from translator.reader import read_module_file

# (the big kernel-bound ones stay with the bench: their host paths are mlp's and cnn's)
SLOW = {"matmul512", "elementwise1m"}
BENCH = [p for p in PROGRAMS if p.source is not None and p.queue_programs and p.name not in SLOW]
CALLS = 3


def _arrays(result) -> list[np.ndarray]:
    result = list(result) if isinstance(result, (tuple, list)) else [result]
    return [np.asarray(r.to_host() if hasattr(r, "to_host") else r) for r in result]


def _iree(vmfb, driver, program):
    rt = pytest.importorskip("iree.runtime")
    ctx = rt.SystemContext(config=rt.Config(driver))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes()))
    module = ctx.modules.module
    rng = np.random.default_rng(7)
    if program.setup is not None:
        module.setup(*program.setup(rng))
    return [_arrays(module.main(*program.inputs(rng))) for _ in range(CALLS)]


@pytest.mark.parametrize("program", BENCH, ids=lambda p: p.name)
def test_bench_program_matches_iree(program, compile_mlir, tmp_path, monkeypatch):
    vmfb = compile_mlir(program.source, LLVM_CPU_FLAGS)
    module = read_module_file(vmfb)
    packages = {
        form: import_package_as(
            f"_bench_{program.name.replace('-', '_')}_{form}",
            write_package(module, tmp_path / form, "pkg", queue_programs=form == "programs"),
        )
        for form in ("programs", "no_fuse")
    }
    expected = {driver: _iree(vmfb, driver, program) for driver in ("local-sync", "local-task")}
    runs = [  # (form, device, PYREE_QUEUE_FAST, IREE's driver)
        ("programs", "local-sync", "1", "local-sync"),
        ("programs", "local-sync", "0", "local-sync"),
        ("programs", "local", "1", "local-task"),
        ("no_fuse", "local-sync", "1", "local-sync"),
    ]
    for form, device, fast, driver in runs:
        monkeypatch.setenv("PYREE_QUEUE_FAST", fast)  # (read when the context binds)
        ctx = packages[form].load(device=device)
        rng = np.random.default_rng(7)
        if program.setup is not None:
            ctx.setup(*program.setup(rng))
        for k in range(CALLS):
            got = _arrays(ctx.main(*program.inputs(rng)))
            want = expected[driver][k]
            where = (form, device, f"PYREE_QUEUE_FAST={fast}", f"call {k}")
            assert len(got) == len(want), where
            for g, e in zip(got, want):
                assert g.dtype == e.dtype and g.shape == e.shape, where
                assert g.tobytes() == e.tobytes(), where
