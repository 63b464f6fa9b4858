"""ARCHITECTURE.md names every file of translator/, runtime_support/ and templates/ (one
line per file), and every file it names exists: the map a newcomer reads stays the house."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEXT = (REPO / "ARCHITECTURE.md").read_text()
# A package's __init__.py is named only where it holds more than the package docstring.
NAMED_INITS = {"translator/codegen/__init__.py", "translator/vmvx_vectorize/__init__.py"}


def _files():
    for top in ("translator", "runtime_support", "templates"):
        for path in sorted((REPO / top).rglob("*")):
            if path.suffix in (".py", ".j2", ".toml", ".ll") and "__pycache__" not in path.parts:
                rel = path.relative_to(REPO).as_posix()
                if path.name != "__init__.py" or rel in NAMED_INITS:
                    yield top, path.relative_to(REPO / top).as_posix()


def test_every_file_is_on_the_map():
    named = set(re.findall(r"`([\w/.*<>]+)`", TEXT))
    missing = []
    for top, rel in _files():
        if rel.endswith(".ll") and "native/*.ll" in named and Path(rel).stem.split("_")[0] in TEXT:
            continue
        if rel not in named:
            missing.append(f"{top}/{rel}")
    assert not missing, f"files ARCHITECTURE.md does not name: {missing}"


def test_every_file_on_the_map_exists():
    tables = TEXT[: TEXT.index("## A walk through one program")]
    rows = re.findall(r"^\| (`[^|]+`) \|", tables, flags=re.M)
    section = None
    gone = []
    for line in tables.splitlines():
        if line.startswith("## "):
            section = line.split()[1].rstrip(":/")
        m = re.match(r"^\| (`[^|]+`) \|", line)
        if m and section in ("translator", "templates", "runtime_support"):
            for rel in re.findall(r"`([\w/.*<>]+)`", m.group(1)):
                if rel in ("file",) or "*" in rel:
                    continue
                if not (REPO / section / rel).exists():
                    gone.append(f"{section}/{rel}")
    assert rows and not gone, f"ARCHITECTURE.md names files that do not exist: {gone}"
