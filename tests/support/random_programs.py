"""Random structured MLIR programs for the code generator's differential test.

    python -m tests.support.random_programs SEED COUNT   # prints one module of COUNT functions
    python -m tests.support.random_programs --queue SEED COUNT   # of random HAL queue programs (below)

Each function `@p<k>(%a: i32, %b: i32, %n: i32) -> i32` is built from nested `scf.if`
(with results), bounded `scf.while` loops, `cf` branches that merge at a block argument,
calls to a private helper, and early failures (`cf.assert` on a value that some inputs
hit). Only wrap-around i32 arithmetic is used, so every input is defined behaviour.
"""

from __future__ import annotations

import random
import sys

_BINOPS = ("arith.addi", "arith.subi", "arith.muli", "arith.xori", "arith.andi", "arith.ori")
_PREDICATES = ("slt", "sgt", "eq", "ne", "ult", "sge")


class _Fn:
    def __init__(self, rng: random.Random, name: str) -> None:
        self.rng = rng
        self.name = name
        self.lines: list[str] = []
        self.counter = 0

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def const(self, indent: str, value: int) -> str:
        v = self.fresh("c")
        self.lines.append(f"{indent}{v} = arith.constant {value} : i32")
        return v

    def value(self, indent: str, env: list[str], depth: int) -> str:
        """Emits statements computing one new i32 value from `env`; returns its name."""
        rng = self.rng
        choice = rng.random()
        if depth <= 0 or choice < 0.45:
            return self.binop(indent, env)
        if choice < 0.65:
            return self.if_(indent, env, depth)
        if choice < 0.8:
            return self.while_(indent, env, depth)
        if choice < 0.9:
            self.assert_(indent, env)
            return self.binop(indent, env)
        v = self.fresh()
        self.lines.append(f"{indent}{v} = func.call @helper({rng.choice(env)}, {rng.choice(env)}) : (i32, i32) -> i32")
        return v

    def binop(self, indent: str, env: list[str]) -> str:
        rng = self.rng
        lhs = rng.choice(env)
        rhs = rng.choice(env) if rng.random() < 0.7 else self.const(indent, rng.randint(-9, 9))
        v = self.fresh()
        self.lines.append(f"{indent}{v} = {rng.choice(_BINOPS)} {lhs}, {rhs} : i32")
        return v

    def cond(self, indent: str, env: list[str]) -> str:
        rng = self.rng
        c = self.fresh("p")
        rhs = self.const(indent, rng.randint(-4, 4))
        self.lines.append(f"{indent}{c} = arith.cmpi {rng.choice(_PREDICATES)}, {rng.choice(env)}, {rhs} : i32")
        return c

    def block(self, indent: str, env: list[str], depth: int) -> str:
        env = list(env)
        for _ in range(self.rng.randint(1, 3)):
            env.append(self.value(indent, env, depth))
        return env[-1]

    def if_(self, indent: str, env: list[str], depth: int) -> str:
        c = self.cond(indent, env)
        v = self.fresh()
        self.lines.append(f"{indent}{v} = scf.if {c} -> i32 {{")
        t = self.block(indent + "  ", env, depth - 1)
        self.lines.append(f"{indent}  scf.yield {t} : i32")
        self.lines.append(f"{indent}}} else {{")
        e = self.block(indent + "  ", env, depth - 1)
        self.lines.append(f"{indent}  scf.yield {e} : i32")
        self.lines.append(f"{indent}}}")
        return v

    def while_(self, indent: str, env: list[str], depth: int) -> str:
        """while (i < (n & 3) + k) { acc = f(acc, i) }  -- at most a few iterations."""
        rng = self.rng
        three = self.const(indent, 3)
        bound0 = self.fresh()
        self.lines.append(f"{indent}{bound0} = arith.andi %n, {three} : i32")
        k = self.const(indent, rng.randint(0, 2))
        bound = self.fresh()
        self.lines.append(f"{indent}{bound} = arith.addi {bound0}, {k} : i32")
        zero = self.const(indent, 0)
        i, acc, j, a, q = self.fresh("i"), self.fresh("acc"), self.fresh("j"), self.fresh("a"), self.fresh("q")
        res = self.fresh("w")
        init = rng.choice(env)
        self.lines += [
            f"{indent}{res}:2 = scf.while ({i} = {zero}, {acc} = {init}) : (i32, i32) -> (i32, i32) {{",
            f"{indent}  {q} = arith.cmpi slt, {i}, {bound} : i32",
            f"{indent}  scf.condition({q}) {i}, {acc} : i32, i32",
            f"{indent}}} do {{",
            f"{indent}^bb0({j}: i32, {a}: i32):",
        ]
        one = self.const(indent + "  ", 1)
        nj = self.fresh()
        self.lines.append(f"{indent}  {nj} = arith.addi {j}, {one} : i32")
        body = self.block(indent + "  ", env + [j, a], depth - 1)
        self.lines.append(f"{indent}  scf.yield {nj}, {body} : i32, i32")
        self.lines.append(f"{indent}}}")
        return f"{res}#1"

    def assert_(self, indent: str, env: list[str]) -> None:
        rng = self.rng
        mask = self.const(indent, 7)
        m = self.fresh()
        self.lines.append(f"{indent}{m} = arith.andi {rng.choice(env)}, {mask} : i32")
        bad = self.const(indent, rng.randint(0, 7))
        ok = self.fresh("ok")
        self.lines.append(f"{indent}{ok} = arith.cmpi ne, {m}, {bad} : i32")
        self.lines.append(f'{indent}cf.assert {ok}, "{self.name}: early failure {self.counter}"')

    def build(self, depth: int) -> str:
        env = ["%a", "%b", "%n"]
        head = self.block("    ", env, depth)
        if self.rng.random() < 0.5:
            # A cf diamond at the top level, merging at a block argument.
            c = self.cond("    ", env + [head])
            self.lines.append(f"    cf.cond_br {c}, ^left, ^right")
            self.lines.append("  ^left:")
            left = self.block("    ", env + [head], depth - 1)
            self.lines.append(f"    cf.br ^join({left} : i32)")
            self.lines.append("  ^right:")
            right = self.block("    ", env + [head], depth - 1)
            self.lines.append(f"    cf.br ^join({right} : i32)")
            self.lines.append("  ^join(%r: i32):")
            head = "%r"
        body = "\n".join(self.lines)
        return (
            f"  func.func @{self.name}(%a: i32, %b: i32, %n: i32) -> i32 {{\n{body}\n"
            f"    return {head} : i32\n  }}\n"
        )


