"""Native code the CPU loaders run: LLVM IR shipped beside these modules (*.ll),
JIT-compiled once per process with llvmlite.

    pyree_run_tiles   one worker's walk over a range of workgroup tiles (FTZ/DAZ held)
    pyree_run_grid    a whole grid: inline on the caller, or split with the worker pool
    pyree_run_plan    a whole recorded command buffer (exec/plan.py builds the records);
                      each grid runs inline or on the pool, whichever its measured times
                      say is faster (see the dispatch records)
    pyree_run_{grid,plan}_args  the same, called with one block of i64 arguments
    pyree_check_table  a plan's per-slot binding-table checks (exec/plan.py Plan.run): the
                      entries checked, their (address, length) written, or a decline code
    pyree_check_run_plan  the checks, then the plan: Plan.run's one foreign call
    pyree_run_plan_steps  a host loop's replayed steps of one plan (exec/loops.py):
                      per step, its new buffers zeroed, its table written, the plan run
    pyree_run_loop    a loop call's iterations (exec/native_loops.py): an op table over
                      a register file, the plan run per iteration, until the test fails
    pyree_worker      the body of a pool thread (started with pthread_create via ctypes)
    pyree_import_thunk  how kernels call host imports

layout.py   every offset, word index and code the IR and Python share (one table)
jit.py      the IR units joined and filled, compiled, cached on disk: native_runtime()
pool.py     the worker pool (WorkerPool, worker_pool, current_pool) and its placement
"""
