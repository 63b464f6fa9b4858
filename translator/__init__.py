"""pyree translator: IREE .vmfb bytecode modules -> Python packages.

Data flow: bytes -> `container` -> `module` (tables) -> `decoder` (op IR) ->
`verifier` -> `disasm` (text) or `codegen` (Python source).
"""

__version__ = "0.1.0"  # as pyproject.toml; printed in generated packages' headers
