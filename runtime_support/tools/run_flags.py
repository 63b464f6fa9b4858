"""`pyree-run`'s command line: its flags (`build_parser`), `--flagfile=FILE` expansion
(`expand_flagfiles`), iree-run-module's reading of flag values (`iree_flag_values`: C
atoi/atof numbers, quoted strings, IREE's runtime knobs dropped) and an argparse parse in
time linear in the number of flags (`parse_args_linear`). run_cli.parse_command_line puts
them together; what the flags then do is run_cli.py's.
"""

from __future__ import annotations

import argparse
import os
import re

from runtime_support.cache.package_cache import pyree_version
from runtime_support.tools.io_format import DEFAULT_MAX_ELEMENT_COUNT


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2), not usage + error."""

    def error(self, message: str):
        message = " ".join(message.splitlines())  # (arguments may hold line breaks)
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from runtime_support.api.context import LOCAL_DEVICES

    p = OneLineArgumentParser(
        prog="pyree-run",
        description="Run an export of a pyree-translated package (or a .vmfb, translated "
        "into a cache on first use) like iree-run-module: same flags, same output.",
        epilog=f"devices: {', '.join(LOCAL_DEVICES)}, cuda, cuda:N (a GPU through pycuda: "
        "pip install 'pyree[cuda]'). --flagfile=FILE reads one flag per line "
        "(# starts a comment).",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {pyree_version()}")
    p.add_argument(
        "package_dir",
        metavar="PACKAGE_DIR",
        nargs="?",
        help="the translated package to run (after any --module= packages)",
    )
    p.add_argument(
        "--module",
        action="append",
        default=[],
        metavar="PACKAGE_DIR",
        help="a package to load first, in order; its exports serve as imports of the "
        "ones after it; without PACKAGE_DIR the last --module= is the one run",
    )
    p.add_argument(
        "--function",
        default=None,
        metavar="NAME",
        help="the export to run, by its VM name (may hold `.`); may be left out when the "
        "module has one export not starting with `__` and without `$`",
    )
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="SPEC",
        help="an argument, in order: a scalar (`5`, `1.5`), `[SHAPEx]TYPE=VALUES` "
        "(`2x2xi32=1 2 3 4`, `4xbf16=1 2 3 4`), `TYPE=@raw.bin`, `@file.npy` (its first "
        "array; `+file.npy` the next one, `*file.npy` all that are left), `&SPEC` (the "
        "view's !hal.buffer) or `(null)`; `{rank}` in a path is the MPI rank under mpiexec",
    )
    p.add_argument(
        "--device",
        action="append",
        default=[],
        help="local (threaded workgroups; default), local-task (the same), local-sync "
        "(one thread), cuda or cuda:N (GPU N; needs pycuda and a CUDA-built module); "
        "repeated for a program compiled for several devices, in order",
    )
    p.add_argument(
        "--parameters",
        action="append",
        default=[],
        metavar="[SCOPE=]FILE",
        help="a parameter archive (.irpa, .safetensors, .gguf), optionally under a scope",
    )
    p.add_argument(
        "--output",
        action="append",
        default=None,
        metavar="MODE",
        help="per result, in order: `-` prints it, `` (empty) drops it, `@f.npy`/`@f.bin` "
        "writes it, `+f.npy`/`+f.bin` appends it; `{rank}` in a path is the MPI rank",
    )
    p.add_argument(
        "--expected_output",
        action="append",
        default=[],
        metavar="SPEC",
        help="an expected result, in --input syntax (`(ignored)` skips one); compares "
        "instead of printing and exits 1 on a mismatch, as iree-run-module does",
    )
    p.add_argument(
        "--equality_mode",
        choices=("approximate", "exact"),
        default="approximate",
        help="how --expected_output compares floats: approximate (|a-e| <= atol + "
        "rtol*|e|, NaN equals NaN) or exact (bytes)",
    )
    for t, default in (("f16", 0.001), ("f32", 0.0001), ("f64", 0.0001), ("bf16", 0.01)):
        p.add_argument(
            f"--expected_{t}_threshold",
            type=float,
            default=default,
            metavar="ATOL",
            help=f"absolute tolerance for {t} in approximate mode (default {default})",
        )
    p.add_argument(
        "--expected_rtol",
        type=float,
        default=1e-5,
        metavar="RTOL",
        help="relative tolerance for floats in approximate mode (default 1e-05)",
    )
    p.add_argument(
        "--output_max_element_count",
        "--print_max_element_count",
        dest="max_count",
        type=int,
        default=DEFAULT_MAX_ELEMENT_COUNT,
        metavar="N",
        help="print at most N elements of each result, then `...` (default 1024)",
    )
    p.add_argument(
        "--print_statistics",
        action="store_true",
        help="after the call, print per-dispatch statistics to stderr: executable export "
        "name, count, total and mean time (off by default; costs nothing when off)",
    )
    return p


def parse_args_linear(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """`parser.parse_args(argv)`, in time linear in len(argv): argparse rescans what is
    left of the command line at every option (quadratic: 30,000 flags took 25 s), so the
    exact `--name=value` forms are settled here in one pass and argparse sees a bounded
    command line. Repeated flags (`append`) are collected in order; of a single-valued
    flag argparse sees the last value (the one it would keep) and any earlier one it
    would reject (so its error is the same); a flag without a value once. A flag also
    given another way (`--input X`, an abbreviation `--inp=X`) is left to argparse."""
    actions = {s: a for a in parser._actions for s in a.option_strings if s.startswith("--")}
    end = argv.index("--") if "--" in argv else len(argv)
    own = _flags_settled_here(actions, argv[:end])
    pulled: dict[str, list[str]] = {}
    keep_at: dict[str, int] = {}  # single-valued flag -> the occurrence argparse sees
    drop: set[int] = set()
    for i, arg in enumerate(argv[:end]):
        name, eq, value = arg.partition("=")
        action = actions.get(name)
        if action is None or action.dest not in own:
            continue
        if eq and isinstance(action, argparse._AppendAction):
            pulled.setdefault(action.dest, []).append(value)
            drop.add(i)
        elif (eq and _argparse_accepts(action, value)) or (not eq and action.nargs == 0):
            if action.dest in keep_at:
                drop.add(i if not eq else keep_at[action.dest])  # (store_true: the first)
            if eq or action.dest not in keep_at:
                keep_at[action.dest] = i
    kept = [arg for i, arg in enumerate(argv) if i not in drop]
    args = parser.parse_args(kept)
    for dest, values in pulled.items():
        setattr(args, dest, values)
    return args


def _flags_settled_here(actions: dict, argv: list[str]) -> set[str]:
    """The dests of the flags whose every occurrence in argv is an exact option string:
    `--name=value` (or a bare flag taking no value)."""
    dests = {a.dest for a in actions.values()}
    for arg in argv:
        if not arg.startswith("--"):
            continue
        name, eq, _ = arg.partition("=")
        action = actions.get(name)
        if action is not None and (eq or action.nargs == 0):
            continue
        dests -= {a.dest for s, a in actions.items() if s.startswith(name)}
    return dests


def _argparse_accepts(action: argparse.Action, value: str) -> bool:
    """Would argparse take `value` for this single-valued flag (type, choices)?"""
    if not isinstance(action, argparse._StoreAction):
        return False
    try:
        converted = action.type(value) if callable(action.type) else value
    except (TypeError, ValueError, ArithmeticError):
        return False
    return action.choices is None or converted in action.choices


# Bounds on what --flagfile reads: a file (a device such as /dev/zero never ends), all the
# files of one command line together (a file included several times over is read each
# time), and how deeply files include one another.
FLAGFILE_MAX_BYTES = 256 << 20  # (a 4M-element --input line is some 32 MiB)
FLAGFILE_MAX_TOTAL_BYTES = 512 << 20
FLAGFILE_MAX_DEPTH = 32
_READ_CHUNK = 1 << 20


class FlagfileError(Exception):
    """A flagfile pyree-run will not expand (cycle, too large, too deep): a usage error."""


def _read_flagfile(path: str, budget: list[int]) -> str:
    """FILE's text, read in bounded chunks, at most FLAGFILE_MAX_BYTES and what is left of
    `budget[0]` (which it spends). Bytes that are not UTF-8 pass through as on a command
    line (surrogateescape), as iree-run-module takes them."""
    limit = min(FLAGFILE_MAX_BYTES, budget[0])
    data = bytearray()
    with open(path, "rb") as f:
        while chunk := f.read(_READ_CHUNK):
            if len(data) + len(chunk) > limit:
                raise FlagfileError(f"{path}: larger than {limit} bytes")
            data += chunk
    budget[0] -= len(data)
    return data.decode("utf-8", "surrogateescape")


def _flagfile_lines(text: str) -> list[str]:
    """The flags of a flagfile's text: one per line (universal newlines, as text files
    read), trimmed; blank lines and `#` comments dropped."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return [x for x in (line.strip() for line in lines) if x and not x.startswith("#")]


