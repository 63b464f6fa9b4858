"""Vectorising VMVX kernels at translate time: an affine kernel as one numpy program over
the whole workgroup grid.

    vectorize(fn) -> Vectorized(source, ...) | NotVectorized(reason)

The kernel's ops are interpreted symbolically once (per plan, see below), each value
tracked with the dimensions it varies over (workgroup id z/y/x, each loop counter), an
affine form over them where one can be proved (coefficients known at translate time,
floor division and remainder of a non-negative dimension by a constant as two new
coordinates), and a lower bound (so that IREE's floor-division fix-ups, `x < 0` of a
workgroup id, fold away). Code is written as it goes: a value that varies is a numpy
array (runtime_support/loaders/vmvx_arrays.py), one axis per grid dimension and per
parallel loop; a loop whose counter addresses every store inside it becomes an axis
(no Python loop; a bound known only at dispatch time, even one varying over the grid as
a clamped tile does, makes an axis as long as the largest trip count with the lanes
past each bound masked); any other loop is sequential, and an accumulator it loads and
stores at one address is kept in a variable across it. An innermost sequential loop
whose accumulators are only float sums (acc + x, x + acc, a * b + acc) or maxima
(arith.maximumf's select chain) is an axis too: everything else in it is computed for all
its iterations at once, and each accumulator is folded along the axis in IREE's order
(vmvx_arrays.sum_f32, max_f32); otherwise it stays a Python `for`.

Why results are bit-identical to the scalar order: every element of a buffer the kernel
writes is accessed through one affine form (all accesses to that buffer share it), the
form is proved injective over the grid and the parallel loops at dispatch time (mixed
radix, with the real grid counts; else the dispatch runs the scalar translation), so
each element belongs to one logical iteration and its accesses keep their program
order; the written bindings must overlap no other binding (checked at dispatch time).
Float math is elementwise with IREE's VMVX numerics, so lane order does not matter.

A kernel is not vectorised (the scalar translation runs it) where any of this cannot be
shown at translate time: control flow other than counted loops, a loop-carried register
other than the counter, a varying loop bound, an access to a written buffer whose
address is not such a form, local memory, calls, or an op without an array form here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from translator.ir import REF_BIT, Function

GRID = ("gz", "gy", "gx")  # axes 0, 1, 2 (IREE's order: z outermost)
_COUNTS = {"gz": "cz", "gy": "cy", "gx": "cx"}
MAX_PASSES = 32


# Tables of the ops the kernel walk recognises by role (stages ask tables, not names).
_LOOP_COMPARES = {"cmp.lt.i64.s": "i64", "cmp.lt.i32.s": "i32"}  # a counted loop's test
_COUNTER_ADDS = {"add.i32": True, "add.i64": True}  # a loop counter's step
_NAN_TESTS = {"cmp.nan.f32": True}  # (is it a NaN: no flushing, one operand)
_WIDTH_CASTS = {"ext.i32.i64.s": "sign", "ext.i32.i64.u": "zero", "trunc.i64.i32": "trunc"}


class NotVectorizable(Exception):
    pass


class _Retry(Exception):
    pass


@dataclass
class Val:
    expr: str
    kind: str  # i32 | i64 | f32 | f64 | ref
    dims: frozenset = frozenset()
    form: dict | None = None  # atom -> coefficient; () -> constant
    lo: int | None = None
    const: int | float | None = None
    flushed: bool = False
    ref: object = None  # for refs: ("binding", k) | "consts" | "local" | "list" | ("rodata", k)
    level: int = 0  # loop depth where defined
    # In a reduction loop (see `_Kernel.loop`): the accumulator (a variable name) this
    # value is, or (pending) the step that updates it: ("add", term, acc first) | ("fma", a, b)
    taint: str | None = None
    pending: tuple | None = None


@dataclass
class _Loop:
    header: int
    atom: tuple
    parallel: bool
    lb: int
    step: int
    trip: int | str | None
    axis: int | None
    reduce: bool = False  # a sequential loop run as an axis, its accumulators folded along it


@dataclass
class _Frame:
    written: set = field(default_factory=set)
    exposed: set = field(default_factory=set)


@dataclass
class Vectorized:
    name: str
    lines: list
    work: int | None = None  # logical iterations a workgroup (None: known at dispatch time)


def _add_forms(a, b, sign=1):
    if a is None or b is None:
        return None
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + sign * v
        if out[k] == 0 and k != ():
            del out[k]
    return out


def _scale(a, c):
    if a is None:
        return None
    return {k: v * c for k, v in a.items() if v * c != 0 or k == ()}


class _Kernel:
    def __init__(self, fn: Function, plan: dict) -> None:
        self.fn = fn
        self.plan = plan  # {"seq": set(header pcs), "promote": {header: {(ref, expr)}}}
        self.blocks = {b.pc: b for b in fn.blocks}
        self.env: dict = {}
        self.lines: list[str] = []
        self.indent = 1
        self.counter = 0
        self.loops: list[_Loop] = []
        self.frames: list[_Frame] = []
        self.accesses: list = []  # (ref, kind, canonical form, loop stack, write)
        self.written: set = set()
        self.daz_cache: dict = {}
        self.promoted: dict = {}  # (ref, canonical form) -> variable name
        self.ndim = 3
        self.varies = False  # (whether any value varies over the grid)
        self.used_grid: set = set()
        self.extents: dict = {}  # atom -> extent expression (runtime) or int
        self.work: int | None = 1  # logical iterations per workgroup (None: not static)
        self.scratch: list = []  # per `buffer.alloc`: {"name", "bytes", "key", "kind", "line"}
        self.scratch_names: set = set()
        # Loops whose bound is only known at dispatch time (see `loop`):
        self.trips: dict = {}  # (lb, ub, step) expressions -> trip count variable
        self.trip_lines: dict = {}  # trip count variable -> its line (top level)
        self.masks: list = []  # per open masked loop: (mask variable, dims it varies over)
        self.open_for: list = []  # line of each open Python `for` (outermost first)
        self.first_store: int | None = None  # top-level line of the first memory write
        self.reduce_vars: dict = {}  # accumulator variable -> its reduction loop
        self.reduced: set = set()  # accumulators already folded in the open reduction loop

    @property
    def mask(self):
        """The active-lane mask of the innermost masked loop around the code (or None)."""
        return self.masks[-1] if self.masks else None

    def mark_store(self) -> None:
        """Before emitting a write to memory: the dispatch-time checks go before the
        top-level statement holding the first one (nothing is written before them)."""
        if self.first_store is None:
            self.first_store = self.open_for[0] if self.open_for else len(self.lines)

    # ---- emission ----------------------------------------------------------------------

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def new(self, kind, rhs, dims=frozenset(), **kw) -> Val:
        self.counter += 1
        name = f"v{self.counter}"
        self.emit(f"{name} = {rhs}")
        if not self.varies and not dims.isdisjoint(GRID):
            self.varies = True
        return Val(name, kind, frozenset(dims), level=len(self.loops), **kw)

    def const(self, kind, value) -> Val:
        if kind[0] == "f":
            text = repr(float(value))
            if text in ("inf", "-inf", "nan"):
                text = f"float({text!r})"
            return Val(text, kind, const=value, flushed=False)
        return Val(repr(int(value)), kind, form={(): int(value)}, lo=int(value), const=int(value))

    # ---- registers ---------------------------------------------------------------------

    def _key(self, reg) -> int:
        return reg.raw if reg.raw & REF_BIT else reg.ordinal

    def read(self, reg, taint_ok: bool = False) -> Val:
        key = self._key(reg)
        for f in self.frames:
            if key not in f.written:
                f.exposed.add(key)
        v = self.env.get(key)
        if not isinstance(v, Val):
            raise NotVectorizable(f"register {key} read without a known value")
        if v.kind in ("i64", "f64") and self.env.get(key + 1) != ("hi", id(v)):
            raise NotVectorizable(f"register {key} read as a wide value it does not hold")
        if v.taint is not None and not taint_ok:
            self.no_reduce(v.taint)
        return v

    def no_reduce(self, var: str):
        """An accumulator used other than as a sum's running value: its loop runs as a
        Python `for` on the next pass."""
        self.plan["noreduce"].add(self.reduce_vars[var].header)
        raise _Retry

    def write(self, reg, v: Val) -> None:
        key = self._key(reg)
        for f in self.frames:
            f.written.add(key)
            if v.kind in ("i64", "f64"):
                f.written.add(key + 1)
        self.env[key] = v
        if v.kind in ("i64", "f64"):
            self.env[key + 1] = ("hi", id(v))

    def remap(self, pairs) -> None:
        moved = [(self._key(s), self._key(d)) for s, d in pairs]
        for _, d in moved:
            for f in self.frames:
                f.written.add(d)
        for s, d in moved:
            for f in self.frames:
                if s not in f.written:
                    f.exposed.add(s)
            self.env[d] = self.env.get(s)

    # ---- control flow ------------------------------------------------------------------

    def run(self) -> None:
        fn = self.fn
        for k, (name, ref) in enumerate((("r0", "local"), ("r1", "consts"), ("r2", "list"))):
            self.env[REF_BIT | k] = Val(name, "ref", ref=ref)
        for k, g in enumerate(("gx", "gy", "gz")):
            self.env[k] = Val(f"_{g}", "i32", frozenset({g}), form={g: 1}, lo=0)
        for k in range(3, 6):
            self.env[k] = self.const("i32", 1)
        for k, c in zip(range(6, 9), ("cx", "cy", "cz")):
            self.env[k] = Val(c, "i32", form={("u", c): 1}, lo=1)
        self.walk(fn.blocks[0].pc, None)

    def walk(self, pc: int, back_to: int | None) -> None:
        steps = 0
        while True:
            steps += 1
            if steps > 10_000:
                raise NotVectorizable("control flow does not end")
            block = self.blocks.get(pc)
            if block is None or not block.ops:
                raise NotVectorizable(f"no block at pc {pc}")
            for op in block.ops[:-1]:
                self.op(op)
            term = block.ops[-1]
            if term.spec.emit == "return":
                if back_to is not None or term["operands"]:
                    raise NotVectorizable("return inside a loop")
                return
            if term.spec.emit != "branch":
                raise NotVectorizable(f"control flow `{term.mnemonic}`")
            self.remap(term["operands"])
            dest = term["dest_pc"]
            if dest == back_to:
                return
            header = self._loop_header(dest)
            if header is None:
                pc = dest
                continue
            pc = self.loop(dest, *header)

    def _loop_header(self, pc: int):
        block = self.blocks.get(pc)
        if block is None or len(block.ops) != 2:
            return None
        cmp, br = block.ops
        if _LOOP_COMPARES.get(cmp.mnemonic) is None or br.spec.emit != "cond_br":
            return None
        if br["condition"].ordinal != cmp["result"].ordinal or br["true_operands"]:
            return None
        return cmp, br

    def loop(self, header: int, cmp, br) -> int:
        iv_reg, ub = cmp["left"], self.read(cmp["right"])
        lb = self.read(iv_reg)
        if lb.dims:
            raise NotVectorizable("a loop's lower bound varies")
        step = self._find_step(br["true_dest_pc"], header, iv_reg)
        kind = _LOOP_COMPARES[cmp.mnemonic]
        trip = None
        if lb.const is not None and ub.const is not None:
            trip = max(0, -(-(ub.const - lb.const) // step))
        parallel = header not in self.plan["seq"]
        # A sequential loop (its stores do not use its counter: a reduction) with nothing
        # nested, not yet refused: an axis too, everything in it computed for all its
        # iterations at once but the accumulators, each folded along the axis in order.
        reduce = (not parallel and header not in self.plan["noreduce"] and not ub.dims
                  and (trip is not None or self.indent == 1))
        if reduce and trip is None:
            trip = self._runtime_trip(lb, ub, step)
        if trip is None:
            # A bound known at dispatch time (a push constant; a tile clamped to the size
            # left, min(n - 64 * gx, 64), varying over the grid): a parallel loop is an
            # axis as long as the largest trip count, lanes past a workgroup's own bound
            # masked off (they load nothing and store nothing); a sequential one must be
            # the same for every lane.
            if parallel and self.indent == 1:
                trip = self._runtime_trip(lb, ub, step)
            elif ub.dims:
                raise NotVectorizable("a sequential loop's bound varies")
            else:
                parallel = False
        if trip is None or type(trip) is str or self.work is None or any(type(lp.trip) is not int for lp in self.loops):
            self.work = None
        else:
            nest = trip
            for lp in self.loops:
                nest *= lp.trip
            self.work = max(self.work, nest)
        atom = ("L", header)
        depth = sum(1 for lp in self.loops if lp.axis is not None)
        if self.loops and self.loops[-1].reduce:  # (a loop in a reduction loop: a Python `for`)
            self.plan["noreduce"].add(self.loops[-1].header)
            raise _Retry
        info = _Loop(header, atom, parallel, lb.const if lb.const is not None else lb.expr, step, trip,
                     3 + depth if parallel or reduce else None, reduce)
        self.counter += 1
        name = f"v{self.counter}"
        masked = False
        if reduce:
            self.ndim = max(self.ndim, 4 + depth)
            self.emit(f"{name} = A.axis_range({lb.expr}, {step}, {trip}, {info.axis}, NDIM)")
        elif parallel:
            self.ndim = max(self.ndim, 4 + depth)
            self.emit(f"{name} = A.axis_range({lb.expr}, {step}, {trip}, {info.axis}, NDIM)")
            if ub.dims:
                masked = True
                outer = self.mask
                self.counter += 1
                mask = f"m{self.counter}"
                both = f" & {outer[0]}" if outer else ""
                self.emit(f"{mask} = ({name} < {ub.expr}){both}")
                self.masks.append((mask, ub.dims | {atom} | (outer[1] if outer else frozenset())))
        else:
            self.emit(f"for {name} in range({lb.expr}, {ub.expr}, {step}):")
        self.loops.append(info)
        frame = _Frame()
        self.frames.append(frame)
        saved_indent = self.indent
        python_for = not parallel and not reduce
        if python_for:
            self.indent += 1
        self._promote_open(info, f"len(range({lb.expr}, {ub.expr}, {step}))",
                           self.indent - 1 if python_for else self.indent)
        if python_for:
            self.open_for.append(len(self.lines) - 1)
        iv = Val(name, kind, frozenset({atom}), form={atom: 1},
                 lo=lb.const if step > 0 else None, level=len(self.loops))
        self.write(iv_reg, iv)
        if python_for:
            self.emit("pass")
        self.walk(br["true_dest_pc"], header)
        after = self.read(iv_reg)
        if after.form is None or _add_forms(after.form, iv.form, -1) != {(): step}:
            raise NotVectorizable("a loop counter is not stepped by a constant")
        self.frames.pop()
        iv_keys = {self._key(iv_reg), self._key(iv_reg) + 1}
        carried = (frame.exposed & frame.written) - iv_keys
        if carried:
            raise NotVectorizable(f"loop at pc {header} carries registers {sorted(carried)}")
        self.indent = saved_indent
        self.loops.pop()
        if masked:
            self.masks.pop()
        if python_for:
            self.open_for.pop()
        self.reduced.clear()
        self._promote_close(info)
        for key in frame.written:
            self.env[key] = None
            for f in self.frames:
                f.written.add(key)
        self.remap(br["false_operands"])
        return br["false_dest_pc"]

    def _runtime_trip(self, lb: Val, ub: Val, step: int) -> str:
        """A variable holding the loop's trip count at dispatch time (the largest over the
        lanes where the bound varies), one per (bounds, step): sibling loops of one shape
        share it, so their accesses compare equal."""
        key = (lb.expr, ub.expr, step)
        name = self.trips.get(key)
        if name is None:
            name = self.trips[key] = f"t{len(self.trips)}"
            self.emit(f"{name} = A.trip_count({lb.expr}, {ub.expr}, {step})")
            self.trip_lines[name] = len(self.lines) - 1
        return name

    def _find_step(self, body_pc, header, iv_reg) -> int:
        """The constant the loop adds to its counter (from the back edge's block)."""
        for b in self.fn.blocks:
            term = b.ops[-1] if b.ops else None
            if term is None or term.spec.emit != "branch" or term["dest_pc"] != header or term["operands"]:
                continue
            for op in reversed(b.ops[:-1]):
                if _COUNTER_ADDS.get(op.mnemonic) and op["result"].ordinal == iv_reg.ordinal:
                    if op["left"].ordinal != iv_reg.ordinal:
                        break
                    step = self.env.get(self._key(op["right"]))
                    if isinstance(step, Val) and isinstance(step.const, int) and step.const > 0:
                        return step.const
                    break
        raise NotVectorizable(f"loop at pc {header} has no constant positive step")

    # ---- promoted accumulators (sequential loops) ----------------------------------------

    def _promote_open(self, loop: _Loop, trips: str, indent: int) -> None:
        """Before a sequential loop: each element it accumulates into, loaded once (where
        the loop runs at all: an empty loop touches no memory)."""
        if loop.parallel:
            return
        for ref, form_key, idx_expr, kind in sorted(self.plan["promote"].get(loop.header, ()), key=str):
            var = f"acc{loop.header}_{ref[1]}"
            mask = self.mask
            load = (f"A.load_m(b{ref[1]}, {kind!r}, {idx_expr}, {mask[0]})" if mask else
                    f"A.load(b{ref[1]}, {kind!r}, {idx_expr})")
            self.lines.insert(len(self.lines) - 1, "    " * indent + f"{var} = {load} if {trips} else None")
            self.promoted[(ref, form_key)] = (var, loop, idx_expr, kind, mask)

    def _promote_close(self, loop: _Loop) -> None:
        """After it: each accumulator stored back once."""
        for key, (var, lp, idx_expr, kind, mask) in list(self.promoted.items()):
            if lp is loop:
                self.mark_store()
                self.emit(f"if {var} is not None:")
                if mask:
                    self.emit(f"    A.store_m(b{key[0][1]}, {kind!r}, {idx_expr}, {var}, {mask[0]})")
                else:
                    self.emit(f"    A.store(b{key[0][1]}, {kind!r}, {idx_expr}, {var})")
                del self.promoted[key]

    # ---- ops -----------------------------------------------------------------------------

    def op(self, op) -> None:
        m = op.mnemonic
        handler = _HANDLERS.get(m)
        if handler is None:
            prefix = m.split(".")[0]
            handler = _PREFIX_HANDLERS.get(prefix)
        if handler is None:
            raise NotVectorizable(f"op `{m}` has no array form")
        handler(self, op)

    def accumulator(self, var: str, kind: str, dims) -> Val | None:
        """In a reduction loop: an accumulator's running value (the fold emits nothing until
        its store), or None outside one."""
        if not (self.loops and self.loops[-1].reduce):
            return None
        loop = self.loops[-1]
        self.reduce_vars[var] = loop
        if var in self.reduced or kind != "f32":
            self.no_reduce(var)  # (read after its fold, or not a float sum)
        return Val(var, kind, frozenset(dims) - {loop.atom}, taint=var, level=len(self.loops))

    def fold(self, var: str, v: Val) -> None:
        """An accumulator stored in its reduction loop: the sum over the whole axis."""
        loop = self.loops[-1]
        self.reduce_vars[var] = loop
        if v.taint != var or var in self.reduced:
            self.no_reduce(var)
        if v.pending is None:
            return  # (stored back unchanged)
        self.reduced.add(var)
        if v.pending[0] == "max":
            self.assign(var, f"A.max_f32({var}, {v.pending[1]}, {loop.axis}, {loop.trip}, NDIM)", "f32")
            return
        if v.pending[0] == "add":
            a, b, first = v.pending[1], None, v.pending[2]
        elif v.pending[0] == "fma":
            a, b, first = v.pending[1], v.pending[2], False
        else:
            self.no_reduce(var)
        self.assign(var, f"A.sum_f32({var}, {a}, {b}, {loop.axis}, {loop.trip}, {first}, NDIM)", "f32")

    def assign(self, var: str, rhs: str, kind: str) -> None:
        """A store to an element kept in a variable (a scratch buffer, a promoted
        accumulator). A scratch buffer's lanes past a masked loop's bound keep what they
        held (a later loop nest of another bound may read them); an accumulator's are
        never stored back (store_m), so it is assigned whole."""
        if self.mask and var in self.scratch_names:
            rhs = f"A.masked({self.mask[0]}, {rhs}, {var}, {kind!r})"
        self.emit(f"{var} = {rhs}")

    def flushed(self, v: Val) -> Val:
        if v.taint is not None:
            # (an accumulator: flushed by each step of its fold, its first value by sum_f32)
            return v
        if v.kind != "f32" or v.flushed:
            return v
        if v.const is not None:
            return v if abs(v.const) >= 2.0**-126 or v.const == 0 else self.const("f32", 0.0 * v.const)
        hit = self.daz_cache.get(v.expr)
        if hit is None:
            hit = self.new("f32", f"A.daz({v.expr})", v.dims, flushed=True)
            self.daz_cache[v.expr] = hit
        return hit

    def canonical(self, form):
        """A form with loop atoms named by what they range over, so accesses in sibling
        loops of the same shape compare equal."""
        out = {}
        for atom, c in form.items():
            if isinstance(atom, tuple) and atom and atom[0] == "L":
                lp = self._loop_info(atom)
                atom = ("axis", lp.axis, lp.lb, lp.step, lp.trip) if lp.parallel else ("seq", lp.lb, lp.step, lp.trip)
            out[atom] = c
        return tuple(sorted(out.items(), key=repr))

    def _loop_info(self, atom) -> _Loop:
        for lp in self.loops:
            if lp.atom == atom:
                return lp
        raise NotVectorizable("a loop counter is used outside its loop")

    def scratch_access(self, n: int, idx: Val, kind: str, write: bool) -> str:
        """An access to a `buffer.alloc`ed scratch buffer (private to each workgroup): where
        every access uses one address form over parallel loop counters alone, injective
        and in bounds, element f(i, j, ...) of workgroup g is only ever touched by logical
        iteration (g, i, j, ...), so the buffer is one array variable over the grid and
        those loops (a store assigns it, a load reads it; sequential loops around an
        access update it in their order). Returns the variable's name."""
        if idx.form is None:
            raise NotVectorizable("a scratch buffer address is not affine")
        if write:
            for lp in self.loops:
                if lp.parallel and lp.atom not in idx.form:
                    self.plan["seq"].add(lp.header)
                    raise _Retry
        key = self.canonical(idx.form)
        s = self.scratch[n]
        if s["key"] is None:
            if kind not in ("f32", "i32"):
                raise NotVectorizable(f"a scratch buffer accessed as {kind}")
            lo = hi = 0
            terms, late = [], []  # (late: the terms of loops whose trip count is known at dispatch time)
            for atom, c in key:
                if atom == ():
                    lo, hi = lo + c, hi + c
                    continue
                if not (isinstance(atom, tuple) and atom[0] == "axis" and atom[-1] is not None):
                    raise NotVectorizable(f"a scratch buffer addressed by {atom!r}")
                if type(atom[-1]) is str:
                    late.append((c, atom[-1]))
                    continue
                span = c * (atom[-1] - 1)
                lo, hi = lo + min(0, span), hi + max(0, span)
                terms.append((abs(c), atom[-1]))
            if not late:
                if lo < 0 or hi >= s["bytes"] // 4:
                    raise NotVectorizable("a scratch buffer access out of bounds (the scalar path reports it)")
                seen = 0
                for c, n_ in sorted(t for t in terms if t[1] > 1):
                    if c <= seen:
                        raise NotVectorizable("a scratch buffer address form is not injective")
                    seen += c * (n_ - 1)
            else:
                # A loop of varying trip count (its lanes past a workgroup's bound masked):
                # bounds and injectivity checked at dispatch time with the largest trip
                # count (a lane reaching it exists; with none, nothing is accessed).
                spans = [f"{c} * (max({t}, 1) - 1)" for c, t in late]
                los = " + ".join([str(lo)] + [f"min(0, {x})" for x in spans])
                his = " + ".join([str(hi)] + [f"max(0, {x})" for x in spans])
                every = [f"({c}, {t})" for c, t in terms] + [f"({abs(c)}, {t})" for c, t in late]
                s["checks"] = [
                    f"if not (0 <= {los} and {his} < {s['bytes'] // 4}):  # (scratch {n}: the scalar path reports it)",
                    "    return False",
                    f"if not A.injective(({', '.join(every)},)):  # (scratch {n})",
                    "    return False",
                ]
            s["key"], s["kind"] = key, kind
        elif (s["key"], s["kind"]) != (key, kind):
            raise NotVectorizable("a scratch buffer accessed through more than one address form")
        return s["name"]

    def access(self, ref, idx: Val, kind: str, write: bool):
        """Records an access to a binding; returns a promoted accumulator name or None."""
        if isinstance(ref, tuple) and ref[0] == "scratch":
            return self.scratch_access(ref[1], idx, kind, write)
        if ref == "local":
            raise NotVectorizable("local memory")
        if not (isinstance(ref, tuple) and ref[0] == "binding"):
            if write:
                raise NotVectorizable("a store outside the bindings")
            return None
        scope = [lp for lp in self.loops]
        if write:
            self.written.add(ref[1])
            if idx.form is None:
                raise NotVectorizable("a store address is not affine")
            for lp in scope:
                if lp.parallel and lp.atom not in idx.form:
                    self.plan["seq"].add(lp.header)
                    raise _Retry
        key = None if idx.form is None else self.canonical(idx.form)
        self.accesses.append((ref[1], kind, key, [lp.atom for lp in scope if lp.parallel], idx.form))
        if key is None:
            return None
        hit = self.promoted.get((ref, key))
        if hit is not None:
            return hit[0]
        # A sequential loop whose counter the address does not use: keep the element in a variable.
        for lp in reversed(scope):
            if lp.parallel:
                continue
            if lp.atom in idx.form or idx.level >= self.loops.index(lp) + 1:
                break
            plan = self.plan["promote"].setdefault(lp.header, set())
            entry = (ref, key, idx.expr, kind)
            if entry not in plan:
                plan.add(entry)
                raise _Retry
        return None

    # ---- finishing -------------------------------------------------------------------------

    def _footprints(self):
        """Per binding the kernel touches, the element intervals of its accesses as
        expressions of the grid counts ("k: [(lo, hi, bytes), ...]" or "k: None" for a
        binding also accessed where no interval is known), or None where a written binding
        has no known interval (then whole bindings must be disjoint)."""
        spans: dict = {}
        for k, kind, key, par, form in self.accesses:
            iv = None if key is None else self._interval(key)
            if iv is None or spans.get(k, []) is None:
                spans[k] = None
                continue
            entry = (*iv, {"f32": 4, "i32": 4, "i64": 8, "f64": 8}.get(kind, 1))
            if entry not in spans.setdefault(k, []):
                spans[k].append(entry)
        if any(spans.get(k) is None for k in self.written):
            return None
        out = []
        for k, v in sorted(spans.items()):
            text = "None" if v is None else "[" + ", ".join(f"({lo}, {hi}, {n})" for lo, hi, n in v) + "]"
            out.append(f"{k}: {text}")
        return out

    def _interval(self, key):
        """(lo, hi) element offsets an affine canonical form reaches, as expressions of
        the grid counts, or None (a runtime-uniform term, a varying trip count)."""
        lo, hi = ["0"], ["0"]
        for atom, c in key:
            if atom == ():
                lo.append(str(c))
                hi.append(str(c))
                continue
            if isinstance(atom, tuple) and atom[0] == "u":  # (an offset from push constants)
                lo.append(f"{c} * {atom[1]}")
                hi.append(f"{c} * {atom[1]}")
                continue
            if atom in GRID:
                extent = _COUNTS[atom]
            elif isinstance(atom, tuple) and atom[0] in ("div", "rem"):
                base, d = atom[1], atom[2]
                extent = f"-(-{_COUNTS[base]} // {d})" if atom[0] == "div" else f"min({_COUNTS[base]}, {d})"
            elif isinstance(atom, tuple) and atom[0] in ("axis", "seq") and atom[-1] is not None:
                extent = str(atom[-1])
            else:
                return None
            span = f"{c} * ({extent} - 1)"
            lo.append(f"min(0, {span})")
            hi.append(f"max(0, {span})")
        return " + ".join(lo), " + ".join(hi)

    def guards(self) -> list[str]:
        """Dispatch-time checks: written bindings disjoint from the others, and each
        written binding's single address form injective over the real grid."""
        out = [line for s in self.scratch for line in s.get("checks", ())]
        forms: dict = {}
        for k, kind, key, par, form in self.accesses:
            if k not in self.written:
                continue
            if key is None:
                raise NotVectorizable(f"binding {k} is written and accessed at a non-affine address")
            prev = forms.setdefault(k, (kind, key))
            if prev != (kind, key):
                raise NotVectorizable(f"binding {k} is accessed through more than one address form")
        if self.written:
            parts = self._footprints()
            if parts is None:
                out.append(f"if not A.disjoint(ranges, {tuple(sorted(self.written))!r}):")
            else:
                out.append(f"if not A.disjoint_parts(ranges, {{{', '.join(parts)}}}, "
                           f"{tuple(sorted(self.written))!r}):")
            out.append("    return False")
        for k, (kind, key) in sorted(forms.items()):
            terms, covered = [], set()
            bases: dict = {}
            for atom, coef in key:
                if atom == () or (isinstance(atom, tuple) and atom[0] == "u"):
                    continue
                if atom in GRID:
                    extent = _COUNTS[atom]
                    bases.setdefault(atom, set()).add(("whole",))
                elif atom[0] in ("div", "rem"):
                    base, c = atom[1], atom[2]
                    bases.setdefault(base, set()).add((atom[0], c))
                    extent = f"-(-{_COUNTS[base]} // {c})" if atom[0] == "div" else f"min({_COUNTS[base]}, {c})"
                elif atom[0] in ("axis", "seq"):
                    if atom[-1] is None:
                        raise NotVectorizable(f"binding {k}: addressed by a loop of varying trip count")
                    extent = str(atom[-1])
                else:
                    raise NotVectorizable(f"binding {k}: address atom {atom!r}")
                terms.append(f"({coef}, {extent})")
            for g, parts in bases.items():
                if parts == {("whole",)}:
                    covered.add(g)
                elif len(parts) == 2 and {p[0] for p in parts} == {"div", "rem"} and len({p[1] for p in parts}) == 1:
                    covered.add(g)
                else:
                    raise NotVectorizable(f"binding {k}: workgroup id {g} used in overlapping ways")
            for g in GRID:
                if g not in covered:
                    out.append(f"if {_COUNTS[g]} != 1:  # (binding {k}'s address ignores {g})")
                    out.append("    return False")
            out.append(f"if not A.injective(({', '.join(terms)}{',' if len(terms) == 1 else ''})):")
            out.append("    return False")
        return out


# ---- op handlers ------------------------------------------------------------------------


def _h_const(k: _Kernel, op) -> None:
    m = op.mnemonic
    kind = m.split(".")[1]
    value = 0 if m.endswith(".zero") else op["value"].value
    k.write(op["result"], k.const(kind, value))


def _h_discard(k, op) -> None:
    pass


def _h_list_get_ref(k: _Kernel, op) -> None:
    lst, idx = k.read(op["list"]), k.read(op["index"])
    if lst.ref != "list" or idx.const is None:
        raise NotVectorizable("a binding taken from the list by a varying index")
    if not 0 <= idx.const < 1 << 31:
        raise NotVectorizable(f"a binding taken from the list at index {idx.const}")
    k.write(op["result"], Val(f"b{idx.const}", "ref", ref=("binding", idx.const)))
    k.bindings_used.add(idx.const)


def _h_rodata(k: _Kernel, op) -> None:
    n = op["rodata"]
    k.write(op["value"], Val(f"ro{n}", "ref", ref=("rodata", n)))
    k.rodata_used.add(n)


def _h_alloc(k: _Kernel, op) -> None:
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


def _h_load(k: _Kernel, op) -> None:
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


def _h_store(k: _Kernel, op) -> None:
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
        raise _Retry
    if acc is not None:
        k.assign(acc, val.expr, kind)
        return
    k.mark_store()
    if k.mask:
        k.emit(f"A.store_m({buf.expr}, {kind!r}, {idx.expr}, {val.expr}, {k.mask[0]})")
    else:
        k.emit(f"A.store({buf.expr}, {kind!r}, {idx.expr}, {val.expr})")


_INT_BIN = {"add", "sub", "mul", "and", "or", "xor", "min", "max", "div", "rem"}


def _h_int(k: _Kernel, op) -> None:
    m = op.mnemonic
    parts = m.split(".")
    name, kind = parts[0], parts[1]
    fname = m.replace(".", "_")
    if name == "fma":
        a, b, c = (k.read(op[f]) for f in ("first", "second", "third"))
        form = None
        if a.form is not None and b.form is not None and c.form is not None:
            if a.const is not None:
                form = _add_forms(_scale(b.form, a.const), c.form)
            elif b.const is not None:
                form = _add_forms(_scale(a.form, b.const), c.form)
        lo = None
        if None not in (a.lo, b.lo, c.lo) and a.lo >= 0 and b.lo >= 0:
            lo = a.lo * b.lo + c.lo
        _result(k, op, kind, f"A.{fname}({a.expr}, {b.expr}, {c.expr})", (a, b, c), form, lo)
        return
    a, b = k.read(op["left"]), k.read(op["right"])
    form, lo = None, None
    if name in ("add", "sub"):
        form = _add_forms(a.form, b.form, 1 if name == "add" else -1)
        if name == "add" and a.lo is not None and b.lo is not None:
            lo = a.lo + b.lo
    elif name == "mul":
        if a.const is not None and b.form is not None:
            form = _scale(b.form, a.const)
        elif b.const is not None and a.form is not None:
            form = _scale(a.form, b.const)
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


def _result(k: _Kernel, op, kind, rhs, operands, form, lo) -> None:
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


def _h_cmp(k: _Kernel, op) -> None:
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


def _max_step(k: _Kernel, c: Val, a: Val, b: Val) -> Val:
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


def _h_select(k: _Kernel, op) -> None:
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


def _h_ext(k: _Kernel, op) -> None:
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


def _h_f32(k: _Kernel, op) -> None:
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


def _h_shift(k: _Kernel, op) -> None:
    """Shifts of uniform values (a 64-bit size assembled from two push constants: `(hi <<
    32) | lo`): the scalar op, once per dispatch."""
    a, n = k.read(op["operand"]), k.read(op["amount"])
    if a.dims or n.dims:
        raise NotVectorizable(f"`{op.mnemonic}` of a varying value")
    kind = op.mnemonic.split(".")[1]
    _result(k, op, kind, f"A.S.{op.mnemonic.replace('.', '_')}({a.expr}, {n.expr})", (a, n), None, None)


def _h_cast_si32_f32(k: _Kernel, op) -> None:
    a = k.read(op["operand"])  # (an i32 converts exactly to double, once rounded to f32)
    if a.const is not None:
        from runtime_support.vm import numerics_ftz as S

        k.write(op["result"], k.const("f32", S.cast_si32_f32(a.const)))
        return
    k.write(op["result"], k.new("f32", f"A.cast_si32_f32({a.expr})", a.dims, flushed=True))


_HANDLERS = {
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
    _HANDLERS[_m] = _h_shift
for _m in ("add", "sub", "mul", "and", "or", "xor", "fma"):
    for _w in ("i32", "i64"):
        _HANDLERS[f"{_m}.{_w}"] = _h_int
for _m in ("div", "rem", "min", "max"):
    for _w in ("i32", "i64"):
        _HANDLERS[f"{_m}.{_w}.s"] = _h_int
for _m in ("add", "sub", "mul", "div", "fma", "neg", "abs", *sorted(_F32_LIBM)):
    _HANDLERS[f"{_m}.f32"] = _h_f32
_PREFIX_HANDLERS = {"const": _h_const, "cmp": _h_cmp}
for _m in ("buffer.load.f32", "buffer.load.i32"):
    _HANDLERS[_m] = _h_load
for _m in ("buffer.store.f32", "buffer.store.i32"):
    _HANDLERS[_m] = _h_store


def vectorize(fn: Function, name: str):
    """(Vectorized or None, reason): the kernel as a numpy program over its grid."""
    plan = {"seq": set(), "promote": {}, "noreduce": set()}
    for _ in range(MAX_PASSES):
        k = _Kernel(fn, plan)
        k.bindings_used, k.rodata_used = set(), set()
        try:
            k.run()
            guards = k.guards()
            for s in k.scratch:
                if s["kind"] == "f32":
                    k.lines[s["line"]] = k.lines[s["line"]].replace(" = 0  #", " = 0.0  #")
            if k.ndim == 3 and not k.varies:
                # (no array anywhere: the numpy program would run the scalar ops through
                # its array wrappers, slower than the scalar translation itself)
                return None, "nothing varies over the grid or a parallel loop"
            lines = _assemble(k, guards)
        except _Retry:
            continue
        except NotVectorizable as e:
            return None, str(e)
        except RecursionError:
            return None, "nested too deeply"
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            # (an op shape this interpreter does not know: the scalar translation runs it)
            return None, f"unexpected op form ({type(e).__name__}: {e})"
        return Vectorized(name, lines, k.work), None
    return None, "no plan found"


_DEF = re.compile(r"[vt]\d+ = ")
_IMPURE = ("load", "store", "_constant_i32")
_DIVISION = re.compile(r"A\.(?:div|rem)_i(?:32|64)_s\((.*)\)$")


def _safe_divisions(rhs: str) -> bool:
    """Whether a definition divides only by a literal that cannot fault (not 0 or -1)."""
    if "div" not in rhs and "rem" not in rhs:
        return True
    m = _DIVISION.match(rhs)
    if m is None:
        return False
    divisor = m.group(1).rsplit(", ", 1)[-1]
    return divisor.lstrip("-").isdigit() and int(divisor) not in (0, -1)  # (a top-level definition in the generated body)
_NAME = re.compile(r"\b[vt]\d+\b")


def _assemble(k: _Kernel, guards: list[str]) -> list[str]:
    out = ["cx, cy, cz = counts"]
    if k.work is not None:
        out.append(f"if cx * cy * cz * {k.work} <= A.SMALL_WORK:  # (small: the scalar translation is cheaper)")
        out.append("    return False")
    if k.ndim == 3:
        # (no loop axis: with one workgroup every value is a scalar, which the scalar
        # translation computes without the array wrappers)
        out.append("if cx * cy * cz == 1:  # (one workgroup, no loop axis: nothing varies)")
        out.append("    return False")
    out.append(f"NDIM = {k.ndim}")
    for axis, g in enumerate(GRID):
        out.append(f"_{g} = A.axis_range(0, 1, {_COUNTS[g]}, {axis}, NDIM)")
    if k.bindings_used:  # (fewer bindings than the kernel takes: the scalar path's VMError)
        out.append(f"if len(bindings) <= {max(k.bindings_used)}:")
        out.append("    return False")
    for b in sorted(k.bindings_used):
        out.append(f"b{b} = bindings[{b}]")
    for n in sorted(k.rodata_used):
        out.append(f"ro{n} = A.Binding(_rodata[{n}].data)")
    body = [line[4:] for line in k.lines]
    # The checks run before the first write (after the pure code before it, which may
    # compute trip counts they read).
    at = len(body) if k.first_store is None else k.first_store
    body, at = _hoist(body, at, {n for g in guards for n in _NAME.findall(g)})
    return _dead_code_removed(out + body[:at] + guards + body[at:]) + ["return True"]


_DEF_LINE = re.compile(r"^(\s*)([vmt]\d+) = (.*)$")
_USE = re.compile(r"\b[vmt]\d+\b")
# (what a definition may do and still be dropped unread: no memory access, nothing
# that can fault - an integer division - and no fold)
_EFFECTS = ("load", "store", "_constant", "div_", "rem_", "sum_f32", "max_f32", "masked")


def _dead_code_removed(lines: list[str]) -> list[str]:
    """Pure definitions nothing reads dropped (a loop counter's last step, an address
    computed for an access folded away): each was a numpy call per dispatch."""
    while True:
        uses: dict = {}
        for line in lines:
            m = _DEF_LINE.match(line)
            text = m.group(3) if m else line
            for name in _USE.findall(text):
                uses[name] = uses.get(name, 0) + 1
        keep, dropped = [], False
        for j, line in enumerate(lines):
            m = _DEF_LINE.match(line)
            if (m and m.group(2) not in uses and not any(w in m.group(3) for w in _EFFECTS)
                    and not (j and lines[j - 1].rstrip().endswith(":"))):
                dropped = True
                continue
            keep.append(line)
        if not dropped:
            return keep
        lines = keep


def _hoist(body: list, at: int, needed: set) -> tuple[list, int]:
    """(body, at) with the definitions the checks read moved before line `at`: a
    top-level definition after it moves up with what it reads, where it is pure (no
    memory access; no division, which may fault) - a uniform offset computed from push
    constants between two loop nests."""
    defs = {}
    for j, line in enumerate(body):
        if _DEF.match(line):
            defs.setdefault(line.split(" = ", 1)[0], j)
    move: set = set()

    def want(name):
        j = defs.get(name)
        if j is None:
            raise NotVectorizable(f"a dispatch-time check reads {name}, not defined at top level")
        if j < at or j in move:
            return
        rhs = body[j].split(" = ", 1)[1]
        if any(w in rhs for w in _IMPURE) or not _safe_divisions(rhs):
            raise NotVectorizable(f"a dispatch-time check reads {name}, computed after the first store")
        move.add(j)
        for dep in _NAME.findall(rhs):
            want(dep)

    for name in sorted(needed):
        want(name)
    if not move:
        return body, at
    hoisted = [body[j] for j in sorted(move)]
    rest = [line for j, line in enumerate(body) if j >= at and j not in move]
    return body[:at] + hoisted + rest, at + len(hoisted)


__all__ = ["NotVectorizable", "Vectorized", "vectorize"]
