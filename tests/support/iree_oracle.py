"""IREE's own runtime (`iree.runtime` 3.13) as the oracle for differential tests.

    iree_run(vmfb_path, "f", inputs) -> list of numpy values

Inputs are what `abi_inputs.inputs_for_signature` produces: numpy arrays for tensors and numpy
scalars (or Python numbers) for scalars. Tensor element types are taken from the function's
signature, not from the array dtype, so bf16 given as raw uint16 bits and i1 given as bool work.
Results come back as numpy arrays (tensors) and typed numpy scalars; refs that are not buffer
views are returned as the raw runtime object.

The signature comes from the export's `iree.abi.declaration` reflection (full programs) or, for
VM-level modules without one, from `iree-dump-module --output=metadata`.

`IreeSession` keeps one VM context alive across calls, so module state (globals) carries over
from one call to the next, as it does for a loaded module in IREE.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

from abi_inputs import Signature, TypeSpec, numpy_dtype, parse_signature, parse_type

try:
    import iree.runtime as rt
except ImportError:  # pragma: no cover - the test extra pins iree-base-runtime
    rt = None

# MLIR element type -> IREE HAL element type name (runtime/src/iree/hal/buffer_view.h).
_HAL_ELEMENT_TYPES = {
    "i1": "BOOL_8",
    "i8": "INT_8",
    "i16": "INT_16",
    "i32": "INT_32",
    "i64": "INT_64",
    "si8": "SINT_8",
    "si16": "SINT_16",
    "si32": "SINT_32",
    "si64": "SINT_64",
    "ui8": "UINT_8",
    "ui16": "UINT_16",
    "ui32": "UINT_32",
    "ui64": "UINT_64",
    "index": "INT_64",
    "f16": "FLOAT_16",
    "bf16": "BFLOAT_16",
    "f32": "FLOAT_32",
    "f64": "FLOAT_64",
}

# HAL element type name -> MLIR element type, for results.
_FROM_HAL = {
    "BOOL_8": "i1",
    "INT_8": "i8",
    "INT_16": "i16",
    "INT_32": "i32",
    "INT_64": "i64",
    "SINT_8": "si8",
    "SINT_16": "si16",
    "SINT_32": "si32",
    "SINT_64": "si64",
    "UINT_8": "ui8",
    "UINT_16": "ui16",
    "UINT_32": "ui32",
    "UINT_64": "ui64",
    "FLOAT_16": "f16",
    "BFLOAT_16": "bf16",
    "FLOAT_32": "f32",
    "FLOAT_64": "f64",
    "OPAQUE_8": "i8",
    "OPAQUE_16": "i16",
    "OPAQUE_32": "i32",
    "OPAQUE_64": "i64",
}


def _require_runtime():
    if rt is None:
        raise RuntimeError("iree.runtime is not installed (pip install iree-base-runtime==3.13.0)")


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} not found on PATH")
    return path


@functools.lru_cache(maxsize=256)
def _export_signatures_cached(path: str, mtime_ns: int) -> dict:
    out = subprocess.run(
        [_tool("iree-dump-module"), "--output=metadata", path],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    sigs = {}
    in_exports = False
    for line in out.splitlines():
        if line.startswith("Exported Functions:"):
            in_exports = True
            continue
        if in_exports:
            m = re.match(r"\s*\[\s*\d+\]\s+(\S.*)$", line)
            if m:
                text = m.group(1).strip()
                sigs[text.split("(", 1)[0]] = text
            elif line.strip() and not line.startswith(" " * 8):
                in_exports = False
    return sigs


def export_signatures(vmfb_path) -> dict:
    """{export name: "name(i32, i64) -> (i32)"} from iree-dump-module's metadata."""
    p = Path(vmfb_path)
    return _export_signatures_cached(str(p.resolve()), p.stat().st_mtime_ns)


_DTYPE_ELEMENTS = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.float16): "f16",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.bool_): "i1",
}


def _hal_element_type(element: str):
    try:
        return getattr(rt.HalElementType, _HAL_ELEMENT_TYPES[element])
    except KeyError:
        raise ValueError(f"no HAL element type for {element!r}") from None


def _element_name(hal_type) -> str:
    for name in _FROM_HAL:
        if int(getattr(rt.HalElementType, name)) == int(hal_type):
            return _FROM_HAL[name]
    raise ValueError(f"unsupported HAL element type {int(hal_type):#x}")


def _wrap_int(value: int, element: str):
    dtype = numpy_dtype(element)
    if element == "i1":
        return np.bool_(value & 1)
    bits = dtype.itemsize * 8
    v = int(value) & ((1 << bits) - 1)
    if dtype.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return dtype.type(v)


def _plain_dtype(dtype: np.dtype) -> np.dtype:
    """An int/float dtype of the same size (bool and ml_dtypes types travel as raw unsigned bits)."""
    return dtype if dtype.kind in "iuf" else np.dtype(f"u{dtype.itemsize}")


def _plain_view(arr: np.ndarray) -> np.ndarray:
    return arr if arr.dtype.kind in "iuf" else arr.view(_plain_dtype(arr.dtype))