HELPER = """  func.func private @helper(%x: i32, %y: i32) -> i32 {
    %c5 = arith.constant 5 : i32
    %m = arith.muli %x, %c5 : i32
    %s = arith.xori %m, %y : i32
    return %s : i32
  }
"""


def module(seed: int, count: int, depth: int = 3) -> tuple[str, list[str]]:
    """MLIR text of one module with `count` random functions, and their names."""
    rng = random.Random(seed)
    names = [f"p{seed}_{k}" for k in range(count)]
    funcs = [_Fn(rng, name).build(depth) for name in names]
    return "module {\n" + HELPER + "".join(funcs) + "}\n", names


def inputs(seed: int) -> list[tuple[int, int, int]]:
    rng = random.Random(seed * 7919 + 1)
    return [(rng.randint(-20, 20), rng.randint(-20, 20), rng.randint(0, 7)) for _ in range(3)]




# ---------------------------------------------------------------------------------------------
# Random HAL queue programs (issue #25's property suite):
#
#     python -m tests.support.random_programs --queue SEED COUNT
#
# Each function `@q<k>(%x: tensor<?xf32>, %y: tensor<?xf32>, %w: tensor<4xf32>)
# -> (tensor<?xf32>, tensor<f32>)` is built on the device: elementwise dispatches over the
# dynamic length (so workgroup counts and constants change per call), optimization barriers
# between them (several dispatches and barriers per command buffer), host scalars read back
# from reductions (tensor.extract) and used as dispatch constants, in `scf.if` conditions,
# `scf.while` conditions and trip counts, and `scf.for` loops of dispatches; a dynamic slice
# of a data-dependent length; a guarded `tensor.insert` (a queue fill); calls, at the top
# level, of a private function that is not inlined (buffers and fences cross the call); and
# failures: `cf.assert` on a read-back value or on the length, `%x`/`%y` of different
# lengths (an assert), `%w` of the wrong static shape (the module's argument check). Values
# stay finite: products are clamped, max-reductions start at 0. The shapes of the dynamic
# values are stated (flow.tensor.tie_shape) where a barrier, loop or call hides them.
# ---------------------------------------------------------------------------------------------

