"""IREE's tools are found through the installed packages when PATH lacks them, so tests
that need `iree-compile` or `iree-run-module` run instead of skipping."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import shutil, subprocess, sys
sys.path[:0] = ["tests", "tests/support"]
import conftest  # puts the packages' tool folders on PATH, as pytest does
for tool in ("iree-compile", "iree-run-module", "iree-dump-module"):
    path = conftest._find_tool(tool)
    assert shutil.which(tool) == path, (tool, path)
    out = subprocess.run([tool, "--help"], capture_output=True, text=True)
    print(tool, out.returncode, path)
"""


def test_tools_found_without_path():
    pytest.importorskip("iree.compiler")
    pytest.importorskip("iree.runtime")
    env = dict(os.environ, PATH="/usr/bin:/bin", PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert len(lines) == 3 and all(line.split()[1] == "0" for line in lines), out.stdout
    assert all("site-packages" in line or "dist-packages" in line for line in lines), out.stdout
