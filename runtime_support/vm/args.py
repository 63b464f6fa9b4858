"""Declarative import modules: each import is declared once, beside its method.

    @import_module("hal")
    class HalModule:
        @vm_import("hal.buffer_view.create", "0rIIiiCID_r",
                   buffer=BUFFER, element_type=U32, encoding_type=U32)
        def buffer_view_create(self, buffer, source_offset, source_length,
                               element_type, encoding_type, shape): ...

From the declarations come the module's `IMPORTS` table (full name -> cconv, what the
context resolves and the translator checks against), the argument checks IREE's
`*_check_deref` helpers do, the masking of integers the import reads as unsigned, and the
error messages (`hal.buffer_view.create: argument 'buffer' is null; expected
!hal.buffer`).

The checks are one closure per checked method (`_checking`), built from the declaration
when the class body runs (no source is generated): one checker per checked argument, in
parameter order, then the method as written. A method with nothing to check is
left as it is. The declaration must fit the method: the name is the full name minus the
module prefix with `.` -> `_`, the parameters match the cconv's arguments one to one, refs
are declared on `r` arguments and masks on integers (TypeError at class creation
otherwise).
"""

from __future__ import annotations

import functools
import inspect
import numbers
import operator

from ..errors import StatusCode, VMError, quote_name
from . import numerics
from .buffer import VMBuffer

# --------------------------------------------------------------------------- failures


def error(code: StatusCode, module: str, name: str, message: str) -> VMError:
    return VMError(code, f"{module}.{name}: {message}")


def invalid(module: str, name: str, message: str) -> VMError:
    return error(StatusCode.INVALID_ARGUMENT, module, name, message)


def bad_argument(where: str, arg: str, type_name: str, value) -> VMError:
    """INVALID_ARGUMENT for a null or mistyped argument `arg` of import `where`."""
    what = "null" if value is None else type(value).__name__
    return VMError(
        StatusCode.INVALID_ARGUMENT, f"{where}: argument '{arg}' is {what}; expected {type_name}"
    )


def _bad_item(where: str, arg: str, suffix: str, type_name: str, items, item, value) -> VMError:
    index = next(i for i, x in enumerate(items) if x is item)
    return bad_argument(where, f"{arg}[{index}]{suffix}", type_name, value)


# --------------------------------------------------------------------------- !vm.buffer values


def is_host_bytes(value) -> bool:
    """A `!vm.buffer` (VMBuffer: `.data`, `.readonly`) or, for hosts and tests, bytes-like."""
    return isinstance(value, (bytes, bytearray, memoryview)) or (
        hasattr(value, "data") and hasattr(value, "readonly")
    )