def expand_flagfiles(argv: list[str], _chain: tuple = (), _budget=None) -> list[str]:
    """`--flagfile=FILE` (or `--flagfile FILE`) replaced by the flags in FILE, one per
    line; blank lines and lines starting with `#` are skipped (iree's flagfile format).
    A file including itself (directly or through others), nesting deeper than
    FLAGFILE_MAX_DEPTH or text beyond the byte limits is a FlagfileError (iree-run-module
    recurses until its stack overflows); OSError when a file cannot be read."""
    budget = [FLAGFILE_MAX_TOTAL_BYTES] if _budget is None else _budget
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        path = None
        if arg.startswith("--flagfile="):
            path = arg.split("=", 1)[1]
        elif arg == "--flagfile" and i + 1 < len(argv):
            i += 1
            path = argv[i]
        if path is None:
            out.append(arg)
        else:
            out += _expand_one(path, _chain, budget)
        i += 1
    return out


def _expand_one(path: str, chain: tuple, budget: list[int]) -> list[str]:
    """The flags of flagfile `path` included through `chain` (the real paths of the
    files including it, outermost first), its own includes expanded."""
    real = os.path.realpath(path)
    if real in chain:
        cycle = " -> ".join(os.path.basename(p) for p in chain[chain.index(real):] + (real,))
        raise FlagfileError(f"{path}: includes itself ({cycle})")
    if len(chain) >= FLAGFILE_MAX_DEPTH:
        raise FlagfileError(f"{path}: nested more than {FLAGFILE_MAX_DEPTH} deep")
    lines = _flagfile_lines(_read_flagfile(path, budget))
    return expand_flagfiles(lines, chain + (real,), budget)


