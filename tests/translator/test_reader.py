"""The container + FlatBuffer reader and the metadata summary, against the real tools.

Oracles: `iree-dump-module --output=flatbuffer-json` (every table field) and
`--output=metadata` (the summary text), run on modules compiled by iree-compile 3.13.
Negative tests: truncations, corrupted headers and fields, random byte flips; the only
exception allowed out of the reader is InvalidModuleError.
"""

from __future__ import annotations

import json
import random
import struct

import numpy as np
import pytest

from helpers_compile import LLVM_CPU_FLAGS, VM_FLAGS, compile_mlir, dump_module
from translator import reader
from translator.cconv import parse_cconv
from translator.container import parse_container
from translator.errors import InvalidModuleError
from translator.flatbuf import FlatBuffer
from translator.module import CallSiteLoc, FileLineColLoc, FusedLoc, NameLoc, UnknownLoc
from translator.reader import read_module, read_module_file
from translator.summary import format_metadata

ELEMENTWISE = """
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @mul(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = arith.mulf %a, %b : tensor<?xf32>
  return %0 : tensor<?xf32>
}
func.func @scalar(%a: i32, %b: i64) -> (i64, i32) {
  %c = arith.extsi %a : i32 to i64
  %d = arith.addi %c, %b : i64
  return %d, %a : i64, i32
}
"""

VM_MODULE = """
vm.module @mymod {
  vm.global.i32 mutable @g0 : i32
  vm.global.f32 mutable @g1 : f32
  vm.global.i64 mutable @g2 : i64
  vm.global.f64 mutable @g3 : f64
  vm.rodata private @str dense<[104, 105, 0, 200]> : tensor<4xi8>
  vm.import private optional @other.fn(%a : i32, %b : !vm.buffer) -> i64
  vm.func @f32fn(%a : f32, %b : f64) -> (f32, f64) {
    %c = vm.add.f32 %a, %a : f32
    %d = vm.add.f64 %b, %b : f64
    vm.return %c, %d : f32, f64
  }
  vm.export @f32fn
  vm.export @f32fn as("alias2")
  vm.func @useimp(%a : i32) -> i64 {
    %buf = vm.const.ref.rodata @str : !vm.buffer
    %r = vm.call @other.fn(%a, %buf) : (i32, !vm.buffer) -> i64
    vm.return %r : i64
  }
  vm.export @useimp
}
"""

BIG_VALUES = (np.arange(64 * 64, dtype=np.float32) * 0.5).reshape(64, 64)
BIG_CONSTANT = (
    """
func.func @bigconst(%a: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %c = arith.constant dense_resource<blob> : tensor<64x64xf32>
  %0 = arith.addf %a, %c : tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
{-#
  dialect_resources: { builtin: { blob: "0x04000000"""
    + BIG_VALUES.tobytes().hex()
    + """" } }
#-}
"""
)

