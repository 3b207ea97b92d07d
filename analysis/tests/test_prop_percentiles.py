"""Properties of the analysis' percentile and worst-value helpers over drawn sample counts.

Fixtures use tidy counts (multiples of 100, the same on every rank), where ceil and
floor of a percentile's position agree and the interpolation weight is 0. Here the
counts are drawn: per rank from 1 up, unequal, odd, and around what a p99 needs (the
99th percentile interpolates between two samples unless (n - 1) * 0.99 is whole), and
each figure is checked against numpy.percentile on the same numbers (docs/analysis.md:
linear-interpolated percentiles, as the C++ writes them).
"""

import math

import numpy as np
import pandas as pd
from hypothesis import example, given, strategies as st

from fabscope_analysis.compare_stats import MIN_TAIL_SAMPLES
from fabscope_analysis.stats import rank_tails, tail_value, worst_value

# Around the counts where a p99 has 1, 2 ... samples beyond it.
COUNTS = st.one_of(st.integers(1, 12), st.integers(95, 105), st.integers(195, 205),
                   st.integers(1, 400))
# Integer nanoseconds, as the file's clocks give them: a wide spread (neighbours differ, so
# the interpolation shows) mixed with a narrow one (ties).
TIMES = st.integers(1, 10 ** 6) | st.integers(1, 4)


def _frame(per_rank, sizes=None):
    rows = []
    for rank, values in per_rank.items():
        size = (sizes or {}).get(rank, 4096)
        for i, v in enumerate(values):
            rows.append((rank, i, float(v), float(v), size))
    return pd.DataFrame(rows, columns=["rank", "iter", "latency_ns", "duration_ns", "bytes"])


@st.composite
def ranks_with_samples(draw, max_ranks=6):
    ranks = draw(st.lists(st.integers(0, 4095), min_size=1, max_size=max_ranks, unique=True))
    out = {}
    for r in ranks:
        n = draw(COUNTS)  # unequal per rank
        out[r] = draw(st.lists(TIMES, min_size=n, max_size=n))
    return out


@given(ranks_with_samples())
@example({0: [1, 2], 7: list(range(1, 102))})        # p99 at a whole position / between two
@example({3: [5], 1: [9, 1, 4]})                     # one sample; odd count, unsorted
def test_rank_tails_match_numpy_per_rank_latency(per_rank):
    per_rank = {r: v for r, v in per_rank.items() if v}
    if not per_rank:
        return
    tails = rank_tails(_frame(per_rank), "latency").set_index("rank")
    assert sorted(tails.index) == sorted(per_rank)
    for rank, values in per_rank.items():
        v = np.asarray(values, dtype=np.float64)
        row = tails.loc[rank]
        assert row["samples"] == len(v)
        assert math.isclose(row["p50"], np.percentile(v, 50) / 1e3, rel_tol=1e-12)
        assert math.isclose(row["p99"], np.percentile(v, 99) / 1e3, rel_tol=1e-12)
        assert math.isclose(row["p99_time_ns"], np.percentile(v, 99), rel_tol=1e-12)
        assert v.min() / 1e3 <= row["p50"] <= row["p99"] <= v.max() / 1e3


@given(ranks_with_samples(max_ranks=3), st.integers(1, 1 << 24))
def test_rank_tails_bandwidth_is_bytes_over_the_time_percentile(per_rank, nbytes):
    per_rank = {r: v for r, v in per_rank.items() if v}
    if not per_rank:
        return
    frame = _frame(per_rank, {r: nbytes for r in per_rank})
    tails = rank_tails(frame, "bandwidth").set_index("rank")
    for rank, values in per_rank.items():
        v = np.asarray(values, dtype=np.float64)
        # Bandwidth: higher is better, so its p99 is bytes over the p99 *time* (the slow tail).
        assert math.isclose(tails.loc[rank, "p99"], nbytes / np.percentile(v, 99), rel_tol=1e-12)
        assert tails.loc[rank, "p99"] <= tails.loc[rank, "p50"]


