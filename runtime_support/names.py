"""The one rule that turns a name into a Python identifier.

Names come from a vmfb (exports, imports, functions, rodata) or from a file name (the
package), so any text arrives here. The translator names generated functions, imports,
rodata locals and packages with it (translator/codegen/names.py adds uniqueness and the
generated module's reserved names; translator/cli.py the package name), and a context
names its export attributes with it (`main$async` -> `ctx.main_async`), so code that looks
an export up by attribute (pyree-run, the benchmark CLI) finds what the package defines.
"""

from __future__ import annotations

import keyword
import re
from typing import Container

_NON_WORD = re.compile(r"\W+", re.ASCII)
_TRAILING = re.compile(r"\W+\Z", re.ASCII)
# Characters generated code keeps of a name, so a hostile 64 KB name stays readable (the
# translator makes truncated names unique); a context's attributes keep whole names.
LIMIT = 60


def identifier(text: str, *, prefix: str = "_", reserved: Container[str] = (), limit: int | None = None) -> str:
    """`text` as a Python identifier.

    Each run of characters outside ASCII [A-Za-z0-9_] becomes one `_` (none at the end:
    `main$` and a NUL-terminated `local\0` lose theirs), and at most `limit` characters
    are kept (all without a limit). A keyword gets a trailing `_` (PEP 8: `class_`); a
    result that is empty, starts with a digit or is `reserved` gets `prefix` in front. A
    valid identifier names itself (unless reserved or cut). Deterministic; callers that
    need distinct names make them unique themselves.
    """
    ident = _NON_WORD.sub("_", _TRAILING.sub("", text))[:limit]
    if keyword.iskeyword(ident):
        ident += "_"
    if not ident or ident[0].isdigit() or ident in reserved:
        ident = prefix + ident
    return ident
