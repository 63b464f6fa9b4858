"""ONNX models through pyree: graphs built with `onnx.helper`, imported with the pinned
compiler's `iree-import-onnx` (the torch-mlir ONNX frontend), compiled for llvm-cpu,
translated, and run on both devices. Each result must equal iree.runtime's on the same vmfb
bit for bit, and `pyree-run` must print what `iree-run-module` prints.

The other frontends have their own tests: PyTorch through iree-turbine (test_models.py),
TOSA/linalg/StableHLO through IREE's e2e folders (test_conformance.py). ONNX reaches the
compiler as `torch` dialect ops with `si64`/`si32` signed element types, i64 shape
operands and, with a symbolic dimension, `tensor<?x...>` arguments.

Skipped (with the reason) only where the `onnx` package cannot be imported.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from iree_oracle import iree_run
from helpers_process import cli
from differential import same_results as _same, load_package
from runtime_support.tools.run_cli import main as run_main
from translator.codegen import write_package
from translator.reader import read_module_file

onnx = pytest.importorskip("onnx", reason="the onnx package (test extra) is not installed")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
)


def _const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def _dense_graph():
    """A symbolic batch dimension N: matmul, softmax, reshape by a -1 shape, reductions,
    gather, casts to si32, argmax to si64."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("MatMul", ["X", "W"], ["mm"]),
        helper.make_node("Add", ["mm", "B"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Softmax", ["r"], ["s"], axis=-1),
        helper.make_node("Reshape", ["s", "shape"], ["rs"]),
        helper.make_node("ReduceMean", ["rs"], ["m"], axes=[2], keepdims=0),
        helper.make_node("Gather", ["X", "idx"], ["g"], axis=1),
        helper.make_node("Mul", ["g", "ten"], ["g10"]),
        helper.make_node("Cast", ["g10"], ["gi"], to=TensorProto.INT32),
        helper.make_node("ArgMax", ["r"], ["am"], axis=1, keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "dense",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 16])],
        [
            helper.make_tensor_value_info("m", TensorProto.FLOAT, ["N", 2]),
            helper.make_tensor_value_info("gi", TensorProto.INT32, ["N", 2]),
            helper.make_tensor_value_info("am", TensorProto.INT64, ["N"]),
        ],
        [
            _const("W", rng.standard_normal((16, 8)).astype(np.float32)),
            _const("B", rng.standard_normal(8).astype(np.float32)),
            _const("shape", np.array([-1, 2, 4], np.int64)),
            _const("idx", np.array([0, 2], np.int64)),
            _const("ten", np.array(10.0, np.float32)),
        ],
    )
    inputs = [rng.standard_normal((5, 16)).astype(np.float32)]
    return graph, inputs


