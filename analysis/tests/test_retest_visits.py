"""A serial retest's two visits of each retested pair (diagnosis/retest.py,
judge_retest_visits): a fault persists over both visits, a burst (another tenant, a
pause) that lasts through one visit is a transient, reported with its time, never a
culprit. Files from before the second visit are judged as before, and say that they
cannot tell the two apart. Hand-built files (synthetic.write_matrix_run) and the rule
on hand-built values."""

import math

import numpy as np

from fabscope_analysis.accept_outliers import judge_serial_retest, not_failed_alone, pair_log_medians
from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.diagnosis.retest import (CLEARED, CONFIRMED, SELECTION, TRANSIENT,
                                                judge_retest, judge_retest_visits, pass_sigma)
from fabscope_analysis.reader import FLAG_RETEST_SECOND_VISIT, open_result
from fabscope_analysis.stats import with_derived
from synthetic import write_matrix_run

# rank 0 -> 3 is 4x slow in the parallel pass; twelve control pairs away from both
CONTROLS = [(s, d) for s in range(8) for d in range(8) if s != d and 0 not in (s, d)
            and 3 not in (s, d)][:12]


def _run(tmp_path, name, **kw):
    path = tmp_path / f"{name}.h5"
    write_matrix_run(path, nranks=8, link={(0, 3): 0.25}, seed=3, retest=[(0, 3)],
                     controls=CONTROLS, **kw)
    with open_result(path, warn_incomplete=False) as result:
        return diagnose(result)


def _bw_culprits(d):
    return [c for c in d.culprits if any("ap-bw" in s for s in c.symptoms + c.evidence)]


def test_a_burst_through_the_whole_first_visit_is_a_transient_not_a_culprit(tmp_path):
    # slow all through its first visit alone (4x: the burst outlasted the visit), as fast
    # as the controls on the second: one visit would have confirmed it
    d = _run(tmp_path, "burst-first", retest_factor={(0, 3): 4.0}, second_visit={(0, 3): 1.0})
    assert not _bw_culprits(d), d.lines()
    notes = [n for n in d.notes if "serial retest" in n and "transient" in n]
    assert notes and "visit 1 of 2 only" in notes[0], d.lines()
    assert "s of the run" in notes[0], notes   # its time, on the run clock
    assert not any("transient from a fault" in b for b in d.cannot_tell_for), d.lines()


def test_a_burst_on_the_second_visit_only_is_a_transient_too(tmp_path):
    d = _run(tmp_path, "burst-second", retest_factor={(0, 3): 1.0}, second_visit={(0, 3): 4.0})
    assert not _bw_culprits(d), d.lines()
    assert any("visit 2 of 2 only" in n for n in d.notes), d.lines()


def test_a_fault_slow_on_both_visits_is_named(tmp_path):
    d = _run(tmp_path, "fault", retest_factor={(0, 3): 4.0}, second_visit={})
    named = _bw_culprits(d)
    assert d.verdict == "not fit" and named, d.lines()
    assert any("on both visits" in e for c in named for e in c.evidence), d.lines()
    assert not any("transient from a fault" in b for b in d.cannot_tell_for), d.lines()


def test_a_file_with_one_visit_is_judged_as_before_and_says_it_cannot_tell(tmp_path):
    # the same burst through the whole retest, written as runners before the second visit
    # did: confirmed as before, and the verdict says one visit cannot tell it from a fault
    d = _run(tmp_path, "one-visit", retest_factor={(0, 3): 4.0})
    named = _bw_culprits(d)
    assert d.verdict == "not fit" and named, d.lines()
    assert any("one visit" in e for c in named for e in c.evidence), d.lines()
    told = [b for b in d.cannot_tell_for if "transient from a fault" in b]
    assert told and "fh0 -> fh3" in told[0], d.cannot_tell_for
    assert any(line.startswith("cannot tell for a transient") for line in d.lines()), d.lines()


def test_the_wait_before_the_second_visits_is_no_outage(tmp_path):
    # the runner waits 100 ms before a pair's second visit: no sample in flight, by design
    d = _run(tmp_path, "wait", retest_factor={(0, 3): 1.0}, second_visit={(0, 3): 1.0})
    assert not [c for c in d.culprits if getattr(c, "window_s", None)], d.lines()


def test_accept_takes_a_one_visit_slowness_for_no_fault(tmp_path):
    path = tmp_path / "accept.h5"
    write_matrix_run(path, nranks=8, link={(0, 3): 0.25}, seed=3, retest=[(0, 3)],
                     controls=CONTROLS, retest_factor={(0, 3): 4.0}, second_visit={(0, 3): 1.0})
    with open_result(path, warn_incomplete=False) as result:
        instances = list(result.instances())
        retest = next(i for i in instances if i.get("pass") == "serial-retest")
        parallel = next(i for i in instances if i.index == int(retest.get("retest_of")))
        assert ((retest.samples()["flags"] & FLAG_RETEST_SECOND_VISIT) != 0).sum() == 10
        pool = pair_log_medians(with_derived(parallel.samples().reset_index(drop=True),
                                             parallel.sample_divisor), parallel.metric)
        judged = judge_serial_retest(retest, pool)
    j = judged.judgements[(0, 3)]
    assert j.outcome == TRANSIENT and j.slow_visit == 1 and j.visits == 2, j
    assert (0, 3) in not_failed_alone(judged)


# -- the rule on hand-built values ------------------------------------------------------

