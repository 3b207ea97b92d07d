"""diagnose's spread of a few hosts' effects, raised to its upper confidence bound: the
exact chi-square factor at every size, the smallest included (two values: one degree of
freedom)."""

import math

import numpy as np
import pytest
from scipy.stats import chi2

from fabscope_analysis.diagnosis.evidence import Q, spread_upper
from fabscope_analysis.inference import robust_sigma


@pytest.mark.parametrize("n", [2, 3, 6, 512])
def test_the_spread_bound_has_n_minus_1_degrees_of_freedom(n):
    values = np.random.default_rng(n).normal(0.0, 0.05, n)
    df = n - 1
    expected = robust_sigma(values) * math.sqrt(df / chi2.ppf(Q, df))
    assert spread_upper(values) == pytest.approx(expected, rel=1e-12)
    assert spread_upper(values) > robust_sigma(values)
