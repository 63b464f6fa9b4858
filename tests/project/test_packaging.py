"""What `pip install pyree` installs: the packages pyproject.toml lists are the folders
there are, the repository's templates/ ships as the translator's package data (no
top-level package named `templates` lands in site-packages), and the native runtime's
LLVM IR units ship beside their loader. A wheel is built from a copy of the sources and
used, unpacked, from another folder: it translates and runs a program."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]

PROGRAM = """
func.func @mul(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.mulf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def test_the_package_list_is_the_folders():
    folders = sorted(
        ".".join(p.parent.relative_to(REPO).parts)
        for top in ("translator", "runtime_support")
        for p in (REPO / top).rglob("__init__.py")
    )
    assert sorted(SETUPTOOLS["packages"]) == sorted(folders + ["translator.templates"])
    assert SETUPTOOLS["package-dir"] == {"translator.templates": "templates"}
    assert not (REPO / "templates" / "__init__.py").exists()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for name in ("translator", "runtime_support", "templates"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(src)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    (path,) = dist.glob("pyree-*.whl")
    return path


def test_wheel_ships_templates_as_translator_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.startswith("pyree-")} == {"translator", "runtime_support"}
    for f in sorted((REPO / "templates").iterdir()):
        assert f"translator/templates/{f.name}" in names, f.name
    for f in sorted((REPO / "runtime_support" / "native").glob("*.ll")):
        assert f"runtime_support/native/{f.name}" in names, f.name


def test_installed_wheel_translates_and_runs(wheel, tmp_path, compile_mlir):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    src = tmp_path / "mul.mlir"
    src.write_text(PROGRAM)
    vmfb = compile_mlir(src, ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu"))
    script = f"""
import sys
import numpy as np
from translator.template_files import template_dir
assert str(template_dir()).startswith({str(site)!r}), template_dir()
from translator.cli import main
assert main([{str(vmfb)!r}, "-o", "out", "--name", "mul"]) == 0
sys.path.insert(0, "out")
import mul
a = np.arange(4, dtype=np.float32)
print(mul.load(device="local-sync").mul(a, a + 1).tolist())
"""
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)  # ahead of any checkout or editable install
    res = subprocess.run([sys.executable, "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip().splitlines()[-1] == "[0.0, 2.0, 6.0, 12.0]"
