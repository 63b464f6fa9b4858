"""CUDA executables without a GPU: the `cuda-nvptx-fb` reader, the PTX it hands the driver,
and the `--dump-output=executables` listing.

- Every tensor program of the corpus, built for CUDA, translates; every PTX module in it
  assembles with `ptxas -arch=<its .target>` (a real check of what the driver would JIT).
- Each export's kernel name, binding count and constant count equal the `.entry`'s
  parameter list in the PTX: bindings first as `.u64` pointers, then `.b32` constants
  (the launch convention of IREE's CUDA HAL, runtime/src/iree/hal/drivers/cuda).
- Hand-built FlatBuffers give exactly the values written; mutated ones give LoaderError
  only, never another exception.
"""

from __future__ import annotations

import random
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import flatbuffers
import pytest

from conftest import corpus_cases
from cuda_driver_double import ptx_entries
from runtime_support.cuda.executable_def import MAGIC, read_cuda_executable
from runtime_support.errors import LoaderError
from translator.codegen import write_package
from translator.reader import read_module_file

REPO = Path(__file__).resolve().parents[2]
# iree-compile 3.13 refuses sm_90/sm_90a for this flag ("missing GPU target");
TARGETS = ("sm_75", "sm_80", "sm_86", "sm_89")  # CUDA 13 ptxas has no sm_70


def cuda_flags(target: str) -> tuple[str, ...]:
    return ("--iree-hal-target-device=cuda", f"--iree-cuda-target={target}")


def _cuda_segments(vmfb: Path):
    module = read_module_file(vmfb)
    return module, [bytes(s.data) for s in module.rodata if bytes(s.data[:4]) == MAGIC]


TENSOR_PROGRAMS = sorted({c.name: c for c in corpus_cases(variants=("embedded-elf",), kinds=("tensor",))}.values(), key=lambda c: c.name)


@pytest.mark.parametrize("case", TENSOR_PROGRAMS, ids=lambda c: c.name)
def test_corpus_cuda_build_translates_and_ptx_assembles(case, compile_mlir, tmp_path):
    flags = cuda_flags("sm_80") + tuple(f for f in case.flags if not f.startswith("--iree-hal") and not f.startswith("--iree-llvmcpu"))
    vmfb = compile_mlir(case.source, flags)
    module, executables = _cuda_segments(vmfb)
    assert executables, "a CUDA build carries at least one cuda-nvptx-fb executable"
    write_package(module, tmp_path, "pkg", format_code=False)
    ptxas = shutil.which("ptxas")
    for data in executables:
        exe = read_cuda_executable(data)
        for module_ in exe.modules:
            assert module_.is_ptx and module_.ptx_target() == "sm_80"
        for e in exe.exports:
            ptx = exe.modules[e.module_ordinal].image.decode()
            params = ptx_entries(ptx)[e.kernel_name]
            assert params == [".u64"] * e.binding_count + [".b32"] * e.constant_count
            x, y, z = e.block_dims
            assert 0 < x * y * z <= 1024
        if ptxas is None:
            continue
        for i, module_ in enumerate(exe.modules):
            src = tmp_path / f"m{i}.ptx"
            src.write_bytes(module_.image)
            res = subprocess.run(
                [ptxas, f"-arch={module_.ptx_target()}", str(src), "-o", str(tmp_path / f"m{i}.cubin")],
                capture_output=True, text=True,
            )
            assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("target", TARGETS)
