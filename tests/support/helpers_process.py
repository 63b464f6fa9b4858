"""Running pyree in a process: a fresh interpreter (what it leaves in pyree's cache folder,
runtime_support/cache/disk_cache.py, and what it imports), or a console entry point called in
this one with its output captured (`cli`)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_json(script: str, cache: Path, path: tuple = ()) -> dict:
    """Runs `script` in a new interpreter with PYREE_CACHE_DIR=`cache` and the repository
    (after `path`) importable; its last stdout line, parsed as JSON."""
    env = dict(os.environ, PYREE_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([*map(str, path), str(REPO)]))
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       env=env, timeout=120, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def cli(entry, argv, cwd=None):
    """Runs a console entry point in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = entry([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()
