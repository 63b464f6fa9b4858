"""A queue program's private fences and their states (docs/design/host-path.md §5.2).

A fence the program makes (`FenceCreate`, `FenceJoin`) and does not return is seen by its
own steps alone: the fast path (fast.py, fast_steps.py, shapes.py) keeps it as a state in
the values list (`PENDING`, `DONE`, or a `FenceState` holding an error) instead of a Fence
object, and gives a step that goes through its import real fences in the same states
(`materialised`). Apart from the steps' ops so that every module of the fast path reads
the same states.
"""

from __future__ import annotations

from ..hal.fence import REACHED, Fence
from .steps import FenceCreate, FenceJoin


def made_fences(program) -> set[str]:
    """The fences the program makes (creations and joins)."""
    return {
        step.out for step in program.steps
        if type(step) in (FenceCreate, FenceJoin) and isinstance(step.out, str)
    }


class FenceState:
    """A private fence's state, in place of a Fence object nobody else can see."""

    __slots__ = ("error",)

    def __init__(self, error=None) -> None:
        self.error = error

    def fence(self) -> Fence:
        """A real fence in this state (for a step that goes through its import)."""
        if self is DONE:
            return Fence.reached()
        fence = Fence()
        if self is not PENDING:
            fence.fail(self.error)
        return fence


PENDING = FenceState()  # made, not yet signaled
DONE = FenceState()  # reached


def ready(fence) -> bool:
    """Whether a wait on `fence` (None, a private state or a Fence) is over now."""
    return (
        fence is None
        or fence is DONE
        or (type(fence) is Fence and (fence.state == REACHED or fence.reached_now()))
    )


def private_fences(program) -> set[str]:
    """The fences the program makes and does not return: no one else can see them."""
    return made_fences(program) - set(program.outputs)


def materialised(op, reads: tuple):
    """`op` (a step through its import) after the private fences it reads get real
    Fence objects in their states."""
    if not reads:
        return op

    def run(env) -> None:
        for slot in reads:
            value = env[slot]
            if type(value) is FenceState:
                env[slot] = value.fence()
        op(env)

    return run


__all__ = [
    "DONE", "PENDING", "FenceState", "made_fences", "materialised", "private_fences", "ready",
]
