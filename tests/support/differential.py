"""The differential check every corpus-driven test shares: a generated package loaded under a
private name, results compared bit for bit, iree.runtime's error status read from its text,
and `check_against_iree` (every export of a corpus case, translated and run, against
iree.runtime on the same vmfb)."""

from __future__ import annotations

import importlib.util
import itertools
import re
import sys
from pathlib import Path

import numpy as np

from abi_inputs import inputs_for_signature
from conftest import corpus_cases
from iree_oracle import IreeSession, export_signatures
from runtime_support.errors import StatusCode, VMError
from translator.codegen import write_package
from translator.reader import read_module_file

_counter = itertools.count()

RUN_CASES = corpus_cases(variants=("embedded-elf", "system-dylib", "vm"))
SEEDS = (0, 1)


def load_package(pkg_dir: Path):
    """Imports a generated package from its directory under a private module name."""
    name = f"_pyree_pkg_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(
        name, pkg_dir / "__init__.py", submodule_search_locations=[str(pkg_dir)]
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


_STATUS_RE = re.compile(r"\b(" + "|".join(c.name for c in StatusCode if c) + r")\b")


def iree_status(error: BaseException) -> str | None:
    """The status code name in an iree.runtime error message (the first one it names)."""
    m = _STATUS_RE.search(str(error))
    return m.group(1) if m else None


def same_results(expected, actual) -> bool:
    if expected is None or actual is None:
        return expected is None and actual is None
    exp = np.asarray(expected)
    if exp.dtype.kind not in "biufc":
        exp = exp.view(np.dtype(f"u{exp.dtype.itemsize}"))
    act = np.asarray(actual)
    if act.dtype.kind not in "biufc":
        act = act.view(np.dtype(f"u{act.dtype.itemsize}"))
    if act.shape != exp.shape:
        return False
    if act.dtype != exp.dtype:
        if exp.ndim != 0:
            return False
        act = np.asarray(actual, dtype=exp.dtype) if exp.dtype.kind != "b" else np.asarray(bool(actual))
    return act.tobytes() == exp.tobytes()


def _exports(case, vmfb):
    sigs = export_signatures(vmfb)
    for name, sig in sigs.items():
        if name.startswith("__") or name in case.run_exceptions:
            continue
        yield name, sig


# The embedded-elf build also runs on `local` (native plans with the worker pool).
DEVICE_CASES = [(c, "local-sync") for c in RUN_CASES] + [
    (c, "local") for c in RUN_CASES if "embedded-elf" in c.id
]


def check_against_iree(case, device, compile_mlir, tmp_path, **translate) -> None:
    """Every export of `case`, translated (write_package's keywords: `translate`) and run
    on `device`, against iree.runtime on the same vmfb: results bit-identical, errors
    with the same status."""
    vmfb = compile_mlir(case.source, case.flags)
    module = read_module_file(vmfb)
    pkg = load_package(write_package(module, tmp_path, "pkg", **translate))
    ctx = pkg.load(device=device)
    session = IreeSession(vmfb)
    checked = 0
    for name, sig in _exports(case, vmfb):
        fn_sig = session.signature(name)
        decl = pkg.EXPORTS.get(name)
        for seed in SEEDS:
            inputs = inputs_for_signature(decl or sig, seed=seed)
            try:
                expected = session.call(name, inputs, fn_sig)
                expected_error = None
            except Exception as e:  # IREE's failure is the expected behaviour
                expected, expected_error = None, e
            try:
                actual = ctx.call(name, *inputs)
                actual_error = None
            except Exception as e:
                actual, actual_error = None, e
            if expected_error is not None:
                assert actual_error is not None, (
                    f"{name}(seed={seed}): IREE failed ({expected_error}) but pyree returned {actual!r}"
                )
                want = iree_status(expected_error)
                got = actual_error.code.name if isinstance(actual_error, VMError) else None
                assert got == want, (
                    f"{name}(seed={seed}): IREE failed with {want} ({expected_error}) but pyree "
                    f"with {got or type(actual_error).__name__} ({actual_error})"
                )
                continue
            assert actual_error is None, f"{name}(seed={seed}): pyree failed: {actual_error!r}"
            if len(expected) == 1:
                actual = (actual,)
            elif len(expected) == 0:
                assert actual is None
                actual = ()
            assert len(actual) == len(expected), name
            for i, (e, a) in enumerate(zip(expected, actual)):
                assert same_results(e, a), f"{name}(seed={seed}) result {i}: IREE {e!r} != pyree {a!r}"
            checked += 1
    assert checked > 0 or not list(_exports(case, vmfb)), case.id
