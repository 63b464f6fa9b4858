"""Import modules other than `hal` that compiled programs may call.

check.py          CheckModule: the test-only `check` module
io_parameters.py  IoParametersModule: parameter loads, gathers and scatters
hal_inline.py     HalInlineModule: host buffers and views of the inline execution model
hal_loader.py     HalLoaderModule: executable loading and dispatch of the inline model

Every module declares its imports with `runtime_support.vm.args.vm_import`; `import_tables()`
gathers the tables of all the modules pyree provides (what the translator checks a vmfb's
imports against).
"""

from .check import CheckModule

__all__ = ["CheckModule", "import_tables"]


def import_tables() -> dict[str, dict[str, str]]:
    """Module name -> {full import name -> cconv} for every module pyree provides."""
    from ..hal.module import HalModule
    from .hal_inline import HalInlineModule
    from .hal_loader import HalLoaderModule
    from .io_parameters import IoParametersModule

    classes = (HalModule, HalInlineModule, HalLoaderModule, IoParametersModule, CheckModule)
    return {cls.MODULE_NAME: dict(cls.IMPORTS) for cls in classes}
