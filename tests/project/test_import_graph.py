"""The import graph of translator/ and runtime_support/ has no cycles, and no
module imports another module's private name (issue #28).

The graph is read from the source with ``ast``, nothing is imported: every
import statement counts, those inside functions too (a lazy import is still a
dependency, it only hides the cycle until the first call), and ``from a.b
import c`` depends on ``a.b`` and, when ``c`` is a submodule, on ``a.b.c``.
"""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("translator", "runtime_support")

def modules():
    """Module name -> source path, for every module of PACKAGES."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _base(name, path, node):
    """The module an ImportFrom names, relative imports resolved."""
    if not node.level:
        return node.module
    package = name.split(".")
    if path.name != "__init__.py":
        package.pop()
    package = package[:len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def imports(name, path):
    """(module imported, names taken from it) for each import in `path`;
    names is empty for a plain ``import``."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            yield _base(name, path, node), [a.name for a in node.names]


def graph():
    """Module -> the modules of PACKAGES it imports."""
    known = modules()
    edges = {}
    for name, path in known.items():
        out = set()
        for base, names in imports(name, path):
            out.add(base)
            out.update(f"{base}.{n}" for n in names)
        out.discard(name)
        edges[name] = sorted(m for m in out if m in known)
    return edges


def cycles(edges):
    """Strongly connected components of more than one module (Tarjan,
    iterative: the graph is deep enough to matter for recursion)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def private_imports():
    """'module: from x import _y' for each private name taken from another
    module (dunders such as __version__ are public)."""
    known = modules()
    found = []
    for name, path in known.items():
        for base, names in imports(name, path):
            if base == name:
                continue
            for n in names:
                if (n.startswith("_") and not n.startswith("__")
                        and f"{base}.{n}" not in known):
                    found.append(f"{name}: from {base} import {n}")
    return sorted(set(found))


def test_no_import_cycles():
    assert cycles(graph()) == [], "import cycles (each a strongly connected component)"


def test_no_private_name_imports():
    assert private_imports() == [], "private names imported from another module"


def test_finder_sees_lazy_and_submodule_imports(tmp_path, monkeypatch):
    """The finder counts an import inside a function and a submodule named
    in ``from pkg import mod``, relative or not; a cycle through them is found."""
    pkg = tmp_path / "translator"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from translator import b\n")
    (pkg / "b.py").write_text("from . import a\n")
    (tmp_path / "runtime_support").mkdir()
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert cycles(graph()) == [["translator.a", "translator.b"]]
