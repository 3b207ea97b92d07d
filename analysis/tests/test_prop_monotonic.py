"""A worse planted fault never gets a kinder verdict: diagnose, accept and fit.

Synthetic clusters (fabscope_analysis.synth) with hosts, GPUs per host, the fault's kind,
its component and the noise seed drawn over their ranges; the same cluster and seed are
written with the fault at rising severity (none, mild, severe). `diagnose` must never
move toward `fit`, and neither `accept` (compute_verdict) nor any one of its checks toward
PASS, as the fault worsens: fit < cannot tell < not fit, PASS < CANNOT TELL < FAIL. A
fixture plants one severity and checks one answer; this checks the order between answers,
wherever the thresholds fall.

`fit` the same way on serving runs (analysis/tests/serving_files.py): the all-reduce and
KV times, quiet and under load, drawn; then slowed everywhere, or only under load, at
rising severity: neither the SLO verdict nor any one of its checks may move toward PASS.
"""

import contextlib
import io
import os
import re

import pytest
from hypothesis import Phase, example, given, settings, strategies as st

from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.reader import open_result
from fabscope_analysis.synth import Cluster, generate
from fabscope_analysis.verdict import compute_verdict
from serving_files import serving_file
from test_serving_fit import verdict_of

FULL = os.environ.get("FABSCOPE_FULL_TESTS") == "1"
DIAGNOSE_ORDER = {"fit": 0, "cannot tell": 1, "not fit": 2}
ACCEPT_ORDER = {"PASS": 0, "CANNOT TELL": 1, "FAIL": 2}
# kind -> (mildest, harshest) value: a time factor, or a share of stalled samples.
SEVERITY = {"slow-send": (1.05, 6.0), "slow-recv": (1.05, 6.0), "lossy": (0.002, 0.08),
            "host-pair": (1.05, 6.0)}


@st.composite
def planted_ladders(draw):
    hosts = draw(st.integers(3, 6))
    gpus = draw(st.integers(1, 2))
    kind = draw(st.sampled_from(sorted(SEVERITY)))
    host = draw(st.integers(0, hosts - 1))
    if kind == "host-pair":
        other = draw(st.integers(0, hosts - 1).filter(lambda h: h != host))
        target = f"host{host}-host{other}"
    else:
        nic = draw(st.one_of(st.none(), st.integers(0, gpus - 1)))  # none: the whole host
        target = f"host{host}" if nic is None else f"host{host}/{nic}"
    low, high = SEVERITY[kind]
    mild = draw(st.floats(low, high, allow_nan=False))
    severe = draw(st.floats(mild, high, allow_nan=False))
    return Cluster(hosts, gpus), kind, target, (mild, severe), draw(st.integers(1, 10 ** 6))


def _verdicts(path):
    """diagnose's verdict, accept's, and each accept check's state by (rule, instance)."""
    with open_result(path) as result, contextlib.redirect_stdout(io.StringIO()):
        diagnosis = diagnose(result).verdict
        verdict = compute_verdict(result)
        # A serial retest measures the pairs its parallel pass ranked worst: another fault,
        # other pairs, so its checks are not the same checks from one run to the next.
        retests = {i.index for i in result.instances() if i.get("pass") == "serial-retest"}
    line = verdict.line()
    accept = re.match(r"verdict: (PASS|FAIL|CANNOT TELL)", line)
    assert accept, f"accept's verdict line: {line!r}"
    checks = {(c.rule, c.instance): "FAIL" if not c.passed else "CANNOT TELL" if c.cannot_tell
              else "PASS" for c in verdict.checks if c.instance not in retests}
    return diagnosis, accept.group(1), checks


# A ladder is three synthetic runs diagnosed and accepted (about 1 s of CPU): few in the
# default suite, and no shrinking there (the failing ladder is printed as drawn).
@settings(max_examples=40 if FULL else 5,
          phases=list(Phase) if FULL else [Phase.explicit, Phase.reuse, Phase.generate])
