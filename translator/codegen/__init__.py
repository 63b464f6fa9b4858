"""Op IR -> a Python package: `__init__.py` (rendered by codegen/render.py from
templates/), `rodata.bin` and a module per VMVX executable (translator/vmvx.py).

    write_package(module, out_dir, name) -> Path of the package directory

Output is deterministic: the same module gives byte-identical files.
"""

from __future__ import annotations

from pathlib import Path

from translator.codegen import package_folder
from translator.codegen.render import GeneratedPackage, render_module
from translator.module import Module
from translator.pipeline import Pipeline
from translator.vmvx import translate_kernels


def generate(
    module: Module,
    name: str,
    source_name: str = "",
    *,
    provenance: bool = False,
    pipeline: Pipeline | None = None,
    queue_programs: bool = True,
) -> GeneratedPackage:
    """The host module's package source, with its VMVX executables' kernel modules.
    `pipeline`: the module's front end (decoded, verified functions and their analyses);
    made here when not given. `provenance`, `queue_programs`: as render_module's."""
    if pipeline is None:
        pipeline = Pipeline(module)
    # Translate-time checks of the module's imports and exports run before any code is generated.
    pipeline.check_imports()
    pipeline.check_exports()
    kernels = translate_kernels(module)
    pkg = render_module(
        module, name, source_name, pipeline=pipeline, provenance=provenance,
        queue_programs=queue_programs,
        view_fields={"vmvx_kernels": tuple((k.sha256, k.file_name) for k in kernels)},
    )
    pkg.kernels = kernels
    return pkg


def format_source(source: str) -> str:
    import black

    return black.format_str(source, mode=black.Mode(line_length=100))


def write_package(
    module: Module,
    out_dir: Path,
    name: str,
    *,
    format_code: bool = True,
    source_name: str = "",
    provenance: bool = False,
    pipeline: Pipeline | None = None,
    queue_programs: bool = True,
    force: bool = False,
    private: bool = False,
) -> Path:
    """Writes OUT_DIR/NAME/{__init__.py, rodata.bin, .pyree-package}; returns the package
    directory. An existing OUT_DIR/NAME is replaced only where pyree wrote it (else
    OutputFolderError), or with `force`; the swap is atomic (codegen/package_folder.py).
    With `private` the package is this user's alone whatever the umask (0700, 0600).
    `queue_programs`: as generate's (False: --no-fuse, one import call per op).
    """
    pkg = generate(
        module, name, source_name, provenance=provenance, pipeline=pipeline,
        queue_programs=queue_programs,
    )
    source = format_source(pkg.source) if format_code else pkg.source
    files = {"__init__.py": source.encode("utf-8"), "rodata.bin": pkg.rodata}
    for k in pkg.kernels:  # (VMVX executables: translator/vmvx.py)
        files[k.file_name] = (format_source(k.source) if format_code else k.source).encode("utf-8")
        if k.rodata_name:
            files[k.rodata_name] = k.rodata
    return package_folder.write_files(Path(out_dir), name, files, force=force, private=private)
