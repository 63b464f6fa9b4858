"""Executable loaders (runtime_support/loaders) on real IREE 3.13 kernels.

Every program is compiled at test time with the pinned iree-compile. Workgroup counts of
static dispatches are read from the same program compiled to VM IR (`--compile-to=vm`),
so the tests dispatch exactly what the host code would.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import struct
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from iree_tools import find_tool  # IREE tools on PATH or in the iree packages
from runtime_support.errors import LoaderError, StatusCode, VMError
from runtime_support.loaders import load_executable, supported_formats
from runtime_support.loaders import elf as elf_loader
from runtime_support.loaders import executable as executable_mod
from runtime_support.loaders import kernel_abi as abi

pytestmark = pytest.mark.skipif(
    find_tool("iree-compile") is None, reason="iree-compile not installed"
)

FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
)
EMBEDDED = "embedded-elf-x86_64"
SYSTEM = "system-elf-x86_64"

# --- programs ----------------------------------------------------------------------------

MUL = """
func.func @mul(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

MATMUL = """
func.func @mm(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>) -> tensor<64x48xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x48xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>)
                     outs(%f : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %r : tensor<64x48xf32>
}
"""

DYNAMIC = """
func.func @dyn(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                                        affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%a, %b : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %m, %x : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
"""

ELEMENTWISE_2D = """
func.func @ew2d(%a: tensor<384x1000xf32>, %b: tensor<384x1000xf32>) -> tensor<384x1000xf32> {
  %0 = arith.addf %a, %b : tensor<384x1000xf32>
  %1 = arith.mulf %0, %a : tensor<384x1000xf32>
  return %1 : tensor<384x1000xf32>
}
"""

# A hand-written executable with an explicit 5x3x2 grid: each workgroup stores
# x + 1000 y + 1000000 z at out[z, y, x], which checks the id of every workgroup.
GRID = """
#layout = #hal.pipeline.layout<bindings = [#hal.pipeline.binding<storage_buffer>]>
hal.executable.source private @ex {
  hal.executable.export public @grid ordinal(0) layout(#layout)
      count(%device: !hal.device) -> (index, index, index) {
    %x = arith.constant 5 : index
    %y = arith.constant 3 : index
    %z = arith.constant 2 : index
    hal.return %x, %y, %z : index, index, index
  }
  builtin.module {
    func.func @grid() {
      %out = hal.interface.binding.subspan layout(#layout) binding(0) : memref<2x3x5xi32>
      %x = hal.interface.workgroup.id[0] : index
      %y = hal.interface.workgroup.id[1] : index
      %z = hal.interface.workgroup.id[2] : index
      %xi = arith.index_cast %x : index to i32
      %yi = arith.index_cast %y : index to i32
      %zi = arith.index_cast %z : index to i32
      %c1000 = arith.constant 1000 : i32
      %c1000000 = arith.constant 1000000 : i32
      %t0 = arith.muli %yi, %c1000 : i32
      %t1 = arith.muli %zi, %c1000000 : i32
      %t2 = arith.addi %xi, %t0 : i32
      %v = arith.addi %t2, %t1 : i32
      memref.store %v, %out[%z, %y, %x] : memref<2x3x5xi32>
      return
    }
  }
}
func.func @main() -> tensor<2x3x5xi32> {
  %0 = flow.dispatch @ex::@grid() : () -> tensor<2x3x5xi32>
  return %0 : tensor<2x3x5xi32>
}
"""


class Program:
    """One compiled program: its kernel libraries and its dispatch sites."""

    def __init__(self, vmfb: Path, vm_text: str | None) -> None:
        self.vmfb = vmfb
        with zipfile.ZipFile(vmfb) as z:
            self.kernels = {n: z.read(n) for n in z.namelist() if n.endswith(".so")}
        self.vm_text = vm_text

    @property
    def kernel(self) -> bytes:
        assert len(self.kernels) == 1, self.kernels.keys()
        return next(iter(self.kernels.values()))

    def dispatch_sites(self) -> list[tuple[str, tuple[int, int, int]]]:
        """(export name, static workgroup count) of each dispatch in the VM IR."""
        sites = []
        for func in self.vm_text.split("vm.func ")[1:]:
            consts = dict(re.findall(r"(%[\w]+) = vm\.const\.i32 (-?\d+)", func))
            rodata = dict(
                re.findall(r'vm\.rodata private @(\w+) <alignment = 1> "(\w+)"', self.vm_text)
            )
            lookups = dict(
                re.findall(
                    r"(%\w+) = vm\.call @hal\.executable\.lookup\.function\(%\w+, %(\w+)\)", func
                )
            )
            for m in re.finditer(
                r"@hal\.command_buffer\.dispatch\(%\w+, %\w+, (%\w+), " r"(%\w+), (%\w+), (%\w+),",
                func,
            ):
                name = rodata[lookups[m.group(1)]]
                counts = tuple(int(consts[m.group(i)]) for i in (2, 3, 4))
                sites.append((name, counts))
        return sites


_cache: dict[tuple, Program] = {}


def build(tmp_root: Path, source: str, embedded: bool = True, vm: bool = True) -> Program:
    flags = FLAGS + (() if embedded else ("--iree-llvmcpu-link-embedded=false",))
    key = (source, flags, vm)
    if key not in _cache:
        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:12]
        # Named by the source alone, so both builds of a program share source locations.
        src = tmp_root / f"{hashlib.sha256(source.encode()).hexdigest()[:12]}.mlir"
        src.write_text(source)
        out = tmp_root / f"{digest}.vmfb"
        subprocess.run(
            ["iree-compile", *flags, str(src), "-o", str(out)],
            check=True,
            capture_output=True,
            text=True,
        )
        vm_text = None
        if vm:
            vm_text = subprocess.run(
                ["iree-compile", *flags, "--compile-to=vm", str(src), "-o", "-"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        _cache[key] = Program(out, vm_text)
    return _cache[key]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("kernels")


def bindings(*arrays: np.ndarray) -> list[tuple[int, int]]:
    return [(a.ctypes.data, a.nbytes) for a in arrays]


def image_maps(base: int, size: int) -> list[tuple[int, int, str]]:
    rows = []
    with open("/proc/self/maps") as f:
        for line in f:
            span, perms = line.split()[:2]
            lo, hi = (int(v, 16) for v in span.split("-"))
            if lo < base + size and hi > base:
                rows.append((lo, hi, perms))
    return rows


# --- registry ----------------------------------------------------------------------------


def test_registry():
    assert supported_formats() == [EMBEDDED, SYSTEM, "vmvx-bytecode-fb"]
    with pytest.raises(LoaderError, match="was not translated"):
        load_executable("vmvx-bytecode-fb", b"")  # (only translated VMVX runs)
    with pytest.raises(LoaderError, match="cuda-nvptx-fb"):
        load_executable(b"cuda-nvptx-fb", b"")


# --- loading and dispatching real kernels ------------------------------------------------


@pytest.mark.parametrize("fmt", [EMBEDDED, SYSTEM])
def test_mul(root, fmt):
    program = build(root, MUL, embedded=fmt == EMBEDDED)
    ((name, counts),) = program.dispatch_sites() if fmt == EMBEDDED else [(None, (1, 1, 1))]
    with load_executable(fmt, program.kernel) as exe:
        assert exe.format == fmt
        assert [e.name for e in exe.exports] == ["mul_dispatch_0_elementwise_4_f32"]
        if name:
            assert exe.lookup(name) == 0 and exe.lookup(name.encode()) == 0
        info = exe.exports[0]
        assert (info.constant_count, info.binding_count) == (0, 3)
        assert info.workgroup_size == (1, 1, 1)
        a = np.array([1.5, -2, 3, 4], np.float32)
        b = np.array([2, 3, -0.5, 8], np.float32)
        out = np.zeros(4, np.float32)
        exe.dispatch(0, counts, [], bindings(a, b, out))
        np.testing.assert_array_equal(out, a * b)
        with pytest.raises(VMError) as err:
            exe.lookup("nope")
        assert err.value.code == StatusCode.NOT_FOUND
    with pytest.raises(VMError) as err:
        exe.dispatch(0, counts, [], bindings(a, b, out))
    assert err.value.code == StatusCode.FAILED_PRECONDITION


def test_export_names_match_dispatch_sites(root):
    for source in (MUL, MATMUL, ELEMENTWISE_2D, DYNAMIC):
        program = build(root, source)
        with load_executable(EMBEDDED, program.kernel) as exe:
            exported = [e.name for e in exe.exports]
            looked_up = re.findall(
                r'vm\.rodata private @_utf8_\w+ <alignment = 1> "(\w+)"', program.vm_text
            )
            assert exported and set(exported) <= set(looked_up)
            assert exe.exports[0].source_location is not None


@pytest.mark.parametrize("fmt", [EMBEDDED, SYSTEM])
def test_matmul_multiple_workgroups(root, fmt):
    program = build(root, MATMUL, embedded=fmt == EMBEDDED)
    ((name, counts),) = build(root, MATMUL).dispatch_sites()
    assert counts[0] * counts[1] * counts[2] > 1
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 32), dtype=np.float32)
    b = rng.standard_normal((32, 48), dtype=np.float32)
    with load_executable(fmt, program.kernel) as exe:
        ordinal = exe.lookup(name)
        for native in (True, False):
            out = np.full((64, 48), np.nan, np.float32)
            exe.dispatch(ordinal, counts, [], bindings(a, b, out), native=native)
            np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)


