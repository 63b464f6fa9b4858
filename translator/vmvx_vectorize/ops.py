"""The op handlers of the kernel walk (kernel.py): each VMVX op other than control flow
as its array form (runtime_support/loaders/vmvx_arrays.py, `A.` in the program), its
affine form and lower bound where they can be proved, constants folded with the kernel
numerics (runtime_support/vm/numerics_ftz.py), and the steps of a reduction loop's
accumulators (float sums and arith.maximumf chains) kept pending until their fold.

    apply(kernel, op)   the walk's `apply_op`: the op's handler, by mnemonic or prefix
"""

from __future__ import annotations

from translator.vmvx_vectorize.kernel import Kernel
from translator.vmvx_vectorize.values import GRID, NotVectorizable, Retry, Val, add_forms, scale

_NAN_TESTS = {"cmp.nan.f32": True}  # (is it a NaN: no flushing, one operand)
_WIDTH_CASTS = {"ext.i32.i64.s": "sign", "ext.i32.i64.u": "zero", "trunc.i64.i32": "trunc"}


def _h_const(k: Kernel, op) -> None:
    m = op.mnemonic
    kind = m.split(".")[1]
    value = 0 if m.endswith(".zero") else op["value"].value
    k.write(op["result"], k.const(kind, value))


def _h_discard(k, op) -> None:
    pass


def _h_list_get_ref(k: Kernel, op) -> None:
    lst, idx = k.read(op["list"]), k.read(op["index"])
    if lst.ref != "list" or idx.const is None:
        raise NotVectorizable("a binding taken from the list by a varying index")
    if not 0 <= idx.const < 1 << 31:
        raise NotVectorizable(f"a binding taken from the list at index {idx.const}")
    k.write(op["result"], Val(f"b{idx.const}", "ref", ref=("binding", idx.const)))
    k.bindings_used.add(idx.const)


def _h_rodata(k: Kernel, op) -> None:
    n = op["rodata"]
    k.write(op["value"], Val(f"ro{n}", "ref", ref=("rodata", n)))
    k.rodata_used.add(n)


def _h_alloc(k: Kernel, op) -> None:
    length = k.read(op["length"])
    if length.const is None or length.const < 0 or k.loops:
        raise NotVectorizable("a scratch buffer of varying size, or allocated in a loop")
    n = len(k.scratch)
    name = f"s{n}"
    k.emit(f"{name} = 0  # (scratch buffer {n}: zero-filled)")
    k.scratch_names.add(name)
    k.scratch.append({"name": name, "bytes": length.const, "key": None, "kind": None,
                      "line": len(k.lines) - 1})
    k.write(op["result"], Val(name, "ref", ref=("scratch", n)))


def _h_load(k: Kernel, op) -> None:
    m = op.mnemonic
    kind = m.split(".")[2]
    if kind not in ("f32", "i32"):
        raise NotVectorizable(f"`{m}`")
    buf, idx = k.read(op["source_buffer"]), k.read(op["source_offset"])
    if buf.ref == "consts":
        if idx.dims or kind != "i32":
            raise NotVectorizable("a constant read at a varying index")
        if k.mask:
            raise NotVectorizable("a constant read in a loop of varying trip count")
        v = k.new(kind, f"_constant_i32(r1, {idx.expr})")
        v.form = {("u", v.expr): 1}
        k.write(op["result"], v)
        return
    acc = k.access(buf.ref, idx, kind, False)
    if acc is not None:
        dims = idx.dims | frozenset(lp.atom for lp in k.loops)
        if isinstance(buf.ref, tuple) and buf.ref[0] == "scratch":
            dims |= frozenset(GRID)  # (what was stored may vary over the workgroups)
        v = k.accumulator(acc, kind, dims)
        if v is not None:
            k.write(op["result"], v)
            return
        v = k.new(kind, acc, dims)
    elif k.mask:  # (inactive lanes read nothing: their addresses may be out of range)
        v = k.new(kind, f"A.load_m({buf.expr}, {kind!r}, {idx.expr}, {k.mask[0]})", idx.dims | k.mask[1])
    else:
        v = k.new(kind, f"A.load({buf.expr}, {kind!r}, {idx.expr})", idx.dims)
    if kind == "i32" and not v.dims:
        v.form = {("u", v.expr): 1}
    k.write(op["result"], v)


