"""What `python -m bench` runs: the hand-written MLIR programs beside this file and the
PyTorch example models (examples/models), each with its inputs.

A program's `main` export is timed; `setup`, where there is one, is called once after
loading with the weights (they live in mutable globals, so they are neither constant-folded
nor copied per call). Inputs come from a fixed seed, so both runtimes get the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

PROGRAM_DIR = Path(__file__).resolve().with_name("programs")
CHAIN_LENGTH = 100  # dispatches in chain100.mlir; chain1.mlir is its 1-dispatch baseline


@dataclass(frozen=True)
class Program:
    name: str  # selection name and table label
    title: str
    source: Path | None  # MLIR under bench/programs (None for the example models)
    inputs: Callable[[np.random.Generator], tuple]  # main's arguments
    setup: Callable[[np.random.Generator], tuple] | None = None  # setup's, once per load
    quick: bool = True  # part of --quick
    model: str | None = None  # examples/models name, for the PyTorch models
    queue_programs: bool = True  # translator option; False: --no-fuse, one import call per op
    dynamic_batch: bool = False  # the model exported with a dynamic batch dim


def _f32(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def chain_source(n: int) -> str:
    """The text of chain{n}.mlir (the files are written from this; a test checks so)."""
    lines = [
        f"// {n} dependent 4-element additions kept apart by util.optimization_barrier:",
        f"// {n} dispatch(es), so time over the 1-dispatch version is host cost per dispatch.",
        "// (Written by: python3 -c 'from bench.programs import chain_source; ...'.)",
        "func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {",
    ]
    prev = "%a"
    for i in range(n):
        lines.append(f"  %s{i} = arith.addf {prev}, %b : tensor<4xf32>")
        if i < n - 1:
            lines.append(f"  %k{i} = util.optimization_barrier %s{i} : tensor<4xf32>")
            prev = f"%k{i}"
    lines.append(f"  return %s{n - 1} : tensor<4xf32>")
    lines.append("}")
    return "\n".join(lines) + "\n"


def dynamic_chain_source(n: int) -> str:
    """The text of dynamic_chain{n}.mlir: `n` dependent matmuls on a tensor<?x16xf32>, one
    dispatch each, recorded in a one-shot command buffer per call (the counts and
    constants come from the batch dimension), as dynamic-shape model exports run."""
    lines = [
        f"// {n} dependent matmuls on tensor<?x16xf32>: IREE records a one-shot command",
        f"// buffer of {n} dispatches per call (dynamic shapes), where static shapes replay one.",
        "// (Written by: python3 -c 'from bench.programs import dynamic_chain_source; ...'.)",
        "func.func @main(%a: tensor<?x16xf32>, %w: tensor<16x16xf32>) -> tensor<?x16xf32> {",
        "  %c0 = arith.constant 0 : index",
        "  %z = arith.constant 0.0 : f32",
        "  %d = tensor.dim %a, %c0 : tensor<?x16xf32>",
    ]
    prev = "%a"
    for i in range(n):
        lines += [
            f"  %e{i} = tensor.empty(%d) : tensor<?x16xf32>",
            f"  %f{i} = linalg.fill ins(%z : f32) outs(%e{i} : tensor<?x16xf32>)"
            " -> tensor<?x16xf32>",
            f"  %m{i} = linalg.matmul ins({prev}, %w : tensor<?x16xf32>, tensor<16x16xf32>)"
            f" outs(%f{i} : tensor<?x16xf32>) -> tensor<?x16xf32>",
        ]
        prev = f"%m{i}"
    return "\n".join(lines + [f"  return {prev} : tensor<?x16xf32>", "}"]) + "\n"


DYNAMIC_CHAIN_LENGTH = 40


def attention_source(blocks: int) -> str:
    """The text of attention_dyn.mlir (`blocks` = ATTENTION_BLOCKS): stacked single-head
    attention blocks over tensor<?x64xf32>, so every dispatch's counts and constants come
    from the token count and IREE records command buffers per call."""
    seq, scores, weights = "tensor<?x64xf32>", "tensor<?x?xf32>", f"tensor<{blocks}x4x64x64xf32>"
    lines = [
        f"// {blocks} stacked single-head attention blocks over a dynamic sequence length:",
        "// per block q, k, v = x Wq, x Wk, x Wv; p = softmax(q k^T / 8); x = (p v) Wo.",
        "// Shapes depend on the token count, so IREE records command buffers per call.",
        "// Weights live in a mutable global that `setup` fills once.",
        "// (Written by: python3 -c 'from bench.programs import attention_source; ...'.)",
        f"util.global private mutable @w : {weights}",
        "",
        f"func.func @setup(%w: {weights}) {{",
        f"  util.global.store %w, @w : {weights}",
        "  return",
        "}",
        "",
        f"func.func @main(%x: {seq}) -> {seq} {{",
        "  %c0 = arith.constant 0 : index",
        "  %zero = arith.constant 0.0 : f32",
        "  %scale = arith.constant 0.125 : f32",
        f"  %w = util.global.load @w : {weights}",
        f"  %n = tensor.dim %x, %c0 : {seq}",
        f"  %ed = tensor.empty(%n) : {seq}",
        f"  %fd = linalg.fill ins(%zero : f32) outs(%ed : {seq}) -> {seq}",
        f"  %es = tensor.empty(%n, %n) : {scores}",
        f"  %fs = linalg.fill ins(%zero : f32) outs(%es : {scores}) -> {scores}",
    ]

    def linear(b: int, name: str, k: int, src: str) -> None:  # %{name}{b} = src @ w[b, k]
        lines.extend([
            f"  %w{b}{name} = tensor.extract_slice %w[{b}, {k}, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1]"
            f" : {weights} to tensor<64x64xf32>",
            f"  %{name}{b} = linalg.matmul ins({src}, %w{b}{name} : {seq}, tensor<64x64xf32>)"
            f" outs(%fd : {seq}) -> {seq}",
        ])

    prev = "%x"
    for b in range(blocks):
        for k, name in enumerate("qkv"):
            linear(b, name, k, prev)
        lines += [
            f"  %s{b} = linalg.generic {{indexing_maps = [affine_map<(i, j, c) -> (i, c)>,"
            " affine_map<(i, j, c) -> (j, c)>, affine_map<(i, j, c) -> (i, j)>],",
            '      iterator_types = ["parallel", "parallel", "reduction"]}',
            f"      ins(%q{b}, %k{b} : {seq}, {seq}) outs(%fs : {scores}) {{",
            "  ^bb0(%a: f32, %bb: f32, %acc: f32):",
            "    %m = arith.mulf %a, %bb : f32",
            "    %sc = arith.mulf %m, %scale : f32",
            "    %r = arith.addf %acc, %sc : f32",
            "    linalg.yield %r : f32",
            f"  }} -> {scores}",
            f"  %p{b} = linalg.softmax dimension(1) ins(%s{b} : {scores}) outs(%es : {scores})"
            f" -> {scores}",
            f"  %a{b} = linalg.matmul ins(%p{b}, %v{b} : {scores}, {seq}) outs(%fd : {seq}) -> {seq}",
        ]
        linear(b, "o", 3, f"%a{b}")
        prev = f"%o{b}"
    lines += [f"  return {prev} : {seq}", "}"]
    return "\n".join(lines) + "\n"


ATTENTION_BLOCKS = 4


def _src(name: str) -> Path:
    return PROGRAM_DIR / f"{name}.mlir"


PROGRAMS: tuple[Program, ...] = (
    Program("mul4", "4-element multiply (host overhead only)", _src("mul4"),
            lambda r: (_f32(r, 4), _f32(r, 4))),
    Program("chain1", "1 dispatch (baseline of the chain)", _src("chain1"),
            lambda r: (_f32(r, 4), _f32(r, 4))),
    Program(f"chain{CHAIN_LENGTH}", f"{CHAIN_LENGTH} chained 4-element dispatches",
            _src(f"chain{CHAIN_LENGTH}"), lambda r: (_f32(r, 4), _f32(r, 4))),
    # The same program translated with --no-fuse: one import call per VM op, the host path
    # of queue calls outside any queue region.
    Program(f"chain{CHAIN_LENGTH}-steps",
            f"{CHAIN_LENGTH} chained dispatches, one import call per op (--no-fuse)",
            _src(f"chain{CHAIN_LENGTH}"), lambda r: (_f32(r, 4), _f32(r, 4)),
            queue_programs=False),
    Program("dynamic_shapes", "1024-element add+mul on tensor<?xf32> (a command buffer per call)",
            _src("dynamic_shapes"), lambda r: (_f32(r, 1024), _f32(r, 1024))),
    Program(f"dynamic_chain{DYNAMIC_CHAIN_LENGTH}",
            f"{DYNAMIC_CHAIN_LENGTH} dependent matmuls on tensor<?x16xf32>, batch 4 "
            "(a one-shot command buffer per call)",
            _src(f"dynamic_chain{DYNAMIC_CHAIN_LENGTH}"),
            lambda r: (_f32(r, 4, 16), _f32(r, 16, 16, scale=0.25))),
    Program("host_loop", "50-iteration host loop (scf.while, 256-wide matvec+tanh)",
            _src("host_loop"), lambda r: (_f32(r, 256, 256, scale=1 / 16), _f32(r, 256))),
    Program("readback_loop", "data-dependent host loop (Collatz of 27: 111 iterations, "
            "a readback each)", _src("readback_loop"), lambda r: (np.array(27, np.float32),)),
    Program("greedy_decode", "greedy decoding, 16 steps (embedding row, 64x256 logits, argmax "
            "read back to index the next row)", _src("greedy_decode"),
            lambda r: (np.array(3, np.int32),),
            setup=lambda r: (_f32(r, 256, 64), _f32(r, 64, 256, scale=0.125))),
    Program("convergence_loop", "convergence loop on 4096 elements (update + max|dx| read back "
            "each iteration; 20 iterations)", _src("convergence_loop"),
            lambda r: (_f32(r, 4096), _f32(r, 4096))),
    Program("attention_dyn", f"{ATTENTION_BLOCKS} stacked attention blocks, tensor<?x64xf32>, "
            "8 tokens", _src("attention_dyn"), lambda r: (_f32(r, 8, 64),),
            setup=lambda r: (_f32(r, ATTENTION_BLOCKS, 4, 64, 64, scale=0.125),)),
    Program("attention_dyn-64", f"{ATTENTION_BLOCKS} stacked attention blocks, tensor<?x64xf32>, "
            "64 tokens", _src("attention_dyn"), lambda r: (_f32(r, 64, 64),),
            setup=lambda r: (_f32(r, ATTENTION_BLOCKS, 4, 64, 64, scale=0.125),)),
    Program("cnn", "small CNN (3x conv+relu+pool)", _src("cnn"),
            lambda r: (_f32(r, 1, 34, 34, 4),),
            setup=lambda r: (_f32(r, 3, 3, 4, 8, scale=0.3), _f32(r, 3, 3, 8, 16, scale=0.2),
                             _f32(r, 3, 3, 16, 32, scale=0.15))),
    Program("mlp", "MLP 784-512-512-10, batch 32", _src("mlp"),
            lambda r: (_f32(r, 32, 784),),
            setup=lambda r: (_f32(r, 784, 512, scale=0.04), _f32(r, 512, scale=0.1),
                             _f32(r, 512, 512, scale=0.04), _f32(r, 512, scale=0.1),
                             _f32(r, 512, 10, scale=0.04), _f32(r, 10, scale=0.1))),
    Program("matmul512", "512x512x512 matmul", _src("matmul512"),
            lambda r: (_f32(r, 512, 512), _f32(r, 512, 512))),
    Program("elementwise1m", "1M-element elementwise chain", _src("elementwise1m"),
            lambda r: (_f32(r, 1 << 20), _f32(r, 1 << 20))),
    Program("model-mlp", "PyTorch MLP (examples/models)", None, None, model="mlp"),
    # iree-turbine's dynamic-shape form: main$async records a command buffer per call
    Program("model-mlp-dynbatch", "PyTorch MLP, dynamic batch dim, batch 4 (examples/models)",
            None, None, model="mlp", dynamic_batch=True),
    Program("model-resnet18", "PyTorch ResNet-18-shaped CNN, 224^2 (examples/models)", None,
            None, model="resnet18", quick=False),
    Program("model-gpt2", "PyTorch GPT-2-style decoder (examples/models)", None, None,
            model="gpt2", quick=False),
)

BY_NAME = {p.name: p for p in PROGRAMS}
