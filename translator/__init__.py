"""pyree translator: IREE .vmfb bytecode modules -> Python packages.

Data flow: bytes -> `container` -> `module` (tables) -> `decoder` (op IR) ->
`verifier` -> `disasm` (text) or `codegen` (Python source).
"""
