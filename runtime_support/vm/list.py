"""`!vm.list<T>`: typed value lists, ref lists and variant lists.

Element types (the `T` of `!vm.list<T>`, as a string):
* value types `i8`, `i16`, `i32`, `i64`, `f32`, `f64`: slots are packed machine values in
  an `array.array` of the element type (a `list<i32>` of 2**28 slots costs 1 GiB, as in
  IREE); Python sees ints normalized to the element type and floats;
* ref types (`!hal.buffer`, `!vm.buffer`, `!vm.list<i32>`, `!vm.ref<?>`...): slots hold
  objects or None;
* `?` (variant): each slot holds a typed value, a ref, or nothing.

Conversion rules (observed on IREE 3.13, see tests/runtime/test_vm_buffer_list.py):
* integer <-> integer: truncate to the narrower width, sign-extend to the wider one
  (`list<i8>`: set.i32 300 -> get.i32 44; set.i32 200 -> get.i32 -56);
* float <-> float: f64 -> f32 rounds, f32 -> f64 is exact;
* integer <-> float: NO conversion, the result is 0 / 0.0 (both on set and on get);
* `get.<value>` of a variant slot that holds a ref or nothing -> FAILED_PRECONDITION;
* `get.ref` of a ref whose type differs from the requested one -> None (no error);
  `get.ref` of a variant slot holding a value -> FAILED_PRECONDITION;
* index outside [0, size) -> OUT_OF_RANGE (indices are signed i32; negatives are out of
  range).
* `resize` grows with zero / 0.0 / null / empty slots.  A negative size (IREE reads it as
  a huge unsigned count), or one whose storage exceeds the memory limit
  (`runtime_support.vm.limits`), raises RESOURCE_EXHAUSTED.  `alloc`/`reserve` capacities are
  hints only (a negative one is ignored).
"""

from __future__ import annotations

from array import array

from runtime_support.errors import StatusCode, VMError
from runtime_support.vm.limits import allocating
from runtime_support.vm.numerics import f32 as _f32
from runtime_support.vm.refs import ANY, register_ref_type, type_matches

__all__ = ["VMList", "VALUE_TYPES"]

_INT_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64}
_FLOAT_TYPES = ("f32", "f64")
VALUE_TYPES = frozenset(("i8", "i16", "i32", "i64", "f32", "f64"))

# kinds
_INT, _FLOAT, _REF, _VARIANT = 0, 1, 2, 3