@given(planted_ladders())
# A slight slowdown (inside the 90 % rules' slack) and a plain one, on one NIC's receive side.
@example((Cluster(4, 1), "slow-recv", "host1/0", (1.15, 3.0), 3))
def test_a_worse_fault_never_gets_a_kinder_verdict(tmp_path_factory, ladder):
    cluster, kind, target, values, seed = ladder
    tmp = tmp_path_factory.mktemp("ladder")
    answers = []
    for step, value in enumerate((None,) + values):
        path = tmp / f"{step}.h5"
        faults = [] if value is None else [f"{kind}:{target}:{value!r}"]
        generate(path, cluster, noise="realistic", faults=faults, seed=seed, iterations=20)
        answers.append((faults, _verdicts(path)))
    for (faults_a, (diag_a, acc_a, checks_a)), (faults_b, (diag_b, acc_b, checks_b)) in \
            zip(answers, answers[1:]):
        # diagnose's 'cannot tell' -> 'fit' is the known exception pinned below.
        assert DIAGNOSE_ORDER[diag_b] >= DIAGNOSE_ORDER[diag_a] \
            or (diag_a, diag_b) == ("cannot tell", "fit"), \
            f"diagnose: {faults_a or 'nothing'} -> {diag_a}, worse {faults_b} -> {diag_b}"
        # Check by check: no rule of the criteria is kinder to the worse fault (for the rules
        # that measure their noise from the run, no FAIL -> PASS: below).
        kinder = [f"{rule} (instance {inst}): {checks_a[key]} -> {state}"
                  for key, state in checks_b.items() for rule, inst in [key]
                  if key in checks_a and ACCEPT_ORDER[state] < ACCEPT_ORDER[checks_a[key]]
                  and not (rule in SELF_NOISE_RULES and "CANNOT TELL" in (checks_a[key], state))
                  and not _everyone_slow(rule, inst, checks_a[key], state, checks_b)]
        assert not kinder, f"{faults_a or 'nothing'} -> worse {faults_b}: " + "; ".join(kinder)
        softened = [key for key, state in checks_b.items()
                    if key in checks_a and _softened_by_own_noise(key[0], checks_a[key], state)]
        assert ACCEPT_ORDER[acc_b] >= ACCEPT_ORDER[acc_a] or softened, \
            f"accept: {faults_a or 'nothing'} -> {acc_a}, worse {faults_b} -> {acc_b}"


# Rules that measure their noise (the ranks' or pairs' spread) from the run itself, the
# fault's own effect included, so their certainty moves with the fault either way: a fault
# below the rule's threshold can narrow the spread (CANNOT TELL -> PASS, right), a worse one
# widen it until the rule cannot tell what it failed before (FAIL -> CANNOT TELL, pinned by
# the strict xfails below; CANNOT TELL alone does not fail accept). FAIL -> PASS stays
# forbidden for them too.
SELF_NOISE_RULES = ("no straggler rank", "uniform pair bandwidth")


def _softened_by_own_noise(rule, before, after):
    return rule in SELF_NOISE_RULES and (before, after) == ("FAIL", "CANNOT TELL")


# `no straggler rank` asks whether one rank stands out from the run's median rank. A fault
# that reaches every rank (a lossy host on 4 hosts: every rank sends to it) lifts the median
# with it, and no rank stands out any more: FAIL -> PASS of that check is its question
# answered, not a kinder verdict, as long as the instance is still failed by a rule that
# judges it on its own (an absolute limit). Pinned by test_a_lossy_host_everyone_reaches_*.
RELATIVE_TO_THE_RUN = ("no straggler rank",)


def _everyone_slow(rule, instance, before, after, worse_checks):
    return (rule in RELATIVE_TO_THE_RUN and (before, after) == ("FAIL", "PASS")
            and any(state == "FAIL" for (r, i), state in worse_checks.items()
                    if i == instance and r != rule))


def _ladder_states(tmp_path, cluster, kind, target, values, seed):
    out = []
    for value in values:
        path = tmp_path / f"{value}.h5"
        faults = [] if value is None else [f"{kind}:{target}:{value}"]
        generate(path, cluster, noise="realistic", faults=faults, seed=seed, iterations=20)
        out.append(_verdicts(path))
    return out


def test_a_worse_straggler_is_never_less_certain(tmp_path):
    """A slow receiving NIC (host0/0 of 5 hosts x 2 GPUs) at 3x fails `no straggler rank`
    (rank 0 at 2.0x the median); at 4x the four ranks it slows spread the ranks' p99s by 43 %
    about their median, which made the rule CANNOT TELL while it measured the spread by the
    MAD. Measured by pairwise distances (Qn) the slowed group widens nothing: still FAIL."""
    states = [checks[("no straggler rank", 0)] for _, _, checks in _ladder_states(
        tmp_path, Cluster(5, 2), "slow-recv", "host0/0", (3.0, 4.0), 131201)]
    assert ACCEPT_ORDER[states[1]] >= ACCEPT_ORDER[states[0]], states


@pytest.mark.xfail(strict=True, reason=(
    "accept's 'no straggler rank' measures each rank's p99 against the median rank's: a lossy "
    "host2 on 4 hosts x 1 GPU (seed 1000001) stalls 3.1 % of its samples and rank 2's p99 is "
    "539x the median (FAIL); at 8 % the ranks it talks to hold stalls too, the median rank's p99 "
    "rises from 3.03 us to 929 us and no rank stands out (PASS). The instance stays failed by "
    "its absolute p99 limit (test_a_lossy_host_everyone_reaches_still_fails_the_instance)"))
