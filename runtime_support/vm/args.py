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

The checks cost nothing at declaration-free call sites and no Python layers per check:
`vm_import` writes, once, when the class body runs, one small function per method whose
checks are inlined `isinstance` tests and masks, which then calls the method as written;
`@one_frame` above it (for the imports called per dispatch) instead recompiles the method
from its own source with the checks as its first statements, one Python frame per call.
A method with nothing to check is left as it is. The declaration must fit the method: the
name is the full name minus the module prefix with `.` -> `_`, the parameters match the
cconv's arguments one to one, refs are declared on `r` arguments and masks on integers
(TypeError at class creation otherwise).
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import marshal
import numbers
import operator
import types

from .. import code_cache
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
    """How one argument is checked (or converted); `emit` writes the inlined check."""

    code = "r"  # the cconv code the argument must have

    def emit(self, var: str, ns: dict, key: str) -> list[str]:
        raise NotImplementedError


class Ref(Arg):
    """A ref of class `cls` (a class or tuple of classes); null only when `nullable`."""

    def __init__(self, cls, type_name: str, nullable: bool = False) -> None:
        self.cls, self.type_name, self.nullable = cls, type_name, nullable

    @property
    def or_null(self) -> "Ref":
        return type(self)(self.cls, self.type_name, nullable=True)

    def _classes(self, ns: dict, key: str) -> str:
        ns[f"_c{key}"] = self.cls
        return f"_c{key}"

    def test(self, var: str, ns: dict, key: str) -> str:
        """A Python expression that is true when `var` is NOT acceptable."""
        ns[f"_t{key}"] = self.type_name
        if self.cls is object:  # any ref: only null is refused
            return "False" if self.nullable else f"{var} is None"
        bad = f"not isinstance({var}, {self._classes(ns, key)})"
        return f"{var} is not None and {bad}" if self.nullable else bad

    def emit(self, var, ns, key):
        return [
            f"if {self.test(var, ns, key)}:",
            f"    raise _bad(_where, {var!r}, _t{key}, {var})",
        ]


class Device(Ref):
    """A `!hal.device`: an instance of the module's `DEVICE_TYPES` (read per call, so a
    subclass or instance may widen it)."""

    def __init__(self, nullable: bool = False) -> None:
        super().__init__(None, "!hal.device", nullable)

    @property
    def or_null(self) -> "Device":
        return Device(nullable=True)

    def _classes(self, ns, key):
        return "self.DEVICE_TYPES"


class Text(Arg):
    """A `!vm.buffer` holding a string: the method receives the `str` (invalid UTF-8
    replaced)."""

    def emit(self, var, ns, key):
        return [f"{var} = _text(_where, {var!r}, {var})"]


class HostBytes(Arg):
    """A `!vm.buffer` (or bytes-like) the method reads through `host_view`."""

    def __init__(self, nullable: bool = False) -> None:
        self.nullable = nullable

    @property
    def or_null(self) -> "HostBytes":
        return HostBytes(nullable=True)

    def emit(self, var, ns, key):
        # A VMBuffer (rodata, vm.buffer.alloc) is the common case: one type test.
        return [
            f"if type({var}) is not _VMBuffer:",
            f"    _check_bytes(_where, {var!r}, {var}, {self.nullable})",
        ]


class Unsigned(Arg):
    """An integer the import reads as unsigned: the method receives it masked
    (an i32 -1 arrives as 0xFFFFFFFF)."""

    def __init__(self, bits: int) -> None:
        self.bits = bits
        self.code = "i" if bits == 32 else "I"
        self.mask = numerics.M32 if bits == 32 else numerics.M64

    def emit(self, var, ns, key):
        return [f"{var} &= {self.mask:#x}"]


class UnsignedSpan(Arg):
    """A span of single integers the import reads as unsigned (a new list, masked)."""

    def __init__(self, bits: int) -> None:
        self.item = Unsigned(bits)
        self.code = (self.item.code,)

    def emit(self, var, ns, key):
        return [f"{var} = [_x & {self.item.mask:#x} for _x in {var}]"]


class Each(Arg):
    """Every element of a variadic span: the element itself (`at=None`) or item `at` of
    each element tuple is checked with `ref` (messages say `arg[i]` + `suffix`)."""

    code = "span"

    def __init__(self, ref: Ref, at: int | None = None, suffix: str = "") -> None:
        self.ref, self.at, self.suffix = ref, at, suffix

    def emit(self, var, ns, key):
        item = "_e" if self.at is None else f"_e[{self.at}]"
        return [
            f"for _e in {var}:",
            f"    _v = {item}",
            f"    if {self.ref.test('_v', ns, key)}:",
            f"        raise _bad_item(_where, {var!r}, {self.suffix!r}, _t{key}, {var}, _e, _v)",
        ]


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
        ns = {
            "_body": fn,
            "_where": full_name,
            "_bad": bad_argument,
            "_bad_item": _bad_item,
            "_text": _text,
            "_check_bytes": _check_bytes,
            "_VMBuffer": VMBuffer,
        }
        lines = []
        for i, name in enumerate(params):
            if name in args:
                lines += args[name].emit(name, ns, str(i))
        signature = ", ".join(["self", *params])
        source = "\n".join(
            [f"def {fn.__name__}({signature}):"]
            + [f"    {line}" for line in lines]
            + [f"    return _body({signature})"]
        )
        filename = f"<vm_import {full_name}>"
        # Registered so tracebacks through the checks show their source.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(code_cache.compile_source(source, filename), ns)
        wrapper = functools.update_wrapper(ns[fn.__name__], fn)
        wrapper.__vm_import__ = decl
        wrapper.__vm_checks__ = (fn, lines, ns)  # for one_frame
        return wrapper

    return declare


