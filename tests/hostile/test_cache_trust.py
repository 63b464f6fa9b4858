"""What pyree's cache folder trusts (runtime_support/cache/disk_cache.py, package_cache.py): only
folders and entries this user owns that neither group nor others can write. Another user
who can write a shared PYREE_CACHE_DIR must not get code run as this user through the
native object code or a cached translation (there is no cache of Python code objects:
the runtime compiles no source); a damaged translation is made
again; a cache that cannot take a translation (a full disk) still lets the program run.

The second-user cases run the attacker's steps as uid 1000 with `setpriv` (skipped where
this process cannot change user: not root, or no setpriv).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers_compile import LLVM_CPU_FLAGS

from runtime_support.cache import disk_cache

REPO = Path(__file__).resolve().parents[2]
ATTACKER = 1000

ADD = """
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r = arith.addf %a, %b : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""
RUN = ["--function=add", "--device=local-sync", "--input=4xf32=1 2 3 4", "--input=4xf32=10 20 30 40"]
WANT = "4xf32=11 22 33 44"


@pytest.fixture(scope="module")
def add_vmfb(compile_mlir, tmp_path_factory):
    src = tmp_path_factory.mktemp("src") / "add.mlir"
    src.write_text(ADD)
    return compile_mlir(src, LLVM_CPU_FLAGS)


def pyree_run(vmfb, cache, *, umask=None, name="add.vmfb", tmp=None) -> subprocess.CompletedProcess:
    """`pyree-run` on a copy of `vmfb` named `name`, in a fresh process with PYREE_CACHE_DIR."""
    folder = Path(tmp or tempfile.mkdtemp())
    copy = folder / name
    shutil.copyfile(vmfb, copy)
    env = dict(os.environ, PYREE_CACHE_DIR=str(cache), PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "runtime_support.tools.run_cli", str(copy), *RUN],
        capture_output=True, text=True, env=env, timeout=300,
        preexec_fn=(lambda: os.umask(umask)) if umask is not None else None,
    )


def _can_switch_user() -> bool:
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


needs_second_user = pytest.mark.skipif(
    not _can_switch_user(), reason="needs root and setpriv to act as a second user"
)


def as_attacker(*argv) -> None:
    """Runs a command as uid/gid 1000 (the other user of a shared cache folder)."""
    subprocess.run(
        ["setpriv", f"--reuid={ATTACKER}", f"--regid={ATTACKER}", "--clear-groups", *argv],
        check=True, capture_output=True, timeout=60,
    )


@pytest.fixture
def shared_tmp():
    """A folder both users can reach, like /tmp itself: world-writable and sticky."""
    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="pyree-shared-"))
    os.chmod(folder, 0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _modes(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): stat.S_IMODE(p.lstat().st_mode)
        for p in [root, *root.rglob("*")]
    }


def test_the_cache_is_made_private_under_umask_000(add_vmfb, tmp_path):
    cache = tmp_path / "home" / ".cache" / "pyree"
    r = pyree_run(add_vmfb, cache, umask=0)
    assert r.returncode == 0 and WANT in r.stdout, r.stderr
    assert "warning" not in r.stderr
    modes = _modes(cache)
    assert {"native", "elf", "packages"} <= set(modes), modes
    assert "code" not in modes  # (no code objects are cached: none are compiled)
    for rel, mode in modes.items():
        want = 0o700 if (cache / rel).is_dir() else 0o600
        assert mode == want, (rel, oct(mode))
    # (the folders above the cache that pyree made too)
    assert stat.S_IMODE((tmp_path / "home" / ".cache").stat().st_mode) == 0o700


def test_entries_others_can_write_are_refused_with_one_warning(tmp_path, capfd):
    folder = tmp_path / "c"
    disk_cache.write_checked(folder / "entry", b"payload")
    assert disk_cache.read_checked(folder / "entry", 100) == b"payload"
    os.chmod(folder / "entry", 0o666)
    monkey_warned = disk_cache._warned
    disk_cache._warned = False
    try:
        assert disk_cache.read_checked(folder / "entry", 100) is None
        assert disk_cache.read_checked(folder / "entry", 100) is None
    finally:
        disk_cache._warned = monkey_warned
    err = capfd.readouterr().err
    assert err.count("pyree: warning: not using the cache folder entry") == 1, err
    assert "group or others can write it (mode 0666)" in err


