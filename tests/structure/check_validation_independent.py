#!/usr/bin/python3
"""The validation world shares no code with the model it judges.

validation/ (the SimGrid world that scores diagnose) must not import the analysis'
diagnosis, its synthetic generator or anything built on them: a world that reuses the
fitted model's code measures the model against itself. It may import the file-format
contract (fabscope_analysis.reader, .errors). Every import of a fabscope_analysis module
other than those, in any form (import x, from x import y, from . of the package, or
importlib with a literal name), prints as
    FILE:LINE: imports MODULE: the validation world reads only the file format (reader, errors)

usage: check_validation_independent.py [ROOT]
Exit 0 when validation/ imports only the file format of fabscope_analysis, 1 otherwise.
"""
import ast
import os
import sys
from pathlib import Path

ALLOWED = {"fabscope_analysis", "fabscope_analysis.reader", "fabscope_analysis.errors"}


def imported_modules(tree):
    """(line, module) of every absolute import, from-import and importlib literal."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
            if node.module == "fabscope_analysis":
                for alias in node.names:
                    yield node.lineno, f"fabscope_analysis.{alias.name}"
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__"):
                yield node.lineno, node.args[0].value


def violations(root: Path):
    found = []
    for path in sorted((root / "validation").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, module in imported_modules(tree):
            if (module == "fabscope_analysis" or module.startswith("fabscope_analysis.")) \
                    and module not in ALLOWED:
                found.append(f"{path.relative_to(root)}:{line}: imports {module}: the validation "
                             "world reads only the file format (reader, errors)")
    return found


def main(argv):
    root = Path(argv[1]) if len(argv) > 1 else \
        Path(os.environ.get("FABSCOPE_SOURCE_DIR") or Path(__file__).resolve().parents[2])
    if not (root / "validation").is_dir():
        print(f"{root}/validation: no such folder (expected the validation world there)")
        return 1
    found = violations(root)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
