"""Properties of compare's statistics over drawn runs, sample counts and levels.

Swapping the sides of a comparison must mirror it: the run-level interval of the log
difference negates, so the figures' interval read as a ratio inverts, and a verdict of
`better` becomes `worse` (and the rest stay). A row's point estimate must lie inside its
own interval (docs/analysis.md). Sample counts per side are drawn unequal and runs per
side from 1 to 5, where fixtures use equal counts.
"""

import math

import numpy as np
from hypothesis import example, given, strategies as st

from fabscope_analysis.compare_stats import (ArchiveSpread, _figure_interval, compare_figures,
                                             difference_verdict, run_level_interval)
from fabscope_analysis.resampling import Unit

LOGS = st.floats(-3.0, 3.0, allow_nan=False)
VARIANCES = st.floats(1e-6, 0.5, allow_nan=False)
MIRROR = {"better": "worse", "worse": "better"}


@st.composite
def log_figures(draw):
    runs_a, runs_b = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    la = np.array(draw(st.lists(LOGS, min_size=runs_a, max_size=runs_a)))
    lb = np.array(draw(st.lists(LOGS, min_size=runs_b, max_size=runs_b)))
    va = np.array(draw(st.lists(VARIANCES, min_size=runs_a, max_size=runs_a)))
    vb = np.array(draw(st.lists(VARIANCES, min_size=runs_b, max_size=runs_b)))
    archive = draw(st.one_of(st.none(), st.builds(
        lambda ss, df: ArchiveSpread(ss, df, "drawn"), st.floats(0.0, 2.0), st.integers(1, 6))))
    level = draw(st.sampled_from([0.8, 0.9, 0.95, 0.99]))
    return la, lb, va, vb, archive, level


@given(log_figures(), st.integers(1, 400))
@example((np.array([0.0]), np.array([0.0, 2.0]), np.array([0.25]), np.array([0.25, 0.25]), None,
          0.95), 1)  # an interval down to a ratio of 1e-9 (t at 1 degree of freedom)
@example((np.array([0.0]), np.array([0.0, 0.0, 0.0]), np.array([7.62939453e-06]),
          np.array([0.25, 0.25, 0.00975029]), None, 0.99), 1)  # down to 4e-12