ASYNC = """
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.subf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

CHECK_AND_PARAMETERS = """
func.func @test_add() {
  %a = util.unfoldable_constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = arith.addf %a, %a : tensor<4xf32>
  check.expect_almost_eq_const(%b, dense<[2.0, 4.0, 6.0, 8.0]> : tensor<4xf32>) : tensor<4xf32>
  return
}
func.func @p(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = flow.tensor.constant #flow.parameter.named<"model"::"w"> : tensor<4xf32>
  %0 = arith.mulf %x, %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

MODULES = {
    "elementwise": (ELEMENTWISE, LLVM_CPU_FLAGS),
    "bare": (ELEMENTWISE, LLVM_CPU_FLAGS + ("--iree-vm-emit-polyglot-zip=false",)),
    "vm": (VM_MODULE, VM_FLAGS),
    "bigconst": (BIG_CONSTANT, LLVM_CPU_FLAGS),
    "async": (ASYNC, LLVM_CPU_FLAGS + ("--iree-execution-model=async-external",)),
    # Optional `check` imports, the io_parameters dependency.
    "check_params": (CHECK_AND_PARAMETERS, LLVM_CPU_FLAGS),
}


@pytest.fixture(scope="module")
def vmfbs(tmp_path_factory):
    out = tmp_path_factory.mktemp("reader_vmfbs")
    return {
        name: compile_mlir(src, out, flags=flags, name=name)
        for name, (src, flags) in MODULES.items()
    }


@pytest.fixture(scope="module", params=sorted(MODULES))
def sample(request, vmfbs):
    return request.param, vmfbs[request.param]


# -- oracle helpers ------------------------------------------------------------------------

FEATURE_NAMES = {"EXT_F32": 1, "EXT_F64": 2, "YIELD": 4, "UNWIND": 8}
LOCATION_KINDS = {
    "NONE": UnknownLoc,
    "CallSiteLocDef": CallSiteLoc,
    "FileLineColLocDef": FileLineColLoc,
    "FusedLocDef": FusedLoc,
    "NameLocDef": NameLoc,
}


def bits(value) -> int:
    """flatcc prints bit-flag enums as 'YIELD UNWIND' or a bare number."""
    if isinstance(value, int):
        return value
    return sum(FEATURE_NAMES[n] for n in value.split())


def flags_value(value, default=1) -> int:
    if value is None:
        return default
    if isinstance(value, int):
        return value
    return sum({"REQUIRED": 1, "OPTIONAL": 2}[n] for n in value.split())


def fb_json(path):
    return json.loads(dump_module(path, "flatbuffer-json"))


def attrs_of(sig_json):
    return tuple(
        (a.get("key", ""), a.get("value", "")) for a in sig_json.get("attrs", [])
    )


# -- agreement with iree-dump-module -------------------------------------------------------


def test_fields_match_flatbuffer_json(sample):
    name, path = sample
    j = fb_json(path)
    m = read_module_file(path)

    assert m.name == j["name"]
    assert m.version == j.get("version", 0)
    assert m.requirements == bits(j.get("requirements", 0))
    assert m.attrs == tuple((a["key"], a["value"]) for a in j.get("attrs", []))
    assert m.types == tuple(t["full_name"] for t in j.get("types", []))
    assert [(d.name, d.minimum_version, d.flags) for d in m.dependencies] == [
        (d["name"], d.get("minimum_version", 0), flags_value(d.get("flags")))
        for d in j.get("dependencies", [])
    ]
    assert [
        (i.full_name, i.signature.calling_convention, i.signature.attrs, i.flags)
        for i in m.imports
    ] == [
        (
            i["full_name"],
            i["signature"]["calling_convention"],
            attrs_of(i["signature"]),
            flags_value(i.get("flags")),
        )
        for i in j.get("imported_functions", [])
    ]
    assert [(e.local_name, e.internal_ordinal) for e in m.exports] == [
        (e["local_name"], e.get("internal_ordinal", 0)) for e in j["exported_functions"]
    ]
    assert [(s.calling_convention, s.attrs) for s in m.signatures] == [
        (s["calling_convention"], attrs_of(s)) for s in j["function_signatures"]
    ]
    state = j.get("module_state", {})
    assert m.global_bytes_capacity == state.get("global_bytes_capacity", 0)
    assert m.global_ref_count == state.get("global_ref_count", 0)

    assert len(m.rodata) == len(j.get("rodata_segments", []))
    for seg, sj in zip(m.rodata, j.get("rodata_segments", [])):
        if "embedded_data" in sj:
            assert not seg.external
            assert bytes(seg.data) == bytes(sj["embedded_data"])
        else:
            assert seg.external
            assert len(seg) == sj.get("external_data_length", 0)
            assert seg.external_data_offset == sj.get("external_data_offset", 0)
            assert seg.file_offset == m.rodata_base + seg.external_data_offset

    assert [
        (
            d.bytecode_offset,
            d.bytecode_length,
            d.requirements,
            d.reserved,
            d.block_count,
            d.i32_register_count,
            d.ref_register_count,
        )
        for d in m.descriptors
    ] == [
        (
            d.get("bytecode_offset", 0),
            d.get("bytecode_length", 0),
            bits(d.get("requirements", 0)),
            d.get("reserved", 0),
            d.get("block_count", 0),
            d.get("i32_register_count", 0),
            d.get("ref_register_count", 0),
        )
        for d in j["function_descriptors"]
    ]
    assert m.bytecode_version == j["bytecode_version"] == 0x00110000
    assert bytes(m.bytecode) == bytes(j["bytecode_data"])

    db = j.get("debug_database", {})
    kinds = db.get("location_table_type", [])
    assert len(m.locations) == len(kinds)
    for loc, kind, lj in zip(m.locations, kinds, db.get("location_table", [])):
        assert type(loc) is LOCATION_KINDS[kind]
        if kind == "FileLineColLocDef":
            assert (loc.filename, loc.line, loc.column) == (
                lj.get("filename", ""),
                lj.get("line", 0),
                lj.get("column", 0),
            )
        elif kind == "CallSiteLocDef":
            assert (loc.callee, loc.caller) == (
                lj.get("callee", 0),
                lj.get("caller", 0),
            )
        elif kind == "FusedLocDef":
            assert (loc.metadata, loc.locations) == (
                lj.get("metadata"),
                tuple(lj.get("locations", [])),
            )
        elif kind == "NameLocDef":
            assert (loc.name, loc.child_location) == (
                lj.get("name", ""),
                lj.get("child_location", 0),
            )
    assert [(s.local_name, s.locations) for s in m.source_maps] == [
        (
            f.get("local_name", ""),
            tuple(
                (x.get("bytecode_offset", 0), x.get("location", 0))
                for x in f.get("locations", [])
            ),
        )
        for f in db.get("functions", [])
    ]


def test_summary_matches_iree_dump_module(sample):
    _, path = sample
    assert format_metadata(read_module_file(path)) == dump_module(path, "metadata")


def test_every_signature_cconv_parses(sample):
    _, path = sample
    m = read_module_file(path)
    for sig in m.signatures:
        assert not sig.cconv.has_spans  # internal functions never take spans
    for imp in m.imports:
        assert imp.signature.cconv.text == imp.signature.calling_convention


# -- container facts -------------------------------------------------------------------------


def test_zip_container_layout(vmfbs):
    data = vmfbs["elementwise"].read_bytes()
    c = parse_container(data)
    n, m_ = struct.unpack_from("<HH", data, 26)
    assert data[:4] == b"PK\x03\x04"
    assert c.zip_header_size == 30 + n + m_
    assert c.fb_start == c.zip_header_size + 4
    assert c.size == struct.unpack_from("<I", data, c.zip_header_size)[0]
    assert bytes(c.flatbuffer[4:8]) == b"IREE"
    assert c.rodata_base % 64 == 0 and c.rodata_base >= c.fb_start + c.size
    assert c.rodata_base - (c.fb_start + c.size) < 64
    m = read_module(data)
    assert (m.flatbuffer_offset, m.flatbuffer_size) == (c.fb_start, c.size)
    assert m.file_size == len(data) and m.rodata_base == c.rodata_base


def test_flatbuffer_size_matches_flatbuffer_binary(vmfbs):
    import subprocess

    for key in ("elementwise", "bare"):
        fb = subprocess.run(
            ["iree-dump-module", "--output=flatbuffer-binary", str(vmfbs[key])],
            check=True,
            capture_output=True,
        ).stdout
        c = parse_container(vmfbs[key].read_bytes())
        assert bytes(c.flatbuffer) == fb


def test_bare_container_layout(vmfbs):
    data = vmfbs["bare"].read_bytes()
    assert data[:4] != b"PK\x03\x04"
    c = parse_container(data)
    assert c.zip_header_size == 0 and c.fb_start == 4
    assert c.rodata_base == (4 + c.size + 63) // 64 * 64
    zipped = read_module_file(vmfbs["elementwise"])
    bare = read_module(data)
    # Same program, same tables (bytecode differs slightly: __init embeds kernel sizes).
    assert (bare.types, bare.imports, bare.exports, bare.signatures) == (
        zipped.types,
        zipped.imports,
        zipped.exports,
        zipped.signatures,
    )
    assert [s.external for s in bare.rodata] == [s.external for s in zipped.rodata]


@pytest.mark.parametrize("key", ["elementwise", "bare", "bigconst"])
def test_external_kernel_segments_are_elf(vmfbs, key):
    m = read_module_file(vmfbs[key])
    data = vmfbs[key].read_bytes()
    kernels = [s for s in m.rodata if s.external and bytes(s.data[:4]) == b"\x7fELF"]
    assert kernels, "expected at least one embedded ELF kernel"
    for s in kernels:
        assert data[s.file_offset : s.file_offset + 4] == b"\x7fELF"
        assert s.file_offset + len(s) <= len(data)


def test_large_constant_is_external_and_exact(vmfbs):
    m = read_module_file(vmfbs["bigconst"])
    blobs = [s for s in m.rodata if s.external and len(s) == BIG_VALUES.nbytes]
    assert len(blobs) == 1
    assert bytes(blobs[0].data) == BIG_VALUES.tobytes()


def test_embedded_rodata_is_zero_copy_view(vmfbs):
    data = bytearray(vmfbs["vm"].read_bytes())
    m = read_module(data)
    seg = m.rodata[0]
    assert bytes(seg.data) == bytes([104, 105, 0, 200])
    assert data[seg.file_offset : seg.file_offset + 4] == bytes(seg.data)
    assert seg.data.obj is data  # a view of the caller's buffer, no copy
    assert m.function_bytecode(0).obj is data


def test_input_types_agree(vmfbs):
    raw = vmfbs["elementwise"].read_bytes()
    a, b, c = (
        read_module(raw),
        read_module(bytearray(raw)),
        read_module(memoryview(raw)),
    )
    for m in (b, c):
        assert (m.types, m.imports, m.exports, m.descriptors) == (
            a.types,
            a.imports,
            a.exports,
            a.descriptors,
        )


def test_vm_module_details(vmfbs):
    m = read_module_file(vmfbs["vm"])
    assert m.name == "mymod"
    assert m.global_bytes_capacity == 24 and m.global_ref_count == 0
    assert [(e.local_name, e.internal_ordinal) for e in m.exports] == [
        ("f32fn", 0),
        ("alias2", 0),
        ("useimp", 1),
    ]
    (imp,) = m.imports
    assert imp.full_name == "other.fn" and imp.optional
    assert imp.signature.cconv.arguments == ("i", "r")
    assert imp.signature.cconv.results == ("I",)
    assert m.dependencies[0].optional
    assert m.signatures[0].cconv.arguments == ("f", "F")
    assert m.descriptors[0].requirements & 0x3 == 0x3


def test_optional_imports_and_dependencies(vmfbs):
    m = read_module_file(vmfbs["check_params"])
    deps = {d.name: d.optional for d in m.dependencies}
    assert deps == {"io_parameters": False, "hal": False, "check": True}
    for imp in m.imports:
        assert imp.optional == imp.full_name.startswith("check.")


def test_async_export_attrs(vmfbs):
    m = read_module_file(vmfbs["async"])
    (f,) = [e for e in m.exports if e.local_name == "f"]
    sig = m.signatures[f.internal_ordinal]
    assert sig.attr("iree.abi.model") == "coarse-fences"
    assert sig.attr("iree.abi.declaration").startswith("async func @f(")
    assert sig.cconv.arguments == ("r", "r", "r", "r")


# -- cconv -----------------------------------------------------------------------------------


def test_cconv_parse():
    c = parse_cconv("0rrIiiiICiDCiirIID_v")
    assert c.arguments == (
        "r",
        "r",
        "I",
        "i",
        "i",
        "i",
        "I",
        ("i",),
        ("i", "i", "r", "I", "I"),
    )
    assert c.results == ()
    assert c.has_spans
    assert parse_cconv("").arguments == () and parse_cconv("").results == ()
    assert parse_cconv("0v_v").arguments == ()
    assert parse_cconv("0").results == ()
    assert parse_cconv("0II_IIIi").results == ("I", "I", "I", "i")
    assert parse_cconv("0ffi").results == ()


@pytest.mark.parametrize(
    "text",
    [
        "1i_i",
        "x",
        "0i_i_i",
        "0iC",
        "0CiI",
        "0CD_v",
        "0CCiDD",
        "0iv",
        "0q",
        "0i_vv",
        "0_ri\0",
    ],
)
def test_cconv_rejects(text):
    with pytest.raises(InvalidModuleError) as e:
        parse_cconv(text, function="fnX")
    assert e.value.function == "fnX"
    assert "calling convention" in str(e.value)


# -- negative tests: corrupt modules ---------------------------------------------------------


def _field_pos(data: bytes, path):
    """FlatBuffer-relative position of a field, found with our own checked accessors.

    path: list of (field id, vector index or None) down to the final (field id, None).
    """
    c = parse_container(data)
    t = FlatBuffer(c.flatbuffer, c.fb_start).root()
    for fid, index in path[:-1]:
        t = (
            t.vector_of_tables(fid, "x")[index]
            if index is not None
            else t.table(fid, "x")
        )
    return c.fb_start + t._field(path[-1][0], 4)


def _patch_u32(data: bytes, pos: int, value: int) -> bytes:
    b = bytearray(data)
    struct.pack_into("<I", b, pos, value & 0xFFFFFFFF)
    return bytes(b)


def _expect_invalid(data, match=None):
    with pytest.raises(InvalidModuleError, match=match) as e:
        read_module(data)
    return e.value


def test_export_ordinal_out_of_range(vmfbs):
    data = vmfbs["vm"].read_bytes()
    pos = _field_pos(data, [(reader.F_EXPORTED_FUNCTIONS, 2), (1, None)])
    assert struct.unpack_from("<i", data, pos)[0] == 1
    for bad in (2, 7, -1):
        err = _expect_invalid(_patch_u32(data, pos, bad), "internal function")
        assert err.offset is not None


@pytest.mark.parametrize("version", [0x00120000, 0x00110001, 0x00100000, 0])
def test_unsupported_bytecode_version(vmfbs, version):
    data = vmfbs["vm"].read_bytes()
    pos = _field_pos(data, [(reader.F_BYTECODE_VERSION, None)])
    _expect_invalid(_patch_u32(data, pos, version), "unsupported bytecode version")


def test_bad_cconv_in_module(vmfbs):
    data = vmfbs["vm"].read_bytes()
    # The string offset field of function_signatures[1].calling_convention ("0i_I").
    pos = _field_pos(data, [(reader.F_FUNCTION_SIGNATURES, 1), (0, None)])
    s = pos + struct.unpack_from("<I", data, pos)[0]
    n = struct.unpack_from("<I", data, s)[0]
    assert data[s + 4 : s + 4 + n] == b"0i_I"
    for bad, why in ((b"1i_I", "version"), (b"0iCI", "unterminated"), (b"0i_Q", "'Q'")):
        b = bytearray(data)
        b[s + 4 : s + 8] = bad
        err = _expect_invalid(bytes(b), why)
        assert err.function == "useimp"
    # An import's cconv: the error names the import.
    pos = _field_pos(data, [(reader.F_IMPORTED_FUNCTIONS, 0), (1, None)])
    sig = pos + struct.unpack_from("<I", data, pos)[0]
    fb_start = parse_container(data).fb_start
    sig_t = FlatBuffer(parse_container(data).flatbuffer, fb_start)
    from translator.flatbuf import Table

    t = Table(sig_t, sig - fb_start, "sig")
    spos = fb_start + t._field(0, 4)
    s = spos + struct.unpack_from("<I", data, spos)[0]
    b = bytearray(data)
    b[s + 4] = ord("2")
    assert _expect_invalid(bytes(b), "calling convention").function == "other.fn"


def test_descriptor_out_of_range(vmfbs):
    data = vmfbs["vm"].read_bytes()
    c = parse_container(data)
    root = FlatBuffer(c.flatbuffer, c.fb_start).root()
    start, count = root._vector(reader.F_FUNCTION_DESCRIPTORS, 20, "descriptors")
    assert count == 2
    desc_pos = c.fb_start + start
    for off, value, match in (
        (4, 100000, "outside bytecode_data"),
        (0, -8, "outside bytecode_data"),
        (16, -1, "negative counts"),
    ):
        b = bytearray(data)
        if off >= 12:
            struct.pack_into("<h", b, desc_pos + off, value)
        else:
            struct.pack_into("<i", b, desc_pos + off, value)
        _expect_invalid(bytes(b), match)


def test_signature_count_mismatch(vmfbs):
    data = vmfbs["vm"].read_bytes()
    pos = _field_pos(data, [(reader.F_FUNCTION_SIGNATURES, None)])
    vec = pos + struct.unpack_from("<I", data, pos)[0]
    assert struct.unpack_from("<I", data, vec)[0] == 2
    _expect_invalid(_patch_u32(data, vec, 1), "signatures but 2 function descriptors")


def test_wrong_identifier(vmfbs):
    for key in ("elementwise", "bare"):
        data = bytearray(vmfbs[key].read_bytes())
        c = parse_container(data)
        data[c.fb_start + 4 : c.fb_start + 8] = b"IREF"
        err = _expect_invalid(bytes(data), "identifier")
        assert err.offset == c.fb_start + 4


def test_bad_size_prefix(vmfbs):
    data = vmfbs["elementwise"].read_bytes()
    p = parse_container(data).zip_header_size
    for size in (len(data), len(data) - p - 3, 0xFFFFFFFF):
        err = _expect_invalid(_patch_u32(data, p, size), "exceeds")
        assert err.offset == p
    for size in (0, 15):
        _expect_invalid(_patch_u32(data, p, size), "minimum")
    # A ZIP header whose name/extra lengths run past the end of the file.
    b = bytearray(data)
    struct.pack_into("<HH", b, 26, 0xFFFF, 0xFFFF)
    _expect_invalid(bytes(b[:4000]), "ZIP local file header")
    _expect_invalid(b"PK\x03\x04" + b"\0" * 10, "truncated ZIP")
    _expect_invalid(b"", "too small")
    _expect_invalid(b"\x10\0\0", "too small")


def test_external_rodata_past_end_of_file(vmfbs):
    data = vmfbs["bigconst"].read_bytes()
    c = parse_container(data)
    _expect_invalid(data[: c.rodata_base + 100], "external rodata segment")


def _unguarded(data):
    """The reader without its last-resort conversion of low-level errors."""
    try:
        reader._read_module(data)
    except InvalidModuleError:
        return False
    return True


def test_every_prefix_of_small_module_is_rejected(vmfbs):
    data = vmfbs["vm"].read_bytes()
    c = parse_container(data)
    fb_end = c.fb_start + c.size  # no external rodata: what follows is ZIP bookkeeping
    for n in range(fb_end):
        with pytest.raises(InvalidModuleError):
            reader._read_module(data[:n])
    for n in range(fb_end, len(data) + 1):
        assert _unguarded(data[:n])


def test_dense_prefixes_of_llvm_module_are_rejected(vmfbs):
    data = vmfbs["elementwise"].read_bytes()
    c = parse_container(data)
    fb_end = c.fb_start + c.size
    cut_points = set(range(0, fb_end + 8, 7)) | set(range(fb_end - 64, fb_end + 1))
    # Past the FlatBuffer, cuts matter only up to the end of the last external segment.
    m = read_module(data)
    ext_end = max(s.file_offset + len(s) for s in m.rodata if s.external)
    cut_points |= set(range(fb_end, ext_end, 97)) | {ext_end - 1}
    for n in sorted(cut_points):
        if n >= len(data) or n >= ext_end:
            continue
        with pytest.raises(InvalidModuleError):
            reader._read_module(data[:n])
    assert _unguarded(data[:ext_end])  # nothing after the last segment is needed


@pytest.mark.parametrize("key,trials", [("vm", 3000), ("elementwise", 1500)])
def test_random_corruption_raises_only_invalid_module(vmfbs, key, trials):
    data = vmfbs[key].read_bytes()
    c = parse_container(data)
    rng = random.Random(1234)
    outcomes = {"ok": 0, "invalid": 0}
    for _ in range(trials):
        b = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 4))):
            pos = rng.randrange(c.zip_header_size, c.fb_start + c.size)
            if rng.random() < 0.5:
                b[pos] ^= 1 << rng.randrange(8)
            else:
                b[pos] = rng.randrange(256)
        try:
            m = reader._read_module(bytes(b))
        except InvalidModuleError as e:
            assert e.reason
            outcomes["invalid"] += 1
            continue
        outcomes["ok"] += 1
        format_metadata(m)  # whatever was accepted can be summarized
    assert outcomes["invalid"] > trials // 10


