"""The translator's front end as one object: bytes -> Module -> verified functions.

    p = Pipeline.from_file("model.vmfb")     # or Pipeline.from_bytes(data), Pipeline(module)
    p.module                                 # translator.module.Module (tables)
    p.functions                              # decoded (decoder.py) and verified (verifier.py)
    p.cconvs                                 # each function's parsed calling convention
    p.cfg(k)                                 # control-flow facts of function k (cached)

Stages, each in its own file: container.py + flatbuf.py + reader.py (bytes -> Module),
decoder.py (bytecode -> blocks of ops, by the isa.py table), verifier.py (ordinals,
registers, targets, cconvs). The CLI's `--dump`, the disassembler and the code generator
all start from a Pipeline; a translate-time check of the module's imports belongs in
`check_imports` (run before any code is generated).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from translator.cconv import CConv, parse_cconv
from translator.decoder import decode_function
from translator.ir import Function
from translator.module import Module
from translator.verifier import function_cconvs, verify_exports, verify_function


class Pipeline:
    def __init__(self, module: Module) -> None:
        self.module = module
        self._cfg: dict[int, object] = {}

    @classmethod
    def from_bytes(cls, data: bytes) -> "Pipeline":
        from translator.reader import read_module

        return cls(read_module(data))

    @classmethod
    def from_file(cls, path: str | Path) -> "Pipeline":
        from translator.reader import read_module_file

        return cls(read_module_file(path))

    @cached_property
    def cconvs(self) -> list[CConv]:
        return function_cconvs(self.module)

    @cached_property
    def import_cconvs(self) -> list[CConv]:
        return [parse_cconv(i.signature.calling_convention, i.full_name) for i in self.module.imports]

    @cached_property
    def functions(self) -> list[Function]:
        """Every function, decoded and verified (InvalidModuleError names the first fault)."""
        out = []
        for k in range(self.module.function_count):
            fn = decode_function(self.module, k)
            verify_function(self.module, fn, self.cconvs, self.import_cconvs)
            out.append(fn)
        return out

    def check_imports(self) -> None:
        """Translate-time checks of the module's `vm.import`s: cconv syntax, and every
        required import of a module pyree provides against that module's table
        (translator/imports.py)."""
        from translator.imports import check_imports

        self.import_cconvs  # noqa: B018  (parsing raises InvalidModuleError)
        check_imports(self.module)

    def check_exports(self) -> None:
        """Translate-time checks of the export table (verifier.verify_exports)."""
        verify_exports(self.module, self.cconvs)

    def cfg(self, k: int):
        from translator.analyses import cfg

        info = self._cfg.get(k)
        if info is None:
            info = self._cfg[k] = cfg.analyze(self.functions[k])
        return info
