"""`python -m runtime_support.cuda.install`: how it finds the CUDA toolkit and what it
tells pycuda's build, checked on fake toolkit trees (and on this machine's real one)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from types import SimpleNamespace

import pytest

from runtime_support.cuda import install
from runtime_support.cuda.install import InstallError, build_settings, find_cuda_root, settings_problems, siteconf_text

# The options pycuda's setup.py declares that the helper may write (aksetup refuses any
# other key in siteconf.py with KeyError).
PYCUDA_OPTIONS = {"CUDA_ROOT", "CUDA_INC_DIR", "CUDADRV_LIB_DIR", "CUDART_LIB_DIR", "CUDA_ENABLE_CURAND", "CURAND_LIB_DIR"}


def toolkit(path, *, libs=("cudart",), stubs=(), layout="lib64"):
    """A fake toolkit: include/cuda.h, bin/nvcc and lib<name>.so files."""
    (path / "include").mkdir(parents=True)
    (path / "include" / "cuda.h").write_text("/* fake */\n")
    (path / "bin").mkdir()
    (path / "bin" / "nvcc").write_text("#!/bin/sh\n")
    (path / layout).mkdir()
    for name in libs:
        (path / layout / f"lib{name}.so").write_text("")
    if stubs:
        (path / layout / "stubs").mkdir()
        for name in stubs:
            (path / layout / "stubs" / f"lib{name}.so").write_text("")
    return path


def no_nvcc(name):
    return None


def test_environment_variables_come_first(tmp_path):
    a = toolkit(tmp_path / "a")
    b = toolkit(tmp_path / "b")
    assert find_cuda_root({"CUDA_HOME": str(a), "CUDA_PATH": str(b)}, no_nvcc, default_root="/nonexistent") == (str(a), "$CUDA_HOME")
    assert find_cuda_root({"CUDA_PATH": str(b)}, no_nvcc, default_root="/nonexistent") == (str(b), "$CUDA_PATH")


def test_a_variable_without_cuda_h_is_skipped(tmp_path):
    (tmp_path / "empty").mkdir()
    real = toolkit(tmp_path / "real")
    root, how = find_cuda_root({"CUDA_HOME": str(tmp_path / "empty")}, no_nvcc, default_root=str(real))
    assert (root, how) == (str(real), str(real))


def test_nvcc_through_a_symlink(tmp_path):
    real = toolkit(tmp_path / "cuda-13.0")
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    os.symlink(real / "bin" / "nvcc", tmp_path / "usr" / "bin" / "nvcc")
    which = lambda name: str(tmp_path / "usr" / "bin" / "nvcc")  # noqa: E731
    assert find_cuda_root({}, which, default_root="/nonexistent") == (str(real), "the nvcc on PATH")


def test_nvcc_wrapper_script_is_asked_where_it_lives(tmp_path):
    """A wrapper (`exec /opt/cuda/bin/nvcc "$@"` in /usr/local/bin) hides the toolkit from
    pycuda's guess; nvcc's dry run names its real folder."""
    real = toolkit(tmp_path / "opt" / "cuda")
    (tmp_path / "local" / "bin").mkdir(parents=True)
    wrapper = tmp_path / "local" / "bin" / "nvcc"
    wrapper.write_text(f'#!/bin/sh\nexec {real}/bin/nvcc "$@"\n')
    seen = []

    def run(cmd, **kw):
        seen.append(cmd)
        return SimpleNamespace(stdout=f"#$ _NVVM_BRANCH_=nvvm\n#$ _HERE_={real}/bin\n#$ TOP={real}/bin/..\n", stderr="")

    assert find_cuda_root({}, lambda n: str(wrapper), run, default_root="/nonexistent") == (str(real), "the nvcc on PATH")
    assert seen and seen[0][0] == str(wrapper) and "--dryrun" in seen[0]


def test_nothing_found_is_one_line(tmp_path):
    with pytest.raises(InstallError) as info:
        find_cuda_root({"CUDA_HOME": str(tmp_path)}, no_nvcc, default_root=str(tmp_path / "none"))
    text = str(info.value)
    assert "include/cuda.h" in text and "CUDA_HOME" in text and str(tmp_path) in text and "\n" not in text


def test_settings_with_curand_and_the_driver_stub(tmp_path):
    root = toolkit(tmp_path / "cuda", libs=("cudart", "curand"), stubs=("cuda",))
    settings = build_settings(str(root), extra_dirs=())
    assert settings["CUDA_ROOT"] == str(root)
    assert settings["CUDA_INC_DIR"] == [str(root / "include")]
    assert settings["CUDADRV_LIB_DIR"] == [str(root / "lib64" / "stubs")]
    assert settings["CUDA_ENABLE_CURAND"] is True and settings["CURAND_LIB_DIR"] == [str(root / "lib64")]
    assert settings_problems(settings) == []


def test_settings_without_curand_or_libcuda(tmp_path):
    root = toolkit(tmp_path / "cuda", libs=("cudart",), layout="lib")
    settings = build_settings(str(root), extra_dirs=())
    assert settings["CUDA_ENABLE_CURAND"] is False and "CURAND_LIB_DIR" not in settings
    assert settings["CUDADRV_LIB_DIR"] == [str(root / "lib")]  # the linker's search folder
    problems = settings_problems(settings)
    assert any("libcuda" in p for p in problems) and any("libcurand" in p for p in problems)


def test_the_driver_in_a_system_folder_is_found(tmp_path):
    root = toolkit(tmp_path / "cuda")
    system = tmp_path / "usr-lib"
    system.mkdir()
    (system / "libcuda.so.1").write_text("")
    assert build_settings(str(root), extra_dirs=(str(system),))["CUDADRV_LIB_DIR"] == [str(system)]


def test_siteconf_is_what_aksetup_reads(tmp_path):
    settings = build_settings(str(toolkit(tmp_path / "cuda", libs=("cudart", "curand"))), extra_dirs=())
    values: dict = {}
    exec(compile(siteconf_text(settings), "siteconf.py", "exec"), values)
    values.pop("__builtins__")
    assert values == settings
    assert set(values) <= PYCUDA_OPTIONS


def test_dry_run_prints_settings_and_installs_nothing(tmp_path, monkeypatch):
    root = toolkit(tmp_path / "cuda")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("--dry-run ran a command"))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert install.main(["--dry-run", "--cuda-root", str(root)]) == 0
    assert f"CUDA_ROOT = '{root}'" in out.getvalue() and "CUDA_ENABLE_CURAND = False" in out.getvalue()
    with redirect_stdout(out), redirect_stderr(err):
        assert install.main(["--dry-run", "--cuda-root", str(tmp_path)]) == 1
    assert "has no include/cuda.h" in err.getvalue()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on this machine")
def test_this_machines_toolkit_is_found():
    root, _ = find_cuda_root()
    assert os.path.isfile(os.path.join(root, "include", "cuda.h"))
