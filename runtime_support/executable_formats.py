"""Executable formats: which ones pyree runs, and what to say about the others.

Used by `pyree-translate` (a warning naming each format pyree cannot run) and by
`ModuleContext` (a one-line error at load instead of the device target dump the VM's
device-matching code fails with).
"""

from __future__ import annotations

import re

# The flags that build a module pyree runs (the local CPU device, code for this machine).
RECOMPILE = (
    "--iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu "
    "--iree-llvmcpu-target-cpu=host"
)

# Format pattern -> what it is. Checked in order; the first match names the format.
_KINDS = (
    (r"vmvx-bytecode-fb", "VMVX bytecode, IREE's portable interpreter"),
    (r"embedded-elf-.+|system-elf-.+|system-dll-.+|system-dylib-.+", "native CPU code for {arch}"),
    (r"cuda-nvptx-fb", "CUDA code for NVIDIA GPUs"),
    (r"vulkan-spirv-fb(-ptr)?", "Vulkan SPIR-V code for GPUs"),
    (r"rocm-hsaco-fb|hip-hsaco-fb|amdgpu-.+", "ROCm/HIP code for AMD GPUs"),
    (r"metal-msl-fb", "Metal code for Apple GPUs"),
    (r"webgpu-wgsl-fb", "WebGPU code"),
)

# A rodata string that names an executable format (what the device-matching code queries).
FORMAT_RE = re.compile(
    r"(?:vmvx-bytecode-fb|(?:embedded-elf|system-elf|system-dll|system-dylib)-[a-z0-9_]+"
    r"|[a-z0-9]+(?:-[a-z0-9]+)*-fb(?:-ptr)?)"
)

_TARGET_RE = re.compile(r'#hal\.executable\.target<"[^"]*", "([^"]+)"')


def supported_formats() -> list[str]:
    from runtime_support.loaders import supported_formats as loader_formats

    return loader_formats()


def is_supported(fmt: str) -> bool:
    return fmt in supported_formats()


def describe(fmt: str) -> str:
    """`vmvx-bytecode-fb` -> "VMVX bytecode (IREE's portable interpreter)"."""
    for pattern, text in _KINDS:
        if re.fullmatch(pattern, fmt):
            return text.format(arch=fmt.rsplit("-", 1)[-1])
    return "an unknown executable format"


# Formats a pyree device other than the CPU runs: format -> how to ask for that device.
DEVICE_FORMATS = {
    "cuda-nvptx-fb": "the cuda device (load(device='cuda'), pyree-run --device=cuda; needs pycuda and a GPU)",
}


# What a module for a device needs to be built with (for its error messages).
DEVICE_RECOMPILE = {"cuda": "--iree-hal-target-device=cuda --iree-cuda-target=sm_XY (the GPU's)"}


def runs_on(fmt: str, device=None) -> bool:
    """Whether `device` (default: the CPU device) runs executables of format `fmt`."""
    formats = getattr(device, "executable_formats", None)
    return fmt in formats if formats is not None else is_supported(fmt)


def unsupported_reason(fmt: str, device=None) -> str:
    """One sentence: what `fmt` is, that pyree cannot run it, what it runs, what to do."""
    name = getattr(device, "identifier", "")
    if name in DEVICE_RECOMPILE:
        return (
            f"executable format '{fmt}' ({describe(fmt)}) does not run on the {name} device, "
            f"which runs {', '.join(device.executable_formats)}; load it with device='local' "
            f"if it is CPU code, or recompile with {DEVICE_RECOMPILE[name]}"
        )
    if fmt in DEVICE_FORMATS:
        return (
            f"executable format '{fmt}' ({describe(fmt)}) runs only on {DEVICE_FORMATS[fmt]}, "
            f"not on the CPU, which runs {', '.join(supported_formats())}; for the CPU "
            f"recompile with {RECOMPILE}"
        )
    return (
        f"executable format '{fmt}' ({describe(fmt)}) cannot run in pyree, which runs "
        f"{', '.join(supported_formats())}; recompile with {RECOMPILE}"
    )


def formats_in_device_error(message: str) -> list[str]:
    """Executable formats named by the VM's `HAL device ... not found or unavailable:
    #hal.device.target<...>` failure (the module's device-matching code)."""
    if "not found or unavailable" not in message:
        return []
    return list(dict.fromkeys(_TARGET_RE.findall(message)))