# Packed storage of value lists: element type -> array typecode (sizes checked below).
_TYPECODES = {"i8": "b", "i16": "h", "i32": "i", "i64": "q", "f32": "f", "f64": "d"}
assert all(array(c).itemsize == int(t[1:]) // 8 for t, c in _TYPECODES.items())
# Bytes per slot of the other kinds: a pointer; a pointer plus a type-slot pointer.
_SLOT_BYTES = {_REF: 8, _VARIANT: 16}


def _sext(v: int, bits: int) -> int:
    half = 1 << (bits - 1)
    return ((v + half) & ((1 << bits) - 1)) - half


def _norm(value, src: str, dst: str):
    """Converts a value of VM type `src` to VM type `dst` per the list rules."""
    if dst in _INT_BITS:
        if src in _INT_BITS:
            return _sext(value, _INT_BITS[dst])
        return 0
    if src in _INT_BITS:
        return 0.0
    if dst == "f32" and src == "f64":
        return _f32(value)
    return float(value)


def _null_list(what: str) -> VMError:
    return VMError(StatusCode.INVALID_ARGUMENT, f"{what}: null list")


class VMList:
    """A `!vm.list<element_type>`."""

    __slots__ = ("element_type", "_kind", "_items", "_types", "capacity", "__weakref__")

    def __init__(self, element_type: str = "?", capacity: int = 0):
        et = element_type.strip()
        if (
            et.startswith("!vm.ref<")
            and et.endswith(">")
            and et[8:-1].strip() in VALUE_TYPES
        ):
            et = et[8:-1].strip()
        if et in _INT_BITS:
            kind = _INT
        elif et in _FLOAT_TYPES:
            kind = _FLOAT
        elif et in ("?", "!vm.variant", "variant"):
            kind, et = _VARIANT, "?"
        else:
            kind = _REF
        self.element_type: str = et
        self._kind = kind
        self._items = array(_TYPECODES[et]) if kind in (_INT, _FLOAT) else []
        # variant lists only: per-slot VM value type, or None for a ref / empty slot
        self._types: list | None = [] if kind == _VARIANT else None
        self.capacity: int = max(0, capacity)

    # -- construction ------------------------------------------------------------------

    @classmethod
    def alloc(cls, element_type: str, capacity: int = 0) -> "VMList":
        """`vm.list.alloc`: an empty list (size 0)."""
        return cls(element_type, capacity)

    @classmethod
    def from_values(cls, element_type: str, values, value_type: str | None = None):
        """A list holding `values`.  For value lists each value is converted from
        `value_type` (default: i64 for ints, f64 for floats) like `list.set`.  For
        variant lists, ints are stored as `value_type` or i64, floats as `value_type`
        or f64, anything else (including None) as a ref."""
        lst = cls(element_type, len(values))
        for v in values:
            lst._append(v, value_type)
        return lst

    def _append(self, v, value_type: str | None) -> None:
        kind = self._kind
        if kind == _REF:
            self._items.append(v)
            return
        if isinstance(v, int):
            given, src = "i64", value_type or "i64"
        elif isinstance(v, float):
            given, src = "f64", value_type or "f64"
        elif kind == _VARIANT:
            self._items.append(v)
            self._types.append(None)
            return
        else:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"cannot store {type(v).__name__} in !vm.list<{self.element_type}>",
            )
        v = _norm(int(v) if given == "i64" else v, given, src)
        if kind == _VARIANT:
            self._items.append(v)
            self._types.append(src)
        else:
            self._items.append(_norm(v, src, self.element_type))

    # -- Python conveniences -----------------------------------------------------------

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def __getitem__(self, index):
        return self._items[index]

    def to_list(self) -> list:
        return list(self._items)

    def items_with_types(self) -> list:
        """[(vm_type or None, value)] (variant lists: per-slot type; others: element)."""
        if self._types is not None:
            return list(zip(self._types, self._items))
        t = None if self._kind == _REF else self.element_type
        return [(t, v) for v in self._items]

    def slot_type(self, index: int) -> str | None:
        """VM value type stored at `index` (None for refs and empty variant slots)."""
        self._check(index, "list slot_type")
        if self._types is not None:
            return self._types[index]
        return None if self._kind == _REF else self.element_type

    def __repr__(self) -> str:
        return f"<VMList<{self.element_type}> {list(self._items)!r}>"

    @property
    def is_ref_list(self) -> bool:
        return self._kind == _REF

    @property
    def is_variant_list(self) -> bool:
        return self._kind == _VARIANT

    # -- VM ops ------------------------------------------------------------------------

    def reserve(self, capacity: int) -> None:
        if capacity > self.capacity:
            self.capacity = capacity

    def size(self) -> int:
        return len(self._items)

    def resize(self, new_size: int) -> None:
        items = self._items
        n = len(items)
        if new_size < 0:
            raise VMError(
                StatusCode.RESOURCE_EXHAUSTED,
                f"list.resize: size {new_size & 0xFFFFFFFF} ({new_size}) is too large",
            )
        if new_size <= n:
            del items[new_size:]
            if self._types is not None:
                del self._types[new_size:]
            return
        grow = new_size - n
        packed = isinstance(items, array)
        slot = items.itemsize if packed else _SLOT_BYTES[self._kind]
        with allocating(
            "list.resize", new_size * slot, f"{new_size} x {self.element_type}"
        ):
            if packed:
                # bytes(k) is calloc'd: zero pages are not touched until copied in.
                items.frombytes(bytes(grow * slot))
            else:
                items.extend([None] * grow)
                if self._types is not None:
                    self._types.extend([None] * grow)
        if new_size > self.capacity:
            self.capacity = new_size

    def _check(self, index: int, what: str) -> None:
        if not 0 <= index < len(self._items):
            raise VMError(
                StatusCode.OUT_OF_RANGE,
                f"{what}: index {index & 0xFFFFFFFF} out of bounds ({len(self._items)})",
            )

    def _get_value(self, index: int, dst: str, what: str):
        if not 0 <= index < len(self._items):
            self._check(index, what)
        kind = self._kind
        if kind == _INT or kind == _FLOAT:
            return _norm(self._items[index], self.element_type, dst)
        if kind == _VARIANT:
            src = self._types[index]
            if src is not None:
                return _norm(self._items[index], src, dst)
            raise VMError(
                StatusCode.FAILED_PRECONDITION,
                f"{what}: variant at index {index} is not a value type",
            )
        raise VMError(
            StatusCode.FAILED_PRECONDITION,
            f"{what}: !vm.list<{self.element_type}> holds refs, not values",
        )

    def _set_value(self, index: int, value, src: str, what: str) -> None:
        if not 0 <= index < len(self._items):
            self._check(index, what)
        kind = self._kind
        if kind == _INT or kind == _FLOAT:
            self._items[index] = _norm(value, src, self.element_type)
        elif kind == _VARIANT:
            self._items[index] = value
            self._types[index] = src
        else:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"{what}: !vm.list<{self.element_type}> holds refs, not values",
            )

    def get_i32(self, index: int) -> int:
        if self._kind == _INT and 0 <= index < len(self._items):
            v = self._items[index]
            if self.element_type != "i64":
                return v
            return ((v + 0x80000000) & 0xFFFFFFFF) - 0x80000000
        return self._get_value(index, "i32", "list.get.i32")

    def get_i64(self, index: int) -> int:
        if self._kind == _INT and 0 <= index < len(self._items):
            return self._items[index]
        return self._get_value(index, "i64", "list.get.i64")

    def get_f32(self, index: int) -> float:
        return self._get_value(index, "f32", "list.get.f32")

    def get_f64(self, index: int) -> float:
        return self._get_value(index, "f64", "list.get.f64")

    def set_i32(self, index: int, value: int) -> None:
        self._set_value(index, value, "i32", "list.set.i32")

    def set_i64(self, index: int, value: int) -> None:
        self._set_value(index, value, "i64", "list.set.i64")

    def set_f32(self, index: int, value: float) -> None:
        self._set_value(index, value, "f32", "list.set.f32")

    def set_f64(self, index: int, value: float) -> None:
        self._set_value(index, value, "f64", "list.set.f64")

    def get_ref(self, index: int, type_name: str = ANY):
        """`vm.list.get.ref`: the ref at `index`, or None if it is not a `type_name`."""
        if not 0 <= index < len(self._items):
            self._check(index, "list.get.ref")
        kind = self._kind
        if kind == _VARIANT:
            if self._types[index] is not None:
                raise VMError(
                    StatusCode.FAILED_PRECONDITION,
                    f"list.get.ref: variant at index {index} is a value, not a ref",
                )
        elif kind != _REF:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"list.get.ref: !vm.list<{self.element_type}> holds values, not refs",
            )
        obj = self._items[index]
        if type_name == "!vm.opaque":
            # IREE compares type ids here: `!vm.opaque` (how !vm.ref<?> is encoded) is a
            # type of its own, so any real ref read as opaque is a mismatch -> null.
            return None
        if obj is None or type_matches(obj, type_name):
            return obj
        return None

    def set_ref(self, index: int, obj) -> None:
        """`vm.list.set.ref` (retain/move is the caller's business: Python refs)."""
        if not 0 <= index < len(self._items):
            self._check(index, "list.set.ref")
        kind = self._kind
        if kind == _VARIANT:
            self._types[index] = None
        elif kind != _REF:
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"list.set.ref: !vm.list<{self.element_type}> holds values, not refs",
            )
        elif obj is not None and not type_matches(obj, self.element_type):
            raise VMError(
                StatusCode.INVALID_ARGUMENT,
                f"list.set.ref: ref type mismatch for !vm.list<{self.element_type}>",
            )
        self._items[index] = obj


