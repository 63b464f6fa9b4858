"""Host loops of one queue chain: the chain runs once per iteration inside the runtime.

IREE keeps a loop on the host when its body needs the device between iterations
(`scf.while`/`scf.for` around dispatches). Each iteration of such a loop lowers to one
fused queue chain (ops.py `lower_chain`: allocas, one execute, a dealloca) plus the
integer arithmetic of the induction variable and the exit test:

    while True:
        r6, _, r0 = submit_chain(r3, r1, ..., [(r0, ...), (r5, ...), ...], ...)
        r1 = None
        i0 = add_i32(i0, i5)
        i4 = int(i0 < i6)
        if i4:
            r1 = r0  # the next iteration waits on this one's fence ...
            r0 = r6  # ... and reads the buffer it wrote
            continue
        ...  # the exit: reads r6 and r0

This pass writes such a loop as

    loop_0 = ChainLoop(submit_chain, (r3, r1, ..., [(r0, ...), ...], ...), CARRIED)
    while True:
        loop_0.step()
        r1 = None
        ...
        if i4:
            continue
        r6, _, r0 = loop_0.results()
        ...

where `ChainLoop` (runtime_support/hal/chain_loop.py) makes each step's call with the
registers the moves would have carried (the last step's buffers and fence), or runs the
steps as replays of one native plan on buffers it owns. The moves are gone because
nothing but the next step reads what they carried; the exit gets the last step's results
and then what the ref statements after the chain did.

Two shapes: the chain before the `if` (scf.while, as above: the test after the body), or
inside it (scf.for: the test first, `if i8: chain ...; continue`); there an exit can come
before any step, so the exit's results are behind `if loop_0.steps:`.

The loop is rewritten only where that is the same program:
- the loop body is flat (comments, releases, integer assignments, register moves and
  exactly one chain call) up to one `if TEST:` whose body is flat too and ends in
  `continue`, then the exit, which never continues (integer moves stay; the ref moves
  after the chain go);
- the integer assignments are the VM's own ops (no imports, no calls) and read and write
  integer registers only;
- no ref move comes before the chain (it could read a ref the steps no longer assign),
  and in the test-first shape nothing before the `if` touches a ref;
- every operand of the chain is a register the loop body never writes, or one the moves
  carry to the next iteration from the chain's own results: the wait fence from its fence,
  a table buffer from one of its allocas;
- at an exit after the chain, every register a move in the `if` wrote is set again by
  the chain's results or the statements re-applied there.
"""

from __future__ import annotations

import re

from translator.codegen.stmt import (
    Assign,
    Call,
    ChainCall,
    Comment,
    Continue,
    If,
    Release,
    Stmt,
    While,
)

_REGISTER = re.compile(r"\b[ri]\d+\b")
_REF = re.compile(r"r\d+")
# ChainCall.args positions (ops.py lower_chain)
WAIT, TABLE = 1, 8


class LoopTable:
    """The loops rewritten in one module: the runtime class the generated code names."""

    def __init__(self, use) -> None:
        self.use = use  # OpRenderer.use: records a helper import
        self.count = 0

    def rewrite(self, body: list[Stmt]) -> list[Stmt]:
        """`body` with each loop that qualifies rewritten (nested bodies included)."""
        out: list[Stmt] = []
        for s in body:
            if isinstance(s, If):
                s.body = self.rewrite(s.body)
                s.orelse = self.rewrite(s.orelse)
            elif isinstance(s, While):
                s.body = self.rewrite(s.body)
                found = _match(s)
                if found is not None:
                    out += self._emit(s, found)
                    continue
            out.append(s)
        return out

    def _emit(self, loop: While, found: "_Found") -> list[Stmt]:
        """The creation statement before `loop` and the rewritten loop."""
        chain = found.chain
        name = f"loop_{self.count}"
        self.count += 1
        cls = self.use("fused", "ChainLoop")
        helper = chain.value.split("(", 1)[0]
        args = "".join(f"{text},  # {label}\n" for text, label in chain.args)
        carry = "(" + "".join(f"({e}, {j}), " for e, j in found.carried) + ")"
        create = Assign(
            chain.prov,
            (name,),
            f"{cls}(\n{helper},\n(\n{args}),  # the first step's arguments\n"
            f"{carry},  # (table entry, queue.alloca) each step reads from the last one\n"
            f"{found.wait_carried},  # whether each step waits on the last one's fence\n)",
            chain.reads,
        )
        # In the loop: the chain is a step, and the ref moves after it go (the next step
        # reads what they carried from the loop object); releases and integers stay.
        holder = found.holder  # the flat list holding the chain: the loop's or the if's
        k = holder.index(chain)
        first = k  # (the chain's own comments go with its arguments, before the loop)
        while first > 0 and isinstance(holder[first - 1], Comment):
            first -= 1
        moved = [s for s in found.after if _is_ref_move(s)]
        tail = [s for s in found.exit_tail if _is_ref_move(s) or isinstance(s, Release)]
        comments = holder[first:k]
        holder[first : k + 1] = [
            Comment(chain.prov, f"one iteration's chain: a step of {name}"),
            Call(chain.prov, f"{name}.step()"),
        ]
        for container in (loop.body, found.test.body):
            container[:] = [s for s in container if not any(s is m for m in moved)]
        # At the exit: the last step's results where the chain left them, then what the
        # ref statements after it did (with copies: the loop keeps its releases).
        results = [Assign(chain.prov, chain.targets, f"{name}.results()")]
        results += [_copy(s) for s in tail]
        if found.guarded:  # (the exit before any step: the registers are as they came)
            results = [If(chain.prov, f"{name}.steps", results)]
        at = next(i for i, s in enumerate(loop.body) if s is found.test) + 1
        loop.body[at:at] = results
        return [*comments, create, loop]


