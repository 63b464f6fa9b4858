"""A program compiled for a CPU and a GPU (issue 29) on `load(device=["local", "cuda"])`:
its CPU part on the CPU, its GPU part on the CUDA driver test double
(tests/support/cuda_driver_double.py), the exact driver call log as a golden
(tests/golden/cuda/<case>.log; `pytest --update-golden` rewrites it).

IREE 3.13 compiles a transfer between a CPU and a GPU only with a topology saying how the
two reach each other's memory; with transparent access it allocates one buffer both
devices use (hal.allocator.select over both, then DEVICE_LOCAL | HOST_VISIBLE memory):
managed memory of the cuda device, which the CPU kernels read and write at the same
address the GPU kernels get. The double runs no kernel, so the GPU kernel is given a host
model here; the result is then compared with iree-run-module running the CPU-only
equivalent (the same program on two local devices).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import types
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from cuda_driver_double import PyCudaDriverDouble
from test_cuda_device import _check_golden
from differential import load_package
from translator.codegen import write_package
from translator.reader import read_module_file

HAVE_IREE = shutil.which("iree-run-module") is not None
pytestmark = pytest.mark.skipif(not HAVE_IREE, reason="needs iree-base-runtime's iree-run-module")

PIPELINE = """
func.func public @pipeline(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %arg0, %arg0 : tensor<4xf32>
  %1 = flow.tensor.transfer %0 : tensor<4xf32> to #hal.device.promise<@gpu>
  %2 = arith.addf %1, %1 : tensor<4xf32>
  %3 = flow.tensor.transfer %2 : tensor<4xf32> to #hal.device.promise<@cpu>
  %4 = arith.subf %3, %arg0 : tensor<4xf32>
  return %4 : tensor<4xf32>
}
"""
HETEROGENEOUS = (
    "module attributes {stream.topology = #hal.device.topology<links = ["
    "(@cpu -> @gpu = {transparent_access = true}), "
    "(@gpu -> @cpu = {transparent_access = true})]>} {\n" + PIPELINE + "}\n"
)
CPU_AND_GPU = (
    "--iree-hal-target-device=cpu=local",
    "--iree-hal-target-device=gpu=cuda",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
    "--iree-cuda-target=sm_80",
)
CPU_ONLY = (
    "--iree-hal-target-device=cpu=local[0]",
    "--iree-hal-target-device=gpu=local[1]",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
)
GPU_KERNEL = "pipeline_dispatch_1_elementwise_4_f32"


def _add_to_itself(double, args):
    """Host model of the GPU kernel (`%1 + %1` over 4 f32): out = in + in."""
    source, target = args
    value = np.frombuffer(double.read(source, 16), np.float32)
    double.write(target, (value + value).tobytes())


@pytest.fixture
def pycuda_double(monkeypatch):
    double = PyCudaDriverDouble()
    package = types.ModuleType("pycuda")
    package.driver = double
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", double)
    return double


@pytest.fixture(scope="module")
def programs(compile_mlir, tmp_path_factory):
    """(heterogeneous package dir, its vmfb, the CPU-only equivalent's vmfb)."""
    root = tmp_path_factory.mktemp("cpu_gpu")
    het, cpu = root / "cpu_gpu.mlir", root / "cpu_only.mlir"
    het.write_text(HETEROGENEOUS)
    cpu.write_text(PIPELINE)
    het_vmfb, cpu_vmfb = compile_mlir(het, CPU_AND_GPU), compile_mlir(cpu, CPU_ONLY)
    write_package(read_module_file(het_vmfb), root / "out", "cpu_gpu", format_code=False)
    return root / "out" / "cpu_gpu", het_vmfb, cpu_vmfb


def _iree_cpu_only(vmfb, *args):
    p = subprocess.run(
        ["iree-run-module", f"--module={vmfb}", "--device=local-task", "--device=local-task", *args],
        capture_output=True, text=True, timeout=120,
    )
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_cpu_and_gpu_parts_share_managed_memory(programs, pycuda_double, update_golden):
    pkg, _, cpu_vmfb = programs
    pycuda_double.kernel_models[GPU_KERNEL] = _add_to_itself
    ctx = load_package(pkg).load(device=["local", "cuda"])
    x = np.array([1, 2, 3, 4], np.float32)
    y = ctx.pipeline(x)
    # The GPU kernel got the CPU kernel's output where the CPU wrote it: managed memory,
    # no upload or download between the devices.
    (launch,) = [c for c in pycuda_double.calls if c[0] == "launch"]
    source, target = launch[6]
    assert source in pycuda_double.managed and target in pycuda_double.managed
    assert np.frombuffer(pycuda_double.read(source, 16), np.float32).tolist() == (x * x).tolist()
    assert not [c for c in pycuda_double.calls if c[0].startswith(("memcpy", "mem_alloc"))]
    # Same values as IREE running the CPU-only equivalent.
    ref = _iree_cpu_only(cpu_vmfb, "--function=pipeline", "--input=4xf32=1 2 3 4")
    assert ref.endswith("4xf32=1 6 15 28\n") and y.tolist() == [1, 6, 15, 28]
    ctx.pipeline(x)  # again: the same calls, new managed buffers
    _check_golden(pycuda_double.log_lines(), "cpu_gpu_pipeline", update_golden)


def test_pyree_run_local_and_cuda_same_as_iree_cpu_only(programs, pycuda_double):
    from runtime_support.tools.run_cli import main as run_main

    pkg, _, cpu_vmfb = programs
    pycuda_double.kernel_models[GPU_KERNEL] = _add_to_itself
    args = ["--function=pipeline", "--input=4xf32=1 2 3 4"]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = run_main([str(pkg), "--device=local", "--device=cuda", *args])
    assert rc == 0, err.getvalue()
    assert out.getvalue() == _iree_cpu_only(cpu_vmfb, *args)


def test_cpu_and_gpu_program_given_only_a_cpu_fails_as_iree_run_module(programs):
    """The CPU+GPU program run with only a local device: IREE's own line (the missing
    device `gpu` and its target), not pyree's explanation for a module whose only device
    cannot run here."""
    from runtime_support.tools.run_cli import main as run_main

    pkg, het_vmfb, _ = programs
    args = ["--device=local-task", "--function=pipeline", "--input=4xf32=1 2 3 4"]
    expected = subprocess.run(
        ["iree-run-module", f"--module={het_vmfb}", *args], capture_output=True, text=True, timeout=120
    )
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = run_main([str(pkg), *args])
    assert expected.returncode == rc == 1
    assert "HAL device `gpu` not found or unavailable" in err.getvalue()
    assert (out.getvalue(), err.getvalue()) == (expected.stdout, expected.stderr)


def test_allocator_select_picks_memory_every_device_reaches():
    """Local devices share host memory; a cuda device's managed memory is reached by
    local devices too; two GPUs here share nothing: one UNIMPLEMENTED line."""
    from runtime_support.cuda.device import CudaDevice
    from runtime_support.errors import StatusCode, VMError
    from runtime_support.hal.device import LocalDevice
    from runtime_support.hal.module import HalModule

    double = PyCudaDriverDouble(devices=2)
    cpu0, cpu1 = LocalDevice("local-sync"), LocalDevice("local-sync")
    gpu0, gpu1 = CudaDevice(double, 0), CudaDevice(double, 1)
    hal = HalModule([cpu0, cpu1, gpu0, gpu1])
    assert hal.allocator_select(0x32, 0xC03, 0, [(cpu0, 1), (cpu1, 2)]) == (cpu0, 1)
    assert hal.allocator_select(0x32, 0xC03, 0, [(cpu0, 1), (gpu0, 2)]) == (gpu0, 2)
    assert hal.allocator_select(0x32, 0xC03, 0, [(gpu0, 2), (cpu0, 1), (cpu1, 4)]) == (gpu0, 2)
    with pytest.raises(VMError) as e:
        hal.allocator_select(0x32, 0xC03, 0, [(gpu0, 1), (gpu1, 2)])
    assert e.value.code == StatusCode.UNIMPLEMENTED and "\n" not in str(e.value)


def test_managed_buffer_host_access_waits_for_the_stream():
    """Work the cuda device issues goes on its stream; the host touches managed memory
    directly, after the stream's pending work."""
    from runtime_support.cuda.device import CudaDevice
    from runtime_support.cuda.memory import ManagedBuffer

    double = PyCudaDriverDouble()
    gpu = CudaDevice(double, 0)
    buffer = gpu.allocator.allocate(0x32, 0xC03, 16)
    assert isinstance(buffer, ManagedBuffer) and buffer.address == double.managed[0]
    with gpu.active():  # as the cuda queue runs a fill
        buffer.fill(0, 16, 0x01020304, 4)
    mark = len(double.calls)
    assert buffer.read(0, 4) == bytes([4, 3, 2, 1])  # the host read waited first
    assert double.log_lines()[mark:] == [
        "Context.push 0", "event.record event0 stream0", "event.synchronize event0", "Context.pop 0"]
    buffer.fill(4, 4, 0xFF, 1)  # a host fill (a CPU queue's): direct, no driver call
    assert len(double.calls) == mark + 4 and buffer.read(4, 4) == b"\xff" * 4
    assert gpu.allocator.allocate(0x30, 0xC03, 16).__class__.__name__ == "CudaBuffer"
