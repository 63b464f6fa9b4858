"""Shared by the tests that need a fresh Python process: what one process leaves in pyree's
cache folder (runtime_support/disk_cache.py) and what it imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_json(script: str, cache: Path, path: tuple = ()) -> dict:
    """Runs `script` in a new interpreter with PYREE_CACHE_DIR=`cache` and the repository
    (after `path`) importable; its last stdout line, parsed as JSON."""
    env = dict(os.environ, PYREE_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([*map(str, path), str(REPO)]))
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       env=env, timeout=120, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])
