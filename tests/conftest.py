"""Shared pytest fixtures and helpers for pyree's tests.

Helpers (plain functions, importable with `from conftest import ...`: pyproject's pytest
`pythonpath` puts tests/ and tests/support/ on sys.path, tests/README.md):

    corpus_cases()                  -> [CorpusCase]  (tests/corpus/manifest.json)
    e2e_cases()                     -> [E2ECase]     (<repo>/../shared/iree-e2e/cases.json; [] if absent)
    compile_mlir_cached(src, flags, cache_dir) -> Path of the .vmfb
    iree_dump_functions(vmfb, offsets=False)   -> DumpFunctions (dict: header line -> instruction lines)
    iree_dump_text(vmfb, offsets=False)        -> raw `iree-dump-module --output=disassembly` stdout

Fixtures:

    update_golden   bool, from `--update-golden` (also: request.config.getoption("--update-golden"))
    compile_mlir    session-scoped callable (src_path, flags) -> Path, cached per run
    vmfb_cache_dir  the per-run directory the compiled modules land in

Compiled modules are cached twice: per run (under pytest's session tmp dir) and persistently,
keyed by sha256(source text, flags, compiler version), in $PYREE_TEST_CACHE if set (set it to
"0" or "off" to disable) or else <repo>/.pyree-cache/vmfb/ (git-ignored).

The suite runs on pytest-xdist workers (pyproject.toml's addopts: `-n auto --dist loadfile`;
`-n 0` runs it in one process). The per-run cache is then one folder for all workers (under
the run's base temp folder, above each worker's own), and a module is compiled under a lock
on its output name: a worker that needs a module another one is compiling waits for it
instead of compiling it again. Every cache file is written under a temporary name and
renamed into place, so no reader sees half a file.
"""

from __future__ import annotations

import hashlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from iree_tools import ensure_on_path, find_tool

# Tests run `iree-compile`, `iree-run-module`, `iree-dump-module` by name: find them through
# the installed packages when the environment's bin/ is not on PATH.
ensure_on_path()

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
CORPUS_DIR = TESTS_DIR / "corpus"
CORPUS_MANIFEST = CORPUS_DIR / "manifest.json"
SHARED_DIR = REPO_ROOT.parent / "shared"
E2E_DIR = SHARED_DIR / "iree-e2e"

COMPILE_TIMEOUT_S = 300


# --- options and golden flag ------------------------------------------------------------------


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden files with the current output instead of comparing against them",
    )


GIB_PER_WORKER = 3  # the most one worker's processes were measured to hold at once, rounded up


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker per core this process may run on, and at most one per
    GIB_PER_WORKER of memory; $PYTEST_XDIST_AUTO_NUM_WORKERS, where set, decides instead."""
    env = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if env:
        return None  # (xdist's own hook reads it)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        pages, page = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        by_memory = max(1, pages * page // (GIB_PER_WORKER << 30))
    except (ValueError, OSError):
        by_memory = cores or 1
    return max(1, min(cores or 1, by_memory))


@pytest.fixture
def update_golden(request) -> bool:
    return bool(request.config.getoption("--update-golden"))


# --- process state some tests start from -------------------------------------------------


@pytest.fixture
def empty_recycle_pools(monkeypatch):
    """fresh_buffer's recycled storage (runtime_support/hal/buffer.py `_recycled`) empty for
    the test, and the process's own pools back afterwards: a test that asserts storage is
    handed out again must not depend on which tests ran before it in this process (once
    _RECYCLE_SIZES sizes are tracked, a new size is not recycled at all)."""
    from runtime_support.hal import buffer

    monkeypatch.setattr(buffer, "_recycled", {})


# --- corpus and e2e cases ---------------------------------------------------------------------


@dataclass(frozen=True)
class CorpusCase:
    """One (program, target variant) pair of the MLIR corpus."""

    id: str  # "<program>@<variant>"
    name: str  # program name (file stem)
    source: Path
    variant: str  # embedded-elf | system-dylib | vmvx | vm
    flags: tuple  # full iree-compile flag list
    kind: str  # host | tensor | vm
    covers: str
    executable_format: str | None  # expected HAL executable format, None for vm
    expected_failures: dict = field(default_factory=dict)  # export -> {"error", "reason"}
    run_exceptions: dict = field(default_factory=dict)  # export -> reason it is not run
    dump_issue: str | None = None  # why iree-dump-module text is unusable for this module

    def __hash__(self):
        return hash(self.id)


@dataclass(frozen=True)
class E2ECase:
    """One compile case of IREE's e2e suite (shared/iree-e2e/cases.json)."""

    id: str
    source: Path
    flags: tuple
    functions: tuple
    iree_passes: tuple


def load_manifest() -> dict:
    return json.loads(CORPUS_MANIFEST.read_text())


