"""Installs pycuda, the `cuda` extra, with the build settings its source build needs.

    python -m runtime_support.cuda.install            # find CUDA, build and install pycuda
    python -m runtime_support.cuda.install --dry-run  # only print what it found and would do
    python -m runtime_support.cuda.install --wheel-dir DIR  # build a wheel, install nothing
    python -m runtime_support.cuda.install --user-defaults
        # also write ~/.aksetup-defaults.py, so that a plain `pip install 'pyree[cuda]'`
        # (or `pip install pycuda`) builds with the same settings later

pycuda is published as a source distribution only. Its build (setup.py + aksetup_helper.py)
reads its settings from, in order, /etc/aksetup-defaults.py, ~/.aksetup-defaults.py and a
`siteconf.py` in the unpacked source; it reads no environment variable for them. Without
any, it waits 10 seconds and then guesses: CUDA_ROOT = the folder above the first `nvcc`
on PATH (wrong when that `nvcc` is a wrapper script or a symlink farm, e.g. /usr/local/bin,
and then `cuda.h` is not found), and it links `-lcuda` and `-lcurand` (cuRAND is not in
every toolkit install).

This helper finds the toolkit (CUDA_HOME, CUDA_PATH, CUDA_ROOT, the real location of
`nvcc`, /usr/local/cuda: the first holding include/cuda.h), looks for libcuda (the
driver, or the toolkit's link stub) and libcurand, writes the settings (CUDA_ROOT,
CUDA_INC_DIR, CUDADRV_LIB_DIR, CUDA_ENABLE_CURAND and CURAND_LIB_DIR) into pycuda's
`siteconf.py` and runs pip on that source. Importing pyree never needs any of this.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Callable, Mapping

ENV_VARS = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")
DEFAULT_ROOT = "/usr/local/cuda"
# Where toolkits keep their libraries (lib64 on Linux x86-64, lib on others and in pip
# wheels; targets/<triple>/lib in the split layout; stubs/ holds libcuda.so for linking
# on machines without a driver).
_LIB_GLOBS = ("lib64", "lib", "targets/*/lib", "lib64/stubs", "lib/stubs", "targets/*/lib/stubs")
# System folders the linker searches anyway, where the driver installs libcuda.
_SYSTEM_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu", "/usr/lib")


class InstallError(Exception):
    """Why pycuda cannot be configured here (one line)."""


def _has_header(root: str) -> bool:
    return os.path.isfile(os.path.join(root, "include", "cuda.h"))


def nvcc_root(which: Callable[[str], str | None] = shutil.which, run=subprocess.run) -> str | None:
    """The toolkit folder of the `nvcc` on PATH: above its real path, or, for a wrapper
    script, the `_HERE_` folder nvcc itself reports in a dry run."""
    nvcc = which("nvcc")
    if nvcc is None:
        return None
    real = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    if _has_header(real):
        return real
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "probe.cu")
        Path(source).write_text("")
        try:
            out = run(
                [nvcc, "--dryrun", "-c", source, "-o", os.path.join(tmp, "probe.o")],
                capture_output=True, text=True, timeout=60,
            )
        except (OSError, subprocess.SubprocessError):
            return real
    for line in (out.stdout or "").splitlines() + (out.stderr or "").splitlines():
        key, _, value = line.lstrip("#$ ").partition("=")
        if key == "_HERE_" and value.strip():
            return os.path.dirname(os.path.normpath(value.strip()))
    return real


def find_cuda_root(
    env: Mapping[str, str] = os.environ,
    which: Callable[[str], str | None] = shutil.which,
    run=subprocess.run,
    default_root: str = DEFAULT_ROOT,
) -> tuple[str, str]:
    """(root, how it was found): the first candidate holding include/cuda.h."""
    tried = []
    candidates = [(env.get(var), f"${var}") for var in ENV_VARS]
    candidates.append((None, "nvcc"))  # resolved lazily: it may run nvcc
    candidates.append((default_root, default_root))
    for root, how in candidates:
        if how == "nvcc":
            root = nvcc_root(which, run)
            how = "the nvcc on PATH"
        if not root:
            continue
        root = os.path.normpath(root)
        if _has_header(root):
            return root, how
        tried.append(f"{root} ({how})")
    where = "; ".join(tried) if tried else "no CUDA_HOME/CUDA_PATH/CUDA_ROOT, no nvcc on PATH"
    raise InstallError(
        f"no CUDA toolkit with include/cuda.h found (tried: {where}); install the CUDA toolkit "
        "and set CUDA_HOME to its folder"
    )


def library_dirs(root: str, name: str, extra_dirs=_SYSTEM_LIB_DIRS) -> list[str]:
    """Folders under `root` (then the system's) holding lib<name>.so*, in search order."""
    folders = [f for p in _LIB_GLOBS for f in sorted(glob.glob(os.path.join(root, p)))] + list(extra_dirs)
    return _unique(f for f in folders if glob.glob(os.path.join(f, f"lib{name}.so*")))


def _unique(folders) -> list[str]:
    """Folders in order, each real folder once (lib64 is often a link to lib)."""
    seen, out = set(), []
    for folder in folders:
        real = os.path.realpath(folder)
        if real not in seen:
            seen.add(real)
            out.append(folder)
    return out


def build_settings(root: str, extra_dirs=_SYSTEM_LIB_DIRS) -> dict:
    """pycuda's aksetup settings for the toolkit at `root`."""
    toolkit_libs = _unique(d for p in _LIB_GLOBS[:3] for d in sorted(glob.glob(os.path.join(root, p))))
    driver = library_dirs(root, "cuda", extra_dirs)
    curand = library_dirs(root, "curand", extra_dirs)
    settings = {
        "CUDA_ROOT": root,
        "CUDA_INC_DIR": [os.path.join(root, "include")],
        # libcuda: the driver's (system folders) or the toolkit's link stub; the real one
        # is found at run time by the dynamic loader.
        "CUDADRV_LIB_DIR": driver or toolkit_libs,
        "CUDART_LIB_DIR": library_dirs(root, "cudart", ()) or toolkit_libs,
        "CUDA_ENABLE_CURAND": bool(curand),
    }
    if curand:
        settings["CURAND_LIB_DIR"] = curand
    return settings


def settings_problems(settings: dict) -> list[str]:
    """What will make the build fail or lose a feature, one line each."""
    problems = []
    if not any(glob.glob(os.path.join(d, "libcuda.so*")) for d in settings["CUDADRV_LIB_DIR"]):
        problems.append(
            "no libcuda.so (NVIDIA driver or the toolkit's lib64/stubs): linking pycuda will fail; "
            "install the NVIDIA driver"
        )
    if not settings["CUDA_ENABLE_CURAND"]:
        problems.append("no libcurand: pycuda is built without pycuda.curandom (pyree does not use it)")
    return problems


def siteconf_text(settings: dict) -> str:
    lines = ["# Written by python -m runtime_support.cuda.install (pyree)"]
    lines += [f"{key} = {value!r}" for key, value in sorted(settings.items())]
    return "\n".join(lines) + "\n"


def _unpack_sdist(workdir: Path, pip: list[str], spec: str) -> Path:
    subprocess.run(
        pip + ["download", spec, "--no-binary", ":all:", "--no-deps", "--no-build-isolation", "-d", str(workdir)],
        check=True,
    )
    (archive,) = [p for p in workdir.iterdir() if p.name.endswith((".tar.gz", ".zip"))]
    with tarfile.open(archive) as tar:
        tar.extractall(workdir, filter="data")
    (source,) = [p for p in workdir.iterdir() if p.is_dir() and (p / "setup.py").is_file()]
    return source


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m runtime_support.cuda.install",
        description="Build and install pycuda (pyree's `cuda` extra) with the CUDA settings found here.",
    )
    p.add_argument("--cuda-root", help="the CUDA toolkit folder (default: found as the module docstring says)")
    p.add_argument("--dry-run", action="store_true", help="print the settings and the pip commands only")
    p.add_argument("--user-defaults", action="store_true", help="also write ~/.aksetup-defaults.py for later pip installs")
    p.add_argument("--spec", default="pycuda", help="what to install (default: pycuda)")
    p.add_argument("--wheel-dir", help="build a pycuda wheel into this folder instead of installing it")
    args = p.parse_args(argv)
    try:
        if args.cuda_root:
            root, how = os.path.normpath(args.cuda_root), "--cuda-root"
            if not _has_header(root):
                raise InstallError(f"{root} has no include/cuda.h; pass the CUDA toolkit's folder")
        else:
            root, how = find_cuda_root()
    except InstallError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    settings = build_settings(root)
    print(f"CUDA toolkit: {root} (from {how})")
    print(siteconf_text(settings), end="")
    for problem in settings_problems(settings):
        print(f"warning: {problem}", file=sys.stderr)
    pip = [sys.executable, "-m", "pip"]
    if args.user_defaults and not args.dry_run:
        target = Path.home() / ".aksetup-defaults.py"
        target.write_text(siteconf_text(settings))
        print(f"wrote {target}")
    if args.dry_run:
        print("would run: " + " ".join(pip + ["download", args.spec, "--no-binary", ":all:", "--no-deps"]))
        action = ["wheel", "--no-deps", "-w", args.wheel_dir] if args.wheel_dir else ["install"]
        print("would write siteconf.py into the unpacked source and run: " + " ".join(pip + action + ["<source>"]))
        return 0
    with tempfile.TemporaryDirectory(prefix="pyree-pycuda-") as tmp:
        try:
            source = _unpack_sdist(Path(tmp), pip, args.spec)
            (source / "siteconf.py").write_text(siteconf_text(settings))
            if args.wheel_dir:
                subprocess.run(pip + ["wheel", "--no-deps", "-w", args.wheel_dir, str(source)], check=True)
            else:
                subprocess.run(pip + ["install", str(source)], check=True)
        except subprocess.CalledProcessError as e:
            print(f"error: {' '.join(map(str, e.cmd[:4]))} ... failed with exit status {e.returncode}", file=sys.stderr)
            return e.returncode or 1
    if args.wheel_dir:
        print(f"pycuda wheel built in {args.wheel_dir}; pip install it on the GPU machine")
    else:
        print("pycuda installed; pyree's cuda device: load(device='cuda'), pyree-run --device=cuda")
    return 0


if __name__ == "__main__":
    sys.exit(main())
