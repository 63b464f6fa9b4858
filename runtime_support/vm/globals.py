"""Module globals: value globals in the rwdata byte array, ref globals in a list.

Generated code calls these with the context's `rwdata` (bytearray) and `refs` (list).
"""

from __future__ import annotations

import struct

from runtime_support.errors import StatusCode, VMError
from runtime_support.vm.numerics import wrap_i32, wrap_i64
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


def global_load_ref(refs: list, index: int, type_name: str):
    """`vm.global.load.ref`: the value, type-checked (null always passes)."""
    _ref_index(refs, index)
    value = refs[index]
    if value is not None and not type_matches(value, type_name):
        check_ref_type(value, type_name)
    return value


def global_store_ref(refs: list, index: int, type_name: str, value) -> None:
    _ref_index(refs, index)
    if value is not None and not type_matches(value, type_name):
        check_ref_type(value, type_name)
    refs[index] = value


def cast_any_ref(value, type_name: str):
    """`vm.cast.any.ref`: the operand if it is null or of the type, else INVALID_ARGUMENT."""
    if value is not None and not type_matches(value, type_name):
        check_ref_type(value, type_name)
    return value