def corpus_cases(variants=None, kinds=None) -> list:
    """All corpus cases, optionally restricted to some variants and/or program kinds."""
    manifest = load_manifest()
    out = []
    for prog in manifest["programs"]:
        for variant in prog["variants"]:
            if variants is not None and variant not in variants:
                continue
            if kinds is not None and prog["kind"] not in kinds:
                continue
            vdef = manifest["variants"][variant]
            out.append(
                CorpusCase(
                    id=f"{prog['name']}@{variant}",
                    name=prog["name"],
                    source=CORPUS_DIR / prog["source"],
                    variant=variant,
                    flags=tuple(vdef["flags"]) + tuple(prog.get("extra_flags", ())),
                    kind=prog["kind"],
                    covers=prog.get("covers", ""),
                    executable_format=vdef.get("executable_format"),
                    expected_failures=dict(prog.get("expected_failures", {})),
                    run_exceptions=dict(prog.get("run_exceptions", {})),
                    dump_issue=prog.get("dump_issue"),
                )
            )
    return out


def e2e_cases() -> list:
    """IREE e2e compile cases, read from <repo>/../shared/iree-e2e; empty when that is absent."""
    cases_json = E2E_DIR / "cases.json"
    if not cases_json.is_file():
        return []
    data = json.loads(cases_json.read_text())
    base = tuple(data.get("base_flags", ()))
    return [
        E2ECase(
            id=c["name"],
            source=E2E_DIR / c["source"],
            flags=base + tuple(c.get("extra_flags", ())),
            functions=tuple(c.get("functions", ())),
            iree_passes=tuple(c.get("iree_passes", ())),
        )
        for c in data.get("cases", [])
    ]


# --- compiling --------------------------------------------------------------------------------


class CompileError(RuntimeError):
    pass


def _find_tool(name: str) -> str:
    """An IREE tool: on PATH or shipped in the installed `iree` packages (tests/support/iree_tools.py);
    skips only when neither has it."""
    path = find_tool(name)
    if path is None:
        pytest.skip(f"{name} is not installed (neither on PATH nor in the iree packages)")
    return path


_COMPILER_VERSION = None


def compiler_version() -> str:
    global _COMPILER_VERSION
    if _COMPILER_VERSION is None:
        res = subprocess.run(
            [_find_tool("iree-compile"), "--version"], capture_output=True, text=True, check=False
        )
        _COMPILER_VERSION = (res.stdout + res.stderr).strip()
    return _COMPILER_VERSION


def compile_key(src_text: str, flags) -> str:
    h = hashlib.sha256()
    h.update(src_text.encode())
    h.update(b"\0")
    h.update("\n".join(flags).encode())
    h.update(b"\0")
    h.update(compiler_version().encode())
    return h.hexdigest()


def persistent_cache_dir() -> Path | None:
    env = os.environ.get("PYREE_TEST_CACHE")
    if env is not None:
        if env.strip().lower() in ("", "0", "off", "no", "false"):
            return None
        return Path(env).expanduser()
    return REPO_ROOT / ".pyree-cache" / "vmfb"


def _atomic_copy(src: Path, dst: Path):
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dst.parent, prefix=dst.name, suffix=".tmp")
    os.close(fd)
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


class _FileLock:
    """An exclusive flock on `path` (made if missing) for the `with` block: serialises the
    making of one cache entry across processes (xdist workers, concurrent runs)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.fd = None

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = None


def compile_mlir_cached(src_path, flags, cache_dir) -> Path:
    """Compile `src_path` with iree-compile `flags` into `cache_dir`, reusing earlier results.
    Safe to call from several processes at once on one `cache_dir`: the module is compiled
    once (the others wait on its lock) and appears under its name only when complete."""
    src_path = Path(src_path)
    flags = tuple(flags)
    cache_dir = Path(cache_dir)
    key = compile_key(src_path.read_text(), flags)
    out = cache_dir / f"{src_path.stem}-{key[:16]}.vmfb"
    if out.is_file():
        return out
    with _FileLock(cache_dir / f".{out.name}.lock"):
        return _compile_locked(src_path, flags, key, out)


def _compile_locked(src_path: Path, flags: tuple, key: str, out: Path) -> Path:
    cache_dir = out.parent
    if out.is_file():  # (made by another process while this one waited for the lock)
        return out
    persistent = persistent_cache_dir()
    if persistent is not None:
        hit = persistent / f"{key}.vmfb"
        if hit.is_file():
            _atomic_copy(hit, out)
            return out
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=out.name, suffix=".tmp")
    os.close(fd)
    cmd = [_find_tool("iree-compile"), *flags, str(src_path), "-o", tmp]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.unlink(tmp)
        raise CompileError(f"iree-compile timed out after {COMPILE_TIMEOUT_S}s: {' '.join(cmd)}")
    if res.returncode != 0:
        if os.path.exists(tmp):  # iree-compile removes its output file on some errors
            os.unlink(tmp)
        raise CompileError(
            f"iree-compile failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-4000:]}"
        )
    os.replace(tmp, out)
    if persistent is not None:
        try:
            _atomic_copy(out, persistent / f"{key}.vmfb")
        except OSError:
            pass  # a read-only cache is fine
    return out


def run_shared_dir(tmp_path_factory, name: str) -> Path:
    """A folder `name` for this whole test run: under xdist, one for all workers (in the
    run's base temp folder, the parent of each worker's), else a fresh session tmp folder.
    What is kept there must be written atomically (see compile_mlir_cached)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        path = tmp_path_factory.getbasetemp().parent / name
        path.mkdir(exist_ok=True)
        return path
    return tmp_path_factory.mktemp(name)