def host_view(value) -> tuple[memoryview, bool]:
    """A checked `!vm.buffer` argument as (byte memoryview, readonly)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = memoryview(value).cast("B")
        return data, data.readonly
    data = memoryview(value.data).cast("B")
    return data, bool(value.readonly) or data.readonly


def _text(where: str, arg: str, value) -> str:
    if value is None or not is_host_bytes(value):
        raise bad_argument(where, arg, "!vm.buffer", value)
    return bytes(host_view(value)[0]).decode("utf-8", errors="replace")


def _check_bytes(where: str, arg: str, value, nullable: bool) -> None:
    if value is None and nullable:
        return
    if value is None or not is_host_bytes(value):
        raise bad_argument(where, arg, "!vm.buffer", value)


# --------------------------------------------------------------------------- argument kinds


class Arg:
    """How one argument is checked (or converted): `convert(obj, where, arg, value)`
    returns the value the method receives or raises (`obj`: the import module)."""

    code = "r"  # the cconv code the argument must have

    def convert(self, obj, where: str, arg: str, value):
        raise NotImplementedError


class Ref(Arg):
    """A ref of class `cls` (a class or tuple of classes); null only when `nullable`."""

    def __init__(self, cls, type_name: str, nullable: bool = False) -> None:
        self.cls, self.type_name, self.nullable = cls, type_name, nullable

    @property
    def or_null(self) -> "Ref":
        return type(self)(self.cls, self.type_name, nullable=True)

    def classes(self, obj):
        return self.cls

    def convert(self, obj, where, arg, value):
        if value is None:
            if not self.nullable:
                raise bad_argument(where, arg, self.type_name, value)
        elif not isinstance(value, self.classes(obj)):
            raise bad_argument(where, arg, self.type_name, value)
        return value


class Device(Ref):
    """A `!hal.device`: an instance of the module's `DEVICE_TYPES` (read per call, so a
    subclass or instance may widen it)."""

    def __init__(self, nullable: bool = False) -> None:
        super().__init__(None, "!hal.device", nullable)

    @property
    def or_null(self) -> "Device":
        return Device(nullable=True)

    def classes(self, obj):
        return obj.DEVICE_TYPES


class Text(Arg):
    """A `!vm.buffer` holding a string: the method receives the `str` (invalid UTF-8
    replaced)."""

    def convert(self, obj, where, arg, value):
        return _text(where, arg, value)


class HostBytes(Arg):
    """A `!vm.buffer` (or bytes-like) the method reads through `host_view`."""

    def __init__(self, nullable: bool = False) -> None:
        self.nullable = nullable

    @property
    def or_null(self) -> "HostBytes":
        return HostBytes(nullable=True)

    def convert(self, obj, where, arg, value):
        # A VMBuffer (rodata, vm.buffer.alloc) is the common case: one type test.
        if type(value) is not VMBuffer:
            _check_bytes(where, arg, value, self.nullable)
        return value


class Unsigned(Arg):
    """An integer the import reads as unsigned: the method receives it masked
    (an i32 -1 arrives as 0xFFFFFFFF)."""

    def __init__(self, bits: int) -> None:
        self.bits = bits
        self.code = "i" if bits == 32 else "I"
        self.mask = numerics.M32 if bits == 32 else numerics.M64

    def convert(self, obj, where, arg, value):
        return value & self.mask


class UnsignedSpan(Arg):
    """A span of single integers the import reads as unsigned (a new list, masked)."""

    def __init__(self, bits: int) -> None:
        self.item = Unsigned(bits)
        self.code = (self.item.code,)

    def convert(self, obj, where, arg, value):
        mask = self.item.mask
        return [x & mask for x in value]


class Each(Arg):
    """Every element of a variadic span: the element itself (`at=None`) or item `at` of
    each element tuple is checked with `ref` (messages say `arg[i]` + `suffix`)."""

    code = "span"

    def __init__(self, ref: Ref, at: int | None = None, suffix: str = "") -> None:
        self.ref, self.at, self.suffix = ref, at, suffix

    def convert(self, obj, where, arg, value):
        ref, at = self.ref, self.at
        cls, nullable = ref.classes(obj), ref.nullable
        for e in value:
            v = e if at is None else e[at]
            if v is None:
                if nullable:
                    continue
            elif isinstance(v, cls):
                continue
            raise _bad_item(where, arg, self.suffix, ref.type_name, value, e, v)
        return value


U32 = Unsigned(32)
U64 = Unsigned(64)
U32_SPAN = UnsignedSpan(32)
TEXT = Text()
HOST_BYTES = HostBytes()
DEVICE = Device()


# --------------------------------------------------------------------------- results

# The results of an import module written in Python are checked as IREE's
# PyModuleInterface converts them (nanobind casts to int32_t/int64_t/float/double): an
# integer (int, bool, numpy integer) in the signed range for i32/i64, a real number for
# f32/f64; anything else is INVALID_ARGUMENT naming the import and the result (IREE:
# UNKNOWN, std::bad_cast). Values come out in pyree's register form (ARCHITECTURE.md).


def bad_result(where: str, index: int, problem: str, fix: str) -> VMError:
    return VMError(
        StatusCode.INVALID_ARGUMENT,
        f"import {quote_name(where)}: result {index} {problem}; {fix}",
    )


def _int_result(bits: int):
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    fix = f"return a Python int in [{low}, {high}]"

    def check(where: str, index: int, value):
        if type(value) is int and low <= value <= high:
            return value
        try:
            number = operator.index(value)  # (bool and numpy integers too, as ints)
        except TypeError:
            problem = f"is {type(value).__name__}, not an i{bits}"
            raise bad_result(where, index, problem, fix) from None
        if not low <= number <= high:
            shown = number if number.bit_length() <= 128 else f"an int of {number.bit_length()} bits"
            raise bad_result(where, index, f"is {shown}, outside the i{bits} range", fix)
        return number

    return check


def _float_result(bits: int):
    to_register = numerics.f32 if bits == 32 else float  # f32: rounded, as a C cast does
    fix = "return a Python float"

    def check(where: str, index: int, value):
        if type(value) is float:
            return to_register(value)
        if not isinstance(value, numbers.Real):  # (not str, None, complex)
            raise bad_result(where, index, f"is {type(value).__name__}, not an f{bits}", fix)
        try:
            return to_register(float(value))
        except OverflowError:  # an int beyond any float
            raise bad_result(where, index, "is an int too large for a float", fix) from None

    return check


_RESULT_CHECKS = {
    "i": _int_result(32), "I": _int_result(64), "f": _float_result(32), "F": _float_result(64)
}


def checked_results(full_name: str, cconv: str, fn):
    """`fn`, a method of an import module written in Python, with its integer and float
    results checked (a tuple of them where the cconv has several); `fn` itself where no
    result is a number (ref results are checked where they are used)."""
    codes = cconv_results(cconv)
    checks = [_RESULT_CHECKS.get(code) for code in codes]
    if not any(checks):
        return fn
    if len(codes) == 1:
        check = checks[0]

        def checked(*args):
            return check(full_name, 0, fn(*args))

    else:

        def checked(*args):
            results = fn(*args)
            several = isinstance(results, (tuple, list))
            if not several or len(results) != len(codes):
                what = f"{len(results)} values" if several else type(results).__name__
                raise VMError(
                    StatusCode.INVALID_ARGUMENT,
                    f"import {quote_name(full_name)} returned {what}; return a tuple of its "
                    f"{len(codes)} results (cconv {cconv!r})",
                )
            return tuple(
                value if check is None else check(full_name, i, value)
                for i, (check, value) in enumerate(zip(checks, results))
            )

    return functools.update_wrapper(checked, fn)


# --------------------------------------------------------------------------- declarations


def method_name(full_name: str) -> str:
    """`hal.buffer_view.create` -> `buffer_view_create`: the method serving an import."""
    return full_name.partition(".")[2].replace(".", "_")


def cconv_arguments(cconv: str) -> list[str | tuple[str, ...]]:
    """The argument codes of a cconv (`0rICiD_v` -> ['r', 'I', ('i',)])."""
    return _cconv_codes(cconv[1:].partition("_")[0])


def cconv_results(cconv: str) -> list[str | tuple[str, ...]]:
    """The result codes of a cconv (`0r_iI` -> ['i', 'I'])."""
    return _cconv_codes(cconv[1:].partition("_")[2])


def _cconv_codes(fragment: str) -> list[str | tuple[str, ...]]:
    out: list = []
    span: list | None = None
    for c in "" if fragment == "v" else fragment:
        if c == "C":
            span = []
        elif c == "D":
            out.append(tuple(span or ()))
            span = None
        elif span is not None:
            span.append(c)
        else:
            out.append(c)
    return out


class ImportDecl:
    """One import's declaration: full name, cconv, the declared argument kinds and, once
    `vm_import` has checked it against its method, the method's parameter names in cconv
    order (`params`: what runtime_support/exec/steps.py names a step's fields after)."""

    def __init__(self, full_name: str, cconv: str, args: dict[str, Arg]) -> None:
        self.full_name, self.cconv, self.args = full_name, cconv, args
        self.params: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"ImportDecl({self.full_name!r}, {self.cconv!r})"


def _parameters(fn) -> list[str]:
    """inspect.signature(fn)'s parameter names, read off the code object where it takes
    no *args or **kwargs (every import method): a tenth of the cost, at each import."""
    code = fn.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return list(inspect.signature(fn).parameters)
    return list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])


