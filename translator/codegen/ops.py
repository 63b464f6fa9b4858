"""VM ops -> statement-tree nodes (`stmt.py`).

Each op is lowered by the emitter its ISA row names (`emit` column: `_emit_<kind>` for an
op inside a block, `_end_<kind>` for a terminator), from the op's fields as `isa.OpSpec`
names them. Scalar
arithmetic calls the bit-exact helpers of `runtime_support.vm.numerics` (named after the
mnemonic: `add.i32` -> `add_i32`); buffer and list ops call `runtime_support.vm.buffer` /
`.list` helpers named the same way; ops whose semantics is one Python expression are
written inline, in the form `runtime_support.vm.numerics.INLINE` gives beside the function.
"""

from __future__ import annotations

import math
import re

from dataclasses import dataclass

from translator.codegen.escape import comment_text, string_literal as lit
from translator.codegen.names import NameTable
from translator.analyses.regkinds import HIGH
from translator.analyses.submissions import EXECUTE_FIXED
from translator.codegen.stmt import (
    Assign,
    Call,
    Comment,
    If,
    Provenance,
    Raise,
    Release,
    Return,
    Stmt,
    Submit,
    ChainCall,
)
from translator.ir import IMPORT_BIT, Function, Op, Reg
from runtime_support.vm.numerics import INLINE as NUMERIC_INLINE


# Families rendered as `result = helper(fields...)` with the helper named after the
# mnemonic, from the named runtime module.
HELPER_MODULES = {
    "numerics": "runtime_support.vm.numerics",
    "buffer": "runtime_support.vm.buffer",
    "list": "runtime_support.vm.list",
    "globals": "runtime_support.vm.globals",
    "fused": "runtime_support.hal.fused",
    "one_shot": "runtime_support.hal.one_shot",
    # queue programs (codegen/queue_programs.py)
    "program": "runtime_support.exec.program",
    "steps": "runtime_support.exec.steps",
    "general": "runtime_support.exec.general",
    # HAL enum constants a queue program's fields name (codegen/hal_enums.py)
    "hal_buffer": "runtime_support.hal.buffer",
    "hal_command_buffer": "runtime_support.hal.command_buffer",
    "hal_element_types": "runtime_support.hal.element_types",
}

# The local a one-shot group's steps are appended to (analyses/one_shots.py).
RECORDING = "recording"
# The local an argument check's shape is read into before the scalars that write its
# registers (analyses/arguments.py, `snapshot`).
SHAPE = "shape"


_REGISTER = re.compile(r"\b[ri]\d+\b")  # a register local in an argument text


def _table_entries(ex: list[str], allocated) -> tuple:
    """execute.indirect's table (its operands after the fixed ones, as text) as (buffer,
    offset, length) entries, None for the buffer of each entry in `allocated`."""
    return tuple(
        (None if k in allocated else e[0], e[1], e[2])
        for k, e in enumerate(ex[i : i + 3] for i in range(EXECUTE_FIXED, len(ex), 3))
    )


def helper_name(mnemonic: str) -> str:
    return mnemonic.replace(".", "_")


def _float_literal(value: float, bits: int, width: int) -> str:
    if math.isfinite(value):
        return repr(value)
    fn = "from_bits_f32" if width == 32 else "from_bits_f64"
    return f"{fn}(0x{bits:0{width // 4}X})"


@dataclass
class Edge:
    """One way out of a block: taken when `test` holds (None: otherwise / always)."""

    test: str | None
    target: int  # block index
    pairs: tuple  # remap (src, dst) register pairs


@dataclass
class Terminator:
    """A block's terminator, lowered: statements, then an exit or edges to blocks."""

    prov: Provenance
    pre: list[Stmt]  # statements before control leaves (a yieldable call)
    exit: list[Stmt] | None  # return / raise; None when the block branches
    edges: list[Edge]