def test_folders_others_can_write_and_links_are_refused(tmp_path):
    open_folder = tmp_path / "open"
    open_folder.mkdir(mode=0o700)
    os.chmod(open_folder, 0o777)
    assert disk_cache.folder(open_folder) is None
    disk_cache.write_checked(open_folder / "entry", b"x")
    assert not (open_folder / "entry").exists()  # nothing written into it either
    under_open = open_folder / "below"  # a private folder below one others can write
    under_open.mkdir(mode=0o700)
    assert disk_cache.folder(under_open) is None
    mine = tmp_path / "mine"
    disk_cache.write_checked(mine / "entry", b"x")
    os.symlink(mine / "entry", mine / "link")
    assert disk_cache.read_checked(mine / "entry", 10) == b"x"
    assert disk_cache.read_checked(mine / "link", 10) is None  # an entry is never a link


def _tamper_package(entry: Path, proof: Path) -> None:
    """Makes a cached translation write `proof` when imported, its marker updated to match
    (what an attacker who can write the folder can do)."""
    import hashlib
    import json

    init = entry / "__init__.py"
    source = f"open({str(proof)!r}, 'w').write('ran')\n".encode() + init.read_bytes()
    init.write_bytes(source)
    marker = json.loads((entry / ".pyree-package").read_text())
    marker["files"]["__init__.py"] = {"size": len(source), "sha256": hashlib.sha256(source).hexdigest()}
    (entry / ".pyree-package").write_text(json.dumps(marker))


