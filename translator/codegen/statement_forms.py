"""The statement forms of templates/statements.toml, read once: the Python syntax of each
statement-tree node (STATEMENTS, by node class name) and how lists are joined."""

from __future__ import annotations

from translator.template_files import statement_forms

_FORMS = statement_forms()

STATEMENTS: dict[str, str] = _FORMS["statements"]
# Comma-joined lists: assignment targets, returned values.
SEPARATOR: str = _FORMS["separator"]
# `a = b = c = None`: names per line, so that black never wraps a release chain.
RELEASE_JOIN: str = _FORMS["release_join"]
RELEASES_PER_LINE: int = _FORMS["releases_per_line"]