def _fits(decl: ImportDecl, fn) -> list[str]:
    """The parameter names of `fn` (after self), checked against the declaration."""
    where = f"@vm_import({decl.full_name!r}) on {fn.__qualname__}"
    if fn.__name__ != method_name(decl.full_name):
        raise TypeError(f"{where}: method name must be {method_name(decl.full_name)!r}")
    params = _parameters(fn)[1:]
    codes = cconv_arguments(decl.cconv)
    if len(params) != len(codes):
        raise TypeError(
            f"{where}: arity: {len(params)} parameters but cconv {decl.cconv!r} has "
            f"{len(codes)} arguments"
        )
    by_name = dict(zip(params, codes))
    for arg, kind in decl.args.items():
        if arg not in by_name:
            raise TypeError(f"{where}: no parameter {arg!r}")
        code = by_name[arg]
        if kind.code == "span":
            ok = isinstance(code, tuple) and (
                code == ("r",) if kind.at is None else code[kind.at : kind.at + 1] == ("r",)
            )
        else:
            ok = code == kind.code
        if not ok:
            raise TypeError(
                f"{where}: {arg!r} is cconv {code!r}, not a {type(kind).__name__} ({kind.code})"
            )
    return params


def vm_import(full_name: str, cconv: str, /, **args: Arg):
    """Declares the method below as import `full_name` with calling convention `cconv`;
    keyword arguments name the parameters that are checked refs, strings or unsigned."""

    def declare(fn):
        decl = ImportDecl(full_name, cconv, args)
        params = _fits(decl, fn)
        decl.params = tuple(params)
        if not args:
            fn.__vm_import__ = decl
            return fn
        wrapper = functools.update_wrapper(_checking(fn, full_name, params, args), fn)
        wrapper.__vm_import__ = decl
        return wrapper

    return declare


