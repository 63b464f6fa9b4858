"""One identifier rule (runtime_support/names.py) for every name pyree turns into Python:
generated functions, imports and rodata locals (translator/codegen/names.py), package
names (translator/cli.py) and a context's export attributes (runtime_support/api/context.py),
run over the hostile-string corpus of tests/hostile/test_hostile_strings.py and a few edge names."""

from __future__ import annotations

import builtins
import keyword

import pytest

from runtime_support.api.context import python_name
from runtime_support.names import LIMIT, identifier
from hostile_util import HOSTILE
from translator.cli import package_name_for
from translator.codegen import names

EDGE = ["", "0", "9lives", "class", "None", "print", "i4", "r12", "MESSAGE_3", "load", "_bind",
        "add_i32", "main$async", "__init", "x" * 500, "é", "$", "a..b", "local\x00", "\u202e"]  # fmt: skip
CORPUS = [t.decode("utf-8", errors="replace") for t in HOSTILE] + EDGE


def _valid(ident: str) -> bool:
    return ident.isascii() and ident.isidentifier() and not keyword.iskeyword(ident)


@pytest.mark.parametrize("text", CORPUS, ids=range(len(CORPUS)))
def test_every_name_goes_through_the_one_rule(text):
    ident = identifier(text)
    assert _valid(ident), ident
    assert len(names.identifier(text)) <= LIMIT + len("f_")
    assert identifier(ident) == ident  # idempotent: an identifier names itself
    # The three callers apply the same rule; they differ only in prefix and reserved names.
    assert python_name(text) == ident
    assert package_name_for(text + ".vmfb") == (identifier(text, prefix="m_") if text else "module")
    generated = names.identifier(text)
    assert _valid(generated) and generated not in names.RESERVED
    assert generated == identifier(text, prefix="f_", reserved=names.RESERVED, limit=LIMIT)
    compile(f"def {generated}():\n    pass\n", "<name>", "exec")


def test_generated_names_avoid_what_the_module_defines():
    for taken in ("print", "i4", "r12", "MESSAGE_3", "load", "_bind", "add_i32", "global_load_ref"):
        assert taken in names.RESERVED
        assert names.identifier(taken) == "f_" + taken
    assert "main" not in names.RESERVED and names.identifier("main") == "main"
    assert all(b in names.RESERVED for b in dir(builtins))


def test_the_rule_keeps_names_readable():
    assert identifier("main$async") == "main_async"  # ctx.main_async, as before
    assert identifier("local\x00") == "local"  # nothing trails a name
    assert identifier("__init") == "__init"  # the VM's own name
    assert identifier("a..b") == "a_b" and identifier("9lives") == "_9lives"
    assert identifier("class") == "class_" and package_name_for("class.vmfb") == "class_"
    long = "static_unpack_extract_slice_transpose_inner_and_outer_dims_large"
    assert identifier(long) == long  # ctx.<export> keeps a long valid name whole
