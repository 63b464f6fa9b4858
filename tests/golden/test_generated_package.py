"""Generated packages as a product surface: golden files, validity, determinism, isolation,
the Python API's argument checks, and `pyree-run` against `iree-run-module`.

`pytest --update-golden` rewrites tests/golden/*.py; review the diff before committing.
"""

from __future__ import annotations

import dataclasses
import os
import py_compile
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import black
import numpy as np
import pytest

from conftest import corpus_cases
from differential import load_package
from translator.codegen import write_package
from translator.module import FileLineColLoc
from translator.reader import read_module_file

REPO = Path(__file__).resolve().parents[2]
GOLDEN_DIR = Path(__file__).parent

# One program per shape of generated code. Goldens are per function
# (tests/golden/<case>/<function>.py) plus one golden of the module frame
# (tests/golden/frame.py, from FRAME_CASE) and of each function all cases share
# (tests/golden/__init.py), so that a change to either rewrites one file.
GOLDEN = {
    "elementwise": ("tensor_elementwise", "dispatches behind a fence wait; its failure arm as an early exit; HAL calls with enum arguments; command-buffer init function"),
    "matmul": ("tensor_matmul", "a matmul dispatch; buffer asserts; long vm.fail messages hoisted to module constants"),
    "loop": ("cf_scf_while", "host loops: while/if nesting, break/continue, block-argument remaps"),
    "lists_buffers": ("util_buffer", "!vm.buffer and !vm.list helpers, ref moves and releases"),
    "multi_export": ("multi_export", "several exports and internal calls; one export table"),
    "dynamic_shapes": ("dyn_shape_2d", "dynamic dimensions: i64 index arithmetic, shape lists"),
    "vm_branches": ("vm_branches", "VM dialect: br_table as if/elif, counted loop, i64 compares"),
    "barrier_chain": ("tensor_barrier_chain", "awaited submissions across several command buffers as one queue program call; the programs in _programs.py"),
    "loop_call": ("cf_loop_call", "a host loop whose test reads a value back: its program's call a loop call (queue_n.loop) with the loop kept around it, the program's Loop in _programs.py"),
    "readback_loop": ("cf_readback_loop", "a host loop reading a result back: a queue program per region of the body, the readback inside one, command buffers recorded per call as program steps"),
}
FRAME_CASE = "elementwise"
# Functions every case has (the module initialiser that selects the device and creates the
# executables): one golden each, golden/<name>.py, from FRAME_CASE; the differential suites
# run every case's own.
SHARED_FUNCTIONS = ("__init",)
_DEF = re.compile(r"^    def (\w+)\(")


def split_functions(source: str) -> tuple[str, dict[str, str]]:
    """(frame, {function name: its text}): each function of `_bind` leaves one line in
    the frame naming the golden that holds it."""
    lines = source.splitlines(keepends=True)
    frame: list[str] = []
    functions: dict[str, str] = {}
    current: str | None = None
    for line in lines:
        m = _DEF.match(line)
        if m:
            current = m.group(1)
            functions[current] = line
            frame.append(f"    def {current}(...): ...  # golden/<case>/{current}.py\n")
            continue
        if current is not None and (line.startswith("        ") or not line.strip()):
            functions[current] += line
            continue
        current = None
        frame.append(line)
    return "".join(frame), {k: v.rstrip("\n") + "\n" for k, v in functions.items()}


def _case(program: str):
    for c in corpus_cases(variants=("embedded-elf", "vm")):
        if c.name == program:
            return c
    raise LookupError(program)


def _translate(compile_mlir, program: str, out: Path, name: str = "pkg", **kw) -> Path:
    case = _case(program)
    flags = case.flags
    if case.variant != "vm":
        # Kernel DWARF embeds the source path: keep kernels (and golden rodata sizes)
        # independent of where the checkout lives.
        flags = flags + ("--iree-llvmcpu-debug-symbols=false",)
    module = read_module_file(compile_mlir(case.source, flags))
    # MLIR locations carry the compile-time path of the corpus; make them relative before
    # code generation, so that black wraps the same lines wherever the checkout lives.
    module.locations = tuple(
        dataclasses.replace(loc, filename=re.sub(r"^.*/tests/corpus/", "tests/corpus/", loc.filename))
        if isinstance(loc, FileLineColLoc)
        else loc
        for loc in module.locations
    )
    return write_package(module, out, name, **kw)


_PROGRAM = re.compile(r"^QUEUE_\d+ = QueueProgram\($.*?^\)$", re.M | re.S)


def _programs_block(frame: str) -> str:
    """The frame's queue programs (translator/codegen/queue_programs.py): every
    `QUEUE_k = QueueProgram(...)` constant, in order."""
    return "\n\n".join(m.group(0) for m in _PROGRAM.finditer(frame)) + "\n" if _PROGRAM.search(frame) else ""


def _check_golden(path: Path, text: str, header: str, update: bool) -> None:
    text = header + text
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run pytest --update-golden"
    assert text == path.read_text(), f"generated code changed: {path}; review and --update-golden"