CTRL = [10.0, 10.2, 9.8, 10.1, 9.9, 10.0, 10.3, 9.7, 10.05, 9.95]   # GB/s alone


def test_both_visits_slow_confirms_one_slow_visit_is_a_transient_with_its_time():
    out = {j.pair: j for j in judge_retest_visits(
        {"fault": [3.0, 3.1], "burst": [3.0, 9.9], "late": [10.0, 2.5], "fine": [9.9, 10.1]},
        CTRL, pool=50, bandwidth=True, when={"burst": ["+1.0 to +1.1 s", "+2.0 to +2.1 s"]})}
    assert out["fault"].outcome == CONFIRMED and out["fault"].visit_ratios[0] > 3
    assert out["burst"].outcome == TRANSIENT and out["burst"].slow_visit == 1
    assert "+1.0 to +1.1 s" in out["burst"].describe() and "not a fault" in out["burst"].describe()
    assert out["late"].outcome == TRANSIENT and out["late"].slow_visit == 2
    assert out["fine"].outcome == CLEARED
    # the persisting level is the less slow visit: the transient's ratio is its fast one
    assert abs(out["burst"].ratio - 10.0 / 9.9) < 0.05
    assert not out["burst"].slow and not out["late"].slow


def test_one_visit_is_judged_exactly_as_the_single_visit_rule():
    values = {"a": 3.0, "b": 7.0, "c": 9.9}
    one = {j.pair: j for j in judge_retest(values, CTRL, pool=50, bandwidth=True)}
    visits = {j.pair: j for j in judge_retest_visits({k: [v] for k, v in values.items()}, CTRL,
                                                     pool=50, bandwidth=True)}
    for k in values:
        assert visits[k].outcome == one[k].outcome and visits[k].ratio == one[k].ratio
        assert visits[k].visits == 1
    assert "one visit" in visits["a"].describe()


def _trial(seed, pool=20_000, fault=0.0, burst=0.0, visits=2, persist=0.087):
    """The worst 3 of a healthy pool retested (as test_diagnosis_retest._trial); pair 0
    carries `fault` (log) in the pass and on every visit; each visit of each retested pair
    meets a burst of `burst` (log) with probability 1/2, independently."""
    rng = np.random.default_rng(seed)
    persistent = rng.normal(0, persist, pool)
    persistent[0] += fault
    parallel = persistent + rng.normal(0, 0.05, pool)
    worst = np.argsort(parallel)[-3:]
    alone = {int(i): [float(np.exp(persistent[i] + rng.normal(0, 0.02)
                                   + (burst if rng.random() < 0.5 else 0.0)))
                      for _ in range(visits)] for i in worst}
    ctrl = np.exp(rng.normal(0, persist, 10) + rng.normal(0, 0.02, 10))
    return judge_retest_visits(alone, ctrl, pool=pool, bandwidth=False,
                               sigma_floor=pass_sigma(np.exp(parallel), bandwidth=False))


def test_the_second_visit_spends_no_more_of_the_budget_and_keeps_the_power():
    # healthy pools: confirming on both visits is no more often than on one (an
    # intersection-union test at the same level)
    once = sum(any(j.slow for j in _trial(s, visits=1)) for s in range(60))
    twice = sum(any(j.slow for j in _trial(s, visits=2)) for s in range(60))
    assert twice <= once <= 3, (once, twice)
    # bursts of 3x on half the visits: one visit confirms about half the runs, two visits
    # (both slow in a quarter of the pairs) far fewer
    burst_once = sum(any(j.slow for j in _trial(s, burst=math.log(3), visits=1)) for s in range(60))
    burst_twice = sum(any(j.slow for j in _trial(s, burst=math.log(3), visits=2)) for s in range(60))
    assert burst_once >= 30 and burst_twice <= burst_once * 0.75, (burst_once, burst_twice)
    # a real 2x pair is confirmed on both visits as often as on one
    hits = sum(any(j.pair == 0 and j.outcome == CONFIRMED for j in _trial(s, fault=math.log(2)))
               for s in range(60))
    assert hits >= 50, hits


def test_slow_by_selection_on_both_visits_stays_selection_not_transient():
    # controls spread widely: 1.43x (7 GB/s against 10) is past the margin but under the
    # selection bar (about 4x here) on both visits: selection; 5x on one visit only: a transient
    wide = [10.0, 12.0, 8.0, 11.0, 9.0, 10.5, 9.5, 12.5, 7.5, 10.0]
    out = {j.pair: j for j in judge_retest_visits({"sel": [7.0, 7.1], "mixed": [2.0, 7.0]},
                                                  wide, pool=10**6, bandwidth=True)}
    assert out["sel"].outcome == SELECTION and out["sel"].visits == 2, out["sel"]
    assert out["mixed"].outcome == TRANSIENT and out["mixed"].slow_visit == 1, out["mixed"]
    assert out["mixed"].visit_ratios[0] > out["mixed"].bar_ratio > out["mixed"].visit_ratios[1]


def test_a_visit_with_no_valid_time_leaves_the_pair_visited_once():
    # slow on its one valid visit: confirmed, but as a one-visit pair (it cannot tell)
    j = judge_retest_visits({"p": [3.0, float("nan")]}, CTRL, pool=50, bandwidth=True)[0]
    assert j.outcome == CONFIRMED and j.visits == 1 and "one visit" in j.describe(), j
