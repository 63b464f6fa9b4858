"""Translate-time check of a vmfb's `vm.import`s against the import modules pyree provides.

Each import module of runtime_support declares its imports (full name -> cconv) beside its
methods; `check_imports` holds every required import of a known module (`hal`, `hal_inline`,
`hal_loader`, `io_parameters`, `check`) to that table, so a mismatch is reported when the
file is translated rather than when the package is loaded. Imports of other modules are the
user's (`load(modules=...)`) and pass. An optional import a module lacks, or declares with
another cconv, is left unresolved at load time as IREE leaves it, so it passes too.
"""

from __future__ import annotations

from functools import lru_cache

from translator.errors import InvalidModuleError, quote_name
from translator.module import Module


@lru_cache(maxsize=1)
def _tables() -> dict[str, dict[str, str]]:
    from runtime_support.modules import import_tables

    return import_tables()


def check_imports(module: Module) -> None:
    """Raises InvalidModuleError (one line, naming the import) for the first required
    import of a known module that the module does not provide as declared."""
    tables = _tables()
    for imp in module.imports:
        module_name = imp.full_name.partition(".")[0]
        table = tables.get(module_name)
        if table is None or imp.optional:
            continue
        cconv = imp.signature.calling_convention
        declared = table.get(imp.full_name)
        if declared is None:
            raise InvalidModuleError(
                f"import {imp.ordinal} {quote_name(imp.full_name)} is not provided by the "
                f"{module_name} module"
            )
        if declared != cconv:
            raise InvalidModuleError(
                f"import {imp.ordinal} {quote_name(imp.full_name)} has calling convention "
                f"{quote_name(cconv)} but the {module_name} module provides {quote_name(declared)}"
            )