def test_dynamic_shape_push_constants(root):
    program = build(root, DYNAMIC)
    with load_executable(EMBEDDED, program.kernel) as exe:
        info = exe.exports[0]
        assert info.constant_count == 4 and info.binding_count == 3
        n = 10_000
        rng = np.random.default_rng(1)
        a = rng.standard_normal(n, dtype=np.float32)
        b = rng.standard_normal(n, dtype=np.float32)
        constants = [n & 0xFFFFFFFF, n >> 32] * 2  # two index dims as (lo, hi) words
        # One workgroup computes one tile: its size is how many outputs it wrote.
        probe = np.full(n, np.nan, np.float32)
        exe.dispatch(0, (1, 1, 1), constants, bindings(a, b, probe))
        tile = int(np.count_nonzero(~np.isnan(probe)))
        assert 0 < tile < n
        count = -(-n // tile)
        assert count > 1
        for native in (True, False):
            out = np.full(n, np.nan, np.float32)
            exe.dispatch(0, (count, 1, 1), constants, bindings(a, b, out), native=native)
            np.testing.assert_allclose(out, a * b + a, rtol=1e-6)
        with pytest.raises(VMError) as err:
            exe.dispatch(0, (count, 1, 1), constants[:3], bindings(a, b, out))
        assert err.value.code == StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("workers", [1, 2, 3, 7, 30, 64])
@pytest.mark.parametrize("native", [True, False])
def test_grid_workgroup_ids(root, workers, native):
    program = build(root, GRID)
    ((name, counts),) = program.dispatch_sites()
    assert counts == (5, 3, 2)
    with load_executable(EMBEDDED, program.kernel) as exe:
        out = np.full((2, 3, 5), -1, np.int32)
        exe.dispatch(exe.lookup(name), counts, [], bindings(out), workers=workers, native=native)
        z, y, x = np.meshgrid(range(2), range(3), range(5), indexing="ij")
        np.testing.assert_array_equal(out, x + 1000 * y + 1000000 * z)


def test_loops_and_workers_identical(root):
    program = build(root, ELEMENTWISE_2D)
    ((name, counts),) = program.dispatch_sites()
    rng = np.random.default_rng(2)
    a = rng.standard_normal((384, 1000), dtype=np.float32)
    b = rng.standard_normal((384, 1000), dtype=np.float32)
    with load_executable(EMBEDDED, program.kernel) as exe:
        results = []
        for native, workers in ((False, 1), (True, 1), (True, 2), (True, 5), (False, 3)):
            out = np.full_like(a, np.nan)
            exe.dispatch(
                exe.lookup(name), counts, [], bindings(a, b, out), workers=workers, native=native
            )
            results.append(out)
        for out in results:
            assert out.tobytes() == results[0].tobytes()
        np.testing.assert_allclose(results[0], (a + b) * a, rtol=1e-6)


def test_zero_workgroups_is_a_no_op(root):
    program = build(root, MUL)
    with load_executable(EMBEDDED, program.kernel) as exe:
        out = np.full(4, 7, np.float32)
        exe.dispatch(0, (0, 1, 1), [], bindings(out, out, out))
        assert (out == 7).all()
        with pytest.raises(VMError):
            exe.dispatch(0, (1, 1, 1 << 16), [], bindings(out, out, out))
        with pytest.raises(VMError) as err:
            exe.dispatch(1, (1, 1, 1), [], [])
        assert err.value.code == StatusCode.OUT_OF_RANGE


# --- failures reported by kernels ----------------------------------------------------------


def _jit(ir: str, name: str):
    """(engine to keep alive, address of `name`) for a fake kernel written in LLVM IR."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(ir), tm)
    engine.finalize_object()
    return engine, engine.get_function_address(name)


_FAILING_IR = """
define i32 @fail_at_three(ptr %env, ptr %ds, ptr %wg) {
  %x = load i32, ptr %wg
  %is3 = icmp eq i32 %x, 3
  %rc = select i1 %is3, i32 42, i32 0
  ret i32 %rc
}
"""


@pytest.mark.parametrize("native", [True, False])
def test_nonzero_kernel_return_is_internal_error(root, native):
    engine, address = _jit(_FAILING_IR, "fail_at_three")
    program = build(root, MUL)
    with load_executable(EMBEDDED, program.kernel) as exe:
        exe._functions[0] = address  # white box: a kernel that fails on workgroup x == 3
        exe._python_fns[0] = abi.DISPATCH_FN(address)
        out = np.zeros(4, np.float32)
        exe.dispatch(0, (3, 1, 1), [], bindings(out, out, out), native=native)
        with pytest.raises(VMError) as err:
            exe.dispatch(0, (8, 1, 1), [], bindings(out, out, out), native=native)
        assert err.value.code == StatusCode.INTERNAL
        assert "mul_dispatch_0_elementwise_4_f32" in str(err.value)
        assert "42" in str(err.value)


# --- memory layout: protections and relocations --------------------------------------------


def test_protections(root):
    program = build(root, MATMUL)
    with load_executable(EMBEDDED, program.kernel) as exe:
        image = exe.image
        rows = image_maps(image.base, image.size)
        assert rows
        perms = {p[:3] for _, _, p in rows}
        for lo, hi, p in rows:
            assert not ("w" in p and "x" in p), (hex(lo), p)
        assert "r-x" in perms  # .text
        assert "r--" in perms  # headers/rodata and the RELRO data
        # Every RW segment here is fully covered by PT_GNU_RELRO: nothing stays writable.
        assert all("w" not in p for _, _, p in rows)
        base, size = image.base, image.size
    assert image_maps(base, size) == []  # close() unmapped it


def _relocations(data: bytes):
    import io

    elf = ELFFile(io.BytesIO(data))
    rela = elf.get_section_by_name(".rela.dyn")
    return [(r["r_offset"], r["r_info_type"], r["r_addend"]) for r in rela.iter_relocations()]


@pytest.mark.parametrize("source", [MUL, MATMUL, DYNAMIC, GRID])
def test_relocations_match_pyelftools(root, source):
    data = build(root, source).kernel
    expected = _relocations(data)
    assert expected and all(kind == elf_loader.R_X86_64_RELATIVE for _, kind, _ in expected)
    with load_executable(EMBEDDED, data) as exe:
        image = exe.image
        assert image.relocation_counts == {"R_X86_64_RELATIVE": len(expected)}
        for offset, _, addend in expected:
            word = ctypes.c_uint64.from_address(image.bias + offset).value
            assert word == image.bias + addend
            assert image.relocated_words[offset] == word


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


@pytest.mark.parametrize("source", [MUL, MATMUL])
def test_relocations_match_dynamic_linker(root, source):
    """Load the system-dylib build with both our loader and dlopen: same words."""
    data = build(root, source, embedded=False).kernel
    expected = _relocations(data)
    with load_executable(SYSTEM, data) as reference:
        info = _DlInfo()
        dladdr = ctypes.CDLL(None).dladdr
        dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        assert dladdr(reference.library.query_address, ctypes.byref(info))
        dl_base = info.dli_fbase
        ours = elf_loader.load_elf_image(data)
        try:
            for offset, _, _ in expected:
                theirs = ctypes.c_uint64.from_address(dl_base + offset).value - dl_base
                mine = ctypes.c_uint64.from_address(ours.bias + offset).value - ours.bias
                assert mine == theirs
            assert (
                ours.symbol(abi.QUERY_SYMBOL) - ours.bias
                == reference.library.query_address - dl_base
            )
            # The same bytes queried through our loader give the same export table.
            mine_exe = executable_mod.Executable(
                "test", ours.symbol(abi.QUERY_SYMBOL), ours.memory, lambda: None
            )
            assert mine_exe.exports == reference.exports
            assert mine_exe.library_name == reference.library_name
        finally:
            ours.close()


def test_embedded_and_system_builds_agree(root):
    embedded = build(root, MATMUL).kernel
    system = build(root, MATMUL, embedded=False).kernel
    with load_executable(EMBEDDED, embedded) as a, load_executable(SYSTEM, system) as b:
        assert a.exports == b.exports


# --- executable constants and imports ------------------------------------------------------


def test_constant_count_mismatch(root):
    data = build(root, MUL).kernel
    with pytest.raises(VMError) as err:
        load_executable(EMBEDDED, data, constants=[1, 2])
    assert err.value.code == StatusCode.FAILED_PRECONDITION
    load_executable(EMBEDDED, data, constants=[]).close()


def test_unknown_required_import_is_a_load_error():
    names = [
        ctypes.create_string_buffer(b"?optional_thing"),
        ctypes.create_string_buffer(b"host_missing"),
    ]
    table = (ctypes.c_void_p * 2)(*(ctypes.addressof(n) for n in names))
    exe = executable_mod.Executable.__new__(executable_mod.Executable)
    exe._memory = executable_mod.LibraryMemory()
    exe._env = abi.EnvironmentV0()
    with pytest.raises(LoaderError, match="host_missing"):
        exe._resolve_imports(abi.ImportTableV0(2, ctypes.addressof(table)))
    exe._resolve_imports(abi.ImportTableV0(1, ctypes.addressof(table)))
    assert exe._import_funcs[0] is None  # optional and missing: NULL


def test_processor_data():
    words = abi.host_processor_data()
    assert len(words) == abi.PROCESSOR_DATA_CAPACITY
    assert all(w == 0 for w in words[1:])
    assert not words[0] & (0b111 << 50)  # never AMX


# --- malformed ELF files --------------------------------------------------------------------


def _patched(data: bytes, offset: int, fmt: str, value) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def _phdrs(data: bytes):
    (phoff,) = struct.unpack_from("<Q", data, 32)
    (phnum,) = struct.unpack_from("<H", data, 56)
    for i in range(phnum):
        yield phoff + 56 * i, struct.unpack_from("<IIQQQQQQ", data, phoff + 56 * i)


def _first_load(data: bytes, flags: int):
    for offset, (kind, pflags, *_rest) in _phdrs(data):
        if kind == 1 and pflags == flags:
            return offset
    raise AssertionError("no such PT_LOAD")


def test_malformed_elfs(root):
    data = build(root, MUL).kernel
    cases = {
        "empty": b"",
        "truncated header": data[:40],
        "truncated program headers": data[:100],
        "truncated segments": data[: len(data) // 3],
        "bad magic": b"\x7fELG" + data[4:],
        "32-bit": data[:4] + b"\x01" + data[5:],
        "big-endian": data[:5] + b"\x02" + data[6:],
        "wrong machine": _patched(data, 18, "<H", 0xB7),  # EM_AARCH64
        "executable type": _patched(data, 16, "<H", 2),  # ET_EXEC
        "phdr table out of range": _patched(data, 32, "<Q", len(data) - 8),
        "no phdrs": _patched(data, 56, "<H", 0),
        "bad phentsize": _patched(data, 54, "<H", 32),
    }
    text = _first_load(data, 5)
    cases["segment offset out of range"] = _patched(data, text + 8, "<Q", 1 << 40)
    cases["segment size out of range"] = _patched(data, text + 8, "<Q", len(data) - 16)
    end = max(o + fs for _, (kind, _, o, _, _, fs, _, _) in _phdrs(data) if kind == 1)
    cases["truncated segments"] = _patched(data, 40, "<Q", 0)[: end - 1]  # no shdrs
    cases["filesz > memsz"] = _patched(data, text + 40, "<Q", 1)
    cases["writable and executable"] = _patched(data, text + 4, "<I", 7)
    cases["huge address range"] = _patched(data, text + 40, "<Q", 1 << 50)
    rw = _first_load(data, 6)
    cases["segments overlap"] = _patched(data, rw + 16, "<Q", 0x10)

    import io

    elf = ELFFile(io.BytesIO(data))
    rela = elf.get_section_by_name(".rela.dyn")["sh_offset"]
    cases["unknown relocation"] = _patched(data, rela + 8, "<Q", 37)  # R_X86_64_IRELATIVE
    cases["relocation outside the image"] = _patched(data, rela, "<Q", 1 << 32)
    cases["relocation symbol out of range"] = _patched(data, rela + 8, "<Q", (9 << 32) | 1)
    dynsym = elf.get_section_by_name(".dynsym")["sh_offset"]
    cases["undefined symbol"] = _patched(data, dynsym + 24 + 6, "<H", 0)
    dynamic = elf.get_section_by_name(".dynamic")["sh_offset"]
    cases["DT_NEEDED"] = _patched(data, dynamic, "<q", 1)
    hash_ = elf.get_section_by_name(".hash")["sh_offset"]
    cases["symbol count out of range"] = _patched(data, hash_ + 4, "<I", 1 << 19)

    for label, blob in cases.items():
        with pytest.raises(LoaderError) as err:
            load_executable(EMBEDDED, blob)
        if label == "unknown relocation":
            assert "type 37" in str(err.value)
        if label == "wrong machine":
            assert "EM_AARCH64" in str(err.value)
    with pytest.raises(LoaderError):
        load_executable(SYSTEM, b"\x7fELF garbage")


def test_fatelf_wrapper(root):
    data = build(root, MUL).kernel
    offset = 64
    header = struct.pack("<IHBB", elf_loader.FATELF_MAGIC, 1, 2, 0)
    other = struct.pack("<HBBBBBBQQ", 0xB7, 0, 0, 2, 1, 0, 0, offset, len(data))
    ours = struct.pack("<HBBBBBBQQ", 62, 0, 0, 2, 1, 0, 0, offset, len(data))
    blob = (header + other + ours).ljust(offset, b"\0") + data
    with load_executable(EMBEDDED, blob) as exe:
        assert exe.exports[0].name == "mul_dispatch_0_elementwise_4_f32"
    with pytest.raises(LoaderError, match="FatELF"):
        load_executable(EMBEDDED, (header[:6] + b"\x01\0" + other).ljust(offset, b"\0") + data)


def test_fuzzed_headers_never_crash(root, tmp_path):
    """Random byte flips in the ELF and program headers: LoaderError or a clean load.

    Runs in a child process so that a crash fails this test rather than the run.
    """
    path = tmp_path / "kernel.so"
    path.write_bytes(build(root, MUL).kernel)
    script = textwrap.dedent(f"""
        import random, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from runtime_support.errors import LoaderError
        from runtime_support.loaders.elf import load_elf_image
        data = open({str(path)!r}, "rb").read()
        rng = random.Random(1234)
        outcomes = {{"loaded": 0, "LoaderError": 0}}
        for _ in range(400):
            blob = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                blob[rng.randrange(0, 64 + 7 * 56)] = rng.randrange(256)
            try:
                load_elf_image(bytes(blob)).close()
                outcomes["loaded"] += 1
            except LoaderError:
                outcomes["LoaderError"] += 1
        print(outcomes)
    """)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "LoaderError" in result.stdout


_RECORD_IR = """
define i32 @record(ptr %env, ptr %ds, ptr %wg) {
  %x = load i32, ptr %wg
  %pid_p = getelementptr i8, ptr %wg, i64 12
  %pid = load i32, ptr %pid_p
  %mc_p = getelementptr i8, ptr %ds, i64 22
  %mc = load i8, ptr %mc_p
  %mc32 = zext i8 %mc to i32
  %v0 = mul i32 %mc32, 1000
  %v = add i32 %v0, %pid
  %bindings_p = getelementptr i8, ptr %ds, i64 32
  %bindings = load ptr, ptr %bindings_p
  %out = load ptr, ptr %bindings
  %xi = zext i32 %x to i64
  %slot = getelementptr i32, ptr %out, i64 %xi
  store i32 %v, ptr %slot
  %lm_p = getelementptr i8, ptr %wg, i64 16
  %lm = load ptr, ptr %lm_p
  %ls_p = getelementptr i8, ptr %wg, i64 24
  %ls = load i32, ptr %ls_p
  %lmi = ptrtoint ptr %lm to i64
  %misaligned = and i64 %lmi, 63
  %aligned = icmp eq i64 %misaligned, 0
  %nonnull = icmp ne i64 %lmi, 0
  %size_ok = icmp eq i32 %ls, 8192
  %ok0 = and i1 %aligned, %nonnull
  %ok = and i1 %ok0, %size_ok
  br i1 %ok, label %touch, label %bad
touch:
  %last = getelementptr i8, ptr %lm, i64 8191
  store i8 1, ptr %last
  store i8 1, ptr %lm
  ret i32 0
bad:
  ret i32 9
}
"""


@pytest.mark.parametrize("native", [True, False])
def test_worker_partitioning_and_local_memory(root, native):
    """Every tile runs once; each worker has its own processor id and local memory.
    The ctypes loop gives workers contiguous slices; on the native pool each participant
    starts on its own contiguous range and then takes tiles from the others' ranges, so
    which participant runs a tile depends on timing."""
    import dataclasses

    engine, address = _jit(_RECORD_IR, "record")
    with load_executable(EMBEDDED, build(root, MUL).kernel) as exe:
        exe._functions[0] = address  # white box: a recording kernel that needs 2 pages
        exe._python_fns[0] = abi.DISPATCH_FN(address)
        exe.exports[0] = dataclasses.replace(exe.exports[0], local_memory_pages=2)
        for workers in (1, 3, 4):
            out = np.full(30, -1, np.int32)
            exe.dispatch(0, (30, 1, 1), [], bindings(out, out, out), workers=workers, native=native)
            assert all(v // 1000 == workers for v in out), out  # max_concurrency
            owners = [v % 1000 for v in out]
            assert all(0 <= w < workers for w in owners), out  # every tile ran once
            if not native:
                starts = [30 * w // workers for w in range(workers)]  # contiguous slices
                expected = [max(w for w in range(workers) if starts[w] <= t) for t in range(30)]
                assert owners == expected


_COUNT_IR = """
define i32 @count(ptr %env, ptr %ds, ptr %wg) {
  %x = load i32, ptr %wg
  %pid_p = getelementptr i8, ptr %wg, i64 12
  %pid = load i32, ptr %pid_p
  %mc_p = getelementptr i8, ptr %ds, i64 22
  %mc = load i8, ptr %mc_p
  %mc32 = zext i8 %mc to i32
  %ok = icmp ult i32 %pid, %mc32
  br i1 %ok, label %go, label %bad
go:
  %bindings_p = getelementptr i8, ptr %ds, i64 32
  %bindings = load ptr, ptr %bindings_p
  %out = load ptr, ptr %bindings
  %xi = zext i32 %x to i64
  %slot = getelementptr i32, ptr %out, i64 %xi
  %old = atomicrmw add ptr %slot, i32 1 monotonic
  ret i32 0
bad:
  ret i32 5
}
"""


# --- hostile libraries: rejected before any kernel runs --------------------------------------

_FAKE_QUERY_IR = """
@lib = global ptr null
@kernel_calls = global i32 0

define ptr @query(i32 %version, ptr %env) {
  %p = load ptr, ptr @lib
  ret ptr %p
}

define i32 @kernel(ptr %env, ptr %ds, ptr %wg) {
  %n = load i32, ptr @kernel_calls
  %n1 = add i32 %n, 1
  store i32 %n1, ptr @kernel_calls
  ret i32 0
}
"""


def test_worker_pool_stress(root):
    """Many grids in a row, from two Python threads at once, on the native pool: every
    tile runs exactly once, processor ids stay below max_concurrency."""
    import threading

    engine, address = _jit(_COUNT_IR, "count")
    with load_executable(EMBEDDED, build(root, MUL).kernel) as exe:
        exe._functions[0] = address  # white box: a counting kernel
        exe._python_fns[0] = abi.DISPATCH_FN(address)
        failures = []

        def hammer(seed: int) -> None:
            rng = np.random.default_rng(seed)
            for _ in range(150):
                n = int(rng.integers(1, 200))
                workers = int(rng.integers(1, 5))
                out = np.zeros(n, np.int32)
                exe.dispatch(0, (n, 1, 1), [], bindings(out, out, out), workers=workers)
                if not (out == 1).all():
                    failures.append((n, workers, out.tolist()))

        threads = [threading.Thread(target=hammer, args=(s,)) for s in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not failures, failures[:1]


# Spins (x % 7 + 1) * 3000 iterations, then counts workgroup x in binding 0; fails with 7
# on the workgroup whose x equals the u32 at binding 1 (-1: none).
_SLOW_COUNT_IR = """
define i32 @slow_count(ptr %env, ptr %ds, ptr %wg) {
entry:
  %x = load i32, ptr %wg
  %bindings_p = getelementptr i8, ptr %ds, i64 32
  %bindings = load ptr, ptr %bindings_p
  %out = load ptr, ptr %bindings
  %failp_p = getelementptr ptr, ptr %bindings, i64 1
  %failp = load ptr, ptr %failp_p
  %failx = load i32, ptr %failp
  %fails = icmp eq i32 %x, %failx
  br i1 %fails, label %bad, label %spin0
spin0:
  %m = urem i32 %x, 7
  %m1 = add i32 %m, 1
  %n = mul i32 %m1, 3000
  br label %spin
spin:
  %i = phi i32 [ 0, %spin0 ], [ %i1, %spin ]
  %v = load volatile i32, ptr %failp
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, %n
  br i1 %more, label %spin, label %count
count:
  %xi = zext i32 %x to i64
  %slot = getelementptr i32, ptr %out, i64 %xi
  %old = atomicrmw add ptr %slot, i32 1 monotonic
  ret i32 0
bad:
  ret i32 7
}
"""


def test_worker_pool_uneven_tiles_stress(root):
    """Tiles of uneven cost, so that participants finish their own ranges at different
    times and take tiles from each other, from two Python threads at once: every tile
    runs exactly once, and a failing tile fails its grid (INTERNAL) without leaving the
    pool broken for the next."""
    import threading

    engine, address = _jit(_SLOW_COUNT_IR, "slow_count")
    with load_executable(EMBEDDED, build(root, MUL).kernel) as exe:
        exe._functions[0] = address  # white box: a slow counting kernel
        exe._python_fns[0] = abi.DISPATCH_FN(address)
        failures = []

        def hammer(seed: int) -> None:
            try:
                run(seed)
            except BaseException as error:  # a thread's exception would only warn
                failures.append(("raised", repr(error)))

        def run(seed: int) -> None:
            rng = np.random.default_rng(seed)
            for i in range(60):
                n = int(rng.integers(1, 120))
                workers = int(rng.integers(2, 6))
                fail_at = int(rng.integers(0, n)) if i % 5 == 4 else -1
                out = np.zeros(n, np.int32)
                fail = np.array([fail_at & 0xFFFFFFFF], np.uint32)
                try:
                    exe.dispatch(0, (n, 1, 1), [], bindings(out, fail, out), workers=workers)
                except VMError as error:
                    if fail_at < 0 or error.code != StatusCode.INTERNAL or "7" not in str(error):
                        failures.append((n, workers, fail_at, str(error)))
                    continue
                if fail_at >= 0 or not (out == 1).all():
                    failures.append((n, workers, fail_at, out.tolist()))

        threads = [threading.Thread(target=hammer, args=(s,)) for s in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not failures, failures[:1]


def test_worker_pool_multi_tile_units(root, monkeypatch):
    """Grids with more tiles than a range can count are split into units of several tiles
    (white box: a runtime compiled with ranges of at most 16 units): every tile still runs
    exactly once."""
    from runtime_support.native import jit as native_jit, layout as native_layout, pool as native_pool

    monkeypatch.setattr(native_layout, "RANGE_UNITS", 16)
    runtime = native_jit.NativeRuntime()
    pool = native_pool.WorkerPool(runtime)
    pool._cpus = []  # unpinned: the placement test counts the process pool's pinned threads
    pool.ensure(3)
    _keep_forever.append((runtime, pool))  # its threads run until the process ends
    engine, address = _jit(_SLOW_COUNT_IR, "slow_count")
    with load_executable(EMBEDDED, build(root, MUL).kernel) as exe:
        env = ctypes.addressof(exe._env)
        for n, workers in ((17, 3), (50, 2), (97, 3), (16, 3), (3, 3)):
            out = np.zeros(n, np.int32)
            fail = np.array([0xFFFFFFFF], np.uint32)
            ptrs = (ctypes.c_uint64 * 2)(out.ctypes.data, fail.ctypes.data)
            lens = (ctypes.c_uint64 * 2)(out.nbytes, fail.nbytes)
            state = abi.DispatchStateV0(
                workgroup_count_x=n, workgroup_count_y=1, workgroup_count_z=1,
                max_concurrency=workers, binding_count=2,
                binding_ptrs=ctypes.addressof(ptrs), binding_lengths=ctypes.addressof(lens),
            )
            wgs = (abi.WorkgroupStateV0 * workers)()
            for w in range(workers):
                wgs[w].processor_id = w
            args = (ctypes.c_uint64 * len(native_layout.GRID_ARGS))(
                pool.address, address, env, ctypes.addressof(state), ctypes.addressof(wgs),
                n, 1, n, workers,
            )
            assert runtime.run_grid_args(ctypes.addressof(args)) == 0
            assert (out == 1).all(), (n, workers, out.tolist())


_keep_forever: list = []

# Workgroup x spins 200,000 + x * 3,000,000 iterations: in a 2-tile grid, tile 1 takes
# about 15 times as long as tile 0 (a millisecond or so), long enough for its caller to
# stop spinning and sleep.
_LONG_SECOND_IR = """
@sink = global i32 0

define i32 @long_second(ptr %env, ptr %ds, ptr %wg) {
entry:
  %x = load i32, ptr %wg
  %n0 = mul i32 %x, 3000000
  %n = add i32 %n0, 200000
  br label %spin
spin:
  %i = phi i32 [ 0, %entry ], [ %i1, %spin ]
  %v = load volatile i32, ptr @sink
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, %n
  br i1 %more, label %spin, label %done
done:
  ret i32 0
}
"""


def _affinities() -> dict[int, set[int]]:
    """thread id -> the CPUs it may run on, for this process's pool workers."""
    from runtime_support.native import pool as native_pool

    out = {}
    for status in Path("/proc/self/task").glob("*/status"):
        comm = (status.parent / "comm").read_text().strip()
        if comm != native_pool.THREAD_NAME.decode():
            continue
        for line in status.read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                cpus = set()
                for part in line.split(":", 1)[1].strip().split(","):
                    lo, _, hi = part.partition("-")
                    cpus.update(range(int(lo), int(hi or lo) + 1))
                out[int(status.parent.name)] = cpus
    return out


@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="placement needs two CPUs",
)
def test_worker_placement_follows_the_caller(root):
    """Pool workers are pinned one per CPU, none on the caller's; when the caller moves
    onto a worker's CPU, its next pooled grid moves that worker to a free CPU. A caller
    that sleeps waiting for workers lets them run anywhere until its next pooled grid."""
    from runtime_support.native import pool as native_pool

    pool = native_pool.worker_pool(2)
    if pool.block.pinned == 0:
        pytest.skip(f"pinning is off here (${native_pool.PIN_ENV}=0)")
    engine, address = _jit(_COUNT_IR, "count")
    libc = ctypes.CDLL(None)
    allowed = os.sched_getaffinity(0)
    with load_executable(EMBEDDED, build(root, MUL).kernel) as exe:
        exe._functions[0] = address  # white box: a counting kernel
        out = np.zeros(8, np.int32)
        try:
            for _ in range(3):
                # An earlier grid (of this test or another) whose caller slept leaves the
                # workers unpinned until the next pooled grid that does not sleep.
                for _ in range(50):
                    if not pool.block.released:
                        break
                    exe.dispatch(0, (8, 1, 1), [], bindings(out, out, out), workers=2)
                assert pool.block.released == 0
                worker_cpu = pool.block.worker_cpu[0]
                pinned = [tid for tid, cpus in _affinities().items() if cpus == {worker_cpu}]
                assert pinned, (worker_cpu, _affinities())
                os.sched_setaffinity(0, {worker_cpu})  # the caller moves onto it
                assert libc.sched_getcpu() == worker_cpu
                pool.block.placed_at = 0
                out = np.zeros(8, np.int32)
                exe.dispatch(0, (8, 1, 1), [], bindings(out, out, out), workers=2)
                assert (out == 1).all()
                moved = pool.block.worker_cpu[0]
                assert moved != worker_cpu and moved in allowed
                # (a caller that had to sleep for the workers leaves them free to run
                # anywhere until its next pooled grid pins them again)
                expected = set(allowed) if pool.block.released else {moved}
                assert all(_affinities()[tid] == expected for tid in pinned)
                os.sched_setaffinity(0, allowed)
            # Released while the caller sleeps, pinned again by the next pooled grid.
            engine2, slow = _jit(_LONG_SECOND_IR, "long_second")
            exe._functions[0] = slow
            for _ in range(50):  # until a worker ran tile 1 while the caller slept
                exe.dispatch(0, (2, 1, 1), [], bindings(out, out, out), workers=2)
                if pool.block.released:
                    break
            assert pool.block.released == 1
            assert all(_affinities()[tid] == set(allowed) for tid in pinned)
            exe._functions[0] = address
            for _ in range(50):  # (on a loaded machine this caller may sleep again)
                exe.dispatch(0, (8, 1, 1), [], bindings(out, out, out), workers=2)
                if not pool.block.released:
                    break
            assert pool.block.released == 0
            assert all(_affinities()[tid] == {pool.block.worker_cpu[0]} for tid in pinned)
        finally:
            os.sched_setaffinity(0, allowed)


