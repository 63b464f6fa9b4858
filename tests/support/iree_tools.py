"""Finding IREE's command-line tools through the installed `iree` packages.

The pinned `iree-base-compiler` and `iree-base-runtime` wheels ship the binaries
(`iree-compile` in `iree.compiler`, `iree-run-module`, `iree-dump-module` ... in
`iree._runtime_libs`); their console scripts are on PATH only when the environment's
`bin/` is. `ensure_on_path()` puts the packages' tool folders first on PATH, so every test
and tool that runs `iree-*` by name finds the binaries of the imported packages (the
pinned version, without a console-script wrapper) whenever those are importable.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def tool_dirs() -> list[str]:
    dirs = []
    try:
        from iree.compiler.tools.binaries import find_tool

        dirs.append(str(Path(find_tool("iree-compile")).parent))
    except Exception:  # noqa: BLE001 - compiler package absent or broken
        pass
    try:
        import iree._runtime_libs as libs

        dirs += [p for p in libs.__path__ if Path(p, "iree-run-module").exists()]
    except Exception:  # noqa: BLE001 - runtime package absent
        pass
    return dirs


def ensure_on_path() -> None:
    """Puts the packages' tool folders first on PATH (once)."""
    path = os.environ.get("PATH", "").split(os.pathsep)
    extra = [d for d in tool_dirs() if d not in path]
    if extra:
        os.environ["PATH"] = os.pathsep.join(extra + path)


def find_tool(name: str) -> str | None:
    """The path of IREE tool `name` (the installed packages first, then PATH), or None."""
    ensure_on_path()
    return shutil.which(name)
