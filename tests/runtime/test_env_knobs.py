"""The numeric environment settings (PYREE_SPIN, PYREE_WORKERS, PYREE_INLINE_US, PYREE_PIN,
PYREE_COLLECTIVE_TIMEOUT): a value that is no number gives the default, one out of range
the nearest bound, each with one RuntimeWarning naming the variable; never a traceback,
and never a value native code would overflow on (a huge PYREE_SPIN made idle workers spin
for ever)."""

from __future__ import annotations

import os
import warnings

import pytest

from runtime_support import env_knobs
from runtime_support.hal import collectives
from runtime_support.native import jit as native_jit, pool as native_pool


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(env_knobs, "_warned", set())


def _read(monkeypatch, name, text, read):
    """`read()` with $name=text, and the messages of the warnings it gave."""
    monkeypatch.setenv(name, text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = read()
    return value, [str(w.message) for w in caught if w.category is RuntimeWarning]


def _spin():
    pool = native_pool.WorkerPool(None)  # (reads the setting into its block; starts no thread)
    return pool.block.spin


def _inline_us():
    return native_jit.inline_ns() / 1000


CORES = len(os.sched_getaffinity(0))
CASES = [
    # (variable, value, read, expected, what the warning says; None: no warning)
    ("PYREE_SPIN", "5000", _spin, 5000, None),
    ("PYREE_SPIN", str(10**30), _spin, 1_000_000, "is outside [0, 1000000]"),
    ("PYREE_SPIN", "99999999999", _spin, 1_000_000, "is outside [0, 1000000]"),
    ("PYREE_SPIN", "-5", _spin, 0, "is outside [0, 1000000]"),
    ("PYREE_SPIN", "lots", _spin, 2000, "is not an integer"),
    ("PYREE_INLINE_US", "12.5", _inline_us, 12.5, None),
    ("PYREE_INLINE_US", "1e30", _inline_us, 1_000_000, "is outside [0, 1000000]"),
    ("PYREE_INLINE_US", "9" * 30, _inline_us, 1_000_000, "is outside [0, 1000000]"),
    ("PYREE_INLINE_US", "-3", _inline_us, 0, "is outside [0, 1000000]"),
    ("PYREE_INLINE_US", "nan", _inline_us, 40, "is not a number"),
    ("PYREE_WORKERS", "3", native_pool.default_worker_count, 3, None),
    ("PYREE_WORKERS", "0", native_pool.default_worker_count, 1, "is outside [1, 255]"),
    ("PYREE_WORKERS", str(2**70), native_pool.default_worker_count, 255, "is outside [1, 255]"),
    ("PYREE_WORKERS", "x", native_pool.default_worker_count, CORES, "is not an integer"),
    ("PYREE_COLLECTIVE_TIMEOUT", "2.5", collectives._timeout, 2.5, None),
    ("PYREE_COLLECTIVE_TIMEOUT", "inf", collectives._timeout, 604800, "is outside [0.0, 604800]"),
    ("PYREE_COLLECTIVE_TIMEOUT", "-1", collectives._timeout, 0, "is outside [0.0, 604800]"),
    ("PYREE_COLLECTIVE_TIMEOUT", "soon", collectives._timeout, 300, "is not a number"),
]


@pytest.mark.parametrize(
    "name,text,read,expected,problem", CASES, ids=lambda v: getattr(v, "__name__", str(v)[:24])
)
def test_settings_are_bounded(monkeypatch, name, text, read, expected, problem):
    value, messages = _read(monkeypatch, name, text, read)
    assert value == expected
    if problem is None:
        assert messages == []
    else:
        assert len(messages) == 1 and messages[0].startswith(f"{name}={text!r} {problem}; using ")


def test_a_setting_warns_once(monkeypatch):
    monkeypatch.setenv("PYREE_SPIN", "-1")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _spin() == _spin() == 0
    assert len(caught) == 1


@pytest.mark.parametrize("text,pinned", [("0", False), ("1", True), ("yes", True)])
def test_pin_setting(monkeypatch, text, pinned):
    monkeypatch.setattr(native_pool.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    cpus, messages = _read(monkeypatch, "PYREE_PIN", text, native_pool._placement_cpus)
    assert cpus == ([0, 1] if pinned else [])
    assert messages == ([] if text in "01" else ["PYREE_PIN='yes' is not 0 or 1; using 1"])
