"""Generated code nests as the program does, not as long as the program is.

Long programs (N chained dispatches, each behind a fence wait with its own failure arm)
and deeply nested control flow translate, import and run, equal to `iree.runtime` on
the same vmfb. MLIR is built here; vmfbs are compiled with the pinned compiler.
"""

from __future__ import annotations

import ast
import re

import numpy as np
import pytest

from conftest import load_manifest
from iree_oracle import IreeSession
from differential import same_results as _same, load_package
from translator.codegen import write_package
from translator.reader import read_module_file

FLAGS = tuple(load_manifest()["variants"]["embedded-elf"]["flags"])
VM_FLAGS = tuple(load_manifest()["variants"]["vm"]["flags"])
# Memoized command buffers (one function each) make iree-compile take minutes for 1,000
# dispatches; without memoization the chain records its dispatches inline, and each
# still waits on its own fence with its own failure arm.
NO_MEMOIZATION = ("--iree-hal-memoization=false",)


def chained_dispatches(n: int) -> str:
    """n `arith.addf` on tensor<4xf32>, kept apart by `util.optimization_barrier`."""
    lines = [
        "func.func @chain(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {",
        "  %v0 = arith.addf %a, %b : tensor<4xf32>",
    ]
    for i in range(1, n):
        lines.append(f"  %w{i} = util.optimization_barrier %v{i - 1} : tensor<4xf32>")
        lines.append(f"  %v{i} = arith.addf %w{i}, %b : tensor<4xf32>")
    lines += [f"  return %v{n - 1} : tensor<4xf32>", "}"]
    return "\n".join(lines) + "\n"


def nested_control_flow(depth: int) -> str:
    """VM dialect: `depth` nested if/else (the taken arm holds the next level), an early
    `vm.fail` check at every level and a counted loop at every fifth level. Written at the
    VM level so that the compiler keeps every branch and compiles in a second."""
    blocks: list[str] = []
    for k in range(depth):
        x = f"%x{k}"
        join = "^ret" if k == 0 else f"^j{k - 1}"
        blocks += [
            f"  ^l{k}({x}: i32):",
            f"    %c{k} = vm.const.i32 {k + 1}",
            f"    %bad{k} = vm.const.i32 {123456789 + k}",
            f"    %isbad{k} = vm.cmp.eq.i32 {x}, %bad{k} : i32",
            f"    vm.cond_br %isbad{k}, ^f{k}, ^g{k}",
            f"  ^f{k}:",
            f'    vm.fail %c{k}, "level {k} saw its magic value"',
            f"  ^g{k}:",
            f"    %p{k} = vm.cmp.lt.i32.s %c{k}, {x} : i32",
            f"    vm.cond_br %p{k}, ^t{k}, ^e{k}",
            f"  ^e{k}:",
            f"    %m{k} = vm.mul.i32 {x}, %y : i32",
            f"    vm.br ^j{k}(%m{k} : i32)",
            f"  ^t{k}:",
            f"    %a{k} = vm.add.i32 {x}, %y : i32",
        ]
        nxt = f"^l{k + 1}" if k + 1 < depth else f"^j{k}"
        if k % 5 == 4:
            blocks += [
                f"    %z{k} = vm.const.i32.zero",
                f"    vm.br ^h{k}(%z{k}, %a{k} : i32, i32)",
                f"  ^h{k}(%i{k}: i32, %acc{k}: i32):",
                f"    %q{k} = vm.cmp.lt.i32.s %i{k}, %n : i32",
                f"    vm.cond_br %q{k}, ^b{k}(%i{k}, %acc{k} : i32, i32), {nxt}(%acc{k} : i32)",
                f"  ^b{k}(%bi{k}: i32, %bacc{k}: i32):",
                f"    %one{k} = vm.const.i32 1",
                f"    %three{k} = vm.const.i32 3",
                f"    %ni{k} = vm.add.i32 %bi{k}, %one{k} : i32",
                f"    %mm{k} = vm.mul.i32 %bacc{k}, %three{k} : i32",
                f"    %nb{k} = vm.add.i32 %mm{k}, %ni{k} : i32",
                f"    vm.br ^h{k}(%ni{k}, %nb{k} : i32, i32)",
            ]
        else:
            blocks.append(f"    vm.br {nxt}(%a{k} : i32)")
        blocks += [
            f"  ^j{k}(%r{k}: i32):",
            f"    %s{k} = vm.xor.i32 %r{k}, %c{k} : i32",
            f"    vm.br {join}(%s{k} : i32)",
        ]
    return (
        "vm.module @nest {\n"
        "  vm.func @nest(%x: i32, %y: i32, %n: i32) -> i32 {\n"
        "    vm.br ^l0(%x : i32)\n"
        + "\n".join(blocks)
        + "\n  ^ret(%res: i32):\n    vm.return %res : i32\n  }\n  vm.export @nest\n}\n"
    )


