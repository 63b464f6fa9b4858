"""One rank of the cuda collectives test (tests/cuda/test_cuda_collectives.py runs it under
mpiexec, or alone as one rank): a translated sharded program on device="cuda", with
pycuda replaced by the CUDA driver double and libnccl by the NCCL double. Prints one JSON
object: {"rank", "results", "nccl_log", "errors"}.

    python tests/support/cuda_collectives_worker.py PACKAGES_DIR NAME
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

from cuda_driver_double import PyCudaDriverDouble  # noqa: E402
from nccl_double import NcclDouble  # noqa: E402
from runtime_support.cuda import nccl  # noqa: E402
from runtime_support.hal.channel import world_communicator  # noqa: E402


def main() -> int:
    packages, name = sys.argv[1], sys.argv[2]
    driver = PyCudaDriverDouble()
    pycuda = types.ModuleType("pycuda")
    pycuda.driver = driver
    sys.modules["pycuda"], sys.modules["pycuda.driver"] = pycuda, driver
    world = world_communicator()
    double = NcclDouble(driver, world)
    nccl.load_library = lambda: double
    nccl.reset()
    sys.path.insert(0, packages)
    pkg = __import__(name)
    rank = world.Get_rank() if world is not None else 0
    ctx = pkg.load(device="cuda")
    results = {}
    try:
        results["all_reduce_sum"] = ctx.all_reduce_sum(np.arange(4, dtype=np.float32) + 10 * rank).tolist()
        results["all_gather"] = ctx.all_gather(np.arange(2, dtype=np.int32) + 10 * rank).tolist()
        results["reduce_scatter"] = ctx.reduce_scatter(np.arange(4, dtype=np.float32) * (rank + 1)).tolist()
    except Exception as e:  # noqa: BLE001 - reported with the double's view of it
        results["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps({"rank": rank, "results": results, "nccl_log": double.log_lines(), "errors": double.errors}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