_T = "tensor<?xf32>"
_EW = "[affine_map<(d) -> (d)>, affine_map<(d) -> (d)>, affine_map<(d) -> (d)>]"
_EW1 = "[affine_map<(d) -> (d)>, affine_map<(d) -> (d)>]"
_RED = "[affine_map<(d) -> (d)>, affine_map<(d) -> ()>]"
_FBINOPS = ("arith.addf", "arith.subf", "arith.maximumf", "arith.minimumf", "mulclamp")

_QUEUE_HELPER = f"""  func.func private @NAME(%t: {_T}, %s: f32) -> {_T} attributes {{noinline}} {{
    %c0 = arith.constant 0 : index
    %n = tensor.dim %t, %c0 : {_T}
    %e = tensor.empty(%n) : {_T}
    %a = linalg.generic {{indexing_maps = {_EW1}, iterator_types = ["parallel"]}}
        ins(%t : {_T}) outs(%e : {_T}) {{
    ^bb0(%v: f32, %o: f32):
      %r = arith.addf %v, %s : f32
      linalg.yield %r : f32
    }} -> {_T}
    %b0 = util.optimization_barrier %a : {_T}
    %b = flow.tensor.tie_shape %b0 : {_T}{{%n}}
    %c = linalg.generic {{indexing_maps = {_EW1}, iterator_types = ["parallel"]}}
        ins(%b : {_T}) outs(%e : {_T}) {{
    ^bb0(%v: f32, %o: f32):
      %h = arith.constant 0.5 : f32
      %r = arith.mulf %v, %h : f32
      linalg.yield %r : f32
    }} -> {_T}
    return %c : {_T}
  }}
"""


