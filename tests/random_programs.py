"""Random structured MLIR programs for the code generator's differential test.

    python -m tests.random_programs SEED COUNT   # prints one module of COUNT functions

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


if __name__ == "__main__":
    text, _ = module(int(sys.argv[1]), int(sys.argv[2]))
    sys.stdout.write(text)
