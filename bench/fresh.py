"""Import and load of a translated package in a fresh process, as a user's script pays it.

The main table's load time is measured in the bench process, where the runtime is already
imported and its native code compiled. Here each run is a new Python process that imports
numpy and llvmlite first (untimed: the issue's load target excludes the process's first
import of both), then times `import PACKAGE` (which imports runtime_support) and
`PACKAGE.load()`, with Python's default bytecode caching (.pyc files). The first run may
fill those and pyree's cache folder (the native runtime's object code, compiled code
objects: runtime_support/cache/disk_cache.py), as a user's first run after installing does; the
later runs are what every process after that pays.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_SCRIPT = """
import json, sys, time
import numpy, llvmlite.binding
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
import importlib
package = importlib.import_module(sys.argv[2])
t1 = time.perf_counter()
ctx = package.load(device=sys.argv[3])
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1}))
"""


def measure(pkg_dir: Path, device: str, runs: int, repo: Path) -> dict:
    """{"first": {import_s, load_s}, "import_s": median, "load_s": median, "runs": n}
    over `runs` processes after the first; {"error": ...} where one fails."""
    # Python's default, .pyc files written and read, whatever this process was started
    # with (PYTHONDONTWRITEBYTECODE would compile every module's source in every run)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    samples = []
    for _ in range(runs + 1):
        p = subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(pkg_dir.parent), pkg_dir.name, device],
            capture_output=True, text=True, timeout=300, cwd=repo, env=env,
        )
        if p.returncode != 0:
            lines = (p.stderr or p.stdout).strip().splitlines() or ["no output"]
            return {"error": lines[-1][:160]}
        samples.append(json.loads(p.stdout.strip().splitlines()[-1]))
    first, rest = samples[0], samples[1:]
    return {
        "first": first,
        "import_s": statistics.median(s["import_s"] for s in rest),
        "load_s": statistics.median(s["load_s"] for s in rest),
        "runs": len(rest),
    }