class _QueueFn:
    """One random function of tensor dispatches and host readbacks (see above)."""

    def __init__(self, rng: random.Random, name: str) -> None:
        self.rng = rng
        self.name = name
        self.lines: list[str] = []
        self.helpers: list[str] = []  # the private functions it calls
        self.counter = 0

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def emit(self, ind: str, text: str) -> None:
        self.lines.extend(ind + line for line in text.split("\n"))

    def tie(self, ind: str, v: str, length: str = "%n") -> str:
        """`v` with its length stated (an optimization barrier, a loop's value or a call's
        result hides it from IREE's shape analysis)."""
        t = self.fresh("tie")
        self.emit(ind, f"{t} = flow.tensor.tie_shape {v} : {_T}{{{length}}}")
        return t

    def fconst(self, ind: str, value: float) -> str:
        v = self.fresh("f")
        self.emit(ind, f"{v} = arith.constant {value!r} : f32")
        return v

    # -- device values (tensor<?xf32> of length %n) ------------------------------------------

    def ew(self, ind: str, a: str, b: str) -> str:
        op = self.rng.choice(_FBINOPS)
        e, v = self.fresh("e"), self.fresh("t")
        if op == "mulclamp":
            body = ("%m = arith.mulf %p, %q : f32\n  %hi = arith.constant 8.0 : f32\n"
                    "  %lo = arith.constant -8.0 : f32\n  %m1 = arith.minimumf %m, %hi : f32\n"
                    "  %r = arith.maximumf %m1, %lo : f32")
        else:
            body = f"%r = {op} %p, %q : f32"
        self.emit(ind, f"{e} = tensor.empty(%n) : {_T}\n"
                       f"{v} = linalg.generic {{indexing_maps = {_EW}, iterator_types = [\"parallel\"]}}\n"
                       f"    ins({a}, {b} : {_T}, {_T}) outs({e} : {_T}) {{\n"
                       f"^bb0(%p: f32, %q: f32, %o: f32):\n  {body}\n  linalg.yield %r : f32\n"
                       f"}} -> {_T}")
        return v

    def ew_scalar(self, ind: str, a: str, s: str) -> str:
        """a * s or a + s with a host scalar: a dispatch constant computed on the host."""
        e, v = self.fresh("e"), self.fresh("t")
        if self.rng.random() < 0.5:
            body = f"%r = arith.addf %p, {s} : f32"
        else:
            body = (f"%m = arith.mulf %p, {s} : f32\n  %hi = arith.constant 8.0 : f32\n"
                    "  %lo = arith.constant -8.0 : f32\n  %m1 = arith.minimumf %m, %hi : f32\n"
                    "  %r = arith.maximumf %m1, %lo : f32")
        self.emit(ind, f"{e} = tensor.empty(%n) : {_T}\n"
                       f"{v} = linalg.generic {{indexing_maps = {_EW1}, iterator_types = [\"parallel\"]}}\n"
                       f"    ins({a} : {_T}) outs({e} : {_T}) {{\n"
                       f"^bb0(%p: f32, %o: f32):\n  {body}\n  linalg.yield %r : f32\n"
                       f"}} -> {_T}")
        return v

    def readback(self, ind: str, a: str, kind: str | None = None) -> str:
        """sum(a) or max(0, a...) reduced on the device and read back: an f32 on the host."""
        kind = kind or self.rng.choice(("sum", "max"))
        z, e, f, r, s = self.fresh("z"), self.fresh("e"), self.fresh("fl"), self.fresh("r"), self.fresh("s")
        op = "arith.addf" if kind == "sum" else "arith.maximumf"
        self.emit(ind, f"{z} = arith.constant 0.0 : f32\n{e} = tensor.empty() : tensor<f32>\n"
                       f"{f} = linalg.fill ins({z} : f32) outs({e} : tensor<f32>) -> tensor<f32>\n"
                       f"{r} = linalg.generic {{indexing_maps = {_RED}, iterator_types = [\"reduction\"]}}\n"
                       f"    ins({a} : {_T}) outs({f} : tensor<f32>) {{\n"
                       f"^bb0(%p: f32, %acc: f32):\n  %r = {op} %p, %acc : f32\n  linalg.yield %r : f32\n"
                       f"}} -> tensor<f32>\n{s} = tensor.extract {r}[] : tensor<f32>")
        return s

    def small_index(self, ind: str, s: str, mask: int) -> str:
        """An index in [0, mask] from a host f32 (clamped, so fptosi is defined)."""
        hi, lo = self.fconst(ind, 64.0), self.fconst(ind, -64.0)
        a, b, i, m, k, x = (self.fresh() for _ in range(6))
        self.emit(ind, f"{a} = arith.minimumf {s}, {hi} : f32\n{b} = arith.maximumf {a}, {lo} : f32\n"
                       f"{i} = arith.fptosi {b} : f32 to i32\n{m} = arith.constant {mask} : i32\n"
                       f"{k} = arith.andi {i}, {m} : i32\n{x} = arith.index_cast {k} : i32 to index")
        return x

    def value(self, ind: str, env: list[str], scalars: list[str], depth: int) -> str:
        rng = self.rng
        choice = rng.random()
        if depth <= 0 or choice < 0.3:
            return self.ew(ind, rng.choice(env), rng.choice(env))
        if choice < 0.4:
            return self.ew_scalar(ind, rng.choice(env), rng.choice(scalars))
        if choice < 0.5:
            v = self.fresh("b")
            a = self.ew(ind, rng.choice(env), rng.choice(env))
            self.emit(ind, f"{v} = util.optimization_barrier {a} : {_T}")
            return self.tie(ind, v)
        if choice < 0.58:
            scalars.append(self.scalar(ind, env, scalars))
            return self.ew_scalar(ind, rng.choice(env), scalars[-1])
        if choice < 0.68:
            return self.if_(ind, env, scalars, depth)
        if choice < 0.76:
            return self.while_(ind, env, scalars, depth)
        if choice < 0.83:
            return self.for_(ind, env, scalars, depth)
        if choice < 0.88:
            self.assert_(ind, env)
            return self.ew(ind, rng.choice(env), rng.choice(env))
        if choice < 0.94 or ind != "    ":  # (iree-compile 3.13 fails on a call in a region)
            return self.insert(ind, rng.choice(env), rng.choice(scalars))
        return self.call(ind, env, scalars)

    def call(self, ind: str, env: list[str], scalars: list[str]) -> str:
        """A call of a private function that is not inlined: one per call site (iree-compile
        3.13 fails where one callee gets buffers of different lifetimes from two sites)."""
        v = self.fresh("h")
        callee = f"{self.name}_helper{self.counter}"
        self.helpers.append(_QUEUE_HELPER.replace("NAME", callee))
        self.emit(ind, f"{v} = func.call @{callee}({self.rng.choice(env)}, {self.rng.choice(scalars)})"
                       f" : ({_T}, f32) -> {_T}")
        return self.tie(ind, v)

    def scalar(self, ind: str, env: list[str], scalars: list[str]) -> str:
        """A new host f32: a readback (of all of a value or of a data-dependent prefix),
        maybe combined with an earlier host scalar by host arithmetic."""
        rng = self.rng
        a = rng.choice(env)
        if rng.random() < 0.3:  # the first m elements, m = min(n, k) with k read back
            k = self.small_index(ind, rng.choice(scalars), 7)
            m, sl = self.fresh("m"), self.fresh("sl")
            self.emit(ind, f"{m} = arith.minui %n, {k} : index\n"
                           f"{sl} = tensor.extract_slice {a}[0] [{m}] [1] : {_T} to {_T}")
            a = sl
        s = self.readback(ind, a)
        if rng.random() < 0.4:
            t = self.fresh("s")
            self.emit(ind, f"{t} = {rng.choice(('arith.addf', 'arith.subf'))} {s}, {rng.choice(scalars)} : f32")
            s = t
        return s

    def block(self, ind: str, env: list[str], scalars: list[str], depth: int, first: str | None = None) -> str:
        """1-2 new values; with `first` (a loop's carried value), the last depends on it (iree-compile
        3.13 fails on an scf.while whose carried tensor the body ignores)."""
        env, scalars = list(env), list(scalars)
        if first is not None:
            env.append(self.ew(ind, first, self.rng.choice(env)))
            head = env[-1]
        for _ in range(self.rng.randint(1, 2)):
            env.append(self.value(ind, env, scalars, depth))
        if first is not None:
            return self.ew(ind, env[-1], head)
        return env[-1]

    def if_(self, ind: str, env: list[str], scalars: list[str], depth: int) -> str:
        s = self.scalar(ind, env, scalars)
        c, v = self.fresh("p"), self.fresh("t")
        thr = self.fconst(ind, round(self.rng.uniform(-2, 2), 2))
        self.emit(ind, f"{c} = arith.cmpf ogt, {s}, {thr} : f32\n{v} = scf.if {c} -> {_T} {{")
        t = self.block(ind + "  ", env, scalars + [s], depth - 1)
        self.emit(ind, f"  scf.yield {t} : {_T}\n}} else {{")
        e = self.block(ind + "  ", env, scalars, depth - 1)
        self.emit(ind, f"  scf.yield {e} : {_T}\n}}")
        return self.tie(ind, v)

    def while_(self, ind: str, env: list[str], scalars: list[str], depth: int) -> str:
        """while (readback(t) > thr and i < limit) t = body(t): a readback per iteration."""
        rng = self.rng
        i, t, j, u, w = self.fresh("i"), self.fresh("t"), self.fresh("j"), self.fresh("u"), self.fresh("w")
        c0, c1 = self.fresh("ci"), self.fresh("ci")
        limit = self.fresh("ci")
        self.emit(ind, f"{c0} = arith.constant 0 : index\n{c1} = arith.constant 1 : index\n"
                       f"{limit} = arith.constant {rng.randint(1, 4)} : index")
        thr = self.fconst(ind, round(rng.uniform(-1, 3), 2))
        self.emit(ind, f"{w}:2 = scf.while ({i} = {c0}, {t} = {rng.choice(env)}) : (index, {_T}) -> (index, {_T}) {{")
        s = self.readback(ind + "  ", self.tie(ind + "  ", t))
        p, q, g = self.fresh("p"), self.fresh("p"), self.fresh("p")
        self.emit(ind, f"  {p} = arith.cmpf ogt, {s}, {thr} : f32\n"
                       f"  {q} = arith.cmpi ult, {i}, {limit} : index\n  {g} = arith.andi {p}, {q} : i1\n"
                       f"  scf.condition({g}) {i}, {t} : index, {_T}\n}} do {{\n^bb0({j}: index, {u}: {_T}):")
        nj = self.fresh()
        self.emit(ind, f"  {nj} = arith.addi {j}, {c1} : index")
        body = self.block(ind + "  ", env, scalars, depth - 1, first=self.tie(ind + "  ", u))
        half = self.fconst(ind + "  ", 0.5)
        out = self.ew_scalar_fixed(ind + "  ", body, half)
        self.emit(ind, f"  scf.yield {nj}, {out} : index, {_T}\n}}")
        return self.tie(ind, f"{w}#1")

    def ew_scalar_fixed(self, ind: str, a: str, s: str) -> str:
        """a * s - 1 (so a loop on sum(a) > thr ends)."""
        e, v = self.fresh("e"), self.fresh("t")
        self.emit(ind, f"{e} = tensor.empty(%n) : {_T}\n"
                       f"{v} = linalg.generic {{indexing_maps = {_EW1}, iterator_types = [\"parallel\"]}}\n"
                       f"    ins({a} : {_T}) outs({e} : {_T}) {{\n"
                       f"^bb0(%p: f32, %o: f32):\n  %m = arith.mulf %p, {s} : f32\n"
                       f"  %one = arith.constant 1.0 : f32\n  %r = arith.subf %m, %one : f32\n"
                       f"  linalg.yield %r : f32\n}} -> {_T}")
        return v

    def for_(self, ind: str, env: list[str], scalars: list[str], depth: int) -> str:
        """scf.for with a trip count read back (0..3) or constant (1..3)."""
        rng = self.rng
        c0, c1 = self.fresh("ci"), self.fresh("ci")
        self.emit(ind, f"{c0} = arith.constant 0 : index\n{c1} = arith.constant 1 : index")
        if rng.random() < 0.5:
            ub = self.small_index(ind, self.scalar(ind, env, scalars), 3)
        else:
            ub = self.fresh("ci")
            self.emit(ind, f"{ub} = arith.constant {rng.randint(1, 3)} : index")
        k, t, r = self.fresh("k"), self.fresh("t"), self.fresh("fo")
        self.emit(ind, f"{r} = scf.for {k} = {c0} to {ub} step {c1} iter_args({t} = {rng.choice(env)}) -> ({_T}) {{")
        body = self.block(ind + "  ", env, scalars, depth - 1, first=self.tie(ind + "  ", t))
        self.emit(ind, f"  scf.yield {body} : {_T}\n}}")
        return self.tie(ind, r)

    def assert_(self, ind: str, env: list[str]) -> None:
        """cf.assert on a read-back value (fails for some inputs) or on the length."""
        rng = self.rng
        ok = self.fresh("ok")
        if rng.random() < 0.7:
            s = self.readback(ind, rng.choice(env))
            thr = self.fconst(ind, round(rng.uniform(1, 8), 2))
            self.emit(ind, f"{ok} = arith.cmpf olt, {s}, {thr} : f32")
        else:
            lim = self.fresh("ci")
            self.emit(ind, f"{lim} = arith.constant {rng.choice((2, 20, 50))} : index\n"
                           f"{ok} = arith.cmpi ult, %n, {lim} : index")
        self.emit(ind, f'cf.assert {ok}, "{self.name}: assert {self.counter}"')

    def insert(self, ind: str, a: str, s: str) -> str:
        """a with a[n - 1] = s where n > 0 (a host value written into a device buffer)."""
        c0, c1, p, last, v, r = (self.fresh() for _ in range(6))
        self.emit(ind, f"{c0} = arith.constant 0 : index\n{c1} = arith.constant 1 : index\n"
                       f"{p} = arith.cmpi ugt, %n, {c0} : index\n{v} = scf.if {p} -> {_T} {{\n"
                       f"  {last} = arith.subi %n, {c1} : index\n"
                       f"  {r} = tensor.insert {s} into {a}[{last}] : {_T}\n  scf.yield {r} : {_T}\n"
                       f"}} else {{\n  scf.yield {a} : {_T}\n}}")
        return self.tie(ind, v)

    def build(self, depth: int) -> str:
        rng = self.rng
        self.emit("    ", '%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n'
                          f'%n = tensor.dim %x, %c0 : {_T}\n%ny = tensor.dim %y, %c0 : {_T}\n'
                          '%same = arith.cmpi eq, %n, %ny : index\n'
                          f'cf.assert %same, "{self.name}: %x and %y differ in length"\n'
                          '%w1 = tensor.extract %w[%c1] : tensor<4xf32>')
        env, scalars = ["%x", "%y"], ["%w1"]
        for _ in range(rng.randint(2, 4)):
            env.append(self.value("    ", env, scalars, depth))
            if rng.random() < 0.15:
                env.append(self.call("    ", env, scalars))
        out = env[-1]
        if rng.random() < 0.3:  # a result of a data-dependent length
            k = self.small_index("    ", self.scalar("    ", env, scalars), 15)
            m, out = self.fresh("m"), self.fresh("res")
            self.emit("    ", f"{m} = arith.minui %n, {k} : index\n"
                               f"{out} = tensor.extract_slice {env[-1]}[0] [{m}] [1] : {_T} to {_T}")
        s = self.scalar("    ", env, scalars) if rng.random() < 0.5 else rng.choice(scalars)
        st = self.fresh("st")
        self.emit("    ", f"{st} = tensor.from_elements {s} : tensor<f32>")
        body = "\n".join(self.lines)
        return "".join(self.helpers) + (
            f"  func.func @{self.name}(%x: {_T}, %y: {_T}, %w: tensor<4xf32>) -> ({_T}, tensor<f32>) {{\n"
            f"{body}\n    return {out}, {st} : {_T}, tensor<f32>\n  }}\n")


