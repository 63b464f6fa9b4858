"""Structure-aware fuzzing of the parameter-archive readers (.irpa, .safetensors, .gguf).

    python -m tests.fuzz_params --inputs 100000 --jobs 2 [--out report.json]
    python -m tests.fuzz_params --replay INDEX [--base-seed N]

Input i mutates one of three small valid archives built here with the project's writers
(format i % 3), with 1-3 mutations drawn from `random.Random(f"{base_seed}:{i}")`, so any
input replays from its index alone. Mutation kinds (the first word of each note):

    header   magic, version, header size, flags, alignment value
    count    entry / tensor / kv counts, array element counts
    length   string, name, segment, entry and header lengths
    offset   segment, name, data and tensor offsets
    dims     GGUF dimension counts and dimensions
    type     entry types, ggml types, metadata value and array element types
    json     safetensors header: offsets (huge, negative, float, text), entries that are
             not objects, repeated keys, deep nesting, ints of thousands of digits
    key      control codes and invalid UTF-8 in keys
    byte     a random byte
    truncate the file cut short
    sparse   the file grown by truncate() to 1-256 MiB of never-written zeros, and a
             length or count field set to claim (about) all of it

Each input is written to a file and opened through `build_providers` (what
`load(parameters=...)` calls); what loads is read back (first and last bytes of each entry).
A worker process per batch forks one child that runs the batch's inputs in turn, with its
address space limited to (its own size + the file + 512 MiB), a CPU limit and a per-input
wall alarm; a child that dies is replaced and its input classified. Classes:

    loaded     opened and every entry read back within its file
    rejected   VMError (a clean refusal)
    traceback  any other exception (a bug)
    hang       over the per-input wall alarm or the CPU limit (a bug)
    memory     MemoryError, or killed for memory (a bug)
    crash:SIG  killed by a signal (a bug)

The report gives counts per class and per mutation kind, the replayable ids of every bug,
the time taken and the children's peak RSS.
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
for _folder in (REPO / "tests", REPO / "tests" / "support"):  # (fuzz_tally: tests/support)
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from fuzz_tally import Tally  # noqa: E402

BUG_CLASSES = ("traceback", "hang", "memory")
KINDS = ("header", "count", "length", "offset", "dims", "type", "json", "key", "byte",
         "truncate", "sparse")
FORMATS = ("irpa", "safetensors", "gguf")
WALL_S = 10  # per input
CPU_S = 600  # per child (a batch)
HEADROOM = 512 << 20  # address space beyond the child's own and the file's mapping
MAX_SPARSE = 256 << 20
EVIL_KEYS = ("w\x1b[2J\r\n", "\x00", "\u2028", "k\x9b31m", "")


# -- seeds and their fields -----------------------------------------------------------------


def seeds() -> dict[str, bytes]:
    """One small valid archive per format, covering each format's structures."""
    import numpy as np

    from runtime_support.params import Splat, irpa_bytes
    from runtime_support.params.gguf import gguf_bytes
    from runtime_support.params.safetensors import safetensors_bytes

    w = np.arange(4, dtype=np.float32)
    k = np.array([3, -7, 11], np.int32)
    strings = struct.pack("<IQ", 8, 2) + struct.pack("<Q", 1) + b"x" + struct.pack("<Q", 2) + b"yz"
    return {
        "irpa": irpa_bytes({"w": w, "s": Splat.of(np.float32(0.5), 4), "k": k},
                           metadata={"w": b"meta"}),
        "safetensors": safetensors_bytes({"w": w, "k": k}, {"format": "pt"}),
        "gguf": gguf_bytes(
            {"w": w.reshape(2, 2), "k": k},
            alignment=64,
            kv={"name": (8, struct.pack("<Q", 2) + b"hi"),
                "arr": (9, struct.pack("<IQ", 2, 3) + struct.pack("<3H", 1, 2, 3)),
                "toks": (9, strings)},
        ),
    }


