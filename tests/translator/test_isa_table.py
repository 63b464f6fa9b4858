"""Our opcode table (translator/isa.py) against the upstream ISA description and the brief.

Reads `../shared/reference/isa.json` and `../shared/docs/vm-bytecode.md` at test time (they
are reference data and are never copied into the project). A new, renumbered or
re-encoded opcode upstream makes these tests fail.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runtime_support.errors import VMError
from translator import isa

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
ISA_JSON = SHARED / "reference" / "isa.json"
BRIEF = SHARED / "docs" / "vm-bytecode.md"

needs_isa = pytest.mark.skipif(not ISA_JSON.exists(), reason="../shared/reference/isa.json absent")
needs_brief = pytest.mark.skipif(not BRIEF.exists(), reason="../shared/docs/vm-bytecode.md absent")


def _isa():
    return json.loads(ISA_JSON.read_text())


def _resolved_fields(d, encoding_name):
    enc = d["encodings"][encoding_name]
    if "fields" in enc:
        fields, params = enc["fields"], {}
    else:
        fields = d["operation_classes"][enc["class"]]["fields"]
        params = enc.get("parameters", {})
    out = []
    for f in fields:
        f = {k: (params[v[1:]] if isinstance(v, str) and v.startswith("$") else v) for k, v in f.items()}
        out.append(f)
    return out


# isa.json field kind -> our FieldSpec kind
_KIND = {
    "register": "register",
    "global_attr": "global",
    "func_attr": "func",
    "rodata_attr": "rodata",
    "type_of": "type",
    "string_attr": "str",
    "attribute": "imm",
    "variadic_operands": "list",
    "variadic_results": "list",
    "branch_target": "pc",
    "branch_operands": "remap",
    "const_i16": "u16",
    "branch_table_cases": "cases",
}


@needs_isa
def test_opcode_sets_equal_isa():
    d = _isa()
    theirs = {
        (i["opcode_set"], i["opcode"]): i["mnemonic"]
        for i in d["instructions"]
        if i.get("kind") not in ("marker", "prefix")
    }
    ours = {k: s.mnemonic for k, s in isa.OPCODES.items()}
    assert ours == theirs
    # The two prefixes and the block marker are handled outside the table.
    specials = {(i["opcode_set"], i["opcode"]) for i in d["instructions"] if i.get("kind") in ("marker", "prefix")}
    assert specials == {("core", isa.BLOCK_MARKER), ("core", isa.PREFIX_EXT_F32), ("core", isa.PREFIX_EXT_F64)}
    prefixes = {i["target_opcode_set"]: i["opcode"] for i in d["instructions"] if i.get("kind") == "prefix"}
    assert prefixes == isa.PREFIX_OF_SET
    assert (d["bytecode_version"]["major"], d["bytecode_version"]["minor"]) == (17, 0)


@needs_isa
def test_field_layouts_equal_isa():
    d = _isa()
    mismatches = []
    for i in d["instructions"]:
        if i.get("kind") in ("marker", "prefix"):
            continue
        spec = isa.OPCODES[(i["opcode_set"], i["opcode"])]
        theirs = _resolved_fields(d, i["encoding"])
        if [f["name"] for f in theirs] != [f.name for f in spec.fields]:
            mismatches.append((spec.mnemonic, "names"))
            continue
        for t, o in zip(theirs, spec.fields):
            if _KIND[t["kind"]] != o.kind:
                mismatches.append((spec.mnemonic, t["name"], "kind"))
            elif t["kind"] == "register":
                same = (
                    t["bank"] == o.bank
                    and (t.get("access") == "write") == o.write
                    and (t.get("move") == "allow") == o.move
                )
                if not same:
                    mismatches.append((spec.mnemonic, t["name"], "register"))
            elif t["kind"] == "attribute" and t.get("type") != o.bank:
                mismatches.append((spec.mnemonic, t["name"], "immediate type"))
            elif t["kind"].startswith("variadic"):
                want_write = t["kind"] == "variadic_results"
                if want_write != o.write:
                    mismatches.append((spec.mnemonic, t["name"], "list direction"))
                ttype = t.get("type")
                if o.bank == "segments":
                    ok = ttype == "i32" and t["name"] == "segment_sizes"
                else:
                    ok = ttype == o.bank and (t.get("move") == "allow") == o.move
                if not ok:
                    mismatches.append((spec.mnemonic, t["name"], "list type"))
    assert mismatches == []


@needs_brief
def test_mnemonics_equal_brief_table():
    """The brief's §6 tables list the same opcode bytes and mnemonics."""
    rows = re.findall(r"^\| `([0-9A-F]{2})(?: ([0-9A-F]{2}))?` \| (\w+) \| `([\w.]+)` \|", BRIEF.read_text(), re.M)
    brief = {}
    for first, second, _symbol, mnemonic in rows:
        if second:
            brief[(isa.SET_OF_PREFIX[int(first, 16)], int(second, 16))] = mnemonic
        else:
            brief[(isa.CORE, int(first, 16))] = mnemonic
    assert brief == {k: s.mnemonic for k, s in isa.OPCODES.items()}


