"""Where `pyree-translate` writes (translator/codegen/package_folder.py): it replaces only a
package it wrote, atomically and one translation at a time, never a user's folder, and
names a package so that it cannot stand in for a module generated packages import."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers_compile import LLVM_CPU_FLAGS

from translator.codegen import package_folder, write_package
from translator.reader import read_module_file

REPO = Path(__file__).resolve().parents[2]
ADD = """
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r = arith.addf %a, %b : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


@pytest.fixture(scope="module")
def add_vmfb(compile_mlir, tmp_path_factory):
    src = tmp_path_factory.mktemp("src") / "add.mlir"
    src.write_text(ADD)
    vmfb = src.with_suffix(".vmfb")  # (named add.vmfb: the package is `add`)
    shutil.copyfile(compile_mlir(src, LLVM_CPU_FLAGS), vmfb)
    return vmfb


@pytest.fixture(scope="module")
def add_module(add_vmfb):
    return read_module_file(add_vmfb)


def translate(vmfb, *args, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "translator.cli", str(vmfb), "-q", *map(str, args)],
        capture_output=True, text=True, timeout=300, cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )


def _error_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 1 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    [line] = r.stderr.splitlines()
    return line


def test_a_users_folder_in_the_way_is_left_alone(add_vmfb, tmp_path):
    thesis = tmp_path / "out" / "add"
    thesis.mkdir(parents=True)
    (thesis / "thesis.tex").write_text("years of work")
    line = _error_line(translate(add_vmfb, "-o", tmp_path / "out"))
    assert line.startswith("pyree-translate: error: ")
    assert str(thesis) in line and "--force" in line and "'thesis.tex'" in line
    assert (thesis / "thesis.tex").read_text() == "years of work"
    assert sorted(os.listdir(tmp_path / "out")) == ["add"]
    r = translate(add_vmfb, "-o", tmp_path / "out", "--force")
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(thesis)) == [".pyree-package", "__init__.py", "rodata.bin"]


def test_an_empty_folder_a_file_or_a_link_in_the_way_is_refused(add_vmfb, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "add").mkdir()  # an empty folder: no marker, nothing pyree wrote
    assert "--force" in _error_line(translate(add_vmfb, "-o", out))
    os.rmdir(out / "add")
    (out / "add").write_text("notes")
    assert "is not a folder" in _error_line(translate(add_vmfb, "-o", out))
    assert (out / "add").read_text() == "notes"
    os.unlink(out / "add")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("x")
    os.symlink(elsewhere, out / "add")
    assert "is a link" in _error_line(translate(add_vmfb, "-o", out))
    r = translate(add_vmfb, "-o", out, "--force")  # the link is replaced, not followed
    assert r.returncode == 0, r.stderr
    assert not (out / "add").is_symlink() and (elsewhere / "keep").read_text() == "x"


def test_a_package_pyree_wrote_is_replaced_but_not_a_file_added_to_it(add_module, tmp_path):
    pkg = write_package(add_module, tmp_path, "add")
    marker = json.loads((pkg / ".pyree-package").read_text())
    assert set(marker["files"]) == {"__init__.py", "rodata.bin"}
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"")
    assert write_package(add_module, tmp_path, "add") == pkg  # (its bytecode is pyree's too)
    (pkg / "notes.txt").write_text("mine")
    with pytest.raises(package_folder.OutputFolderError, match="notes.txt"):
        write_package(add_module, tmp_path, "add")
    assert (pkg / "notes.txt").read_text() == "mine"


def test_a_package_of_an_older_pyree_is_replaced(add_module, tmp_path):
    """Packages written before the marker are known by their files and first line."""
    pkg = write_package(add_module, tmp_path, "add")
    (pkg / ".pyree-package").unlink()
    write_package(add_module, tmp_path, "add")
    assert (pkg / ".pyree-package").is_file()
    (pkg / ".pyree-package").unlink()
    (pkg / "__init__.py").write_text("# my own module\n")
    with pytest.raises(package_folder.OutputFolderError):
        write_package(add_module, tmp_path, "add")


