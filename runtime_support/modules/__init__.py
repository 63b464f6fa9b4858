"""Import modules other than `hal` that compiled programs may call.

check.py   CheckModule: the test-only `check` module (hal-abi.md §F)
"""

from .check import CheckModule

__all__ = ["CheckModule"]