def queue_functions(seed: int, count: int, depth: int = 2) -> list[tuple[str, str]]:
    """(name, MLIR text) of `count` random queue functions (each text with the private
    functions it calls)."""
    rng = random.Random(seed)
    names = [f"q{seed}_{k}" for k in range(count)]
    return [(name, _QueueFn(rng, name).build(depth)) for name in names]


def queue_module_text(functions: list[tuple[str, str]]) -> str:
    """A module of some of queue_functions' functions."""
    return "module {\n" + "".join(text for _, text in functions) + "}\n"


def queue_module(seed: int, count: int, depth: int = 2) -> tuple[str, list[str]]:
    """MLIR text of one module of `count` random queue functions, and their names."""
    functions = queue_functions(seed, count, depth)
    return queue_module_text(functions), [name for name, _ in functions]


QUEUE_LENGTHS = (0, 1, 3, 8, 17, 64)


def queue_inputs(seed: int, count: int = 4) -> list[tuple]:
    """(x, y, w) sets for a queue function: lengths from QUEUE_LENGTHS (so workgroup counts
    and constants vary per call); now and then y of another length or w of 5 elements."""
    import numpy as np

    rng = random.Random(seed * 7919 + 3)
    gen = np.random.default_rng(seed)
    sets = []
    for _ in range(count):
        n = rng.choice(QUEUE_LENGTHS)
        ny = n if rng.random() < 0.9 else n + 1
        nw = 4 if rng.random() < 0.93 else 5
        x = gen.standard_normal(n).astype(np.float32)
        y = gen.standard_normal(ny).astype(np.float32)
        w = gen.standard_normal(nw).astype(np.float32)
        sets.append((x, y, w))
    return sets


if __name__ == "__main__":
    if sys.argv[1:2] == ["--queue"]:
        text, _ = queue_module(int(sys.argv[2]), int(sys.argv[3]))
    else:
        text, _ = module(int(sys.argv[1]), int(sys.argv[2]))
    sys.stdout.write(text)
