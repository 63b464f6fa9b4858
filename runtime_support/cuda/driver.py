"""The CUDA driver, reached through pycuda, loaded only when the `cuda` device is asked for.

Importing pyree or a translated package never needs CUDA (IREE likewise loads libcuda at
run time). `open_driver()` imports `pycuda.driver`, initialises it and returns it; each way
it can fail is one line saying which piece is missing and how to fix it:

- pycuda is not installed          -> `pip install 'pyree[cuda]'` or
                                      `python -m runtime_support.cuda.install` (README: GPU)
- no driver (libcuda) can be loaded -> install the NVIDIA driver
- the driver sees no GPU            -> no device to run on

Driver errors raised later (module load, launch, copies) become `VMError`s carrying the
driver's own error text and the kernel's export name (`driver_error`).
"""

from __future__ import annotations

import importlib
import re

from runtime_support.errors import StatusCode, VMError

INSTALL_HINT = (
    "install it with: pip install 'pyree[cuda]', or python -m runtime_support.cuda.install "
    "where pycuda's build does not find CUDA (README, GPU)"
)


def open_driver(module_name: str = "pycuda.driver"):
    """The initialised pycuda driver module, or a one-line VMError(UNAVAILABLE)."""
    try:
        driver = importlib.import_module(module_name)
    except ImportError as e:
        missing = getattr(e, "name", "") or ""
        if missing.startswith("pycuda") or "pycuda" in str(e) and "libcuda" not in str(e):
            raise VMError(
                StatusCode.UNAVAILABLE, f"the cuda device needs pycuda, which is not installed; {INSTALL_HINT}"
            ) from None
        raise VMError(
            StatusCode.UNAVAILABLE,
            f"pycuda is installed but cannot load the CUDA driver (libcuda): {_one_line(e)}; "
            "install the NVIDIA driver",
        ) from None
    try:
        driver.init()
        count = driver.Device.count()
    except Exception as e:  # pycuda raises its own driver error classes
        raise VMError(
            StatusCode.UNAVAILABLE, f"the CUDA driver failed to initialise: {_one_line(e)}"
        ) from None
    if count == 0:
        raise VMError(StatusCode.UNAVAILABLE, "the CUDA driver reports no GPU; there is no cuda device to run on")
    return driver


def _one_line(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return " ".join(text.split())


# cuGetErrorString's text -> the CUresult name, for the errors IREE-compiled programs can
# meet (pycuda's exceptions carry only "<routine> failed: <text>", not the code).
_ERROR_NAMES = {
    "invalid argument": "CUDA_ERROR_INVALID_VALUE",
    "out of memory": "CUDA_ERROR_OUT_OF_MEMORY",
    "initialization error": "CUDA_ERROR_NOT_INITIALIZED",
    "no CUDA-capable device is detected": "CUDA_ERROR_NO_DEVICE",
    "invalid device ordinal": "CUDA_ERROR_INVALID_DEVICE",
    "device kernel image is invalid": "CUDA_ERROR_INVALID_IMAGE",
    "invalid device context": "CUDA_ERROR_INVALID_CONTEXT",
    "no kernel image is available for execution on the device": "CUDA_ERROR_NO_BINARY_FOR_GPU",
    "a PTX JIT compilation failed": "CUDA_ERROR_INVALID_PTX",
    "the provided PTX was compiled with an unsupported toolchain.": "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    "invalid resource handle": "CUDA_ERROR_INVALID_HANDLE",
    "named symbol not found": "CUDA_ERROR_NOT_FOUND",
    "an illegal memory access was encountered": "CUDA_ERROR_ILLEGAL_ADDRESS",
    "too many resources requested for launch": "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
    "the launch timed out and was terminated": "CUDA_ERROR_LAUNCH_TIMEOUT",
    "unspecified launch failure": "CUDA_ERROR_LAUNCH_FAILED",
    "operation not supported": "CUDA_ERROR_NOT_SUPPORTED",
    "unknown error": "CUDA_ERROR_UNKNOWN",
}
# CUresult name -> status code, as IREE's cuda_status_util.c maps them; others INTERNAL.
_STATUS = {
    "CUDA_ERROR_INVALID_VALUE": StatusCode.INVALID_ARGUMENT,
    "CUDA_ERROR_OUT_OF_MEMORY": StatusCode.RESOURCE_EXHAUSTED,
    "CUDA_ERROR_NOT_FOUND": StatusCode.NOT_FOUND,
    "CUDA_ERROR_NO_DEVICE": StatusCode.UNAVAILABLE,
    "CUDA_ERROR_INVALID_DEVICE": StatusCode.UNAVAILABLE,
    "CUDA_ERROR_NOT_SUPPORTED": StatusCode.UNIMPLEMENTED,
}
_NAME = re.compile(r"CUDA_ERROR_[A-Z_]+")


def error_name(error: BaseException) -> str | None:
    """The CUresult name of a driver error: named in its text, or looked up by the text
    cuGetErrorString gives (after pycuda's "<routine> failed: ")."""
    text = _one_line(error)
    named = _NAME.search(text)
    if named:
        return named.group(0)
    return _ERROR_NAMES.get(text.rpartition(" failed: ")[2].strip())


def driver_error(what: str, error: BaseException, *, export: str | None = None) -> VMError:
    """A driver failure as one-line VMError: the CUresult name and the driver's text, and
    the kernel when there is one."""
    where = f" (kernel {export!r})" if export else ""
    name = error_name(error)
    text = _one_line(error)
    if name and name not in text:
        text = f"{name}: {text}"
    return VMError(_STATUS.get(name, StatusCode.INTERNAL), f"{what} failed{where}: {text}")


__all__ = ["INSTALL_HINT", "driver_error", "error_name", "open_driver"]
