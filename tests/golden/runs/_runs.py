# Golden 'runs': tensor_barrier_chain.mlir, one function. Covers: a run of awaited submissions as one call; its layout constant in _runs.py.
# Runs of submissions, one fused call each (runtime_support/hal/runs.py, Run). Per
# submission: indices into the call's scalars (fence flags, alloca affinity), its wait
# fence, then into the scalars (pool, memory types, usage, size, alloca flags, fence
# flags, execute affinity, execute flags, await timeout, await flags), then its binding
# table: (buffer, offset, length) with buffer k >= 0 the call's k-th buffer from before
# the run, -1 the buffer this submission allocates, -2 - j the one submission j did.
# A submission without an alloca has -1 in the alloca's places. Last: the submissions
# whose buffers the call returns.
RUN_0 = Run(
    (
        # submission 0 (pc 0x170)
        (0, 2, 0, 0, 3, 4, 1, 0, 0, 2, 0, 5, 0, ((0, 0, 1), (1, 0, 1), (-1, 0, 1))),
        # submission 1 (pc 0x214)
        (0, 2, 0, 0, 3, 4, 1, 0, 0, 2, 0, 5, 0, ((-2, 0, 1), (1, 0, 1), (-1, 0, 1))),
        # submission 2 (pc 0x334)
        (0, 2, 0, 0, 3, 4, 1, 0, 0, 2, 0, 5, 0, ((-3, 0, 1), (0, 0, 1), (-1, 0, 1))),
        # submission 3 (pc 0x3d8)
        (0, 2, 0, 0, 3, 4, 1, 0, 0, 2, 0, 5, 0, ((-4, 0, 1), (-1, 0, 1))),
    ),
    (1, 3),
)