def irpa_fields(d: bytes) -> list[tuple[str, int, int]]:
    """(kind, offset, width) of every field of an (unchained) IRPA archive."""
    out = [("header", 0, 4), ("header", 4, 2), ("header", 6, 2), ("length", 8, 8),
           ("offset", 16, 8), ("header", 24, 8), ("count", 32, 8)]
    out += [("offset" if i % 2 == 0 else "length", 40 + 8 * i, 8) for i in range(6)]
    count, entry_offset = struct.unpack_from("<QQ", d, 32)
    pos = entry_offset
    for _ in range(count):
        size, etype = struct.unpack_from("<QI", d, pos)
        out += [("length", pos, 8), ("type", pos + 8, 4), ("header", pos + 12, 8),
                ("offset", pos + 20, 8), ("length", pos + 28, 8),
                ("offset", pos + 36, 8), ("length", pos + 44, 8), ("header", pos + 52, 8)]
        if etype == 1:
            out += [("length", pos + 60, 8), ("length", pos + 84, 1)]
        elif etype == 2:
            out += [("offset", pos + 60, 8), ("length", pos + 68, 8)]
        pos += -(-size // 16) * 16
    return out


def gguf_fields(d: bytes) -> list[tuple[str, int, int]]:
    out = [("header", 0, 4), ("header", 4, 4), ("count", 8, 8), ("count", 16, 8)]
    tensors, kvs = struct.unpack_from("<QQ", d, 8)
    pos = 24

    def string(pos: int) -> int:
        out.append(("length", pos, 8))
        return pos + 8 + struct.unpack_from("<Q", d, pos)[0]

    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    for _ in range(kvs):
        key_at = pos
        pos = string(pos)
        vtype = struct.unpack_from("<I", d, pos)[0]
        out.append(("type", pos, 4))
        pos += 4
        if d[key_at + 8 : pos - 4] == b"general.alignment":
            out.append(("header", pos, 4))
        if vtype == 8:
            pos = string(pos)
        elif vtype == 9:
            etype, n = struct.unpack_from("<IQ", d, pos)
            out += [("type", pos, 4), ("count", pos + 4, 8)]
            pos += 12
            for _ in range(n):
                pos = string(pos) if etype == 8 else pos + sizes[etype]
        else:
            pos += sizes[vtype]
    for _ in range(tensors):
        pos = string(pos)
        n = struct.unpack_from("<I", d, pos)[0]
        out += [("dims", pos, 4)] + [("dims", pos + 4 + 8 * j, 8) for j in range(n)]
        pos += 4 + 8 * n
        out += [("type", pos, 4), ("offset", pos + 4, 8)]
        pos += 12
    return out


def safetensors_fields(d: bytes) -> list[tuple[str, int, int]]:
    return [("length", 0, 8)]


FIELDS = {"irpa": irpa_fields, "safetensors": safetensors_fields, "gguf": gguf_fields}


# -- mutations ----------------------------------------------------------------------------------


def _edge(rng: random.Random, width: int, old: int, size: int) -> int:
    top = (1 << (8 * width)) - 1
    value = rng.choice((0, 1, 2, 4, 5, 17, 255, 1 << 16, 1 << 18, (1 << 18) + 1, 2**31,
                        2**32 - 1, 2**63, top, size, size - 1, size + 1, old + 1, old - 1,
                        old * 2, old + 8, rng.randrange(top + 1)))
    return value & top


def _put(buf: bytearray, pos: int, width: int, value: int) -> None:
    buf[pos : pos + width] = value.to_bytes(width, "little")


def _json_mutation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A structural change to a safetensors header, re-encoded with a correct length."""
    (n,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    names = [k for k in header if k != "__metadata__"]
    key = rng.choice(names)
    what = rng.choice(("offsets", "offsets", "not_object", "duplicate", "deep", "digits",
                       "drop", "array"))
    text = None
    if what == "offsets":
        value = rng.choice((2**64, -1, 1.5, "0", None, 10**30, [0], [0, 1, 2], [2**63, 2**64]))
        if isinstance(value, list):
            header[key]["data_offsets"] = value
        else:
            header[key]["data_offsets"][rng.randrange(2)] = value
    elif what == "not_object":
        header[key] = rng.choice((3, "x", None, [1, 2]))
    elif what == "drop":
        del header[key]["data_offsets"]
    elif what == "array":
        header = [header]
    elif what == "duplicate":
        item = json.dumps({key: header[key]})[1:-1]
        text = json.dumps(header)[:-1] + ", " + item.replace("[0,", "[1,") + "}"
    elif what == "deep":
        depth = rng.choice((100, 5000, 200_000))
        header[key]["shape"] = "@@"
        text = json.dumps(header).replace('"@@"', "[" * depth + "]" * depth)
    elif what == "digits":
        digits = rng.choice((30, 4000, 5000, 100_000))
        header[key]["data_offsets"][1] = "@@"
        text = json.dumps(header).replace('"@@"', "9" * digits)
    raw = (text if text is not None else json.dumps(header)).encode()
    return struct.pack("<Q", len(raw)) + raw + body, f"json {what} {key}"


def _key_mutation(fmt: str, rng: random.Random) -> tuple[bytes, str]:
    """A seed-like archive whose key holds control codes or invalid UTF-8."""
    import numpy as np

    from runtime_support.params import irpa_bytes
    from runtime_support.params.gguf import gguf_bytes
    from runtime_support.params.safetensors import safetensors_bytes

    # "\udcff" is the invalid UTF-8 byte 0xff (the writers encode surrogateescape;
    # gguf_bytes does not).
    key = rng.choice(EVIL_KEYS + (() if fmt == "gguf" else ("\udcff",)))
    arrays = {key: np.arange(3, dtype=np.float32), "x": np.zeros(2, np.int8)}
    if fmt == "irpa":
        data = irpa_bytes(arrays)
    elif fmt == "gguf":
        data = gguf_bytes(arrays)
    else:
        data = safetensors_bytes(arrays)
    return data, f"key {key!r}"


def mutate(fmt: str, seed: bytes, rng: random.Random) -> tuple[bytes, int, list[str]]:
    """(bytes, sparse size or 0, notes): 1-3 mutations of `seed`."""
    buf = bytearray(seed)
    fields = FIELDS[fmt](seed)
    sparse = 0
    notes = []
    kinds = [k for k in KINDS if k != "dims" or fmt == "gguf"]
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(kinds)
        if kind == "json" and fmt != "safetensors":
            kind = "length"
        if kind == "key":
            data, note = _key_mutation(fmt, rng)
            buf = bytearray(data)
            fields = FIELDS[fmt](data)
        elif kind == "json":
            try:
                data, note = _json_mutation(bytes(buf), rng)
            except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError,
                    struct.error):
                data, note = bytes(buf), "json skipped"  # an earlier mutation broke the header
            buf = bytearray(data)
        elif not buf:  # an earlier truncate left nothing to change
            note = f"{kind} skipped"
        elif kind == "byte":
            pos = rng.randrange(len(buf))
            buf[pos] = rng.randrange(256)
            note = f"byte@{pos}"
        elif kind == "truncate":
            cut = rng.randrange(len(buf))
            del buf[cut:]
            note = f"truncate@{cut}"
        elif kind == "sparse":
            sparse = max(len(buf), int(2 ** rng.uniform(20, 28)))
            claims = [f for f in fields if f[0] in ("length", "count", "offset") and f[2] >= 4
                      and f[1] + f[2] <= len(buf)]
            note = f"sparse {sparse}"
            if claims:
                _, pos, width = rng.choice(claims)
                value = max(0, sparse - pos - rng.choice((0, 8, 16, 64, 4096))) // rng.choice(
                    (1, 1, 8, 13, 24))
                _put(buf, pos, width, value & ((1 << (8 * width)) - 1))
                note += f" claim@{pos}={value}"
        else:
            chosen = [f for f in fields if f[0] == kind and f[1] + f[2] <= len(buf)]
            if not chosen:
                chosen = [f for f in fields if f[1] + f[2] <= len(buf)] or [("byte", 0, 1)]
            _, pos, width = rng.choice(chosen)
            old = int.from_bytes(buf[pos : pos + width], "little")
            value = _edge(rng, width, old, len(buf))
            _put(buf, pos, width, value)
            note = f"{kind}@{pos}={value}"
        notes.append(note)
    return bytes(buf), sparse, notes


def make_input(index: int, base_seed: int, seed_bytes: dict[str, bytes]):
    fmt = FORMATS[index % len(FORMATS)]
    rng = random.Random(f"{base_seed}:{index}")
    data, sparse, notes = mutate(fmt, seed_bytes[fmt], rng)
    return fmt, data, sparse, notes


# -- running one input (in the forked child) ----------------------------------------------------


class _Timeout(BaseException):
    """Raised by the per-input alarm (a BaseException: no reader may swallow it)."""


def _alarm(signum, frame):
    raise _Timeout()


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))


def run_one(path: Path, data: bytes, sparse: int, base_vm: int) -> tuple[str, str]:
    """Writes and opens one input; (class, detail)."""
    import gc

    from runtime_support.errors import VMError
    from runtime_support.params import build_providers

    with open(path, "wb") as f:
        f.write(data)
        if sparse > len(data):
            f.truncate(sparse)  # never-written zeros: no disk, no memory
    size = max(sparse, len(data))
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (min(hard, base_vm + size + HEADROOM), hard))
    signal.setitimer(signal.ITIMER_REAL, WALL_S)
    try:
        providers = build_providers([("", str(path))])
        for _, entry in providers.index("").items():
            n = min(entry.length, 64)
            if len(entry.read(0, n)) != n or len(entry.read(entry.length - n, n)) != n:
                return "traceback", f"short read of {entry!r}"
            if not entry.is_splat and entry.offset + entry.length > size:
                return "traceback", f"entry past the file: {entry!r}"
        del providers
        return "loaded", ""
    except VMError as e:
        message = str(e)
        if "\n" in message or len(message) > 2000:
            return "traceback", f"VMError not one short line: {message[:300]!r}"
        return "rejected", message[:200]
    except _Timeout:
        return "hang", f"over {WALL_S} s"
    except MemoryError:
        return "memory", "MemoryError"
    except Exception as e:  # noqa: BLE001 - any other exception is what we look for
        return "traceback", f"{type(e).__name__}: {str(e)[:300]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if sparse:
            gc.collect()  # drop the big mapping before the next input's limit
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def _child(indices: list[int], base_seed: int, seed_bytes, tmp: Path, out_fd: int) -> None:
    """The forked child: runs `indices` in turn, one JSON line per input ("start" first,
    so the worker knows which input a death belongs to)."""
    signal.signal(signal.SIGALRM, _alarm)
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_S, CPU_S + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    base_vm = _vm_size()
    hard = base_vm + MAX_SPARSE + HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    out = os.fdopen(out_fd, "w", buffering=1)
    for i in indices:
        fmt, data, sparse, notes = make_input(i, base_seed, seed_bytes)
        out.write(json.dumps({"start": i}) + "\n")
        path = tmp / f"in.{fmt}"
        cls, detail = run_one(path, data, sparse, base_vm)
        path.unlink(missing_ok=True)
        out.write(json.dumps({"id": i, "format": fmt, "class": cls, "detail": detail,
                              "mutations": notes}) + "\n")
    out.close()


def run_batch(indices: list[int], base_seed: int) -> tuple[list[dict], int]:
    """Runs the inputs in forked children (a new one after a death); (results, peak
    RSS of the children in KiB)."""
    results: list[dict] = []
    todo = list(indices)
    seed_bytes = seeds()  # imports the readers once, before the children fork
    with tempfile.TemporaryDirectory(prefix="pyree-fuzz-params-") as tmp:
        while todo:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # child
                os.close(r)
                code = 0
                try:
                    _child(todo, base_seed, seed_bytes, Path(tmp), w)
                except BaseException:  # noqa: BLE001 - a harness failure, seen as a death
                    import traceback

                    traceback.print_exc()
                    code = 3
                os._exit(code)
            os.close(w)
            current = None
            with os.fdopen(r) as pipe:
                for line in pipe:
                    msg = json.loads(line)
                    if "start" in msg:
                        current = msg["start"]
                    else:
                        results.append(msg)
                        todo.remove(msg["id"])
                        current = None
            _, status = os.waitpid(pid, 0)
            if current is None:
                if todo:  # exited between inputs: a harness failure
                    raise RuntimeError(f"fuzz child exited with status {status} between inputs")
                break
            if os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                cls = {signal.SIGXCPU: "hang", signal.SIGKILL: "memory"}.get(
                    sig, f"crash:{signal.Signals(sig).name}")
            else:
                cls = f"crash:exit{os.WEXITSTATUS(status)}"
            _, _, _, notes = make_input(current, base_seed, seed_bytes)
            results.append({"id": current, "format": FORMATS[current % 3], "class": cls,
                            "detail": "child died", "mutations": notes})
            todo.remove(current)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return results, peak


# -- driving batches ------------------------------------------------------------------------------


def is_bug(cls: str) -> bool:
    return cls in BUG_CLASSES or cls.startswith("crash") or cls == "worker_died"


def fuzz(inputs: int, jobs: int = 2, base_seed: int = 0, batch: int = 2000,
         progress=None, out: str | None = None) -> dict:
    """Runs `inputs` inputs in batches, `jobs` worker processes at a time; returns the
    report (rewritten to `out` after every batch)."""
    t0 = time.monotonic()
    tally = Tally(is_bug)
    peak = 0
    done = 0
    pending = [(s, min(batch, inputs - s)) for s in range(0, inputs, batch)]
    running: list[tuple[subprocess.Popen, int, int]] = []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))

    def report() -> dict:
        return {"inputs": inputs, "done": done, "base_seed": base_seed,
                "seconds": round(time.monotonic() - t0, 1),
                "child_peak_rss_mib": round(peak / 1024, 1),
                **tally.fields()}

    while pending or running:
        while pending and len(running) < jobs:
            s, n = pending.pop(0)
            cmd = [sys.executable, "-m", "tests.fuzz_params", "--worker", "--start", str(s),
                   "--count", str(n), "--base-seed", str(base_seed)]
            running.append((subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                             cwd=str(REPO), env=env), s, n))
        proc, s, n = running.pop(0)
        stdout, err = proc.communicate()
        lines = [json.loads(line) for line in stdout.decode().splitlines() if line.startswith("{")]
        results = [r for r in lines if "id" in r]
        for r in lines:
            peak = max(peak, r.get("peak_rss_kib", 0))
        if proc.returncode != 0 or len(results) != n:
            results.append({"id": f"batch {s}+{n}", "class": "worker_died",
                            "detail": err.decode()[-800:], "mutations": []})
        for r in results:
            tally.add(r, (m.split(" ")[0].split("@")[0] for m in r["mutations"]))
        done += n
        if progress:
            progress(done, tally.counts)
        if out:
            Path(out).write_text(json.dumps(report(), indent=1))
    return report()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz_params",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=3000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=2000, help="inputs per worker process")
    ap.add_argument("--base-seed", type=int, default=0)
    ap.add_argument("--out", help="write the JSON report here")
    ap.add_argument("--replay", type=int, help="INDEX: run one input and print its outcome")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        results, peak = run_batch(list(range(a.start, a.start + a.count)), a.base_seed)
        for r in results:
            print(json.dumps(r))
        print(json.dumps({"peak_rss_kib": peak}))
        return 0
    if a.replay is not None:
        results, peak = run_batch([a.replay], a.base_seed)
        print(json.dumps({**results[0], "peak_rss_kib": peak}, indent=1))
        return 0

    def progress(done, counts):
        print(f"{done}/{a.inputs} {counts}", file=sys.stderr, flush=True)

    report = fuzz(a.inputs, a.jobs, a.base_seed, a.batch, progress, a.out)
    summary = {k: report[k] for k in ("inputs", "seconds", "child_peak_rss_mib", "counts",
                                      "bug_count")}
    print(json.dumps(summary, indent=1))
    return 1 if report["bug_count"] else 0


if __name__ == "__main__":
    sys.exit(main())
