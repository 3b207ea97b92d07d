"""A pytest plugin that records which test files execute which lines of the analysis
package (`pytest -p mutate_auto.linemap`, with tests/ on PYTHONPATH).

tests/mutate --auto runs it once per test file on the unpatched scratch tree; a mutant
is then run against only those of its selected test files that execute its statement,
and a mutant whose statement none of them executes is escaped without a run (no test
can see a change to a line it never runs).

A line is recorded against the test file whose test ran it in the test's call or
teardown phase. Lines run outside a test's call (importing, collecting, module-level
and class-body code, and the setup of fixtures, which a module or session scope shares
with other tests and other files) are recorded as "*": a mutant there is judged by all
its selected test files, as without the map. A Python a test starts (the tests run the
commands as `python -m fabscope_analysis ...`) is traced too (child/sitecustomize.py), its
lines given to that test's file.

Environment: MUTATE_LINEMAP_PACKAGE, the absolute folder whose files are recorded;
MUTATE_LINEMAP_OUT, the JSON file written at the end of the session:
{"repository-relative file": {"line": ["test file", ...] or ["*"]}}.
"""
from __future__ import annotations

import inspect
import json
import os
import shutil
import sys
import tempfile
import threading

import pytest

_PACKAGE = os.path.abspath(os.environ.get("MUTATE_LINEMAP_PACKAGE", "analysis/fabscope_analysis")) + os.sep
_OUT = os.environ.get("MUTATE_LINEMAP_OUT", "")
_ROOT = os.path.dirname(os.path.dirname(_PACKAGE.rstrip(os.sep)))
_OPTIMIZED = inspect.CO_OPTIMIZED       # a function's frame: not module or class-body code

_current = ["*"]                         # the test file whose call phase runs now, or "*"
_hits: dict = {}                         # filename -> {line: set of test files}


def _local(frame, event, arg):
    if event == "line":
        code = frame.f_code
        who = _current[0] if code.co_flags & _OPTIMIZED else "*"
        _hits.setdefault(code.co_filename, {}).setdefault(frame.f_lineno, set()).add(who)
    return _local


def _global(frame, event, arg):
    if frame.f_code.co_filename.startswith(_PACKAGE):
        _local(frame, "line", arg)       # the first line of a module or function body
        return _local
    return None


_CHILDREN = tempfile.mkdtemp(prefix="linemap-children-") if _OUT else ""


def pytest_configure(config):
    sys.settrace(_global)
    threading.settrace(_global)
    if _CHILDREN:
        # the commands tests start as new Pythons (python -m fabscope_analysis) are traced
        # by child/sitecustomize.py, which every child finds first on PYTHONPATH
        child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child")
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [child, os.environ.get("PYTHONPATH", "")]))
        os.environ["MUTATE_LINEMAP_CHILDREN"] = _CHILDREN
        os.environ["MUTATE_LINEMAP_PACKAGE"] = _PACKAGE
        os.environ["MUTATE_LINEMAP_TEST"] = "*"


def _set_current(who: str):
    _current[0] = who
    if _CHILDREN:
        os.environ["MUTATE_LINEMAP_TEST"] = who


def _test_file(item) -> str:
    """The repository path of the item's file (node ids are relative to pytest's rootdir)."""
    return os.path.relpath(str(item.path), _ROOT).replace(os.sep, "/")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _set_current(_test_file(item))
    yield
    _set_current("*")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    _set_current(_test_file(item))
    yield
    _set_current("*")


def pytest_sessionfinish(session):
    sys.settrace(None)
    threading.settrace(None)
    if not _OUT:
        return
    for name in sorted(os.listdir(_CHILDREN)) if _CHILDREN else ():
        try:
            with open(os.path.join(_CHILDREN, name)) as f:
                child = json.load(f)
        except (OSError, ValueError):
            continue                     # a child killed while writing: its lines are lost
        for filename, lines in child.items():
            for line, who in lines.items():
                _hits.setdefault(filename, {}).setdefault(int(line), set()).update(who)
    if _CHILDREN:
        shutil.rmtree(_CHILDREN, ignore_errors=True)
    out = {}
    for filename, lines in _hits.items():
        rel = os.path.relpath(filename, _ROOT).replace(os.sep, "/")
        out[rel] = {str(line): (["*"] if "*" in who else sorted(who)) for line, who in lines.items()}
    with open(_OUT, "w") as f:
        json.dump(out, f)
