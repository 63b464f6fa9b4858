"""Helpers for the hostile-input tests and the fuzz harness (tests/fuzz.py): raw FlatBuffer
field positions in a vmfb, translating bytes into a package, and running Python in a
subprocess with its time and memory bounded."""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
from pathlib import Path

from translator.container import parse_container

REPO = Path(__file__).resolve().parents[2]

# bytecode_module_def.fbs: Module table fields, ModuleState fields.
MODULE_STATE = 11
GLOBAL_BYTES_CAPACITY, GLOBAL_REF_COUNT = 0, 1


def table_field(data: bytes, table: int, fid: int) -> int | None:
    """Absolute file position of field `fid` of the table at absolute position `table`
    (None when the vtable leaves it out)."""
    vt = table - struct.unpack_from("<i", data, table)[0]
    vt_size = struct.unpack_from("<H", data, vt)[0]
    if 4 + 2 * fid >= vt_size:
        return None
    voff = struct.unpack_from("<H", data, vt + 4 + 2 * fid)[0]
    return table + voff if voff else None


def root_table(data: bytes) -> tuple[int, int]:
    """(FlatBuffer start, absolute position of the root table) of a vmfb."""
    start = parse_container(data).fb_start
    return start, start + struct.unpack_from("<I", data, start)[0]


def subtable(data: bytes, table: int, fid: int) -> int | None:
    pos = table_field(data, table, fid)
    return None if pos is None else pos + struct.unpack_from("<I", data, pos)[0]


def module_state_field(data: bytes, fid: int) -> int:
    """Absolute position of a ModuleState scalar (the module must have globals)."""
    _, root = root_table(data)
    state = subtable(data, root, MODULE_STATE)
    pos = None if state is None else table_field(data, state, fid)
    if pos is None:
        raise ValueError("module has no such module_state field")
    return pos


def patch_i32(data: bytes, pos: int, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into("<i", out, pos, value)
    return bytes(out)


def translate(vmfb: Path, out_dir: Path, name: str = "m") -> subprocess.CompletedProcess:
    """Runs `pyree-translate` (the CLI entry point) in a subprocess."""
    return run_python(
        ["-m", "translator.cli", str(vmfb), "-o", str(out_dir), "--name", name], timeout=120
    )


def _limits(mem_bytes: int | None, cpu_s: int | None):
    def apply():
        if mem_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        if cpu_s:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def run_python(
    args, *, timeout: float = 60, mem_bytes: int | None = None, cpu_s: int | None = None, env=None
) -> subprocess.CompletedProcess:
    """`python ARGS` with the worktree first on the path, bounded in address space, CPU
    time and wall time (TimeoutExpired propagates)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=str(REPO),
        preexec_fn=_limits(mem_bytes, cpu_s),
    )


_pkg_counter = iter(range(1 << 30))


def load_package(pkg_dir: Path):
    """Imports a generated package from its directory under a private module name."""
    import importlib.util

    name = f"_pyree_hostile_{next(_pkg_counter)}"
    spec = importlib.util.spec_from_file_location(
        name, Path(pkg_dir) / "__init__.py", submodule_search_locations=[str(pkg_dir)]
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def process_footprint() -> dict:
    """RSS (KiB), open fds and mappings of this process, from /proc."""
    rss = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    with open("/proc/self/maps") as f:
        maps = sum(1 for _ in f)
    return {"rss_kib": rss, "fds": len(os.listdir("/proc/self/fd")), "maps": maps}


# Text that would run code (or break out of a string or comment) if it reached generated
# code unescaped: the strings a hostile vmfb puts in every string slot.
HOSTILE_CODE = 'open("PWNED","w")'
HOSTILE = [
    b'x""";' + HOSTILE_CODE.encode() + b';"""',
    b"x''';" + HOSTILE_CODE.replace('"', "'").encode() + b";'''",
    b'x"\n' + HOSTILE_CODE.encode() + b"\n#",
    b"x'\n" + HOSTILE_CODE.replace('"', "'").encode() + b"\n#",
    b'x\r' + HOSTILE_CODE.encode() + b"\r#",
    b"x\r\n" + HOSTILE_CODE.encode() + b"\r\n#",
    b"x\\",
    b'\\"""\\',
    b"x\\\n" + HOSTILE_CODE.encode(),
    b"x\f" + HOSTILE_CODE.encode(),
    b"x\v" + HOSTILE_CODE.encode(),
    b"x\x00" + HOSTILE_CODE.encode(),
    "x\u2028".encode() + HOSTILE_CODE.encode() + "\u2029#".encode(),
    "x\u0085".encode() + HOSTILE_CODE.encode(),
    "\u202e\u2066x\u2069\u202c".encode(),
    b"\xed\xa0\x80 lone surrogate",
    b"\xff\xfe\x80 invalid utf-8",
    b"{{ 1 }} {% if x %} {# jinja #}",
    b'"; raise SystemExit(3); "',
    b"#" + HOSTILE_CODE.encode(),
]
