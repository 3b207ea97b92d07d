"""Every module of the analysis package imports its siblings at the top of the module,
names no other module's private name (a leading underscore), and no chain of imports
comes back to where it started (a circle makes the order of imports matter, and an import
inside a function hides one). Imports of other libraries inside a function stay allowed
(matplotlib is loaded only by what plots). Reads the source with ast only: no import,
well under a second."""

from __future__ import annotations

import ast
import os
from typing import Dict, List, Set, Tuple

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "fabscope_analysis")


def _modules(package: str = PACKAGE) -> Dict[str, str]:
    """dotted module name -> path, for every module of the package."""
    out = {}
    base = os.path.dirname(package)
    for folder, _, names in os.walk(package):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, base)[:-3].replace(os.sep, ".")
                out[dotted[:-9] if dotted.endswith(".__init__") else dotted] = path
    return out


def _targets(node, module: str, is_package: bool, modules) -> List[str]:
    """The package modules an import statement loads (a submodule named by `from . import x`
    is that submodule, not the package it sits in)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    here = module if is_package else module.rsplit(".", 1)[0]
    if node.level:
        parts = here.split(".")
        parts = parts[:len(parts) - node.level + 1]
        target = ".".join(parts + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
    if len(subs) == len(node.names):
        return subs
    return ([target] if target in modules else []) + subs


def import_graph(package: str = PACKAGE) -> Tuple[Dict[str, Set[str]], List[str]]:
    """(module -> package modules it imports at its top level, ['module:LINE imports X
    inside a function', ...])."""
    modules = _modules(package)
    graph, inside = {}, []
    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        top = set()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets = [t for t in _targets(node, module, path.endswith("__init__.py"), modules)
                       if t != module]
            if node.col_offset == 0:
                top.update(targets)
            else:
                inside += [f"{module}:{node.lineno} imports {t} inside a function" for t in targets]
        graph[module] = top
    return graph, inside


def circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Each set of modules that import one another in a circle (strongly connected
    components of more than one module, Tarjan's algorithm)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    out: List[List[str]] = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def private_imports(package: str = PACKAGE) -> List[str]:
    """['module:LINE imports NAME from X', ...]: names with a leading underscore taken from
    another module of the package (`from . import __version__`, a dunder, is public)."""
    modules, out = _modules(package), []
    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if not (node.level or (node.module or "").startswith("fabscope_analysis")):
                continue
            out += [f"{module}:{node.lineno} imports {a.name} from {node.module or '.'}"
                    for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def test_every_module_imports_siblings_at_the_top_only():
    _, inside = import_graph()
    assert not inside, "move these imports to the top of the module:\n" + "\n".join(inside)


def test_no_import_circle():
    graph, _ = import_graph()
    found = circles(graph)
    assert not found, f"import circles: {found}"


def test_no_module_takes_another_ones_private_names():
    found = private_imports()
    assert not found, "make these public where they are defined:\n" + "\n".join(found)


def test_the_graph_sees_a_circle_an_import_inside_a_function_and_a_private_name(tmp_path):
    """The checks read what they claim: a package with a circle, an import inside a
    function and a private name taken must report all three (a walk that found no file
    would pass anything)."""
    pkg = tmp_path / "fabscope_analysis"
    (pkg / "synth").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "synth" / "__init__.py").write_text("from .a import f\n")
    (pkg / "synth" / "a.py").write_text("from . import b\n\ndef f():\n    from .c import g\n")
    (pkg / "synth" / "b.py").write_text("from .a import f\n")
    (pkg / "synth" / "c.py").write_text("def g():\n    pass\n\n\ndef _h():\n    pass\n")
    (pkg / "synth" / "d.py").write_text("from .c import _h\nfrom .. import __version__\n")
    assert private_imports(str(pkg)) == ["fabscope_analysis.synth.d:1 imports _h from c"]
    graph, inside = import_graph(str(pkg))
    assert circles(graph) == [["fabscope_analysis.synth.a", "fabscope_analysis.synth.b"]]
    assert inside == ["fabscope_analysis.synth.a:4 imports fabscope_analysis.synth.c inside a function"]
    real, _ = import_graph()
    assert len(real) > 20 and "fabscope_analysis.diagnosis.core" in real
