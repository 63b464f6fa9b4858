"""Conformance runner: IREE's own e2e tests, under `iree.runtime` and translated by pyree.

    python -m tests.conformance [--src DIR] [--build embedded-elf|system-dylib|inline-dynamic|all]
                                [--filter PAT] [--negative-controls] [--fast] [-j N]

Data: `<repo>/../shared/iree-e2e` (cases.json + MLIR; see its README). With `--src DIR` every
`*.mlir` under DIR is one case compiled with the default flags. Each case is compiled with
the pinned `iree-compile` for the CPU (vmfbs cached under `.pyree-cache/conformance/`), and
every exported no-argument function is one test:

* IREE: run under `iree.runtime` (driver local-sync) with the Python check oracle
  (tests/support/iree_check_oracle.py). It passes when it returns without error and no check failed.
* pyree: translated with `translator.codegen.write_package`, loaded with
  `pkg.load(device="local-sync", modules={"check": CheckModule(...)})` and called.
  Reported as unavailable until the code generator lands.

Check calls are counted on both sides: a test that passes with zero checks proves nothing
(the compiled code skips `check.*` calls whose import is unresolved). Negative controls are
copies of tests with one randomly chosen element of one expected constant changed; they
must fail on both sides, and a case without a working control counts as a failure. The
values every check receives are also compared with IREE's bit for bit (where IREE's own
runs agree), since the e2e checks alone allow tolerances up to 5e-2.

Builds: `embedded-elf` (the cases' flags), `system-dylib` (+ `--iree-llvmcpu-link-embedded=false`),
`inline-dynamic` (+ `--iree-execution-model=inline-dynamic`; these modules import `hal_inline`
and `hal_loader`). IREE 3.13 cannot compile the suite's tensor `check.*` ops nor its
`util.unfoldable_constant`s in that model, so each test is first rewritten by
tests/support/inline_lift.py: unfoldable constants become arguments, tensor checks become extra
results. The oracle is `iree-run-module` (the Python bindings have no `hal_inline`); both
sides get the same inputs, their results must be byte-identical, and the checks are applied
to each side's results on the host (IREE's with the Python oracle's comparison, pyree's
with runtime_support's CheckModule).

Exit status: 0 when every IREE run matches cases.json's `iree_passes`, there are no
IREE/pyree mismatches and every negative control failed where it ran; 1 otherwise.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import importlib.util
import json
import math
import random
import re
import struct
import subprocess
import sys
import tempfile
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
E2E_DIR = REPO.parent / "shared" / "iree-e2e"
CACHE_DIR = REPO / ".pyree-cache" / "conformance"

# `python tests/conformance.py`, `-m tests.conformance` and pytest all find the repo's
# packages and the oracle (tests/support).
for _path in (REPO, Path(__file__).resolve().parent / "support"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from iree_tools import ensure_on_path  # noqa: E402 - after the path set-up above

ensure_on_path()  # iree-compile / iree-run-module through the installed packages

DEFAULT_BASE_FLAGS = [
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
]
DEFAULT_EXTRA_FLAGS = ["--iree-llvmcpu-target-cpu=generic"]

BUILDS: dict[str, list[str]] = {
    "embedded-elf": [],
    "system-dylib": ["--iree-llvmcpu-link-embedded=false"],
    "inline-dynamic": ["--iree-execution-model=inline-dynamic"],
    # VMVX (issue #26): the llvm-cpu backend and its flags replaced (build_flags), kernels
    # translated to Python; `vmvx-ukernels` calls the vmvx module's tile ops.
    "vmvx": ["--iree-hal-local-target-device-backends=vmvx"],
    "vmvx-ukernels": ["--iree-hal-local-target-device-backends=vmvx", "--iree-vmvx-enable-microkernels"],
}
# Builds whose flags replace the cases' CPU backend flags rather than add to them.
_REPLACES_BACKEND = ("vmvx", "vmvx-ukernels")


def build_flags(case_flags, build: str) -> list[str]:
    """The iree-compile flags of `build` for a case (its own flags, then the build's)."""
    flags = list(case_flags)
    if build in _REPLACES_BACKEND:
        flags = [
            f for f in flags
            if not f.startswith(("--iree-hal-local-target-device-backends=", "--iree-llvmcpu-"))
        ]
    return [*flags, *BUILDS[build]]
UNSUPPORTED_BUILDS: dict[str, str] = {}
LIFTED_BUILDS = ("inline-dynamic",)  # compiled from tests/support/inline_lift.py's rewrite

TRANSLATOR_UNAVAILABLE = "translator.codegen not available yet"


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    name: str  # "tosa_ops/add" (folder/stem[__variant])
    source: Path
    flags: list[str]
    functions: list[str] | None = None  # None: every no-argument export
    iree_passes: list[str] | None = None  # None: unknown (expect all)

    @property
    def folder(self) -> str:
        return self.name.split("/", 1)[0] if "/" in self.name else "."


def e2e_available(root: Path = E2E_DIR) -> bool:
    return (root / "cases.json").is_file()


def load_cases(src: Path | None = None, root: Path = E2E_DIR) -> list[Case]:
    """cases.json's compile cases, or every `*.mlir` under `src` with the default flags."""
    if src is not None:
        src = Path(src)
        base = DEFAULT_BASE_FLAGS
        manifest = root / "cases.json"
        if manifest.is_file():
            base = json.loads(manifest.read_text())["base_flags"]
        return [
            Case(
                name=path.relative_to(src).with_suffix("").as_posix(),
                source=path,
                flags=[*base, *DEFAULT_EXTRA_FLAGS],
            )
            for path in sorted(src.rglob("*.mlir"))
        ]
    manifest = json.loads((root / "cases.json").read_text())
    return [
        Case(
            name=c["name"],
            source=root / c["source"],
            flags=[*manifest["base_flags"], *c["extra_flags"]],
            functions=list(c["functions"]),
            iree_passes=list(c.get("iree_passes", c["functions"])),
        )
        for c in manifest["cases"]
    ]


def filter_cases(cases: list[Case], pattern: str | None) -> list[Case]:
    """Cases whose name matches `pattern` (a glob when it has wildcards, else a substring)."""
    if not pattern:
        return cases
    if any(ch in pattern for ch in "*?["):
        return [c for c in cases if fnmatch.fnmatch(c.name, pattern)]
    return [c for c in cases if pattern in c.name]


def fast_subset(cases: list[Case]) -> list[Case]:
    """One case per folder: the one with the smallest source (quick to compile and run)."""
    best: dict[str, Case] = {}
    for case in cases:
        size = case.source.stat().st_size
        held = best.get(case.folder)
        if held is None or size < held.source.stat().st_size:
            best[case.folder] = case
    return [best[k] for k in sorted(best)]


# --------------------------------------------------------------------------- compiling


class CompileError(Exception):
    pass


def _compiler_version() -> str:
    try:
        from iree.compiler import version  # type: ignore

        return getattr(version, "VERSION", "") or getattr(version, "PACKAGE_SUFFIX", "")
    except Exception:  # pragma: no cover - version module layout differs
        return "unknown"


def compile_source(
    text: str, flags: list[str], name: str, out_dir: Path = CACHE_DIR
) -> Path:
    """Compiles MLIR text to `out_dir/NAME-HASH.vmfb`, reusing a cached result."""
    key = hashlib.sha256(
        "\0".join([_compiler_version(), text, *flags]).encode()
    ).hexdigest()[:16]
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{name.replace('/', '__')}-{key}.vmfb"
    if out.exists():
        return out
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        src = Path(tmp) / "input.mlir"
        src.write_text(text)
        tmp_out = Path(tmp) / "out.vmfb"
        proc = subprocess.run(
            ["iree-compile", *flags, str(src), "-o", str(tmp_out)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            errors = [line for line in proc.stderr.splitlines() if "error:" in line]
            raise CompileError(
                "\n".join(errors[:3]) or proc.stderr.strip()[-2000:] or f"iree-compile rc={proc.returncode}"
            )
        tmp_out.replace(out)  # atomic: concurrent runners never see half a file
    return out


def compile_case(case: Case, build: str, cache_dir: Path = CACHE_DIR) -> Path:
    if build in LIFTED_BUILDS:
        return compile_lifted(case.source.read_text(), case, build, case.name, cache_dir)[0]
    return compile_source(
        case.source.read_text(), build_flags(case.flags, build), case.name, cache_dir / build
    )


def compile_lifted(text: str, case: Case, build: str, name: str, cache_dir: Path = CACHE_DIR):
    """(vmfb, {test: LiftedTest}, note) for a lifted build: the rewrite as is, else (when
    the compiler hits its constant-subspan limitation) without optimization barriers."""
    from inline_lift import lift

    error = None
    for barriers in (True, False):
        try:
            lifted, tests = lift(text, barriers=barriers)
        except Exception as e:  # (MLIR this compiler cannot parse: iree-compile says so too)
            raise CompileError(f"cannot parse for lifting: {str(e).splitlines()[-1]}") from None
        try:
            vmfb = compile_source(
                lifted,
                build_flags(case.flags, build),
                name + ("" if barriers else "__nobarrier"),
                cache_dir / build,
            )
        except CompileError as e:
            error = e
            continue
        return vmfb, tests, "" if barriers else "util.optimization_barrier ops dropped"
    raise error


# --------------------------------------------------------------------------- negative controls

# A check with its expected value inline (pretty and generic MLIR syntax).
_CONST_CHECK = re.compile(
    r"check\.expect_(?:almost_)?eq_const\s*\(\s*%[^,()]+,\s*dense<"
    r'|"check\.expect_(?:almost_)?eq_const"\([^)]*\)\s*<\{[^}]*?\bvalue\s*=\s*dense<'
)
# A check comparing two values: the rhs is the expected one.
_EQ_CHECK = re.compile(
    r'"?check\.expect_(?:almost_)?eq"?\s*\(\s*%[\w.#$-]+\s*,\s*(%[\w.#$-]+)\s*[,)]'
)
_CONST_DEF = (
    r"{name}\s*=\s*(?:util\.unfoldable_constant\s+|arith\.constant\s+"
    r'|"(?:util\.unfoldable_constant|arith\.constant)"\(\)\s*<\{{value\s*=\s*)dense<'
)
_NUMBER = re.compile(
    r"(?<![\w.])(?:-?0x[0-9a-fA-F]+|-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)|true|false)(?![\w.])"
)
_FUNC = re.compile(r'func\.func"?\s+(?:(?:public|private|nested)\s+)?@([\w$.-]+)|\bsym_name\s*=\s*"([^"]+)"')


@dataclass
class Mutation:
    function: str
    text: str  # the whole mutated MLIR
    description: str


def _changed_number(token: str, literal_type: str) -> str | None:
    if token == "true":
        return "false"
    if token == "false":
        return "true"
    is_float_type = re.search(r"[x<](?:f\d+|bf16|f8\w*|f4\w*)>", literal_type)
    if "0x" in token:  # a hex integer (or, in a float literal, a bit pattern: skip)
        if is_float_type:
            return None
        value = int(token, 16)
        return hex(value - 1 if value > 0 else value + 1)
    if re.fullmatch(r"-?\d+", token) and not is_float_type:
        value = int(token)
        if re.search(r"[x<]i1>", literal_type):
            return "0" if value else "1"
        return str(value - 1 if value > 0 else value + 1)
    value = float(token)
    return repr(value + 1.0 + abs(value)) if abs(value) < 64 else repr(value / 2)


def _literal_sites(text: str):
    """(check position, dense literal start) for every check whose expected value is a
    `dense<...>` literal: inline (`_const` forms) or the rhs's defining constant."""
    for m in _CONST_CHECK.finditer(text):
        yield m.start(), m.end()
    for m in _EQ_CHECK.finditer(text):
        funcs = list(_FUNC.finditer(text, 0, m.start()))
        body_start = funcs[-1].end() if funcs else 0
        pattern = re.compile(_CONST_DEF.format(name=re.escape(m.group(1))))
        defs = list(pattern.finditer(text, body_start, m.start()))
        # Only a constant used by nothing but this check: one also feeding the computation
        # (`expect_eq(copy(%x), %x)`) would change both sides.
        body_end = funcs_after.start() if (funcs_after := _FUNC.search(text, m.end())) else len(text)
        uses = re.findall(re.escape(m.group(1)) + r"(?![\w.#$-])", text[body_start:body_end])
        if defs and len(uses) == 2:
            yield m.start(), defs[-1].end()


def mutations(text: str) -> list[Mutation]:
    """Copies of the program with one randomly chosen number of one check's expected
    `dense<...>` literal changed, in source order (one per check call site)."""
    out = []
    for check_pos, start in sorted(_literal_sites(text)):
        end = text.find(">", start)  # brackets nest, no '>' inside a literal's numbers
        if end < 0 or text[start:end].lstrip().startswith('"'):  # hex blob literal: skip
            continue
        literal = text[start:end]
        type_end = text.find("\n", end)
        literal_type = text[end : type_end if type_end >= 0 else len(text)]
        funcs = list(_FUNC.finditer(text, 0, check_pos))
        # A random element of the literal (seeded by the program and the site, so a run is
        # reproducible), not always the first: a bug in any element must be caught.
        rng = random.Random(hashlib.sha256(f"{start}:{text}".encode()).digest())
        numbers = list(_NUMBER.finditer(literal))
        rng.shuffle(numbers)
        number = new = None
        for candidate in numbers:
            new = _changed_number(candidate.group(0), literal_type)
            if new is not None:
                number = candidate
                break
        if number is None or not funcs:
            continue
        pos = start + number.start()
        line = text.count("\n", 0, pos) + 1
        out.append(
            Mutation(
                function=funcs[-1].group(1) or funcs[-1].group(2),
                text=text[:pos] + new + text[pos + len(number.group(0)) :],
                description=f"line {line}: {number.group(0)} -> {new}",
            )
        )
    return out


# --------------------------------------------------------------------------- runs


@dataclass
class FunctionResult:
    name: str
    iree_ok: bool | None = None  # None: not run
    iree_checks: int = 0
    iree_error: str | None = None
    pyree_ok: bool | None = None
    pyree_checks: int = 0
    pyree_error: str | None = None
    expected_iree_pass: bool = True
    outputs_differ: bool = False  # lifted builds: result bytes not identical
    note: str = ""

    @property
    def mismatch(self) -> bool:
        if self.iree_ok is None or self.pyree_ok is None:
            return False
        return (
            self.iree_ok != self.pyree_ok
            or (self.iree_ok and self.iree_checks != self.pyree_checks)
            or self.outputs_differ
        )


@dataclass
class ControlResult:
    case: str
    function: str
    description: str
    iree_failed: bool | None = None
    pyree_failed: bool | None = None
    note: str = ""

    @property
    def ok(self) -> bool:
        """The mutant failed under the oracle (and under pyree where it ran). A case with
        no control (nothing to mutate, no mutant compiled, every mutant passed) is a
        failure of the control, not a pass: its checks are not shown to be live."""
        return self.iree_failed is True and self.pyree_failed is not False


@dataclass
class CaseResult:
    case: Case
    build: str
    functions: list[FunctionResult] = field(default_factory=list)
    compile_error: str | None = None
    unsupported: str | None = None
    control: ControlResult | None = None


def translator_available() -> tuple[bool, str]:
    try:
        from translator.codegen import write_package  # noqa: F401
    except Exception:
        return False, TRANSLATOR_UNAVAILABLE
    return True, ""


_PACKAGES: dict[Path, object] = {}


def _translated_package(vmfb_path: Path, out_root: Path):
    """Translates (once per vmfb) and imports the generated package."""
    vmfb_path = Path(vmfb_path).resolve()
    pkg = _PACKAGES.get(vmfb_path)
    if pkg is not None:
        return pkg
    from translator.codegen import write_package
    from translator.reader import read_module

    name = "m_" + re.sub(r"\W", "_", vmfb_path.stem)
    module = read_module(vmfb_path.read_bytes())
    pkg_dir = Path(write_package(module, out_root, name, format_code=False))
    init = pkg_dir / "__init__.py" if pkg_dir.is_dir() else pkg_dir
    mod_name = f"_pyree_conformance_{name}"
    spec = importlib.util.spec_from_file_location(
        mod_name, init, submodule_search_locations=[str(init.parent)]
    )
    pkg = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = pkg
    spec.loader.exec_module(pkg)
    _PACKAGES[vmfb_path] = pkg
    return pkg


def _recording_check_module():
    """pyree's CheckModule, also recording every check's operands like the IREE oracle
    (IreeCheckOracle.operands): (element type, shape, raw bytes) per view, ints."""
    from runtime_support.modules.check import CheckModule

    def key(view):
        raw = view.buffer.read(0, view.byte_length) if view is not None else None
        return (view.element_type, tuple(view.shape), raw) if view is not None else None

    class Recording(CheckModule):
        def __init__(self):
            super().__init__(raise_on_failure=False)
            self.operands: list = []

        def expect_true(self, operand):
            self.operands.append(("expect_true", int(operand) & 0xFFFFFFFF))
            return super().expect_true(operand)

        def expect_false(self, operand):
            self.operands.append(("expect_false", int(operand) & 0xFFFFFFFF))
            return super().expect_false(operand)

        def expect_all_true(self, device, operand):
            self.operands.append(("expect_all_true", key(operand)))
            return super().expect_all_true(device, operand)

        def expect_eq(self, device, lhs, rhs):
            self.operands.append(("expect_eq", key(lhs), key(rhs)))
            return super().expect_eq(device, lhs, rhs)

        def expect_almost_eq(self, device, lhs, rhs, atol, rtol):
            self.operands.append(("expect_almost_eq", key(lhs), key(rhs)))
            return super().expect_almost_eq(device, lhs, rhs, atol, rtol)

    return Recording()


def first_difference(ours: list, theirs: list) -> str | None:
    """None when two operand records are identical, else where they first differ."""
    if ours == theirs:
        return None
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            return f"check call {i} ({b[0]}): operands differ from IREE's"
    return f"{len(ours)} check calls recorded, IREE {len(theirs)}"


def run_translated(
    vmfb_path: Path,
    function: str,
    *,
    out_root: Path | None = None,
    device: str = "local-sync",
    operands: list | None = None,
) -> tuple[bool, int, str | None]:
    """Translates `vmfb_path` with pyree and runs `function` with the CheckModule as `check`.

    Returns (ok, check calls, error): ok when the call returned and no check failed.
    `operands`, when given, receives every check's operands (see _recording_check_module).
    """
    available, reason = translator_available()
    if not available:
        return False, 0, reason

    check = _recording_check_module()
    if operands is not None:
        check.operands = operands
    try:
        pkg = _translated_package(vmfb_path, out_root or CACHE_DIR / "packages")
        ctx = pkg.load(device=device, modules={"check": check})
        ctx.call(function)  # (by VM name: `while`, `i8i8.i32` are no attribute names)
    except Exception as e:
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        return False, check.total_calls, detail
    if check.failures:
        return False, check.total_calls, check.failures[0]
    return True, check.total_calls, None


# --------------------------------------------------------------------------- lifted builds

_F8 = {"f8E5M2": 0x24, "f8E4M3FN": 0x25, "f8E5M2FNUZ": 0x26, "f8E4M3FNUZ": 0x27, "f8E8M0FNU": 0x28}


def element_type_code(element: str) -> int:
    """IREE's element type for an MLIR element type name (hal-abi.md §B.1)."""
    if element == "i1":
        return 0x13000008
    m = re.fullmatch(r"([su]?)i(\d+)", element)
    if m:
        return ({"": 0x10, "s": 0x11, "u": 0x12}[m.group(1)] << 24) | int(m.group(2))
    m = re.fullmatch(r"f(16|32|64)", element)
    if m:
        return 0x21000000 | int(m.group(1))
    if element == "bf16":
        return 0x22000010
    if element in _F8:
        return (_F8[element] << 24) | 8
    m = re.fullmatch(r"complex<f(32|64)>", element)
    if m:
        return 0x23000000 | (2 * int(m.group(1)))
    raise ValueError(f"no IREE element type for {element!r}")


def _tensor_parts(mlir_type: str) -> tuple[list[int | None], str] | None:
    m = re.fullmatch(r"tensor<(.*)>", mlir_type.strip())
    if not m:
        return None
    dims, rest = [], m.group(1)
    while dm := re.match(r"(\?|\d+)x", rest):
        dims.append(None if dm.group(1) == "?" else int(dm.group(1)))
        rest = rest[dm.end() :]
    return dims, rest.split(",")[0].strip()


def _view_shape(mlir_type: str, nbytes: int) -> tuple[list[int], str]:
    """A result's shape (one dynamic dimension is inferred from the byte count)."""
    dims, element = _tensor_parts(mlir_type)
    if dims.count(None) > 1:
        raise ValueError(f"cannot infer the shape of a {mlir_type} result")
    if None in dims:
        known = math.prod(d for d in dims if d is not None)
        count = nbytes * 8 // (element_type_code(element) & 0xFF)
        dims[dims.index(None)] = count // known if known else 0
    return dims, element


def _scalar_from_bytes(mlir_type: str, data: bytes) -> int | float:
    if mlir_type in ("f32", "f64"):
        return struct.unpack("<f" if len(data) == 4 else "<d", data)[0]
    return int.from_bytes(data, "little", signed=True)


def run_lifted_iree(vmfb: Path, function: str, test, tmp: Path):
    """Runs a lifted test under iree-run-module: (ok, host checks, error, result bytes)."""
    from iree_check_oracle import IreeCheckOracle, _View

    cmd = ["iree-run-module", f"--module={vmfb}", f"--function={function}", "--device=local-sync"]
    for i, inp in enumerate(test.inputs):
        if inp.shape is None:
            cmd.append(f"--input={inp.scalar}")
            continue
        path = tmp / f"in{i}.bin"
        path.write_bytes(inp.data)
        _, element = _tensor_parts(inp.static_type)
        dims = "x".join(str(d) for d in inp.shape)
        cmd.append(f"--input={dims}{'x' if dims else ''}{element}=@{path}")
    outs = [tmp / f"out{j}.bin" for j in range(len(test.result_types))]
    cmd += [f"--output=@{p}" for p in outs]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return False, 0, (proc.stderr.strip() or proc.stdout.strip())[-1000:], None
    raw = [p.read_bytes() for p in outs]
    oracle = IreeCheckOracle()

    def operand(j):
        if not isinstance(j, int):  # a literal
            _, element = _tensor_parts(j.static_type)
            return _View(element_type_code(element), list(j.shape), j.data)
        ty = test.result_types[j]
        if _tensor_parts(ty) is None:
            return _scalar_from_bytes(ty, raw[j])
        dims, element = _view_shape(ty, len(raw[j]))
        return _View(element_type_code(element), dims, raw[j])

    try:
        _apply_checks(oracle, test, operand, device=object())
    except Exception as e:
        return False, oracle.total_calls, f"{type(e).__name__}: {e}", raw
    return not oracle.failures, oracle.total_calls, (oracle.failures or [None])[0], raw


def _apply_checks(module, test, operand, device) -> None:
    for check in test.checks:
        args = [operand(j) for j in check.results]
        if check.kind in ("expect_true", "expect_false"):
            getattr(module, check.kind)(*args)
        elif check.kind == "expect_almost_eq":
            module.expect_almost_eq(device, *args, check.atol, check.rtol)
        else:
            getattr(module, check.kind)(device, *args)


def _literal_view(literal):
    """A pyree buffer view holding a lifted literal (an input or an expected value)."""
    from runtime_support.hal.buffer import HalBuffer
    from runtime_support.hal.buffer_view import HalBufferView

    buffer = HalBuffer.allocate(len(literal.data))
    if literal.data:
        buffer.write(0, literal.data)
    _, element = _tensor_parts(literal.static_type)
    return HalBufferView(buffer, literal.shape, element_type_code(element))


def run_lifted_translated(vmfb: Path, function: str, test, out_root: Path):
    """Runs a lifted test translated: (ok, checks, error, result bytes, in-VM check calls)."""
    from runtime_support.hal.buffer_view import HalBufferView
    from runtime_support.modules.check import CheckModule

    vm_check = CheckModule(raise_on_failure=False)
    host_check = CheckModule(raise_on_failure=False)
    try:
        pkg = _translated_package(vmfb, out_root)
        ctx = pkg.load(device="local-sync", modules={"check": vm_check})
        args = [inp.scalar if inp.shape is None else _literal_view(inp) for inp in test.inputs]
        result = ctx.call_vm(function, *args)
    except Exception as e:
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        return False, vm_check.total_calls, detail, None, vm_check.total_calls
    results = result if isinstance(result, tuple) else (result,)
    if not test.result_types:
        results = ()
    raw = []
    for value, ty in zip(results, test.result_types):
        if isinstance(value, HalBufferView):
            raw.append(value.buffer.read(0, value.byte_length))
        elif isinstance(value, float):
            raw.append(struct.pack("<f" if ty == "f32" else "<d", value))
        else:
            size = 8 if ty in ("i64", "index") else 4
            raw.append((int(value) & ((1 << (8 * size)) - 1)).to_bytes(size, "little"))

    def operand(j):
        return results[j] if isinstance(j, int) else _literal_view(j)

    try:
        _apply_checks(host_check, test, operand, device=ctx.device)
    except Exception as e:
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        return False, host_check.total_calls, detail, raw, vm_check.total_calls
    failures = vm_check.failures + host_check.failures
    return not failures, host_check.total_calls, (failures or [None])[0], raw, vm_check.total_calls


def run_lifted_case(case: Case, build: str, result: CaseResult, translate: bool, cache_dir: Path):
    vmfb, tests, note = compile_lifted(case.source.read_text(), case, build, case.name, cache_dir)
    names = case.functions if case.functions is not None else list(tests)
    passes = set(case.iree_passes) if case.iree_passes is not None else set(names)
    for name in names:
        fr = FunctionResult(name, expected_iree_pass=name in passes, note=note)
        test = tests.get(name)
        if test is None or test.error:
            fr.iree_error = fr.pyree_error = (test.error if test else "not a test function")
            fr.note = "not lifted"
            result.functions.append(fr)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            fr.iree_ok, fr.iree_checks, fr.iree_error, iree_raw = run_lifted_iree(
                vmfb, name, test, Path(tmp)
            )
        if translate:
            fr.pyree_ok, fr.pyree_checks, fr.pyree_error, raw, vm_calls = run_lifted_translated(
                vmfb, name, test, cache_dir / "packages"
            )
            if vm_calls:
                fr.note = (fr.note + "; " if fr.note else "") + (
                    f"{vm_calls} in-VM scalar check call(s) (iree-run-module has no check module)"
                )
            if iree_raw is not None and raw is not None and iree_raw != raw:
                fr.outputs_differ = True
                diff = [j for j, (a, b) in enumerate(zip(iree_raw, raw)) if a != b]
                fr.pyree_error = f"result bytes differ from iree-run-module at results {diff}"
        result.functions.append(fr)
    return result


def run_case(
    case: Case,
    build: str,
    *,
    translate: bool = True,
    negative_control: bool = False,
    cache_dir: Path = CACHE_DIR,
) -> CaseResult:
    from iree_check_oracle import exported_tests, load_module, run_function

    result = CaseResult(case, build)
    try:
        vmfb = compile_case(case, build, cache_dir)
    except CompileError as e:
        result.compile_error = str(e)
        return result
    if build in LIFTED_BUILDS:
        run_lifted_case(case, build, result, translate and translator_available()[0], cache_dir)
        if negative_control:
            result.control = run_negative_control(
                case, build, translate=translate and translator_available()[0], cache_dir=cache_dir
            )
        return result
    if build in UNSUPPORTED_BUILDS:
        result.unsupported = UNSUPPORTED_BUILDS[build]
        result.functions = [FunctionResult(f) for f in case.functions or []]
        return result
    module = load_module(vmfb)
    names = case.functions if case.functions is not None else exported_tests(module)
    passes = set(case.iree_passes) if case.iree_passes is not None else set(names)
    can_translate = translate and translator_available()[0]
    for name in names:
        fr = FunctionResult(name, expected_iree_pass=name in passes)
        run = run_function(module, name)
        fr.iree_ok, fr.iree_checks = run.ok, run.checks
        fr.iree_error = run.error or (run.failures[0] if run.failures else None)
        if can_translate:
            ours: list = []
            fr.pyree_ok, fr.pyree_checks, fr.pyree_error = run_translated(
                vmfb, name, out_root=cache_dir / "packages", operands=ours
            )
            # The values the test computed, bit for bit (the e2e checks alone allow
            # tolerances up to 5e-2): where IREE is deterministic (a second run agrees).
            diff = first_difference(ours, run.operands) if run.error is None else None
            if diff is not None:
                again = run_function(module, name)
                if again.operands == run.operands:
                    fr.outputs_differ = True
                    fr.pyree_error = fr.pyree_error or diff
                else:
                    fr.note = "IREE's results vary between runs: not compared bit for bit"
        elif translate:
            fr.pyree_error = TRANSLATOR_UNAVAILABLE
        result.functions.append(fr)
    if negative_control:
        result.control = run_negative_control(case, build, translate=can_translate, cache_dir=cache_dir)
    return result


# A check of two computed values (pretty form) with a static tensor type.
_VALUE_CHECK = re.compile(
    r"^(?P<indent>[ \t]*)check\.expect_(?:almost_)?eq\((?P<lhs>%[\w.#$-]+)(?P<rest>,[^\n]*?)\)"
    r"\s*:\s*(?P<type>tensor<(?P<dims>(?:\d+x)*)(?P<elem>[if]\d+|bf16)>)[ \t]*$",
    re.M,
)


def operand_mutations(text: str) -> list[Mutation]:
    """For checks of two computed values (no literal to change): copies of the program in
    which one randomly chosen element of the checked value is changed just before the
    check (x+1 for integers, not x for i1, 2x+1 for floats)."""
    out = []
    for m in _VALUE_CHECK.finditer(text):
        funcs = list(_FUNC.finditer(text, 0, m.start()))
        if not funcs:
            continue
        dims = [int(d) for d in m["dims"].split("x") if d]
        if any(d == 0 for d in dims):
            continue
        rng = random.Random(hashlib.sha256(f"{m.start()}:{text}".encode()).digest())
        index = [rng.randrange(d) for d in dims]
        ind, ty, elem, lhs = m["indent"], m["type"], m["elem"], m["lhs"]
        lines = [f"{ind}%negctl_i{i} = arith.constant {v} : index" for i, v in enumerate(index)]
        where = "[" + ", ".join(f"%negctl_i{i}" for i in range(len(index))) + "]"
        lines.append(f"{ind}%negctl_e = tensor.extract {lhs}{where} : {ty}")
        if elem == "i1":
            lines += [f"{ind}%negctl_one = arith.constant true",
                      f"{ind}%negctl_n = arith.xori %negctl_e, %negctl_one : i1"]
        elif elem.startswith("i"):
            lines += [f"{ind}%negctl_one = arith.constant 1 : {elem}",
                      f"{ind}%negctl_n = arith.addi %negctl_e, %negctl_one : {elem}"]
        else:
            lines += [f"{ind}%negctl_one = arith.constant 1.0 : {elem}",
                      f"{ind}%negctl_2 = arith.addf %negctl_e, %negctl_e : {elem}",
                      f"{ind}%negctl_n = arith.addf %negctl_2, %negctl_one : {elem}"]
        lines.append(f"{ind}%negctl_m = tensor.insert %negctl_n into {lhs}{where} : {ty}")
        check = m.group(0).replace(f"({lhs}", "(%negctl_m", 1)
        line = text.count("\n", 0, m.start()) + 1
        out.append(
            Mutation(
                function=funcs[-1].group(1) or funcs[-1].group(2),
                text=text[: m.start()] + "\n".join(lines) + "\n" + check + text[m.end() :],
                description=f"line {line}: {lhs}{index} changed before the check",
            )
        )
    return out


def run_negative_control(
    case: Case,
    build: str,
    *,
    translate: bool = True,
    cache_dir: Path = CACHE_DIR,
    max_candidates: int = 3,
) -> ControlResult:
    """Mutates one expected constant; the test must then fail under the oracle and pyree.

    A mutation in code the test does not execute (an untaken branch) passes under the
    oracle: up to `max_candidates` call sites are tried until the oracle fails. If none
    fails, the control is reported as failed (the checks are not live).
    """
    from iree_check_oracle import load_module, run_function

    text = case.source.read_text()
    wanted = set(case.functions) if case.functions is not None else None
    candidates = [m for m in mutations(text) if wanted is None or m.function in wanted]
    if not candidates:  # no expected literal: change the checked value itself
        candidates = [m for m in operand_mutations(text) if wanted is None or m.function in wanted]
    if not candidates:
        return ControlResult(case.name, "-", "nothing to mutate", note="no control")
    control = None
    for mutation in candidates[:max_candidates]:
        control = ControlResult(case.name, mutation.function, mutation.description)
        if build in LIFTED_BUILDS:
            try:
                vmfb, tests, _ = compile_lifted(
                    mutation.text, case, build, case.name + "__negctl", cache_dir
                )
            except CompileError as e:
                control.note = f"mutant does not compile: {str(e)[:200]}"
                continue
            test = tests.get(mutation.function)
            if test is None or test.error:
                control.note = "mutant not lifted"
                continue
            with tempfile.TemporaryDirectory() as tmp:
                ok = run_lifted_iree(vmfb, mutation.function, test, Path(tmp))[0]
            control.iree_failed = not ok
            if ok:
                control.note = "oracle passed the mutant (untaken branch?)"
                continue
            if translate:
                ok = run_lifted_translated(
                    vmfb, mutation.function, test, cache_dir / "packages"
                )[0]
                control.pyree_failed = not ok
            control.note = ""
            return control
        try:
            vmfb = compile_source(
                mutation.text,
                build_flags(case.flags, build),
                case.name + "__negctl",
                cache_dir / build,
            )
        except CompileError as e:
            control.note = f"mutant does not compile: {str(e)[:200]}"
            control.iree_failed = None
            continue
        run = run_function(load_module(vmfb), mutation.function)
        control.iree_failed = not run.ok
        if not control.iree_failed:
            control.note = "oracle passed the mutant (untaken branch?)"
            continue
        if translate:
            ok, _, _ = run_translated(vmfb, mutation.function, out_root=cache_dir / "packages")
            control.pyree_failed = not ok
        control.note = ""
        return control
    if control is not None and control.iree_failed is None:
        control.note = control.note or "no mutant compiled"
    return control


# --------------------------------------------------------------------------- reporting


def _fmt(value) -> str:
    return "-" if value is None else str(value)


def report(results: list[CaseResult], out=None) -> bool:
    """Prints the per-folder table (and details); returns overall success."""
    out = out if out is not None else sys.stdout
    ok = True
    by_build: dict[str, list[CaseResult]] = {}
    for r in results:
        by_build.setdefault(r.build, []).append(r)
    for build, rs in by_build.items():
        print(f"\n== build {build} ==", file=out)
        header = (
            f"{'folder':<16}{'cases':>6}{'funcs':>7}{'iree ok':>9}{'pyree ok':>10}"
            f"{'mismatch':>10}{'checks iree':>13}{'checks pyree':>14}"
        )
        print(header, file=out)
        folders: dict[str, list[CaseResult]] = {}
        for r in rs:
            folders.setdefault(r.case.folder, []).append(r)
        totals = [0] * 7
        any_pyree = False
        for folder in sorted(folders):
            frs = [f for r in folders[folder] for f in r.functions]
            row = [
                len(folders[folder]),
                len(frs),
                sum(1 for f in frs if f.iree_ok),
                sum(1 for f in frs if f.pyree_ok),
                sum(1 for f in frs if f.mismatch),
                sum(f.iree_checks for f in frs),
                sum(f.pyree_checks for f in frs),
            ]
            ran_pyree = any(f.pyree_ok is not None for f in frs)
            any_pyree |= ran_pyree
            totals = [a + b for a, b in zip(totals, row)]
            print(_row(folder, row, ran_pyree), file=out)
        print(_row("total", totals, any_pyree), file=out)

        if build in UNSUPPORTED_BUILDS:
            failed = sum(1 for r in rs if r.compile_error)
            print(f"  unsupported build: {UNSUPPORTED_BUILDS[build]}", file=out)
            print(f"  compiled {len(rs) - failed} of {len(rs)} cases", file=out)
        for r in rs:
            if r.compile_error and build not in UNSUPPORTED_BUILDS:
                ok = False
                print(f"  COMPILE ERROR {r.case.name}: {_short(r.compile_error)}", file=out)
            for f in r.functions:
                if r.unsupported:
                    continue
                if build in LIFTED_BUILDS and f.iree_ok is None:
                    print(f"  NOT LIFTED (reported, not counted) {r.case.name}:{f.name}: "
                          f"{_short(f.iree_error)}", file=out)
                elif build in LIFTED_BUILDS and f.iree_ok is False:
                    # cases.json's pass list was measured on the default build; what IREE
                    # itself fails here is reported, not counted (pyree must fail it too).
                    print(f"  IREE FAILS (reported, not counted) {r.case.name}:{f.name}: "
                          f"{_short(f.iree_error)}", file=out)
                elif bool(f.iree_ok) != f.expected_iree_pass:
                    ok = False
                    print(f"  IREE {'PASS' if f.iree_ok else 'FAIL'} (expected "
                          f"{'pass' if f.expected_iree_pass else 'fail'}) "
                          f"{r.case.name}:{f.name}: {_short(f.iree_error)}", file=out)
                if f.mismatch:
                    ok = False
                    print(f"  MISMATCH {r.case.name}:{f.name}: iree ok={f.iree_ok} "
                          f"checks={f.iree_checks}; pyree ok={f.pyree_ok} checks={f.pyree_checks}"
                          f" {_short(f.pyree_error)}", file=out)
                if f.iree_ok and f.iree_checks == 0:
                    print(f"  note: {r.case.name}:{f.name} made no check calls", file=out)
        controls = [r.control for r in rs if r.control is not None]
        if controls:
            print(f"\n  negative controls ({build}):", file=out)
            for c in controls:
                if not c.ok:
                    ok = False
                status = "ok" if c.ok else ("NONE" if c.iree_failed is None else "BAD")
                print(f"   {status:<5}{c.case}:{c.function} [{c.description}] "
                      f"iree failed={_fmt(c.iree_failed)} pyree failed={_fmt(c.pyree_failed)}"
                      f"{' ' + c.note if c.note else ''}", file=out)
        if not any_pyree:
            reason = (
                "unsupported build" if build in UNSUPPORTED_BUILDS
                else translator_available()[1] or "translation disabled"
            )
            print(f"  pyree: not run ({reason})", file=out)
    return ok


def _row(label: str, row: list[int], ran_pyree: bool) -> str:
    cases, funcs, iok, pok, mism, ichk, pchk = row
    p = (lambda v: str(v)) if ran_pyree else (lambda v: "-")
    return (
        f"{label:<16}{cases:>6}{funcs:>7}{iok:>9}{p(pok):>10}{p(mism):>10}"
        f"{ichk:>13}{p(pchk):>14}"
    )


def _short(text: str | None, limit: int = 300) -> str:
    if not text:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance", description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, help="run every *.mlir under DIR (default: cases.json)")
    parser.add_argument("--build", choices=[*BUILDS, "all"], default="embedded-elf")
    parser.add_argument("--filter", help="case name glob or substring (e.g. 'tosa_ops/*')")
    parser.add_argument("--negative-controls", action="store_true",
                        help="also run one mutated copy per case; it must fail")
    parser.add_argument("--fast", action="store_true", help="one case per folder")
    parser.add_argument("--no-translate", action="store_true", help="IREE side only")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="parallel iree-compile runs")
    parser.add_argument("--cache-dir", type=Path, default=CACHE_DIR)
    args = parser.parse_args(argv)

    if args.src is None and not e2e_available():
        print(f"no e2e data at {E2E_DIR} (and no --src): nothing to run", file=sys.stderr)
        return 0

    cases = filter_cases(load_cases(args.src), args.filter)
    if args.fast:
        cases = fast_subset(cases)
    builds = list(BUILDS) if args.build == "all" else [args.build]
    if not cases:
        print("no cases selected", file=sys.stderr)
        return 1

    # Compile everything first (in parallel when asked), then run sequentially.
    jobs = [(c, b) for b in builds for c in cases]
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        list(pool.map(lambda cb: _try_compile(cb[0], cb[1], args.cache_dir), jobs))

    results = []
    for case, build in jobs:
        print(f"[{build}] {case.name}", file=sys.stderr, flush=True)
        results.append(
            run_case(
                case,
                build,
                translate=not args.no_translate,
                negative_control=args.negative_controls and build not in UNSUPPORTED_BUILDS,
                cache_dir=args.cache_dir,
            )
        )
    return 0 if report(results) else 1


def _try_compile(case: Case, build: str, cache_dir: Path) -> None:
    try:
        compile_case(case, build, cache_dir)
    except CompileError:
        pass  # reported by run_case


if __name__ == "__main__":
    sys.exit(main())
