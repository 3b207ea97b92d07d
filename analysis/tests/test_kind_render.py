"""Each kind computes once and renders apart (kinds/base.py): a kind's render functions
(summary_lines, drill_lines, metrics, a report section's render) take the figures its compute
returned, a frozen dataclass of numbers and text (or a tuple of them), and nothing that
reaches the file; their bodies call no statistics.

What is checked, per registered kind (kinds.REGISTRY), by the functions' annotations
(typing.get_type_hints) and their source (ast):
- a render function has one parameter, annotated with a figures type: a frozen
  dataclass whose fields are int, float, str, bool, None, Optional/Union or tuples of
  those, or other such dataclasses (never a TestInstance, ResultFile, RunAnalysis, a
  DataFrame, an array or an untyped object);
- its compute's return annotation is that figures type (Optional of it for one
  instance, the same tuple for a report section), so what summary and report render
  is what compute returned;
- the render function's body, and the module's own functions it calls, name neither
  numpy nor the statistics, reader or run-analysis modules' computations, and pandas
  only to lay out a table (pd.DataFrame).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
import textwrap
import types
import typing

import pytest

from fabscope_analysis.kinds import FAMILIES, REGISTRY, compute_kinds
from fabscope_analysis.kinds.base import no_figures, no_lines, no_metrics

PLAIN = (int, float, str, bool, type(None))
# Names a render function may not reach: computations over the samples or the file.
COMPUTING_MODULES = ("numpy", "fabscope_analysis.stats", "fabscope_analysis.reader",
                     "fabscope_analysis.run_analysis", "fabscope_analysis.resampling")
# What of those a render function may use: formatting, and pandas to lay out a table.
FORMATTING = {"format_number", "format_bytes", "size_text"}


def _plain(tp, seen=()) -> str:
    """'' when tp is a figures field type; otherwise what is wrong with it."""
    if tp in PLAIN:
        return ""
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is getattr(types, "UnionType", typing.Union):
        return next((w for w in (_plain(a, seen) for a in typing.get_args(tp)) if w), "")
    if origin is tuple:
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        return next((w for w in (_plain(a, seen) for a in args) if w), "")
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _figures_problem(tp, seen)
    return f"{tp!r} is not a number, text or figures dataclass"


def _figures_problem(cls, seen=()) -> str:
    if cls in seen:
        return ""
    if not dataclasses.is_dataclass(cls) or not cls.__dataclass_params__.frozen:
        return f"{cls.__name__} is not a frozen dataclass"
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    for f in dataclasses.fields(cls):
        why = _plain(hints[f.name], seen + (cls,))
        if why:
            return f"{cls.__name__}.{f.name}: {why}"
    return ""


def _figures_type(tp):
    """The dataclass of a figures annotation (X, Optional[X] or Tuple[X, ...]), or None."""
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return tp
    args = [a for a in typing.get_args(tp) if a not in (type(None), Ellipsis)]
    if len(args) == 1:
        return _figures_type(args[0])
    return None


def _renders():
    """(name, render function, compute function, per_run) of every registered kind."""
    out, seen = [], set()
    for kind, a in REGISTRY.items():
        for field in ("summary_lines", "drill_lines", "metrics"):
            render = getattr(a, field)
            if render is None or render in (no_lines, no_metrics) or (render, a.compute) in seen:
                continue
            seen.add((render, a.compute))
            out.append((f"{kind}.{field}", render, a.compute, False))
        section = a.report_section
        if section is not None and (section.render, section.compute) not in seen:
            seen.add((section.render, section.compute))
            out.append((f"{kind}.report_section", section.render, section.compute, True))
    return out


RENDERS = _renders()


def test_every_kind_that_renders_computes():
    assert RENDERS, "no kind renders anything"
    for name, _, compute, _ in RENDERS:
        assert compute is not no_figures, f"{name}: renders figures no compute makes"


@pytest.mark.parametrize("name,render,compute,per_run", RENDERS, ids=[r[0] for r in RENDERS])
def test_a_render_takes_the_figures_its_compute_returns(name, render, compute, per_run):
    params = list(inspect.signature(render).parameters.values())
    assert len(params) == 1, f"{name}: {render.__name__} takes {len(params)} parameters, " \
                             "expected the figures alone"
    hints = typing.get_type_hints(render)
    assert params[0].name in hints, f"{name}: {render.__name__}'s parameter has no annotation"
    figures = _figures_type(hints[params[0].name])
    assert figures is not None, \
        f"{name}: {render.__name__} takes {hints[params[0].name]!r}, not a figures dataclass"
    why = _plain(hints[params[0].name])
    assert not why, f"{name}: {render.__name__}'s figures: {why}"
    returned = typing.get_type_hints(compute).get("return")
    assert returned is not None and _figures_type(returned) is figures, \
        f"{name}: {compute.__name__} returns {returned!r}, {render.__name__} renders {figures!r}"
    if per_run:
        assert typing.get_origin(returned) is tuple, f"{name}: a section's compute returns a tuple"


def _called_functions(fn, module):
    """fn and the module's own functions it calls, transitively."""
    out, unvisited = [], [fn]
    while unvisited:
        f = unvisited.pop()
        if f in out:
            continue
        out.append(f)
        tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                target = getattr(module, node.id, None)
                if inspect.isfunction(target) and target.__module__ == module.__name__:
                    unvisited.append(target)
    return out