register_ref_type("!vm.list", VMList)


# --------------------------------------------------------------------------------------
# Module-level forms of the VM ops, with the null check (INVALID_ARGUMENT).


def list_alloc(element_type: str, capacity: int = 0) -> VMList:
    return VMList(element_type, capacity)


def list_reserve(lst, capacity: int) -> None:
    if lst is None:
        raise _null_list("list.reserve")
    lst.reserve(capacity)


def list_size(lst) -> int:
    if lst is None:
        raise _null_list("list.size")
    return len(lst._items)


def list_resize(lst, new_size: int) -> None:
    if lst is None:
        raise _null_list("list.resize")
    lst.resize(new_size)


def list_get_i32(lst, index: int) -> int:
    if lst is None:
        raise _null_list("list.get.i32")
    return lst.get_i32(index)


def list_get_i64(lst, index: int) -> int:
    if lst is None:
        raise _null_list("list.get.i64")
    return lst.get_i64(index)


def list_get_f32(lst, index: int) -> float:
    if lst is None:
        raise _null_list("list.get.f32")
    return lst.get_f32(index)


def list_get_f64(lst, index: int) -> float:
    if lst is None:
        raise _null_list("list.get.f64")
    return lst.get_f64(index)


def list_set_i32(lst, index: int, value: int) -> None:
    if lst is None:
        raise _null_list("list.set.i32")
    lst.set_i32(index, value)


def list_set_i64(lst, index: int, value: int) -> None:
    if lst is None:
        raise _null_list("list.set.i64")
    lst.set_i64(index, value)


def list_set_f32(lst, index: int, value: float) -> None:
    if lst is None:
        raise _null_list("list.set.f32")
    lst.set_f32(index, value)


def list_set_f64(lst, index: int, value: float) -> None:
    if lst is None:
        raise _null_list("list.set.f64")
    lst.set_f64(index, value)


def list_get_ref(lst, index: int, type_name: str = ANY):
    if lst is None:
        raise _null_list("list.get.ref")
    return lst.get_ref(index, type_name)


def list_set_ref(lst, index: int, obj) -> None:
    if lst is None:
        raise _null_list("list.set.ref")
    lst.set_ref(index, obj)


#: VM mnemonic -> module-level op.
LIST_OPS = {
    "list.alloc": list_alloc,
    "list.reserve": list_reserve,
    "list.size": list_size,
    "list.resize": list_resize,
    "list.get.i32": list_get_i32,
    "list.get.i64": list_get_i64,
    "list.get.f32": list_get_f32,
    "list.get.f64": list_get_f64,
    "list.set.i32": list_set_i32,
    "list.set.i64": list_set_i64,
    "list.set.f32": list_set_f32,
    "list.set.f64": list_set_f64,
    "list.get.ref": list_get_ref,
    "list.set.ref": list_set_ref,
}
