"""The buffer and list ops of VMVX kernels' scalar translation (translator/vmvx.py maps
the generated code's `buffer` and `list` helpers here).

Every name of runtime_support/vm/buffer.py's and list.py's op tables is here, the same
object, except the ops a kernel's inner loop runs per element: the buffer loads and
stores below, and `list.get.ref` (a kernel's reads of its binding list). Those are one
function call each instead of two (the op, then VMBuffer's method), with the same
checks in the same order and the same errors: a null buffer, a read-only buffer (stores),
an element index out of bounds. Anything that is not a plain VMBuffer or VMList goes to
the general op, which raises what it raises.
"""

from __future__ import annotations

from runtime_support.vm import buffer as _buffer
from runtime_support.vm import list as _list
from runtime_support.vm.buffer import VMBuffer
from runtime_support.vm.list import VMList

for _module in (_buffer, _list):  # (every public name, the ops below then replaced)
    for _name, _value in vars(_module).items():
        if not _name.startswith("_") and not isinstance(_value, type(_buffer)):
            globals().setdefault(_name, _value)
del _module, _name, _value

_REF_KIND = VMList("!vm.buffer")._kind  # (the kind of a list of refs)


def list_get_ref(lst, index: int, type_name: str = "?"):
    """`vm.list.get.ref` (runtime_support/vm/list.py's, one call for a list of refs)."""
    if type(lst) is VMList and lst._kind == _REF_KIND and index >= 0:
        items = lst._items
        if index < len(items):
            obj = items[index]
            if obj is None or (type(obj) is VMBuffer and type_name == "!vm.buffer"):
                return obj
    return _list.list_get_ref(lst, index, type_name)


def buffer_load_i32(buf, index):
    if index >= 0 and type(buf) is VMBuffer:
        try:
            return buf._v_i[index]
        except IndexError:
            pass
    return _buffer.buffer_load_i32(buf, index)


def buffer_load_i64(buf, index):
    if index >= 0 and type(buf) is VMBuffer:
        try:
            return buf._v_q[index]
        except IndexError:
            pass
    return _buffer.buffer_load_i64(buf, index)


def buffer_load_f32(buf, index):
    if index >= 0 and type(buf) is VMBuffer:
        try:
            return buf._v_f[index]
        except IndexError:
            pass
    return _buffer.buffer_load_f32(buf, index)


def buffer_load_i8_u(buf, index):
    if index >= 0 and type(buf) is VMBuffer:
        try:
            return buf.data[index]
        except IndexError:
            pass
    return _buffer.buffer_load_i8_u(buf, index)


def buffer_load_i8_s(buf, index):
    if index >= 0 and type(buf) is VMBuffer:
        try:
            return buf._v_b[index]
        except IndexError:
            pass
    return _buffer.buffer_load_i8_s(buf, index)


def buffer_store_f32(buf, index, value):
    if index >= 0 and type(buf) is VMBuffer and not buf.readonly:
        try:
            buf._v_f[index] = value
            return
        except IndexError:
            pass
    _buffer.buffer_store_f32(buf, index, value)


def buffer_store_i32(buf, index, value):
    if index >= 0 and type(buf) is VMBuffer and not buf.readonly:
        try:
            buf._v_i[index] = value
            return
        except (IndexError, ValueError, TypeError, OverflowError):
            pass  # (out of range, or a value to wrap: the general op)
    _buffer.buffer_store_i32(buf, index, value)


def buffer_store_i8(buf, index, value):
    if index >= 0 and type(buf) is VMBuffer and not buf.readonly:
        try:
            buf.data[index] = value & 0xFF
            return
        except IndexError:
            pass
    _buffer.buffer_store_i8(buf, index, value)