def _checking(fn, where: str, params: list[str], args: dict[str, Arg]):
    """`fn` behind its declared checks, as a closure (no generated source): one checker
    per checked position (`_checker`), run in parameter order, so the error names the
    first bad argument as IREE's checks do. Arities up to 8 get a closure with that many
    parameters (a call through `*args` costs several times a plain one); longer ones go
    through `*args`."""
    checks = tuple(
        _checker(where, name, args[name]) if name in args else None for name in params
    )
    make = _BY_ARITY.get(len(params))
    if make is not None:
        return make(fn, *checks)
    ordered = tuple((i, check) for i, check in enumerate(checks) if check is not None)

    def checked(self, *values):
        values = list(values)
        for i, check in ordered:
            values[i] = check(self, values[i])
        return fn(self, *values)

    return checked


def _checker(where: str, arg: str, kind: Arg):
    """`check(obj, value) -> value` for one declared argument (`obj`: the module)."""
    if type(kind) is Ref:
        cls, nullable, type_name = kind.cls, kind.nullable, kind.type_name

        def check(obj, value):
            if isinstance(value, cls) and (value is not None or nullable):
                return value
            if value is None and nullable:
                return value
            raise bad_argument(where, arg, type_name, value)

        return check
    if type(kind) is Device:
        nullable, type_name = kind.nullable, kind.type_name

        def check(obj, value):
            if isinstance(value, obj.DEVICE_TYPES):
                return value
            if value is None and nullable:
                return value
            raise bad_argument(where, arg, type_name, value)

        return check
    if type(kind) is Unsigned:
        mask = kind.mask
        return lambda obj, value: value & mask
    convert = kind.convert
    return lambda obj, value: convert(obj, where, arg, value)


# The closures by arity: `tK` checks argument K (None: passed as it is).


def _arity1(fn, t0):
    def checked(self, a0):
        if t0 is not None:
            a0 = t0(self, a0)
        return fn(self, a0)

    return checked


def _arity2(fn, t0, t1):
    def checked(self, a0, a1):
        if t0 is not None:
            a0 = t0(self, a0)
        if t1 is not None:
            a1 = t1(self, a1)
        return fn(self, a0, a1)

    return checked


