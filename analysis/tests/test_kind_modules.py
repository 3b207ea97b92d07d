"""The analysis is a house for kinds: every kind the file format declares
(src/output/schema.yaml, `instance_attributes: kinds:`) has its analysis module
(fabscope_analysis/kinds/, registered by the `kind` attribute), and no module outside
kinds/ decides by testing a kind's name.

A kind-name test is code that compares the `kind` attribute with a kind's name to decide
what to do: a comparison (==, !=, in, not in) with one side the kind attribute
(`x.get("kind")`, `x["kind"]`, `x.kind`, a variable named `kind`, each also inside str())
and another side a declared kind's name (a string, a tuple/list/set of them, or a
module-level constant holding one); a loop `for kind in (<kind names>)`; and selecting
instances by a literal kind name (`instances_of(result, "allreduce")`). Writing a kind
is no test: plan.py writes scenario tests (`"kind": "latency"`), synth/ writes files of
the kinds it makes, and text may name a kind. synth/ (a test-data generator, not the
analysis) is left out. Reads the source with ast only: well under a second."""

from __future__ import annotations

import ast
import os
from typing import Dict, List, Set

import yaml

from fabscope_analysis.kinds import REGISTRY, kind_measuring
from fabscope_analysis.serving.measured import PREFILL_CLASSES
from fabscope_analysis.serving.placement import Placement
from fabscope_analysis import models

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "analysis", "fabscope_analysis")
SCHEMA = os.path.join(ROOT, "src", "output", "schema.yaml")
KIND_MODULES = os.path.join(PACKAGE, "kinds")
NOT_ANALYSIS = (os.path.join(PACKAGE, "synth"),)
SELECTORS = ("instances_of",)   # functions whose argument names the kind to select


def declared_kinds() -> List[str]:
    with open(SCHEMA, encoding="utf-8") as f:
        return sorted(yaml.safe_load(f)["instance_attributes"]["kinds"])


def _is_kind_attribute(node) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" \
            and len(node.args) == 1:
        return _is_kind_attribute(node.args[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "get" and node.args \
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == "kind":
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
            and node.slice.value == "kind":
        return True
    return (isinstance(node, ast.Attribute) and node.attr == "kind") or \
        (isinstance(node, ast.Name) and node.id == "kind")


def _names_kinds(node, kinds: Set[str], constants: Dict[str, object]) -> bool:
    """A kind's name: a string, a tuple/list/set of strings one of which is a kind's name,
    or a module-level constant holding either."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in kinds
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_kinds(e, kinds, constants) for e in node.elts)
    if isinstance(node, ast.Name) and node.id in constants:
        value = constants[node.id]
        values = value if isinstance(value, (tuple, list, set, frozenset)) else (value,)
        return any(isinstance(v, str) and v in kinds for v in values)
    return False


def _constants(trees) -> Dict[str, object]:
    """Module-level NAME = literal of every module (a name imported from another module
    keeps the value it was given there)."""
    out: Dict[str, object] = {}
    for tree in trees:
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                try:
                    out[node.targets[0].id] = ast.literal_eval(node.value)
                except ValueError:
                    continue
    return out


def kind_name_tests(package: str = PACKAGE, kinds=None) -> List[str]:
    """['path:LINE what', ...] for every kind-name test outside kinds/ (and synth/)."""
    kinds = set(kinds if kinds is not None else declared_kinds())
    sources = {}
    for folder, _, names in os.walk(package):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    sources[path] = ast.parse(f.read(), filename=path)
    constants = _constants(sources.values())
    exempt = (os.path.join(package, "kinds"),) + tuple(
        os.path.join(package, os.path.relpath(p, PACKAGE)) for p in NOT_ANALYSIS)
    out = []
    for path, tree in sorted(sources.items()):
        if any(path.startswith(e + os.sep) for e in exempt):
            continue
        where = os.path.relpath(path, os.path.dirname(package))
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                sides = [node.left] + list(node.comparators)
                if any(_is_kind_attribute(s) for s in sides) and \
                        any(_names_kinds(s, kinds, constants) for s in sides):
                    out.append(f"{where}:{node.lineno} compares the kind with a kind's name")
            elif isinstance(node, ast.For) and isinstance(node.target, ast.Name) \
                    and node.target.id == "kind" and _names_kinds(node.iter, kinds, constants):
                out.append(f"{where}:{node.lineno} loops over kind names")
            elif isinstance(node, ast.Call):
                func = node.func.id if isinstance(node.func, ast.Name) else \
                    getattr(node.func, "attr", "")
                if func in SELECTORS and any(_names_kinds(a, kinds, constants)
                                             for a in list(node.args) +
                                             [k.value for k in node.keywords]):
                    out.append(f"{where}:{node.lineno} selects instances by a kind's name")
    return out


def test_every_declared_kind_has_an_analysis_module():
    """A kind in schema.yaml without a module would be dropped silently from the summary's
    kind lines, the report, the line rate and diagnose's evidence."""
    missing = [k for k in declared_kinds() if k not in REGISTRY]
    assert not missing, ("kinds with no analysis module (add a KindAnalysis to a module of "
                         f"analysis/fabscope_analysis/kinds/, docs/architecture.md): {missing}")


def test_every_analysis_module_is_of_a_declared_kind():
    stale = sorted(set(REGISTRY) - set(declared_kinds()))
    assert not stale, f"analysis modules of kinds src/output/schema.yaml does not declare: {stale}"


def test_each_serving_class_is_measured_by_exactly_one_kind():
    """fit and impact find the instances of a class (every class a placement puts in a step
    or a request, their prefill twins, the serving mix) through the kind that declares it."""
    place = Placement(models.preset("deepseek-v3"), 8, 2, 8)
    classes = {op.cls for op in place.table(32, 2048, 8192, 16)} | set(PREFILL_CLASSES) | {"mix"}
    assert {"tp", "moe", "pp", "kv", "api"} <= classes
    measured_by = {cls: kind_measuring(cls) for cls in sorted(classes)}
    assert set(measured_by.values()) <= set(REGISTRY), measured_by


def test_no_kind_name_tests_outside_the_kind_modules():
    found = kind_name_tests()
    assert not found, ("ask the kind's module (fabscope_analysis.kinds.analysis_of, "
                       "kind_measuring) instead:\n" + "\n".join(found))


def test_the_scan_sees_each_form_of_kind_name_test(tmp_path):
    """Each form the rule names is found in a module outside kinds/, and none inside it (a
    walk that read no file would pass anything)."""
    (tmp_path / "kinds").mkdir()
    (tmp_path / "kinds" / "p2p.py").write_text(
        'def f(inst):\n    return inst.get("kind") == "latency"\n')
    (tmp_path / "bad.py").write_text(
        'BATCH = ("latency", "bibw")\n'
        'def f(inst, r, row, kind):\n'
        '    a = inst.get("kind") != "incast"\n'
        '    b = str(r["kind"]) in ("allreduce", "alltoall")\n'
        '    c = row.kind == "kvpush"\n'
        '    d = kind not in BATCH\n'
        '    e = instances_of(inst, "api")\n'
        '    for kind in ("latency", "bandwidth"):\n'
        '        pass\n'
        '    ok = row.kind == "check" or inst.get("metric") == "latency"\n'
        '    return {"kind": "latency"}\n')
    found = kind_name_tests(str(tmp_path), ["latency", "bandwidth", "bibw", "incast",
                                            "allreduce", "alltoall", "kvpush", "api"])
    assert sorted(int(f.split(":")[1].split()[0]) for f in found) == [3, 4, 5, 6, 7, 8], found