class IreeSession:
    """One loaded module in one VM context (state persists across calls)."""

    def __init__(self, vmfb_path, driver: str = "local-sync", parameters=None):
        """`parameters`: None or `(scope, path)` pairs in `--parameters` order (scope ""
        for an unscoped file); each scope gets one index holding its files, in order."""
        _require_runtime()
        self.path = Path(vmfb_path)
        self.instance = rt.VmInstance()
        self.device = rt.get_device(driver)
        modules = [rt.create_hal_module(self.instance, self.device)]
        if parameters is not None:
            indices: dict = {}
            for scope, file in parameters:
                indices.setdefault(scope, rt.ParameterIndex()).load(str(file))
            providers = [index.create_provider(scope=scope) for scope, index in indices.items()]
            modules.append(rt.create_io_parameters_module(self.instance, *providers))
        self.module = rt.VmModule.copy_buffer(self.instance, self.path.read_bytes())
        self.context = rt.VmContext(self.instance, modules=[*modules, self.module])

    def signature(self, function: str) -> Signature:
        fn = self._lookup(function)
        decl = fn.reflection.get("iree.abi.declaration")
        if decl:
            return parse_signature(decl)
        sigs = export_signatures(self.path)
        if function not in sigs:
            raise KeyError(f"no signature for export {function!r} in {self.path}")
        return parse_signature(sigs[function])

    def _lookup(self, function: str):
        fn = self.module.lookup_function(function)
        if fn is None:
            raise KeyError(f"module {self.path} has no export {function!r}")
        return fn

    def _push_arg(self, args, spec: TypeSpec, value):
        if spec.kind == "opaque" and isinstance(value, np.ndarray):
            # An export without an ABI declaration (iree-turbine's): a ref argument takes
            # a buffer view of the array's own shape and element type (as the contract
            # has pyree do).
            spec = parse_type(f"tensor<{''.join(f'{d}x' for d in value.shape)}"
                              f"{_DTYPE_ELEMENTS[value.dtype]}>")
        if spec.kind == "tensor":
            arr = np.asarray(value)
            if spec.element == "i1":
                arr = arr.astype(np.bool_)
            elif spec.element == "bf16" and arr.dtype != np.uint16:
                arr = arr.astype(numpy_dtype("bf16"))
            host = _plain_view(arr if arr.flags.c_contiguous else arr.copy(order="C"))
            bv = self.device.allocator.allocate_buffer_copy(
                memory_type=rt.MemoryType.DEVICE_LOCAL,
                allowed_usage=rt.BufferUsage.DEFAULT,
                device=self.device,
                buffer=host,
                element_type=_hal_element_type(spec.element),
            )
            args.push_ref(bv)
        elif spec.kind == "scalar":
            if spec.element in ("f16", "bf16"):
                raise ValueError(f"{spec.element} scalars are not supported by this helper")
            if spec.element in ("f32", "f64"):
                args.push_float(float(value))
            else:
                args.push_int(int(value))
        else:
            if isinstance(value, (np.generic, int, float)):
                raise ValueError(f"cannot pass {value!r} as {spec.text}")
            args.push_ref(value)

    def _result(self, rets, i: int, spec):
        if spec is not None and spec.kind == "scalar":
            v = rets.get_variant(i)
            if spec.element == "f32":
                return np.float32(v)
            if spec.element == "f64":
                return np.float64(v)
            return _wrap_int(int(v), spec.element)
        if spec is None or spec.kind in ("tensor", "opaque"):
            v = rets.get_variant(i)
            if isinstance(v, (int, float)):
                return v
            try:
                bv = rets.get_as_object(i, rt.HalBufferView)
            except Exception:  # not a buffer view: hand back whatever the runtime has
                return v
            if bv is None:
                return None
            element = _element_name(bv.element_type)
            shape = tuple(bv.shape)
            dtype = numpy_dtype(element)
            raw = _plain_dtype(dtype)
            arr = np.array(bv.map().asarray(shape, raw), copy=True)
            if raw != dtype:
                arr = arr.view(dtype)
            return arr
        raise AssertionError(spec)

    def call(self, function: str, inputs, signature: Signature | None = None) -> list:
        fn = self._lookup(function)
        sig = signature or self.signature(function)
        if len(inputs) != len(sig.args):
            raise ValueError(f"{function}: expected {len(sig.args)} inputs, got {len(inputs)}")
        args = rt.VmVariantList(max(1, len(inputs)))
        for spec, value in zip(sig.args, inputs):
            self._push_arg(args, spec, value)
        rets = rt.VmVariantList(max(1, len(sig.results)))
        self.context.invoke(fn, args, rets)
        return [
            self._result(rets, i, sig.results[i] if i < len(sig.results) else None)
            for i in range(rets.size)
        ]


def iree_run(vmfb_path, function: str, inputs, driver: str = "local-sync", parameters=None) -> list:
    """Run one export of a fresh module instance under iree.runtime; numpy results."""
    session = IreeSession(vmfb_path, driver=driver, parameters=parameters)
    return session.call(function, list(inputs))
