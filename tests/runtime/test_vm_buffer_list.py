"""!vm.buffer / !vm.list / ref-type tests, differential against the IREE 3.13 VM.

VM-dialect programs using vm.buffer.* / vm.list.* ops return scalars (a buffer's state
is returned as its `vm.buffer.hash`); the same sequences run on runtime_support.vm and
both the results and the error status codes must agree.

Known deviations, not sent to IREE:
* negative element offsets: IREE 3.13 multiplies before its bounds check and can read
  out of bounds (`load.i32` at -1 of a rodata buffer returned the segment's length
  prefix); pyree raises OUT_OF_RANGE.
* negative `buffer.alloc` lengths / `list.resize` sizes: IREE reads them as huge unsigned
  sizes; pyree raises.
"""

from __future__ import annotations

import hashlib
import re
import struct
import subprocess
from pathlib import Path

import pytest

from runtime_support.errors import StatusCode, VMError
from runtime_support.vm import buffer as B
from runtime_support.vm import list as L
from runtime_support.vm import refs as R
from runtime_support.vm.buffer import VMBuffer, siphash24
from runtime_support.vm.list import VMList
from runtime_support.vm.numerics import NAN, NEG_NAN, f32
from iree_tools import find_tool  # IREE tools on PATH or in the iree packages

VM_FLAGS = (
    "--compile-mode=vm",
    "--iree-vm-target-extension-f32",
    "--iree-vm-target-extension-f64",
)

SIZE = 24
PATTERN = (0x0123456789ABCDEF, -0x0F1E2D3C4B5A6978, 0x7F80FF0011223344)
RODATA = [1, 2, 3, -4, 0x7F00FF80]

# load/store kinds: name -> (width, VM register type, store op suffix)
LOADS = {
    "i8.u": (1, "i32"),
    "i8.s": (1, "i32"),
    "i16.u": (2, "i32"),
    "i16.s": (2, "i32"),
    "i32": (4, "i32"),
    "i64": (8, "i64"),
    "f32": (4, "f32"),
    "f64": (8, "f64"),
}
STORES = {
    "i8": (1, "i32"),
    "i16": (2, "i32"),
    "i32": (4, "i32"),
    "i64": (8, "i64"),
    "f32": (4, "f32"),
    "f64": (8, "f64"),
}
VALUES = {
    "i32": [0, 1, -1, 0x7F, 0x80, 0xFF, 0x1234, -0x8000, 0x12345678, -0x80000000],
    "i64": [0, -1, 0x123456789ABCDEF0 - (1 << 64) + (1 << 63), -(1 << 63), 255],
    "f32": [0.0, -0.0, 1.5, f32(0.1), f32(-3.4e38), float("inf"), NAN],
    "f64": [0.0, -0.0, 0.1, -2.5e300, float("-inf"), NEG_NAN],
}


def _fn(s: str) -> str:
    return s.replace(".", "_")


# --------------------------------------------------------------------------------------
# VM programs


def _pattern_mlir() -> str:
    lines = [
        f"    %size = vm.const.i64 {SIZE}",
        "    %align = vm.const.i32 16",
        "    %b = vm.buffer.alloc %size, %align : !vm.buffer",
    ]
    for k, v in enumerate(PATTERN):
        lines.append(f"    %pi{k} = vm.const.i64 {k}")
        lines.append(f"    %pv{k} = vm.const.i64 {v}")
        lines.append(f"    vm.buffer.store.i64 %pv{k}, %b[%pi{k}] : i64 -> !vm.buffer")
    lines.append("    %zero = vm.const.i64 0")
    return "\n".join(lines) + "\n"


def _func(name: str, args: str, result: str, body: str, ret: str) -> str:
    return (
        f"  vm.func @{name}({args}) -> {result} {{\n{_pattern_mlir()}{body}"
        f"    vm.return {ret} : {result}\n  }}\n  vm.export @{name}\n"
    )


