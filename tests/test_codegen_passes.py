"""The statement-tree passes and tables of translator/codegen, on small hand-made trees."""

from __future__ import annotations

from translator.codegen import hal_enums
from translator.codegen.passes import MessageTable, tidy_ifs, tidy_releases, trim_ref_init
from translator.codegen.printer import Printer
from translator.codegen.stmt import Assign, Call, Continue, If, Raise, Release, Return, While


def _print(body):
    return Printer().function_body(body)


def test_hal_enum_names_equal_the_runtime_constants():
    assert hal_enums.NAMES == hal_enums.runtime_names()
    assert hal_enums.describe("element_type", 553648160) == "FLOAT_32"
    assert hal_enums.describe("buffer_usage", 3075) == "TRANSFER | DISPATCH_STORAGE"
    assert hal_enums.describe("memory_type", 48) == "DEVICE_LOCAL"
    assert hal_enums.describe("element_type", 0x7F000001) is None


def test_ref_init_keeps_only_refs_read_before_written():
    body = [
        Release(None, ["r1", "r2", "r3"]),
        Assign(None, ("r1",), "f()"),
        Call(None, "g(r2)", frozenset({"r2"})),
        If(None, "x", [Assign(None, ("r3",), "h()")]),
        Return(None, ("r3",)),
    ]
    assert _print(trim_ref_init(body))[0] == "r2 = r3 = None"


def test_releases_of_known_null_refs_are_dropped_and_chains_merged():
    body = [
        Release(None, ["r0", "r1"]),
        Release(None, ["r0"]),  # already None
        Assign(None, ("r2",), "f()"),
        Release(None, ["r2"]),
        Release(None, ["r3"]),  # merged into the line above
        Release(None, ["r4"]),
        Assign(None, ("r4",), "r5", frozenset({"r5"})),  # overwrites r4 at once
        While(None, [Release(None, ["r1"]), Assign(None, ("r1",), "g()"), Continue(None)]),
        Return(None, ()),
    ]
    assert _print(tidy_releases(body)) == [
        "r0 = r1 = None",
        "r2 = f()",
        "r2 = r3 = None",
        "r4 = r5",
        "while True:",
        "    r1 = g()",  # its release is dropped: overwritten by the very next statement
        "    continue",
        "return",
    ]


def test_empty_if_arm_is_inverted_and_long_messages_hoisted():
    raise_ = Raise(None, "i0", "x" * 100, "f", None)
    body = [If(None, "i1", [], [raise_]), If(None, "i2", [Raise(None, "i0", "x" * 100, "g", None)])]
    tidy_ifs(body)
    table = MessageTable()
    table.hoist(body)
    assert table.constants() == [("MESSAGE_0", "x" * 100)]
    assert _print(body) == [
        "if not i1:",
        "    raise vm_fail(i0, MESSAGE_0, 'f', None)",
        "if i2:",
        "    raise vm_fail(i0, MESSAGE_0, 'g', None)",
    ]


def test_long_release_chains_are_split_so_black_never_wraps_them():
    lines = _print([Release(None, [f"r{k}" for k in range(20)])])
    assert len(lines) == 3 and all(line.endswith(" = None") and len(line) < 100 for line in lines)


def test_location_trees_are_formatted_within_a_budget():
    """A hostile vmfb can make a fused location exponentially wide (each of 10 levels fuses
    the next level 50 times: 50^9 paths); formatting visits a bounded number of nodes."""
    import time
    import types

    from translator.codegen import _format_location
    from translator.module import FileLineColLoc, FusedLoc

    locations = [FusedLoc(None, (k + 1,) * 50) for k in range(10)] + [FileLineColLoc("a.mlir", 3, 4)]
    module = types.SimpleNamespace(locations=locations)
    started = time.monotonic()
    _format_location(module, 0)
    assert time.monotonic() - started < 1.0
    assert _format_location(module, 10) == "a.mlir:3:4"
    assert _format_location(module, 9) == "a.mlir:3:4"  # a real fused location still formats
