"""Import modules are declared once per import, and only what they declare can be imported.

* Each module's `IMPORTS` table comes from its `@vm_import` declarations (name, cconv,
  argument kinds); a declaration that does not fit its method is rejected at class creation.
* At load, an import resolves only when its module's table declares it: `check.__init__`,
  `check.__class__` or an undeclared public method are NOT_FOUND when required and
  unresolved (None) when optional, as in IREE. User-provided modules declare `IMPORTS` too.
* At translate time, every required `vm.import` of a module pyree provides is checked
  against that module's table; a mismatch is one line naming the import.
* Every error quoting a name from a vmfb is one line, whatever the name holds.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from runtime_support.api.context import ModuleContext
from runtime_support.errors import StatusCode, VMError, quote_name
from runtime_support.hal import HalBuffer, LocalDevice
from runtime_support.hal.module import HalModule
from runtime_support.modules import import_tables
from runtime_support.modules.check import CheckModule
from runtime_support.modules.hal_inline import HalInlineModule
from runtime_support.modules.hal_loader import HalLoaderModule
from runtime_support.modules.io_parameters import IoParametersModule
from runtime_support.vm import args as vm_args
from translator.errors import InvalidModuleError
from translator.imports import check_imports
from translator.module import FLAG_OPTIONAL, ImportFunction, Signature

HOSTILE_NAMES = [
    "a\nb",
    "a\rb",
    "a\u2028b",
    "a\u2029b",
    "a\x85b",
    "a\x0bb\x0cc",
    "a\x1cb",
    "a'\"b\\",
]

MODULE_CLASSES = (HalModule, HalInlineModule, HalLoaderModule, IoParametersModule, CheckModule)


def _one_line(text: str) -> bool:
    return len(text.splitlines()) == 1


# --------------------------------------------------------------------------- declarations


@pytest.mark.parametrize("cls", MODULE_CLASSES, ids=lambda c: c.__name__)
def test_imports_table_comes_from_the_declarations(cls):
    declared = {}
    for attr in dir(cls):
        decl = getattr(getattr(cls, attr), "__vm_import__", None)
        if decl is not None:
            assert attr == vm_args.method_name(decl.full_name), decl.full_name
            declared[decl.full_name] = decl.cconv
    assert declared == cls.IMPORTS
    assert declared, "no declared imports"


def test_import_tables_name_every_module():
    tables = import_tables()
    assert set(tables) == {"hal", "hal_inline", "hal_loader", "io_parameters", "check"}
    assert tables["hal"] == HalModule.IMPORTS and tables["check"] == CheckModule.IMPORTS


def test_declaration_that_does_not_fit_its_method_is_rejected():
    with pytest.raises(TypeError, match="arity"):

        @vm_args.import_module("m")
        class _Arity:
            @vm_args.vm_import("m.f", "0ri_v")
            def f(self, a):
                pass

    with pytest.raises(TypeError, match="method name"):

        @vm_args.import_module("m")
        class _Name:
            @vm_args.vm_import("m.g.h", "0i_v")
            def g(self, a):
                pass

    with pytest.raises(TypeError, match="'b'"):

        @vm_args.import_module("m")
        class _Arg:
            @vm_args.vm_import("m.f", "0r_v", b=vm_args.Ref(HalBuffer, "!hal.buffer"))
            def f(self, a):
                pass

    with pytest.raises(TypeError, match="not a Ref"):

        @vm_args.import_module("m")
        class _Kind:
            @vm_args.vm_import("m.f", "0i_v", a=vm_args.Ref(HalBuffer, "!hal.buffer"))
            def f(self, a):
                pass


def test_declared_checks_and_unsigned_masking():
    device = LocalDevice("local-sync")
    hal = HalModule([device])
    with pytest.raises(VMError) as e:
        hal.buffer_view_create(None, 0, 4, 0x20000020, 1, [1])
    assert e.value.code == StatusCode.INVALID_ARGUMENT
    assert (
        e.value.message == "hal.buffer_view.create: argument 'buffer' is null; expected !hal.buffer"
    )
    with pytest.raises(VMError) as e:
        hal.command_buffer_dispatch(
            hal.command_buffer_create(device, 1, 3, 0, 0), None, 0, 1, 1, 1, 0, [], []
        )
    assert "hal.command_buffer.dispatch: argument 'executable' is null" in e.value.message
    buffer = hal.allocator_allocate(device.allocator, 0, -1, 0x3003, 16)
    assert buffer.memory_types == 0xFFFFFFFF  # an i32 -1 is the u32 0xFFFFFFFF
    view = hal.buffer_view_create(buffer, 0, 16, -1, -2, [4])
    assert (view.element_type, view.encoding_type) == (0xFFFFFFFF, 0xFFFFFFFE)
    assert hal.buffer_view_element_type(view) == -1  # back to a signed i32


def test_imports_without_checks_add_no_layer():
    # Nothing to check: the method is the function as written (no per-call wrapper).
    assert HalModule.devices_count.__vm_import__.full_name == "hal.devices.count"
    assert HalModule.devices_count.__code__.co_filename.endswith("hal/module.py")


def test_checked_imports_are_closures_not_generated_source():
    # The checks are a closure over the declaration (vm_args._checking): no source is
    # written at run time; they raise as declared, in parameter order, and masks still
    # reach the body.
    fence_create = HalModule.fence_create
    assert fence_create.__vm_import__.full_name == "hal.fence.create"
    assert fence_create.__code__.co_filename.endswith("vm/args.py")
    assert fence_create.__wrapped__.__code__.co_filename.endswith("hal/module.py")
    device = LocalDevice("local-sync")
    hal = HalModule([device])
    with pytest.raises(VMError) as e:
        hal.fence_create(object(), 0)
    assert e.value.message == "hal.fence.create: argument 'device' is object; expected !hal.device"
    with pytest.raises(VMError, match="argument 'fences\\[1\\]' is int; expected !hal.fence"):
        hal.fence_await(0, 0, [None, 3])
    buffer = hal.device_queue_alloca(device, 0, None, None, 0, -1, 0x3003, 16, 0)
    assert buffer.memory_types == 0xFFFFFFFF  # masked before the body ran
    # Two bad arguments: the first in parameter order is named (as the generated checks
    # did), whatever its kind.
    with pytest.raises(VMError, match="argument 'buffer' is null"):
        hal.buffer_assert(None, 3, None, 0, 0, 0)


def test_checks_of_long_imports_and_of_any_arity():
    # Arity 9 and more go through the *args closure; the same checks.
    ns_fn = vm_args.vm_import(
        "m.f", "0rIIIIIIIir_i", a=vm_args.Ref(HalBuffer, "!hal.buffer"), i=vm_args.U32,
        b=vm_args.Ref(HalBuffer, "!hal.buffer").or_null,
    )

    def f(self, a, c, d, e, g, h, j, k, i, b):
        return i

    f.__name__ = "f"
    checked = ns_fn(f)
    buf = HalBuffer.allocate(4)
    assert checked(None, buf, 0, 0, 0, 0, 0, 0, 0, -1, None) == 0xFFFFFFFF
    with pytest.raises(VMError, match="m.f: argument 'b' is int; expected !hal.buffer"):
        checked(None, buf, 0, 0, 0, 0, 0, 0, 0, -1, 3)
    with pytest.raises(VMError, match="m.f: argument 'a' is null; expected !hal.buffer"):
        checked(None, None, 0, 0, 0, 0, 0, 0, 0, -1, 3)


# --------------------------------------------------------------------------- resolution


def _context(**modules) -> ModuleContext:
    ctx = ModuleContext.__new__(ModuleContext)
    ctx.modules = modules
    return ctx


UNDECLARED = [
    ("check", "check.__init__", "0i_v"),
    ("check", "check.__class__", "0i_v"),
    ("check", "check.reset", "0v_v"),  # a public method, but not an import
    ("check", "check.expect_eq_const", "0rrr_v"),
    ("hal", "hal.__init__", "0r_v"),
    ("hal", "hal._device", "0r_r"),
]


@pytest.mark.parametrize("module, full_name, cconv", UNDECLARED)
def test_only_declared_imports_resolve(module, full_name, cconv):
    modules = {"check": CheckModule(), "hal": HalModule([LocalDevice("local-sync")])}
    ctx = _context(**modules)
    with pytest.raises(VMError) as e:
        ctx._resolve(full_name, cconv, False)
    assert e.value.code == StatusCode.NOT_FOUND
    assert ctx._resolve(full_name, cconv, True) is None
    assert ctx._resolve("check.expect_true", "0i_v", False) == modules["check"].expect_true


def test_user_module_resolves_what_it_declares():
    class Custom:
        IMPORTS = {"custom.fn": "0i_i"}

        def fn(self, x):
            return x + 1

        def other(self, x):
            return x

    ctx = _context(custom=Custom())
    assert ctx._resolve("custom.fn", "0i_i", False)(1) == 2
    for name in ("custom.other", "custom.__init__", "custom.__class__"):
        with pytest.raises(VMError) as e:
            ctx._resolve(name, "0i_i", False)
        assert e.value.code == StatusCode.NOT_FOUND
        assert ctx._resolve(name, "0i_i", True) is None

    class Undeclared:  # no IMPORTS: nothing resolves
        def fn(self, x):
            return x

    with pytest.raises(VMError) as e:
        _context(custom=Undeclared())._resolve("custom.fn", "0i_i", False)
    assert e.value.code == StatusCode.NOT_FOUND


class Returns:
    """A Python import module whose imports return whatever the test sets."""

    IMPORTS = {"custom.i": "0v_i", "custom.l": "0v_I", "custom.f": "0v_f", "custom.d": "0v_F",
               "custom.many": "0v_iIr", "custom.ref": "0v_r"}

    def __init__(self):
        self.value = None

    def i(self):
        return self.value

    l = f = d = many = ref = i


# (result, cconv code, what the VM receives), as iree.runtime's PyModuleInterface takes them
GOOD_RESULTS = [
    (-(2**31), "i", -(2**31)), (2**31 - 1, "i", 2**31 - 1), (True, "i", 1), (np.int64(7), "i", 7),
    (np.uint8(200), "i", 200), (-(2**63), "l", -(2**63)), (2**63 - 1, "l", 2**63 - 1),
    (np.uint32(2**32 - 1), "l", 2**32 - 1), (3, "f", 3.0), (0.1, "f", float(np.float32(0.1))),
    (np.float32(2.5), "f", 2.5), (1e300, "f", float("inf")), (0.1, "d", 0.1), (False, "d", 0.0),
    (np.float64(1.5), "d", 1.5), (np.int64(-2), "d", -2.0),
]
# (result, cconv code, what the error says)
def _param_id(value) -> str:
    if type(value) is int and value.bit_length() > 64:
        return f"int_of_{value.bit_length()}_bits"  # (repr: past the int-to-str limit)
    return repr(value)[:24]


BAD_RESULTS = [
    (2**32 + 8, "i", "is 4294967304, outside the i32 range"),
    (2**31, "i", "is 2147483648, outside the i32 range"),
    (-(2**31) - 1, "i", "outside the i32 range"), (2**63, "l", "outside the i64 range"),
    (np.uint64(2**64 - 1), "l", "outside the i64 range"), (8.0, "i", "is float, not an i32"),
    (None, "i", "is NoneType, not an i32"), ("3", "l", "is str, not an i64"),
    (np.float64(1.0), "l", "is float64, not an i64"), (None, "f", "is NoneType, not an f32"),
    ("1.5", "d", "is str, not an f64"), (1j, "d", "is complex, not an f64"),
    (10**400, "d", "is an int too large for a float"),
    (10**5000, "i", "is an int of 16610 bits, outside the i32 range"),
]


@pytest.mark.parametrize("value,code,expected", GOOD_RESULTS, ids=lambda v: repr(v)[:24])
def test_python_module_results_are_converted(value, code, expected):
    module = Returns()
    fn = _context(custom=module)._resolve(f"custom.{code}", module.IMPORTS[f"custom.{code}"], False)
    module.value = value
    result = fn()
    assert type(result) is type(expected) and result == expected


@pytest.mark.parametrize("value,code,problem", BAD_RESULTS, ids=lambda v: _param_id(v))
def test_python_module_results_are_checked(value, code, problem):
    module = Returns()
    fn = _context(custom=module)._resolve(f"custom.{code}", module.IMPORTS[f"custom.{code}"], False)
    module.value = value
    with pytest.raises(VMError) as e:
        fn()
    assert e.value.code == StatusCode.INVALID_ARGUMENT
    assert e.value.message.startswith(f"import 'custom.{code}': result 0 is ")
    assert problem in e.value.message and "; return a Python " in e.value.message
    assert _one_line(str(e.value))


def test_python_module_several_results_are_checked_by_index():
    module = Returns()
    fn = _context(custom=module)._resolve("custom.many", "0v_iIr", False)
    ref = object()
    module.value = (np.int32(1), True, ref)
    assert fn() == (1, 1, ref)
    module.value = (1, 2**64, None)
    with pytest.raises(VMError, match=r"'custom.many': result 1 is 18446744073709551616, outside the i64"):
        fn()
    for value, what in ((5, "int"), ((1, 2), "2 values")):
        module.value = value
        with pytest.raises(VMError, match=f"'custom.many' returned {what}; return a tuple of its 3"):
            fn()


def test_only_python_modules_pay_for_result_checks():
    module = Returns()
    assert _context(custom=module)._resolve("custom.ref", "0v_r", False) == module.ref
    hal = HalModule([LocalDevice("local-sync")])  # pyree's own: its methods as they are
    assert _context(hal=hal)._resolve("hal.buffer_view.rank", "0r_i", False) == hal.buffer_view_rank


@pytest.mark.parametrize("hostile", HOSTILE_NAMES)
def test_required_import_errors_are_one_line(hostile):
    ctx = _context(check=CheckModule())
    for full_name in (f"check.{hostile}", f"{hostile}.fn", "check.expect_true"):
        cconv = "0i_i" if full_name == "check.expect_true" else "0i_v"
        with pytest.raises(VMError) as e:
            ctx._resolve(full_name, cconv, False)
        assert _one_line(str(e.value)), str(e.value)
        assert quote_name(full_name) in str(e.value)


# --------------------------------------------------------------------------- one-line names


@pytest.mark.parametrize("hostile", HOSTILE_NAMES)
def test_quote_name_is_one_line_and_reversible(hostile):
    quoted = quote_name(hostile)
    assert _one_line(quoted) and quoted.isprintable()
    assert eval(quoted) == hostile  # a Python string literal of the exact name


def test_quote_name_keeps_plain_names_readable():
    assert quote_name("hal.buffer_view.create") == "'hal.buffer_view.create'"
    assert quote_name("main$async") == "'main$async'"
    assert quote_name("\udcff") == "'\\udcff'"  # surrogate-escaped invalid UTF-8


@pytest.mark.parametrize("hostile", HOSTILE_NAMES)
def test_translator_errors_are_one_line(hostile):
    e = InvalidModuleError(f"bad opcode in {hostile}", function=hostile, pc=4, path="x\ny.vmfb")
    assert _one_line(str(e)), str(e)
    # The function is cited as is when printable, else quoted (escaped).
    assert f"function {hostile if hostile.isprintable() else quote_name(hostile)} pc" in str(e)


@pytest.mark.parametrize("hostile", HOSTILE_NAMES)
def test_vm_error_context_is_one_line(hostile):
    e = VMError(StatusCode.INTERNAL, "boom").with_context(hostile, f"{hostile}:1:2")
    assert _one_line(str(e)), str(e)
    assert e.function == hostile  # the attribute keeps the name itself


# --------------------------------------------------------------------------- translate time


def _module(*imports: tuple[str, str, bool]):
    return SimpleNamespace(
        imports=tuple(
            ImportFunction(i, name, Signature(cconv), FLAG_OPTIONAL if optional else 0)
            for i, (name, cconv, optional) in enumerate(imports)
        )
    )


def test_translate_time_check_accepts_declared_and_unknown_modules():
    check_imports(_module(*[(n, c, False) for n, c in HalModule.IMPORTS.items()]))
    check_imports(_module(("custom.anything", "0rI_r", False), ("my_mod.f.g", "0v_v", False)))
    # An optional import the module lacks stays unresolved at run time, as in IREE.
    check_imports(_module(("hal.future.op", "0r_v", True), ("check.expect_true", "0I_v", True)))


@pytest.mark.parametrize(
    "name, cconv, what",
    [
        ("hal.buffer.nope", "0r_v", "not provided by the hal module"),
        ("check.__init__", "0i_v", "not provided by the check module"),
        ("hal.buffer_view.create", "0rIIii_r", "calling convention"),
        ("io_parameters.load", "0r_r", "calling convention"),
    ],
)
def test_translate_time_check_rejects_mismatches(name, cconv, what):
    with pytest.raises(InvalidModuleError) as e:
        check_imports(_module(("hal.devices.count", "0v_i", False), (name, cconv, False)))
    text = str(e.value)
    assert what in text and quote_name(name) in text and _one_line(text)


@pytest.mark.parametrize("hostile", HOSTILE_NAMES)
def test_translate_time_check_error_is_one_line(hostile):
    with pytest.raises(InvalidModuleError) as e:
        check_imports(_module((f"hal.{hostile}", "0v_v", False)))
    assert _one_line(str(e.value)) and quote_name(f"hal.{hostile}") in str(e.value)


FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
)
PROGRAM = """
func.func private @{name}(i64)
func.func @main(%x: i64) {{
  call @{name}(%x) : (i64) -> ()
  return
}}
"""


def test_translate_rejects_a_vmfb_whose_import_does_not_match(tmp_path, compile_mlir):
    from translator.codegen import write_package
    from translator.reader import read_module

    src = tmp_path / "bad_import.mlir"
    src.write_text(PROGRAM.format(name="check.expect_true"))  # declared 0i_v, called 0I_v
    data = Path(compile_mlir(src, FLAGS)).read_bytes()
    module = read_module(data)
    assert module.imports[0].signature.calling_convention == "0I_v"
    with pytest.raises(InvalidModuleError) as e:
        write_package(module, tmp_path, "bad_import")
    assert "'check.expect_true'" in str(e.value) and "0I_v" in str(e.value)
    assert not (tmp_path / "bad_import").exists()

    src.write_text(PROGRAM.format(name="custom.log"))  # a user module: passes
    data = Path(compile_mlir(src, FLAGS)).read_bytes()
    pkg = write_package(read_module(data), tmp_path, "user_import")

    class Custom:
        IMPORTS = {"custom.log": "0I_v"}

        def __init__(self):
            self.seen = []

        def log(self, x):
            self.seen.append(x)

    from differential import load_package

    custom = Custom()
    ctx = load_package(pkg).load(device="local-sync", modules={"custom": custom})
    ctx.call("main", np.int64(-5))
    assert custom.seen == [-5]
    custom.IMPORTS = {}
    with pytest.raises(VMError) as e:
        load_package(pkg).load(device="local-sync", modules={"custom": custom})
    assert e.value.code == StatusCode.NOT_FOUND and "'custom.log'" in str(e.value)


SIZED = """
func.func private @custom.size() -> i32
func.func @main() -> tensor<?xi8> {
  %n = call @custom.size() : () -> i32
  %i = arith.index_cast %n : i32 to index
  %c = arith.constant 1 : i8
  %e = tensor.empty(%i) : tensor<?xi8>
  %f = linalg.fill ins(%c : i8) outs(%e : tensor<?xi8>) -> tensor<?xi8>
  return %f : tensor<?xi8>
}
"""


def test_python_module_result_out_of_range_stops_the_call(tmp_path, compile_mlir):
    """An i32 result of 2**32 + 8 used as a size is refused before it is used (it was a
    16 GiB allocation), naming the import, the result and the export."""
    from differential import load_package
    from translator.codegen import write_package
    from translator.reader import read_module

    src = tmp_path / "sized.mlir"
    src.write_text(SIZED)
    pkg = write_package(read_module(Path(compile_mlir(src, FLAGS)).read_bytes()), tmp_path, "sized")

    class Size:
        IMPORTS = {"custom.size": "0v_i"}
        value = np.int64(3)

        def size(self):
            return self.value

    module = Size()
    ctx = load_package(pkg).load(device="local-sync", modules={"custom": module})
    np.testing.assert_array_equal(ctx.main(), np.ones(3, np.int8))
    module.value = 2**32 + 8
    with pytest.raises(VMError) as e:
        ctx.main()
    assert e.value.code == StatusCode.INVALID_ARGUMENT and e.value.function == "main"
    assert "import 'custom.size': result 0 is 4294967304, outside the i32 range" in str(e.value)
