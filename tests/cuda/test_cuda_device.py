"""The `cuda` device end to end without a GPU: translated CUDA builds run on `device="cuda"`
with pycuda replaced by its test double (tests/support/cuda_driver_double.py).

The double runs no kernel, so outputs are not checked here (that is `python -m tests.gpu`
on a GPU machine). What is checked is what pyree hands the driver: the exact call
sequence, device addresses, parameter buffers (binding pointers with offsets, then
constants), grid/block/shared memory, memcpy/memset sizes and offsets, against golden
logs in tests/golden/cuda/<case>.log (`pytest --update-golden` rewrites them); that the
uploads hold the arguments' bytes at the pointers the kernel receives; and the one-line
errors for a missing pycuda, driver or GPU.
"""

from __future__ import annotations

import io
import sys
import types
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from cuda_driver_double import DriverDoubleError, PyCudaDriverDouble, _Function
from runtime_support.api.context import DeviceError
from runtime_support.cuda.device import CudaDevice, open_cuda_device
from runtime_support.errors import StatusCode, VMError
from test_cuda_executable import cuda_flags
from differential import load_package
from translator.codegen import write_package
from translator.reader import read_module_file

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "cuda"

TRANSFERS = """
// Transfers on the device: a splat (queue.fill), a concatenation (copy_buffer), a
// dynamic-shape add (push constants after the bindings).
func.func @splat(%n: index) -> tensor<?xi32> {
  %c = arith.constant 7 : i32
  %e = tensor.empty(%n) : tensor<?xi32>
  %f = linalg.fill ins(%c : i32) outs(%e : tensor<?xi32>) -> tensor<?xi32>
  return %f : tensor<?xi32>
}
func.func @concat(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<8xf32> {
  %0 = tensor.concat dim(0) %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func @add(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = arith.addf %a, %b : tensor<?xf32>
  return %0 : tensor<?xf32>
}
"""


@pytest.fixture
def pycuda_double(monkeypatch):
    """Installs a fresh PyCudaDriverDouble as `pycuda.driver`; returns it."""
    double = PyCudaDriverDouble()
    package = types.ModuleType("pycuda")
    package.driver = double
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", double)
    return double


@pytest.fixture
def no_pycuda(monkeypatch):
    """pycuda absent (None in sys.modules makes `import pycuda` raise ImportError)."""
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)


def _translate(compile_mlir, tmp_path, source: Path | str, name: str, flags=cuda_flags("sm_80")):
    if isinstance(source, str):
        path = tmp_path / f"{name}.mlir"
        path.write_text(source)
        source = path
    vmfb = compile_mlir(source, flags)
    out = tmp_path / "pkgs"
    write_package(read_module_file(vmfb), out, name, format_code=False)
    return load_package(out / name), vmfb


def _check_golden(lines: list[str], case: str, update: bool) -> None:
    path = GOLDEN / f"{case}.log"
    text = "\n".join(lines) + "\n"
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    assert path.is_file(), f"no golden log {path}; run pytest --update-golden"
    assert text == path.read_text(), f"driver calls differ from {path} (pytest --update-golden rewrites it)"


def _launches(double):
    return [c for c in double.calls if c[0] == "launch"]


def _device_bytes(double, address: int, length: int) -> bytes:
    for base, data in double.allocations.items():
        if base <= address and address + length <= base + len(data):
            return bytes(data[address - base : address - base + length])
    raise AssertionError(f"0x{address:x} is in no allocation")


def test_simple_mul_driver_log(pycuda_double, compile_mlir, tmp_path, update_golden):
    pkg, _ = _translate(compile_mlir, tmp_path, REPO / "examples" / "simple_mul.mlir", "simple_mul_cuda")
    ctx = pkg.load(device="cuda")
    a = np.arange(4, dtype=np.float32)
    b = np.full(4, 2.5, np.float32)
    result = ctx.simple_mul(a, b)
    assert isinstance(result, np.ndarray) and result.shape == (4,) and result.dtype == np.float32
    (launch,) = _launches(pycuda_double)
    # The kernel's parameters point at the uploaded arguments, then at the result.
    args = launch[6]
    assert _device_bytes(pycuda_double, args[0], 16) == a.tobytes()
    assert _device_bytes(pycuda_double, args[1], 16) == b.tobytes()
    assert launch[2:5] == ((1, 1, 1), (32, 1, 1), 0)
    # The result is what the device memory held at the third pointer (the double runs no
    # kernel: its zero-filled memory), downloaded after the launch.
    assert result.tobytes() == _device_bytes(pycuda_double, args[2], 16)
    ctx.simple_mul(a, b)  # the recorded command buffer again: same layout, new pointers
    _check_golden(pycuda_double.log_lines(), "simple_mul", update_golden)


