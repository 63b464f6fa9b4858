"""The CUDA executable's loading and launch convention, run against a test double of
`pycuda.driver` (tests/support/cuda_driver_double.py) on machines without a GPU, and the one-line
errors for a missing pycuda, driver or GPU."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest

from cuda_driver_double import DriverDoubleError, PyCudaDriverDouble
from runtime_support.cuda.driver import open_driver
from runtime_support.cuda.executable import CudaExecutable
from runtime_support.cuda.executable_def import MAGIC
from runtime_support.errors import StatusCode, VMError
from test_cuda_executable import EXPORTS, build_executable, cuda_flags
from translator.reader import read_module_file

REPO = Path(__file__).resolve().parents[2]

DYNAMIC_SHAPES = """
func.func @scale(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = arith.addf %a, %b : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
"""


def _executable(compile_mlir, source: Path) -> bytes:
    module = read_module_file(compile_mlir(source, cuda_flags("sm_80")))
    return next(bytes(s.data) for s in module.rodata if bytes(s.data[:4]) == MAGIC)


def _double_with_context(**kw) -> PyCudaDriverDouble:
    driver = PyCudaDriverDouble(**kw)
    driver.Device(0).make_context()
    driver.calls.clear()
    return driver


def test_simple_mul_loads_and_launches_as_iree_does(compile_mlir):
    driver = _double_with_context()
    pointers = [int(driver.mem_alloc(16)) for _ in range(3)]
    driver.calls.clear()
    exe = CudaExecutable(driver, _executable(compile_mlir, REPO / "examples" / "simple_mul.mlir"))
    ordinal = exe.lookup(b"simple_mul_dispatch_0_elementwise_4_f32")
    exe.dispatch("stream0", ordinal, (1, 1, 1), [], pointers)
    # The whole driver conversation, in order.
    assert driver.calls == [
        ("module_from_buffer", len(exe.definition.modules[0].image) + 1, ["simple_mul_dispatch_0_elementwise_4_f32"]),
        ("get_function", "simple_mul_dispatch_0_elementwise_4_f32"),
        ("prepare", "simple_mul_dispatch_0_elementwise_4_f32", "PPP"),
        (
            "launch", "simple_mul_dispatch_0_elementwise_4_f32", (1, 1, 1), (32, 1, 1), 0, "stream0",
            tuple(pointers), "PPP",
        ),
    ]


def test_dynamic_shapes_pass_constants_after_bindings(compile_mlir, tmp_path):
    src = tmp_path / "dyn.mlir"
    src.write_text(DYNAMIC_SHAPES)
    driver = _double_with_context()
    exe = CudaExecutable(driver, _executable(compile_mlir, src))
    (e,) = exe.exports
    assert e.constant_count > 0
    pointers = [int(driver.mem_alloc(64)) for i in range(e.binding_count)]
    constants = list(range(1, e.constant_count + 1))
    launch = exe.plan(0, (3, 2, 1), constants, pointers)
    assert launch.args == tuple(pointers) + tuple(constants)
    assert (launch.grid, launch.block) == ((3, 2, 1), e.block_dims)
    launch.run("s")
    assert driver.calls[-1][0] == "launch"


def test_large_shared_memory_sets_the_opt_in_attribute():
    data = build_executable(
        [dict(EXPORTS[0], name="big", smem=64 * 1024, constants=0, flags=[2]),
         dict(EXPORTS[0], name="small", smem=1024, constants=0, flags=[2])],
        [b".version 7.6\n.target sm_80\n.entry big(.param .u64 .ptr .global .align 16 a)\n"
         b".entry small(.param .u64 .ptr .global .align 16 a)\n"],
    )
    driver = _double_with_context()
    CudaExecutable(driver, data)
    attrs = [c for c in driver.calls if c[0] == "set_attribute"]
    assert attrs == [("set_attribute", "big", "MAX_DYNAMIC_SHARED_SIZE_BYTES", 64 * 1024)]


def test_bad_launches_are_vm_errors(compile_mlir):
    exe = CudaExecutable(_double_with_context(), _executable(compile_mlir, REPO / "examples" / "simple_mul.mlir"))
    with pytest.raises(VMError, match="takes 3 bindings"):
        exe.plan(0, (1, 1, 1), [], [16])
    with pytest.raises(VMError, match="exceeds CUDA's grid"):
        exe.plan(0, (1, 70000, 1), [], [16, 32, 48])
    with pytest.raises(VMError) as info:
        exe.dispatch("s", 0, (1, 1, 1), [], [8, 16, 32])  # misaligned: the driver refuses
    assert info.value.code == StatusCode.INTERNAL and "simple_mul_dispatch_0" in str(info.value)
    with pytest.raises(VMError, match="no export"):
        exe.lookup("nope")


def test_kernel_missing_from_its_module_names_the_kernel():
    data = build_executable([dict(EXPORTS[0], name="absent", flags=[2], constants=0)], [b".version 7.6\n.target sm_80\n"])
    with pytest.raises(VMError, match="kernel 'absent'.*CUDA_ERROR_NOT_FOUND"):
        CudaExecutable(_double_with_context(), data)


def test_missing_pycuda_driver_or_gpu_is_one_line(monkeypatch):
    with pytest.raises(VMError) as info:
        open_driver("pycuda_is_not_installed_here.driver")
    assert info.value.code == StatusCode.UNAVAILABLE and "pip install 'pyree[cuda]'" in str(info.value)

    broken = types.ModuleType("fake_pycuda_driver_broken")

    def init():
        raise RuntimeError("cuInit failed: no CUDA-capable device is detected\n(details)")

    broken.init = init
    monkeypatch.setitem(sys.modules, "fake_pycuda_driver_broken", broken)
    with pytest.raises(VMError) as info:
        open_driver("fake_pycuda_driver_broken")
    assert "failed to initialise" in str(info.value) and "\n" not in str(info.value)

    no_gpu = PyCudaDriverDouble(devices=0)
    monkeypatch.setitem(sys.modules, "fake_pycuda_driver_nogpu", no_gpu)
    with pytest.raises(VMError, match="no GPU"):
        open_driver("fake_pycuda_driver_nogpu")
    assert open_driver.__module__ == "runtime_support.cuda.driver"


def test_double_rejects_what_the_driver_would():
    driver = PyCudaDriverDouble()
    with pytest.raises(DriverDoubleError, match="invalid device context"):
        driver.mem_alloc(16)  # no context current on this thread
    driver.Device(0).make_context()
    with pytest.raises(DriverDoubleError):
        driver.module_from_buffer(b"\x7fELF")
    with pytest.raises(DriverDoubleError, match="NUL-terminated"):
        driver.module_from_buffer(b".version 7.6\n.target sm_80\n")
    stream = driver.Stream()
    a = int(driver.mem_alloc(16))
    with pytest.raises(DriverDoubleError, match="not inside one allocation"):
        driver.memcpy_htod_async(a + 8, bytes(16), stream)
    with pytest.raises(DriverDoubleError, match="aligned"):
        driver.memset_d32_async(a + 2, 0, 1, stream)
    with pytest.raises(DriverDoubleError, match="not a stream"):
        driver.memset_d8_async(a, 0, 1, object())
    with pytest.raises(DriverDoubleError, match="invalid argument"):
        driver.mem_alloc(0)
    out = np.zeros(16, np.uint8)
    driver.memcpy_htod(a, bytes(range(16)))
    driver.memcpy_dtoh(out, a)
    assert out.tolist() == list(range(16))  # copies move the simulated bytes
