"""The analysis package keeps the shape its docs promise: no module over MAX_MODULE_LINES
lines and no function over MAX_FUNCTION_LINES (a function from its def line to its last
line, docstring included). Reads the source with ast only: no import, well under a second."""

from __future__ import annotations

import ast
import os

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "fabscope_analysis")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


def _modules():
    for folder, _, names in os.walk(PACKAGE):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    yield os.path.relpath(path, PACKAGE), f.read()


def shape_violations(max_module: int = MAX_MODULE_LINES, max_function: int = MAX_FUNCTION_LINES):
    """['module.py: N lines', 'module.py:LINE name(): N lines', ...] over the package."""
    out = []
    for rel, text in _modules():
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if lines > max_module:
            out.append(f"{rel}: {lines} lines (at most {max_module})")
        for node in ast.walk(ast.parse(text, filename=rel)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > max_function:
                    out.append(f"{rel}:{node.lineno} {node.name}(): {length} lines "
                               f"(at most {max_function})")
    return out


def test_no_module_over_500_lines_and_no_function_over_60():
    violations = shape_violations()
    assert not violations, "split these:\n" + "\n".join(violations)


def test_the_shape_check_sees_the_largest_module_and_function():
    """The check reads the real package: tighter limits than the largest module and
    function there must each report them (a walk that found no file would pass anything)."""
    sizes = [(text.count("\n"), rel) for rel, text in _modules()]
    assert len(sizes) > 20, sizes
    biggest_lines, biggest = max(sizes)
    found = shape_violations(max_module=biggest_lines - 1, max_function=10_000)
    assert any(v.startswith(f"{biggest}:") for v in found), found
    assert shape_violations(max_module=10_000, max_function=5), "no function over 5 lines?"