def buffer_module() -> str:
    out = ["vm.module @bufm {\n"]
    vals = ", ".join(str(v) for v in RODATA)
    out.append(f"  vm.rodata private @ro dense<[{vals}]> : tensor<{len(RODATA)}xi32>\n")
    for k, (w, t) in LOADS.items():
        out.append(
            _func(
                f"ld_{_fn(k)}", "%i: i64", t,
                f"    %r = vm.buffer.load.{k} %b[%i] : !vm.buffer -> {t}\n", "%r",
            )
        )  # fmt: skip
    for k, (w, t) in STORES.items():
        out.append(
            _func(
                f"st_{k}", f"%v: {t}, %i: i64", "i64",
                f"    vm.buffer.store.{k} %v, %b[%i] : {t} -> !vm.buffer\n"
                "    %h = vm.buffer.hash %b, %zero, %size : !vm.buffer -> i64\n",
                "%h",
            )
        )  # fmt: skip
        out.append(
            _func(
                f"fill_{k}", f"%o: i64, %n: i64, %v: {t}", "i64",
                f"    vm.buffer.fill.{k} %b, %o, %n, %v : {t} -> !vm.buffer\n"
                "    %h = vm.buffer.hash %b, %zero, %size : !vm.buffer -> i64\n",
                "%h",
            )
        )  # fmt: skip
    out.append(
        _func(
            "copy", "%so: i64, %do: i64, %n: i64", "i64",
            "    %c20 = vm.const.i64 20\n"
            "    %d = vm.buffer.alloc %c20, %align : !vm.buffer\n"
            "    vm.buffer.copy %b, %so, %d, %do, %n : !vm.buffer -> !vm.buffer\n"
            "    %h = vm.buffer.hash %d, %zero, %c20 : !vm.buffer -> i64\n",
            "%h",
        )
    )  # fmt: skip
    out.append(
        _func(
            "copy_self", "%so: i64, %do: i64, %n: i64", "i64",
            "    vm.buffer.copy %b, %so, %b, %do, %n : !vm.buffer -> !vm.buffer\n"
            "    %h = vm.buffer.hash %b, %zero, %size : !vm.buffer -> i64\n",
            "%h",
        )
    )  # fmt: skip
    out.append(
        _func(
            "compare", "%ao: i64, %bo: i64, %n: i64", "i32",
            "    %c = vm.buffer.clone %b, %zero, %size, %align : !vm.buffer -> !vm.buffer\n"
            "    %i10 = vm.const.i64 10\n"
            "    %x = vm.const.i32 85\n"
            "    vm.buffer.store.i8 %x, %c[%i10] : i32 -> !vm.buffer\n"
            "    %r = vm.buffer.compare %b, %ao, %c, %bo, %n : !vm.buffer, !vm.buffer\n",
            "%r",
        )
    )  # fmt: skip
    out.append(
        _func(
            "clone", "%o: i64, %n: i64", "i64",
            "    %c = vm.buffer.clone %b, %o, %n, %align : !vm.buffer -> !vm.buffer\n"
            "    %l = vm.buffer.length %c : !vm.buffer -> i64\n"
            "    %h = vm.buffer.hash %c, %zero, %l : !vm.buffer -> i64\n"
            "    %h2 = vm.xor.i64 %h, %l : i64\n",
            "%h2",
        )
    )  # fmt: skip
    out.append(
        _func(
            "hash", "%o: i64, %n: i64", "i64",
            "    %h = vm.buffer.hash %b, %o, %n : !vm.buffer -> i64\n", "%h",
        )
    )  # fmt: skip
    out.append(
        _func(
            "alloc_len", "%n: i64, %a: i32", "i64",
            "    %c = vm.buffer.alloc %n, %a : !vm.buffer\n"
            "    %l = vm.buffer.length %c : !vm.buffer -> i64\n", "%l",
        )
    )  # fmt: skip
    out.append(
        _func(
            "ro_ld_i16_s", "%i: i64", "i32",
            "    %ro = vm.const.ref.rodata @ro : !vm.buffer\n"
            "    %r = vm.buffer.load.i16.s %ro[%i] : !vm.buffer -> i32\n", "%r",
        )
    )  # fmt: skip
    out.append(
        _func(
            "ro_st_i32", "%v: i32, %i: i64", "i32",
            "    %ro = vm.const.ref.rodata @ro : !vm.buffer\n"
            "    vm.buffer.store.i32 %v, %ro[%i] : i32 -> !vm.buffer\n", "%v",
        )
    )  # fmt: skip
    out.append(
        _func(
            "ro_fill_i8", "%v: i32, %i: i64", "i32",
            "    %ro = vm.const.ref.rodata @ro : !vm.buffer\n"
            "    vm.buffer.fill.i8 %ro, %i, %i, %v : i32 -> !vm.buffer\n", "%v",
        )
    )  # fmt: skip
    out.append(
        _func(
            "ro_copy_into", "%i: i64", "i64",
            "    %ro = vm.const.ref.rodata @ro : !vm.buffer\n"
            "    vm.buffer.copy %b, %zero, %ro, %zero, %i : !vm.buffer -> !vm.buffer\n",
            "%i",
        )
    )  # fmt: skip
    out.append(
        _func(
            "ro_hash", "%o: i64, %n: i64", "i64",
            "    %ro = vm.const.ref.rodata @ro : !vm.buffer\n"
            "    %h = vm.buffer.hash %ro, %o, %n : !vm.buffer -> i64\n", "%h",
        )
    )  # fmt: skip
    out.append(
        _func(
            "null_ld", "%i: i64", "i32",
            "    %nb = vm.const.ref.zero : !vm.buffer\n"
            "    %r = vm.buffer.load.i32 %nb[%i] : !vm.buffer -> i32\n", "%r",
        )
    )  # fmt: skip
    out.append("}\n")
    return "".join(out)