def _h_store(k: Kernel, op) -> None:
    m = op.mnemonic
    kind = m.split(".")[2]
    if kind not in ("f32", "i32"):
        raise NotVectorizable(f"`{m}`")
    buf, idx, val = k.read(op["target_buffer"]), k.read(op["target_offset"]), k.read(op["value"], True)
    acc = k.access(buf.ref, idx, kind, True)
    in_reduction = bool(k.loops and k.loops[-1].reduce)
    if acc is not None and in_reduction:
        k.fold(acc, val)
        return
    if val.taint is not None:
        k.no_reduce(val.taint)
    if in_reduction:  # (a store each iteration: the loop runs as a Python `for`)
        k.plan["noreduce"].add(k.loops[-1].header)
        raise Retry
    if acc is not None:
        k.assign(acc, val.expr, kind)
        return
    k.mark_store()
    if k.mask:
        k.emit(f"A.store_m({buf.expr}, {kind!r}, {idx.expr}, {val.expr}, {k.mask[0]})")
    else:
        k.emit(f"A.store({buf.expr}, {kind!r}, {idx.expr}, {val.expr})")


_INT_BIN = {"add", "sub", "mul", "and", "or", "xor", "min", "max", "div", "rem"}


def _h_int(k: Kernel, op) -> None:
    m = op.mnemonic
    parts = m.split(".")
    name, kind = parts[0], parts[1]
    fname = m.replace(".", "_")
    if name == "fma":
        a, b, c = (k.read(op[f]) for f in ("first", "second", "third"))
        form = None
        if a.form is not None and b.form is not None and c.form is not None:
            if a.const is not None:
                form = add_forms(scale(b.form, a.const), c.form)
            elif b.const is not None:
                form = add_forms(scale(a.form, b.const), c.form)
        lo = None
        if None not in (a.lo, b.lo, c.lo) and a.lo >= 0 and b.lo >= 0:
            lo = a.lo * b.lo + c.lo
        _result(k, op, kind, f"A.{fname}({a.expr}, {b.expr}, {c.expr})", (a, b, c), form, lo)
        return
    a, b = k.read(op["left"]), k.read(op["right"])
    form, lo = None, None
    if name in ("add", "sub"):
        form = add_forms(a.form, b.form, 1 if name == "add" else -1)
        if name == "add" and a.lo is not None and b.lo is not None:
            lo = a.lo + b.lo
    elif name == "mul":
        if a.const is not None and b.form is not None:
            form = scale(b.form, a.const)
        elif b.const is not None and a.form is not None:
            form = scale(a.form, b.const)
        if a.lo is not None and b.lo is not None and a.lo >= 0 and b.lo >= 0:
            lo = a.lo * b.lo
    elif name in ("div", "rem"):
        if b.dims:
            raise NotVectorizable(f"`{m}` by a varying divisor")
        if b.const is not None and b.const > 0 and a.lo is not None and a.lo >= 0:
            lo = 0
            if a.form is not None and len(a.form) == 1 and list(a.form.values()) == [1]:
                (atom,) = a.form
                if atom in GRID:
                    form = {(name, atom, b.const): 1}
    elif name == "and" and (a.const == 0 or b.const == 0):
        k.write(op["result"], k.const(kind, 0))
        return
    elif name in ("min", "max") and a.lo is not None and b.lo is not None:
        lo = min(a.lo, b.lo)
    if name in ("div", "rem") and parts[-1] != "s":
        raise NotVectorizable(f"`{m}`")
    _result(k, op, kind, f"A.{fname}({a.expr}, {b.expr})", (a, b), form, lo)


def _result(k: Kernel, op, kind, rhs, operands, form, lo) -> None:
    dims = frozenset().union(*(o.dims for o in operands))
    if all(o.const is not None for o in operands):
        from runtime_support.vm import numerics_ftz as S

        value = getattr(S, op.mnemonic.replace(".", "_"))(*(o.const for o in operands))
        k.write(op["result"], k.const(kind, value))
        return
    if form is not None and set(form) <= {()}:
        k.write(op["result"], k.const(kind, form.get((), 0)))
        return
    v = k.new(kind, rhs, dims, form=form, lo=lo)
    if not dims and form is None and kind[0] == "i":
        v.form = {("u", v.expr): 1}
    k.write(op["result"], v)


