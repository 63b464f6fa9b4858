"""Structure-aware fuzzing of the translator and the runtime with mutated corpus vmfbs.

    python -m tests.fuzz --inputs 100000 --jobs 2 [--seeds DIR_OR_FILES...] [--out report.json]

Each input is one seed vmfb with 1-3 mutations, chosen by a per-input random seed (so any
input can be replayed with `--replay SEED_FILE:INDEX`). Mutations aim at the structure:

* FlatBuffer: every position the reader bounds-checks (found by watching
  `translator.flatbuf.FlatBuffer.check` while the seed is read and its functions decoded):
  offsets, vector/string lengths, table and vtable words, scalar fields (counts, ordinals,
  sizes); set to edge values (0, -1, 2**31-1, the buffer size, +-4...);
* bytecode: bytes and 32-bit operands inside the functions' bytecode;
* embedded ELF images: the file header (program/section header offsets, counts, sizes),
  program headers (type, offset, vaddr, filesz, memsz, align), the dynamic section (tags
  and values) and relocations (offset, type, symbol). Code bytes and relocation addends
  are never touched: corrupted machine code crashes IREE as well;
* plain bytes anywhere outside the ELF images.

Every input is translated with `pyree-translate` (in-process `translator.cli.main`).
Where that succeeds, a forked child with bounded address space, CPU and wall time imports
the package, loads it and calls up to 4 exports with VM-level arguments. Outcome classes:

    rejected            translator: one-line error, exit 1 (expected for most inputs);
                        one-line warnings (e.g. an executable format pyree cannot run)
                        may come before it
    rejected_multiline  translator: a stderr line that is not a diagnostic of its own (a
                        message broken over lines by a vmfb string)
    translator_internal translator: internal error (an unexpected exception; a bug)
    load_error          runtime: VMError/LoaderError while loading (clean)
    ran                 every call returned or raised a VMError/LoaderError (clean)
    traceback           runtime: any other exception (a bug)
    hang                child over its wall or CPU time (a bug)
    unset_register      generated code read a register that has no Python local (NameError:
                        e.g. a 32-bit read of an i64's high half after a mutated operand):
                        a bug, since the translator rejects reads of a register as other
                        than what was written (translator/analyses/banks.py) and zeroes
                        registers read before any write
    register_bank       an op read as an integer a register that holds a float (TypeError
                        from generated code): a bug, since the translator rejects such
                        reads (translator/analyses/banks.py)
    generated_syntax    the translated package does not compile (e.g. nesting deeper than
                        Python allows): a code-generation bug
    dlopen_crash:<sig>  killed after an ELF mutation in a system-library build: the
                        system's dlopen (glibc) processes it, exactly as in IREE; listed
    program_timeout     over its time after bytecode-only mutations (a loop bound or
                        branch changed: IREE runs as long), or over its time where IREE's
                        runtime times out on the same file too; listed, not a bug
    crash:<signal>      child killed by a signal (a bug); every crash is also run under
                        IREE's runtime (`iree_outcome`)
    iree_crash:<signal> killed by a signal (or ended by native code: exitN), and IREE's
                        runtime does the same on the same file (e.g. a dispatch's workgroup
                        count changed: kernels trust it; ld.so exits 127 on a relocation
                        type it asserts against in a system library)
    code_crash:<signal> killed by a signal after a mutation that changes the machine code
                        kernels run (an executable segment's mapping, a relocation): as
                        with corrupted code bytes, IREE crashes too; listed, not a bug

Inputs are processed in batches by `--jobs` worker processes; the report gives the counts
per class and the replayable ids of every bug-class input.
"""

from __future__ import annotations

import argparse
import contextlib
import io
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
BUG_CLASSES = ("translator_internal", "traceback", "hang", "rejected_multiline",
               "generated_syntax", "register_bank", "unset_register")
