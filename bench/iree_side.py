"""One vmfb under iree.runtime 3.13, numpy in and numpy out, on its cheapest Python path:
a VmContext invoked directly, arguments copied into device buffers with
`allocate_buffer_copy` (what its function invoker does), results mapped (zero-copy, the
mapping kept alive by the array) rather than copied.
"""

from __future__ import annotations

import numpy as np

_ELEMENT = {
    np.dtype(np.float32): "FLOAT_32",
    np.dtype(np.float64): "FLOAT_64",
    np.dtype(np.float16): "FLOAT_16",
    np.dtype(np.int64): "INT_64",
    np.dtype(np.int32): "INT_32",
    np.dtype(np.int16): "INT_16",
    np.dtype(np.int8): "INT_8",
    np.dtype(np.uint8): "UINT_8",
    np.dtype(np.bool_): "BOOL_8",
}
_DTYPE = {
    "FLOAT_32": np.float32, "FLOAT_64": np.float64, "FLOAT_16": np.float16,
    "INT_64": np.int64, "INT_32": np.int32, "INT_16": np.int16, "INT_8": np.int8,
    "SINT_64": np.int64, "SINT_32": np.int32, "UINT_8": np.uint8, "BOOL_8": np.bool_,
}


class IreeProgram:
    def __init__(self, vmfb, driver: str) -> None:
        import iree.runtime as rt

        self.rt = rt
        self.instance = rt.VmInstance()
        self.device = rt.get_device(driver)
        self.vm = rt.VmModule.mmap(self.instance, str(vmfb))
        hal = rt.create_hal_module(self.instance, self.device)
        self.context = rt.VmContext(self.instance, modules=[hal, self.vm])
        self._element = {k: getattr(rt.HalElementType, v) for k, v in _ELEMENT.items()}
        self._dtype = {int(getattr(rt.HalElementType, k)): np.dtype(v) for k, v in _DTYPE.items()}

    def function(self, name: str):
        """A callable: numpy arrays in, a list of numpy arrays out."""
        rt = self.rt
        fn = self.vm.lookup_function(name)
        if fn is None:
            raise KeyError(f"no export {name!r}")
        allocate = self.device.allocator.allocate_buffer_copy
        device, element, dtypes = self.device, self._element, self._dtype
        memory, usage = rt.MemoryType.DEVICE_LOCAL, rt.BufferUsage.DEFAULT
        invoke, View = self.context.invoke, rt.HalBufferView

        def call(*arrays):
            args = rt.VmVariantList(len(arrays))
            for a in arrays:
                args.push_ref(allocate(memory_type=memory, allowed_usage=usage, device=device,
                                       buffer=a, element_type=element[a.dtype]))
            rets = rt.VmVariantList(1)
            invoke(fn, args, rets)
            out = []
            for i in range(rets.size):
                bv = rets.get_as_object(i, View)
                out.append(bv.map().asarray(tuple(bv.shape), dtypes[int(bv.element_type)]))
            return out

        return call