class _Found:
    """What _match found (see there)."""

    def __init__(self, **kw) -> None:
        self.__dict__.update(kw)


def _is_ref_move(s: Stmt) -> bool:
    return type(s) is Assign and len(s.targets) == 1 and bool(_REF.fullmatch(s.value))


def _copy(s: Stmt) -> Stmt:
    if isinstance(s, Release):
        return Release(s.prov, list(s.names))
    return Assign(s.prov, s.targets, s.value, s.reads)


def _flat(stmts: list[Stmt]) -> bool:
    """Only comments, releases, the VM's own integer ops, ref/int moves and chain calls."""
    for s in stmts:
        if isinstance(s, (Comment, Release, ChainCall)):
            continue
        if type(s) is not Assign:
            return False
        if _is_ref_move(s) and _REF.fullmatch(s.targets[0]):
            continue
        if s.prov is None or s.prov.opcode.startswith("call"):
            return False  # (no imports, no calls: only integer arithmetic from here)
        if any(_REF.fullmatch(t) for t in s.targets) or any(_REF.fullmatch(r) for r in s.reads):
            return False
    return True


def _match(loop: While):
    """A `_Found` where `loop` qualifies (module docstring), else None.

    Two shapes: the chain before the `if` (`scf.while`: the test after the body), or in
    it (`scf.for`: the test first; then an exit may come before any step, and nothing
    before the `if` may touch a ref)."""
    body = loop.body
    at = [i for i, s in enumerate(body) if isinstance(s, If)]
    if not at:
        return None
    m = at[0]
    pre, test, post = body[:m], body[m], body[m + 1 :]
    if test.orelse or not test.body or not isinstance(test.body[-1], Continue):
        return None
    inner = test.body[:-1]
    if _continues(post) or not _flat(pre) or not _flat(inner):
        return None
    if not _REGISTER.fullmatch(test.test) or _REF.fullmatch(test.test):
        return None
    chains = [s for s in pre + inner if isinstance(s, ChainCall)]
    if len(chains) != 1:
        return None
    chain = chains[0]
    in_pre = any(s is chain for s in pre)
    if in_pre:
        k = next(i for i, s in enumerate(pre) if s is chain)
        before, after, exit_tail, holder = pre[:k], pre[k + 1 :] + inner, pre[k + 1 :], body
    else:
        if any(isinstance(s, Release) or _is_ref_move(s) for s in pre):
            return None
        k = next(i for i, s in enumerate(inner) if s is chain)
        before, after, exit_tail, holder = pre + inner[:k], inner[k + 1 :] + pre, inner[k + 1 :], test.body
    if any(_is_ref_move(s) for s in before):
        return None  # (it could read a ref the chain's steps no longer assign)
    if in_pre:
        # At an exit after the chain, a ref a move in the `if` wrote is what an earlier
        # iteration left: only where the chain or the exit's own statements set it
        # again is that the same without the move.
        exit_set = set(chain.targets)
        for s in exit_tail:
            exit_set.update(s.names if isinstance(s, Release) else s.targets)
        if any(_is_ref_move(s) and s.targets[0] not in exit_set for s in inner):
            return None
    # Registers the loop writes anywhere, and those written before the chain reads them.
    written = set()
    for s in pre + inner:
        if isinstance(s, Release):
            written.update(s.names)
        elif isinstance(s, Assign):
            written.update(t for t in s.targets if t != "_")
    early = set()
    for s in before:
        if isinstance(s, Release):
            early.update(s.names)
        elif isinstance(s, Assign):
            early.update(s.targets)
    # What each ref holds after the back-edge path from the chain: ("res", j) the
    # chain's result j, None (released), or its own name (from before the chain).
    state: dict[str, object] = {t: ("res", j) for j, t in enumerate(chain.targets) if t != "_"}
    for s in after:
        if isinstance(s, Release):
            for n in s.names:
                state[n] = None
        elif _is_ref_move(s):
            state[s.targets[0]] = state.get(s.value, s.value)
    fence = len(chain.targets) - 1

    def source(text: str):
        """For a chain operand: None (invariant), ("res", j) (carried), or False."""
        if text not in written:
            return None
        if text in early:
            return False
        v = state.get(text, text)
        return v if isinstance(v, tuple) else False

    wait_text = chain.args[WAIT][0]
    wait = source(wait_text) if _REF.fullmatch(wait_text) else None
    if wait is False or (wait is not None and wait != ("res", fence)):
        return None
    for pos, (text, _) in enumerate(chain.args):
        if pos not in (WAIT, TABLE) and set(_REGISTER.findall(text)) & written:
            return None
    carried = []
    for entry, (buffer, offset, length) in enumerate(chain.table):
        for text in (offset, length):
            if set(_REGISTER.findall(text)) & written:
                return None
        if buffer is None:
            continue
        v = source(buffer)
        if v is False or (v is not None and v[1] == fence):
            return None
        if v is not None:
            carried.append((entry, v[1]))
    if not carried and wait is None:
        return None  # (nothing carried: each step is independent; leave it)
    return _Found(chain=chain, test=test, holder=holder, after=after, exit_tail=exit_tail,
                  carried=tuple(carried), wait_carried=wait is not None, guarded=not in_pre)
def _continues(stmts: list[Stmt]) -> bool:
    """Whether `stmts` holds a `continue` of the enclosing loop (nested loops' own
    continues aside)."""
    for s in stmts:
        if isinstance(s, Continue):
            return True
        if isinstance(s, If) and (_continues(s.body) or _continues(s.orelse)):
            return True
    return False