@pytest.mark.parametrize("golden", sorted(GOLDEN))
def test_golden_generated_code(golden, compile_mlir, tmp_path, update_golden):
    program, covers = GOLDEN[golden]
    pkg = _translate(compile_mlir, program, tmp_path, golden, source_name=f"{program}.vmfb")
    source = (pkg / "__init__.py").read_text()
    py_compile.compile(str(pkg / "__init__.py"), doraise=True)
    assert black.format_str(source, mode=black.Mode(line_length=100)) == source  # black --check
    # MLIR locations carry the compile-time path of the corpus: make them checkout-independent.
    source = re.sub(r"[^\s\[,\"']*/tests/corpus/", "tests/corpus/", source)
    frame, functions = split_functions(source)
    shared = {name: functions.pop(name) for name in SHARED_FUNCTIONS if name in functions}
    case_dir = GOLDEN_DIR / golden
    if update_golden and case_dir.exists():
        for stale in case_dir.glob("*.py"):
            if stale.stem not in functions:
                stale.unlink()
    programs = _programs_block(frame)
    if programs:  # the queue programs are module constants too: one golden of them all
        functions["_programs"] = programs
    header = f"# Golden {golden!r}: {program}.mlir, one function. Covers: {covers}.\n"
    for name, text in functions.items():
        _check_golden(case_dir / f"{name}.py", text, header, update_golden)
    assert sorted(p.stem for p in case_dir.glob("*.py")) == sorted(functions)
    if golden == FRAME_CASE:
        assert sorted(shared) == sorted(SHARED_FUNCTIONS), sorted(shared)
        for name, text in shared.items():
            header = f"# Golden {name!r}, the function every case shares (from {program}.mlir).\n"
            _check_golden(GOLDEN_DIR / f"{name}.py", text, header, update_golden)
        header = f"# Golden module frame (from {program}.mlir); function bodies live in golden/<case>/.\n"
        # (each queue program is one line here: their text is the case's _programs.py)
        frame = _PROGRAM.sub(lambda m: m.group(0).split("(", 1)[0] + "(...)  # golden/<case>/_programs.py", frame)
        _check_golden(GOLDEN_DIR / "frame.py", frame, header, update_golden)


def test_translation_is_deterministic(compile_mlir, tmp_path):
    a = _translate(compile_mlir, "tensor_host_loop", tmp_path / "a")
    b = _translate(compile_mlir, "tensor_host_loop", tmp_path / "b")
    for name in ("__init__.py", "rodata.bin"):
        assert (a / name).read_bytes() == (b / name).read_bytes()


