"""Module globals: value globals in the rwdata bytes, ref globals in a sparse table.

Generated code calls these with the context's `rwdata` (`new_rwdata`) and `refs`
(`RefGlobals`). Both sizes come from the module file, so neither is paid for up front:
large rwdata is an anonymous mapping whose zero pages are committed on first store, and
ref globals hold only the slots ever stored (a module declaring 2**30 ref globals costs
nothing until it uses them, as in IREE, whose zeroed state is never touched).
"""

from __future__ import annotations

import mmap
import struct

from runtime_support.errors import StatusCode, VMError
from runtime_support.vm.numerics import wrap_i32, wrap_i64
from runtime_support.vm.limits import exhausted

# rwdata below this size is a plain bytearray (cheaper to create than a mapping).
_MAPPED_RWDATA = 1 << 20


def new_rwdata(size: int):
    """Zeroed storage for `size` bytes of value globals (a bytearray or an anonymous
    mapping; both support len() and struct's pack_into/unpack_from)."""
    if size < 0:
        raise VMError(StatusCode.INVALID_ARGUMENT, f"global bytes capacity {size} is negative")
    if size < _MAPPED_RWDATA:
        return bytearray(size)
    try:
        return mmap.mmap(-1, size)
    except (OSError, OverflowError, ValueError, MemoryError):
        raise exhausted("module state", size, "global bytes") from None


class RefGlobals:
    """`count` ref globals, all null until stored; only stored slots take memory.

    `get(index)` is the slot table's own `dict.get` (None for an unset slot), for loads
    that need neither a range check nor a type check (generated code, where the
    translator proved both)."""

    __slots__ = ("_count", "_slots", "get")

    def __init__(self, count: int) -> None:
        if count < 0:
            raise VMError(StatusCode.INVALID_ARGUMENT, f"global ref count {count} is negative")
        self._count = count
        self._slots: dict[int, object] = {}
        self.get = self._slots.get

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: int):
        return self._slots.get(index)

    def __setitem__(self, index: int, value) -> None:
        if value is None:
            self._slots.pop(index, None)
        else:
            self._slots[index] = value

    def clear(self) -> None:
        """Drops every ref (the count stays)."""
        self._slots.clear()

    def __repr__(self) -> str:
        return f"<RefGlobals {len(self._slots)} of {self._count} set>"


from runtime_support.vm.refs import check_ref_type, type_matches

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


def _bad_offset(offset: int, width: int, size: int) -> VMError:
    return VMError(
        StatusCode.OUT_OF_RANGE,
        f"global byte offset {offset} (+{width}) outside rwdata of {size} bytes",
    )


def _loader(s: struct.Struct):
    unpack = s.unpack_from
    width = s.size

    def load(rwdata: bytearray, offset: int):
        if offset < 0 or offset + width > len(rwdata):
            raise _bad_offset(offset, width, len(rwdata))
        return unpack(rwdata, offset)[0]

    return load


def _storer(s: struct.Struct, fix):
    pack = s.pack_into
    width = s.size

    def store(rwdata: bytearray, offset: int, value) -> None:
        if offset < 0 or offset + width > len(rwdata):
            raise _bad_offset(offset, width, len(rwdata))
        pack(rwdata, offset, fix(value))

    return store


_w32, _w64 = wrap_i32, wrap_i64


global_load_i32 = _loader(_I32)
global_load_i64 = _loader(_I64)
global_load_f32 = _loader(_F32)
global_load_f64 = _loader(_F64)
global_store_i32 = _storer(_I32, _w32)
global_store_i64 = _storer(_I64, _w64)
global_store_f32 = _storer(_F32, float)
global_store_f64 = _storer(_F64, float)


def _ref_index(refs: list, index: int) -> None:
    if not 0 <= index < len(refs):
        raise VMError(
            StatusCode.OUT_OF_RANGE, f"ref global {index} out of range ({len(refs)} ref globals)"
        )


def global_load_ref(refs: RefGlobals, index: int, type_name: str):
    """`vm.global.load.ref`: the value, type-checked (null always passes)."""
    if type(refs) is RefGlobals and 0 <= index < refs._count:
        value = refs._slots.get(index)
    else:
        _ref_index(refs, index)
        value = refs[index]
    if value is not None and not type_matches(value, type_name):
        check_ref_type(value, type_name)
    return value


def global_store_ref(refs: RefGlobals, index: int, type_name: str, value) -> None:
    _ref_index(refs, index)
    if value is not None and not type_matches(value, type_name):
        check_ref_type(value, type_name)
    refs[index] = value


def cast_any_ref(value, type_name: str):
    """`vm.cast.any.ref`: the operand if it is null or of the type, else INVALID_ARGUMENT."""
    if value is not None and not type_matches(value, type_name):
        check_ref_type(value, type_name)
    return value