@given(st.lists(TIMES, min_size=1, max_size=300), st.sampled_from([50.0, 99.0, 99.9]))
def test_tail_value_latency_is_numpy_percentile(values, q):
    v = np.asarray(values, dtype=np.float64)
    assert math.isclose(tail_value("latency", v, np.full(len(v), 8.0), q),
                        np.percentile(v, q) / 1e3, rel_tol=1e-12)


@given(st.lists(st.tuples(TIMES, st.integers(1, 1 << 20)), min_size=1, max_size=200),
       st.sampled_from([50.0, 99.0]))
def test_tail_value_bandwidth_mixed_sizes_is_the_low_rate_percentile(rows, q):
    times = np.asarray([t for t, _ in rows], dtype=np.float64)
    nbytes = np.asarray([b for _, b in rows], dtype=np.float64)
    got = tail_value("bandwidth", times, nbytes, q)
    if np.all(nbytes == nbytes[0]):
        assert math.isclose(got, nbytes[0] / np.percentile(times, q), rel_tol=1e-12)
    else:
        # Sizes differ: the rates' (100 - q)th percentile, the slow end.
        assert math.isclose(got, np.percentile(nbytes / times, 100 - q), rel_tol=1e-12)


@given(st.lists(st.tuples(TIMES, st.integers(1, 1 << 20)), min_size=1, max_size=200))
def test_worst_is_the_maximum_latency_and_the_minimum_rate(rows):
    times = np.asarray([t for t, _ in rows], dtype=np.float64)
    nbytes = np.asarray([b for _, b in rows], dtype=np.float64)
    assert worst_value("latency", times, nbytes) == times.max() / 1e3
    assert worst_value("bandwidth", times, nbytes) == (nbytes / times).min()
    # The worst is never better than the tail.
    assert worst_value("latency", times, nbytes) >= tail_value("latency", times, nbytes, 99.0)


@given(st.integers(1, 3000), st.integers(1, 3000), st.sampled_from(["p99", "p99.9"]))
@example(1000, 1000, "p99")   # exactly MIN_TAIL_SAMPLES beyond the p99: not thin
@example(999, 5000, "p99")    # one short on the smaller side: thin
@example(9999, 20000, "p99.9")
def test_thin_tail_boundary_is_exact(n_a, n_b, stat):
    """compare calls a tail thin when fewer than MIN_TAIL_SAMPLES samples of the smaller
    side lie beyond the percentile: the boundary in whole numbers, not float noise."""
    _check_thin_tail(n_a, n_b, stat)


def test_thin_tail_boundary_at_p999_with_exactly_ten_beyond():
    _check_thin_tail(10000, 10000, "p99.9")


def _check_thin_tail(n_a, n_b, stat):
    from fabscope_analysis.compare_stats import compare_figures
    from fabscope_analysis.resampling import Unit
    rng = np.random.default_rng(n_a * 7919 + n_b)

    def run(n):
        return [[Unit(rng.integers(1000, 2000, n).astype(np.float64), np.full(n, 8.0))]]

    (row,) = compare_figures("latency", [run(n_a)], [run(n_b)], [stat], resamples=2, seed=1)
    beyond = {"p99": 100, "p99.9": 1000}[stat]  # one sample in this many lies beyond
    assert row.thin_tail == (min(n_a, n_b) < MIN_TAIL_SAMPLES * beyond)


def test_a_p99_needs_1000_samples_a_side_and_a_p999_10000():
    """docs/analysis.md's figures, in numbers rather than through the constant: 10 samples
    beyond the percentile, so a p99 of 1,000 samples a side is judged and one of 999 is a
    thin tail; a p99.9 of 10,000 is judged, 9,999 thin."""
    from fabscope_analysis.compare_stats import compare_figures
    from fabscope_analysis.resampling import Unit
    rng = np.random.default_rng(5)

    def thin(n, stat):
        side = [[[Unit(rng.integers(1000, 2000, n).astype(np.float64), np.full(n, 8.0))]]
                for _ in range(2)]
        (row,) = compare_figures("latency", [side[0]], [side[1]], [stat], resamples=2, seed=1)
        return row.thin_tail
    assert [thin(999, "p99"), thin(1000, "p99")] == [True, False]
    assert [thin(9999, "p99.9"), thin(10000, "p99.9")] == [True, False]
