"""Where `flow.tensor.trace` blocks go: the default `trace_sink` of the `hal` modules.

Kept apart from io_format.py (which formats the blocks, as iree-run-module prints them) so
that a context loads without importing the formatter: it is imported at the first trace,
and most programs have none.
"""

from __future__ import annotations

import sys
from typing import Sequence


class TraceWriter:
    """A `trace_sink` for the `hal` modules writing `io_format.format_trace` blocks to
    `stream` (None: `sys.stderr` as it is at each trace), as IREE's stdio debug sink writes
    to stderr under iree-run-module and iree.runtime."""

    def __init__(self, stream=None) -> None:
        self.stream = stream

    def __call__(self, key: str, views: Sequence) -> None:
        from runtime_support.errors import VMError
        from runtime_support.tools.io_format import SpecError, format_trace

        try:
            text = format_trace(key, views)
        except SpecError as e:
            raise VMError(e.code, f"cannot print traced buffer view: {e.message}") from None
        stream = self.stream if self.stream is not None else sys.stderr
        stream.write(text)
        stream.flush()


__all__ = ["TraceWriter"]