def _fake_library(version=abi.LIBRARY_VERSION_0_6, export_count=1, null_library=False):
    """A JIT-compiled query function returning a library built here: (engine, query
    address, kernel-call counter, keepalive)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(_FAKE_QUERY_IR), tm)
    engine.finalize_object()
    kernel = engine.get_function_address("kernel")
    name = ctypes.create_string_buffer(b"fake")
    header = abi.LibraryHeader(version=version, name=ctypes.addressof(name))
    ptrs = (ctypes.c_void_p * 1)(kernel)
    names = (ctypes.c_void_p * 1)(ctypes.addressof(name))
    attrs = (abi.DispatchAttrsV0 * 1)()
    lib = abi.LibraryV0(header=ctypes.addressof(header))
    lib.exports.count = export_count
    lib.exports.ptrs = ctypes.addressof(ptrs)
    lib.exports.names = ctypes.addressof(names)
    lib.exports.attrs = ctypes.addressof(attrs)
    slot = ctypes.c_void_p.from_address(engine.get_global_value_address("lib"))
    slot.value = None if null_library else ctypes.addressof(lib)
    calls = ctypes.c_int32.from_address(engine.get_global_value_address("kernel_calls"))
    keep = (engine, name, header, ptrs, names, attrs, lib)
    return engine.get_function_address("query"), calls, keep


def _fake_executable(query: int, keep):
    return executable_mod.Executable(
        EMBEDDED, query, executable_mod.LibraryMemory(), lambda: None, keepalive=keep
    )


@pytest.mark.parametrize(
    "case, match",
    [
        ({"null_library": True}, "refused version"),
        ({"version": 5}, "version 5 is not supported"),
        ({"version": 0xFFFFFFFF}, "is not supported"),
        ({"export_count": 1 << 20}, "declares 1048576 exports"),
        ({"export_count": 0xFFFFFFFF}, "exports"),
    ],
    ids=["query-refuses", "old-version", "bad-version", "export-table-1M", "export-table-4G"],
)
def test_hostile_library_rejected_before_kernels_run(case, match):
    query, calls, keep = _fake_library(**case)
    with pytest.raises(LoaderError, match=match):
        _fake_executable(query, keep)
    assert calls.value == 0
    # The control: the same library, well-formed, loads and its kernel runs.
    query, calls, keep = _fake_library()
    exe = _fake_executable(query, keep)
    exe.dispatch(0, (1, 1, 1), [], [], native=False)
    assert calls.value == 1


def test_missing_query_symbol(root):
    data = build(root, MUL).kernel
    at = data.find(abi.QUERY_SYMBOL)
    assert at > 0
    renamed = data[:at] + b"x" + data[at + 1 :]
    with pytest.raises(LoaderError, match="iree_hal_executable_library_query"):
        load_executable(EMBEDDED, renamed)


def test_export_table_outside_the_image(root):
    """An embedded ELF whose export count runs its tables past the image: rejected by
    the image's bounds checks, no kernel run (the count is patched in the file)."""
    data = build(root, MUL).kernel
    image = elf_loader.load_elf_image(data)
    try:
        query = abi.QUERY_FN(image.symbol(abi.QUERY_SYMBOL))
        library = query(abi.LIBRARY_VERSION_LATEST, ctypes.byref(abi.EnvironmentV0()))
        vaddr = library + abi.LibraryV0.exports.offset - image.bias
    finally:
        image.close()
    for offset, (kind, _, p_offset, p_vaddr, _, p_filesz, _, _) in _phdrs(data):
        if kind == 1 and p_vaddr <= vaddr < p_vaddr + p_filesz:
            pos = vaddr - p_vaddr + p_offset
            break
    else:
        raise AssertionError("export table not in a PT_LOAD segment")
    assert struct.unpack_from("<I", data, pos)[0] == 1
    for count in (2, 60000, 1 << 20):
        with pytest.raises(LoaderError):
            load_executable(EMBEDDED, _patched(data, pos, "<I", count))


