"""VM ref types: a registry from VM type names to Python classes, and fast type checks.

Classes register the VM type name their instances carry:

    @ref_type("!hal.buffer")
    class HalBuffer: ...

    register_ref_type("!hal.buffer_view", HalBufferView)   # same thing, as a call

Generated code then checks refs with

    type_matches(obj, "!hal.buffer_view")     # -> bool; None always matches
    check_ref_type(obj, "!hal.buffer_view")   # -> obj, or VMError(INVALID_ARGUMENT)

which is what `global.load.ref`, `global.store.ref`, `cast.any.ref` (error on mismatch)
and `list.get.ref` (null on mismatch) need.

Type names are canonicalized: `!vm.ref<X>` is `X`; `?`, `!vm.ref<?>` and `!vm.ref` match
any ref; every `!vm.list<...>` is the one list type `!vm.list` (IREE's ref type for
lists does not carry the element type).

An object whose class (or any base class) is not registered matches every type name:
the compiler has already type-checked the program, so an unregistered helper object is
trusted rather than nulled or rejected.  `ref_type_name(obj)` returns None for it.
"""

from __future__ import annotations

from runtime_support.errors import StatusCode, VMError

__all__ = [
    "ANY",
    "canonical_type_name",
    "register_ref_type",
    "ref_type",
    "ref_type_name",
    "type_matches",
    "check_ref_type",
    "registered_types",
]

#: Canonical name that matches every ref.
ANY = "?"

_ANY_NAMES = frozenset({"?", "!vm.ref<?>", "!vm.ref", "!vm.opaque", ""})

# class -> canonical VM type name (None: unregistered, cached after an MRO walk)
_NAME_OF_CLASS: dict[type, str | None] = {}
# explicitly registered: canonical name -> class
_CLASS_OF_NAME: dict[str, type] = {}
# any spelling -> canonical name (cache)
_CANON: dict[str, str] = {}


def canonical_type_name(name: str) -> str:
    """`!vm.ref<!hal.buffer>` -> `!hal.buffer`; `!vm.list<i32>` -> `!vm.list`; any -> `?`."""
    cached = _CANON.get(name)
    if cached is not None:
        return cached
    n = name.strip()
    while n.startswith("!vm.ref<") and n.endswith(">"):
        n = n[len("!vm.ref<") : -1].strip()
    if n in _ANY_NAMES:
        canon = ANY
    elif n.startswith("!vm.list"):
        canon = "!vm.list"
    else:
        canon = n
    _CANON[name] = canon
    return canon


def register_ref_type(type_name: str, cls: type) -> type:
    """Declares that instances of `cls` (and its subclasses) are refs of `type_name`.

    Registering the same name again for a different class raises ValueError, except for
    a class of the same module and qualified name (a reloaded module), which replaces it.
    """
    canon = canonical_type_name(type_name)
    if canon == ANY:
        raise ValueError(
            f"cannot register a class as the wildcard ref type {type_name!r}"
        )
    other = _CLASS_OF_NAME.get(canon)
    if other is not None and other is not cls:
        same = (other.__module__, other.__qualname__) == (
            cls.__module__,
            cls.__qualname__,
        )
        if not same:
            raise ValueError(
                f"ref type {canon!r} already registered to {other.__qualname__}"
            )
    _CLASS_OF_NAME[canon] = cls
    # Forget everything resolved so far (MRO-walk results, a replaced class), then
    # re-add the explicit registrations.
    _NAME_OF_CLASS.clear()
    for name, klass in _CLASS_OF_NAME.items():
        _NAME_OF_CLASS[klass] = name
    return cls


def ref_type(type_name: str):
    """Class decorator form of `register_ref_type`."""

    def deco(cls: type) -> type:
        return register_ref_type(type_name, cls)

    return deco


def _resolve_class(cls: type) -> str | None:
    for base in cls.__mro__[1:]:
        name = _NAME_OF_CLASS.get(base)
        if name is not None:
            _NAME_OF_CLASS[cls] = name
            return name
    _NAME_OF_CLASS[cls] = None
    return None


def ref_type_name(obj) -> str | None:
    """Canonical VM type name of a ref object, or None (null or unregistered)."""
    if obj is None:
        return None
    cls = type(obj)
    try:
        return _NAME_OF_CLASS[cls]
    except KeyError:
        return _resolve_class(cls)


def type_matches(obj, type_name: str) -> bool:
    """True if `obj` may be held as a ref of `type_name` (null always may)."""
    if obj is None:
        return True
    cls = type(obj)
    try:
        have = _NAME_OF_CLASS[cls]
    except KeyError:
        have = _resolve_class(cls)
    if have is None:
        return True
    want = _CANON.get(type_name)
    if want is None:
        want = canonical_type_name(type_name)
    return want == have or want == ANY


def check_ref_type(obj, type_name: str):
    """Returns `obj` if it matches `type_name`, else raises VMError(INVALID_ARGUMENT)."""
    if type_matches(obj, type_name):
        return obj
    raise VMError(
        StatusCode.INVALID_ARGUMENT,
        f"source ref type mismatch: have {ref_type_name(obj)}, want "
        f"{canonical_type_name(type_name)}",
    )


def registered_types() -> dict[str, type]:
    """Canonical type name -> class, for diagnostics."""
    return dict(_CLASS_OF_NAME)