def test_package_runs_without_iree_and_without_the_vmfb(compile_mlir, tmp_path):
    """In a subprocess where `import iree` fails and the translator is hidden, the package
    loads and every export runs, giving IREE's results bit for bit."""
    from abi_inputs import inputs_for_signature
    from iree_oracle import IreeSession, export_signatures

    case = _case("tensor_elementwise")
    vmfb = tmp_path / "model.vmfb"
    vmfb.write_bytes(compile_mlir(case.source, case.flags).read_bytes())
    pkg = write_package(read_module_file(vmfb), tmp_path / "out", "model")
    session = IreeSession(vmfb)
    declarations = load_package(pkg).EXPORTS  # read here; the child imports it afresh
    calls, expected = {}, {}
    for name, sig in export_signatures(vmfb).items():
        if name.startswith("__"):
            continue
        inputs = inputs_for_signature(declarations.get(name) or sig, seed=1)
        calls[name] = [np.asarray(v) for v in inputs]
        expected[name] = [np.asarray(v) for v in session.call(name, inputs, session.signature(name))]
    assert calls, "the program must export something to call"
    np.savez(tmp_path / "inputs.npz", **{f"{n}|{i}": v for n, vs in calls.items() for i, v in enumerate(vs)})
    vmfb.unlink()
    script = textwrap.dedent(
        f"""
        import sys, importlib.abc
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] in ("iree", "translator"):
                    raise ImportError("blocked for this test: " + name)
        sys.meta_path.insert(0, Block())
        sys.path.insert(0, {str(pkg.parent)!r})
        import numpy as np, model
        try:
            import iree
        except ImportError:
            print("iree blocked")
        ctx = model.load(device="local-sync")
        saved = np.load({str(tmp_path / "inputs.npz")!r})
        args = {{}}
        for key in saved.files:
            name, i = key.rsplit("|", 1)
            args.setdefault(name, {{}})[int(i)] = saved[key]
        results = {{}}
        for name, by_index in args.items():
            r = ctx.call(name, *[by_index[i] for i in sorted(by_index)])
            for i, v in enumerate(r if isinstance(r, tuple) else (r,)):
                results[name + "|" + str(i)] = np.asarray(v)
        np.savez({str(tmp_path / "results.npz")!r}, **results)
        print(len(args), "exports called")
        """
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "iree blocked" in out.stdout
    assert f"{len(calls)} exports called" in out.stdout
    got = np.load(tmp_path / "results.npz")
    for name, values in expected.items():
        for i, want in enumerate(values):
            have = got[f"{name}|{i}"]
            assert have.shape == want.shape and have.tobytes() == want.tobytes(), (name, i)


def test_wrong_arguments_raise_before_running(compile_mlir, tmp_path):
    pkg = load_package(_translate(compile_mlir, "tensor_matmul", tmp_path))
    ctx = pkg.load(device="local-sync")
    name = next(n for n in pkg.EXPORTS if not n.startswith("__"))
    with pytest.raises(TypeError):
        ctx.call(name)  # wrong argument count
    with pytest.raises((TypeError, ValueError)) as info:
        ctx.call(name, np.zeros((1, 1, 1), np.float32), np.zeros((1, 1, 1), np.float32))
    assert "input0" in str(info.value) or "argument" in str(info.value)


def test_contexts_are_independent(compile_mlir, tmp_path):
    pkg = load_package(_translate(compile_mlir, "globals_values", tmp_path))
    a, b = pkg.load(device="local-sync"), pkg.load(device="local-sync")
    assert a.rwdata is not b.rwdata and a.refs is not b.refs


def _run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    "program, function, inputs",
    [
        ("tensor_elementwise", None, None),
        ("arith_i32", None, None),
        ("dyn_shape_1d", "dyn_add", ["3xf32=1 2 3", "3xf32=4 5 6"]),
    ],
)
def test_pyree_run_matches_iree_run_module(program, function, inputs, compile_mlir, tmp_path):
    from iree_oracle import export_signatures

    case = _case(program)
    vmfb = compile_mlir(case.source, case.flags)
    pkg = write_package(read_module_file(vmfb), tmp_path, "pkg")
    sigs = export_signatures(vmfb)
    if function is None:
        function = next(n for n in sigs if not n.startswith("__"))
        arg_text = sigs[function].split("(", 1)[1].split(")", 1)[0]
        args = [a.strip() for a in arg_text.split(",") if a.strip()]
        inputs = ["7" if a in ("i32", "i64") else "1.5" if a in ("f32", "f64") else None for a in args]
        if None in inputs:  # tensors: read their declared types from the package
            mod = load_package(pkg)
            decl = mod.EXPORTS[function]
            from runtime_support.api.abi import parse_declaration

            inputs = []
            for _, ty in parse_declaration(decl).arguments:
                dims = "x".join(str(d or 3) for d in ty.shape)
                n = int(np.prod([d or 3 for d in ty.shape])) if ty.shape else 1
                inputs.append(f"{dims}x{ty.element}=" + " ".join(str(i % 5) for i in range(n)))
    flags = [f"--input={i}" for i in inputs]
    ours = _run([sys.executable, "-m", "runtime_support.tools.run_cli", str(pkg), f"--function={function}", "--device=local-sync", *flags])
    theirs = _run(["iree-run-module", f"--module={vmfb}", f"--function={function}", "--device=local-sync", *flags])
    assert theirs.returncode == 0, theirs.stderr
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout


def test_close_runs_deinit_once(tmp_path):
    """`close()` calls the module's `__deinit` export (found by export name), once."""
    src = tmp_path / "lifecycle.mlir"
    src.write_text(
        textwrap.dedent(
            """
            vm.module @m {
              vm.global.i32 mutable @counter : i32
              vm.func @__deinit() {
                %c = vm.global.load.i32 @counter : i32
                %one = vm.const.i32 1
                %n = vm.add.i32 %c, %one : i32
                vm.global.store.i32 %n, @counter : i32
                vm.return
              }
              vm.export @__deinit
            }
            """
        )
    )
    vmfb = tmp_path / "lifecycle.vmfb"
    subprocess.run(["iree-compile", "--compile-mode=vm", str(src), "-o", str(vmfb)], check=True)
    pkg = load_package(write_package(read_module_file(vmfb), tmp_path / "out", "lifecycle"))
    ctx = pkg.load(device="local-sync")
    assert bytes(ctx.rwdata[:4]) == b"\0\0\0\0"
    ctx.close()
    ctx.close()
    assert int.from_bytes(ctx.rwdata[:4], "little") == 1


def test_provenance_comments_by_default_only_without_source_locations(compile_mlir, tmp_path):
    """cf_scf_while.mlir's function keeps its source map: location comments, no VM
    comments; `--provenance` adds them. vm_branches.mlir has no locations: VM comments
    without asking."""
    def functions(program="cf_scf_while", **kw):
        pkg = _translate(compile_mlir, program, tmp_path / f"{program}{len(kw)}", **kw)
        return split_functions((pkg / "__init__.py").read_text())[1]

    default, always = functions(), functions(provenance=True)
    assert "# line " in default["collatz_steps"] and "# pc 0x" not in default["collatz_steps"]
    assert "# line " in always["collatz_steps"] and "# pc 0x" in always["collatz_steps"]
    assert "# pc 0x" in functions("vm_branches")["loop"]