def one_frame(wrapper):
    """Decorator above `@vm_import` for imports compiled programs call per dispatch: the
    method is recompiled from its own source with its checks as its first statements, so
    a call is one Python frame instead of the checking function calling the method (about
    0.1 us less per call). Each costs a parse and a compile at import (about 0.4 ms),
    hence only where it pays. Falls back to the wrapper where that cannot be done."""
    checks = getattr(wrapper, "__vm_checks__", None)
    if checks is None:
        return wrapper  # nothing checked: the method is called as it is
    merged = _merged(*checks)
    if merged is None:
        return wrapper
    merged.__vm_import__ = wrapper.__vm_import__
    return merged


def _merged(fn, lines: list[str], ns: dict):
    """`fn` recompiled from its own source with the check `lines` as its first statements
    (after the docstring): one Python frame per import call instead of a checking wrapper
    calling the method. In the checks, strings become constants and the other helpers
    globals of the method's module named `_vmi_<method>_<helper>` (a cached global load;
    keyword defaults would cost a dict lookup each per call). The body keeps its module
    globals and its source lines. None (the caller writes a wrapper) where the source is
    unavailable, the method has free variables (`super()`, closures), or a name the checks
    use is taken."""
    code = fn.__code__
    helpers = {k: v for k, v in ns.items() if k != "_body"}
    taken = set(code.co_names) | set(code.co_varnames)
    if code.co_freevars or taken & ({"_e", "_v", "_x"} | set(helpers)):
        return None
    module_globals = fn.__globals__
    names = {}
    for key, value in helpers.items():
        if isinstance(value, str):
            continue
        name = f"_vmi_{fn.__name__}{key}"
        if module_globals.get(name, value) is not value:
            return None
        names[key] = name
    # (the merged code follows from the method's code, the checks and the helpers' names
    # and string values: code_cache keeps it between processes under all of those)
    strings = sorted((k, v) for k, v in helpers.items() if isinstance(v, str))
    new_code = code_cache.compiled(
        ("one_frame", marshal.dumps(code).hex(), "\n".join(lines), repr(sorted(names.items())),
         repr(strings)),
        lambda: _merged_code(code, lines, helpers, names),
    )
    if new_code is None or not (
        set(code.co_names) <= set(new_code.co_names)
        and set(code.co_varnames) <= set(new_code.co_varnames)
    ):
        return None  # (no source, source that does not match the code, or not all of it)
    for key, name in names.items():
        module_globals[name] = helpers[key]
    merged = types.FunctionType(new_code, module_globals, fn.__name__, fn.__defaults__)
    merged.__kwdefaults__ = fn.__kwdefaults__
    return functools.update_wrapper(merged, fn)


def _merged_code(code, lines: list[str], helpers: dict, names: dict):
    """The code of _merged's function, compiled from the method's source with the checks
    put first; None where the source cannot be read or does not match `code`."""
    func = _function_node(code)
    params = [a.arg for a in func.args.posonlyargs + func.args.args] if func else None
    if params != list(code.co_varnames[: code.co_argcount]):
        return None  # (no source, or source that does not match the code)
    func.decorator_list = []
    checks = ast.parse("\n".join(lines)).body
    for node in checks:
        for sub in ast.walk(node):
            if "lineno" in sub._attributes:  # tracebacks through a check: the `def` line
                sub.lineno = sub.end_lineno = func.lineno
            for field, value in ast.iter_fields(sub):
                if isinstance(value, list):
                    value[:] = [_helper(v, helpers, names) for v in value]
                else:
                    setattr(sub, field, _helper(value, helpers, names))
    body = func.body
    docstring = 1 if ast.get_docstring(func, clean=False) is not None else 0
    func.body = body[:docstring] + checks + body[docstring:]
    tree = ast.Module(body=[func], type_ignores=[])  # (every node has its location)
    module = compile(tree, code.co_filename, "exec", dont_inherit=True)
    return next(c for c in module.co_consts if isinstance(c, types.CodeType))


def _function_node(code):
    """The FunctionDef of `code`'s function, parsed from its own lines of its source file
    (first decorator line to the furthest line its instructions cover), with the file's
    line numbers; None when the source cannot be read or parsed."""
    first = code.co_firstlineno
    last = max((end for _, end, _, _ in code.co_positions() if end is not None), default=0)
    lines = [linecache.getline(code.co_filename, n) for n in range(first, last + 1)]
    if not lines or not all(lines):
        return None
    if first < 2:
        return None
    # Under `if 1:` on the line before, the parse keeps the file's lines and columns.
    text = "\n" * (first - 2) + "if 1:\n" + "".join(lines)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    body = tree.body[0].body
    func = body[0] if len(body) == 1 else None
    if not isinstance(func, ast.FunctionDef) or func.name != code.co_name:
        return None
    return func


def _helper(node, helpers: dict, names: dict):
    """A check's reference to helper `_x`: a constant (strings) or the renamed global."""
    if isinstance(node, ast.Name) and node.id in helpers:
        if node.id in names:
            return ast.copy_location(ast.Name(id=names[node.id], ctx=node.ctx), node)
        return ast.copy_location(ast.Constant(helpers[node.id]), node)
    return node


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