# Classes listed with their ids but not counted as bugs (none today).
KNOWN_CLASSES: tuple[str, ...] = ()
DIAGNOSTIC = "pyree-translate: "  # how every line the translator writes on stderr begins
CALL_WALL_S = 20
CHILD_CPU_S = 15
CHILD_EXTRA_AS = 2 << 30  # address space a run may add to the worker's
MAX_EXPORTS = 4
RUN = 16  # consecutive inputs per seed
# Mutations that change the machine code a kernel runs (the bytes an executable segment
# maps, or the values relocations write): a crash after one is a crash IREE shares.
CODE_MUTATIONS = ("elf_phdr_code", "elf_reloc", "elf_dynamic_reloc")
# DT_PLTRELSZ, DT_RELA, DT_RELASZ, DT_RELAENT, DT_PLTREL, DT_JMPREL, DT_RELACOUNT.
RELOC_TAGS = (2, 7, 8, 9, 20, 23, 0x6FFFFFF9)

EDGE32 = (0, 1, 2, 3, 4, 7, 8, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF,
          0x80000000, 0xFFFFFFFF, 0xFFFFFFFC, 0xFFFFFFF8, 0x40000000, 0x1000)
EDGE64 = (0, 1, 8, 0x1000, 0x7FFFFFFF, 0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF,
          0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFF000)


# -- seed structure -------------------------------------------------------------------------


class SeedInfo:
    """Where the structure of one seed lies (absolute file positions)."""

    def __init__(self, path: Path, data: bytes) -> None:
        self.path = path
        self.data = data
        self.fb: list[tuple[int, int, str]] = []  # (pos, width, what)
        self.bytecode: tuple[int, int] = (0, 0)
        self.elf: list[dict] = []
        # System-library builds hand their ELF to the system's dlopen, as IREE does.
        self.system_dylib = b"system-elf-x86_64" in data
        self._scan_flatbuffer()
        self._scan_elf()

    def _scan_flatbuffer(self) -> None:
        from translator import flatbuf
        from translator.decoder import decode_function
        from translator.reader import read_module

        seen: dict[tuple[int, int], str] = {}
        original = flatbuf.FlatBuffer.check

        def watch(fb, pos, length, what, align=1):
            original(fb, pos, length, what, align)
            if 0 < length <= 8:
                seen.setdefault((fb.base + pos, length), what)

        flatbuf.FlatBuffer.check = watch
        try:
            module = read_module(self.data)
            for k in range(module.function_count):
                with contextlib.suppress(Exception):
                    decode_function(module, k)
        finally:
            flatbuf.FlatBuffer.check = original
        self.fb = [(p, w, what) for (p, w), what in sorted(seen.items())]
        bc = bytes(module.bytecode)
        if bc:
            at = self.data.find(bc)
            if at >= 0:
                self.bytecode = (at, len(bc))

    def _scan_elf(self) -> None:
        d = self.data
        at = d.find(b"\x7fELF")
        while at >= 0:
            info = _elf_fields(d, at)
            if info:
                self.elf.append(info)
            at = d.find(b"\x7fELF", at + 4)

    def elf_ranges(self) -> list[tuple[int, int]]:
        return [(e["base"], e["base"] + e["size"]) for e in self.elf]