def test_corrupted_offsets_at_every_position(vmfbs):
    """Every u32 slot of the small module's FlatBuffer set to hostile values."""
    data = vmfbs["vm"].read_bytes()
    c = parse_container(data)
    for pos in range(c.fb_start, c.fb_start + c.size - 3, 2):
        for value in (0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 4, 0xFFFFFFFC):
            b = _patch_u32(data, pos, value)
            try:
                m = reader._read_module(b)
            except InvalidModuleError:
                continue
            format_metadata(m)


def test_file_errors_name_the_path(tmp_path, vmfbs):
    p = tmp_path / "broken.vmfb"
    p.write_bytes(vmfbs["vm"].read_bytes()[:100])
    with pytest.raises(InvalidModuleError) as e:
        read_module_file(p)
    assert e.value.path == str(p) and str(p) in str(e.value)
    empty = tmp_path / "empty.vmfb"
    empty.write_bytes(b"")
    with pytest.raises(InvalidModuleError):
        read_module_file(empty)


# -- the checked FlatBuffer accessor on hand-made buffers -------------------------------------


def _table_buffer(
    field_value_u32: int, vtable_size: int = 6, table_size: int = 8
) -> bytes:
    """root offset, 'IREE', vtable (size, tsize, field0 @4), table (soffset, field0)."""
    buf = bytearray()
    buf += struct.pack("<I", 16)  # root table at 16
    buf += b"IREE"
    buf += struct.pack("<HHH", vtable_size, table_size, 4) + b"\0\0"  # vtable at 8
    buf += struct.pack("<i", 16 - 8)  # table at 16: vtable at 8
    buf += struct.pack("<I", field_value_u32)  # field 0 at 20
    return bytes(buf)