def test_a_lossy_host_everyone_reaches_never_passes_the_straggler_rule(tmp_path):
    states = [checks[("no straggler rank", 0)] for _, _, checks in _ladder_states(
        tmp_path, Cluster(4, 1), "lossy", "host2", (0.031, 0.08), 1000001)]
    assert ACCEPT_ORDER[states[1]] >= ACCEPT_ORDER[states[0]], states


def test_a_lossy_host_everyone_reaches_still_fails_the_instance(tmp_path):
    """The same ladder: the straggler rule loses its FAIL (above), the latency limit of the
    same instance takes it over, and the run stays FAIL."""
    (_, acc_a, checks_a), (_, acc_b, checks_b) = _ladder_states(
        tmp_path, Cluster(4, 1), "lossy", "host2", (0.031, 0.08), 1000001)
    assert (checks_a[("no straggler rank", 0)], checks_b[("no straggler rank", 0)]) == ("FAIL", "PASS")
    assert checks_b[("small-message latency (quiet)", 0)] == "FAIL", checks_b
    assert acc_a == acc_b == "FAIL"
    assert _everyone_slow("no straggler rank", 0, "FAIL", "PASS", checks_b)


@pytest.mark.xfail(strict=True, reason=(
    "diagnose says 'cannot tell' on a clean 3-host x 2-GPU fabric (seed 608787) and 'fit' "
    "once host0 receives 1.25x slower: a fault makes it more certain the fabric is fit"))
def test_a_slower_nic_never_makes_diagnose_surer_of_fit(tmp_path):
    (clean, _, _), (slow, _, _) = _ladder_states(
        tmp_path, Cluster(3, 2), "slow-recv", "host0", (None, 1.251953125), 608787)
    assert DIAGNOSE_ORDER[slow] >= DIAGNOSE_ORDER[clean], (clean, slow)


def test_a_lossy_nic_never_hides_a_slow_pair(tmp_path):
    """A clean 4-host fabric (seed 43056) where accept fails a pair at 81 % of the median,
    confirmed slow alone; a lossy NIC on another host must not hide it. The generator draws
    a fault's stalls from a stream of their own (common random numbers), so both runs have
    the same noise sample for sample: before it did, the lossy NIC's draws reshuffled every
    later sample, the retest measured the pair at 1.25x its controls instead of 1.28x, on
    the retest rule's margin, and cleared it (FAIL -> CANNOT TELL from a fresh noise draw,
    not from the fault)."""
    (_, clean, _), (_, lossy, _) = _ladder_states(
        tmp_path, Cluster(4, 1), "lossy", "host0", (None, 0.002), 43056)
    assert ACCEPT_ORDER[lossy] >= ACCEPT_ORDER[clean], (clean, lossy)


@st.composite
def serving_ladders(draw):
    tp_us = draw(st.floats(5.0, 60.0))
    kv_ms = draw(st.floats(10.0, 600.0))
    loaded = draw(st.floats(1.0, 2.5))
    where = draw(st.sampled_from(["everywhere", "under load"]))
    mild = draw(st.floats(1.0, 3.0))
    severe = draw(st.floats(mild, 3.0))
    return tp_us, kv_ms, loaded, where, (1.0, mild, severe), draw(st.integers(1, 10 ** 6))


@settings(max_examples=40 if FULL else 5)
@given(serving_ladders())
@example((20.0, 40.0, 1.3, "under load", (1.0, 1.5, 2.5), 5))  # itl_p99 PASS -> FAIL at 2.0
def test_a_slower_fabric_never_gets_a_kinder_fit(tmp_path_factory, ladder):
    tp_us, kv_ms, loaded, where, severities, seed = ladder
    tmp = tmp_path_factory.mktemp("fit-ladder")
    answers = []
    for step, slower in enumerate(severities):
        base = slower if where == "everywhere" else 1.0
        factor = loaded * (slower if where == "under load" else 1.0)
        path = serving_file(tmp / f"{step}.h5", seed=seed, tp_us=tp_us * base, kv_ms=kv_ms * base,
                            tp_loaded=(("incast", factor),), kv_loaded=(("incast", factor),))
        verdict = verdict_of(path, "itl_p99=50ms,ttft_p99=2s")
        answers.append((slower, verdict.status, {c.name: c.status for c in verdict.checks}))
    for (s_a, fit_a, checks_a), (s_b, fit_b, checks_b) in zip(answers, answers[1:]):
        what = f"times x{s_a:g} -> x{s_b:g} {where}"
        assert ACCEPT_ORDER[fit_b] >= ACCEPT_ORDER[fit_a], f"fit {what}: {fit_a} -> {fit_b}"
        kinder = [f"{name}: {checks_a[name]} -> {state}" for name, state in checks_b.items()
                  if name in checks_a and ACCEPT_ORDER[state] < ACCEPT_ORDER[checks_a[name]]]
        assert not kinder, f"fit {what}: " + "; ".join(kinder)
