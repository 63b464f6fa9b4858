"""Numeric settings read from the environment (`PYREE_WORKERS`, `PYREE_SPIN`, ...).

A value that is not a number gives the default, one out of range the nearest bound;
either way one RuntimeWarning per variable and process says so. Values reach native code
(the worker pool block, constants of the compiled runtime), so they are bounded here,
never passed on as written.
"""

from __future__ import annotations

import math
import os
import warnings

_warned: set[str] = set()


def _warn_once(name: str, text: str, problem: str, used) -> None:
    if name in _warned:
        return
    _warned.add(name)
    warnings.warn(f"{name}={text!r} {problem}; using {used}", RuntimeWarning, stacklevel=2)


def _bounded(name: str, text: str, value, low, high):
    if value < low or value > high:
        used = min(max(value, low), high)
        _warn_once(name, text, f"is outside [{low}, {high}]", used)
        return used
    return value


def int_knob(name: str, default: int, low: int, high: int) -> int:
    """$name as an integer in [low, high]; `default` where unset or empty."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        _warn_once(name, text, "is not an integer", default)
        return default
    return _bounded(name, text, value, low, high)


def float_knob(name: str, default: float, low: float, high: float) -> float:
    """$name as a number in [low, high]; `default` where unset or empty."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isnan(value):
        _warn_once(name, text, "is not a number", default)
        return default
    return _bounded(name, text, value, low, high)


def flag_knob(name: str, default: bool) -> bool:
    """$name as a switch: `0` off, `1` on; `default` where unset or empty."""
    text = os.environ.get(name, "").strip()
    if text in ("0", "1"):
        return text == "1"
    if text:
        _warn_once(name, text, "is not 0 or 1", int(default))
    return default