def test_transfers_driver_log(pycuda_double, compile_mlir, tmp_path, update_golden):
    pkg, _ = _translate(compile_mlir, tmp_path, TRANSFERS, "transfers_cuda")
    ctx = pkg.load(device="cuda")
    splat = ctx.splat(5)
    assert splat.tolist() == [7] * 5  # queue.fill: memset on the device, downloaded
    a = np.arange(4, dtype=np.float32)
    b = np.arange(4, 8, dtype=np.float32)
    assert ctx.concat(a, b).tolist() == list(range(8))  # copy_buffer: device-to-device copies
    ctx.add(np.ones(6, np.float32), np.ones(6, np.float32))
    (launch,) = _launches(pycuda_double)
    name, fmt, args = launch[1], launch[7], launch[6]
    assert fmt.startswith("PPP") and fmt.strip("P") == "I" * (len(fmt) - 3)
    assert 6 in args[3:]  # the dynamic dimension travels as a constant after the pointers
    memsets = [c for c in pycuda_double.calls if c[0].startswith("memset")]
    assert memsets and memsets[0][:4] == ("memset_d32_async", memsets[0][1], 7, 5)
    assert any(c[0] == "memcpy_dtod_async" for c in pycuda_double.calls)
    _check_golden(pycuda_double.log_lines(), "transfers", update_golden)


def test_stream_ordered_alloca_when_the_driver_has_memory_pools(pycuda_double, compile_mlir, tmp_path):
    pkg, _ = _translate(compile_mlir, tmp_path, REPO / "examples" / "simple_mul.mlir", "simple_mul_pools")
    device = CudaDevice(pycuda_double, 0, stream_ordered=pycuda_double.stream_ordered_memory())
    ctx = pkg.load(device=device)
    ctx.simple_mul(np.ones(4, np.float32), np.ones(4, np.float32))
    kinds = [c[0] for c in pycuda_double.calls]
    assert "cuMemAllocAsync" in kinds  # queue.alloca of the result, in stream order
    (alloc,) = [c for c in pycuda_double.calls if c[0] == "cuMemAllocAsync"]
    (launch,) = _launches(pycuda_double)
    assert launch[6][2] == alloc[2]  # the kernel writes into it


def test_load_cuda_1_uses_the_second_gpu(monkeypatch, compile_mlir, tmp_path):
    double = PyCudaDriverDouble(devices=2)
    package = types.ModuleType("pycuda")
    package.driver = double
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", double)
    pkg, _ = _translate(compile_mlir, tmp_path, REPO / "examples" / "simple_mul.mlir", "simple_mul_gpu1")
    ctx = pkg.load(device="cuda:1")
    ctx.simple_mul(np.ones(4, np.float32), np.ones(4, np.float32))
    assert ("make_context", 1) in double.calls and ("make_context", 0) not in double.calls
    pushes = {c[1] for c in double.calls if c[0] in ("Context.push", "Context.pop")}
    assert pushes == {1}


def test_device_queries_answer_as_iree_cuda(pycuda_double):
    device = open_cuda_device("cuda")
    q = device.query_i64
    assert q(b"hal.device.id", b"cuda*") == (1, 1)
    assert q(b"hal.device.id", b"local*") == (1, 0)
    assert q(b"hal.executable.format", b"cuda-nvptx-fb") == (1, 1)
    assert q(b"hal.executable.format", b"embedded-elf-x86_64") == (1, 0)
    assert q(b"cuda.device", b"compute_capability_major") == (1, 8)
    assert q(b"hal.device", b"nonsense") == (0, 0)


def test_cuda_n_picks_the_gpu_and_errors_are_one_line(monkeypatch, pycuda_double):
    assert open_cuda_device("cuda:0").ordinal == 0
    with pytest.raises(VMError, match=r"reports 1 GPU\(s\)") as info:
        open_cuda_device("cuda:3")
    assert info.value.code == StatusCode.UNAVAILABLE
    with pytest.raises(VMError, match="'cuda' or 'cuda:N'"):
        open_cuda_device("cuda:x")


def test_load_cuda_without_pycuda_says_how_to_install(no_pycuda, compile_mlir, tmp_path):
    pkg, _ = _translate(compile_mlir, tmp_path, REPO / "examples" / "simple_mul.mlir", "simple_mul_nopycuda")
    with pytest.raises(DeviceError) as info:
        pkg.load(device="cuda")
    text = str(info.value)
    assert info.value.code == StatusCode.UNAVAILABLE
    assert "needs pycuda" in text and "pip install 'pyree[cuda]'" in text and "\n" not in text


def test_load_cuda_without_a_gpu(monkeypatch, compile_mlir, tmp_path):
    double = PyCudaDriverDouble(devices=0)
    package = types.ModuleType("pycuda")
    package.driver = double
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", double)
    pkg, _ = _translate(compile_mlir, tmp_path, REPO / "examples" / "simple_mul.mlir", "simple_mul_nogpu")
    with pytest.raises(DeviceError, match="reports no GPU"):
        pkg.load(device="cuda:0")


