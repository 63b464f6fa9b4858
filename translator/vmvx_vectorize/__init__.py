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

The package's modules, in the order a kernel meets them: values.py (the symbolic values
and their affine forms), kernel.py (the walk: registers, control flow, loops as axes,
accesses), ops.py (each op's array form), guards.py (the dispatch-time checks),
assemble.py (the program's body); `vectorize` below runs the passes.
"""

from __future__ import annotations

from dataclasses import dataclass

from translator.ir import Function
from translator.vmvx_vectorize.assemble import assemble
from translator.vmvx_vectorize.guards import guards
from translator.vmvx_vectorize.kernel import Kernel
from translator.vmvx_vectorize.ops import apply
from translator.vmvx_vectorize.values import NotVectorizable, Retry

MAX_PASSES = 32


@dataclass
class Vectorized:
    name: str
    lines: list
    work: int | None = None  # logical iterations a workgroup (None: known at dispatch time)


def vectorize(fn: Function, name: str):
    """(Vectorized or None, reason): the kernel as a numpy program over its grid."""
    plan = {"seq": set(), "promote": {}, "noreduce": set()}
    for _ in range(MAX_PASSES):
        k = Kernel(fn, plan, apply)
        k.bindings_used, k.rodata_used = set(), set()
        try:
            k.run()
            checks = guards(k)
            for s in k.scratch:
                if s["kind"] == "f32":
                    k.lines[s["line"]] = k.lines[s["line"]].replace(" = 0  #", " = 0.0  #")
            if k.ndim == 3 and not k.varies:
                # (no array anywhere: the numpy program would run the scalar ops through
                # its array wrappers, slower than the scalar translation itself)
                return None, "nothing varies over the grid or a parallel loop"
            lines = assemble(k, checks)
        except Retry:
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


__all__ = ["NotVectorizable", "Vectorized", "vectorize"]