def _elf_fields(d: bytes, base: int) -> dict | None:
    """Positions of the header, program header, dynamic and relocation fields of the
    ELF64 little-endian image at `base` (None if it does not parse that far)."""
    try:
        if d[base + 4] != 2 or d[base + 5] != 1:
            return None
        phoff, shoff = struct.unpack_from("<QQ", d, base + 0x20)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", d, base + 0x36)
        header = [(base + o, w) for o, w in ((0x10, 2), (0x12, 2), (0x18, 8), (0x20, 8),
                                             (0x28, 8), (0x34, 2), (0x36, 2), (0x38, 2),
                                             (0x3A, 2), (0x3C, 2), (0x3E, 2))]
        phdrs, phdrs_code, loads, dynamic = [], [], [], None
        size = 0
        for i in range(min(phnum, 64)):
            p = base + phoff + i * phentsize
            p_type, p_flags, p_offset, p_vaddr, _, p_filesz, p_memsz, _ = struct.unpack_from("<IIQQQQQQ", d, p)
            size = max(size, p_offset + p_filesz)
            fields = [(p, 4), (p + 4, 4), (p + 8, 8), (p + 16, 8), (p + 32, 8), (p + 40, 8), (p + 48, 8)]
            # Moving or resizing an executable segment changes the code bytes it maps.
            (phdrs_code if p_type == 1 and p_flags & 1 else phdrs).extend(fields)
            if p_type == 1:
                loads.append((p_vaddr, p_offset, p_filesz))
            elif p_type == 2:
                dynamic = (p_offset, p_filesz)
        size = max(size, shoff + shentsize * shnum)
        dyn_fields, dyn_reloc, relocs = [], [], []
        if dynamic:
            tags = {}
            for off in range(dynamic[0], dynamic[0] + dynamic[1], 16):
                tag, val = struct.unpack_from("<qQ", d, base + off)
                # Entries that say which relocations exist (removing one leaves pointers
                # unrelocated: the code then jumps to garbage, in IREE too).
                group = dyn_reloc if tag in RELOC_TAGS else dyn_fields
                group += [(base + off, 8), (base + off + 8, 8)]
                tags.setdefault(tag, val)
                if tag == 0:
                    break

            def file_of(vaddr):
                for v, o, n in loads:
                    if v <= vaddr < v + n:
                        return vaddr - v + o
                return None

            for t_addr, t_size, ent in ((7, 8, 24), (23, 2, 24)):  # DT_RELA, DT_JMPREL
                if t_addr in tags and t_size in tags:
                    start = file_of(tags[t_addr])
                    if start is not None:
                        for r in range(start, start + min(tags[t_size], 24 * 4096), ent):
                            relocs += [(base + r, 8), (base + r + 8, 4), (base + r + 12, 4)]
        end = min(len(d), base + max(size, 64))
        return {"base": base, "size": end - base, "header": header, "phdr": phdrs,
                "phdr_code": phdrs_code, "dynamic_reloc": dyn_reloc,
                "dynamic": dyn_fields, "reloc": relocs}
    except (struct.error, IndexError):
        return None


# -- mutations ------------------------------------------------------------------------------


def _edge(rng: random.Random, width: int, old: int) -> int:
    mask = (1 << (8 * width)) - 1
    choice = rng.random()
    if choice < 0.5:
        v = rng.choice(EDGE64 if width == 8 else EDGE32)
    elif choice < 0.8:
        v = old + rng.choice((-8, -4, -2, -1, 1, 2, 4, 8, 64, 4096))
    elif choice < 0.9:
        v = old * rng.choice((2, 16, 256))
    else:
        v = rng.getrandbits(8 * width)
    return v & mask


def _write(buf: bytearray, pos: int, width: int, rng: random.Random) -> int:
    fmt = {1: "<B", 2: "<H", 4: "<I", 8: "<Q"}[width]
    old = struct.unpack_from(fmt, buf, pos)[0]
    new = _edge(rng, width, old)
    struct.pack_into(fmt, buf, pos, new)
    return new


def mutate(seed: SeedInfo, rng: random.Random) -> tuple[bytes, list[str]]:
    """1-3 structure-aware mutations of the seed; returns (bytes, descriptions)."""
    buf = bytearray(seed.data)
    notes = []
    kinds = ["fb"] * 5 + ["bytecode"] * 3 + ["bytes"]
    if seed.elf:
        kinds += ["elf_header", "elf_phdr", "elf_phdr", "elf_phdr_code", "elf_dynamic",
                  "elf_dynamic_reloc", "elf_reloc", "elf_reloc"]
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        kind = rng.choice(kinds)
        if kind == "fb" and seed.fb:
            pos, width, what = rng.choice(seed.fb)
            width = width if width in (1, 2, 4, 8) else 1
            new = _write(buf, pos, width, rng)
            notes.append(f"fb {what!r}@{pos}={new:#x}")
        elif kind == "bytecode" and seed.bytecode[1]:
            start, n = seed.bytecode
            pos = start + rng.randrange(n)
            if rng.random() < 0.5 or pos + 4 > start + n:
                buf[pos] = rng.getrandbits(8)
                notes.append(f"bytecode byte@{pos}={buf[pos]:#x}")
            else:
                new = _write(buf, pos, 4, rng)
                notes.append(f"bytecode i32@{pos}={new:#x}")
        elif kind.startswith("elf_"):
            elf = rng.choice(seed.elf)
            fields = elf[kind[4:]]
            if not fields:
                continue
            if kind == "elf_reloc" and rng.random() < 0.5:
                # The type byte alone (r_info's low 32 bits): unknown and wrong-width kinds.
                pos = rng.choice([p for p, w in fields if w == 4] or [fields[0][0]])
                buf[pos] = rng.choice((0, 1, 2, 5, 6, 7, 8, 10, 11, 16, 37, 42, 0xFF))
                notes.append(f"elf_reloc_type@{pos - elf['base']}(+{elf['base']})={buf[pos]:#x}")
                continue
            pos, width = rng.choice(fields)
            new = _write(buf, pos, width, rng)
            notes.append(f"{kind}@{pos - elf['base']}(+{elf['base']})={new:#x}")
        else:
            ranges = seed.elf_ranges()
            for _ in range(16):
                pos = rng.randrange(len(buf))
                if not any(a <= pos < b for a, b in ranges):
                    buf[pos] = rng.getrandbits(8)
                    notes.append(f"byte@{pos}={buf[pos]:#x}")
                    break
    return bytes(buf), notes