def test_terminators_are_known_mnemonics():
    assert isa.TERMINATORS <= set(isa.BY_MNEMONIC)


def test_edges_name_every_branch_field():
    """The edges column covers each pc field (with the remap that follows it in the
    encoding) and br_table's cases; only terminators have edges."""
    for spec in isa.OPCODES.values():
        kinds = [f.kind for f in spec.fields]
        expected = []
        for i, f in enumerate(spec.fields):
            if f.kind == "pc":
                nxt = spec.fields[i + 1] if i + 1 < len(spec.fields) else None
                expected.append((f.name, nxt.name if nxt is not None and nxt.kind == "remap" else None))
        if "cases" in kinds:
            expected.append(("cases", None))
        assert sorted(spec.edges, key=str) == sorted(expected, key=str), spec.mnemonic
        if spec.edges:
            assert spec.is_terminator, spec.mnemonic
    exits = {s.mnemonic for s in isa.OPCODES.values() if s.is_terminator and not s.edges}
    assert exits == {"return", "fail"}


@needs_isa
def test_branching_instructions_equal_isa():
    """Instructions with a branch target in isa.json are exactly our rows with edges."""
    d = _isa()
    branching = set()
    for ins in d["instructions"]:
        if ins.get("kind") in ("marker", "prefix"):
            continue
        kinds = {f.get("kind") for f in _resolved_fields(d, ins["encoding"])}
        if kinds & {"branch_target", "branch_table_cases"}:
            branching.add(ins["mnemonic"])
    assert branching == {s.mnemonic for s in isa.OPCODES.values() if s.edges}


def test_rows_are_literal():
    """One written row per opcode, so `grep 0x2A translator/isa.py` finds add.i64."""
    source = Path(isa.__file__).read_text()
    for (opset, opcode), spec in isa.OPCODES.items():
        assert f'0x{opcode:02X}, "{spec.mnemonic}"' in source, spec.mnemonic


def test_every_row_says_how_it_is_emitted():
    """The emit column names the code generator's emitter for each op: `_emit_<kind>` for
    an op inside a block, `_end_<kind>` for a terminator (translator/codegen/ops.py)."""
    from translator.codegen.ops import OpRenderer

    for spec in isa.OPCODES.values():
        assert spec.emit in isa.EMIT_KINDS, spec.mnemonic
        if spec.emit == "unsupported":
            continue
        prefix = "_end_" if spec.is_terminator else "_emit_"
        assert hasattr(OpRenderer, prefix + spec.emit), (spec.mnemonic, spec.emit)
    kinds = {s.emit for s in isa.OPCODES.values()}
    assert kinds == set(isa.EMIT_KINDS), set(isa.EMIT_KINDS) - kinds


