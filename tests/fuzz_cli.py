"""Grammar-aware fuzzing of pyree-run's command-line and `--input` parsers.

    python -m tests.fuzz_cli --inputs 100000 --jobs 2 [--out report.json]
    python -m tests.fuzz_cli --replay INDEX        (one input, its outcome and its text)

Each input is chosen by its index alone (random.Random(f"{base_seed}:{index}")), so any
input replays. Four families, each mutated along its grammar:

* flags:    command lines (`--input=...`, repeated, abbreviated, two-token, unknown,
            `--`, junk bytes, huge values);
* flagfile: flagfiles (self-inclusion, A->B->A cycles, deep nesting, binary junk, NULs,
            CRLF, huge lines, missing files, a folder, /dev/zero);
* spec:     `--input` SPECs (dims: huge, hex, octal, negative, empty; element types;
            separators; numbers: hex, huge ints, inf/nan, junk suffixes, unicode;
            `@file`, `+file`, `*file.npy`, `&SPEC`, `(null)`; splats, count mismatches);
* npy:      .npy files (magic, version, header length, header dict: shape with huge,
            negative, hex dims, descr, fortran order; truncated data).

Each input goes through the entry points pyree-run uses, in process: for command lines
`run_cli.parse_command_line` then `io_specs.parse_inputs` over the inputs (types from a
random calling convention, or guessed as pyree-run guesses them); SPECs and npy files
through `parse_inputs`. Inputs run in forked children, a batch each, under an
address-space limit and a per-input alarm. Outcome classes:

    parsed      flags and inputs parsed
    rejected    the clean error path: a SpecError (pyree-run prints `CODE; message`,
                exit 1) or a usage error (one line on stderr, exit 2)
    traceback   any other exception (a bug)
    multiline   a usage error of more than one line (a bug)
    hang        over the per-input alarm (a bug)
    memory      a MemoryError that escaped the clean path (a bug)
    crash:<sig> the child died of a signal (a bug)
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import select
import signal
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
for _folder in (REPO, REPO / "tests" / "support"):  # (the runtime; fuzz_tally in tests/support)
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from fuzz_tally import Tally  # noqa: E402

BUG_CLASSES = ("traceback", "multiline", "hang", "memory")
INPUT_ALARM_S = 10
CHILD_EXTRA_AS = 1 << 30  # address space a batch child may add to its parent's
FAMILIES = ("flags", "flagfile", "spec", "npy")
MUTATIONS = {
    "flags": ("flag_repeat", "flag_abbrev", "flag_two_token", "flag_unknown", "flag_value",
              "flag_junk", "flag_huge", "flag_dashdash"),
    "flagfile": ("ff_self", "ff_cycle", "ff_deep", "ff_binary", "ff_nul", "ff_crlf",
                 "ff_huge_line", "ff_missing", "ff_dir", "ff_devzero"),
    "spec": ("spec_dims", "spec_type", "spec_sep", "spec_number", "spec_hex", "spec_huge_int",
             "spec_unicode", "spec_file", "spec_count", "spec_prefix"),
    "npy": ("npy_shape", "npy_descr", "npy_fortran", "npy_magic", "npy_version",
            "npy_header_len", "npy_truncate", "npy_junk"),
}

TYPES = ("f32", "f16", "bf16", "f64", "i1", "i8", "i16", "i32", "i64", "si8", "ui8", "ui16",
         "ui32", "ui64", "si64", "cf64", "*16", "f8E4M3FN", "f8E8M0FNU", "f4E2M1FN", "i4",
         "x", "f", "i0", "i256", "bf8", "f17", "", "F32", "i3")
NUMBERS = ("0", "1", "-1", "+5", "1.5", ".5", "5.", "1e3", "1e-50", "1e400", "inf", "-inf",
           "nan", "nan(0x12)", "0x10", "0X1p-3", "010", "08", "0xg", "255", "256", "-129",
           "2147483648", "4294967296", "9223372036854775807", "18446744073709551616",
           "1" * 40, "16777217", "65520", "1_0", "١", "1e", "e1", "-", "ff", "00ff",
           "3.4028235e38", "true", "(null)")
DIMS = ("0", "1", "2", "3", "4", "010", "0X10", "08", "-1", "-0", "+2", " 2", "2abc",
        "99999999999", "4294967296", "9223372036854775807", "9223372036854775808",
        "18446744073709551615", "99999999999999999999", "0" * 32 + "1", "", "x", "１",
        "4611686018427387904", "2305843009213693952")
SEPARATORS = (" ", ",", "  ", "\t", "[", "]", ", ", "][", "\n", ";", "\x00")
UNICODE = ("é", "١", "１", "\u2028", "\ud800", "\x85", "💥", "\u200b", "\x00")
FLAG_NAMES = ("--input", "--output", "--function", "--device", "--module", "--parameters",
              "--expected_output", "--equality_mode", "--expected_f32_threshold",
              "--expected_rtol", "--output_max_element_count", "--print_max_element_count",
              "--print_statistics", "--flagfile", "--task_topology_max_group_count",
              "--help", "--version")


# -- generation -----------------------------------------------------------------------------


def _number(rng: random.Random) -> str:
    k = rng.randrange(5)
    if k == 0:
        return rng.choice(NUMBERS)
    if k == 1:
        return str(rng.randint(-(2 ** rng.randrange(1, 80)), 2 ** rng.randrange(1, 80)))
    if k == 2:
        return f"{rng.uniform(-1e6, 1e6):.{rng.randrange(0, 12)}g}"
    if k == 3:
        return hex(rng.getrandbits(rng.randrange(1, 70)))
    return rng.choice(NUMBERS) + rng.choice(("", "abc", "x", ".", "e", "(", "é"))


def _spec(rng: random.Random, kinds: list[str], files: dict) -> str:
    """A `--input` SPEC, `[SHAPEx]TYPE[=DATA]` mostly, mutated along its grammar."""
    rank = rng.randrange(4)
    dims = [str(rng.randrange(4)) for _ in range(rank)]
    etype = rng.choice(TYPES[:16])
    count = int(np.prod([int(d) for d in dims])) if dims else 1
    values = [_number(rng) if rng.random() < 0.2 else str(rng.randrange(-3, 9)) for _ in range(count)]
    sep = " "
    prefix = ""
    for _ in range(rng.randrange(1, 4)):
        kind = rng.choice(MUTATIONS["spec"])
        kinds.append(kind)
        if kind == "spec_dims":
            if dims or rng.random() < 0.5:
                dims.insert(rng.randrange(len(dims) + 1), rng.choice(DIMS))
        elif kind == "spec_type":
            etype = rng.choice(TYPES)
        elif kind == "spec_sep":
            sep = rng.choice(SEPARATORS)
        elif kind == "spec_number":
            if values:
                values[rng.randrange(len(values))] = _number(rng)
            else:
                values = [_number(rng)]
        elif kind == "spec_hex":
            values = ["".join(rng.choice("0123456789abcdefABCDEFxg") for _ in range(rng.randrange(1, 9)))
                      for _ in values or [0]]
        elif kind == "spec_huge_int":
            values = values or ["0"]
            values[rng.randrange(len(values))] = str(rng.getrandbits(rng.randrange(60, 400)))
        elif kind == "spec_unicode":
            values = values or ["1"]
            i = rng.randrange(len(values))
            values[i] = values[i] + rng.choice(UNICODE)
        elif kind == "spec_count":
            values = values[: rng.randrange(len(values) + 1)] if rng.random() < 0.5 else values + ["1"] * rng.randrange(1, 4)
            if rng.random() < 0.3:
                values = [values[0] if values else "1"]  # a splat
        elif kind == "spec_file":
            name = f"raw{len(files)}.bin"
            files[name] = rng.randbytes(rng.randrange(0, 64))
            values = [rng.choice("@+") + name]
        elif kind == "spec_prefix":
            prefix = rng.choice(("&", "(null)", "@", "+", "*", '"', "(ignored)", " "))
    head = "x".join(dims + [etype]) if dims else etype
    if prefix in ("(null)", "(ignored)"):
        return prefix
    data = sep.join(values)
    text = head if rng.random() < 0.1 else f"{head}={data}"
    return prefix + text


def _npy_bytes(rng: random.Random, kinds: list[str]) -> bytes:
    shape = tuple(rng.randrange(4) for _ in range(rng.randrange(3)))
    dtype = np.dtype(rng.choice(("<f4", "<f2", "<i8", "|u1", "|b1", "<c8", "<f8", "|V3")))
    shape_text = repr(shape)
    descr, fortran, magic, version = repr(dtype.str), "False", b"\x93NUMPY", b"\x01\x00"
    body_len = int(np.prod(shape)) * dtype.itemsize
    body = rng.randbytes(body_len)
    junk = ""
    header_len = None
    for _ in range(rng.randrange(1, 3)):
        kind = rng.choice(MUTATIONS["npy"])
        kinds.append(kind)
        if kind == "npy_shape":
            dims = [rng.choice(DIMS + ("0x10", "-5", "2.0", "16L", "10**100", "True")) for _ in range(rng.randrange(1, 4))]
            shape_text = rng.choice(("({},)", "({})", "[{}]", "{}")).format(", ".join(d or "0" for d in dims))
        elif kind == "npy_descr":
            descr = rng.choice(("'>f4'", "'<U3'", "'|O'", "'<f16'", "'xyz'", "3", "[('a', '<f4')]", "'<m8'", "'<M8[s]'", "''"))
        elif kind == "npy_fortran":
            fortran = rng.choice(("True", "1", "'no'", "None"))
        elif kind == "npy_magic":
            magic = rng.randbytes(6)
        elif kind == "npy_version":
            version = bytes([rng.randrange(5), rng.randrange(3)])
        elif kind == "npy_header_len":
            header_len = rng.choice((0, 1, 65535, 4294967295, rng.randrange(1000)))
        elif kind == "npy_truncate":
            body = body[: rng.randrange(len(body) + 1)]
        elif kind == "npy_junk":
            junk = rng.choice(("{", "}}", "'shape': (1,),", "\x00", "é", "(" * 200, "1" * 5000))
    header = "{'descr': %s, 'fortran_order': %s, 'shape': %s, }%s" % (descr, fortran, shape_text, junk)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    hb = header.encode("utf-8", "surrogatepass")
    width = 2 if version[0] == 1 else 4
    n = len(hb) if header_len is None else header_len
    return magic + version + (n % (1 << (8 * width))).to_bytes(width, "little") + hb + body + (body if rng.random() < 0.2 else b"")


def _flag(rng: random.Random, files: dict, kinds: list[str]) -> str:
    name = rng.choice(FLAG_NAMES)
    if name in ("--input", "--expected_output"):
        return f"{name}={_spec(rng, kinds, files)}"
    if name == "--flagfile":
        return f"--flagfile=ff{rng.randrange(3)}.txt"
    return f"{name}={_number(rng) if rng.random() < 0.5 else rng.choice(('-', '@o.npy', 'local', 'x', ''))}"


def _argv(rng: random.Random, kinds: list[str], files: dict) -> list[str]:
    argv = ["pkg"] + [_flag(rng, files, kinds) for _ in range(rng.randrange(1, 6))]
    for _ in range(rng.randrange(1, 3)):
        kind = rng.choice(MUTATIONS["flags"])
        kinds.append(kind)
        i = rng.randrange(len(argv) + 1)
        if kind == "flag_repeat":
            argv += [argv[-1]] * rng.randrange(2, 2000)
        elif kind == "flag_abbrev":
            argv.insert(i, rng.choice(FLAG_NAMES)[: rng.randrange(3, 8)] + "=1")
        elif kind == "flag_two_token":
            argv[i:i] = [rng.choice(FLAG_NAMES), rng.choice(("1", "-1", "--input=1", "4xf32=1", ""))]
        elif kind == "flag_unknown":
            argv.insert(i, rng.choice(("--bogus", "-x", "--", "---", "--=", "-", "--input==")))
        elif kind == "flag_value":
            argv.insert(i, rng.choice(FLAG_NAMES) + "=" + _number(rng))
        elif kind == "flag_junk":
            argv.insert(i, rng.randbytes(rng.randrange(1, 40)).decode("utf-8", "surrogateescape"))
        elif kind == "flag_huge":
            argv.insert(i, rng.choice(FLAG_NAMES) + "=" + "9" * rng.randrange(1000, 200_000))
        elif kind == "flag_dashdash":
            argv.insert(i, "--")
    return argv


def _flagfiles(rng: random.Random, kinds: list[str], files: dict) -> list[str]:
    """Flagfiles ff0..ff2 (some including one another) and the command line using them."""
    for k in range(3):
        lines = [_flag(rng, files, kinds) for _ in range(rng.randrange(0, 6))]
        files[f"ff{k}.txt"] = "\n".join(lines).encode("utf-8", "surrogatepass")
    argv = ["pkg", "--flagfile=ff0.txt"]
    for _ in range(rng.randrange(1, 3)):
        kind = rng.choice(MUTATIONS["flagfile"])
        kinds.append(kind)
        k = f"ff{rng.randrange(3)}.txt"
        if kind == "ff_self":
            files[k] += f"\n--flagfile={k}\n".encode()
        elif kind == "ff_cycle":
            files["ff0.txt"] += b"\n--flagfile=ff1.txt\n"
            files["ff1.txt"] += b"\n--flagfile ff0.txt\n" if rng.random() < 0.5 else b"\n--flagfile=ff0.txt\n"
        elif kind == "ff_deep":
            for d in range(40):
                files[f"deep{d}.txt"] = f"--flagfile=deep{d + 1}.txt\n".encode()
            files["deep40.txt"] = b"--input=1\n"
            files[k] += b"\n--flagfile=deep0.txt\n"
        elif kind == "ff_binary":
            files[k] += rng.randbytes(rng.randrange(1, 300))
        elif kind == "ff_nul":
            files[k] += b"\n--input=@a\x00b.npy\n--flagfile=x\x00y\n"
        elif kind == "ff_crlf":
            files[k] = files[k].replace(b"\n", rng.choice((b"\r\n", b"\r", b"\x0b", b"\x85")))
        elif kind == "ff_huge_line":
            files[k] += b"\n--input=" + b"1 " * rng.randrange(10_000, 300_000) + b"\n"
        elif kind == "ff_missing":
            argv.append("--flagfile=missing.txt")
        elif kind == "ff_dir":
            argv.append("--flagfile=.")
        elif kind == "ff_devzero":
            argv.append("--flagfile=/dev/zero")
    return argv


def generate(index: int, base_seed: int = 0) -> dict:
    """Input `index`: its family, mutation kinds, files and command line or SPECs."""
    rng = random.Random(f"{base_seed}:{index}")
    family = FAMILIES[index % len(FAMILIES)]
    kinds: list[str] = []
    files: dict[str, bytes] = {}
    item = {"index": index, "family": family, "kinds": kinds, "files": files}
    if family == "flags":
        item["argv"] = _argv(rng, kinds, files)
    elif family == "flagfile":
        item["argv"] = _flagfiles(rng, kinds, files)
    elif family == "spec":
        item["specs"] = [_spec(rng, kinds, files) for _ in range(rng.randrange(1, 4))]
    else:
        files["a.npy"] = _npy_bytes(rng, kinds)
        if rng.random() < 0.3:
            files["a.npy"] += _npy_bytes(rng, kinds)
        item["specs"] = [rng.choice(("@a.npy", "+a.npy", "*a.npy")) for _ in range(rng.randrange(1, 3))]
    item["types"] = rng.choice((None, ["ref"] * 4, ["ref", "i32", "f32", "i64", "f64"]))
    return item


# -- running one input ----------------------------------------------------------------------


class _Timeout(BaseException):
    """The per-input alarm (a BaseException: no `except Exception` in the parsers eats it)."""


def _alarm(signum, frame):
    raise _Timeout()


def _parse_inputs(specs, types):
    from runtime_support.tools import run_cli
    from runtime_support.tools.io_specs import parse_inputs

    return parse_inputs(run_cli._per_rank(specs) or [], types, run_cli.guess_arg_type)


def run_one(item: dict, workdir: Path) -> dict:
    """Runs one generated input in this process (cwd: `workdir`, its files written
    there); returns {"index", "class", "detail"}."""
    from runtime_support.tools import run_cli
    from runtime_support.tools.io_specs import SpecError

    for name, data in item["files"].items():
        (workdir / name).write_bytes(data)
    old = os.getcwd()
    os.chdir(workdir)
    err = io.StringIO()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(INPUT_ALARM_S)
    try:
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            specs = item.get("specs")
            if "argv" in item:
                args = run_cli.parse_command_line(item["argv"], sys.stderr)
                if isinstance(args, int):
                    lines = err.getvalue().splitlines()
                    if args == 2 and len(lines) != 1:
                        return _result(item, "multiline", err.getvalue()[:300])
                    return _result(item, "rejected" if args else "parsed", err.getvalue()[:200])
                run_cli.parse_parameters(args.parameters)
                specs = args.input
            _parse_inputs(specs, item["types"])
            return _result(item, "parsed", "")
    except SpecError as e:
        return _result(item, "rejected", str(e)[:200])
    except _Timeout:
        return _result(item, "hang", "")
    except MemoryError:
        return _result(item, "memory", traceback.format_exc(limit=-3)[-600:])
    except Exception as e:  # noqa: BLE001 - the harness's finding
        return _result(item, "traceback", f"{type(e).__name__}: {e}"[:300] + "\n"
                       + traceback.format_exc(limit=-3)[-800:])
    finally:
        signal.alarm(0)
        os.chdir(old)
        for name in item["files"]:
            (workdir / name).unlink(missing_ok=True)


def _result(item: dict, cls: str, detail: str) -> dict:
    return {"index": item["index"], "class": cls, "family": item["family"],
            "kinds": sorted(set(item["kinds"])), "detail": detail}


# -- batches in forked children -------------------------------------------------------------


def _batch_child(start: int, stop: int, base_seed: int, wfd: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    vm = int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (vm + CHILD_EXTRA_AS, hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with tempfile.TemporaryDirectory(prefix="pyree-fuzz-cli-") as tmp:
        with os.fdopen(wfd, "w") as out:
            for i in range(start, stop):
                r = run_one(generate(i, base_seed), Path(tmp))
                out.write(json.dumps(r) + "\n")
                out.flush()


def run_batch(start: int, count: int, base_seed: int = 0) -> tuple[list[dict], int]:
    """Inputs [start, start+count) in forked children (a new one after a death); returns
    (results, peak child RSS in KiB)."""
    from runtime_support.tools import io_specs, run_cli  # noqa: F401 - imported once, before forks

    results: list[dict] = []
    peak = 0
    i, stop = start, start + count
    while i < stop:
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            code = 0
            try:
                _batch_child(i, stop, base_seed, wfd)
            except BaseException:  # noqa: BLE001 - a harness failure: exit 3, said below
                traceback.print_exc()
                code = 3
            finally:
                os._exit(code)
        os.close(wfd)
        buf, killed = b"", False
        while True:
            ready, _, _ = select.select([rfd], [], [], INPUT_ALARM_S * 3)
            if not ready:  # stuck where the alarm cannot reach (native code)
                os.kill(pid, signal.SIGKILL)
                killed = True
                break
            chunk = os.read(rfd, 1 << 16)
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                results.append(json.loads(line))
                i = results[-1]["index"] + 1
        os.close(rfd)
        _, status, usage = os.wait4(pid, 0)
        peak = max(peak, usage.ru_maxrss)
        if i < stop:  # the child ended before input i was done
            item = generate(i, base_seed)
            cls = "hang" if killed else f"crash:{os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit:{os.WEXITSTATUS(status)}"
            results.append(_result(item, cls, ""))
            i += 1
    return results, peak


# -- driver ---------------------------------------------------------------------------------


def is_bug(cls: str) -> bool:
    return cls in BUG_CLASSES or cls.startswith(("crash", "exit"))


def fuzz(inputs: int, jobs: int = 2, base_seed: int = 0, batch: int = 500, progress=None,
         out: str | None = None) -> dict:
    """Runs `inputs` inputs over `jobs` worker processes; returns the report (rewritten
    to `out` after every batch)."""
    import multiprocessing

    t0 = time.monotonic()
    tally = Tally(is_bug)
    peak = 0
    done = 0
    batches = [(s, min(batch, inputs - s), base_seed) for s in range(0, inputs, batch)]
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        for results, batch_peak in pool.map(_run_batch_args, batches):
            peak = max(peak, batch_peak)
            for r in results:
                tally.add(r, r["kinds"])
            done += len(results)
            report = {
                "inputs": inputs, "done": done, "seconds": round(time.monotonic() - t0, 1),
                "peak_child_rss_mib": round(peak / 1024, 1), **tally.fields(),
                "replay": "python -m tests.fuzz_cli --replay INDEX",
            }
            if progress:
                progress(done, tally.counts)
            if out:
                Path(out).write_text(json.dumps(report, indent=1))
    return report


def _run_batch_args(args):
    return run_batch(*args)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz_cli", description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=500, help="inputs per forked child")
    ap.add_argument("--base-seed", type=int, default=0)
    ap.add_argument("--out", help="write the JSON report here")
    ap.add_argument("--replay", type=int, help="INDEX: run one input, print it and its outcome")
    a = ap.parse_args(argv)
    if a.replay is not None:
        item = generate(a.replay, a.base_seed)
        results, _ = run_batch(a.replay, 1, a.base_seed)
        shown = {k: v for k, v in item.items() if k != "files"}
        shown["files"] = {k: v[:300].decode("latin-1") for k, v in item["files"].items()}
        for key in ("argv", "specs"):
            if key in shown:
                shown[key] = [s[:300] for s in shown[key]]
        print(json.dumps({"input": shown, "outcome": results[0]}, indent=1))
        return 0

    def progress(done, counts):
        print(f"{done}/{a.inputs} {counts}", file=sys.stderr, flush=True)

    report = fuzz(a.inputs, a.jobs, a.base_seed, a.batch, progress, a.out)
    summary = {k: report[k] for k in ("inputs", "seconds", "peak_child_rss_mib", "counts", "bug_count")}
    print(json.dumps(summary, indent=1))
    return 1 if report["bug_count"] else 0


if __name__ == "__main__":
    sys.exit(main())