# -- running one input ----------------------------------------------------------------------


def _translate(path: Path, out: Path) -> tuple[str, str]:
    from translator.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main([str(path), "-o", str(out), "--name", "m", "--no-format"])
        except BaseException as e:  # noqa: BLE001 - main must not raise
            return "translator_internal", f"main raised {type(e).__name__}: {e}"
    return classify_translation(rc, err.getvalue())


def classify_translation(rc: int, text: str) -> tuple[str, str]:
    """(class, detail) of one `pyree-translate` run from its exit status and stderr."""
    if rc == 0:
        return "ok", ""
    if "internal error" in text:
        if "_Timeout" in text:  # our alarm, caught by the CLI's catch-all
            return "hang", "translator over its time"
        return "translator_internal", text.strip()[:500]
    # Each diagnostic is one line (a warning, say, then the error): any other line is the
    # continuation of a message that a vmfb string broke.
    if any(not line.startswith(DIAGNOSTIC) for line in text.splitlines()):
        return "rejected_multiline", text[:500]
    return "rejected", ""


def _vm_args(ctx, pkg, name: str):
    """VM-level arguments for export `name` from its cconv and declaration, or None if
    it takes spans."""
    from runtime_support.api import abi

    cconv = pkg.CCONVS.get(name, "0v_v")
    args_part = cconv[1:].split("_", 1)[0]
    if "C" in args_part:
        return None
    codes = [c for c in args_part if c != "v"]
    decl = None
    with contextlib.suppress(Exception):
        decl = abi.parse_declaration(pkg.EXPORTS.get(name), name)
    types = [t for _, t in decl.arguments] if decl and len(decl.arguments) == len(codes) else [None] * len(codes)
    import numpy as np

    from runtime_support.api.abi import TensorType
    from runtime_support.hal import element_types

    out = []
    for code, ty in zip(codes, types):
        if code in "iI":
            out.append(2)
        elif code in "fF":
            out.append(1.5)
        elif isinstance(ty, TensorType) and ty.element_type is not None:
            shape = tuple(4 if d is None else min(d, 64) for d in ty.shape)
            if any(d != s for d, s in zip(ty.shape, shape) if d is not None):
                out.append(None)
                continue
            try:
                dtype = element_types.to_numpy_dtype(ty.element_type)
                arr = np.ones(shape, dtype=dtype if ty.element != "i1" else np.bool_)
                out.append(abi.to_buffer_view(arr, "arg", ty, ctx.device))
            except Exception:  # noqa: BLE001 - odd element types: pass null
                out.append(None)
        else:
            out.append(None)
    return out