@pytest.fixture(scope="session")
def vmfb_cache_dir(tmp_path_factory) -> Path:
    return run_shared_dir(tmp_path_factory, "vmfb")


@pytest.fixture(scope="session")
def compile_mlir(vmfb_cache_dir):
    """Callable (src_path, flags) -> Path to the compiled .vmfb (cached per run and on disk)."""

    def _compile(src_path, flags) -> Path:
        return compile_mlir_cached(src_path, flags, vmfb_cache_dir)

    return _compile


# --- iree-dump-module -------------------------------------------------------------------------


def iree_dump_text(vmfb_path, offsets: bool = False) -> subprocess.CompletedProcess:
    """Run `iree-dump-module --output=disassembly [--bytecode_offsets]`; never raises on failure."""
    cmd = [_find_tool("iree-dump-module"), "--output=disassembly"]
    if offsets:
        cmd.append("--bytecode_offsets")
    cmd.append(str(vmfb_path))
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", check=False)


class DumpFunctions(dict):
    """header line -> whitespace-collapsed instruction lines (block labels included).

    Dict keys are the `vm.func @name(...) -> (...) {` header lines (whitespace-collapsed). When
    two functions print the same header, the later ones get a " #<k>" suffix (k = 2, 3, ...).
    Extra attributes:
      ordered:    [(header, lines)] in dump order (index = position among printed functions)
      exports:    {header key: ["vm.export @f", ...]} export lines printed before each function
      preamble:   lines before the first export/function (module, type, import, rodata lines)
      returncode, stderr: of the iree-dump-module run (non-zero for modules it cannot dump)
    """

    def __init__(self):
        super().__init__()
        self.ordered = []
        self.exports = {}
        self.preamble = []
        self.returncode = 0
        self.stderr = ""

    def by_index(self, index: int):
        return self.ordered[index]

    def by_name(self, name: str) -> list:
        """All (header, lines) whose function display name is `name`."""
        return [(h, l) for h, l in self.ordered if _header_name(h) == name]


_HEADER_RE = re.compile(r"^vm\.func @(\S+?)\(.*\{$")


def _header_name(header: str) -> str:
    m = _HEADER_RE.match(header)
    return m.group(1) if m else ""


def _collapse(line: str) -> str:
    return " ".join(line.split())


def parse_dump_functions(text: str) -> DumpFunctions:
    """Split `iree-dump-module --output=disassembly` text into functions (see DumpFunctions)."""
    result = DumpFunctions()
    pending_exports = []
    header = None
    body = []
    seen = {}
    for raw in text.splitlines():
        line = _collapse(raw)
        if header is None:
            if not line:
                continue
            if line.startswith("vm.export "):
                pending_exports.append(line)
            elif _HEADER_RE.match(line):
                header, body = line, []
            elif not result.ordered and not pending_exports:
                result.preamble.append(line)
            continue
        if line == "}":
            n = seen.get(header, 0) + 1
            seen[header] = n
            key = header if n == 1 else f"{header} #{n}"
            result[key] = body
            result.ordered.append((header, body))
            result.exports[key] = pending_exports
            pending_exports, header = [], None
        elif line:
            body.append(line)
    if header is not None:  # truncated output (the dump tool aborted mid-function)
        n = seen.get(header, 0) + 1
        key = header if n == 1 else f"{header} #{n}"
        result[key] = body
        result.ordered.append((header, body))
        result.exports[key] = pending_exports
    return result


def iree_dump_functions(vmfb_path, offsets: bool = False) -> DumpFunctions:
    """Per-function instruction lines of the reference disassembly (see DumpFunctions)."""
    res = iree_dump_text(vmfb_path, offsets=offsets)
    funcs = parse_dump_functions(res.stdout)
    funcs.returncode = res.returncode
    funcs.stderr = res.stderr
    return funcs


_OPCODE_RE = re.compile(r"(?:^|\s)vm\.([a-z0-9_]+(?:\.[a-z0-9_]+)*)")


def dump_mnemonic(line: str) -> str | None:
    """The VM mnemonic of one instruction line ("add.i32"), None for block labels."""
    line = re.sub(r"^\[[0-9A-F]{8}\]\s*", "", line)
    if line.startswith("^"):
        return None
    m = _OPCODE_RE.search(line.split("//", 1)[0])
    return m.group(1) if m else None