def test_flatbuf_vector_count_checked_before_allocation():
    buf = _table_buffer(4) + struct.pack("<I", 0x3FFFFFFF)  # vector header at 24
    t = FlatBuffer(memoryview(buf), base=1000).root()
    with pytest.raises(InvalidModuleError, match="claims 1073741823 elements") as e:
        t.vector_of_tables(0, "v")
    assert e.value.offset == 1000 + 24
    with pytest.raises(InvalidModuleError):
        t.bytes(0)
    with pytest.raises(InvalidModuleError):
        t.string(0)


def test_flatbuf_string_checks():
    ok = _table_buffer(4) + struct.pack("<I", 3) + b"ab\xff\0"
    assert FlatBuffer(memoryview(ok)).root().string(0) == "ab\ufffd"
    no_nul = _table_buffer(4) + struct.pack("<I", 4) + b"abcd"
    with pytest.raises(InvalidModuleError, match="runs past"):
        FlatBuffer(memoryview(no_nul)).root().string(0)
    bad_nul = _table_buffer(4) + struct.pack("<I", 2) + b"abcd"
    with pytest.raises(InvalidModuleError, match="NUL"):
        FlatBuffer(memoryview(bad_nul)).root().string(0)


def test_flatbuf_table_checks():
    with pytest.raises(InvalidModuleError, match="outside the table"):
        FlatBuffer(memoryview(_table_buffer(4, table_size=6))).root().u32(0)
    with pytest.raises(InvalidModuleError, match="vtable has a bad size"):
        FlatBuffer(memoryview(_table_buffer(4, vtable_size=0x200))).root()
    with pytest.raises(InvalidModuleError, match="inline size"):
        FlatBuffer(memoryview(_table_buffer(4, table_size=0x400))).root()
    t = FlatBuffer(memoryview(_table_buffer(0x1000))).root()
    with pytest.raises(InvalidModuleError, match="past the end"):
        t.table(0, "child")
    t = FlatBuffer(memoryview(_table_buffer(2) + bytes(8))).root()
    with pytest.raises(InvalidModuleError, match="aligned"):
        t.table(0, "child")
    # Absent fields give defaults without touching anything.
    t = FlatBuffer(memoryview(_table_buffer(7))).root()
    assert t.u32(0) == 7 and t.u32(1, 99) == 99 and t.string(5) is None
    assert t.vector_of_tables(3, "x") is None and t.union_vector(1, "u") is None


TRUNCATED_AFTER_READ = """
import os, sys
from translator.reader import read_module_file
m = read_module_file(sys.argv[1])
os.truncate(sys.argv[1], 0)  # another process rewrites the file in place
payload = b"".join(bytes(s.data) for s in m.rodata)
print(len(payload), sum(payload))
"""


def test_file_truncated_after_reading_cannot_kill_the_process(vmfbs, tmp_path):
    """The module's views are of a private copy: a .vmfb truncated while pyree-translate
    works on it is no SIGBUS (the file used to be memory-mapped)."""
    from hostile_util import run_python

    path = tmp_path / "bigconst.vmfb"
    path.write_bytes(vmfbs["bigconst"].read_bytes())
    payload = b"".join(bytes(s.data) for s in read_module_file(path).rodata)
    assert len(payload) >= BIG_VALUES.nbytes  # (pages beyond the first: a map would fault)
    res = run_python(["-c", TRUNCATED_AFTER_READ, str(path)], timeout=120)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    assert res.stdout.split() == [str(len(payload)), str(sum(payload))]
