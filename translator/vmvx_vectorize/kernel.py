"""The kernel walk: a VMVX kernel's ops interpreted symbolically once per plan, its
control flow followed (counted loops only) and the numpy program written as it goes.

    Kernel(fn, plan, apply_op).run()   lines, accesses, scratch buffers, loops' axes

The walk owns the registers (each holds a `Val`), the loops (a parallel loop or a
reduction loop is an axis, masked where its bound varies; any other loop is a Python
`for`, its accumulators kept in variables across it), the accesses to bindings and
scratch buffers (recorded for the dispatch-time checks, guards.py) and the emitted
lines. Each op other than control flow goes to `apply_op` (ops.py `apply`), which reads
and writes registers and emits through the methods below. `plan` is what earlier passes
learned ({"seq": loops that must be sequential, "promote": elements kept in variables,
"noreduce": loops that stay Python `for`s}); a `Retry` adds to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from translator.ir import REF_BIT, Function
from translator.vmvx_vectorize.values import GRID, NotVectorizable, Retry, Val, add_forms

# The ops the walk recognises by role (stages ask tables, not names).
_LOOP_COMPARES = {"cmp.lt.i64.s": "i64", "cmp.lt.i32.s": "i32"}  # a counted loop's test
_COUNTER_ADDS = {"add.i32": True, "add.i64": True}  # a loop counter's step


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


class Kernel:
    def __init__(self, fn: Function, plan: dict, apply_op) -> None:
        self.fn = fn
        self.apply_op = apply_op  # (kernel, op): the op's array form (ops.py `apply`)
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
        raise Retry

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
                self.apply_op(self, op)
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
            raise Retry
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
        if after.form is None or add_forms(after.form, iv.form, -1) != {(): step}:
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

    # ---- what the op handlers (ops.py) call ------------------------------------------------

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
                    raise Retry
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
                    raise Retry
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
                raise Retry
        return None


__all__ = ["Kernel"]
