"""Queue regions -> queue programs: a module constant per region and one call where it was.

translator/analyses/queue_regions.py finds the regions; this writes each as a
`QueueProgram` (runtime_support/exec/program.py) of the steps steps.py derives from the
`hal` module's declarations, with keyword fields named after the import's parameters, and
the call site that passes the region's inputs and assigns what it leaves live:

    QUEUE_0 = QueueProgram(
        function="main",
        inputs=("r0", "r3"),
        steps=(
            CommandBufferCreate(out="cmd0", device="r3", modes=1, ...),
            ...
        ),
        outputs=("buffer0",),
    )
    ...
        r1 = queue_0(r0, r3)        # pc 0x1c-0x2b1

Values a step makes are named after what they are (`cmd0`, `fence1`, `buffer0`, `t2` for
an integer op's result); inputs keep their register names. The program holds no
per-call data: constants dataflow proves are literals in it, everything else an input.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime_support.exec.program import MAX_POSITIONAL
from translator.analyses.queue_region_records import Compute, FailCheck, Lit, Region, RegionStep
import translator.codegen.hal_enums as hal_enums
from translator.codegen.escape import comment_text, string_literal as lit
from translator.codegen.stmt import Assign, Call, Comment, Stmt
from translator.ir import Reg

# How a value a step makes is named, by its step kind (steps.py) or "movable".
_PREFIX = {
    "Alloca": "buffer",
    "ViewBuffer": "buffer",
    "Record": "cmd",
    "NewFence": "fence",
    "Join": "fence",
    "Lookup": "function",
    "Await": "status",
    "Read": "value",
    "Allocator": "allocator",
    "movable": "t",
}

# A region of fewer steps stays one import call per op: a program would add a call.
MIN_STEPS = 2


@dataclass
class ProgramSite:
    """One region written as a program: the statements where its first op was."""

    region: Region
    name: str  # the module constant, QUEUE_n
    local: str  # the bound program in `_bind`, queue_n
    stmts: list[Stmt]
    # Loop mode (Region.loop_exits): per block the loop leaves to, the statements at its
    # start that read the loop's last results (`queue_n.results(...)`).
    exits: dict = None


class ProgramTable:
    """The module's queue programs: their constants (in order) and what `_bind` binds."""

    def __init__(self, use, rodata_name) -> None:
        self.use = use  # OpRenderer.use(helper module key, name)
        self.rodata_name = rodata_name  # rodata ordinal -> its local in `_bind`
        self.constants: list[tuple[str, str]] = []  # (name, source text)
        self.locals: list[tuple[str, str]] = []  # (local, constant)

    def site(self, fn_name: str, region: Region, reg, prov) -> ProgramSite | None:
        """The program and call site for `region`, or None where it stays op by op
        (too small, or a shape a program does not express: `Region.unsupported`)."""
        if region.unsupported is not None or len(region.steps) < MIN_STEPS:
            return None
        k = len(self.constants)
        name, local = f"QUEUE_{k}", f"queue_{k}"
        names = self._value_names(region)
        ref = _Refs(names, reg, self)
        inputs = [reg(r) for r in region.inputs]
        steps = [self._step(item, ref) for item in region.order]
        outputs, targets, after = [], [], []
        for r, v in region.results:
            if isinstance(v, Lit):
                after.append(Assign(prov, (reg(r),), ref.literal(v, site=True)))
            else:
                outputs.append(ref(v))
                targets.append(reg(r))
        self.use("program", "QueueProgram")
        self.use("general", "bind_program")
        # Loop mode: the outputs the back edge carries, by name (output value, input).
        looped = bool(region.loop_exits)
        out_name = {reg(r): ref(v) for r, v in region.outputs}
        pairs = (_tuple((out_name[reg(a)], lit(reg(d)))) for a, d in region.carried)
        carried = f"    carried={_tuple(pairs)},\n" if looped else ""
        loop = region.loop
        extra = [reg(r) for r in loop.entry] if loop is not None else []
        if loop is not None:
            self.use("program", "Loop")
            carried = self._loop_text(loop, targets, reg)
        text = (
            f"{name} = QueueProgram(\n"
            f"    function={lit(fn_name)},\n"
            f"    inputs={_tuple(lit(i) for i in inputs)},\n"
            f"    steps=(\n" + "".join(f"        {s},\n" for s in steps) + "    ),\n"
            f"    outputs={_tuple(outputs)},\n" + carried +
            ")"
        )
        self.constants.append((name, text))
        self.locals.append((local, name))
        args = ", ".join(inputs + extra)
        callee = f"{local}.step" if looped else f"{local}.loop" if loop is not None else local
        # (a loop call takes its arguments positionally, however many: one call per loop)
        wide = len(inputs) > MAX_POSITIONAL and loop is None
        call = f"{callee}(({args},))" if wide else f"{callee}({args})"
        first, last = region.ops[0].pc, region.ops[-1].pc
        stmts: list[Stmt] = [
            Comment(prov, f"{name}: pc 0x{first:x}-0x{last:x}, {len(region.steps)} queue steps")
        ]
        exits = None
        if looped:
            note = "a step of the loop: run later, where the loop's exit reads its results"
            stmts.append(Comment(prov, note))
            exits = {}
            for b, regs in region.loop_exits:
                names = tuple(reg(r) for r in regs)
                exits[b] = [
                    Comment(prov, f"{name}: the loop's last results (its deferred steps run here)"),
                    Assign(prov, names, f"{local}.results({', '.join(names)})", frozenset(names),
                           ),
                ]
        if loop is not None:
            note = "the loop's iterations: run by this call while its test holds"
            stmts.append(Comment(prov, note))
            targets = targets + [reg(r) for r in loop.kept]
        reads = frozenset(inputs + extra)
        if targets:
            stmts.append(Assign(prov, tuple(targets), call, reads))
        else:
            stmts.append(Call(prov, call, reads))
        stmts += after
        return ProgramSite(region, name, local, stmts, exits)

    def _loop_text(self, loop, targets: list[str], reg) -> str:
        """The program's `loop=Loop(...)` field (runtime_support/exec/program.py)."""

        def ref(value) -> str:  # (a register by its name, a literal operand as itself)
            return lit(reg(value)) if isinstance(value, Reg) else repr(value)

        def ops(items) -> str:
            if not items:
                return "()"
            out = []
            for op in items:
                (w,) = op.writes()
                args = tuple(op[f.name] for f in op.spec.fields if not f.write)
                out.append(f"            {self._step(Compute(op, args, w), ref)},\n")
            return "(\n" + "".join(out) + "        )"

        copies = _tuple(_tuple((lit(reg(a)), lit(reg(b)))) for a, b in loop.copies)
        negate = "        negate=True,\n" if loop.negate else ""
        return (
            "    loop=Loop(\n"
            f"        targets={_tuple(lit(t) for t in targets)},\n"
            f"        registers={_tuple(lit(reg(r)) for r in loop.entry)},\n"
            f"        after={ops(loop.after)},\n"
            f"        test={lit(reg(loop.test))},\n" + negate +
            f"        copies={copies},\n"
            f"        before={ops(loop.before)},\n"
            f"        kept={_tuple(lit(reg(r)) for r in loop.kept)},\n"
            "    ),\n"
        )

    @staticmethod
    def _value_names(region: Region) -> dict[int, str]:
        counts: dict[str, int] = {}
        names = {}
        for v in sorted(region.made_by):
            _op, kind = region.made_by[v]
            prefix = _PREFIX.get(kind, kind.lower())
            n = counts.get(prefix, 0)
            counts[prefix] = n + 1
            names[v] = f"{prefix}{n}"
        return names

    def _field(self, value, enum_kind: str | None, ref) -> str:
        """A field's text: an enum literal by the runtime's names for it (`memory_types=
        MEMORY_TYPE_DEVICE_LOCAL`), anything else as `ref` renders it."""
        if enum_kind is not None and isinstance(value, Lit) and type(value.value) is int:
            named = hal_enums.expression(enum_kind, value.value)
            if named is not None:
                key, text, names = named
                for name in names:
                    self.use(key, name)
                return text
        return ref(value)

    def _step(self, item, ref) -> str:
        if isinstance(item, RegionStep):
            cls = item.entry.cls.__name__
            self.use("steps", cls)
            fields = [f"out={_out(item.results, ref)}"] if item.results else []
            enums = hal_enums.step_enum_fields(item.entry.full_name, item.entry.params)
            fields += [f"{k}={self._field(v, enums.get(k), ref)}" for k, v in item.fields.items()]
            return f"{cls}({', '.join(fields)})"
        if isinstance(item, Compute):
            self.use("program", "Compute")
            return (
                f"Compute(out={ref(item.out)}, op={lit(item.op.mnemonic)}, "
                f"args={_tuple(ref(a) for a in item.args)})"
            )
        if isinstance(item, FailCheck):
            self.use("program", "FailIf")
            e = item.exit
            loc = lit(comment_text(e.location)) if e.location else "None"
            negate = ", negate=True" if item.negate else ""
            return (
                f"FailIf(test={ref(item.test)}, status={ref(item.status)}, "
                f"message={lit(e.message)}, location={loc}{negate})"
            )
        raise TypeError(f"not a region item: {item!r}")


