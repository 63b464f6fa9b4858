"""Running collectives tests under MPI: the mpiexec to use (or a skip saying what to
install), the environment the ranks get, the JSON lines the ranks print, and the
StableHLO collectives program the CPU and cuda collective tests share."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def mpiexec() -> str:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed (pip install 'pyree[mpi]')")
    path = shutil.which("mpiexec")
    if path is None:
        pytest.skip("no mpiexec on PATH (pip install mpich)")
    return path


def mpi_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_", "PMIX_", "MPI_LOCAL"))}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("PYREE_COLLECTIVE_TIMEOUT", "60")
    env.update(extra)
    return env


def worker_results(stdout: str) -> list[dict]:
    """Every JSON object the ranks printed (mpiexec may join the ranks' lines)."""
    decoder, out, i = json.JSONDecoder(), [], stdout.find('{"rank"')
    while i != -1:
        obj, end = decoder.raw_decode(stdout, i)
        out.append(obj)
        i = stdout.find('{"rank"', end)
    return out


STABLEHLO = """
func.func @all_reduce_sum(%input : tensor<4xf32>) -> tensor<4xf32> {
  %out = "stablehlo.all_reduce"(%input) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
        replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids} : (tensor<4xf32>) -> tensor<4xf32>
  return %out : tensor<4xf32>
}
func.func @all_gather(%input : tensor<2xi32>) -> tensor<4xi32> {
  %out = "stablehlo.all_gather"(%input) {all_gather_dim = 0 : i64,
        channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
        replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids} : (tensor<2xi32>) -> tensor<4xi32>
  return %out : tensor<4xi32>
}
func.func @reduce_scatter(%input : tensor<4xf32>) -> tensor<2xf32> {
  %out = "stablehlo.reduce_scatter"(%input) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }) {scatter_dimension = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
        replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids} : (tensor<4xf32>) -> tensor<2xf32>
  return %out : tensor<2xf32>
}
func.func @all_to_all(%input : tensor<4xf32>) -> tensor<4xf32> {
  %out = "stablehlo.all_to_all"(%input) {split_dimension = 0 : i64, concat_dimension = 0 : i64,
        split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %out : tensor<4xf32>
}
func.func @permute(%input : tensor<4xf32>) -> tensor<4xf32> {
  %out = "stablehlo.collective_permute"(%input) {source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>,
        channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return %out : tensor<4xf32>
}
"""