def test_cannot_fail_ops_never_raise():
    """isa.CANNOT_FAIL (ops an analysis may move ahead of a failing call): table rows of
    integer ops whose numerics function returns on every edge operand."""
    import itertools

    from runtime_support.vm import numerics

    floats = (0.0, -0.0, 1.5, float("inf"), float("-inf"), float("nan"), 3.4e38, 5e-324)
    edges = {
        "i32": (0, 1, -1, 31, 32, 2**31 - 1, -(2**31)),
        "i64": (0, 1, -1, 63, 64, 2**63 - 1, -(2**63)),
        "f32": floats,
        "f64": floats,
    }
    for mnemonic in isa.CANNOT_FAIL:
        spec = isa.BY_MNEMONIC[mnemonic]
        assert spec.cannot_fail and spec.emit in ("numeric", "const", "select"), mnemonic
        banks = [f.bank for f in spec.fields if f.kind == "register" and not f.write]
        written = [f.bank for f in spec.fields if f.kind == "register" and f.write]
        # (value registers only: no ref; a float only in a bit cast)
        assert set(banks + written) <= {"i32", "i64"} or mnemonic.startswith("bitcast."), mnemonic
        if spec.emit != "numeric":  # (a constant; a select is a conditional expression)
            continue
        fn = numerics.OPS[mnemonic]
        for args in itertools.product(*(edges[b] for b in banks)):
            fn(*args)  # (raises nothing)
    assert not isa.BY_MNEMONIC["div.i64.s"].cannot_fail
    assert not isa.CANNOT_FAIL & isa.FAILS_ON_DIVISOR


def test_float_compares_never_raise():
    """isa.FLOAT_COMPARES (a loop call's test may compute them): table rows of f32
    compares giving 0 or 1 on every edge operand, none in CANNOT_FAIL."""
    import itertools

    from runtime_support.vm import numerics

    floats = (0.0, -0.0, 1.5, float("inf"), float("-inf"), float("nan"), 3.4e38, 5e-324)
    for mnemonic in isa.FLOAT_COMPARES:
        spec = isa.BY_MNEMONIC[mnemonic]
        assert spec.float_compare and not spec.cannot_fail and spec.emit == "numeric", mnemonic
        banks = [f.bank for f in spec.fields if f.kind == "register" and not f.write]
        assert set(banks) == {"f32"}, mnemonic
        fn = numerics.OPS[mnemonic]
        for args in itertools.product(floats, repeat=len(banks)):
            assert fn(*args) in (0, 1), (mnemonic, args)


def test_divisions_fail_only_on_a_zero_or_minus_one_divisor():
    """isa.FAILS_ON_DIVISOR: every integer division and remainder of the table, and each
    returns for every edge dividend over every divisor but 0 and -1 (what
    analyses/constants.py `movable` relies on for a division by a known constant)."""
    import itertools

    from runtime_support.vm import numerics

    rows = {
        s.mnemonic for s in isa.OPCODES.values()
        if s.emit == "numeric" and s.mnemonic.split(".")[0] in ("div", "rem")
        and s.fields[0].bank in ("i32", "i64")
    }  # fmt: skip
    assert rows == set(isa.FAILS_ON_DIVISOR)
    for mnemonic in rows:
        bits = 32 if ".i32" in mnemonic else 64
        edges = (0, 1, -1, 2, 7, 2 ** (bits - 1) - 1, -(2 ** (bits - 1)))
        fn = numerics.OPS[mnemonic]
        for a, b in itertools.product(edges, edges):
            if b in (0, -1):
                continue
            fn(a, b)  # (raises nothing)
        with pytest.raises(VMError):
            fn(1, 0)


def test_no_stage_switches_on_opcode_names():
    """Stages ask the table (emit kind, fields, edges), not mnemonic strings."""
    root = Path(isa.__file__).parent
    pattern = re.compile(r"mnemonic\s*(==|!=|in\b)|\.mnemonic\.(startswith|endswith)|\bm (==|in) [(\"]")
    found = [
        f"{p.relative_to(root)}:{n}"
        for p in sorted(root.rglob("*.py"))
        if p.name != "isa.py"
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, found