class _Refs:
    """Renders a region operand (value id, input register, Lit, span) as program text."""

    def __init__(self, names: dict[int, str], reg, table: ProgramTable) -> None:
        self.names, self.reg, self.table = names, reg, table

    def __call__(self, v) -> str:
        if isinstance(v, Lit):
            return self.literal(v)
        if isinstance(v, Reg):
            return lit(self.reg(v))
        if isinstance(v, tuple):
            return _tuple(self(x) for x in v)
        return lit(self.names[v])

    def literal(self, v: Lit, site: bool = False) -> str:
        """A constant in program text, or (`site`) in the function at the call site,
        where a rodata segment is the `_bind` local holding it."""
        if v.value is None:
            return "None"
        if isinstance(v.value, tuple):  # ("rodata", ordinal)
            k = v.value[1]
            if site:
                return self.table.rodata_name(k)
            self.table.use("program", "Rodata")
            return f"Rodata({k}, {lit(self.table.rodata_name(k))})"
        return repr(v.value)


def _out(results, ref) -> str:
    return ref(results[0]) if len(results) == 1 else _tuple(ref(v) for v in results)


def _tuple(items) -> str:
    items = list(items)
    if not items:
        return "()"
    return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"


__all__ = ["MIN_STEPS", "ProgramSite", "ProgramTable"]