def _h_cmp(k: Kernel, op) -> None:
    m = op.mnemonic
    fname = m.replace(".", "_")
    if _NAN_TESTS.get(m):
        a = k.read(op["operand"], True)
        if a.taint is not None:  # (a maximumf step: is the running value a NaN)
            if a.pending is not None:
                k.no_reduce(a.taint)
            k.write(op["result"], Val(a.expr, "i32", a.dims, taint=a.taint, pending=("isnan",)))
            return
        _result(k, op, "i32", f"A.cmp_nan_f32({a.expr})", (a,), None, 0)
        return
    if m.startswith("cmp.nz"):
        a = k.read(op["operand"])
        if a.lo is not None and a.lo > 0:
            k.write(op["result"], k.const("i32", 1))
            return
        _result(k, op, "i32", f"A.{fname}({a.expr})", (a,), None, 0)
        return
    if ".f32" in m:
        if fname not in _CMP_F32:
            raise NotVectorizable(f"`{m}`")
        raw = k.read(op["right"], True)
        a, b = k.flushed(k.read(op["left"], True)), k.flushed(raw)
        if a.taint is not None or b.taint is not None:  # (a maximumf step: acc < x, unordered)
            acc = a if a.taint is not None else b
            if fname != "cmp_lt_f32_u" or a.pending is not None or b.taint is not None:
                k.no_reduce(acc.taint)
            k.write(op["result"], Val(a.expr, "i32", b.dims, taint=a.taint, pending=("lt_u", b.expr, raw.expr)))
            return
        _result(k, op, "i32", f"A.{fname}({a.expr}, {b.expr})", (a, b), None, 0)
        return
    a, b = k.read(op["left"]), k.read(op["right"])
    if m.endswith(".u"):
        raise NotVectorizable(f"`{m}`")
    if ".lt." in m and b.const is not None and a.lo is not None and a.lo >= b.const:
        k.write(op["result"], k.const("i32", 0))
        return
    if m.startswith("cmp.ne") and b.const is not None and a.lo is not None and a.lo > b.const:
        k.write(op["result"], k.const("i32", 1))
        return
    _result(k, op, "i32", f"A.{fname}({a.expr}, {b.expr})", (a, b), None, 0)


_CMP_F32 = {
    "cmp_eq_f32_o", "cmp_lt_f32_o", "cmp_lte_f32_o", "cmp_ne_f32_u",
    "cmp_lt_f32_u", "cmp_lte_f32_u", "cmp_eq_f32_u", "cmp_ne_f32_o",
}


def _max_step(k: Kernel, c: Val, a: Val, b: Val) -> Val:
    """arith.maximumf's select chain on an accumulator, one step at a time:
    select(daz(acc) < daz(x) unordered, x, acc), then select(isnan(acc), acc, that) is
    max(acc, x) with the first NaN kept (vmvx_arrays.max_f32 folds it)."""
    taint = next(v.taint for v in (c, a, b) if v.taint is not None)
    acc_b = b.taint == taint and b.pending is None
    if c.pending is not None and c.pending[0] == "lt_u" and c.taint == taint and acc_b \
            and a.taint is None and a.expr in c.pending[1:]:
        return Val(b.expr, "f32", a.dims, taint=taint, pending=("sel_lt", a.expr))
    if c.pending == ("isnan",) and c.taint == taint and a.taint == taint and a.pending is None \
            and b.taint == taint and b.pending is not None and b.pending[0] == "sel_lt":
        return Val(a.expr, "f32", b.dims, taint=taint, pending=("max", b.pending[1]))
    k.no_reduce(taint)


def _h_select(k: Kernel, op) -> None:
    c, a, b = (k.read(op[f], True) for f in ("condition", "true_value", "false_value"))
    if c.taint is not None or a.taint is not None or b.taint is not None:
        k.write(op["result"], _max_step(k, c, a, b))
        return
    if c.const is not None:
        k.write(op["result"], a if c.const else b)
        return
    kind = op.mnemonic.split(".")[1]
    lo = min(a.lo, b.lo) if a.lo is not None and b.lo is not None else None
    fn = "A.select_f32" if kind == "f32" else "A.select"
    v = k.new(kind, f"{fn}({c.expr}, {a.expr}, {b.expr})", c.dims | a.dims | b.dims, lo=lo,
              flushed=a.flushed and b.flushed)
    if not v.dims and kind[0] == "i":
        v.form = {("u", v.expr): 1}
    k.write(op["result"], v)


def _h_ext(k: Kernel, op) -> None:
    m = op.mnemonic
    a = k.read(op["operand"])
    how = _WIDTH_CASTS.get(m)
    if how == "sign" or (how == "zero" and a.lo is not None and a.lo >= 0):
        # (a sign extension, or a zero extension of a value known non-negative: the same)
        k.write(op["result"], Val(a.expr, "i64", a.dims, a.form, a.lo, a.const, level=a.level))
    elif how is not None:
        width = "i32" if how == "trunc" else "i64"
        _result(k, op, width, f"A.{m.replace('.', '_')}({a.expr})", (a,), None, None)
    else:
        raise NotVectorizable(f"`{m}`")


_F32_BIN = {"add", "sub", "mul", "div"}
_F32_LIBM = {"exp", "log", "tanh", "atan", "cos", "sin", "exp2", "expm1", "log10", "log1p", "log2", "erf"}