def test_system_library_with_undecodable_dlopen_error(root):
    """A system library needing a library whose name is not UTF-8: dlopen's error text
    is not decodable either; still a LoaderError (found by tests/fuzz.py)."""
    import io

    data = build(root, MUL, embedded=False).kernel
    elf = ELFFile(io.BytesIO(data))
    dynstr = elf.get_section_by_name(".dynstr")
    dynamic = elf.get_section_by_name(".dynamic")
    entries = [
        (dynamic["sh_offset"] + 16 * i, *struct.unpack_from("<qQ", data, dynamic["sh_offset"] + 16 * i))
        for i in range(dynamic["sh_size"] // 16)
    ]
    # The first DT_NULL becomes DT_NEEDED (1) of dynstr's first string, made non-UTF-8.
    pos = next(e[0] for e in entries if e[1] == 0)
    blob = _patched(_patched(data, pos, "<q", 1), pos + 8, "<Q", 1)
    blob = _patched(blob, dynstr["sh_offset"] + 1, "<B", 0x88)
    with pytest.raises(LoaderError, match="dlopen"):
        load_executable(SYSTEM, blob)


# -- decoded records kept between processes (elf_records.py) ----------------------------

_RECORDS_PROBE = """
import json, sys
from pathlib import Path
from runtime_support.loaders import elf
data = Path(sys.argv[1] if len(sys.argv) > 1 else {path!r}).read_bytes()
image = elf.load_elf_image(data)
print(json.dumps({{"elftools": "elftools" in sys.modules,
                   "relocated": sorted((k, v - image.bias) for k, v in image.relocated_words.items()),
                   "counts": image.relocation_counts,
                   "symbols": [[s.name.decode(), s.value, s.bind] for s in image.symbols]}}))
"""


def test_a_library_loaded_before_decodes_nothing_again(root, tmp_path):
    """A fresh process that loads a library an earlier one loaded reads its decoded
    records from the cache folder (pyelftools never imported) and loads it as the first
    did; a damaged entry is a miss: decoded again, written anew."""
    from helpers_process import run_json

    kernel = tmp_path / "kernel.so"
    kernel.write_bytes(build(root, MATMUL).kernel)
    cache = tmp_path / "cache"
    script = _RECORDS_PROBE.format(path=str(kernel))
    first = run_json(script, cache)
    (entry,) = (cache / "elf").iterdir()
    second = run_json(script, cache)
    assert first["elftools"] and not second["elftools"]
    assert first["relocated"] and {k: v for k, v in first.items() if k != "elftools"} == {
        k: v for k, v in second.items() if k != "elftools"
    }
    raw = bytearray(entry.read_bytes())
    raw[-1] ^= 0xFF  # (its checksum no longer matches)
    entry.write_bytes(bytes(raw))
    third = run_json(script, cache)
    assert third["elftools"] and third["counts"] == first["counts"]
    assert entry.read_bytes() != bytes(raw)  # (written again)
    assert not run_json(script, cache)["elftools"]


def test_kept_records_are_what_pyelftools_decodes(root, monkeypatch, tmp_path):
    """Every record a load decodes is pyelftools' own, as plain dicts, under its bytes."""
    import io

    from runtime_support.loaders import elf_records

    monkeypatch.setenv("PYREE_CACHE_DIR", str(tmp_path))
    data = build(root, MATMUL).kernel
    parsed = elf_loader.parse_elf(data)
    elf_loader.ElfImage(parsed).close()
    known = parsed.records._known
    kinds = {kind for kind, _ in known}
    assert kinds == set(elf_records.SIZES)
    structs = ELFFile(io.BytesIO(data)).structs
    for (kind, raw), record in known.items():
        assert record == elf_records._plain(getattr(structs, kind).parse(raw)), kind
        assert type(record) is dict and len(raw) == elf_records.SIZES[kind]
    # a malformed record raises as before, and nothing is kept for it
    with pytest.raises(LoaderError, match="malformed ELF"):
        parsed.records.decode("Elf_Sym", b"\x00" * 3, "symbol 0")
    assert ("Elf_Sym", b"\x00" * 3) not in known