def _list_conv_func(lt: str, st: str, gt: str) -> str:
    name = f"conv_{lt.replace('?', 'v')}_{st}_{gt}"
    L_ = f"!vm.list<{lt}>"
    return (
        f"  vm.func @{name}(%v: {st}) -> {gt} {{\n"
        "    %c1 = vm.const.i32 1\n    %c0 = vm.const.i32 0\n"
        f"    %l = vm.list.alloc %c1 : (i32) -> {L_}\n"
        f"    vm.list.resize %l, %c1 : ({L_}, i32)\n"
        f"    vm.list.set.{st} %l, %c0, %v : ({L_}, i32, {st})\n"
        f"    %r = vm.list.get.{gt} %l, %c0 : ({L_}, i32) -> {gt}\n"
        f"    vm.return %r : {gt}\n  }}\n  vm.export @{name}\n"
    )


LIST_TYPES = ["?", "i8", "i16", "i32", "i64", "f32", "f64"]
SCALARS = ["i32", "i64", "f32", "f64"]


def list_module() -> str:
    out = ["vm.module @listm {\n"]
    for lt in LIST_TYPES:
        for st in SCALARS:
            for gt in SCALARS:
                out.append(_list_conv_func(lt, st, gt))
    LI = "!vm.list<i32>"
    # resize / oob: set [2] = v, resize to r1, resize to r2, get [g]
    out.append(
        "  vm.func @resize(%v: i32, %r1: i32, %r2: i32, %g: i32) -> i32 {\n"
        "    %c0 = vm.const.i32 0\n    %c2 = vm.const.i32 2\n    %c3 = vm.const.i32 3\n"
        f"    %l = vm.list.alloc %c0 : (i32) -> {LI}\n"
        f"    vm.list.reserve %l, %c2 : ({LI}, i32)\n"
        f"    vm.list.resize %l, %c3 : ({LI}, i32)\n"
        f"    vm.list.set.i32 %l, %c2, %v : ({LI}, i32, i32)\n"
        f"    vm.list.resize %l, %r1 : ({LI}, i32)\n"
        f"    vm.list.resize %l, %r2 : ({LI}, i32)\n"
        f"    %r = vm.list.get.i32 %l, %g : ({LI}, i32) -> i32\n"
        f"    %s = vm.list.size %l : ({LI}) -> i32\n"
        "    %c1000 = vm.const.i32 1000\n"
        "    %s2 = vm.mul.i32 %s, %c1000 : i32\n"
        "    %o = vm.add.i32 %r, %s2 : i32\n"
        "    vm.return %o : i32\n  }\n  vm.export @resize\n"
    )
    out.append(
        "  vm.func @set_oob(%n: i32, %i: i32) -> i32 {\n"
        "    %c0 = vm.const.i32 0\n    %c7 = vm.const.i32 7\n"
        f"    %l = vm.list.alloc %c0 : (i32) -> {LI}\n"
        f"    vm.list.resize %l, %n : ({LI}, i32)\n"
        f"    vm.list.set.i32 %l, %i, %c7 : ({LI}, i32, i32)\n"
        f"    %s = vm.list.size %l : ({LI}) -> i32\n"
        "    vm.return %s : i32\n  }\n  vm.export @set_oob\n"
    )
    # refs in variant / typed ref lists: which = 0 buffer, 1 list, 2 null, 3 i32 value,
    # 4 nothing; read back as a buffer, as a list, or as i32.
    # (3.13 cannot encode `!vm.list<!vm.buffer>`: "not registered in type table"; a list
    # of lists is used as the typed ref list.)
    for lt in ("?", "!vm.list<i32>"):
        for as_ in ("buffer", "list", "i32"):
            name = f"ref_{'v' if lt == '?' else 'lst'}_{as_}"
            LT = f"!vm.list<{lt}>"
            body = [
                f"  vm.func @{name}(%which: i32) -> i32 {{",
                "    %c0 = vm.const.i32 0\n    %c1 = vm.const.i32 1\n    %c2 = vm.const.i32 2",
                "    %c3 = vm.const.i32 3\n    %c16 = vm.const.i64 16",
                f"    %l = vm.list.alloc %c1 : (i32) -> {LT}",
                f"    vm.list.resize %l, %c1 : ({LT}, i32)",
                "    %buf = vm.buffer.alloc %c16, %c1 : !vm.buffer",
                "    %inner = vm.list.alloc %c1 : (i32) -> !vm.list<i32>",
                "    %null = vm.const.ref.zero : !vm.buffer",
                "    %nulll = vm.const.ref.zero : !vm.list<i32>",
                "    %is0 = vm.cmp.eq.i32 %which, %c0 : i32",
                "    %is1 = vm.cmp.eq.i32 %which, %c1 : i32",
                "    %is2 = vm.cmp.eq.i32 %which, %c2 : i32",
                "    %is3 = vm.cmp.eq.i32 %which, %c3 : i32",
                "    vm.cond_br %is0, ^s0, ^t1",
                (
                    f"  ^s0:\n    vm.list.set.ref %l, %c0, %buf : ({LT}, i32, !vm.buffer)\n    vm.br ^get"
                    if lt == "?"
                    else "  ^s0:\n    vm.br ^get"
                ),
                "  ^t1:\n    vm.cond_br %is1, ^s1, ^t2",
            ]
            body.append(
                f"  ^s1:\n    vm.list.set.ref %l, %c0, %inner : ({LT}, i32, !vm.list<i32>)"
                "\n    vm.br ^get"
            )
            null, nullt = (
                ("%null", "!vm.buffer") if lt == "?" else ("%nulll", "!vm.list<i32>")
            )
            body += [
                "  ^t2:\n    vm.cond_br %is2, ^s2, ^t3",
                f"  ^s2:\n    vm.list.set.ref %l, %c0, {null} : ({LT}, i32, {nullt})\n    vm.br ^get",
                "  ^t3:\n    vm.cond_br %is3, ^s3, ^get",
            ]
            if lt == "?":
                body.append(
                    f"  ^s3:\n    vm.list.set.i32 %l, %c0, %c3 : ({LT}, i32, i32)\n    vm.br ^get"
                )
            else:
                body.append("  ^s3:\n    vm.br ^get")
            body.append("  ^get:")
            if as_ == "buffer":
                if lt != "?":
                    continue  # the verifier rejects list<!vm.list<i32>> -> !vm.buffer
                body += [
                    f"    %r = vm.list.get.ref %l, %c0 : ({LT}, i32) -> !vm.buffer",
                    "    %nz = vm.cmp.nz.ref %r : !vm.buffer",
                ]
            elif as_ == "list":
                body += [
                    f"    %r = vm.list.get.ref %l, %c0 : ({LT}, i32) -> !vm.list<i32>",
                    "    %nz = vm.cmp.nz.ref %r : !vm.list<i32>",
                ]
            else:
                if lt != "?":
                    continue  # the verifier rejects get.i32 on a ref list
                body += [f"    %nz = vm.list.get.i32 %l, %c0 : ({LT}, i32) -> i32"]
            body += ["    vm.return %nz : i32", "  }", f"  vm.export @{name}"]
            out.append("\n".join(body) + "\n")
    out.append("}\n")
    return "".join(out)