def harness_numpy_args(cconv: str, declaration, name: str):
    """The arguments `_vm_args` gives an export, as numpy values for IREE's runtime (None
    where one cannot be built: spans, refs that are not tensors)."""
    import numpy as np

    from runtime_support.api import abi
    from runtime_support.api.abi import TensorType
    from runtime_support.hal import element_types

    args_part = (cconv or "0v_v")[1:].split("_", 1)[0]
    if "C" in args_part:
        return None
    codes = [c for c in args_part if c != "v"]
    decl = None
    with contextlib.suppress(Exception):
        decl = abi.parse_declaration(declaration, name)
    types = [t for _, t in decl.arguments] if decl and len(decl.arguments) == len(codes) else [None] * len(codes)
    scalars = {"i": np.int32(2), "I": np.int64(2), "f": np.float32(1.5), "F": np.float64(1.5)}
    out = []
    for code, ty in zip(codes, types):
        if code in scalars:
            out.append(scalars[code])
        elif isinstance(ty, TensorType) and ty.element_type is not None:
            shape = tuple(4 if d is None else min(d, 64) for d in ty.shape)
            if any(d != s for d, s in zip(ty.shape, shape) if d is not None):
                return None
            try:
                dtype = element_types.to_numpy_dtype(ty.element_type)
            except Exception:  # noqa: BLE001 - odd element types
                return None
            out.append(np.ones(shape, dtype=dtype if ty.element != "i1" else np.bool_))
        else:
            return None
    return out


def _child_run(pkg_dir: Path, mem_limit: int) -> dict:
    """In the forked child: import, load, call; returns the outcome (never raises)."""
    resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_S, CHILD_CPU_S + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    import importlib.util

    from runtime_support.errors import LoaderError, VMError

    clean = (VMError, LoaderError)
    calls = errors = 0
    try:
        spec = importlib.util.spec_from_file_location(
            "m", pkg_dir / "__init__.py", submodule_search_locations=[str(pkg_dir)]
        )
        pkg = importlib.util.module_from_spec(spec)
        sys.modules["m"] = pkg
        spec.loader.exec_module(pkg)
        try:
            ctx = pkg.load(device="local-sync")
        except clean as e:
            return {"class": "load_error", "detail": str(e)[:200]}
        for name in list(ctx.exports)[:MAX_EXPORTS]:
            if name.startswith("__"):
                continue
            args = _vm_args(ctx, pkg, name)
            if args is None:
                continue
            try:
                calls += 1
                ctx.call_vm(name, *args)
            except clean:
                errors += 1
        return {"class": "ran", "calls": calls, "vm_errors": errors}
    except BaseException as e:  # noqa: BLE001 - the point: any other exception is a bug
        import traceback

        tb = traceback.extract_tb(e.__traceback__)
        where = f"{tb[-1].filename}:{tb[-1].lineno} {tb[-1].name}" if tb else ""
        cls = "traceback"
        generated = bool(tb) and Path(tb[-1].filename) == pkg_dir / "__init__.py"
        from_generated = any(Path(f.filename) == pkg_dir / "__init__.py" for f in tb)
        if isinstance(e, NameError) and generated:  # UnboundLocalError included
            cls = "unset_register"
        elif isinstance(e, TypeError) and from_generated and "'float'" in str(e) and "'int'" in str(e):
            cls = "register_bank"
        elif isinstance(e, SyntaxError) and Path(e.filename or "").name == "__init__.py":
            cls = "generated_syntax"
        return {"class": cls, "detail": f"{type(e).__name__}: {str(e)[:200]} at {where}"}


def _run_forked(pkg_dir: Path) -> dict:
    """Runs the package in a forked child. A child over its wall time that used little
    CPU was starved by a loaded machine, not hung: it is run once more with a longer
    wall limit (the CPU limit still catches real loops)."""
    out = _run_forked_once(pkg_dir, CALL_WALL_S)
    if out["class"] == "hang" and out.get("cpu_s", CHILD_CPU_S) < CHILD_CPU_S / 3:
        out = _run_forked_once(pkg_dir, CALL_WALL_S * 6)
    return out


