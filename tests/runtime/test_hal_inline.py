"""The `hal_inline` and `hal_loader` modules (inline execution model).

End-to-end coverage (a compiled inline-dynamic program translated and compared with
iree-run-module) is in test_conformance.py and below; these tests pin the modules' own
semantics and errors against IREE 3.13's runtime/src/iree/modules/hal/{inline,loader}.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runtime_support.errors import StatusCode, VMError
from runtime_support.hal.buffer_view import HalBufferView
from runtime_support.loaders import supported_formats
from runtime_support.modules.hal_inline import HalInlineModule
from runtime_support.modules.hal_loader import MAX_BINDINGS, HalLoaderModule
from runtime_support.vm.buffer import VMBuffer
from iree_tools import find_tool  # IREE tools on PATH or in the iree packages

REPO = Path(__file__).resolve().parents[2]


def _status(excinfo) -> StatusCode:
    return excinfo.value.code


# --------------------------------------------------------------------------- hal_inline


def test_allocate_returns_buffer_and_aliasing_storage():
    inline = HalInlineModule()
    buffer, storage = inline.buffer_allocate(64, 16)
    assert inline.buffer_length(buffer) == 16 and storage.length == 16
    assert buffer.address % 64 == 0
    storage.store_i32(1, 0x01020304)  # a VM store through the storage ...
    assert buffer.read(4, 4) == bytes([4, 3, 2, 1])  # ... is the HAL buffer's memory
    again = inline.buffer_storage(buffer)
    assert again.address == storage.address and not again.readonly


def test_allocate_initialized_copies_and_checks_the_range():
    inline = HalInlineModule()
    source = VMBuffer(bytearray(b"abcdefgh"))
    buffer, storage = inline.buffer_allocate_initialized(16, source, 2, 4)
    assert buffer.read() == b"cdef" and storage.tobytes() == b"cdef"
    source.data[2] = ord("X")
    assert buffer.read() == b"cdef"  # a copy, not an alias
    with pytest.raises(VMError) as e:
        inline.buffer_allocate_initialized(16, source, 6, 4)
    assert _status(e) == StatusCode.OUT_OF_RANGE


def test_subspan_storage_and_views():
    inline = HalInlineModule()
    buffer, _ = inline.buffer_allocate(16, 32)
    sub = inline.buffer_subspan(buffer, 8, 8)
    assert inline.buffer_length(sub) == 8
    assert inline.buffer_storage(sub).address == buffer.address + 8
    with pytest.raises(VMError) as e:
        inline.buffer_subspan(buffer, 30, 8)
    assert _status(e) == StatusCode.OUT_OF_RANGE
    view = inline.buffer_view_create(buffer, 4, 16, 0x21000020, 1, [2, 2])
    assert isinstance(view, HalBufferView) and view.buffer.length == 16
    assert inline.buffer_view_rank(view) == 2 and inline.buffer_view_dim(view, 1) == 2
    assert inline.buffer_view_element_type(view) == 0x21000020
    inline.buffer_view_assert(view, VMBuffer(b"arg"), 0x21000020, 1, [2, 2])
    with pytest.raises(VMError) as e:
        inline.buffer_view_assert(view, VMBuffer(b"arg"), 0x21000020, 1, [4])
    assert _status(e) == StatusCode.INVALID_ARGUMENT and "arg" in str(e.value)


def test_wrap_is_unimplemented_as_in_iree():
    with pytest.raises(VMError) as e:
        HalInlineModule().buffer_wrap(VMBuffer(b"1234"), 0, 4)
    assert _status(e) == StatusCode.UNIMPLEMENTED


def test_null_and_wrong_refs_are_invalid_arguments():
    inline = HalInlineModule()
    for call in (
        lambda: inline.buffer_length(None),
        lambda: inline.buffer_storage(VMBuffer(b"")),
        lambda: inline.buffer_allocate_initialized(16, None, 0, 0),
    ):
        with pytest.raises(VMError) as e:
            call()
        assert _status(e) == StatusCode.INVALID_ARGUMENT


def test_device_query_knows_only_the_cpu_category():
    inline = HalInlineModule()
    assert inline.device_query_i64(VMBuffer(b"hal.executable.format"), VMBuffer(b"x")) == (0, 0)
    ok, _ = inline.device_query_i64(VMBuffer(b"hal.cpu"), VMBuffer(b"sse2"))
    assert ok == 1


def test_imports_table_matches_the_compiler_declarations():
    doc = (REPO.parent / "shared" / "docs" / "hal-abi.md")
    if not doc.is_file():
        pytest.skip("../shared/docs not present")
    text = doc.read_text()
    section = text[text.index("- `hal_inline`") : text.index("## I.")]
    for name, cconv in {**HalInlineModule.IMPORTS, **HalLoaderModule.IMPORTS}.items():
        short = name.split(".", 1)[1]
        assert f"`{cconv}`" in section, (name, cconv)
        assert short.split(".")[-1] in section, name


# --------------------------------------------------------------------------- hal_loader


def test_query_support_and_unknown_format():
    loader = HalLoaderModule()
    for fmt in supported_formats():
        assert loader.executable_query_support(VMBuffer(fmt.encode())) == 1
    assert loader.executable_query_support(VMBuffer(b"vulkan-spirv-fb")) == 0
    with pytest.raises(VMError) as e:
        loader.executable_load(VMBuffer(b"vulkan-spirv-fb"), VMBuffer(b"\0" * 16), None)
    assert _status(e) == StatusCode.NOT_FOUND and "vulkan-spirv-fb" in str(e.value)


def test_load_rejects_constants_not_a_multiple_of_four():
    with pytest.raises(VMError) as e:
        HalLoaderModule().executable_load(
            VMBuffer(b"embedded-elf-x86_64"), VMBuffer(b"\0" * 16), VMBuffer(b"\0" * 6)
        )
    assert _status(e) == StatusCode.INVALID_ARGUMENT


class _FakeExecutable:
    """Stands in for a loaded executable to observe what dispatch passes down."""

    def __init__(self):
        self.calls = []

    def dispatch(self, ordinal, counts, constants, bindings, workers=1):
        self.calls.append((ordinal, counts, constants, bindings))


def _executable():
    from runtime_support.hal.executable import HalExecutable

    native = _FakeExecutable()
    return HalExecutable(native, format="fake"), native


def test_dispatch_resolves_binding_addresses_and_checks_ranges():
    loader = HalLoaderModule()
    executable, native = _executable()
    storage = VMBuffer.alloc(64)
    loader.executable_dispatch(executable, 3, 2, 1, 1, [-1, 7], [(storage, 16, 32)])
    ordinal, counts, constants, bindings = native.calls[0]
    assert (ordinal, counts, constants) == (3, (2, 1, 1), [0xFFFFFFFF, 7])
    assert bindings == [(storage.address + 16, 32)]
    with pytest.raises(VMError) as e:
        loader.executable_dispatch(executable, 0, 1, 1, 1, [], [(storage, 48, 32)])
    assert _status(e) == StatusCode.OUT_OF_RANGE
    with pytest.raises(VMError) as e:
        loader.executable_dispatch(executable, 0, 1, 1, 1, [], [(None, 0, 0)])
    assert _status(e) == StatusCode.INVALID_ARGUMENT
    with pytest.raises(VMError) as e:
        loader.executable_dispatch(
            executable, 0, 1, 1, 1, [], [(storage, 0, 4)] * (MAX_BINDINGS + 1)
        )
    assert _status(e) == StatusCode.RESOURCE_EXHAUSTED
    assert len(native.calls) == 1  # nothing ran for the rejected dispatches


# --------------------------------------------------------------------------- end to end

INLINE_PROGRAM = """
func.func @mul_add(%a: tensor<4xf32>, %b: tensor<4xf32>, %n: i32) -> (tensor<4xf32>, i32) {
  %0 = arith.mulf %a, %b : tensor<4xf32>
  %1 = arith.addf %0, %a : tensor<4xf32>
  %c1 = arith.constant 1 : i32
  %m = arith.addi %n, %c1 : i32
  return %1, %m : tensor<4xf32>, i32
}
func.func @dyn(%a: tensor<?xi32>) -> tensor<?xi32> {
  %0 = arith.addi %a, %a : tensor<?xi32>
  return %0 : tensor<?xi32>
}
"""


@pytest.mark.skipif(find_tool("iree-run-module") is None, reason="iree-base-runtime missing")
def test_inline_program_matches_iree_run_module(tmp_path, compile_mlir):
    src = tmp_path / "inline.mlir"
    src.write_text(INLINE_PROGRAM)
    vmfb = compile_mlir(
        src,
        [
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            "--iree-llvmcpu-target-cpu=generic",
            "--iree-execution-model=inline-dynamic",
        ],
    )
    out = tmp_path / "out"
    subprocess.run(
        [sys.executable, "-m", "translator.cli", str(vmfb), "-o", str(out), "--name", "inl"],
        check=True,
        cwd=REPO,
    )
    for function, inputs in (
        ("mul_add", ["4xf32=1 2.5 -3 4", "4xf32=0.5 2 3 -1e30", "41"]),
        ("dyn", ["5xi32=1 2 3 4 -2147483648"]),
    ):
        args = [f"--function={function}", *(f"--input={i}" for i in inputs)]
        iree = subprocess.run(
            ["iree-run-module", f"--module={vmfb}", "--device=local-sync", *args],
            capture_output=True,
            text=True,
            check=True,
        )
        ours = subprocess.run(
            [sys.executable, "-m", "runtime_support.tools.run_cli", str(out / "inl"),
             "--device=local-sync", *args],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout == iree.stdout
    text = (out / "inl" / "__init__.py").read_text()
    assert "hal_inline.buffer_view.create" in text and "hal_loader.executable.dispatch" in text