# iree-run-module's flags by how its flag library reads their values (`--name=value`,
# name and value trimmed): strings lose one pair of surrounding double quotes, numbers are
# C atoi/atof (the longest numeric prefix, else 0), a bool is true for ``, `true`, `1`.
_IREE_STRING_FLAGS = frozenset({"function", "equality_mode"})
_IREE_INT_FLAGS = frozenset({"output_max_element_count"})
_IREE_FLOAT_FLAGS = frozenset(
    {"expected_f16_threshold", "expected_f32_threshold", "expected_f64_threshold",
     "expected_bf16_threshold", "expected_rtol"}
)
_IREE_BOOL_FLAGS = frozenset({"print_statistics"})
_C_INT = re.compile(r"\s*([+-]?[0-9]+)")
_C_FLOAT = re.compile(
    r"\s*([+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:infinity|inf|nan)))"
)


def _c_atol(text: str) -> int:
    """C atol: the longest integer prefix, saturated to int64 (0 when there is none);
    digits past int64 are not converted (Python limits int() of long texts)."""
    m = _C_INT.match(text)
    if not m:
        return 0
    sign, digits = m.group(1)[0] in "+-" and m.group(1)[0], m.group(1).lstrip("+-").lstrip("0")
    if len(digits) > 19:
        return -(2**63) if sign == "-" else 2**63 - 1
    number = int(m.group(1))
    return max(min(number, 2**63 - 1), -(2**63))


# iree-run-module runtime knobs that change how IREE's own runtime works, never what a
# program computes or what the tool prints: accepted and ignored. (--print_device_statistics
# reports IREE's device-side counters, which the local devices leave empty: it prints
# nothing there.)
_IREE_RUNTIME_KNOBS = re.compile(
    r"(task|vulkan|hip|cuda|device_profiling|device_capture|device_replay)_\w+"
    r"|trace_execution|device_allocator|device_lead_allocator|module_mode|parameter_mode"
    r"|print_device_statistics"
)


def iree_flag_values(argv: list[str]) -> list[str]:
    """`--name=value` arguments as iree-run-module's flag parser reads them (see above);
    `--equality_mode` other than `approximate` is `exact`, as there; IREE's runtime knobs
    (`--task_topology_max_group_count=2`, `--device_allocator=caching`...) dropped.
    Anything else (positional arguments, `--name value` forms, pyree's own flags)
    passes unchanged."""
    out = []
    for arg in argv:
        text = arg.strip()
        if text.startswith("--") and _IREE_RUNTIME_KNOBS.fullmatch(
            text[2:].partition("=")[0].strip()
        ):
            continue
        if not text.startswith("--") or "=" not in text:
            out.append(arg)
            continue
        name, _, value = text[2:].partition("=")
        name, value = name.strip(), value.strip()
        if name in _IREE_STRING_FLAGS and len(value) > 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        if name == "equality_mode" and value != "approximate":
            value = "exact"
        elif name in _IREE_INT_FLAGS:
            number = _c_atol(value)
            value = str((number + 2**31) % 2**32 - 2**31)  # (int) of a long, as atoi
        elif name in _IREE_FLOAT_FLAGS:
            m = _C_FLOAT.match(value)
            value = repr(float(m.group(1))) if m else "0.0"
        elif name in _IREE_BOOL_FLAGS:
            if value in ("", "true", "1"):
                out.append(f"--{name}")
            continue
        out.append(f"--{name}={value}")
    return out
