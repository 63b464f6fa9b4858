"""The CUDA driver, reached through pycuda, loaded only when the `cuda` device is asked for.

Importing pyree or a translated package never needs CUDA (IREE likewise loads libcuda at
run time). `open_driver()` imports `pycuda.driver`, initialises it and returns it; each way
it can fail is one line saying which piece is missing and how to fix it:

- pycuda is not installed          -> `pip install 'pyree[cuda]'` (README: CUDA)
- no driver (libcuda) can be loaded -> install the NVIDIA driver
- the driver sees no GPU            -> no device to run on

Driver errors raised later (module load, launch, copies) become `VMError`s carrying the
driver's own error text and the kernel's export name (`driver_error`).
"""

from __future__ import annotations

import importlib

from runtime_support.errors import StatusCode, VMError

INSTALL_HINT = "install it with: pip install 'pyree[cuda]' (see README, CUDA)"


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


def driver_error(what: str, error: BaseException, *, export: str | None = None) -> VMError:
    """A driver failure as a VMError: the driver's text, and the kernel when there is one."""
    where = f" (kernel {export!r})" if export else ""
    code = StatusCode.RESOURCE_EXHAUSTED if "out of memory" in str(error).lower() else StatusCode.INTERNAL
    return VMError(code, f"{what} failed{where}: {_one_line(error)}")


__all__ = ["INSTALL_HINT", "driver_error", "open_driver"]