def _run_forked_once(pkg_dir: Path, wall_s: float) -> dict:
    with open("/proc/self/status") as f:
        vm = next((int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:")), 1 << 30)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            out = _child_run(pkg_dir, vm + CHILD_EXTRA_AS)
        except BaseException as e:  # noqa: BLE001
            out = {"class": "traceback", "detail": f"{type(e).__name__}"}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    deadline = time.monotonic() + wall_s
    status = None
    while time.monotonic() < deadline:
        done, status, _ = os.wait4(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.005)
    else:
        os.kill(pid, signal.SIGKILL)
        _, _, usage = os.wait4(pid, 0)
        os.close(r)
        cpu = round(usage.ru_utime + usage.ru_stime, 1)
        return {"class": "hang", "detail": f"over {wall_s}s wall ({cpu}s CPU)", "cpu_s": cpu}
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            return {"class": "hang", "detail": f"over {CHILD_CPU_S}s CPU"}
        return {"class": f"crash:{signal.Signals(sig).name}"}
    try:
        return json.loads(data)
    except ValueError:
        # Gone without a report: native code ended the process (exit, abort...).
        return {"class": f"crash:exit{os.WEXITSTATUS(status)}"}


def run_input(seed: SeedInfo, index: int, base_seed: int, tmp: Path) -> dict:
    rng = random.Random(f"{base_seed}:{index}")
    data, notes = mutate(seed, rng)
    path = tmp / "in.vmfb"
    path.write_bytes(data)
    out = tmp / "out"
    # A hung translation is a bug too: SIGALRM interrupts it.
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CALL_WALL_S)
    try:
        cls, detail = _translate(path, out)
    except _Timeout:
        cls, detail = "hang", "translator over its time"
    finally:
        signal.alarm(0)
    result = {"class": cls}
    if cls == "ok":
        result = _run_forked(out / "m")
        if result["class"].startswith("crash:") or result["class"] == "hang":
            result["iree"] = iree_outcome(path)
    elif detail:
        result["detail"] = detail
    result["id"] = f"{seed.path}:{index}"
    if seed.system_dylib:
        result["system_dylib"] = True
    result["mutations"] = notes
    return result


_IREE_RUN = """
import sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {support!r})
from iree_oracle import IreeSession, export_signatures
from abi_inputs import inputs_for_signature
vmfb = sys.argv[1]
session = IreeSession(vmfb)
from fuzz import harness_numpy_args
from translator.reader import read_module
module = read_module(open(vmfb, "rb").read())
# First the arguments pyree's run was given (_vm_args), so a mutated kernel constant
# indexes the same buffers; then abi_inputs' values.
for e in [e for e in module.exports if not e.local_name.startswith("__")][:{max_exports}]:
    sig = module.signatures[e.internal_ordinal]
    args = harness_numpy_args(sig.calling_convention, sig.attr("iree.abi.declaration"), e.local_name)
    if args is None:
        continue
    try:
        session.call(e.local_name, args, session.signature(e.local_name))
    except Exception:
        pass
for name, sig in list(export_signatures(vmfb).items())[:{max_exports}]:
    if name.startswith("__"):
        continue
    try:
        session.call(name, inputs_for_signature(sig, seed=0), session.signature(name))
    except Exception:
        pass
print("IREE-DONE")
"""


def iree_outcome(vmfb: Path) -> str:
    """What IREE's runtime does with the same file (asked after a crash or a hang):
    "crash:SIG" or "crash:exitN" when it crashes too, "hang", else "ok" / "unavailable"."""
    script = _IREE_RUN.format(tests=str(REPO / "tests"), support=str(REPO / "tests" / "support"), max_exports=MAX_EXPORTS + 2)
    try:
        res = subprocess.run([sys.executable, "-c", script, str(vmfb)], capture_output=True,
                             text=True, timeout=CALL_WALL_S * 3,
                             preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
    except subprocess.TimeoutExpired:
        return "hang"
    if res.returncode < 0:
        return f"crash:{signal.Signals(-res.returncode).name}"
    if "IREE-DONE" in res.stdout:
        return "ok"
    if res.returncode > 0 and "Traceback" not in res.stderr:
        # Ended without a Python error: native code (e.g. ld.so failing an assertion on a
        # mutated relocation of a system library: exit 127) ended the process.
        return f"crash:exit{res.returncode}"
    return "unavailable"


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()


# -- driver ---------------------------------------------------------------------------------


def default_seeds() -> list[Path]:
    cache = os.environ.get("PYREE_TEST_CACHE") or str(REPO / ".pyree-cache" / "vmfb")
    return sorted(Path(cache).glob("*.vmfb"))


def worker(seed_paths: list[Path], start: int, count: int, base_seed: int) -> list[dict]:
    """Runs inputs [start, start+count): input i mutates seed (i // RUN) % len(seeds), so
    a batch scans few seeds."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    seeds: dict[Path, SeedInfo] = {}
    results = []
    with tempfile.TemporaryDirectory(prefix="pyree-fuzz-") as tmp:
        for i in range(start, start + count):
            p = seed_paths[(i // RUN) % len(seed_paths)]
            if p not in seeds:
                seeds.clear()
                seeds[p] = SeedInfo(p, p.read_bytes())
            results.append(run_input(seeds[p], i, base_seed, Path(tmp)))
    return results


def usable_seeds(paths: list[Path], max_bytes: int) -> tuple[list[Path], dict[str, str]]:
    """(seeds, rejected seeds with why): a seed must be small enough to fuzz quickly and
    translate unmodified; one whose own translation fails (a translator bug on a valid
    module, reported once here) would only repeat that failure in every mutant."""
    out, rejected = [], {}
    with tempfile.TemporaryDirectory(prefix="pyree-fuzz-seed-") as tmp:
        for p in paths:
            if p.stat().st_size > max_bytes:
                continue
            signal.signal(signal.SIGALRM, _alarm)
            signal.alarm(CALL_WALL_S * 3)
            try:
                cls, detail = _translate(p, Path(tmp) / p.stem)
            except _Timeout:
                cls, detail = "hang", "translator over its time"
            finally:
                signal.alarm(0)
            if cls == "ok":
                init = Path(tmp) / p.stem / "m" / "__init__.py"
                try:
                    compile(init.read_text(), str(init), "exec")
                except SyntaxError as e:
                    cls, detail = "generated_syntax", f"{type(e).__name__}: {e}"
            if cls == "ok":
                out.append(p)
            elif cls != "rejected":
                rejected[str(p)] = f"{cls}: {detail}"[:300]
    return out, rejected


def fuzz(seed_paths, inputs: int, jobs: int, base_seed: int = 0, batch: int = 250,
         progress=None, out: str | None = None) -> dict:
    """Runs `inputs` inputs in `jobs` parallel worker processes; returns the report (and
    rewrites it to `out` after every batch, so a long run can be read while it goes)."""
    t0 = time.monotonic()
    counts: dict[str, int] = {}
    bugs: list[dict] = []
    code_crashes: list[dict] = []
    known: list[dict] = []
    by_kind: dict[str, dict[str, int]] = {}
    pending = [(s, min(batch, inputs - s)) for s in range(0, inputs, batch)]
    running: list[tuple[subprocess.Popen, int, int]] = []
    seeds_arg = json.dumps([str(p) for p in seed_paths])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = 0

    def _report():
        return _make_report(inputs, done, len(seed_paths), t0, counts, by_kind, bugs, code_crashes, known)

    with tempfile.TemporaryDirectory(prefix="pyree-fuzz-seeds-") as tmp:
        seeds_file = Path(tmp) / "seeds.json"
        seeds_file.write_text(seeds_arg)
        while pending or running:
            while pending and len(running) < jobs:
                s, n = pending.pop(0)
                cmd = [sys.executable, "-m", "tests.fuzz", "--worker", str(seeds_file),
                       "--start", str(s), "--count", str(n), "--base-seed", str(base_seed)]
                running.append((subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                 cwd=str(REPO), env=env), s, n))
            proc, s, n = running.pop(0)
            stdout, err = proc.communicate()
            lines = [json.loads(l) for l in stdout.decode().splitlines() if l.startswith("{")]
            if proc.returncode != 0 or len(lines) != n:
                lines.append({"class": "worker_died", "id": f"batch {s}+{n}",
                              "detail": err.decode()[-800:], "mutations": []})
            for r in lines:
                cls = r["class"] = final_class(r)
                counts[cls] = counts.get(cls, 0) + 1
                for m in r.get("mutations", []):
                    k = m.split(" ")[0].split("@")[0]
                    by_kind.setdefault(k, {}).setdefault(cls, 0)
                    by_kind[k][cls] += 1
                if cls in BUG_CLASSES or cls.startswith("crash") or cls == "worker_died":
                    bugs.append(r)
                elif cls.startswith(("code_crash", "dlopen_crash", "iree_crash")) or cls == "program_timeout":
                    code_crashes.append(r)
                elif cls in KNOWN_CLASSES:
                    known.append(r)
            done += n
            if progress:
                progress(done, counts)
            if out:
                Path(out).write_text(json.dumps(_report(), indent=1))
    return _report()


def final_class(r: dict) -> str:
    """The class of one input's result once what IREE does with the same file and which
    mutations it carries are taken into account."""
    cls = r["class"]
    mutations = r.get("mutations", [])
    if cls.startswith("crash:") and r.get("iree", "").startswith("crash:"):
        return "iree_" + cls  # IREE's runtime crashes on the file too
    if cls.startswith("crash:") and any(m.startswith(CODE_MUTATIONS) for m in mutations):
        return "code_" + cls  # changed code bytes: IREE crashes too
    if cls.startswith("crash:") and r.get("system_dylib") and any(m.startswith("elf_") for m in mutations):
        return "dlopen_" + cls  # the system's dlopen, as in IREE
    if cls == "hang" and "translator" not in r.get("detail", ""):
        # A mutated loop runs long in IREE too: IREE's runtime times out on the same file,
        # or only bytecode changed (a loop bound or branch; IREE may just be faster).
        if r.get("iree") == "hang" or (mutations and all(m.startswith("bytecode") for m in mutations)):
            return "program_timeout"
    return cls


def _make_report(inputs, done, seeds, t0, counts, by_kind, bugs, code_crashes, known) -> dict:
    return {
        "inputs": inputs,
        "done": done,
        "seeds": seeds,
        "seconds": round(time.monotonic() - t0, 1),
        "counts": dict(sorted(counts.items())),
        "by_mutation": by_kind,
        "bugs": bugs[:200],
        "code_crashes": code_crashes[:200],
        "known": known[:200],
        "bug_count": len(bugs),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=250, help="inputs per worker process")
    ap.add_argument("--base-seed", type=int, default=0)
    ap.add_argument("--seeds", nargs="*", help="vmfb files or folders (default: the test cache)")
    ap.add_argument("--max-seed-bytes", type=int, default=400_000)
    ap.add_argument("--out", help="write the JSON report here")
    ap.add_argument("--replay", help="SEEDFILE:INDEX: run one input and print its outcome")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        paths = [Path(p) for p in json.loads(Path(a.worker).read_text())]
        for r in worker(paths, a.start, a.count, a.base_seed):
            print(json.dumps(r), flush=True)
        return 0
    if a.replay:
        file, _, index = a.replay.rpartition(":")
        with tempfile.TemporaryDirectory() as tmp:
            r = run_input(SeedInfo(Path(file), Path(file).read_bytes()), int(index), a.base_seed, Path(tmp))
        r["class"] = final_class(r)
        print(json.dumps(r, indent=1))
        return 0
    paths: list[Path] = []
    for s in a.seeds or []:
        p = Path(s)
        paths += sorted(p.glob("*.vmfb")) if p.is_dir() else [p]
    seeds, bad_seeds = usable_seeds(paths or default_seeds(), a.max_seed_bytes)
    for path, why in bad_seeds.items():
        print(f"seed not used, its own translation fails: {path}: {why}", file=sys.stderr)
    if not seeds:
        print("no usable seed vmfbs", file=sys.stderr)
        return 2

    def progress(done, counts):
        print(f"{done}/{a.inputs} {counts}", file=sys.stderr, flush=True)

    report = fuzz(seeds, a.inputs, a.jobs, a.base_seed, a.batch, progress, a.out)
    summary = {k: report[k] for k in ("inputs", "seeds", "seconds", "counts", "bug_count")}
    print(json.dumps(summary, indent=1))
    return 1 if report["bug_count"] else 0


if __name__ == "__main__":
    sys.exit(main())
