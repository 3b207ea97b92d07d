"""One statistics toolbox: every verdict takes its Benjamini-Hochberg, robust sigma,
block length and practical margin from one place, and the one BH treats a NaN p-value
the same way wherever it is called. Reads the package source with ast for the "defined
once" half: no import of the modules it checks, well under a second."""

from __future__ import annotations

import ast
import math
import os

import numpy as np
import pytest

from fabscope_analysis import accept_outliers, resampling
from fabscope_analysis.diagnosis import evidence, retest
from fabscope_analysis.inference import (PRACTICAL_MARGIN, benjamini_hochberg,
                                         robust_sigma)
from fabscope_analysis.serving import compose, resample

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "fabscope_analysis")
# name -> the one module (relative to the package) allowed to define it
TOOLS = {"benjamini_hochberg": "inference.py", "robust_sigma": "inference.py",
         "block_length": "resampling.py", "PRACTICAL_MARGIN": "inference.py"}
# a second BH hides under another name; its step-up ranks p by i / m
STEP_UP_SHAPES = ("np.arange(1, m + 1)",)


def test_nan_counts_as_a_test_and_silences_nothing():
    rejected, adjusted = benjamini_hochberg([1e-6, 0.2, float("nan"), 0.5], 0.05)
    assert rejected.tolist() == [True, False, False, False]
    # the NaN is a test with p = 1: the family is 4 (1e-6 x 4), its own adjusted p is 1
    assert adjusted.tolist() == pytest.approx([4e-6, 0.4, 1.0, 2 / 3])
    # the same family without the NaN rejects the same and adjusts by 3, not 4
    rejected3, adjusted3 = benjamini_hochberg([1e-6, 0.2, 0.5], 0.05)
    assert rejected3.tolist() == [True, False, False]
    assert adjusted3.tolist() == pytest.approx([3e-6, 0.3, 0.5])


def test_step_up_carries_the_smaller_ones_and_stops_at_the_boundary():
    # q * k / m exactly: 0.05 * 2 / 4 = 0.025 is rejected (<=), 0.0251 is not
    assert benjamini_hochberg([0.01, 0.025, 0.9, 0.9], 0.05)[0].tolist() == [True, True, False, False]
    assert benjamini_hochberg([0.0126, 0.0251, 0.9, 0.9], 0.05)[0].tolist() == [False] * 4
    # a large p ranked third still lets the two below it through (step-up, not step-down)
    rejected, adjusted = benjamini_hochberg([0.04, 0.001, 0.03], 0.05)
    assert rejected.tolist() == [True, True, True]
    assert adjusted.tolist() == pytest.approx([0.04, 0.003, 0.04])
    assert benjamini_hochberg([], 0.05)[0].shape == (0,)


def test_robust_sigma_is_the_normal_consistent_mad_of_the_finite_values():
    assert robust_sigma([1.0, 2.0, 3.0, 4.0, 100.0, float("nan")]) == pytest.approx(1.4826 * 1.0)
    assert robust_sigma([5.0]) == 0.0
    draws = np.random.default_rng(7).normal(0.0, 2.0, 200_000)
    assert robust_sigma(draws) == pytest.approx(2.0, rel=0.01)


@pytest.mark.parametrize("n, blocks", [(1, 1), (7, 2), (8, 2), (27, 3), (1000, 10), (1001, 10)])
def test_block_length_is_the_cube_root_rule(n, blocks):
    assert resampling.block_length(n) == blocks
    # one run and one repeat: SINGLE_RUN_BLOCKS blocks per rank, rounded up
    assert resampling.block_length(n, single_run=True) == \
        math.ceil(n / resampling.SINGLE_RUN_BLOCKS)


def test_every_user_takes_the_one_tool():
    assert evidence.benjamini_hochberg is benjamini_hochberg
    assert accept_outliers.benjamini_hochberg is benjamini_hochberg
    assert evidence.robust_sigma is robust_sigma and retest.robust_sigma is robust_sigma
    assert compose.block_length is resampling.block_length
    assert resample.block_length is resampling.block_length
    assert evidence.MARGIN == retest.MARGIN == PRACTICAL_MARGIN


def _definitions():
    """[(module, line, name)] for every function or module-level constant the package
    defines, and [(module, line, shape)] for every step-up ranking written out."""
    names, shapes = [], []
    for folder, _, files in os.walk(PACKAGE):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, PACKAGE)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            tree = ast.parse(text, filename=rel)
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.append((rel, node.lineno, node.name))
            for node in tree.body:
                if isinstance(node, ast.Assign):
                    names += [(rel, node.lineno, t.id) for t in node.targets if isinstance(t, ast.Name)]
            for number, line in enumerate(text.splitlines(), 1):
                shapes += [(rel, number, s) for s in STEP_UP_SHAPES if s in line]
    return names, shapes


def test_each_tool_is_defined_once():
    names, shapes = _definitions()
    twice = [f"{rel}:{line} defines {name} (the one is in {TOOLS[name]})"
             for rel, line, name in names if name in TOOLS and rel != TOOLS[name]]
    # a margin under another name (MARGIN = 1.25 in a verdict module) is a second margin
    twice += [f"{rel}:{line} defines {name} (margins are named once, in inference.py)"
              for rel, line, name in names
              if name.endswith("MARGIN") and name not in TOOLS and rel != "inference.py"]
    assert not twice, twice
    written = [f"{rel}:{line}: a step-up ranking ({shape}) outside inference.py"
               for rel, line, shape in shapes if rel != "inference.py"]
    assert not written, written
    assert {name for _, _, name in names} >= set(TOOLS)
