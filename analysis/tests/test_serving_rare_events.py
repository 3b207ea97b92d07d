"""How far a step composed from measured operations can be trusted: an event none of the
measured operations showed is never in a resampled step, so its rate is bounded only by
the rule of three, and a step of many operations meets it that many times more often."""

import math

import numpy as np
import pytest

from fabscope_analysis.serving import resample as R


def test_unseen_step_share_by_hand():
    # 200 all-reduces measured, 160 a step: each may stall at up to 3.0/200 = 1.5 %,
    # a step clear of all 160 with 0.985^160 = 8.9 %: up to 91 % of steps may stall
    share = R.unseen_step_share([(200, 160)])
    assert share == pytest.approx(1 - (1 - R.UNSEEN_EVENTS / 200) ** 160, rel=1e-12)
    assert share == pytest.approx(0.912, abs=0.002)
    # two classes multiply their clear chances: (1 - 3/1000)^64 (1 - 3/500)^58
    two = R.unseen_step_share([(1000, 64), (500, 58)])
    clear = (1 - R.UNSEEN_EVENTS / 1000) ** 64 * (1 - R.UNSEEN_EVENTS / 500) ** 58
    assert two == pytest.approx(1 - clear, rel=1e-12)
    assert R.unseen_step_share([(2, 1)]) == 1.0          # fewer than 3 operations: anything
    assert R.unseen_step_share([(100, 0)]) == 0.0        # a class the step does not run


@pytest.mark.parametrize("per_step, q", [(1, 99.0), (64, 99.0), (160, 99.0), (160, 50.0),
                                         (183, 99.9)])
def test_operations_to_tell_is_the_smallest_that_tells(per_step, q):
    n = R.operations_to_tell(per_step, q)
    tail = 1 - q / 100
    assert R.unseen_step_share([(n, per_step)]) <= tail + 1e-12
    assert R.unseen_step_share([(n - 1, per_step)]) > tail
    # the closed form for one operation a step: 3.0 / tail
    if per_step == 1:
        assert n == math.ceil(R.UNSEEN_EVENTS / tail)


def test_rare_stalls_are_what_the_bound_is_for():
    """0.1 % of all-reduces stall 1 ms, 160 a step: a step stalls in 1 - 0.999^160 = 15 %
    of tokens, so the true p99 holds a stall. With 200 operations measured, most runs
    see no stall at all and the composed p99 cannot show it; the bound says so."""
    rng = np.random.default_rng(3)
    runs_without = 0
    for _ in range(200):
        stalls = rng.random(200) < 1e-3
        runs_without += not stalls.any()
    assert runs_without / 200 > 0.75        # (0.999)^200 = 82 % of runs see none
    true_share = 1 - 0.999 ** 160
    assert true_share > 0.01                 # the true p99 holds a stall
    assert R.unseen_step_share([(200, 160)]) > 0.01   # and the bound cannot exclude it
    # measured enough, the bound excludes an event rarer than the one planted only when
    # its rate is below what the measurement can see: 47,694 operations for a p99 of 160
    assert R.operations_to_tell(160, 99.0) == pytest.approx(47_800, rel=0.01)
