"""Fuzzing of pyree's VMVX path: hostile nested executable modules and hostile `vmvx`
tile operands.

    python -m tests.fuzz_vmvx --nested 2000 --tile 20000 --jobs 2 [--seeds FILES...] [--out r.json]
    python -m tests.fuzz_vmvx --replay nested:SEEDFILE:INDEX | tile:INDEX [--base-seed N]

Two families, each input drawn from `random.Random(f"{base_seed}:{family}:{index}")` so any
input replays from its id alone.

nested: one VMVX-built seed vmfb (`--iree-hal-local-target-device-backends=vmvx`, with and
without `--iree-vmvx-enable-microkernels`) whose embedded executable (a VM bytecode
FlatBuffer module in a rodata segment) gets 1-3 mutations and is re-embedded in place:

    nested_fb        every position the reader bounds-checks in the nested module (found as
                     tests/fuzz.py finds them): function descriptors, export/import tables,
                     signatures, ordinals, counts, sizes, vtable and offset words; edge values
    nested_bytecode  a byte or 32-bit operand of the kernels' bytecode
    nested_rodata    a byte or 32-bit word of one of the executable's own rodata segments
    nested_import    an import's name swapped for another `vmvx` import of the same length
                     (another calling convention or element type) or an unknown one
    nested_cconv     one character of a calling-convention string
    nested_byte      any byte of the executable
    nested_truncate  the host's rodata length of the executable cut short

Each input is translated in-process (`pyree-translate`, under a wall alarm) and, where that
succeeds, loaded and called in tests/fuzz.py's forked child (bounded address space, CPU and
wall time). Classes are tests/fuzz.py's (rejected, load_error, ran, translator_internal,
traceback, hang, crash:SIG...); crashes are always bugs here (no machine code is mutated).

tile: one direct call of a `vmvx` import (runtime_support/modules/vmvx.py: the 2-D
element ops, copies, fill, mmt4d, pack, unpack, query_tile_sizes.2d) with hostile
operands: negative and huge sizes, strides and offsets (past int64 and uint64), buffers
too small, read-only, null or not buffers, one buffer for several operands (overlap),
division by zero and INT_MIN / -1 data, unknown flags and bad tile sizes. Each call runs in
a forked child (address space bounded to the worker's + 512 MiB, CPU and wall limits):

    ok           returned
    vm_error     VMError with a one-line message naming the import (a clean refusal)
    bad_message  VMError whose message is empty, several lines or does not name the import
    traceback    any other exception (IndexError, ValueError, OverflowError, numpy's...)
    memory       MemoryError or killed for memory: an allocation an operand claimed
    hang         over the wall or CPU limit
    crash:SIG    killed by a signal

Bugs: translator_internal, traceback, hang, rejected_multiline, generated_syntax,
register_bank, unset_register, bad_message, memory, crash:*, worker_died.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for _folder in (REPO / "tests", REPO / "tests" / "support"):  # (fuzz beside this file)
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

import fuzz  # noqa: E402
from fuzz_tally import Tally  # noqa: E402

# (corpus program, microkernels): the VMVX seeds the test and the CLI build.
SEED_BUILDS = (
    ("tensor_elementwise", True),
    ("tensor_matmul", True),
    ("tensor_elementwise", False),
    ("multi_dispatch", False),
    ("dyn_shape_1d", False),
    ("globals_refs", True),  # (an executable with rodata of its own)
)
UKERNELS = "--iree-vmvx-enable-microkernels"
NESTED_KINDS = ("nested_fb", "nested_bytecode", "nested_rodata", "nested_import",
                "nested_cconv", "nested_byte", "nested_truncate")
TILE_WALL_S = 20
TILE_CPU_S = 10
TILE_EXTRA_AS = 512 << 20


def is_bug(cls: str) -> bool:
    return (cls in fuzz.BUG_CLASSES or cls in ("bad_message", "memory", "worker_died")
            or cls.startswith("crash"))


def build_seeds(cache_dir) -> list[Path]:
    """Compiles the VMVX seeds with iree-compile (cached as the tests cache builds)."""
    from conftest import compile_mlir_cached, corpus_cases

    cases = {c.name: c for c in corpus_cases(variants=("vmvx",))}
    return [compile_mlir_cached(cases[n].source, cases[n].flags + ((UKERNELS,) if uk else ()), cache_dir)
            for n, uk in SEED_BUILDS]


# -- nested: mutating the embedded executable ---------------------------------------------------


class NestedSeed:
    """A VMVX-built vmfb and where its executables' structure lies (positions relative to
    each executable's first byte)."""

    def __init__(self, path: Path, data: bytes) -> None:
        from translator.reader import read_module
        from translator.vmvx import find_executables

        self.path, self.data = path, data
        self.exes = []
        for _, exe in find_executables(read_module(data)):
            start = data.find(exe)
            info = fuzz.SeedInfo(path, exe)
            sub = read_module(exe)
            rodata = []
            for s in sub.rodata:
                at = exe.find(bytes(s.data)) if len(s.data) else -1
                if at >= 0:
                    rodata.append((at, len(s.data)))
            names = []
            for imp in sub.imports:
                at = exe.find(imp.full_name.encode())
                if at >= 0:
                    names.append((at, imp.full_name))
            cconvs = []
            for sig in [imp.signature for imp in sub.imports] + list(sub.signatures):
                text = (sig.calling_convention or "").encode()
                at = exe.find(text) if text else -1
                if at >= 0:
                    cconvs.append((at, len(text)))
            # (the host vector's length word: before the bytes, or before their alignment padding)
            length_at = next((at for at in range(start - 4, max(start - 20, -1), -4)
                              if struct.unpack_from("<I", data, at)[0] == len(exe)), None)
            self.exes.append({"start": start, "size": len(exe), "info": info, "rodata": rodata,
                              "names": names, "cconvs": cconvs,
                              "length_at": length_at})