def _max_indent(source: str) -> int:
    depth = 0

    class V(ast.NodeVisitor):
        def generic_visit(self, node, level=[0]):  # noqa: B006
            nonlocal depth
            block = isinstance(node, (ast.If, ast.While, ast.FunctionDef))
            level[0] += block
            depth = max(depth, level[0])
            super().generic_visit(node)
            level[0] -= block

    V().visit(ast.parse(source))
    return depth


def _translate_and_compare(compile_mlir, tmp_path, source, function, inputs_list, flags=FLAGS):
    src = tmp_path / f"{function}.mlir"
    src.write_text(source)
    vmfb = compile_mlir(src, flags)
    pkg_dir = write_package(read_module_file(vmfb), tmp_path / "out", "pkg")
    text = (pkg_dir / "__init__.py").read_text()
    pkg = load_package(pkg_dir)
    ctx = pkg.load(device="local-sync")
    session = IreeSession(vmfb)
    for inputs in inputs_list:
        expected = session.call(function, list(inputs))
        actual = ctx.call(function, *inputs)
        assert _same(expected[0], actual), f"{function}{inputs}: IREE {expected!r} != pyree {actual!r}"
    return text


@pytest.mark.parametrize("n", [100, 1000])
def test_chained_dispatches(n, compile_mlir, tmp_path):
    a = np.arange(4, dtype=np.float32)
    b = np.full(4, 0.25, dtype=np.float32)
    flags = FLAGS + (NO_MEMOIZATION if n > 100 else ())
    text = _translate_and_compare(compile_mlir, tmp_path, chained_dispatches(n), "chain", [(a, b)], flags)
    # Each fence wait's failure arm is an early exit: nesting does not grow with n
    # (the deepest block is `__init`'s device-selection loop: _bind, def, while, if, if).
    assert _max_indent(text) <= 5


@pytest.mark.parametrize("depth", [12, 60, 150])
def test_nested_control_flow(depth, compile_mlir, tmp_path):
    cases = [(np.int32(x), np.int32(y), np.int32(n)) for x, y, n in ((1000, 3, 2), (7, -2, 1), (-5, 4, 0))]
    source = nested_control_flow(depth)
    text = _translate_and_compare(compile_mlir, tmp_path, source, "nest", cases, VM_FLAGS)
    depth_in_python = _max_indent(text)
    if depth < 80:  # structured: one Python level per source level (plus loops)
        assert depth_in_python >= depth
    assert depth_in_python < 100  # deeper sources fall back to the block-state loop


def test_retranslation_replaces_the_package_and_respects_the_umask(compile_mlir, tmp_path):
    import os
    import stat

    src = tmp_path / "chain.mlir"
    src.write_text(chained_dispatches(2))
    module = read_module_file(compile_mlir(src, FLAGS))
    old = os.umask(0o022)
    try:
        pkg = write_package(module, tmp_path / "out", "pkg")
        pkg = write_package(module, tmp_path / "out", "pkg", provenance=True)
    finally:
        os.umask(old)
    assert sorted(p.name for p in pkg.iterdir()) == [".pyree-package", "__init__.py", "rodata.bin"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["pkg"]  # no staging leftovers
    for p in (pkg, pkg / "__init__.py", pkg / "rodata.bin"):
        assert stat.S_IMODE(p.stat().st_mode) & 0o044 == 0o044, p  # readable by others
    text = (pkg / "__init__.py").read_text()
    assert re.search(r"# pc 0x[0-9a-f]+-0x[0-9a-f]+ hal\.", text)  # --provenance: group comments
    compile(text, "pkg", "exec")