def test_run_level_interval_negates_when_sides_swap(drawn, within_df):
    la, lb, va, vb, archive, level = drawn
    ab = run_level_interval(la, lb, va, vb, level, archive, within_df)
    ba = run_level_interval(lb, la, vb, va, level, archive, within_df)
    assert math.isclose(ab.centre, -ba.centre, abs_tol=1e-12)
    assert ab.df == ba.df and ab.within_bound == ba.within_bound
    if ab.df == 0:
        assert (ab.low, ab.high) == (ba.low, ba.high) == (-math.inf, math.inf)
        return
    assert math.isclose(ab.low, -ba.high, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(ab.high, -ba.low, rel_tol=1e-9, abs_tol=1e-12)
    assert ab.low <= ab.centre <= ab.high
    # In figures: (B - A) around A's level and (A - B) around B's, read as ratios, invert.
    low_ab, high_ab = _figure_interval(ab, la)
    low_ba, high_ba = _figure_interval(ba, lb)
    level_a, level_b = math.exp(np.mean(la)), math.exp(np.mean(lb))
    # Compared as logs of the ratios, to the precision a ratio near 0 keeps: 1 + x for x
    # near -1 has lost digits in float (cancellation), not the property; below e^-30 the
    # figure's low end is -level itself (expm1 is -1.0), nothing to compare.
    if max(abs(ab.low), abs(ab.high)) > 30:
        return
    for u, v in ((low_ab / level_a, high_ba / level_b), (high_ab / level_a, low_ba / level_b)):
        assert math.isclose(math.log1p(u), -math.log1p(v), rel_tol=1e-9,
                            abs_tol=1e-9 + 1e-14 / min(1 + u, 1 + v))


COUNTS = st.integers(0, 10 ** 6) | st.just(0)  # an empty side among them


@given(st.sampled_from(["latency", "bandwidth"]), st.floats(-5, 5), st.floats(0, 5),
       COUNTS, COUNTS, st.floats(0.1, 100),
       st.floats(0.5, 2.0), st.booleans(), st.booleans(), st.booleans())
@example("latency", 0.5, 1.0, 1000, 40, 100.0, 1.2, False, True, True)
@example("bandwidth", -1.0, 0.5, 7, 1000, 10.0, 0.5, False, True, True)
@example("latency", 0.3, 0.2, 50, 0, 10.0, 1.3, False, True, True)      # one side empty
@example("latency", -1.0, 1.0, 500, 501, 10.0, 0.8, False, True, True)  # interval ends at 0
def test_verdict_mirrors_when_sides_swap(metric, low, width, n_a, n_b, a_val, ratio, thin, known,
                                         confirm):
    """B against A and A against B give mirrored words, the negligible band included."""
    high = low + width
    b_val = a_val * ratio
    negligible = 0.05
    flags = (thin, known, confirm)
    ab = difference_verdict(metric, low, high, n_a, n_b, a_val, b_val, negligible, *flags)
    ba = difference_verdict(metric, -high, -low, n_b, n_a, b_val, a_val, negligible, *flags)
    assert ba == MIRROR.get(ab, ab), (ab, ba)


def test_negligible_mirrors_when_sides_swap():
    a_val, b_val = 100.0, 95.1
    ab = difference_verdict("latency", -6.0, -3.0, 1000, 1000, a_val, b_val, 0.05)
    ba = difference_verdict("latency", 3.0, 6.0, 1000, 1000, b_val, a_val, 0.05)
    assert ba == MIRROR.get(ab, ab), (ab, ba)


def sides_from(seed, scale, runs_a, runs_b):
    """Two sides of runs_a and runs_b runs of 1..2 ranks: sample counts per rank unequal (30 to
    5000, non-multiples among them), each run its own drift and tail weight, side B's times
    scaled by `scale`. Counts and tails come from a generator seeded by `seed`, so every
    example is a mixed one, not only the small values hypothesis tries first."""
    rng = np.random.default_rng(seed)

    def side(runs, factor):
        out = []
        for _ in range(runs):
            ranks = []
            for _ in range(int(rng.integers(1, 3))):
                n = int(rng.choice([30, 101, 999, 2000, 5003]))
                level = rng.lognormal(0.0, 0.1)            # run-to-run drift
                tail = float(rng.choice([0.1, 0.3, 0.8]))  # how heavy this run's tail is
                ranks.append(Unit(1000.0 * factor * level * rng.lognormal(0.0, tail, n),
                                  np.full(n, 4096.0)))
            out.append([ranks])
        return out

    return side(runs_a, 1.0), side(runs_b, scale)


RUNS_PER_SIDE = st.builds(sides_from, st.integers(0, 2 ** 31),
                          st.sampled_from([1.0, 1.05, 1.3, 2.0]), st.integers(2, 4),
                          st.integers(2, 4))


def _point_inside(metric, a, b, stats):
    rows = compare_figures(metric, a, b, stats, resamples=20, seed=3)
    bad = [f"{r.stat}: {r.diff:.4g} [{r.low:.4g}, {r.high:.4g}] ({r.runs_a}v{r.runs_b})"
           for r in rows if np.isfinite(r.low) and np.isfinite(r.high)
           and not (r.low <= r.diff <= r.high)]
    assert not bad, "point estimate outside its own interval: " + "; ".join(bad)


@given(RUNS_PER_SIDE, st.sampled_from(["latency", "bandwidth"]))
@example(sides_from(2, 1.0, 4, 4), "latency")  # 4v4, one fabric: once p99 -5.1 [-1.7, 4.3] us
def test_point_estimate_inside_its_interval(sides, metric):
    a, b = sides
    _point_inside(metric, a, b, ["p50", "p99"])


@given(log_figures(), st.integers(1, 400))
def test_row_p_agrees_with_its_own_interval(drawn, within_df):
    """The p a row brings to the comparison's Benjamini-Hochberg is the test its interval
    inverts: p <= 1 - level exactly when the interval leaves 0 out (up to rounding at the
    edge), so no row passes over all rows that its own interval did not call different."""
    la, lb, va, vb, archive, level = drawn
    model = run_level_interval(la, lb, va, vb, level, archive, within_df)
    if model.df == 0 or not np.isfinite(model.p):
        return
    excludes = model.low > 0 or model.high < 0
    edge = min(abs(model.low), abs(model.high)) <= 1e-9 * max(1.0, abs(model.centre))
    assert edge or excludes == (model.p <= 1 - level), (model, level)