class OpRenderer:
    # mnemonic -> inline form (runtime_support.vm.numerics.INLINE; a VMVX kernel's are
    # numerics_ftz.INLINE: generate's `numeric_inline`)
    numeric_inline = NUMERIC_INLINE

    """Lowers the ops of one module; collects which runtime helpers the module uses."""

    def __init__(self, module, names: NameTable, cconvs, numeric_ops: set[str], locations) -> None:
        self.module = module
        self.names = names
        self.cconvs = cconvs
        self.numeric_ops = numeric_ops
        self.locations = locations
        self.helpers: dict[str, set[str]] = {k: set() for k in HELPER_MODULES}
        self.helpers["context"] = set()
        # (slot, type ordinal) of ref-global loads that are plain reads
        # (translator/analyses/ref_globals.py); set by the caller for the whole module.
        self.unchecked_ref_loads: frozenset = frozenset()
        # Whether submission groups (analyses/submissions.py) become one fused call.
        self.fuse_submissions = True
        # Fused helper kind -> the local `_bind` builds it into (module-wide).
        self.fused: dict[str, str] = {}
        # Queue programs (codegen/queue_programs.py): a ProgramTable where queue regions
        # become programs (then fuse_submissions is off), else None.
        self.programs = None

    def use(self, module: str, name: str) -> str:
        self.helpers[module].add(name)
        return name

    # -- registers ----------------------------------------------------------------
    @staticmethod
    def reg(r: Reg) -> str:
        return f"{'r' if r.is_ref else 'i'}{r.ordinal}"

    def field_text(self, op: Op, name: str) -> str:
        v = op.values[name]
        if isinstance(v, Reg):
            return self.reg(v)
        return str(v)

    def reads(self, op: Op) -> frozenset[str]:
        return frozenset(self.reg(r) for r in op.reads())

    def moves_after(
        self,
        op: Op,
        prov: Provenance,
        overwritten: frozenset[int] = frozenset(),
        dead: frozenset[int] = frozenset(),
    ) -> list[Stmt]:
        """Release of ref operands read with the move bit (ownership moved away) or read
        for the last time (`dead`, from analyses/liveness.py).

        Registers in `overwritten` are assigned by the very next statement, which
        releases the old value just the same, so they need no separate release.
        """
        written = {w.ordinal for w in op.writes() if w.is_ref} | overwritten
        moved = []
        for f in op.spec.fields:
            if f.write:
                continue
            v = op.values[f.name]
            regs = [v] if f.kind == "register" else (v if f.kind == "list" and f.bank != "segments" else ())
            for r in regs:
                if (
                    isinstance(r, Reg)
                    and r.is_ref
                    and (r.move or r.ordinal in dead)
                    and r.ordinal not in written
                ):
                    name = self.reg(r)
                    if name not in moved:
                        moved.append(name)
        return [Release(prov, moved)] if moved else []

    # -- provenance -----------------------------------------------------------------
    def provenance(self, fn: Function, op: Op) -> Provenance:
        k = fn.ordinal
        callee = None
        if "callee_ordinal" in op.values:
            c = op["callee_ordinal"]
            callee = (
                self.module.imports[c & ~IMPORT_BIT].full_name
                if c & IMPORT_BIT
                else "@" + self.module.function_display_name(c)
            )
        return Provenance(
            fn.name, op.pc, op.mnemonic, self.locations(k, op.pc), self.locations.file_of(k, op.pc), callee
        )

    # -- ops ------------------------------------------------------------------------
    def lower_op(
        self, fn: Function, op: Op, overwritten: frozenset[int] = frozenset(), dead: frozenset[int] = frozenset()
    ) -> list[Stmt]:
        prov = self.provenance(fn, op)
        return self._lower(fn, op, prov) + self.moves_after(op, prov, overwritten, dead)

    def _assign(self, op: Op, prov: Provenance, expr: str) -> list[Stmt]:
        return [Assign(prov, tuple(self.reg(r) for r in op.writes()), expr, self.reads(op))]

    def _call_stmt(self, op: Op, prov: Provenance, expr: str) -> list[Stmt]:
        return self._assign(op, prov, expr) if op.writes() else [Call(prov, expr, self.reads(op))]

    def _lower(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        emit = getattr(self, f"_emit_{op.spec.emit}", None)
        if emit is None or op.spec.is_terminator:
            raise NotImplementedError(f"no Python rendering for vm.{op.mnemonic}")
        return emit(fn, op, prov)

    # One emitter per `emit` kind of the ISA table (isa.EMIT_KINDS).
    def _emit_const(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        imm = op.get("value")
        if imm is None:  # const.<type>.zero
            bank = op.spec.fields[-1].bank
            return self._assign(op, prov, "0.0" if bank in ("f32", "f64") else "0")
        if imm.type in ("i32", "i64"):
            return self._assign(op, prov, str(imm.value))
        width = 32 if imm.type == "f32" else 64
        if not math.isfinite(imm.value):
            self.use("numerics", "from_bits_f32" if width == 32 else "from_bits_f64")
        return self._assign(op, prov, _float_literal(imm.value, imm.bits, width))

    def _emit_null(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        return [Release(prov, [self.reg(r) for r in op.writes()])]

    def _emit_rodata(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        return self._assign(op, prov, self.names.rodata(op["rodata"]))

    def _operands(self, op: Op) -> dict[str, str]:
        return {fs.name: self.field_text(op, fs.name) for fs in op.spec.fields if not fs.write}

    def _emit_numeric(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        operands = self._operands(op)
        form = self.numeric_inline.get(op.mnemonic)
        if form is not None:
            return self._assign(op, prov, form.format(**operands))
        helper = self.use("numerics", helper_name(op.mnemonic))
        return self._assign(op, prov, f"{helper}({', '.join(operands.values())})")

    def _emit_select(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        f = lambda name: self.field_text(op, name)  # noqa: E731
        return self._assign(op, prov, f"{f('true_value')} if {f('condition')} else {f('false_value')}")

    def _emit_switch(self, fn: Function, op: Op, prov: Provenance, wrap: str | None = None) -> list[Stmt]:
        regs = [self.reg(r) for r in op["values"]]
        if wrap is not None:
            regs = [f"{wrap}({r})" for r in regs]
        n = len(regs)
        default = self.field_text(op, "default_value")
        if n == 0:
            return self._assign(op, prov, default)
        tup = f"({regs[0]},)" if n == 1 else f"({', '.join(regs)})"
        idx = self.field_text(op, "index")
        return self._assign(op, prov, f"{tup}[{idx}] if 0 <= {idx} < {n} else {default}")

    def _emit_switch_i64(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        # IREE 3.13 reads each listed i64 value as its low 32 bits, sign-extended
        # (observed with iree-run-module); the default keeps all 64 bits.
        return self._emit_switch(fn, op, prov, wrap=self.use("numerics", "wrap_i32"))

    def _emit_list_alloc(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        t = self.module.types[op["element_type"]]
        inner = t[len("!vm.list<") : -1] if t.startswith("!vm.list<") else t
        if inner == "!vm.opaque":  # the element type of variant lists
            inner = "?"
        size = self.field_text(op, "initial_capacity")
        return self._assign(op, prov, f"{self.use('list', 'list_alloc')}({lit(inner)}, {size})")

    def _emit_list(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        args = [
            self.field_text(op, fs.name) if fs.kind != "type" else lit(self.module.types[op[fs.name]])
            for fs in op.spec.fields
            if not fs.write
        ]
        return self._call_stmt(op, prov, f"{self.use('list', helper_name(op.mnemonic))}({', '.join(args)})")

    def _emit_buffer(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        args = ", ".join(self._operands(op).values())
        return self._call_stmt(op, prov, f"{self.use('buffer', helper_name(op.mnemonic))}({args})")

    def _emit_assign(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        return self._assign(op, prov, self.field_text(op, "source"))

    def _emit_cast(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        t = self.module.types[op["result_type"]]
        operand = self.field_text(op, "operand")
        return self._assign(op, prov, f"{self.use('globals', 'cast_any_ref')}({operand}, {lit(t)})")

    def _emit_call(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        return self._call(op, prov)

    def _emit_import_resolved(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        name = self.names.import_name(op["import_ordinal"] & ~IMPORT_BIT)
        return self._assign(op, prov, f"int({name} is not None)")

    def _emit_discard(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        regs = list(dict.fromkeys(self.reg(r) for r in op["refs"]))
        return [Release(prov, regs)] if regs else []

    def _emit_comment(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        name = op["event_name"].decode("utf-8", errors="replace")
        return [Comment(prov, f"vm.{op.mnemonic} {name!r}")]

    def _emit_fail(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        return [If(prov, self.field_text(op, "status"), [self._raise(fn, op, prov)])]

    def _raise(self, fn: Function, op: Op, prov: Provenance) -> Raise:
        msg = op["message"].decode("utf-8", errors="replace")
        self.use("context", "vm_fail")
        loc = None if prov.location is None else comment_text(prov.location)
        return Raise(prov, self.field_text(op, "status"), msg, fn.name, loc)

    def _emit_global(self, fn: Function, op: Op, prov: Provenance) -> list[Stmt]:
        """A value global lives at a byte offset of `rwdata`, a ref global at an ordinal of
        `refs`; the address is an immediate or (indirect) a register, as the fields say."""
        value = next(fs for fs in op.spec.fields if fs.name in ("value", "result"))
        address = op.spec.fields[0]
        where = self.field_text(op, address.name) if address.is_register else str(op[address.name])
        load = value.write
        if value.bank == "ref":
            t = lit(self.module.types[op["type_def"]])
            if load:
                if not address.is_register and (op[address.name], op["type_def"]) in self.unchecked_ref_loads:
                    # analyses/ref_globals.py proved every store to it has this type
                    stmts = self._assign(op, prov, f"refs.get({where})")
                    stmts[0].note = self.module.types[op["type_def"]]  # e.g. `# !hal.device`
                    return stmts
                return self._assign(op, prov, f"{self.use('globals', 'global_load_ref')}(refs, {where}, {t})")
            helper = self.use("globals", "global_store_ref")
            return [Call(prov, f"{helper}(refs, {where}, {t}, {self.reg(op['value'])})", self.reads(op))]
        if load:
            return self._assign(op, prov, f"{self.use('globals', f'global_load_{value.bank}')}(rwdata, {where})")
        helper = self.use("globals", f"global_store_{value.bank}")
        return [Call(prov, f"{helper}(rwdata, {where}, {self.reg(op['value'])})", self.reads(op))]

    # -- calls ------------------------------------------------------------------------
    def call_expr(self, op: Op) -> str:
        callee = op["callee_ordinal"]
        regs = [self.reg(r) for r in op["operands"]]
        if callee & IMPORT_BIT:
            imp = self.module.imports[callee & ~IMPORT_BIT]
            name = self.names.import_name(imp.ordinal)
            cc = imp.signature.cconv
            segments = op.get("segment_sizes")
            if segments is None:
                args = regs
            else:
                args, pos = [], 0
                for size, item in zip(segments, cc.arguments):
                    if isinstance(item, tuple):
                        elems = []
                        for _ in range(size):
                            group = regs[pos : pos + len(item)]
                            pos += len(item)
                            elems.append(group[0] if len(item) == 1 else "(" + ", ".join(group) + ")")
                        args.append("[" + ", ".join(elems) + "]")
                    else:
                        args.append(regs[pos])
                        pos += 1
            return f"{name}({', '.join(args)})"
        return f"{self.names.function(callee)}({', '.join(regs)})"

    def _call(self, op: Op, prov: Provenance) -> list[Stmt]:
        expr = self.call_expr(op)
        outs = tuple(self.reg(r) for r in op["results"])
        if not outs:
            return [Call(prov, expr, self.reads(op))]
        return [Assign(prov, outs, expr, self.reads(op))]

    # -- fused submissions ----------------------------------------------------------------
    def _fused_local(self, kind: str, module: str = "fused", site: str | None = None) -> str:
        """The context's local for a helper of runtime_support/hal/fused.py (or another
        HELPER_MODULES module), bound once; with `site`, one of its own for that call
        site (a helper that compiles itself for its call site's shape)."""
        key = kind if site is None else f"{kind}#{site}"
        local = self.fused.get(key)
        if local is None:
            local = self.fused[key] = self.names.fused_local(kind)
            self.use(module, kind)
        return local

    def _binding_table(self, ex: list[str], allocated_entries) -> str:
        """execute.indirect's table entries (its operands after the fixed ones) as a list
        literal, the buffer the fused call allocates reading `ALLOCATED` in the entries
        given."""
        table = [ex[i : i + 3] for i in range(EXECUTE_FIXED, len(ex), 3)]
        if allocated_entries:
            allocated = self.use("fused", "ALLOCATED")
            for k in allocated_entries:
                table[k] = [allocated] + table[k][1:]
        return "[" + ", ".join("(" + ", ".join(e) + ")" for e in table) + "]"

    def lower_submission(self, fn: Function, group, dead, index_of: dict[int, int]) -> Terminator:
        """A submission group (analyses/submissions.py) as one call of the context's fused
        helper (runtime_support/hal/fused.py), its arguments in the ops' order with the
        private fences left out; a table entry holding the new buffer reads `ALLOCATED`.
        Afterwards every register the ops left null is released (the fences included)."""
        term = group.await_op
        kind = group.kind
        local = self._fused_local(kind)
        ops = group.ops
        execute = group.execute
        ex = [self.reg(r) for r in execute["operands"]]
        table_text = self._binding_table(ex, group.slots)
        create_flags = self.reg(ops[-2]["operands"][1])
        device, affinity, wait, _signal, cmd, flags = ex[:EXECUTE_FIXED]
        timeout, await_flags = (self.reg(r) for r in term["operands"][:2])
        if kind == "alloca_execute_indirect":
            al = [self.reg(r) for r in group.alloca["operands"]]
            slots = f"({', '.join(map(str, group.slots))},)" if group.slots else "()"
            args = [
                (device, "device"),
                (self.reg(ops[0]["operands"][1]), "flags (fence.create)"),
                (al[1], "affinity (queue.alloca)"),
                (al[2], "wait fence"),
                (al[4], "pool"),
                (al[5], "memory types"),
                (al[6], "buffer usage"),
                (al[7], "allocation size"),
                (al[8], "flags"),
                (create_flags, "flags (fence.create)"),
                (affinity, "affinity (queue.execute.indirect)"),
                (cmd, "command buffer"),
                (flags, "flags"),
                (table_text, "binding table"),
                (slots, "table entries of the new buffer (ALLOCATED)"),
                (timeout, "timeout (fence.await)"),
                (await_flags, "flags"),
            ]
            targets = (self.reg(group.alloca["results"][0]), self.reg(term["results"][0]))
        elif kind == "execute":
            args = [
                (device, "device"),
                (create_flags, "flags (fence.create)"),
                (affinity, "affinity (queue.execute)"),
                (wait, "wait fence"),
                (cmd, "command buffer"),
                (flags, "flags"),
                (timeout, "timeout (fence.await)"),
                (await_flags, "flags"),
            ]
            targets = (self.reg(term["results"][0]),)
        else:
            args = [
                (device, "device"),
                (create_flags, "flags (fence.create)"),
                (affinity, "affinity (queue.execute.indirect)"),
                (wait, "wait fence"),
                (cmd, "command buffer"),
                (flags, "flags"),
                (table_text, "binding table"),
                (timeout, "timeout (fence.await)"),
                (await_flags, "flags"),
            ]
            targets = (self.reg(term["results"][0]),)
        # One argument a line, each with what it is: the call stays readable.
        call = f"{local}(\n" + "".join(f"{a},  # {label}\n" for a, label in args) + ")"
        provs = [self.provenance(fn, op) for op in (*ops, term)]
        # The `if status: raise` that follows is the next block's; the comment names
        # what the call does, the call carries the execute's provenance (the dispatch).
        names = ", ".join(p.callee.removeprefix("hal.") for p in provs)
        # What the call reads: the registers among its arguments (a register the group
        # also writes, e.g. a wait fence in the register the second fence goes to, is
        # read before: the arguments are evaluated first).
        reads = frozenset(n for a, _ in args for n in _REGISTER.findall(a))
        step = ()
        if kind != "execute":
            table = _table_entries(ex, group.slots)
            if kind == "alloca_execute_indirect":
                head = tuple(a for a, _ in args[:13])
            else:  # (no alloca: its operands None)
                head = (device, None, None, wait, None, None, None, None, None, create_flags,
                        affinity, cmd, flags)
            step = head + (table, group.slots, timeout, await_flags)
        stmts: list[Stmt] = [
            Comment(provs[0], f"fused: {names}"),
            Submit(provs[-2], targets, call, reads, step=step),
        ]
        # What the ops release (moved or last read; the new buffer only if the execute
        # was its last reader), and the fences, which nothing reads afterwards.
        released: list[str] = []
        for op, prov in zip(ops, provs):
            for r in self.moves_after(op, prov, frozenset(), dead(op)):
                released += r.names
        for r in self.moves_after(term, provs[-1]):
            released += r.names
        released += [self.reg(r) for op in ops if op is not group.alloca for r in op.writes()]
        released = list(dict.fromkeys(released))
        if released:
            stmts.append(Release(provs[-1], released))
        return Terminator(provs[-1], stmts, None, self._edges(term, index_of, [None]))

    def lower_chain(self, fn: Function, chain, dead) -> list[Stmt]:
        """A queue chain (analyses/chains.py) as one call of the context's `chain` helper
        (runtime_support/hal/fused.py): the allocated buffers and the last fence are its
        results; table entries and a dealloca of a buffer allocated in the same call read
        `ALLOCATED`. Afterwards the registers the ops released, and those left holding a
        private fence, are released (never a result)."""
        local = self._fused_local("chain")
        ops = chain.ops
        reg = self.reg
        ex = [reg(r) for r in chain.execute["operands"]]
        table_text = self._binding_table(ex, [k for k, _ in chain.slots])
        table = _table_entries(ex, {k for k, _ in chain.slots})
        # A dealloca of the chain's own alloca reads ALLOCATED; TRANSIENT where nothing
        # reads that buffer after the call (its result is `_`: the runtime may run the
        # dispatches on a scratch buffer, see fused.TRANSIENT)
        allocated = ""
        if chain.dealloca_of >= 0:
            dead_after = chain.targets[chain.dealloca_of] < 0
            allocated = self.use("fused", "TRANSIENT" if dead_after else "ALLOCATED")
        create_of = {id(ops[k + 1]): ops[k] for k in range(len(ops) - 1)}  # op -> its fence.create
        wait = reg(chain.allocas[0]["operands"][2])  # (a chain has at least one alloca)
        args = [(ex[0], "device"), (wait, "wait fence")]
        allocas = ""
        for k, al in enumerate(chain.allocas):
            a = [reg(r) for r in al["operands"]]
            flags = reg(create_of[id(al)]["operands"][1])
            allocas += f"({flags}, {a[1]}, {a[4]}, {a[5]}, {a[6]}, {a[7]}, {a[8]}),  # queue.alloca {k}\n"
        args.append((f"(\n{allocas})", "the queue.allocas"))
        if chain.join is not None:
            args.append((reg(chain.join["operands"][0]), "flags (fence.join)"))
        else:
            args.append(("None", "no fence.join"))
        args += [
            (reg(create_of[id(chain.execute)]["operands"][1]), "flags (fence.create)"),
            (ex[1], "affinity (queue.execute.indirect)"),
            (ex[4], "command buffer"),
            (ex[5], "flags"),
            (table_text, "binding table"),
            (_tuple(f"({k}, {j})" for k, j in chain.slots), "(table entry, queue.alloca) of each ALLOCATED"),
        ]
        if chain.dealloca is not None:
            d = [reg(r) for r in chain.dealloca["operands"]]
            buffer = allocated if chain.dealloca_of >= 0 else d[4]
            if chain.targets[-1] < 0:  # it signals an outside fence
                flags, signal = "None", d[3]
            else:
                flags, signal = reg(create_of[id(chain.dealloca)]["operands"][1]), "None"
            args.append((f"({flags}, {d[1]}, {buffer}, {d[5]}, {chain.dealloca_of}, {signal})", "queue.dealloca"))
        else:
            args.append(("None", "no queue.dealloca"))
        call = f"{local}(\n" + "".join(f"{a},  # {label}\n" for a, label in args) + ")"
        provs = [self.provenance(fn, op) for op in ops]
        names = ", ".join(p.callee.removeprefix("hal.") for p in provs)
        reads = frozenset(n for a, _ in args for n in _REGISTER.findall(a))
        targets = tuple(f"r{t}" if t >= 0 else "_" for t in chain.targets)
        legend = "queue.alloca: (fence flags, affinity, pool, memory types, usage, size, flags)"
        if chain.dealloca is not None:
            legend += "; queue.dealloca: (fence flags, affinity, buffer, flags, of queue.alloca or -1, outside signal fence)"
        stmts: list[Stmt] = [
            Comment(provs[0], f"fused: {names}"),
            Comment(provs[0], legend),
            ChainCall(self.provenance(fn, chain.execute), targets, call, reads,
                      args=tuple(args), table=table),
        ]
        released: list[str] = []
        for op, prov in zip(ops, provs):
            for r in self.moves_after(op, prov, frozenset(), dead(op)):
                released += r.names
        released += [f"r{r}" for r in chain.private]
        released = [r for r in dict.fromkeys(released) if r not in targets]
        if released:
            stmts.append(Release(provs[-1], released))
        return stmts

    def lower_argument(self, fn: Function, group, dead) -> list[Stmt]:
        """One argument's checks (analyses/arguments.py) as one call of the context's
        `check_argument` helper (runtime_support/hal/fused.py), which returns the buffer
        (and the allocator, when the device.allocator call is among the ops). The rodata
        moves and integer ops between go first: they cannot fail and nothing else in the
        group touches their registers (analyses/arguments.py)."""
        kind = group.kind
        local = self._fused_local(kind)
        reg = self.reg
        a = [reg(r) for r in group.view_assert["operands"]]
        c = [reg(r) for r in group.buffer_assert["operands"]]
        args = [a[0], a[1], a[2], a[3], _tuple(a[4:])]  # (the shape: a tuple, see fused.py)
        targets = [reg(group.view_buffer["results"][0])]
        if group.allocator is not None:
            args.append(reg(group.allocator["operands"][0]))
            targets.append(reg(group.allocator["results"][0]))
        else:
            args.append(c[2])
        args += [c[1], c[3], c[4], c[5]]
        stmts: list[Stmt] = []
        if group.snapshot:  # (the scalars write a shape register: read it first)
            provs = self.provenance(fn, group.view_assert)
            stmts.append(Assign(provs, (SHAPE,), args[4], frozenset(_REGISTER.findall(args[4]))))
            args[4] = SHAPE
        for op in group.scalars + group.rodata:
            stmts += self.lower_op(fn, op, frozenset(), dead(op))
        moved = group.scalars + group.rodata
        calls = [o for o in group.ops if all(o is not m for m in moved)]
        provs = [self.provenance(fn, op) for op in calls]
        names = ", ".join(p.callee.removeprefix("hal.") for p in provs)
        stmts.append(Comment(provs[0], f"fused: {names}"))
        reads = frozenset(n for x in args for n in _REGISTER.findall(x)) | ({SHAPE} if group.snapshot else set())
        stmts.append(Assign(provs[0], tuple(targets), f"{local}({', '.join(args)})", reads))
        released: list[str] = []
        for op, prov in zip(calls, provs):
            for r in self.moves_after(op, prov, frozenset(), dead(op)):
                released += r.names
        released = [r for r in dict.fromkeys(released) if r not in targets]
        released += [SHAPE] if group.snapshot else []
        if released:
            stmts.append(Release(provs[-1], released))
        return stmts

    # -- one-shot command buffers (analyses/one_shots.py) --------------------------------
    def lower_one_shot_step(self, fn: Function, group, kind: str, ops, dead) -> list[Stmt]:
        """One step of a one-shot group where its call was: its operands as a tuple
        appended to `recording` (the group's first step makes the list), the command
        buffer left out, `LOOKED_UP` and `ALLOCATED` where the group's markers say (see
        runtime_support/hal/one_shot.py). The refs the call writes are released there
        (the helper makes their values), those it read last after it."""
        reg = self.reg
        one = lambda name: self.use("one_shot", name)  # noqa: E731
        op = ops[-1]
        o = [reg(r) for r in op["operands"]]
        if kind == "alloca":
            items = [one("ALLOCA"), reg(ops[0]["operands"][1]), o[1], o[2], *o[4:9]]
        elif kind == "create":
            items = [one("CREATE"), *o[1:5]]
        elif kind == "lookup":
            items = [one("LOOKUP"), o[0], o[1]]
        elif kind == "join":
            items = [one("JOIN"), o[0]]
        elif kind == "barrier":
            items = [one("BARRIER"), *o[1:]]
        elif kind in ("copy", "fill"):
            for p, marker in group.markers[op.pc].items():
                o[p] = self._new_buffer(marker)
            items = [one(kind.upper()), *o[1:]]
        elif kind == "dispatch":
            for p, marker in group.markers[op.pc].items():
                o[p] = one("LOOKED_UP") if marker == "LOOKED_UP" else self._new_buffer(marker)
            constants, count = op["segment_sizes"][-2:]
            base = 7 + constants
            bindings = [_tuple(o[base + 5 * b : base + 5 * b + 5]) for b in range(count)]
            items = [one("DISPATCH"), *o[1:7], _tuple(o[7:base]), _tuple(bindings)]
        elif kind == "call":  # the ending's last op: the helper's call
            return self._one_shot_call(fn, group, dead)
        elif kind == "ending":  # (the ending's other ops: part of the call)
            return []
        else:  # finalize: the helper finalizes after the last step
            items = None
        provs = [self.provenance(fn, x) for x in ops]
        stmts: list[Stmt] = []
        if items is not None:
            step = _tuple(items)
            reads = frozenset(n for x in items for n in _REGISTER.findall(x))
            if group.steps[0][1][0] is ops[0]:
                stmts.append(Assign(provs[-1], (RECORDING,), f"[{step}]", reads))
            else:
                stmts.append(Call(provs[-1], f"{RECORDING}.append({step})", reads | {RECORDING}))
        released = [reg(r) for x in ops for r in x.writes() if r.is_ref]
        for x, prov in zip(ops, provs):
            for r in self.moves_after(x, prov, frozenset(), dead(x)):
                released += r.names
        released = list(dict.fromkeys(released))
        if released:
            stmts.append(Release(provs[-1], released))
        return stmts

    def _new_buffer(self, k: int) -> str:
        """The marker of the buffer of a one-shot group's alloca `k` (`ALLOCATED`,
        `ALLOCATED_1`, ...: runtime_support/hal/one_shot.py's NEW_BUFFERS)."""
        return self.use("fused", "ALLOCATED") if k == 0 else self.use("one_shot", f"ALLOCATED_{k}")

    def _one_shot_call(self, fn: Function, group, dead) -> list[Stmt]:
        """A one-shot group's ending (analyses/one_shots.Ending) as one call of its call
        site's helper (runtime_support/hal/one_shot.py) on the steps recorded above:
        `one_shot` where the ending awaits its last fence (it returns the await's
        status, and the fence where code after reads it: `keep`), `one_shot_signal`
        where that fence is from outside (left as the queue would) or a new one the
        block does not await (NEW_FENCE: the call makes it and returns it). It assigns
        each new buffer and each lookup's result the group keeps (`_`: left alone)."""
        ending, reg = group.ending, self.reg
        execute = ending.execute
        kind = "one_shot" if ending.awaited is not None else "one_shot_signal"
        local = self._fused_local(kind, "one_shot", f"{fn.ordinal}:{execute.pc}")
        ex = [reg(r) for r in execute["operands"]]
        if group.allocas:
            whose = "the queue.alloca's" if len(group.allocas) == 1 else "the queue.allocas' (joined)"
            wait = (self.use("one_shot", "ALLOCA_FENCE"), f"wait fence: {whose}")
        else:
            wait = (ex[2], "wait fence")
        targets = tuple("_" if t is None else reg(t) for t in group.targets)
        tail = []
        if ending.dealloca is not None:
            d = [reg(r) for r in ending.dealloca["operands"]]
            freed = d[4] if group.tail_buffer is None else self._new_buffer(group.tail_buffer)
            create = ending.dealloca_create if ending.awaited is not None else ending.signal_create
            fence_flags = reg(create["operands"][1])
            tail = [(_tuple([fence_flags, d[1], freed, d[5]]),
                     "queue.dealloca after it: new fence's flags, affinity, buffer, flags")]
        if ending.awaited is not None:
            term = ending.awaited
            timeout, await_flags = (reg(r) for r in term["operands"][:2])
            args = [
                (reg(ending.signal_create["operands"][1]), "flags (fence.create)"),
                (ex[1], "affinity (queue.execute)"),
                wait,
                (ex[5], "flags"),
                (timeout, "timeout (fence.await)"),
                (await_flags, "flags"),
                *tail,
            ]
            if ending.kept:  # (read after the await: the call returns it before the status)
                if not tail:
                    args.append(("None", "no queue.dealloca"))
                args.append(("True", "keep: the awaited fence comes back too"))
                targets += (reg(term["operands"][2]),)
            targets += (reg(term["results"][0]),)
        elif ending.carried:  # a new last fence, made and returned by the call
            last = ending.dealloca_create if ending.dealloca is not None else ending.signal_create
            new_fence = self.use("one_shot", "NEW_FENCE")
            args = [(ex[1], "affinity (queue.execute)"), wait,
                    (new_fence, "signal fence: a new one, returned"), (ex[5], "flags"),
                    *(tail or [("None", "no queue.dealloca")]),
                    (reg(last["operands"][1]), "flags (fence.create of the new fence)")]
            targets += (reg(last["results"][0]),)
        else:
            signal = ex[3] if ending.dealloca is None else reg(ending.dealloca["operands"][3])
            args = [(ex[1], "affinity (queue.execute)"), wait, (signal, "signal fence"),
                    (ex[5], "flags"), *tail]
        args = [(ex[0], "device"), (RECORDING, "the steps recorded above"), *args]
        call = f"{local}(\n" + "".join(f"{a},  # {label}\n" for a, label in args) + ")"
        ops = ending.ops
        provs = [self.provenance(fn, x) for x in (group.steps[-1][1][0], *ops)]
        names = ", ".join(p.callee.removeprefix("hal.") for p in provs)
        reads = frozenset(n for a, _ in args for n in _REGISTER.findall(a)) | {RECORDING}
        stmts: list[Stmt] = [Comment(provs[0], f"fused: the steps recorded above, {names}")]
        where = provs[1 + ops.index(execute)]  # (the call carries the execute's provenance)
        if all(t == "_" for t in targets):
            stmts.append(Call(where, call, reads))
        else:
            stmts.append(Assign(where, targets, call, reads, unpack=True))  # (a tuple, always)
        # The ops' last reads, the new fences, and the steps' list.
        released: list[str] = []
        for op, prov in zip(ops, provs[1:]):
            last = dead(op) if op.spec.emit != "call_yield" else frozenset()  # (not the await)
            for r in self.moves_after(op, prov, frozenset(), last):
                released += r.names
        released += [reg(op["results"][0]) for op in ending.new_fences]
        released = [r for r in dict.fromkeys(released) if r not in targets]
        stmts.append(Release(provs[-1], [*released, RECORDING]))
        return stmts

    def lower_one_shot(self, fn: Function, group, dead, index_of: dict[int, int]) -> Terminator:
        """A one-shot group whose ending awaits in the block's terminator: its call."""
        stmts = self._one_shot_call(fn, group, dead)
        return Terminator(stmts[-1].prov, stmts, None, self._edges(group.ending.awaited, index_of, [None]))

    # -- control flow -----------------------------------------------------------------
    def lower_remap(self, pairs, kinds, prov: Provenance | None) -> list[Stmt]:
        """Sequential slot copies, as the VM does them; i64 halves travel with the low slot."""
        out: list[Stmt] = []
        kinds = dict(kinds)  # copies are sequential: a later pair may read an earlier dst
        for src, dst in pairs:
            if src.is_ref:
                if src.ordinal == dst.ordinal:
                    continue
                s, d = f"r{src.ordinal}", f"r{dst.ordinal}"
                out.append(Assign(prov, (d,), s, frozenset((s,))))
                if src.move:
                    out.append(Release(prov, [s]))
                continue
            kind = kinds.get(src.ordinal)
            # A source no path wrote (kind None) is still copied: it reads the zero its
            # function starts it at (FunctionEmitter.int_init), as IREE's zeroed registers.
            if kind == HIGH or src.ordinal == dst.ordinal:
                continue
            kinds[dst.ordinal] = kind
            s, d = f"i{src.ordinal}", f"i{dst.ordinal}"
            out.append(Assign(prov, (d,), s, frozenset((s,))))
        return out

    def lower_terminator(self, fn: Function, term: Op, index_of: dict[int, int]) -> Terminator:
        prov = self.provenance(fn, term)
        emit = getattr(self, f"_end_{term.spec.emit}", None)
        if emit is None or not term.spec.is_terminator:
            raise NotImplementedError(f"terminator vm.{term.mnemonic}")
        return emit(fn, term, prov, index_of)

    # One per terminator `emit` kind of the ISA table; edges in `Op.edges()` order.
    def _edges(self, term: Op, index_of: dict[int, int], tests: list[str | None]) -> list[Edge]:
        return [Edge(t, index_of[pc], pairs) for t, (pc, pairs) in zip(tests, term.edges())]

    def _end_return(self, fn, term, prov, index_of) -> Terminator:
        return Terminator(prov, [], [Return(prov, tuple(self.reg(r) for r in term["operands"]))], [])

    def _end_fail(self, fn, term, prov, index_of) -> Terminator:
        return Terminator(prov, [], [self._raise(fn, term, prov)], [])

    def _end_branch(self, fn, term, prov, index_of) -> Terminator:
        return Terminator(prov, [], None, self._edges(term, index_of, [None]))

    def _end_cond_br(self, fn, term, prov, index_of) -> Terminator:
        return Terminator(prov, [], None, self._edges(term, index_of, [self.field_text(term, "condition"), None]))

    def _end_br_table(self, fn, term, prov, index_of) -> Terminator:
        # Op.edges(): the default first, then the cases; the default is the final `else`.
        idx = self.field_text(term, "index")
        default, *cases = self._edges(term, index_of, [None] + [f"{idx} == {i}" for i in range(len(term["cases"]))])
        return Terminator(prov, [], None, cases + [default])

    def _end_call_yield(self, fn, term, prov, index_of) -> Terminator:
        pre = self._call(term, prov) + self.moves_after(term, prov)
        return Terminator(prov, pre, None, self._edges(term, index_of, [None]))


__all__ = ["Edge", "OpRenderer", "Terminator", "helper_name"]


def _tuple(items) -> str:
    """A tuple literal without a trailing comma where Python needs none (black keeps it
    on one line)."""
    items = list(items)
    return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"