def _h_f32(k: Kernel, op) -> None:
    m = op.mnemonic
    name = m.split(".")[0]
    fname = m.replace(".", "_")
    if name in _F32_BIN:
        a, b = k.flushed(k.read(op["left"], True)), k.flushed(k.read(op["right"], True))
        operands = (a, b)
    elif name == "fma":
        operands = tuple(k.flushed(k.read(op[f], True)) for f in ("first", "second", "third"))
    elif name in ("neg", "abs"):
        operands = (k.read(op["operand"]),)  # (bit operations: no flushing)
    elif name in _F32_LIBM:
        operands = (k.read(op["operand"]),)  # (libm reads a denormal's bits)
    else:
        raise NotVectorizable(f"`{m}`")
    tainted = [o for o in operands if o.taint is not None]
    if tainted:  # (a step of a sum: acc + x, x + acc, a * b + acc)
        acc = tainted[0]
        if len(tainted) > 1 or acc.pending is not None or name not in ("add", "fma") or (
                name == "fma" and operands[2] is not acc):
            k.no_reduce(acc.taint)
        others = [o for o in operands if o is not acc]
        pending = ("add", others[0].expr, operands[0] is acc) if name == "add" else (
            "fma", others[0].expr, others[1].expr)
        dims = frozenset().union(*(o.dims for o in others)) - {k.loops[-1].atom}
        k.write(op["result"], Val(acc.expr, "f32", dims, taint=acc.taint, pending=pending,
                                  level=len(k.loops)))
        return
    if all(o.const is not None for o in operands):
        from runtime_support.vm import numerics_ftz as S

        k.write(op["result"], k.const("f32", getattr(S, fname)(*(o.const for o in operands))))
        return
    dims = frozenset().union(*(o.dims for o in operands))
    flushed = name not in ("neg", "abs") or operands[0].flushed
    k.write(op["result"], k.new("f32", f"A.{fname}({', '.join(o.expr for o in operands)})", dims, flushed=flushed))


def _h_shift(k: Kernel, op) -> None:
    """Shifts of uniform values (a 64-bit size assembled from two push constants: `(hi <<
    32) | lo`): the scalar op, once per dispatch."""
    a, n = k.read(op["operand"]), k.read(op["amount"])
    if a.dims or n.dims:
        raise NotVectorizable(f"`{op.mnemonic}` of a varying value")
    kind = op.mnemonic.split(".")[1]
    _result(k, op, kind, f"A.S.{op.mnemonic.replace('.', '_')}({a.expr}, {n.expr})", (a, n), None, None)


def _h_cast_si32_f32(k: Kernel, op) -> None:
    a = k.read(op["operand"])  # (an i32 converts exactly to double, once rounded to f32)
    if a.const is not None:
        from runtime_support.vm import numerics_ftz as S

        k.write(op["result"], k.const("f32", S.cast_si32_f32(a.const)))
        return
    k.write(op["result"], k.new("f32", f"A.cast_si32_f32({a.expr})", a.dims, flushed=True))


HANDLERS = {
    "cast.si32.f32": _h_cast_si32_f32,
    "list.get.ref": _h_list_get_ref,
    "const.ref.rodata": _h_rodata,
    "discard.refs": _h_discard,
    "buffer.alloc": _h_alloc,
    "select.i32": _h_select,
    "select.i64": _h_select,
    "select.f32": _h_select,
    "ext.i32.i64.s": _h_ext,
    "ext.i32.i64.u": _h_ext,
    "trunc.i64.i32": _h_ext,
}
for _m in ("shl.i32", "shr.i32.s", "shr.i32.u", "shl.i64", "shr.i64.s", "shr.i64.u"):
    HANDLERS[_m] = _h_shift
for _m in ("add", "sub", "mul", "and", "or", "xor", "fma"):
    for _w in ("i32", "i64"):
        HANDLERS[f"{_m}.{_w}"] = _h_int
for _m in ("div", "rem", "min", "max"):
    for _w in ("i32", "i64"):
        HANDLERS[f"{_m}.{_w}.s"] = _h_int
for _m in ("add", "sub", "mul", "div", "fma", "neg", "abs", *sorted(_F32_LIBM)):
    HANDLERS[f"{_m}.f32"] = _h_f32
PREFIX_HANDLERS = {"const": _h_const, "cmp": _h_cmp}
for _m in ("buffer.load.f32", "buffer.load.i32"):
    HANDLERS[_m] = _h_load
for _m in ("buffer.store.f32", "buffer.store.i32"):
    HANDLERS[_m] = _h_store


def apply(k: Kernel, op) -> None:
    m = op.mnemonic
    handler = HANDLERS.get(m)
    if handler is None:
        prefix = m.split(".")[0]
        handler = PREFIX_HANDLERS.get(prefix)
    if handler is None:
        raise NotVectorizable(f"op `{m}` has no array form")
    handler(k, op)


__all__ = ["HANDLERS", "PREFIX_HANDLERS", "apply"]