@needs_second_user
def test_a_cache_another_user_planted_runs_nothing(add_vmfb, shared_tmp):
    """The other user makes the shared cache folder first and plants a translation that
    would run their code as this user; this user's runs refuse the folder (one warning)
    and work without it."""
    proof = shared_tmp / "proof"
    made = Path(tempfile.mkdtemp())
    first = pyree_run(add_vmfb, made / "cache")  # a real cache, to copy entries from
    assert first.returncode == 0, first.stderr
    planted = shared_tmp / "planted"
    shutil.copytree(made / "cache", planted)
    [pkg] = (planted / "packages").glob("*/add")
    _tamper_package(pkg, proof)
    for p in [planted, *planted.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    planted_tar = shared_tmp / "planted.tar"
    shutil.make_archive(str(planted_tar)[:-4], "tar", planted)
    os.chmod(planted_tar, 0o644)
    shutil.rmtree(planted)
    cache = shared_tmp / "cache"
    as_attacker("mkdir", "-m", "0755", str(cache))
    as_attacker("tar", "-xf", str(planted_tar), "-C", str(cache))
    assert (cache / "packages").stat().st_uid == ATTACKER

    r = pyree_run(add_vmfb, cache, tmp=made)
    assert r.returncode == 0 and WANT in r.stdout, r.stderr
    assert not proof.exists()
    assert r.stderr.count("pyree: warning: not using the cache folder") == 1, r.stderr
    assert f"owned by uid {ATTACKER}" in r.stderr


@needs_second_user
def test_entries_another_user_wrote_into_this_users_folder_run_nothing(add_vmfb, shared_tmp):
    """This user's cache, whose translation folder was left writable by others (a
    careless chmod): the translation the other user planted there is refused."""
    proof = shared_tmp / "proof"
    cache = shared_tmp / "cache"
    r = pyree_run(add_vmfb, cache)
    assert r.returncode == 0, r.stderr
    [pkg] = (cache / "packages").glob("*/add")
    evil = shared_tmp / "evil"
    shutil.copytree(pkg, evil)
    _tamper_package(evil, proof)
    for p in [evil, *evil.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    for folder in (cache, cache / "packages", pkg.parent):
        os.chmod(folder, 0o711)
    os.chmod(pkg, 0o777)
    (pkg / "__init__.py").unlink()
    as_attacker("cp", str(evil / "__init__.py"), str(pkg / "__init__.py"))
    assert (pkg / "__init__.py").stat().st_uid == ATTACKER
    r = pyree_run(add_vmfb, cache)
    assert r.returncode == 0 and WANT in r.stdout, r.stderr
    assert not proof.exists()


@needs_second_user
def test_another_user_cannot_write_into_this_users_cache(add_vmfb, shared_tmp):
    cache = shared_tmp / "cache"
    r = pyree_run(add_vmfb, cache, umask=0)
    assert r.returncode == 0, r.stderr
    [pkg] = (cache / "packages").glob("*/add")
    for target in (cache / "native" / "x", pkg / "__init__.py", cache / "x"):
        with pytest.raises(subprocess.CalledProcessError):
            as_attacker("sh", "-c", f"echo planted > '{target}'")
    assert b"planted" not in (pkg / "__init__.py").read_bytes()


def test_a_damaged_cached_translation_is_made_again(add_vmfb, tmp_path):
    cache = tmp_path / "cache"
    assert WANT in pyree_run(add_vmfb, cache).stdout
    [pkg] = (cache / "packages").glob("*/add")
    rodata = pkg / "rodata.bin"
    original = rodata.read_bytes()
    for damage in (
        lambda: rodata.write_bytes(bytes([original[0] ^ 1]) + original[1:]),  # a flipped byte
        lambda: (pkg / "__init__.py").write_bytes((pkg / "__init__.py").read_bytes()[:-100]),
        lambda: (pkg / ".pyree-package").write_text("{"),
        lambda: (pkg / "extra.py").write_text("x = 1\n"),
        lambda: (pkg / "rodata.bin").unlink(),
    ):
        damage()
        r = pyree_run(add_vmfb, cache)
        assert r.returncode == 0 and WANT in r.stdout, r.stderr
        [again] = (cache / "packages").glob("*/add")
        assert sorted(os.listdir(again)) == [".pyree-package", "__init__.py", "rodata.bin"]
        assert (again / "rodata.bin").read_bytes() == original
    assert not list(pkg.glob("__pycache__"))  # no bytecode kept beside a checked source


def test_a_cached_translation_imports_the_source_that_was_checked(add_vmfb, tmp_path, monkeypatch):
    """The checked bytes are what runs, not a second read of the file."""
    from runtime_support.cache import package_cache
    from runtime_support.tools.run_cli import load_package

    monkeypatch.setenv("PYREE_CACHE_DIR", str(tmp_path / "cache"))
    folder, source = package_cache.package_for(str(add_vmfb))
    assert source is not None and source == (Path(folder) / "__init__.py").read_bytes()
    (Path(folder) / "__init__.py").write_text("raise SystemExit('the file was read again')\n")
    pkg = load_package(folder, source)
    assert "add" in pkg.EXPORTS
    assert not (Path(folder) / "__pycache__").exists()


def test_a_full_cache_disk_still_runs_the_program(add_vmfb, tmp_path, monkeypatch):
    """ENOSPC or EFBIG while the cache takes a translation: this run's own copy instead."""
    from runtime_support.cache import package_cache

    cache = tmp_path / "cache"
    monkeypatch.setenv("PYREE_CACHE_DIR", str(cache))
    real = package_cache._write

    def full_disk(data, folder, name, path):
        if str(folder).startswith(str(cache)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder))
        real(data, folder, name, path)

    monkeypatch.setattr(package_cache, "_write", full_disk)
    folder, source = package_cache.package_for(str(add_vmfb))
    assert not folder.startswith(str(cache)) and (Path(folder) / "__init__.py").is_file()
    assert source is None
    assert [p.name for p in (cache / "packages").iterdir()] == []  # nothing half-written left


def test_a_long_file_name_runs(add_vmfb, tmp_path):
    name = "m" * 245 + ".vmfb"  # 250 characters: the longest a file system takes is 255
    r = pyree_run(add_vmfb, tmp_path / "cache", name=name, tmp=tmp_path)
    assert r.returncode == 0 and WANT in r.stdout, r.stderr