def _computing_names(fn, module):
    """Names in fn's body (and its module's functions it calls) that compute: numpy,
    pandas beyond DataFrame, and the computations of COMPUTING_MODULES."""
    bad = []
    for f in _called_functions(fn, module):
        tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                value = getattr(module, node.value.id, None)
                if isinstance(value, types.ModuleType) and value.__name__ == "pandas" \
                        and node.attr != "DataFrame":
                    bad.append(f"{f.__name__}: pd.{node.attr}")
            if isinstance(node, ast.Name):
                value = getattr(module, node.id, None)
                owner = value.__name__ if isinstance(value, types.ModuleType) else \
                    getattr(value, "__module__", "")
                if owner in COMPUTING_MODULES and node.id not in FORMATTING \
                        and not isinstance(value, int):
                    bad.append(f"{f.__name__}: {node.id} ({owner})")
    return bad


@pytest.mark.parametrize("name,render,compute,per_run", RENDERS, ids=[r[0] for r in RENDERS])
def test_a_render_computes_nothing(name, render, compute, per_run):
    module = sys.modules[render.__module__]
    assert not _computing_names(render, module), \
        f"{name}: {render.__name__} computes: {_computing_names(render, module)}"


def test_every_figures_dataclass_of_the_kind_modules_is_plain():
    found = 0
    for family in FAMILIES:
        for value in vars(family).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value) \
                    and value.__module__ == family.__name__:
                found += 1
                assert not _figures_problem(value), _figures_problem(value)
    assert found >= 10


class _Instance:
    def __init__(self, index, kind):
        self.index = index
        self.attrs = {"kind": kind}

    def get(self, key, default=None):
        return self.attrs.get(key, default)


class _Run:
    """A run of one instance per kind whose compute is replaced by a counter."""
    def __init__(self, kinds):
        self.instances = [_Instance(i, k) for i, k in enumerate(kinds)]


def test_compute_kinds_computes_each_instance_once(monkeypatch):
    """What summary renders is what compute_kinds computed once, not a second reading."""
    calls = []
    fault = REGISTRY["fault"]
    monkeypatch.setitem(REGISTRY, "fault", dataclasses.replace(
        fault, compute=lambda inst: calls.append(inst.index) or ("figures", inst.index),
        summary_lines=lambda f: [f"lines of {f}"], drill_lines=lambda f: [f"drill of {f}"]))
    results = compute_kinds(_Run(["fault", "latency", "fault"]), summary=True)
    assert results.summary_lines(0) == ["lines of ('figures', 0)"]
    assert results.drill_lines(2) == ["drill of ('figures', 2)"]
    assert results.summary_lines(1) == [] and results.drill_lines(1) == []
    assert calls == [0, 2]
