"""The thin host path of export calls (runtime_support/api/context.py, abi.py, hal/buffer*.py):
numpy arguments are copied into fresh device buffers exactly as iree.runtime's Python API
does, results come back zero-copy only where the translator proved that nothing else can
reach their memory (translator/analyses/ownership.py), and the
fast paths built at load time give the same results and errors as the general path.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers_compile import LLVM_CPU_FLAGS
from differential import load_package
from translator.codegen import write_package
from translator.reader import read_module_file

rt = pytest.importorskip("iree.runtime")

SOURCE = """
// iree-org/iree#16168: the matmul writes into the buffer of %acc, which is also returned.
func.func @matmul_acc(%lhs: tensor<2x2xf32>, %rhs: tensor<2x2xf32>, %acc: tensor<2x2xf32>)
    -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %r = linalg.matmul ins(%lhs, %rhs : tensor<2x2xf32>, tensor<2x2xf32>)
                     outs(%acc : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %r, %acc : tensor<2x2xf32>, tensor<2x2xf32>
}

util.global private mutable @state = dense<0.0> : tensor<4xf32>
func.func @set(%x: tensor<4xf32>) {
  util.global.store %x, @state : tensor<4xf32>
  return
}
func.func @get() -> tensor<4xf32> {
  %0 = util.global.load @state : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @id(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @mul(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = arith.muli %a, %b : tensor<4xi32>
  return %0 : tensor<4xi32>
}
func.func @big_add(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = arith.addf %a, %b : tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
func.func @dyn_add(%a: tensor<?x2xi32>, %b: tensor<?x2xi32>) -> tensor<?x2xi32> {
  %0 = arith.addi %a, %b : tensor<?x2xi32>
  return %0 : tensor<?x2xi32>
}
"""


@pytest.fixture(scope="module")
def vmfb(compile_mlir, tmp_path_factory):
    src = tmp_path_factory.mktemp("src") / "host_path.mlir"
    src.write_text(SOURCE)
    return compile_mlir(src, LLVM_CPU_FLAGS)


@pytest.fixture(scope="module")
def package(vmfb, tmp_path_factory):
    out = tmp_path_factory.mktemp("pkg")
    return load_package(write_package(read_module_file(vmfb), out, "host_path"))


def iree_module(vmfb):
    """The module under iree.runtime's high-level API (numpy in, DeviceArray out)."""
    config = rt.Config("local-sync")
    vm_module = rt.VmModule.mmap(config.vm_instance, str(vmfb))
    return rt.SystemContext(vm_modules=[vm_module], config=config).modules.module


def f32(*values):
    return np.array(values, dtype=np.float32)


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_arguments_are_copied_like_iree(vmfb, package, device):
    """iree.runtime copies numpy arguments into device buffers, so a program that writes
    into an argument's buffer (iree-org/iree#16168) leaves the caller's array alone; pyree
    does the same, and both give the same bits."""
    lhs, rhs = f32(1, 2, 3, 4).reshape(2, 2), f32(1, 0, 0, 1).reshape(2, 2)
    acc = np.full((2, 2), 100, np.float32)
    theirs = [np.asarray(r.to_host()).copy() for r in iree_module(vmfb).matmul_acc(lhs, rhs, acc)]
    assert (acc == 100).all()  # IREE's rule: the caller's array is never the buffer
    ours = package.load(device=device).matmul_acc(lhs, rhs, acc)
    assert (acc == 100).all()
    assert [r.tobytes() for r in ours] == [r.tobytes() for r in theirs]


def test_why_arguments_are_copied(package):
    """The premise of the rule: with the pinned compiler this program writes into the
    buffer of its argument %acc (a buffer view passed as is shows it), so importing the
    caller's numpy array zero-copy would change the caller's array."""
    from runtime_support.hal.buffer_view import HalBufferView

    lhs, rhs = f32(1, 2, 3, 4).reshape(2, 2), f32(1, 0, 0, 1).reshape(2, 2)
    acc = HalBufferView.from_numpy(np.full((2, 2), 100, np.float32))
    result, _ = package.load(device="local-sync").matmul_acc(lhs, rhs, acc)
    assert result.tolist() == (lhs @ rhs + 100).tolist()
    assert acc.to_numpy().tolist() == result.tolist()  # the argument's buffer was written


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_module_state_never_aliases_caller_arrays(vmfb, package, device):
    """A global that stores an argument, and a result read from a global: later mutation
    of the caller's arrays changes nothing inside the module (as under iree.runtime)."""
    theirs = iree_module(vmfb)
    ctx = package.load(device=device)
    x = f32(1, 2, 3, 4)
    theirs.set(x)
    ctx.set(x)
    x[:] = -1
    expected = np.asarray(theirs.get().to_host()).copy()
    got = ctx.get()
    assert got.tobytes() == expected.tobytes() == f32(1, 2, 3, 4).tobytes()
    got[:] = 7  # the result is the caller's: the global behind it must not change
    assert ctx.get().tobytes() == expected.tobytes()
    y = ctx.id(x)
    x[:] = 5
    assert y.tobytes() == f32(-1, -1, -1, -1).tobytes()


def test_exclusive_results_come_back_without_a_copy(package):
    ctx = package.load(device="local-sync")
    y = ctx.mul(np.arange(4, dtype=np.int32), np.arange(4, dtype=np.int32))
    assert y.tolist() == [0, 1, 4, 9]
    assert not y.flags.owndata and y.flags.writeable and y.flags.c_contiguous


def test_view_to_numpy_copies_unless_the_translator_proved_it_fresh():
    """view_to_numpy hands out the storage only when told the result is exclusive
    (Export.fresh_results, a translate-time fact): otherwise a copy, as iree.runtime's
    numpy results always are; and never borrowed host memory, a read-only or preserved
    allocation, or a small piece of a large one, even when told."""
    from runtime_support.api import abi
    from runtime_support.hal.buffer import Allocation, HalBuffer
    from runtime_support.hal.buffer_view import HalBufferView

    def fresh():
        buffer = HalBuffer(Allocation.copy_of(f32(1, 2, 3, 4)))
        return HalBufferView(buffer, (4,), 0x21000020)

    view = fresh()
    mem = view.buffer.allocation.array
    assert np.shares_memory(abi.view_to_numpy(view, True), mem)
    out = abi.view_to_numpy(view)  # (not proved: a copy, whatever holds it)
    assert not np.shares_memory(out, mem) and out.tolist() == [1, 2, 3, 4]
    view = fresh()
    view.buffer.allocation.preserve()  # another owner
    assert not np.shares_memory(abi.view_to_numpy(view, True), view.buffer.allocation.array)
    big = HalBuffer(Allocation.allocate(1 << 16), 64, 16)  # a piece of an arena
    out = abi.view_to_numpy(HalBufferView(big, (4,), 0x21000020), True)
    assert not np.shares_memory(out, big.allocation.array)
    # Borrowed host memory is never handed out.
    host = bytearray(f32(5, 6, 7, 8).tobytes())
    view = HalBufferView(HalBuffer.wrap_host(host, readonly=False), (4,), 0x21000020)
    out = abi.view_to_numpy(view, True)
    out[:] = 0
    assert bytes(host) == f32(5, 6, 7, 8).tobytes()


@pytest.mark.parametrize(
    "value",
    [
        np.arange(8, dtype=np.int32)[::2],  # not contiguous
        np.arange(4, dtype=np.uint32),  # signless: the other signedness
        np.arange(4, dtype=np.int32).astype(">i4"),  # non-native byte order
    ],
    ids=["strided", "unsigned", "big-endian"],
)
def test_general_path_inputs(package, value):
    ctx = package.load(device="local-sync")
    expected = (np.asarray(value).astype(np.int64) * np.arange(4)).tolist()
    assert ctx.mul(value, np.arange(4, dtype=np.int32)).tolist() == expected


def test_argument_errors_unchanged(package):
    ctx = package.load(device="local-sync")
    with pytest.raises(ValueError, match="argument 'input0'.*dimension 0 is 5"):
        ctx.mul(np.zeros(5, np.int32), np.zeros(4, np.int32))
    with pytest.raises(TypeError, match="argument 'input1': expected element type i32, got dtype float32"):
        ctx.mul(np.zeros(4, np.int32), np.zeros(4, np.float32))
    with pytest.raises(TypeError, match=r"mul\(\) takes 2 argument"):
        ctx.mul(np.zeros(4, np.int32))


def test_allocation_copy_of_is_aligned_and_private():
    from runtime_support.hal.buffer import ALIGNMENT, Allocation

    for array in (f32(1, 2, 3), np.array(2.5), np.ones((2, 3), np.float16), np.zeros(0, np.int8)):
        allocation = Allocation.copy_of(array)
        assert allocation.address % ALIGNMENT == 0
        assert allocation.address == allocation.array.ctypes.data or array.nbytes == 0
        assert allocation.array.tobytes() == array.tobytes()
        assert not np.shares_memory(allocation.array, array)


def test_wrap_array_is_the_opt_in_zero_copy_argument(package):
    from runtime_support.hal.buffer import aligned_empty

    ctx = package.load(device="local-sync")
    lhs, rhs = f32(1, 2, 3, 4).reshape(2, 2), f32(1, 0, 0, 1).reshape(2, 2)
    acc = aligned_empty((2, 2), np.float32)
    acc[:] = 100
    result, _ = ctx.matmul_acc(lhs, rhs, ctx.wrap_array(acc))
    assert result.tolist() == (lhs @ rhs + 100).tolist()
    assert acc.tolist() == result.tolist()  # no copy: the program wrote the caller's memory
    x = aligned_empty(4, np.int32)
    x[:] = np.arange(4)
    view = ctx.wrap_array(x)
    x[:] = 3  # the view is the array's memory
    assert ctx.mul(view, np.arange(4, dtype=np.int32)).tolist() == (3 * np.arange(4)).tolist()
    with pytest.raises(ValueError, match="not C-contiguous, 64-byte aligned"):
        ctx.wrap_array(np.zeros(9, np.float32)[1::2])
    frozen = aligned_empty(4, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="not writable"):
        ctx.wrap_array(frozen)


# -- argument copies reused by the next call (abi.tensor_argument's give_back) --------


def _spare(ctx, export: str, index: int) -> list:
    """The spare list of argument `index` of `export` (where give_back puts copies, as
    `(view, writer)` entries)."""
    return getattr(ctx, export).plan.converters[index].spare


def _views(spare: list) -> list:
    return [view for view, _ in spare]


def test_argument_copies_nothing_kept_are_reused(package):
    ctx = package.load(device="local-sync")
    spare = _spare(ctx, "mul", 0)
    results = []
    for i in range(4):
        a, b = np.arange(4, dtype=np.int32) + i, np.full(4, i + 1, np.int32)
        results.append(ctx.mul(a, b))
        a[:] = -7  # the caller's array is never the buffer
        assert len(spare) == 1  # the copy came back for the next call
    # Every result is its own array, unchanged by the later calls that refilled the copy.
    assert [r.tolist() for r in results] == [
        ((np.arange(4) + i) * (i + 1)).tolist() for i in range(4)
    ]
    before = id(spare[0][0])  # (an id: a reference held here would keep it from coming back)
    ctx.mul(np.arange(4, dtype=np.int32), np.arange(4, dtype=np.int32))
    assert [id(v) for v in _views(spare)] == [before]  # the same copy, refilled
    # With a spare waiting, arrays off the fast path still take the general path and
    # raise what it raises; the spare is still there for the next good call.
    with pytest.raises(ValueError, match="argument 'input0'.*dimension 0 is 5"):
        ctx.mul(np.zeros(5, np.int32), np.zeros(4, np.int32))
    with pytest.raises(TypeError, match="argument 'input0': expected element type i32, got dtype float32"):
        ctx.mul(np.zeros(4, np.float32), np.zeros(4, np.int32))
    assert ctx.mul(np.arange(8, dtype=np.int32)[::2], np.full(4, 3, np.int32)).tolist() == [0, 6, 12, 18]
    assert [id(v) for v in _views(spare)] == [before]
    assert ctx.mul(np.full(4, 5, np.int32), np.full(4, 3, np.int32)).tolist() == [15] * 4


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_kept_argument_copies_are_never_reused(vmfb, package, device):
    """Arguments a result still reaches (tied operands written in place and returned, an
    argument returned as is) are left alone, and copies the program only read (`set`
    copies into its global, possibly by a queue operation still pending) come back:
    every value matches iree.runtime's, call by call, with all results held."""
    theirs = iree_module(vmfb)
    ctx = package.load(device=device)
    kept_ours, kept_theirs = [], []
    for i in range(3):
        x = f32(1, 2, 3, 4) * (i + 1)
        theirs.set(x)
        ctx.set(x)
        x[:] = -1
        assert ctx.get().tobytes() == np.asarray(theirs.get().to_host()).tobytes()
        lhs, rhs = f32(1, 2, 3, 4).reshape(2, 2) + i, f32(1, 0, 0, 1).reshape(2, 2)
        acc = np.full((2, 2), 10.0 * i, np.float32)
        kept_ours.append((ctx.matmul_acc(lhs, rhs, acc), ctx.id(x)))
        assert _spare(ctx, "matmul_acc", 2) == [] and _spare(ctx, "id", 0) == []
        kept_theirs.append(
            (
                [np.asarray(r.to_host()).copy() for r in theirs.matmul_acc(lhs, rhs, acc)],
                np.asarray(theirs.id(x).to_host()).copy(),
            )
        )
    for (pair, ident), (their_pair, their_ident) in zip(kept_ours, kept_theirs):
        assert [r.tobytes() for r in pair] == [r.tobytes() for r in their_pair]
        assert ident.tobytes() == their_ident.tobytes()


def test_give_back_keeps_only_fast_path_copies(package):
    """give_back (called after a call the translator proved keeps no reference to the
    argument) keeps one spare at most, and never a view the fast path did not make
    (the general path's, a caller's): their buffers may differ from a fresh copy."""
    from runtime_support.hal.buffer_view import HalBufferView

    ctx = package.load(device="local-sync")
    assert ctx.mul.plan.give_backs[0] is not None  # (mul keeps neither argument)
    convert = ctx.mul.plan.converters[0]
    spare = convert.spare
    spare.clear()
    view = convert(np.arange(4, dtype=np.int32))
    convert.give_back(view)
    convert.give_back(convert(np.arange(4, dtype=np.int32)))  # one spare at most
    assert _views(spare) == [view]
    spare.clear()
    for other in (
        convert(np.arange(8, dtype=np.int32)[::2]),
        HalBufferView.from_numpy(np.arange(4, dtype=np.int32), usage=0),
    ):
        assert other.shape == convert.shape
        convert.give_back(other)
        assert spare == []


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_dynamic_shape_argument_copies_are_reused_for_the_same_shape(vmfb, package, device):
    """A dynamic-shape argument's copy comes back for the next call of the same shape
    (refilled, the same buffer), a new shape gets a new copy, arrays off the fast path
    are never given back, and every result, all held, equals iree.runtime's."""
    theirs = iree_module(vmfb)
    ctx = package.load(device=device)
    assert package._EXPORTS["dyn_add"].unkept_arguments == (0, 1)
    spare = _spare(ctx, "dyn_add", 0)
    ours, expected, ids = [], [], []
    for rows, base in ((3, 0), (3, 10), (3, 20), (1, 5), (1, 6), (0, 0), (4, 1), (4, 2)):
        a = np.arange(rows * 2, dtype=np.int32).reshape(rows, 2) + base
        b = np.full((rows, 2), base, np.int32)
        ours.append(ctx.dyn_add(a, b))
        expected.append(np.asarray(theirs.dyn_add(a, b).to_host()).copy())
        a[:] = -9  # the caller's array is never the buffer
        ids.append([id(v) for v in _views(spare)])
    for got, want in zip(ours, expected):  # (later refills changed no earlier result)
        assert got.shape == want.shape and got.tobytes() == want.tobytes()
    # Rows 3, 3, 3 refill one copy; a new shape replaces it (rows 0: no copy to keep).
    assert ids[0] == ids[1] == ids[2] and len(ids[0]) == 1
    assert ids[3] == ids[4] and ids[3] != ids[2]
    assert ids[5] == [] and ids[6] == ids[7] and len(ids[6]) == 1
    # A non-contiguous array takes the general path: its view is never given back.
    convert = ctx.dyn_add.plan.converters[0]
    spare.clear()
    other = convert(np.arange(8, dtype=np.int32).reshape(4, 2)[::2])
    convert.give_back(other)
    assert spare == []
    view = convert(np.arange(4, dtype=np.int32).reshape(2, 2))
    convert.give_back(view)
    assert _views(spare) == [view]
    with pytest.raises(ValueError, match="argument 'input0'"):
        ctx.dyn_add(np.zeros((2, 3), np.int32), np.zeros((2, 3), np.int32))
    assert _views(spare) == [view]  # (still there for the next good call)
    assert ctx.dyn_add(np.ones((2, 2), np.int32), np.ones((2, 2), np.int32)).tolist() == [[2, 2], [2, 2]]


def test_what_the_translator_proved_per_export(package):
    """The package's translate-time facts (translator/analyses/ownership.py): `set`
    stores its argument, `id` returns it, matmul_acc's %acc is tied to a result (its
    buffer comes back): none of those is reused or zero-copy. `mul`'s result is a
    fresh alloca and its arguments are only read; `get` returns a fresh copy of its
    global (a queue copy into an alloca), so that comes back zero-copy too (and
    test_module_state_never_aliases_caller_arrays writes into it)."""
    rows = package._EXPORTS
    assert rows["mul"].fresh_results == (0,) and rows["mul"].unkept_arguments == (0, 1)
    assert rows["set"].unkept_arguments == ()
    assert rows["id"].fresh_results == () and rows["id"].unkept_arguments == ()
    assert rows["get"].fresh_results == (0,)
    assert 2 not in rows["matmul_acc"].unkept_arguments
    assert 1 not in rows["matmul_acc"].fresh_results


def test_views_the_caller_passes_never_become_spares(package):
    """A buffer view passed as an argument goes in as is, and never comes back as a later
    call's copy of a numpy array (its buffer need not be what a fresh copy is), even when
    nothing else holds it after the call."""
    from runtime_support.hal.buffer_view import HalBufferView

    ctx = package.load(device="local-sync")
    spare = _spare(ctx, "mul", 0)
    spare.clear()
    out = ctx.mul(HalBufferView.from_numpy(np.arange(4, dtype=np.int32)), np.full(4, 2, np.int32))
    assert out.tolist() == [0, 2, 4, 6] and spare == []
    out = ctx.mul(np.arange(8, dtype=np.int32)[::2], np.full(4, 2, np.int32))  # general path
    assert out.tolist() == [0, 4, 8, 12] and spare == []
    assert ctx.mul(np.full(4, 3, np.int32), np.full(4, 2, np.int32)).tolist() == [6] * 4
    assert len(spare) == 1


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_spare_copies_under_threads(package, device):
    """Calls from several threads never share a copy: each gets its own values back."""
    import threading

    ctx = package.load(device=device)
    failures = []

    def work(k):
        for i in range(300):
            a = np.full(4, k * 1000 + i, np.int32)
            if ctx.mul(a, np.full(4, 2, np.int32)).tolist() != (a * 2).tolist():
                failures.append((k, i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_declared_result_converter_matches_view_to_numpy():
    """abi.tensor_result (the per-export converter of a declared static tensor result)
    makes what view_to_numpy makes: zero-copy only for a result proved fresh, else a
    copy, and views other than the declared one go the general way."""
    from runtime_support.api import abi
    from runtime_support.hal.buffer import Allocation, HalBuffer
    from runtime_support.hal.buffer_view import HalBufferView

    ty = abi.parse_type("tensor<2x2xf32>")
    convert = abi.tensor_result(ty, True)
    copying = abi.tensor_result(ty)
    assert convert is not abi.view_to_numpy
    assert abi.tensor_result(abi.parse_type("tensor<*xf32>")) is abi.view_to_numpy

    def fresh(values=(1, 2, 3, 4), shape=(2, 2), element_type=0x21000020, offset=0):
        data = np.zeros(offset // 4 + 4, np.float32)
        data[offset // 4 :] = values
        buffer = HalBuffer(Allocation.copy_of(data), offset, 16)
        return HalBufferView(buffer, shape, element_type)

    view = fresh()
    mem = view.buffer.allocation.array
    out = convert(view)
    assert np.shares_memory(out, mem) and out.shape == (2, 2) and out.dtype == np.float32
    assert out.tolist() == [[1, 2], [3, 4]]
    out = copying(view)
    assert not np.shares_memory(out, mem) and out.tolist() == [[1, 2], [3, 4]]
    view = fresh(offset=8)  # a range of its allocation: the same bytes
    assert convert(view).tolist() == [[1, 2], [3, 4]]
    # Not the declared view: what view_to_numpy gives.
    for other in (fresh(shape=(4,)), fresh(element_type=0x10000020)):
        expected = abi.view_to_numpy(fresh(shape=other.shape, element_type=other.element_type))
        got = copying(other)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes()
        assert not np.shares_memory(got, other.buffer.allocation.array)
    host = bytearray(np.arange(4, dtype=np.float32).tobytes())  # borrowed: never handed out
    view = HalBufferView(HalBuffer.wrap_host(host, readonly=False), (2, 2), 0x21000020)
    out = convert(view)
    out[:] = 0
    assert bytes(host) == np.arange(4, dtype=np.float32).tobytes()


def test_dynamic_result_converter_matches_view_to_numpy():
    """abi.tensor_result of a declared tensor with dynamic dims makes what view_to_numpy
    makes: the view's own shape, zero-copy only for a result proved fresh and not a small
    piece of a larger allocation, and other ranks and element types the general way."""
    from runtime_support.api import abi
    from runtime_support.hal.buffer import Allocation, HalBuffer
    from runtime_support.hal.buffer_view import HalBufferView

    ty = abi.parse_type("tensor<?x2xf32>")
    convert, copying = abi.tensor_result(ty, True), abi.tensor_result(ty)
    assert convert is not abi.view_to_numpy and copying is not abi.view_to_numpy

    def view_of(rows, total=None, offset=0, shape=None, element_type=0x21000020):
        n = rows * 2
        data = np.zeros(total if total is not None else n, np.float32)
        data[offset // 4 : offset // 4 + n] = np.arange(n) + 1
        buffer = HalBuffer(Allocation.copy_of(data), offset, n * 4)
        return HalBufferView(buffer, shape if shape is not None else (rows, 2), element_type)

    cases = [view_of(3), view_of(0), view_of(1, total=4, offset=8), view_of(2, total=5000),
             view_of(2, shape=(4,)), view_of(2, element_type=0x10000020), view_of(2, shape=(2, 1))]
    for view in cases:
        for exclusive, conv in ((True, convert), (False, copying)):
            got, want = conv(view), abi.view_to_numpy(view, exclusive)
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.tobytes() == want.tobytes()
            mem = view.buffer.allocation.array
            assert np.shares_memory(got, mem) == np.shares_memory(want, mem)
    # (zero-copy where the result is the whole allocation and proved fresh; a small
    # piece of a big one is copied)
    assert np.shares_memory(convert(cases[0]), cases[0].buffer.allocation.array)
    assert not np.shares_memory(copying(cases[0]), cases[0].buffer.allocation.array)
    assert not np.shares_memory(convert(cases[3]), cases[3].buffer.allocation.array)


def test_undeclared_argument_converter():
    """A ref argument with no declared type (iree-turbine exports) converts by its own
    shape and dtype, and offers no spare (shapes vary from call to call)."""
    from runtime_support.api import abi
    from runtime_support.hal.device import LocalDevice

    convert = abi.tensor_argument("x", None, LocalDevice("local-sync"))
    array = np.arange(6, dtype=np.int16).reshape(2, 3)
    view = convert(array)
    assert view.shape == (2, 3) and view.element_type == 0x10000010
    assert view.buffer.allocation.array.tobytes() == array.tobytes()
    assert not np.shares_memory(view.buffer.allocation.array, array)
    assert not hasattr(convert, "spare")


@pytest.mark.parametrize("device", ["local-sync", "local"])
def test_dynamic_dims_arguments_match_iree(vmfb, package, device):
    """Declared tensors with dynamic dims take their own fast path (abi._dynamic_argument):
    the same bits as iree.runtime for several shapes, general-path inputs included."""
    theirs = iree_module(vmfb)
    ctx = package.load(device=device)
    for rows in (0, 1, 3, 7):
        a = np.arange(rows * 2, dtype=np.int32).reshape(rows, 2)
        b = np.full((rows, 2), 5, np.int32)
        expected = np.asarray(theirs.dyn_add(a, b).to_host())
        for x in (a, a.astype(np.uint32), np.asfortranarray(a), a.astype(">i4")):
            got = ctx.dyn_add(x, b)
            assert got.shape == expected.shape and got.tobytes() == expected.tobytes()


def test_dynamic_dims_fast_path_is_the_general_path():
    """Whatever abi._dynamic_argument accepts, it makes what to_buffer_view makes;
    everything else (and every error) is the general path's own."""
    from runtime_support.api import abi
    from runtime_support.hal.device import LocalDevice

    device = LocalDevice("local-sync")
    ty = abi.parse_type("tensor<?x2x?xf32>")
    convert = abi.tensor_argument("x", ty, device)
    assert convert.__qualname__.startswith("_dynamic_argument")
    values = [
        np.arange(12, dtype=np.float32).reshape(3, 2, 2),
        np.zeros((0, 2, 5), np.float32),
        np.arange(12, dtype=np.float32).reshape(3, 2, 2)[:, :, ::-1],  # not C order
        np.arange(12, dtype=np.float64).reshape(3, 2, 2),  # dtype
        np.zeros((3, 3, 2), np.float32),  # static dim
        np.zeros((3, 2), np.float32),  # rank
        np.zeros((3, 2, 2), ">f4"),  # byte order
        [[[1.0, 2.0], [3.0, 4.0]]],  # not an array
    ]
    for value in values:
        try:
            expected = abi.to_buffer_view(value, "x", ty, device)
        except (TypeError, ValueError) as e:
            with pytest.raises(type(e)) as got:
                convert(value)
            assert str(got.value) == str(e)
            continue
        got = convert(value)
        assert got.shape == expected.shape and type(got.shape[0]) is int
        assert (got.element_type, got.encoding_type) == (expected.element_type, expected.encoding_type)
        assert got.buffer.allocation.array.tobytes() == expected.buffer.allocation.array.tobytes()
        b, e = got.buffer, expected.buffer
        assert (b.length, b.memory_types, b.allowed_usage, b.allocator) == (
            e.length, e.memory_types, e.allowed_usage, e.allocator
        )
        assert not np.shares_memory(got.buffer.allocation.array, np.asarray(value))


def test_larger_argument_copies_are_refilled_whole(vmfb, package):
    """A 16 KiB argument (refilled without going through bytes) gives iree.runtime's bits
    call after call; beyond the spare limit nothing is held between calls."""
    from runtime_support.api import abi

    theirs = iree_module(vmfb)
    ctx = package.load(device="local-sync")
    spare = _spare(ctx, "big_add", 0)
    rng = np.random.default_rng(3)
    for _ in range(4):
        a, b = rng.standard_normal((2, 64, 64), dtype=np.float32)
        got = ctx.big_add(a, b)
        assert got.tobytes() == np.asarray(theirs.big_add(a, b).to_host()).tobytes()
        assert len(spare) == 1
    values = [np.arange(6, dtype=np.float32), np.arange(3, dtype=np.complex64)]
    values.append(np.array([1, 2, 3], "datetime64[s]"))  # (no buffer format, as bf16)
    for value in values:
        storage = np.zeros(value.nbytes, np.uint8)
        abi._refill(memoryview(storage), value)
        assert storage.tobytes() == value.tobytes()
    big = abi.tensor_argument("x", abi.parse_type("tensor<128x129xf32>"), ctx.device)
    assert not hasattr(big, "spare")