def test_every_cuda_target_assembles(target, compile_mlir, tmp_path):
    vmfb = compile_mlir(REPO / "examples" / "simple_mul.mlir", cuda_flags(target))
    _, executables = _cuda_segments(vmfb)
    exe = read_cuda_executable(executables[0])
    assert [m.ptx_target() for m in exe.modules] == [target]
    (e,) = exe.exports
    assert e.kernel_name == "simple_mul_dispatch_0_elementwise_4_f32"
    assert (e.block_dims, e.shared_memory_size, e.constant_count) == ((32, 1, 1), 0, 0)
    assert e.binding_flags == (3, 3, 2)  # two READ_ONLY|INDIRECT inputs, one INDIRECT output
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH")
    src = tmp_path / "k.ptx"
    src.write_bytes(exe.modules[0].image)
    res = subprocess.run([ptxas, f"-arch={target}", str(src), "-o", str(tmp_path / "k.cubin")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_dump_lists_cuda_kernels(compile_mlir):
    vmfb = compile_mlir(REPO / "examples" / "simple_mul.mlir", cuda_flags("sm_80"))
    res = subprocess.run(
        [sys.executable, "-m", "translator.cli", "--dump", "--dump-output=executables", str(vmfb)],
        capture_output=True, text=True, cwd=REPO,
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "Executables:"
    assert re.fullmatch(r"  \.rodata\[\s*\d+\] cuda-nvptx-fb, \d+ bytes: 1 module\(s\), 1 export\(s\)", lines[1])
    assert lines[2].startswith("    module[0]: PTX, .target sm_80, ")
    assert lines[3] == (
        "    export[0] simple_mul_dispatch_0_elementwise_4_f32: module 0, block (32, 1, 1), "
        "shared memory 0 bytes, 0 constants, 3 bindings "
        "[READ_ONLY|INDIRECT, READ_ONLY|INDIRECT, INDIRECT]"
    )


# --- hand-built FlatBuffers ------------------------------------------------------------------


def build_executable(exports, modules, *, version=0, content_pad=0) -> bytes:
    """A `cuda-nvptx-fb` executable built field by field with the flatbuffers Builder.

    exports: dicts with name, module, block (x, y, z), smem, constants, flags.
    """
    b = flatbuffers.Builder(256)
    module_offs = []
    for image in modules:
        s = b.CreateString(image)
        b.StartObject(1)
        b.PrependUOffsetTRelativeSlot(0, s, 0)
        module_offs.append(b.EndObject())
    export_offs = []
    for e in exports:
        name = b.CreateString(e["name"])
        b.StartVector(8, len(e["flags"]), 8)
        for f in reversed(e["flags"]):
            b.PrependUint64(f)
        flags = b.EndVector()
        b.StartObject(7)
        b.PrependUint32Slot(0, e["module"], 0)
        b.PrependUOffsetTRelativeSlot(1, name, 0)
        b.Prep(4, 12)
        for v in reversed(e["block"]):
            b.PrependUint32(v)
        b.Slot(2)
        b.PrependUint32Slot(3, e["smem"], 0)
        b.PrependUint32Slot(4, e["constants"], 0)
        b.PrependUOffsetTRelativeSlot(5, flags, 0)
        export_offs.append(b.EndObject())

    def vec(offs):
        b.StartVector(4, len(offs), 4)
        for o in reversed(offs):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    exports_vec, modules_vec = vec(export_offs), vec(module_offs)
    b.StartObject(3)
    b.PrependUOffsetTRelativeSlot(0, exports_vec, 0)
    b.PrependUOffsetTRelativeSlot(1, modules_vec, 0)
    root = b.EndObject()
    b.Finish(root, file_identifier=MAGIC)
    body = bytes(b.Output())
    header = struct.pack("<4sIQ6Q", MAGIC, version, len(body) + content_pad, *([0] * 6))
    return header + body


EXPORTS = [
    {"name": "k0", "module": 0, "block": (32, 8, 1), "smem": 4096, "constants": 4, "flags": [3, 3, 2]},
    {"name": "k1", "module": 1, "block": (64, 1, 1), "smem": 0, "constants": 0, "flags": [0]},
]


def test_hand_built_executable_reads_back_exactly():
    exe = read_cuda_executable(build_executable(EXPORTS, [b".target sm_80\n", b"\x7fELF cubin"]))
    assert [(e.kernel_name, e.module_ordinal, e.block_dims, e.shared_memory_size, e.constant_count, e.binding_flags) for e in exe.exports] == [
        ("k0", 0, (32, 8, 1), 4096, 4, (3, 3, 2)),
        ("k1", 1, (64, 1, 1), 0, 0, (0,)),
    ]
    assert exe.modules[0].ptx_target() == "sm_80" and not exe.modules[1].is_ptx


@pytest.mark.parametrize(
    "data, message",
    [
        (b"CDA1", "shorter than its 64-byte header"),
        (b"XXXX" + bytes(60), "has magic"),
        (build_executable(EXPORTS, [b"a", b"b"], version=1), "header version 1"),
        (build_executable(EXPORTS, [b"a", b"b"], content_pad=8), "content bytes"),
        (build_executable(EXPORTS, [b"a"]), "names module 1 of 1"),
        (build_executable([dict(EXPORTS[0], block=(0, 1, 1))], [b"a"]), "block dimensions"),
        (build_executable([dict(EXPORTS[0], block=(1024, 2, 1))], [b"a"]), "block dimensions"),
        (build_executable([dict(EXPORTS[0], constants=5000)], [b"a"]), "kernel parameters"),
    ],
)
def test_malformed_executables_are_refused(data, message):
    with pytest.raises(LoaderError, match=re.escape(message)):
        read_cuda_executable(data)


def test_mutated_executables_raise_only_loader_error():
    good = build_executable(EXPORTS, [b".target sm_80\n" * 4, b"\x7fELF cubin"])
    rng = random.Random(1234)
    outcomes = {"ok": 0, "rejected": 0}
    for _ in range(3000):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(data))
            data[pos] = rng.choice((0, 0xFF, rng.randrange(256), data[pos] ^ (1 << rng.randrange(8))))
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data))]
        try:
            read_cuda_executable(bytes(data))
            outcomes["ok"] += 1
        except LoaderError as e:
            assert "\n" not in str(e)
            outcomes["rejected"] += 1
    assert outcomes["rejected"] > 500 and outcomes["ok"] > 100, outcomes