def _conv_graph():
    """Static shapes: conv, batch norm (inference), leaky relu, pools, gemm, sigmoid,
    where on a comparison, slice, transpose, topk (values and si64 indices), concat."""
    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("Conv", ["X", "Wc", "Bc"], ["cv"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["cv", "scale", "bias", "mean", "var"], ["bn"]),
        helper.make_node("LeakyRelu", ["bn"], ["lr"], alpha=0.1),
        helper.make_node("MaxPool", ["lr"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["mp"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["fl"], axis=1),
        helper.make_node("Gemm", ["fl", "Wg", "Bg"], ["gm"], transB=1),
        helper.make_node("Sigmoid", ["gm"], ["sg"]),
        helper.make_node("Greater", ["gm", "zero"], ["pos"]),
        helper.make_node("Where", ["pos", "gm", "sg"], ["wh"]),
        helper.make_node("Slice", ["wh", "starts", "ends", "axes"], ["sl"]),
        helper.make_node("Transpose", ["mp"], ["tp"], perm=[0, 2, 3, 1]),
        helper.make_node("TopK", ["wh", "k"], ["tv", "ti"], axis=1),
        helper.make_node("Concat", ["sl", "tv"], ["cc"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "conv",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3, 8, 8])],
        [
            helper.make_tensor_value_info("cc", TensorProto.FLOAT, [2, 4]),
            helper.make_tensor_value_info("ti", TensorProto.INT64, [2, 2]),
            helper.make_tensor_value_info("tp", TensorProto.FLOAT, [2, 4, 4, 8]),
        ],
        [
            _const("Wc", (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)),
            _const("Bc", rng.standard_normal(8).astype(np.float32)),
            _const("scale", rng.uniform(0.5, 1.5, 8).astype(np.float32)),
            _const("bias", rng.standard_normal(8).astype(np.float32)),
            _const("mean", rng.standard_normal(8).astype(np.float32)),
            _const("var", rng.uniform(0.5, 2, 8).astype(np.float32)),
            _const("Wg", rng.standard_normal((4, 8)).astype(np.float32)),
            _const("Bg", rng.standard_normal(4).astype(np.float32)),
            _const("zero", np.array(0.0, np.float32)),
            _const("starts", np.array([1], np.int64)),
            _const("ends", np.array([3], np.int64)),
            _const("axes", np.array([1], np.int64)),
            _const("k", np.array([2], np.int64)),
        ],
    )
    inputs = [rng.standard_normal((2, 3, 8, 8)).astype(np.float32)]
    return graph, inputs


GRAPHS = {"dense": _dense_graph, "conv": _conv_graph}


@pytest.fixture(scope="module")
def built(tmp_path_factory, compile_mlir):
    """name -> (vmfb, package, inputs, input .npy paths), each graph imported and compiled
    once per run (compile_mlir caches by the imported MLIR's text)."""
    out = {}
    root = tmp_path_factory.mktemp("onnx")
    for name, make in GRAPHS.items():
        graph, inputs = make()
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        onnx.checker.check_model(model, full_check=True)
        model_path = root / f"{name}.onnx"
        onnx.save(model, str(model_path))
        mlir = root / f"{name}.mlir"
        subprocess.run(
            [sys.executable, "-m", "iree.compiler.tools.import_onnx", str(model_path),
             "-o", str(mlir)],
            check=True, capture_output=True, text=True, timeout=300,
        )
        vmfb = compile_mlir(mlir, FLAGS)
        pkg_dir = write_package(read_module_file(vmfb), root / "pkgs", name)
        npys = []
        for i, x in enumerate(inputs):
            npys.append(root / f"{name}_in{i}.npy")
            np.save(npys[-1], x)
        out[name] = (vmfb, pkg_dir, inputs, npys)
    return out


@pytest.mark.parametrize("device", ["local-sync", "local"])
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_onnx_graph_matches_iree_runtime(built, name, device):
    vmfb, pkg_dir, inputs, _ = built[name]
    expected = iree_run(vmfb, name, inputs)
    ctx = load_package(pkg_dir).load(device=device)
    actual = ctx.call(name, *inputs)
    assert isinstance(actual, tuple) and len(actual) == len(expected) == 3
    for i, (e, a) in enumerate(zip(expected, actual)):
        assert _same(e, a), f"{name} result {i} on {device}: IREE {e!r} != pyree {a!r}"
    # the signed element types come back as numpy's: si32 and si64 results
    assert {str(np.asarray(a).dtype) for a in actual} >= {"int64"}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_onnx_graph_prints_like_iree_run_module(built, name):
    vmfb, pkg_dir, _, npys = built[name]
    args = [f"--function={name}", *[f"--input=@{p}" for p in npys]]
    ref = subprocess.run(
        ["iree-run-module", "--device=local-sync", f"--module={vmfb}", *args],
        capture_output=True, text=True, timeout=120,
    )
    rc, out, err = cli(run_main, [str(pkg_dir), "--device=local-sync", *args])
    assert ref.returncode == 0, ref.stderr
    assert (rc, out) == (ref.returncode, ref.stdout), err
