"""The Python syntax of generated statements, one form per statement-tree node.

`translator/codegen/printer.py` fills these with names, expressions and checked literals;
it adds indentation and nothing else. Keys are the node class names of
`translator/codegen/stmt.py` (plus the clause words of compound statements).
"""

STATEMENTS = {
    "Assign": "{targets} = {value}",
    "One": "({target},)",  # the one target of a tuple unpacked (Assign.unpack)
    "Call": "{value}",
    "Release": "{names} = None",
    "Raise": "raise vm_fail({status}, {message}, {function}, {location})",
    "Return": "return {values}",
    "ReturnNothing": "return",
    "If": "if {test}:",
    "Elif": "elif {test}:",
    "Else": "else:",
    "While": "while True:",
    "Break": "break",
    "Continue": "continue",
    "Pass": "pass",
    "Comment": "# {text}",
    "Line": "line {position}",
    "Note": "{statement}  # {text}",
    "Not": "not {test}",
    "Provenance": "# pc {pcs} {what}",
}

# Comma-joined lists: assignment targets, returned values.
SEPARATOR = ", "
# `a = b = c = None`: names per line, so that black never wraps a release chain.
RELEASE_JOIN = " = "
RELEASES_PER_LINE = 8