# --------------------------------------------------------------------------------------
# Running


def _compile(source: str, out_dir: Path) -> Path:
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    out = out_dir / f"m-{key}.vmfb"
    if not out.exists():
        src = out.with_suffix(".mlir")
        src.write_text(source)
        proc = subprocess.run(
            ["iree-compile", *VM_FLAGS, str(src), "-o", str(out)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    return out


_CODE_RE = re.compile(r":\d+: ([A-Z_]+);")


class IreeModule:
    def __init__(self, path: Path):
        import iree.runtime as rt

        self.rt = rt
        self.instance = rt.VmInstance()
        self.module = rt.VmModule.copy_buffer(self.instance, path.read_bytes())
        self.context = rt.VmContext(self.instance, [self.module])

    def call(self, name: str, *args):
        """('ok', value) or ('err', STATUS_NAME)."""
        rt = self.rt
        fn = self.module.lookup_function(name)
        assert fn is not None, name
        a = rt.VmVariantList(len(args))
        for x in args:
            (a.push_float if isinstance(x, float) else a.push_int)(x)
        r = rt.VmVariantList(1)
        try:
            self.context.invoke(fn, a, r)
        except Exception as e:  # noqa: BLE001 - IREE raises plain RuntimeError
            m = _CODE_RE.search(str(e))
            return ("err", m.group(1) if m else str(e))
        return ("ok", r.get_variant(0))


def ours(fn, *args):
    try:
        return ("ok", fn(*args))
    except VMError as e:
        return ("err", e.code.name)


def _same(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "ok" and isinstance(a[1], float):
        return struct.pack("<d", a[1]) == struct.pack("<d", float(b[1]))
    return a[1] == b[1]


def _skip_without_iree():
    pytest.importorskip("iree.runtime")
    if find_tool("iree-compile") is None:
        pytest.skip("iree-compile not available")


@pytest.fixture(scope="module")
def buf_mod(tmp_path_factory):
    _skip_without_iree()
    return IreeModule(_compile(buffer_module(), tmp_path_factory.mktemp("vmbuf")))


@pytest.fixture(scope="module")
def list_mod(tmp_path_factory):
    _skip_without_iree()
    return IreeModule(_compile(list_module(), tmp_path_factory.mktemp("vmlist")))


def patterned() -> VMBuffer:
    b = VMBuffer.alloc(SIZE, 16)
    for k, v in enumerate(PATTERN):
        b.store_i64(k, v)
    return b


def rodata() -> VMBuffer:
    return VMBuffer(struct.pack(f"<{len(RODATA)}i", *RODATA))


def _hash_all(b: VMBuffer) -> int:
    return b.hash(0, b.length)


def _check(mod, name, model, args_list):
    bad = []
    for args in args_list:
        want = mod.call(name, *args)
        got = ours(model, *args)
        if not _same(got, want):
            bad.append((args, got, want))
    assert not bad, f"{name}: {len(bad)} mismatches, e.g. {bad[:6]}"


# --------------------------------------------------------------------------------------
# Buffer tests


@pytest.mark.parametrize("kind", sorted(LOADS))
def test_buffer_load(buf_mod, kind):
    width, _ = LOADS[kind]
    method = getattr(VMBuffer, "load_" + kind.replace(".", ""))
    _check(
        buf_mod,
        f"ld_{_fn(kind)}",
        lambda i: method(patterned(), i),
        [(i,) for i in range(SIZE // width + 2)],
    )


@pytest.mark.parametrize("kind", sorted(STORES))
def test_buffer_store(buf_mod, kind):
    width, t = STORES[kind]

    def model(v, i):
        b = patterned()
        getattr(b, "store_" + kind)(i, v)
        return _hash_all(b)

    _check(
        buf_mod,
        f"st_{kind}",
        model,
        [(v, i) for v in VALUES[t] for i in range(0, SIZE // width + 2)],
    )


@pytest.mark.parametrize("kind", sorted(STORES))
def test_buffer_fill(buf_mod, kind):
    width, t = STORES[kind]
    n_el = SIZE // width

    def model(o, n, v):
        b = patterned()
        getattr(b, "fill_" + kind)(o, n, v)
        return _hash_all(b)

    cases = [
        (o, n, v)
        for o in range(0, n_el + 2)
        for n in range(0, n_el + 2)
        for v in VALUES[t][:4]
    ]
    _check(buf_mod, f"fill_{kind}", model, cases)


def test_buffer_copy(buf_mod):
    def model(so, do, n):
        d = VMBuffer.alloc(20)
        patterned().copy(so, d, do, n)
        return _hash_all(d)

    def model_self(so, do, n):
        b = patterned()
        b.copy(so, b, do, n)
        return _hash_all(b)

    cases = [
        (so, do, n)
        for so in (0, 1, 5, 23, 24, 25)
        for do in (0, 3, 19, 20)
        for n in (0, 1, 4, 17, 20, 21)
    ]
    _check(buf_mod, "copy", model, cases)
    _check(buf_mod, "copy_self", model_self, cases)


def test_buffer_compare_clone_hash(buf_mod):
    def cmp_model(ao, bo, n):
        a = patterned()
        c = a.clone(0, SIZE)
        c.store_i8(10, 85)
        return a.compare(ao, c, bo, n)

    cases = [
        (ao, bo, n)
        for ao in (0, 1, 10, 11, 24)
        for bo in (0, 1, 11)
        for n in (0, 1, 9, 10, 11, 13, 24, 25)
    ]
    _check(buf_mod, "compare", cmp_model, cases)

    def clone_model(o, n):
        c = patterned().clone(o, n)
        return _hash_all(c) ^ c.length

    _check(
        buf_mod,
        "clone",
        clone_model,
        [(o, n) for o in (0, 1, 7, 24, 25) for n in (0, 1, 8, 17, 24, 25)],
    )
    _check(
        buf_mod,
        "hash",
        lambda o, n: patterned().hash(o, n),
        [(o, n) for o in (0, 1, 3, 8, 23, 24, 25) for n in range(0, 26)],
    )
    _check(
        buf_mod,
        "alloc_len",
        lambda n, a: VMBuffer.alloc(n, a).length,
        [(n, a) for n in (0, 1, 10, 4096) for a in (0, 1, 3, 8, 16, 64, 4096)],
    )


def test_buffer_rodata_and_null(buf_mod):
    _check(
        buf_mod,
        "ro_ld_i16_s",
        lambda i: rodata().load_i16s(i),
        [(i,) for i in range(12)],
    )

    def st(v, i):
        rodata().store_i32(i, v)
        return v

    _check(buf_mod, "ro_st_i32", st, [(7, 0), (7, 4), (7, 5)])

    def fill(v, i):
        rodata().fill_i8(i, i, v)
        return v

    _check(buf_mod, "ro_fill_i8", fill, [(1, 0), (1, 2), (1, 30)])

    def copy_into(n):
        patterned().copy(0, rodata(), 0, n)
        return n

    _check(buf_mod, "ro_copy_into", copy_into, [(0,), (4,), (30,)])
    _check(
        buf_mod,
        "ro_hash",
        lambda o, n: rodata().hash(o, n),
        [(0, 20), (0, 3), (4, 8), (8, 11)],
    )
    _check(buf_mod, "null_ld", lambda i: B.buffer_load_i32(None, i), [(0,), (3,)])


def test_buffer_local_semantics():
    b = VMBuffer.alloc(16)
    b.store_i32(1, 0x12345678)
    assert b.load_i8u(4) == 0x78
    b.fill_i32(2, 2, -1)
    assert b.tobytes(8, 8) == b"\xff" * 8
    for bad in (-1, 4):
        with pytest.raises(VMError) as e:
            b.load_i32(bad)
        assert e.value.code == StatusCode.OUT_OF_RANGE
    with pytest.raises(VMError) as e:
        b.fill_i8(-1, 1, 0)
    assert e.value.code == StatusCode.OUT_OF_RANGE
    with pytest.raises(VMError) as e:
        VMBuffer.alloc(4, 3)
    assert e.value.code == StatusCode.INVALID_ARGUMENT
    # stores keep the low bits
    b.store_i8(0, 0x1FF)
    b.store_i16(1, -1)
    assert b.load_i8s(0) == -1 and b.load_i16u(1) == 0xFFFF
    b.store_i32(0, 0x1_8000_0001)
    assert b.load_i32(0) == -0x7FFFFFFF
    b.store_f32(0, 1e300)
    assert b.load_f32(0) == float("inf")
    # alignment and raw access
    for align in (0, 16, 64, 256):
        a = VMBuffer.alloc(100, align)
        assert a.address % max(align, 16) == 0
        assert not a.readonly and a.data.nbytes == 100 and not a.data.readonly
    ro = VMBuffer(memoryview(bytearray(b"abcd")), readonly=True)
    assert ro.readonly and ro.data.readonly
    with pytest.raises(VMError) as e:
        ro.store_i8(0, 1)
    assert e.value.code == StatusCode.PERMISSION_DENIED
    assert VMBuffer(b"xyz").readonly
    # zero-copy wrap
    raw = bytearray(8)
    w = VMBuffer(raw)
    w.store_i32(1, 5)
    assert raw[4] == 5
    # null forms
    with pytest.raises(VMError) as e:
        B.buffer_length(None)
    assert e.value.code == StatusCode.INVALID_ARGUMENT
    assert set(B.BUFFER_OPS) >= {"buffer.load.i8.u", "buffer.fill.f64", "buffer.hash"}


def test_siphash_vectors():
    key = bytes(range(16))
    # Reference vectors of the SipHash paper (key 00..0F, message 00..len-1).
    assert siphash24(key, b"") == 0x726FDB47DD0E0E31
    assert siphash24(key, bytes(range(8))) == 0x93F5F5799A932462
    assert siphash24(key, bytes(range(15))) == 0xA129CA6149BE45E5
    assert VMBuffer(bytes(range(15))).hash(0, 15) == 0xA129CA6149BE45E5 - (1 << 64)


# --------------------------------------------------------------------------------------
# List tests

CONV_VALUES = {
    "i32": [-(1 << 31) + 3, 300, 200, -1, 0x7FFF8001, 127],
    "i64": [(1 << 40) + (1 << 31) + 7, -1, (1 << 63) - 1, -(1 << 63), 0x1_0000_8080],
    "f32": [-2.5, f32(3.7), f32(1e30), float("inf"), NAN, -0.0],
    "f64": [-2.5, 3.7, 1e300, 1e-300, NEG_NAN, -0.0],
}


@pytest.mark.parametrize("lt", LIST_TYPES)
def test_list_conversions(list_mod, lt):
    for st in SCALARS:
        for gt in SCALARS:

            def model(v, st=st, gt=gt):
                lst = VMList.alloc(lt, 1)
                lst.resize(1)
                getattr(lst, "set_" + st)(0, v)
                return getattr(lst, "get_" + gt)(0)

            name = f"conv_{lt.replace('?', 'v')}_{st}_{gt}"
            _check(list_mod, name, model, [(v,) for v in CONV_VALUES[st]])


def test_list_resize_and_bounds(list_mod):
    def model(v, r1, r2, g):
        lst = VMList.alloc("i32", 0)
        lst.reserve(2)
        lst.resize(3)
        lst.set_i32(2, v)
        lst.resize(r1)
        lst.resize(r2)
        r = lst.get_i32(g)
        return (r + lst.size() * 1000 + (1 << 31)) % (1 << 32) - (1 << 31)

    cases = [
        (9, r1, r2, g)
        for r1 in (0, 1, 3, 5)
        for r2 in (0, 2, 3, 6)
        for g in (-1, 0, 2, 3, 5)
    ]
    _check(list_mod, "resize", model, cases)

    def set_oob(n, i):
        lst = VMList.alloc("i32", 0)
        lst.resize(n)
        lst.set_i32(i, 7)
        return lst.size()

    _check(
        list_mod,
        "set_oob",
        set_oob,
        [(n, i) for n in (0, 1, 4) for i in (-1, 0, 1, 3, 4)],
    )


@pytest.mark.parametrize(
    "name", ["ref_v_buffer", "ref_v_list", "ref_v_i32", "ref_lst_list"]
)
def test_list_refs(list_mod, name):
    _, kind, as_ = name.split("_")
    lt = "?" if kind == "v" else "!vm.list<i32>"

    def model(which):
        lst = VMList.alloc(lt, 1)
        lst.resize(1)
        if which == 0 and lt == "?":
            lst.set_ref(0, VMBuffer.alloc(16, 1))
        elif which == 1:
            lst.set_ref(0, VMList.alloc("i32", 1))
        elif which == 2:
            lst.set_ref(0, None)
        elif which == 3 and lt == "?":
            lst.set_i32(0, 3)
        if as_ == "buffer":
            return 0 if lst.get_ref(0, "!vm.buffer") is None else 1
        if as_ == "list":
            return 0 if lst.get_ref(0, "!vm.list<i32>") is None else 1
        return lst.get_i32(0)

    _check(list_mod, name, model, [(w,) for w in range(5)])


def test_list_local_semantics():
    lst = VMList.from_values("i8", [300, 200, -1])
    assert list(lst) == [44, -56, -1] and len(lst) == 3
    assert lst.get_i64(1) == -56
    v = VMList.from_values("?", [1, 2.5, None])
    assert v.items_with_types() == [("i64", 1), ("f64", 2.5), (None, None)]
    assert VMList.from_values("?", [1.1], value_type="f32").get_f64(0) == f32(1.1)
    with pytest.raises(VMError) as e:
        v.get_i32(2)
    assert e.value.code == StatusCode.FAILED_PRECONDITION
    with pytest.raises(VMError) as e:
        v.get_ref(0)
    assert e.value.code == StatusCode.FAILED_PRECONDITION
    with pytest.raises(VMError) as e:
        v.get_i32(3)
    assert e.value.code == StatusCode.OUT_OF_RANGE
    with pytest.raises(VMError) as e:
        v.resize(-1)
    assert e.value.code == StatusCode.RESOURCE_EXHAUSTED
    refs = VMList.alloc("!vm.buffer")
    refs.resize(2)
    assert refs.get_ref(0, "!vm.buffer") is None
    buf = VMBuffer.alloc(4)
    refs.set_ref(1, buf)
    assert refs.get_ref(1, "!vm.buffer") is buf
    assert refs.get_ref(1, "!vm.ref<?>") is buf
    assert refs.get_ref(1, "!hal.buffer") is None
    with pytest.raises(VMError) as e:
        refs.set_ref(0, VMList.alloc("i32"))
    assert e.value.code == StatusCode.INVALID_ARGUMENT
    with pytest.raises(VMError) as e:
        refs.get_i32(0)
    assert e.value.code == StatusCode.FAILED_PRECONDITION
    with pytest.raises(VMError) as e:
        L.list_size(None)
    assert e.value.code == StatusCode.INVALID_ARGUMENT
    assert L.list_get_ref(refs, 1, "!vm.buffer") is buf
    assert L.LIST_OPS["list.size"](refs) == 2


# --------------------------------------------------------------------------------------
# Ref registry


def test_ref_registry():
    class FakeHal:
        pass

    class FakeHalSub(FakeHal):
        pass

    class Unregistered:
        pass

    R.register_ref_type("!test.fake_hal", FakeHal)
    obj, sub = FakeHal(), FakeHalSub()
    assert R.ref_type_name(obj) == "!test.fake_hal"
    assert R.ref_type_name(sub) == "!test.fake_hal"
    assert R.type_matches(obj, "!test.fake_hal")
    assert R.type_matches(obj, "!vm.ref<!test.fake_hal>")
    assert R.type_matches(obj, "!vm.ref<?>") and R.type_matches(obj, "?")
    assert not R.type_matches(obj, "!vm.buffer")
    assert R.type_matches(None, "!vm.buffer")
    assert R.type_matches(VMBuffer.alloc(1), "!vm.buffer")
    assert R.type_matches(VMList.alloc("i32"), "!vm.list<!hal.buffer>")
    assert not R.type_matches(VMList.alloc("i32"), "!vm.buffer")
    assert R.type_matches(Unregistered(), "!hal.device")  # unregistered: trusted
    assert R.check_ref_type(obj, "!test.fake_hal") is obj
    with pytest.raises(VMError) as e:
        R.check_ref_type(obj, "!hal.buffer")
    assert e.value.code == StatusCode.INVALID_ARGUMENT
    with pytest.raises(ValueError):
        R.register_ref_type("!test.fake_hal", Unregistered)

    class FakeHal:  # noqa: F811 - same module and qualname: a reloaded class
        pass

    R.register_ref_type("!test.fake_hal", FakeHal)
    assert R.ref_type_name(FakeHal()) == "!test.fake_hal"
    assert R.ref_type_name(obj) is None  # the replaced class is no longer known

    @R.ref_type("!test.decorated")
    class Decorated:
        pass

    assert R.ref_type_name(Decorated()) == "!test.decorated"
    assert R.canonical_type_name("!vm.list<?>") == "!vm.list"


def test_large_fill_writes_in_place():
    """vm.buffer.fill of a whole large buffer writes in place: building pattern * count
    first doubled the memory and ended in a MemoryError traceback under an address-space
    limit (fuzz input afddee4a...vmfb:63862). Small fills keep their fast path."""
    import tracemalloc

    import numpy as np

    n = 16 << 20
    b = VMBuffer.alloc(n)
    tracemalloc.start()
    try:
        b.fill_i32(1, n // 4 - 2, -2)
        b.fill_i16(0, 2, 0x1234)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n // 8, peak  # no buffer-sized temporary
    words = np.frombuffer(b.data, dtype=np.int32)
    assert words[0] == 0x12341234 and words[-1] == 0
    assert (words[1:-1] == -2).all()
