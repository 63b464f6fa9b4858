"""The files of the repository's `templates/` folder, wherever pyree runs from.

An installed pyree ships them as package data of the translator (`translator/templates/`,
pyproject.toml's package-dir), so no top-level package named `templates` is installed; a
checkout (or an editable install) reads the repository's `templates/` beside `translator/`.
"""

from __future__ import annotations

import importlib.resources
import tomllib
from pathlib import Path


def template_dir():
    """The folder holding module.py.j2, vmvx_kernel.py.j2 and statements.toml."""
    installed = importlib.resources.files("translator").joinpath("templates")
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parent.parent / "templates"


def read_template(name: str) -> str:
    return template_dir().joinpath(name).read_text(encoding="utf-8")


def statement_forms() -> dict:
    """templates/statements.toml: the Python syntax of each statement-tree node."""
    return tomllib.loads(read_template("statements.toml"))