def _arity3(fn, t0, t1, t2):
    def checked(self, a0, a1, a2):
        if t0 is not None:
            a0 = t0(self, a0)
        if t1 is not None:
            a1 = t1(self, a1)
        if t2 is not None:
            a2 = t2(self, a2)
        return fn(self, a0, a1, a2)

    return checked


def _arity4(fn, t0, t1, t2, t3):
    def checked(self, a0, a1, a2, a3):
        if t0 is not None:
            a0 = t0(self, a0)
        if t1 is not None:
            a1 = t1(self, a1)
        if t2 is not None:
            a2 = t2(self, a2)
        if t3 is not None:
            a3 = t3(self, a3)
        return fn(self, a0, a1, a2, a3)

    return checked


def _arity5(fn, t0, t1, t2, t3, t4):
    def checked(self, a0, a1, a2, a3, a4):
        if t0 is not None:
            a0 = t0(self, a0)
        if t1 is not None:
            a1 = t1(self, a1)
        if t2 is not None:
            a2 = t2(self, a2)
        if t3 is not None:
            a3 = t3(self, a3)
        if t4 is not None:
            a4 = t4(self, a4)
        return fn(self, a0, a1, a2, a3, a4)

    return checked


def _arity6(fn, t0, t1, t2, t3, t4, t5):
    def checked(self, a0, a1, a2, a3, a4, a5):
        if t0 is not None:
            a0 = t0(self, a0)
        if t1 is not None:
            a1 = t1(self, a1)
        if t2 is not None:
            a2 = t2(self, a2)
        if t3 is not None:
            a3 = t3(self, a3)
        if t4 is not None:
            a4 = t4(self, a4)
        if t5 is not None:
            a5 = t5(self, a5)
        return fn(self, a0, a1, a2, a3, a4, a5)

    return checked


def _arity7(fn, t0, t1, t2, t3, t4, t5, t6):
    def checked(self, a0, a1, a2, a3, a4, a5, a6):
        if t0 is not None:
            a0 = t0(self, a0)
        if t1 is not None:
            a1 = t1(self, a1)
        if t2 is not None:
            a2 = t2(self, a2)
        if t3 is not None:
            a3 = t3(self, a3)
        if t4 is not None:
            a4 = t4(self, a4)
        if t5 is not None:
            a5 = t5(self, a5)
        if t6 is not None:
            a6 = t6(self, a6)
        return fn(self, a0, a1, a2, a3, a4, a5, a6)

    return checked


def _arity8(fn, t0, t1, t2, t3, t4, t5, t6, t7):
    def checked(self, a0, a1, a2, a3, a4, a5, a6, a7):
        if t0 is not None:
            a0 = t0(self, a0)
        if t1 is not None:
            a1 = t1(self, a1)
        if t2 is not None:
            a2 = t2(self, a2)
        if t3 is not None:
            a3 = t3(self, a3)
        if t4 is not None:
            a4 = t4(self, a4)
        if t5 is not None:
            a5 = t5(self, a5)
        if t6 is not None:
            a6 = t6(self, a6)
        if t7 is not None:
            a7 = t7(self, a7)
        return fn(self, a0, a1, a2, a3, a4, a5, a6, a7)

    return checked


_BY_ARITY = {
    1: _arity1, 2: _arity2, 3: _arity3, 4: _arity4, 5: _arity5, 6: _arity6, 7: _arity7,
    8: _arity8,
}


def import_module(prefix: str):
    """Class decorator: builds `IMPORTS` (full name -> cconv) from the class's declared
    methods, inherited ones included; every full name must start with `prefix.`."""

    def build(cls):
        table: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                decl = getattr(value, "__vm_import__", None)
                if decl is None:
                    continue
                if not decl.full_name.startswith(prefix + "."):
                    raise TypeError(
                        f"{cls.__name__}.{attr}: {decl.full_name!r} is not in {prefix!r}"
                    )
                table[decl.full_name] = decl.cconv
        cls.IMPORTS = table
        cls.MODULE_NAME = prefix
        return cls

    return build
