"""The serial-retest rule (diagnosis/retest.py), measured as rates over seeded trials."""

import numpy as np

from fabscope_analysis.diagnosis.retest import (CLEARED, CONFIRMED, INCONCLUSIVE, SELECTION,
                                                judge_retest, pass_sigma, selection_z)


def _trial(seed, pool, fault=0.0, controls=10, floor=True, persist=0.087):
    """A healthy pool of pairs (persistent log spread `persist`, parallel-pass noise 0.05);
    pair 0 carries `fault` (log) both in the pass and alone. The 3 worst are retested."""
    rng = np.random.default_rng(seed)
    persistent = rng.normal(0, persist, pool)
    persistent[0] += fault
    parallel = persistent + rng.normal(0, 0.05, pool)
    worst = np.argsort(parallel)[-3:]
    alone = {int(i): float(np.exp(persistent[i] + rng.normal(0, 0.02))) for i in worst}
    ctrl = np.exp(rng.normal(0, persist, controls) + rng.normal(0, 0.02, controls))
    floor_sigma = pass_sigma(np.exp(parallel), bandwidth=False) if floor else 0.0
    return judge_retest(alone, ctrl, pool=pool, bandwidth=False, sigma_floor=floor_sigma)


def test_selection_quantile_grows_with_the_pool():
    assert abs(selection_z(1) - 1.645) < 1e-3
    assert 4.8 < selection_z(100_000) < 5.0


def test_a_healthy_pools_worst_pairs_are_rarely_confirmed():
    # the worst 3 of 20,000 healthy pairs stay ~1.3-1.5x slower alone (selection); a
    # fixed 1.25x bar confirms them nearly always, the selection-aware bar rarely
    confirmed = sum(any(j.slow for j in _trial(s, 20_000)) for s in range(60))
    assert confirmed <= 3, confirmed
    fixed_bar = sum(any(j.ratio > 1.25 for j in _trial(s, 20_000)) for s in range(60))
    assert fixed_bar >= 30, fixed_bar


def test_a_real_2x_pair_is_confirmed():
    hits = 0
    for s in range(60):
        j = {x.pair: x for x in _trial(s, 20_000, fault=np.log(2.0))}
        hits += 0 in j and j[0].outcome == CONFIRMED
    assert hits >= 50, hits


def test_without_a_run_wide_floor_ten_controls_still_bound_false_confirmations():
    confirmed = sum(any(j.slow for j in _trial(s, 20_000, floor=False)) for s in range(60))
    assert confirmed <= 9, confirmed


def test_outcomes_and_bandwidth_direction():
    ctrl = [10.0, 10.2, 9.8, 10.1, 9.9, 10.0, 10.3, 9.7, 10.05, 9.95]  # GB/s
    out = {j.pair: j for j in judge_retest({"fast": 9.9, "slow": 3.0, "mild": 7.0}, ctrl,
                                           pool=50, bandwidth=True)}
    assert out["fast"].outcome == CLEARED
    assert out["slow"].outcome == CONFIRMED and abs(out["slow"].ratio - 10 / 3) < 0.1
    assert out["mild"].outcome in (CONFIRMED, SELECTION)
    assert "confirmed slow alone" in out["slow"].describe()
    few = judge_retest({"x": 3.0}, ctrl[:2], pool=50, bandwidth=True)[0]
    assert few.outcome == INCONCLUSIVE and "2 control pair(s)" in few.describe()
    # too few controls to judge, but the ratio shown is still against their median (of log
    # values: the geometric mean of two)
    assert abs(few.ratio - (10.0 * 10.2) ** 0.5 / 3.0) < 1e-9


def test_validity_widening_turns_a_confirmation_into_selection():
    ctrl = np.exp(np.random.default_rng(2).normal(0, 0.05, 12))
    plain = judge_retest({"p": 1.6}, ctrl, pool=1000, bandwidth=False)[0]
    wide = judge_retest({"p": 1.6}, ctrl, pool=1000, bandwidth=False, widen=3.0)[0]
    assert plain.outcome == CONFIRMED and wide.outcome == SELECTION, (plain, wide)