def _other_import(name: str, rng: random.Random) -> str:
    from runtime_support.modules.vmvx import IMPORTS

    same = [n for n in IMPORTS if len(n) == len(name) and n != name]
    if same and rng.random() < 0.8:
        return rng.choice(same)
    return name[:-1] + ("q" if name[-1] != "q" else "r")


def mutate_nested(seed: NestedSeed, rng: random.Random) -> tuple[bytes, list[str]]:
    buf = bytearray(seed.data)
    notes = []
    exe = rng.choice(seed.exes)
    base, size, info = exe["start"], exe["size"], exe["info"]
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        kind = rng.choice(("nested_fb",) * 5 + ("nested_bytecode",) * 3 + NESTED_KINDS[2:])
        if kind == "nested_fb" and info.fb:
            pos, width, what = rng.choice(info.fb)
            width = width if width in (1, 2, 4, 8) else 1
            new = fuzz._write(buf, base + pos, width, rng)
            notes.append(f"nested_fb {what!r}@{pos}={new:#x}")
        elif kind == "nested_bytecode" and info.bytecode[1]:
            start, n = info.bytecode
            pos = start + rng.randrange(n)
            if rng.random() < 0.5 or pos + 4 > start + n:
                buf[base + pos] = rng.getrandbits(8)
                notes.append(f"nested_bytecode byte@{pos}={buf[base + pos]:#x}")
            else:
                new = fuzz._write(buf, base + pos, 4, rng)
                notes.append(f"nested_bytecode i32@{pos}={new:#x}")
        elif kind == "nested_rodata" and exe["rodata"]:
            start, n = rng.choice(exe["rodata"])
            pos = start + rng.randrange(n)
            if pos + 4 <= start + n and rng.random() < 0.5:
                new = fuzz._write(buf, base + pos, 4, rng)
            else:
                new = buf[base + pos] = rng.getrandbits(8)
            notes.append(f"nested_rodata@{pos}={new:#x}")
        elif kind == "nested_import" and exe["names"]:
            pos, name = rng.choice(exe["names"])
            new = _other_import(name, rng)
            buf[base + pos:base + pos + len(name)] = new.encode()
            notes.append(f"nested_import@{pos}={new}")
        elif kind == "nested_cconv" and exe["cconvs"]:
            pos, n = rng.choice(exe["cconvs"])
            pos += rng.randrange(n)
            buf[base + pos] = ord(rng.choice("0vrRiIfFCD_X"))
            notes.append(f"nested_cconv@{pos}={chr(buf[base + pos])}")
        elif kind == "nested_truncate" and exe["length_at"] is not None:
            new = rng.choice((0, 1, 4, 8, 16, size // 2, size - 4, size - 1, rng.randrange(size)))
            struct.pack_into("<I", buf, exe["length_at"], new)
            notes.append(f"nested_truncate@{size}={new}")
        else:
            pos = rng.randrange(size)
            buf[base + pos] = rng.getrandbits(8)
            notes.append(f"nested_byte@{pos}={buf[base + pos]:#x}")
    return bytes(buf), notes


def run_nested(seed: NestedSeed, index: int, base_seed: int, tmp: Path) -> dict:
    rng = random.Random(f"{base_seed}:nested:{index}")
    data, notes = mutate_nested(seed, rng)
    path = tmp / "in.vmfb"
    path.write_bytes(data)
    out = tmp / "out"
    signal.signal(signal.SIGALRM, fuzz._alarm)
    signal.alarm(fuzz.CALL_WALL_S)
    try:
        cls, detail = fuzz._translate(path, out)
    except fuzz._Timeout:
        cls, detail = "hang", "translator over its time"
    finally:
        signal.alarm(0)
    result = {"class": cls}
    if cls == "ok":
        result = fuzz._run_forked(out / "m")
    elif detail:
        result["detail"] = detail
    result["id"] = f"nested:{seed.path}:{index}"
    result["mutations"] = notes
    return result


# -- tile: hostile operands of the vmvx module ------------------------------------------------

EDGE_I64 = (0, 1, 2, 3, 4, 7, 8, 16, 255, -1, -2, -4, -8, 2**15 - 1, 2**15, 2**31 - 1, 2**31,
            -(2**31), 2**32 - 1, 2**32, 2**32 + 1, 2**40, 2**62, 2**63 - 1, -(2**63), 2**63,
            2**64 - 1, 2**64 - 4)
EDGE_I32 = (0, 1, 2, 4, 8, 16, 15, -1, -16, 2**15, 2**31 - 1, -(2**31), 0xFFFFFFFF, 2**32)
MMT4D_FLAGS = (0x01, 0x02, 0x101, 0x201, 0x301, 0x102, 0x302, 0x202, 0, 3, 0x401, 0x801, 0xFFFFFFFF, -1)
PACK_FLAGS = (0x01, 0x02, 0x03, 0x101, 0x201, 0x301, 0x302, 0x303, 0, 4, 0x401, 0xFFFFFFFF, -1)
QUERY_FLAGS = (0x101, 0x102, 0x103, 0x201, 0x203, 0x301, 0x603, 0x100, 0x104, 0x701, 0, -1)


def _tile_table():
    from runtime_support.modules.vmvx import _TABLE

    return sorted(_TABLE)


def _small(rng: random.Random, hi: int = 6) -> int:
    return rng.randrange(hi)


def _value(rng: random.Random, hostile: float, hi: int = 6, edges=EDGE_I64) -> int:
    return rng.choice(edges) if rng.random() < hostile else _small(rng, hi)


def _buffers(rng: random.Random, notes: list[str]):
    import numpy as np

    from runtime_support.vm.buffer import VMBuffer

    pool = []
    for k in range(3):
        n = rng.choice((0, 1, 3, 4, 8, 16, 32, 64, 128, 256, 1024))
        fill = rng.choice(("random", "zero", "edge"))
        if fill == "random":
            data = bytearray(rng.getrandbits(8) for _ in range(n))
        elif fill == "zero":
            data = bytearray(n)
        else:  # 0, -1, INT_MIN, 1, denormal, NaN words
            words = [rng.choice((0, 0xFFFFFFFF, 0x80000000, 1, 0x00000001, 0x7FC00000, 0x00400000))
                     for _ in range(n // 4 + 1)]
            data = bytearray(np.array(words, "<u4").tobytes()[:n])
        readonly = rng.random() < 0.1
        pool.append(VMBuffer(bytes(data) if readonly else data, readonly=readonly))
        notes.append(f"buf{k}={n}{'ro' if readonly else ''}:{fill}")
    return pool


def _operand_buf(rng: random.Random, pool, notes: list[str], name: str):
    r = rng.random()
    if r < 0.03:
        notes.append(f"{name}=null")
        return None
    if r < 0.05:
        notes.append(f"{name}=int")
        return 7
    k = rng.randrange(len(pool))
    return pool[k]


def _consistent(rng: random.Random, shape: str, notes: list[str]):
    """Arguments a compiler could emit (operands that fit their buffers), to be perturbed:
    (args, positions of the i32 arguments)."""
    from runtime_support.vm.buffer import VMBuffer

    def sized(n_bytes):
        n = max(0, n_bytes) + rng.choice((0, 0, 0, 4, 64))
        return VMBuffer(bytearray(rng.getrandbits(8) for _ in range(n)))

    if shape == "mmt4d":
        flags = rng.choice((0x201, 0x202, 0x301, 0x302, 0x01, 0x02, 0x101))
        ie = 4 if flags & 0xFF == 1 else 1
        M, N, K = (rng.randrange(4) for _ in range(3))
        M0, N0, K0 = (rng.choice((1, 1, 2, 4, 8, 16, 0)) for _ in range(3))
        ls, rs, os_ = K * M0 * K0, K * N0 * K0, N * M0 * N0
        lo, ro, oo = (rng.randrange(3) for _ in range(3))
        args = (sized((lo + M * ls) * ie), lo, ls, sized((ro + N * rs) * ie), ro, rs,
                sized((oo + M * os_) * 4), oo, os_, M, N, K, M0, N0, K0, flags)
        return args, (12, 13, 14, 15)
    if shape in ("pack", "unpack"):
        types = (0x01, 0x02, 0x03) if shape == "pack" else (0x01, 0x03)
        flags = rng.choice(types) | rng.choice((0, 0x100, 0x200, 0x300))
        e = 1 if flags & 0xFF == 2 else 4
        n0, n1 = rng.randrange(10), rng.randrange(10)
        t0, t1 = rng.choice((1, 2, 4, 8)), rng.choice((1, 2, 4, 8))
        o0, o1 = -(-n0 // t0) + rng.choice((0, 0, 1)), -(-n1 // t1) + rng.choice((0, 0, 1))
        p0, p1 = (o1, o0) if flags & 0x200 else (o0, o1)
        p2, p3 = (t1, t0) if flags & 0x100 else (t0, t1)
        u_off, u_s0 = rng.randrange(3), n1 + rng.choice((0, 0, 2))
        k_off, k_s0 = rng.randrange(3), p1 * p2 * p3
        unpacked = sized((u_off + n0 * u_s0) * e)
        packed = sized((k_off + p0 * k_s0) * e)
        if shape == "pack":
            args = (unpacked, u_off, u_s0, 1, packed, k_off, k_s0, 1, n0, n1, p0, p1, p2, p3,
                    rng.getrandbits(32), flags)
            return args, (15,)
        args = (packed, k_off, k_s0, 1, unpacked, u_off, u_s0, 1, p0, p1, p2, p3, n0, n1, flags)
        return args, (14,)
    return None, ()


def tile_call(rng: random.Random) -> tuple[str, tuple, list[str]]:
    """(import name, arguments, notes) of one hostile call: either every argument drawn
    from small and edge values, or a consistent ukernel call with 0-3 arguments set to
    edge values."""
    from runtime_support.modules.vmvx import _TABLE

    name = rng.choice(_tile_table())
    shape = _TABLE[name][0]
    notes = [f"op {name}"]
    if shape in ("mmt4d", "pack", "unpack") and rng.random() < 0.7:
        args, i32s = _consistent(rng, shape, notes)
        args = list(args)
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            k = rng.randrange(len(args))
            if not isinstance(args[k], int):
                continue
            args[k] = rng.choice(EDGE_I32 if k in i32s else EDGE_I64 + (0, 1, 2))
            notes.append(f"arg{k}={args[k]}")
        return name, tuple(args), notes
    pool = _buffers(rng, notes)
    hostile = rng.choice((0.0, 0.1, 0.3, 0.6))
    notes.append(f"hostile={hostile}")

    def buf(n):
        return _operand_buf(rng, pool, notes, n)

    def v(hi=6):
        return _value(rng, hostile, hi)

    def v32(hi=6, edges=EDGE_I32):
        return _value(rng, hostile, hi, edges)

    if shape == "binary2d":
        args = (buf("lhs"), v(), v(), v(3), buf("rhs"), v(), v(), v(3), buf("out"), v(), v(), v(3), v(), v())
    elif shape == "unary2d":
        args = (buf("in"), v(), v(), v(3), buf("out"), v(), v(), v(3), v(), v())
    elif shape == "fill2d":
        args = (v32(1 << 16), buf("out"), v(), v(), v(), v())
    elif shape == "mmt4d":
        args = (buf("lhs"), v(), v(16), buf("rhs"), v(), v(16), buf("out"), v(), v(16),
                v(3), v(3), v(3), v32(5), v32(5), v32(3), rng.choice(MMT4D_FLAGS))
    elif shape == "pack":  # in (off, s0, s1), out (off, s0, s1), in sizes 2, out sizes 4, pad, flags
        args = (buf("in"), v(), v(8), v(3), buf("out"), v(), v(32), v(3), v(8), v(8),
                v(), v(), v(4), v(4), v32(1 << 16), rng.choice(PACK_FLAGS))
    elif shape == "unpack":  # in (off, s0, s1), out (off, s0, s1), in sizes 4, out sizes 2, flags
        args = (buf("in"), v(), v(32), v(3), buf("out"), v(), v(8), v(3), v(), v(), v(4), v(4),
                v(8), v(8), rng.choice(PACK_FLAGS))
    else:  # query_tile_sizes2d
        args = (v(), v(), rng.choice(QUERY_FLAGS))
    return name, args, notes


def _tile_child(name: str, args: tuple, mem_limit: int) -> dict:
    resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))
    resource.setrlimit(resource.RLIMIT_CPU, (TILE_CPU_S, TILE_CPU_S + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    from runtime_support.errors import VMError
    from runtime_support.modules.vmvx import VmvxModule

    try:
        getattr(VmvxModule(), name.replace(".", "_"))(*args)
        return {"class": "ok"}
    except VMError as e:
        text = str(e)
        if not text.isprintable() or "\n" in text or f"vmvx.{name}" not in text:
            return {"class": "bad_message", "detail": text[:300]}
        return {"class": "vm_error", "detail": text[:160]}
    except MemoryError as e:
        return {"class": "memory", "detail": f"MemoryError: {str(e)[:200]}{_where(e)}"}
    except BaseException as e:  # noqa: BLE001 - the point: any other exception is a bug
        return {"class": "traceback", "detail": f"{type(e).__name__}: {str(e)[:200]}{_where(e)}"}


def _where(e: BaseException) -> str:
    import traceback

    tb = [f for f in traceback.extract_tb(e.__traceback__) if "runtime_support" in f.filename]
    return f" at {Path(tb[-1].filename).name}:{tb[-1].lineno} {tb[-1].name}" if tb else ""


def run_tile(index: int, base_seed: int) -> dict:
    rng = random.Random(f"{base_seed}:tile:{index}")
    name, args, notes = tile_call(rng)
    with open("/proc/self/status") as f:
        vm = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:")), 1 << 30)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = _tile_child(name, args, vm + TILE_EXTRA_AS)
        except BaseException as e:  # noqa: BLE001
            out = {"class": "traceback", "detail": type(e).__name__}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    deadline = time.monotonic() + TILE_WALL_S
    while time.monotonic() < deadline:
        done, status, _ = os.wait4(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.001)
    else:
        os.kill(pid, signal.SIGKILL)
        os.wait4(pid, 0)
        os.close(r)
        return {"class": "hang", "id": f"tile:{index}", "mutations": notes, "detail": f"over {TILE_WALL_S}s wall"}
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        out = {"class": "hang" if sig == signal.SIGXCPU else f"crash:{signal.Signals(sig).name}"}
    else:
        try:
            out = json.loads(data)
        except ValueError:
            # Gone without a report: killed for memory where an allocation failed hard.
            out = {"class": "memory" if os.WEXITSTATUS(status) else f"crash:exit{os.WEXITSTATUS(status)}"}
    out["id"] = f"tile:{index}"
    out["mutations"] = notes
    return out


# -- driver ---------------------------------------------------------------------------------


def worker(family: str, seed_paths: list[Path], start: int, count: int, base_seed: int):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    import numpy  # noqa: F401  (imported once, before the children fork)

    import runtime_support.modules.vmvx_ukernels  # noqa: F401

    if family == "tile":
        for i in range(start, start + count):
            yield run_tile(i, base_seed)
        return
    seeds: dict[Path, NestedSeed] = {}
    with tempfile.TemporaryDirectory(prefix="pyree-fuzz-vmvx-") as tmp:
        for i in range(start, start + count):
            p = seed_paths[(i // fuzz.RUN) % len(seed_paths)]
            if p not in seeds:
                seeds.clear()
                seeds[p] = NestedSeed(p, p.read_bytes())
            yield run_nested(seeds[p], i, base_seed, Path(tmp))


def fuzz_vmvx(seed_paths, nested: int, tile: int, jobs: int = 2, base_seed: int = 0,
              batch: int = 250, progress=None, out: str | None = None) -> dict:
    """Runs `nested` mutated executables and `tile` hostile calls in batches, `jobs` worker
    processes at a time; returns the report (rewritten to `out` after every batch)."""
    t0 = time.monotonic()
    tally = Tally(is_bug)
    done = {"nested": 0, "tile": 0}
    pending = [("nested", s, min(batch, nested - s)) for s in range(0, nested, batch)]
    tile_batch = batch * 8
    pending += [("tile", s, min(tile_batch, tile - s)) for s in range(0, tile, tile_batch)]
    running = []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))

    def report() -> dict:
        return {"nested": nested, "tile": tile, "done": done, "base_seed": base_seed,
                "seconds": round(time.monotonic() - t0, 1), **tally.fields()}

    with tempfile.TemporaryDirectory(prefix="pyree-fuzz-vmvx-seeds-") as tmp:
        seeds_file = Path(tmp) / "seeds.json"
        seeds_file.write_text(json.dumps([str(p) for p in seed_paths]))
        while pending or running:
            while pending and len(running) < jobs:
                fam, s, n = pending.pop(0)
                cmd = [sys.executable, "-m", "tests.fuzz_vmvx", "--worker", fam, "--seeds-file",
                       str(seeds_file), "--start", str(s), "--count", str(n), "--base-seed", str(base_seed)]
                running.append((subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                 cwd=str(REPO), env=env), fam, s, n))
            proc, fam, s, n = running.pop(0)
            stdout, err = proc.communicate()
            results = [json.loads(line) for line in stdout.decode().splitlines() if line.startswith("{")]
            if proc.returncode != 0 or len(results) != n:
                results.append({"class": "worker_died", "id": f"{fam} batch {s}+{n}",
                                "detail": err.decode()[-800:], "mutations": []})
            for r in results:
                r["class"] = fuzz.final_class(r) if fam == "nested" else r["class"]
                kinds = [m.split(" ")[0].split("@")[0] for m in r["mutations"]]
                if fam == "tile":
                    kinds = [m for m in r["mutations"] if m.startswith("op ")][:1]
                tally.add(r, kinds or [fam])
            done[fam] += n
            if progress:
                progress(done, tally.counts)
            if out:
                Path(out).write_text(json.dumps(report(), indent=1))
    return report()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz_vmvx", description=__doc__.split("\n")[0])
    ap.add_argument("--nested", type=int, default=500, help="mutated executables")
    ap.add_argument("--tile", type=int, default=5000, help="hostile vmvx calls")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--base-seed", type=int, default=0)
    ap.add_argument("--seeds", nargs="*", help="VMVX-built vmfbs (default: compiled from the corpus)")
    ap.add_argument("--out")
    ap.add_argument("--replay", help="nested:SEEDFILE:INDEX or tile:INDEX")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--seeds-file", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        paths = [Path(p) for p in json.loads(Path(a.seeds_file).read_text())]
        for r in worker(a.worker, paths, a.start, a.count, a.base_seed):
            print(json.dumps(r), flush=True)
        return 0
    if a.replay:
        fam, _, rest = a.replay.partition(":")
        if fam == "tile":
            rng = random.Random(f"{a.base_seed}:tile:{int(rest)}")
            name, args, notes = tile_call(rng)
            print(name, [a if not hasattr(a, "length") else f"<buffer {a.length}{' ro' if a.readonly else ''}>"
                         for a in args], notes)
            r = run_tile(int(rest), a.base_seed)
        else:
            file, _, index = rest.rpartition(":")
            with tempfile.TemporaryDirectory() as tmp:
                r = run_nested(NestedSeed(Path(file), Path(file).read_bytes()), int(index), a.base_seed, Path(tmp))
            r["class"] = fuzz.final_class(r)
        print(json.dumps(r, indent=1))
        return 0
    seeds = [Path(p) for p in a.seeds] if a.seeds else build_seeds(
        Path(tempfile.gettempdir()) / "pyree-fuzz-vmvx-seeds")

    def progress(done, counts):
        print(f"{done} {counts}", file=sys.stderr, flush=True)

    report = fuzz_vmvx(seeds, a.nested, a.tile, a.jobs, a.base_seed, a.batch, progress, a.out)
    print(json.dumps({k: report[k] for k in ("nested", "tile", "seconds", "counts", "bug_count")}, indent=1))
    for b in report["bugs"][:20]:
        print(json.dumps(b), file=sys.stderr)
    return 1 if report["bug_count"] else 0


if __name__ == "__main__":
    sys.exit(main())