def test_load_cuda_without_a_driver(monkeypatch):
    """pycuda installed, libcuda missing: pycuda.driver's import fails on the library."""
    import importlib.abc

    class NoLibcuda(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name in ("pycuda", "pycuda.driver"):
                raise ImportError("libcuda.so.1: cannot open shared object file: No such file or directory")
            return None

    monkeypatch.delitem(sys.modules, "pycuda", raising=False)
    monkeypatch.delitem(sys.modules, "pycuda.driver", raising=False)
    monkeypatch.setattr(sys, "meta_path", [NoLibcuda(), *sys.meta_path])
    with pytest.raises(VMError) as info:
        open_cuda_device("cuda")
    assert "cannot load the CUDA driver (libcuda)" in str(info.value)
    assert "install the NVIDIA driver" in str(info.value) and "\n" not in str(info.value)


def test_pyree_run_device_cuda(no_pycuda, compile_mlir, tmp_path):
    from runtime_support.tools.run_cli import main

    _, vmfb = _translate(compile_mlir, tmp_path, REPO / "examples" / "simple_mul.mlir", "simple_mul_cli")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main([str(vmfb), "--device=cuda", "--input=4xf32=1 2 3 4", "--input=4xf32=1 2 3 4"])
    lines = err.getvalue().strip().splitlines()
    assert rc != 0 and len(lines) == 1, err.getvalue()
    assert "UNAVAILABLE" in lines[0] and "pip install 'pyree[cuda]'" in lines[0]


def test_pyree_run_device_cuda_with_the_double(pycuda_double, compile_mlir, tmp_path):
    from runtime_support.tools.run_cli import main

    _, vmfb = _translate(compile_mlir, tmp_path, REPO / "examples" / "simple_mul.mlir", "simple_mul_cli2")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main([str(vmfb), "--device=cuda", "--input=4xf32=1 2 3 4", "--input=4xf32=1 2 3 4"])
    assert rc == 0, err.getvalue()
    assert "4xf32=" in out.getvalue()  # printed from the downloaded result (zeros: no kernel ran)
    assert len(_launches(pycuda_double)) == 1


def test_launch_failure_names_the_error_and_the_kernel(pycuda_double, compile_mlir, tmp_path, monkeypatch):
    pkg, _ = _translate(compile_mlir, tmp_path, REPO / "examples" / "simple_mul.mlir", "simple_mul_fail")
    ctx = pkg.load(device="cuda")

    def fail(self, *args, **kwargs):
        raise DriverDoubleError("cuLaunchKernel failed: too many resources requested for launch")

    monkeypatch.setattr(_Function, "prepared_async_call", fail)
    with pytest.raises(VMError) as info:
        ctx.simple_mul(np.ones(4, np.float32), np.ones(4, np.float32))
    text = str(info.value)
    assert "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" in text and "too many resources requested" in text
    assert "simple_mul_dispatch_0_elementwise_4_f32" in text and "\n" not in text


def test_host_buffers_are_refused_as_kernel_bindings(pycuda_double, compile_mlir, tmp_path):
    """A host (CPU device) buffer view passed to a cuda context cannot be a binding."""
    pkg, _ = _translate(compile_mlir, tmp_path, REPO / "examples" / "simple_mul.mlir", "simple_mul_host")
    ctx = pkg.load(device="cuda")
    from runtime_support.hal.buffer_view import HalBufferView

    host_view = HalBufferView.from_numpy(np.ones(4, np.float32))
    with pytest.raises(VMError, match="host memory, not memory of the cuda device"):
        ctx.simple_mul(host_view, np.ones(4, np.float32))


PARAMS = """
util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<4xf32>
func.func @scale(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = util.global.load @w : tensor<4xf32>
  %0 = arith.mulf %x, %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def test_parameters_are_uploaded_to_the_device(pycuda_double, compile_mlir, tmp_path):
    """io_parameters.load on the cuda device: the archive's bytes are copied into device
    memory (no zero-copy host mapping: kernels cannot address it) and bound to the kernel."""
    from runtime_support.params import write_irpa

    weights = np.array([0.5, 1.5, -2.0, 4.0], np.float32)
    write_irpa(tmp_path / "w.irpa", {"w": weights})
    pkg, _ = _translate(compile_mlir, tmp_path, PARAMS, "params_cuda")
    ctx = pkg.load(device="cuda", parameters={"model": tmp_path / "w.irpa"})
    x = np.arange(4, dtype=np.float32)
    ctx.scale(x)
    (launch,) = _launches(pycuda_double)
    pointers = [a for a in launch[6][: launch[7].count("P")]]
    held = [_device_bytes(pycuda_double, p, 16) for p in pointers]
    assert weights.tobytes() in held and x.tobytes() in held


def test_stream_ordered_memory_is_freed_by_dealloca_or_when_collected(pycuda_double):
    import gc

    device = CudaDevice(pycuda_double, 0, stream_ordered=pycuda_double.stream_ordered_memory())
    kept = device.allocator.allocate_async(0, 0, 64)
    dropped = device.allocator.allocate_async(0, 0, 64)
    address = dropped.address
    kept.release()  # queue.dealloca
    assert ("cuMemFreeAsync", kept.address, "stream0") in pycuda_double.calls
    del dropped
    gc.collect()
    assert ("cuMemFreeAsync", address, "stream0") in pycuda_double.calls
    kept.release()  # twice: nothing more (the double would refuse a second free)
    assert sum(c[0] == "cuMemFreeAsync" for c in pycuda_double.calls) == 2
    plain = device.allocator.allocate(0, 0, 64)
    plain.release()  # cuMemAlloc'd memory lives until its last reference, as in IREE
    assert not any(c[0] == "mem_free" for c in pycuda_double.calls)


def test_recorded_command_buffers_replay_their_launches(pycuda_double, compile_mlir, tmp_path):
    """A command buffer with direct bindings becomes one prepared launch (checked once);
    an indirect dispatch reads its grid from device memory per execution; a zero grid
    launches nothing."""
    from runtime_support.hal.command_buffer import BufferRef
    from test_cuda_launch import _executable

    device = open_cuda_device("cuda")
    exe = device.create_executable("cuda-nvptx-fb", _executable(compile_mlir, REPO / "examples" / "simple_mul.mlir"))
    a, b, c = (device.allocator.allocate(0, 0, n) for n in (16, 16, 32))
    refs = [BufferRef(x, 0, 0, 16) for x in (a, b, c)]
    cb = device.create_command_buffer(0, 3, 0)
    cb.dispatch(exe, 0, (1, 1, 1), [], refs)
    cb.dispatch(exe, 0, (0, 1, 1), [], refs)  # empty grid
    cb.finalize()
    for _ in range(2):
        device.queue.submit(None, None, lambda: cb.execute(None))
    launches = _launches(pycuda_double)
    assert len(launches) == 2 and launches[0] == launches[1]
    assert launches[0][6] == (a.address, b.address, c.address)

    counts = device.allocator.allocate(0, 0, 12)
    counts.write(0, np.array([3, 1, 1], np.uint32).tobytes())
    cb2 = device.create_command_buffer(0, 3, 3)
    table_refs = [BufferRef(None, i, 16 * (i == 2), 16) for i in range(3)]  # slot 2 at +16
    cb2.dispatch(exe, 0, BufferRef(counts, 0, 0, 12), [], table_refs)
    cb2.finalize()
    device.queue.submit(None, None, lambda: cb2.execute([(a, 0, 16), (b, 0, 16), (c, 0, 32)]))
    launch = _launches(pycuda_double)[-1]
    assert launch[2] == (3, 1, 1) and launch[6] == (a.address, b.address, c.address + 16)
    with pytest.raises(VMError, match="out of bounds"):
        device.queue.submit(None, None, lambda: cb2.execute([(a, 0, 16), (b, 0, 16), (c, 0, 16)]))
    with pytest.raises(VMError, match="16-byte aligned"):  # the driver double refuses it
        device.queue.submit(None, None, lambda: cb2.execute([(c, 4, 28), (b, 0, 16), (c, 0, 32)]))


def test_wrap_array_is_refused_on_the_cuda_device(pycuda_double, compile_mlir, tmp_path):
    from runtime_support.hal.buffer import aligned_empty

    pkg, _ = _translate(compile_mlir, tmp_path, REPO / "examples" / "simple_mul.mlir", "simple_mul_wrap")
    ctx = pkg.load(device="cuda")
    with pytest.raises(ValueError, match="cannot use host memory without a copy"):
        ctx.wrap_array(aligned_empty(4, np.float32))


def test_a_cpu_module_on_the_cuda_device_says_what_to_do(pycuda_double, compile_mlir, tmp_path):
    cpu = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
           "--iree-llvmcpu-target-cpu=generic")
    pkg, _ = _translate(compile_mlir, tmp_path, REPO / "examples" / "simple_mul.mlir", "simple_mul_cpu", cpu)
    with pytest.raises(VMError) as info:
        pkg.load(device="cuda")
    text = str(info.value)
    assert info.value.code == StatusCode.INCOMPATIBLE and "\n" not in text
    assert "'embedded-elf-x86_64'" in text and "does not run on the cuda device" in text
    assert "device='local'" in text and "--iree-hal-target-device=cuda" in text
    assert "#hal.device.target" not in text