def test_a_second_user_cannot_make_a_translation_delete_files(add_vmfb, tmp_path):
    """Another user's link in a shared output folder, pointing at this user's files: the
    translation refuses it and the files stay."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to act as a second user")
    shared = Path(tempfile.mkdtemp(dir="/tmp", prefix="pyree-shared-"))
    try:
        os.chmod(shared, 0o1777)
        mine = tmp_path / "mine"
        mine.mkdir()
        (mine / "data").write_text("keep")
        os.chmod(tmp_path, 0o755)
        subprocess.run(
            ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "sh", "-c",
             f"mkdir '{shared}/out' && ln -s '{mine}' '{shared}/out/add'"],
            check=True, timeout=60,
        )
        assert "is a link" in _error_line(translate(add_vmfb, "-o", shared / "out"))
        assert (mine / "data").read_text() == "keep"
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_the_umask_is_read_not_changed(add_module, tmp_path, monkeypatch):
    """Changing the umask to read it would give files other threads create meanwhile the
    modes of umask 0."""

    def no_umask(mask):
        raise AssertionError("os.umask was called")

    monkeypatch.setattr(os, "umask", no_umask)
    write_package(add_module, tmp_path, "add")


def test_a_translation_killed_after_the_swap_leaves_a_package_and_its_leftovers_go(
    add_module, tmp_path, monkeypatch
):
    write_package(add_module, tmp_path, "add")
    real = package_folder._swap_in

    def killed(staging, target):
        real(staging, target)
        raise KeyboardInterrupt  # before the old package is removed

    monkeypatch.setattr(package_folder, "_swap_in", killed)
    monkeypatch.setattr(package_folder, "_remove", lambda path: None)  # (the kill skips it)
    with pytest.raises(KeyboardInterrupt):
        write_package(add_module, tmp_path, "add", provenance=True)
    monkeypatch.undo()
    assert "# pc 0x" in (tmp_path / "add" / "__init__.py").read_text()  # the new one, whole
    assert len(os.listdir(tmp_path)) == 2  # the package and the old one, aside
    write_package(add_module, tmp_path, "add")
    assert os.listdir(tmp_path) == ["add"]  # the next translation removed what was left


def test_the_package_is_never_missing_while_it_is_replaced(add_module, tmp_path, monkeypatch):
    """Whatever step a translation is killed after, a whole package is in place: each
    rename it makes leaves one there (the swap itself is one exchange)."""
    pkg = write_package(add_module, tmp_path, "add")
    real = os.rename
    missing = []

    def rename(src, dst, **kw):
        real(src, dst, **kw)
        if not os.path.isfile(pkg / "__init__.py"):
            missing.append((src, dst))

    monkeypatch.setattr(os, "rename", rename)
    write_package(add_module, tmp_path, "add", provenance=True)
    assert not missing
    assert "# pc 0x" in (pkg / "__init__.py").read_text()


def test_concurrent_translations_into_one_folder_all_succeed(add_vmfb, tmp_path):
    out = tmp_path / "out"
    script = (
        "import sys\nfrom translator.cli import main\n"
        f"for _ in range(6):\n    assert main([{str(add_vmfb)!r}, '-q', '--no-format', '-o', "
        f"{str(out)!r}]) == 0\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE,
                              text=True) for _ in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert os.listdir(out) == ["add"]
    assert sorted(os.listdir(out / "add")) == [".pyree-package", "__init__.py", "rodata.bin"]


def test_a_250_character_name_translates(add_vmfb, tmp_path):
    vmfb = tmp_path / ("m" * 245 + ".vmfb")
    shutil.copyfile(add_vmfb, vmfb)
    r = translate(vmfb, "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / ("m" * 245) / "__init__.py").is_file()


def test_a_package_is_not_named_like_a_module_packages_import(add_vmfb, tmp_path):
    vmfb = tmp_path / "numpy.vmfb"
    shutil.copyfile(add_vmfb, vmfb)
    out = tmp_path / "out"
    r = translate(vmfb, "-o", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out / "numpy_vmfb")
    [warning] = r.stderr.splitlines()
    assert warning.startswith("pyree-translate: warning: ") and "'numpy_vmfb'" in warning
    probe = "import numpy, numpy_vmfb; print(numpy.__file__ != numpy_vmfb.__file__)"
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=out,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(out), str(REPO)])),
                       timeout=120)
    assert p.stdout.strip() == "True", p.stderr
    for name in ("os", "runtime_support", "numpy"):
        r = translate(add_vmfb, "-o", out, "--name", name)
        assert r.returncode == 2 and "choose another name" in r.stderr, r.stderr
        assert not (out / name).exists()
