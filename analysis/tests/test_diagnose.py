"""diagnose: rates over seeded synthetic clusters with planted components, plus the
command-line, validity and retest promises on small hand-made files."""

import json
import time
from pathlib import Path
from types import SimpleNamespace

import h5py
import numpy as np
import pandas as pd
import pytest

from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.diagnosis import evidence
from fabscope_analysis.diagnosis.model import Layout, fit, pair_data
from fabscope_analysis.inference import benjamini_hochberg
from fabscope_analysis.reader import open_result
from fabscope_analysis.synth import Cluster, generate
from helpers import run_cli
from synthetic import SyntheticRun, latency_entries, make_samples, write_matrix_run
from contracts import outcome_contract

# 8 hosts x 4 GPUs in 4 leaves: every component kind exists (NICs, hosts, host pairs,
# leaves of two hosts), small enough for a few seeds per case in seconds.
SMALL = Cluster(hosts=8, gpus=4, leaves=4)
RACKS = Cluster(hosts=16, gpus=8, leaves=4)


def _diagnose(path, **kw):
    with open_result(path, warn_incomplete=False) as result:
        return diagnose(result, **kw)


def _named(d):
    return {c.host: c.direction for c in d.culprits}


def _planted(tmp_path, cluster, faults, seed, noise="realistic", **kw):
    path = tmp_path / f"s{seed}.h5"
    truth = generate(path, cluster, noise=noise, faults=faults, seed=seed, controls=10, **kw)
    d = _diagnose(path)
    path.unlink()
    return d, truth["faults"]


def _right(c, fault) -> bool:
    """The culprit names the planted component (synth's truth)."""
    component = fault["component"]
    if component in ("nic", "host"):
        return (c.component == component and c.host == fault["hosts"][0]
                and c.direction == fault["side"]
                and (component == "host" or sorted(c.ranks) == fault["ranks"]))
    if component == "gpu-pair":
        return c.component == "link" and sorted(c.ranks) == fault["ranks"]
    if component == "host-pair":
        return c.component == "host-pair" and sorted([c.host, c.peer_host]) == fault["hosts"]
    # a slow or oversubscribed uplink is the leaf's in synth's truth; naming the leaf's
    # uplinks (diagnosis/paths.py) is that component, one step finer
    return c.component in ("leaf", "uplink") and c.host == fault["leaf"]


def test_the_fit_recovers_class_row_and_column_effects(tmp_path):
    path = tmp_path / "ideal.h5"
    generate(path, SMALL, noise="ideal", faults=["slow-send:host2/1:2.0", "slow-recv:host6/3:3.0"],
             seed=3, patterns=["all-pairs"])
    with open_result(path, warn_incomplete=False) as r:
        layout = Layout.of(r)
        bw = [i for i in r.instances() if i.metric == "bandwidth" and i.get("pass") == "parallel"][0]
        f = fit(pair_data(bw, layout.n), layout)
    assert f.sigma_e < 0.03
    assert abs(f.send[9] - np.log(2.0)) < 0.05 and abs(f.recv[27] - np.log(3.0)) < 0.05
    others = np.delete(np.r_[f.send, f.recv], [9, 32 + 27])
    assert np.max(np.abs(others)) < 0.05


@pytest.mark.parametrize("cluster", [SMALL, RACKS], ids=["8x4", "16x8"])
def test_clean_fabrics_with_realistic_noise_are_fit(tmp_path, cluster):
    # host, pair and sample spread, rare ms hiccups, ECMP collisions under load: no
    # culprit, and the collisions are a congestion finding whose retested pairs clear
    seeds = range(1, 5) if cluster is SMALL else range(1, 3)
    verdicts = []
    for seed in seeds:
        d, _ = _planted(tmp_path, cluster, [], seed)
        verdicts.append(d.verdict)
        assert not d.culprits, d.lines()
        assert d.congestion and all(c.cleared_alone == c.retested for c in d.congestion), d.lines()
    assert verdicts.count("fit") == len(verdicts), verdicts


CASES = {
    "slow send host": "slow-send:host5",
    "slow receive NIC": "slow-recv:host5/2",
    "slow send NIC": "slow-send:host3/1",
    "lossy NIC": "lossy:host5/2:0.02",
    "lossy host": "lossy:host5",
    "flapping NIC": "flapping:host4/3",
    "bad GPU pair": "bad-pair:host2/1-host6/3",
    "host pair (cable)": "host-pair:host2-host6",
    "slow uplink": "slow-uplink:leaf1",
    "uplink slow only under load": "oversubscribed-uplink:leaf2",
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_planted_fault_is_named_as_its_component(tmp_path, case):
    right = false = 0
    for seed in range(1, 4):
        d, faults = _planted(tmp_path, SMALL, [CASES[case]], seed)
        right += any(_right(c, faults[0]) for c in d.culprits)
        false += sum(1 for c in d.culprits if not _right(c, faults[0]))
    assert right >= 2 and false <= 1, (case, right, false)


def test_two_faults_on_racks_and_their_victims(tmp_path):
    d, faults = _planted(tmp_path, RACKS, ["slow-recv:host3", "lossy:host9/4:0.01"], 7)
    assert all(any(_right(c, f) for c in d.culprits) for f in faults), d.lines()
    assert len(d.culprits) == 2, d.lines()


def test_a_pattern_other_than_all_pairs_is_fitted(tmp_path):
    # a thinned all-pairs and the hierarchical pattern give each rank a few peers:
    # fitted on the pairs present, not "cannot tell"; the slow host's receive side is
    # named and nobody else (on a thinned matrix some of its NICs may lack the power
    # to be grouped as the whole host; a pair into it confirmed alone is a link)
    for kw in (dict(patterns=["all-pairs"], budget_keep=0.3), dict(patterns=["hierarchical"])):
        d, faults = _planted(tmp_path, SMALL, ["slow-recv:host5"], 2, **kw)
        assert d.culprits and all("host5" in (c.host, c.peer_host) and c.direction != "send"
                                  for c in d.culprits), (kw, d.lines())
    d, faults = _planted(tmp_path, SMALL, ["slow-recv:host5"], 2, patterns=["hierarchical"])
    assert any(_right(c, faults[0]) for c in d.culprits), d.lines()


def test_benjamini_hochberg_adjusts_over_the_family():
    rejected, q = benjamini_hochberg(np.array([0.001, 0.02, 0.03, 0.5]), evidence.Q)
    assert rejected.tolist() == [True, True, True, False]
    assert q.tolist() == pytest.approx([0.004, 0.04, 0.04, 0.5])
    rejected, _ = benjamini_hochberg(np.full(100, 0.01), evidence.Q)
    assert rejected.all()
    rejected, _ = benjamini_hochberg(np.r_[0.01, np.full(99, 0.9)], evidence.Q)
    assert not rejected.any()


@pytest.mark.parametrize("seed", range(4))
def test_noise_only_names_nobody(tmp_path, seed):
    # widely spread pairs on 16 ranks: hundreds of tests at 5 %, none over its family
    path = tmp_path / "noise.h5"
    write_matrix_run(path, nranks=16, seed=seed, pair_noise=0.25, jitter=0.1)
    d = _diagnose(path)
    assert not d.culprits, d.lines()


def test_a_real_emulated_run_names_exactly_its_planted_hosts():
    # tests/system/diagnose_emulated.sh, 6 ranks on 2 CPUs with other work: fdiag3
    # receive limited, fdiag5 send limited, fdiag1 lossy (its tails only)
    path = Path(__file__).parent / "data" / "emulated-6-hosts-planted.h5"
    d = _diagnose(path)
    assert _named(d) == {"fdiag3": "receive", "fdiag5": "send", "fdiag1": "both"}, d.lines()
    assert any("tail" in s for c in d.culprits if c.host == "fdiag1" for s in c.symptoms)


def test_too_few_ranks_cannot_tell(tmp_path):
    path = tmp_path / "three.h5"
    write_matrix_run(path, nranks=3, receive={2: 0.3})
    d = _diagnose(path)
    assert d.verdict == "cannot tell"
    assert "at least 4" in d.first_line()


def test_a_run_too_noisy_to_detect_a_fault_says_how_much_more_would_tell(tmp_path):
    path = tmp_path / "noisy.h5"
    write_matrix_run(path, nranks=8, pair_noise=0.9, seed=3)
    d = _diagnose(path)
    assert d.verdict == "cannot tell", d.lines()
    assert "smallest rank-side effect it could detect" in d.first_line()
    assert "iterations" in d.first_line() or "will not separate" in d.first_line()


def test_no_pair_test_cannot_tell(tmp_path):
    path = tmp_path / "pairs-only.h5"
    run = SyntheticRun(path, nranks=4)
    run.add_test("pingpong", "latency",
                 make_samples(latency_entries([(0, 1), (2, 3)], 50, 2000, run.rng),
                              run.start_ns()), nbytes=8, divisor=2)
    run.close()
    d = _diagnose(path)
    assert d.verdict == "cannot tell"
    assert "no quiet pair test" in d.first_line()


def test_retest_without_controls_says_so(tmp_path):
    path = tmp_path / "retest.h5"
    write_matrix_run(path, receive={2: 0.3}, retest=[(0, 2), (1, 2)])
    d = _diagnose(path)
    assert any("neither clear nor confirm" in n for n in d.notes), d.notes


def test_a_link_slow_alone_is_named_and_one_slow_only_under_load_is_congestion(tmp_path):
    controls = [(s, d) for s in range(8) for d in range(8) if s != d and 0 not in (s, d)
                and 3 not in (s, d)][:12]
    named = tmp_path / "alone.h5"
    write_matrix_run(named, nranks=8, link={(0, 3): 0.25}, seed=3, retest=[(0, 3)],
                     controls=controls)
    d = _diagnose(named)
    assert [(c.component, c.host, c.peer_host) for c in d.culprits] == [("link", "fh0", "fh3")]
    assert "confirmed slow alone" in " ".join(d.culprits[0].evidence)
    loaded = tmp_path / "load.h5"
    write_matrix_run(loaded, nranks=8, link={(0, 3): 0.25}, seed=3, retest=[(0, 3)],
                     controls=controls, retest_factor={(0, 3): 1.0})
    d = _diagnose(loaded)
    # the bandwidth test's link cleared alone: congestion, not a culprit (the latency
    # test, not retested, may still name the round trip)
    assert not any("ap-bw" in s for c in d.culprits for s in c.symptoms), d.lines()
    bw = [c for c in d.congestion if c.test.endswith("ap-bw")]
    assert bw and bw[0].cleared_alone == 1 and bw[0].retested == 1, d.lines()
    # the finding as diagnose prints it (docs/analysis.md): its kind, test, share and retest
    line = [x for x in d.lines() if x and x.startswith(f"congestion or routing in {bw[0].test}: ")]
    assert line and "1/1 retested alone were not slow (as fast as the controls, or within their noise): slow only under load" in line[0], d.lines()


@outcome_contract("diagnose", 0, "fit")
@outcome_contract("diagnose", 1, "not fit")
@outcome_contract("diagnose", 2, "—")
def test_cli_exit_codes_first_line_and_json(tmp_path):
    bad = tmp_path / "bad.h5"
    write_matrix_run(bad, receive={2: 0.3})
    out = tmp_path / "d.json"
    p = run_cli("diagnose", bad, "--json", out)
    assert p.returncode == 1, p.stderr
    assert p.stdout.splitlines()[0] == "not fit: 1 culprit"
    assert p.stdout.splitlines()[1].startswith("fh2 (rank 2, gpu -, nic eth0) receive:")
    doc = json.loads(out.read_text())
    assert doc["verdict"] == "not fit" and doc["culprits"][0]["host"] == "fh2"
    assert doc["culprits"][0]["component"] == "host" and doc["culprits"][0]["subject"] == "fh2"
    good = tmp_path / "good.h5"
    write_matrix_run(good, seed=9)
    p = run_cli("diagnose", good)
    assert p.returncode == 0 and p.stdout.splitlines()[0] == "fit"
    p = run_cli("diagnose", tmp_path / "missing.h5")
    assert p.returncode == 2 and "no such file" in p.stderr


def test_baseline_sees_a_uniformly_slower_fabric(tmp_path):
    base, slow = tmp_path / "base.h5", tmp_path / "slow.h5"
    write_matrix_run(base, seed=1)
    write_matrix_run(slow, seed=2, send={r: 0.5 for r in range(6)})
    with open_result(slow, warn_incomplete=False) as r, \
            open_result(base, warn_incomplete=False) as b:
        assert diagnose(r).verdict == "fit"  # nothing stands out inside the run
        d = diagnose(r, baseline=b)
    assert d.verdict == "not fit"
    assert d.culprits[0].host == "(all hosts)"


def test_256_ranks_in_reasonable_time(tmp_path):
    path = tmp_path / "big.h5"
    truth = generate(path, Cluster(32, 8, 8), noise="realistic-quiet", faults=["slow-recv:host17/3"],
                     seed=5, patterns=["all-pairs"], iterations=5)
    start = time.monotonic()
    d = _diagnose(path)
    elapsed = time.monotonic() - start
    print(f"diagnose on 256 ranks (65,280 pairs): {elapsed:.1f} s")
    assert [c.subject() for c in d.culprits if _right(c, truth["faults"][0])], d.lines()
    assert elapsed < 60


def test_report_puts_the_verdict_before_the_run_metadata(tmp_path):
    path = tmp_path / "recv.h5"
    write_matrix_run(path, receive={2: 0.3})
    html = tmp_path / "r.html"
    p = run_cli("report", path, "-o", html)
    assert p.returncode == 0, p.stderr
    text = html.read_text()
    assert "not fit: 1 culprit" in text
    assert text.index('id="verdict"') < text.index("run id")
    assert "fh2" in text[text.index('id="verdict"'):text.index("run id")]


def test_accept_fails_a_check_named_after_each_culprit(tmp_path):
    path = tmp_path / "two.h5"
    write_matrix_run(path, nranks=8, receive={1: 0.3}, send={5: 0.5})
    criteria = tmp_path / "c.yaml"
    criteria.write_text("fabscope_criteria: 1\nallowed_status: [passed]\ndiagnose: true\n"
                        "rules:\n  - {name: samples, match: {kind: \"*\"}, limits: {samples: {min: 1}}}\n")
    junit = tmp_path / "j.xml"
    p = run_cli("accept", path, "--criteria", criteria, "--junit", junit)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "FAIL  diagnose: fh1" in p.stdout and "FAIL  diagnose: fh5" in p.stdout
    xml = junit.read_text()
    assert 'classname="fabscope.accept.diagnose" name="fh1"' in xml
    assert 'classname="fabscope.accept.diagnose" name="fh5"' in xml


OVERSUBSCRIBED = "6 ranks may run on only 2 CPU(s) of one machine"


def test_a_host_slowed_by_its_own_validity_finding_is_not_blamed(tmp_path):
    path = tmp_path / "explained.h5"
    write_matrix_run(path, receive={2: 0.3},
                     validity=[("fh2", "oversubscribed", 6, 2, OVERSUBSCRIBED)])
    d = _diagnose(path)
    assert "fh2" not in _named(d), d.lines()
    # someone stood out and only validity explains it: "cannot tell", never "fit"
    assert d.verdict == "cannot tell", d.lines()
    assert any("fh2 stands out" in n and "not named" in n for n in d.reasons), d.reasons


def test_shared_cpus_on_every_host_widen_the_noise_but_do_not_withhold(tmp_path):
    path = tmp_path / "everywhere.h5"
    write_matrix_run(path, receive={2: 0.3},
                     validity=[("*", "oversubscribed", 6, 2, OVERSUBSCRIBED)])
    d = _diagnose(path)
    assert _named(d) == {"fh2": "receive"}, d.lines()
    assert any("validity: oversubscribed" in e for e in d.culprits[0].evidence)
    assert any("widened 1.5x" in n for n in d.notes), d.notes
    # a milder receiver named on a machine of its own is not named when shared CPUs
    # widen the noise
    mild = dict(nranks=8, receive={2: 0.75}, pair_noise=0.08, seed=4)
    own, shared = tmp_path / "own.h5", tmp_path / "shared.h5"
    write_matrix_run(own, **mild)
    write_matrix_run(shared, validity=[("*", "oversubscribed", 8, 2, OVERSUBSCRIBED),
                                       ("*", "busy_host", 1.0, 0.5, "busy")], **mild)
    assert _named(_diagnose(own)) == {"fh2": "receive"}
    assert "fh2" not in _named(_diagnose(shared))


def test_a_finding_on_another_host_explains_nothing_here(tmp_path):
    path = tmp_path / "elsewhere.h5"
    write_matrix_run(path, receive={2: 0.3}, validity=[("fh4", "busy_host", 5.0, 2, "busy")])
    assert _named(_diagnose(path)) == {"fh2": "receive"}


def test_naming_from_pairs_needs_four_ranks_in_a_test(tmp_path):
    """Three ranks (every pair measured) are too few to tell a rank from its pairs: cannot
    tell, with the count; four are enough."""
    three, four = tmp_path / "three.h5", tmp_path / "four.h5"
    write_matrix_run(three, nranks=3)
    write_matrix_run(four, nranks=4)
    d = _diagnose(three)
    assert d.verdict == "cannot tell"
    assert d.reasons == [f"{label}: 3 ranks measured; naming a culprit from pairs needs at least 4"
                         for label in ("0000 ap-lat", "0001 ap-bw")]
    d = _diagnose(four)
    assert d.verdict == "fit", d.lines()
    assert not [n for n in d.reasons + d.notes if "ranks measured" in n], d.lines()


def _retransmitting_host_counters(nranks=8, ranks_per_host=2, host_rank=2):
    """TCP counters read once per host: 20,000 segments out, 2 retransmitted, 1,000 on the
    host of `host_rank` (5 %; the median host 0.01 %)."""
    rows = []
    for r in range(0, nranks, ranks_per_host):
        rows += [(r, "snmp:Tcp", "OutSegs", 0, 20_000),
                 (r, "snmp:Tcp", "RetransSegs", 0, 1_000 if r == host_rank else 2)]
    return rows


def test_retransmissions_support_a_culprit_and_never_name_a_host_by_themselves(tmp_path):
    """TCP retransmissions are supporting evidence: on a clean fabric a host retransmitting
    500x the median host's share is not a culprit; with its NIC slow they are listed in the
    culprit's evidence, with the rate and the median host's."""
    clean, slow = tmp_path / "clean.h5", tmp_path / "slow.h5"
    write_matrix_run(clean, nranks=8, ranks_per_host=2, counters=_retransmitting_host_counters())
    write_matrix_run(slow, nranks=8, ranks_per_host=2, counters=_retransmitting_host_counters(),
                     send={2: 0.3})
    d = _diagnose(clean)
    assert d.verdict == "fit" and not d.culprits, d.lines()
    d = _diagnose(slow)
    assert [(c.ranks, c.direction) for c in d.culprits] == [([2], "send")], d.lines()
    assert "retransmissions 5.00% of its segments (median host 0.01%)" in d.culprits[0].evidence, d.lines()


@pytest.mark.parametrize("bars, said", [
    ((3.456, 1.2, 3.0), "is named from 3.46x the time its ends predict (a normal spread would name it from 1.20x)"),
    ((150.0, 1.2, 2.0), "is named from over 100x (in practice none) the time its ends predict"),
    ((1.25, 1.0, 5.0), None),         # exactly at the margin: not over it
    ((1.32, 1.2, 5.0), None),         # exactly 1.1x the normal null's bar
])
def test_a_heavy_tail_is_a_blind_spot_when_its_bar_is_over_the_margin_and_the_normal_nulls(monkeypatch, bars, said):
    """The heavy-tail line: said when the bar a single pair must pass is over 1.1x the
    normal null's and over the margin (1.25x), with both bars; past 100x "in practice none"."""
    from types import SimpleNamespace
    from fabscope_analysis.diagnosis import core, pair_null
    monkeypatch.setattr(pair_null, "link_bars", lambda *args: bars)
    run = SimpleNamespace(widen=1.0, q_family=0.05, layout=None, heavy_links=[])
    core._Run._heavy_tail(run, None, "0001 ap-lat")
    if said is None:
        assert run.heavy_links == []
    else:
        assert len(run.heavy_links) == 1 and said in run.heavy_links[0], run.heavy_links
        assert run.heavy_links[0].startswith(f"0001 ap-lat: healthy pairs between hosts have a heavy tail (their "
                                             f"fast side a Student-t of {bars[2]:g} degrees of freedom)")


def test_a_run_of_one_test_still_judges_its_ranks_stalls_over_the_run(tmp_path):
    """The bandwidth test alone (8 ranks, rank 3 stalling 5 % of its samples): the
    family of stalls over every test runs over that one test too, names fh3 from its 11 of
    14 pairs, and says how much a NIC stalling 1 % could be found (14 pairs per rank)."""
    path = tmp_path / "one-test.h5"
    write_matrix_run(path, nranks=8, lossy={3: 0.05})
    with h5py.File(path, "r+") as f:
        del f["tests/0000"]   # the latency test: the bandwidth test is the run's only one
    d = _diagnose(path)
    fh3, = d.culprits
    assert (fh3.host, fh3.direction) == ("fh3", "both"), d.lines()
    assert fh3.symptoms[0] == ("tail: 11/14 of its pairs over 1 test(s), both directions, stalled beyond 5x their "
                               "median (0.2 expected from the other pairs), 5.95% of its samples (typical rank: "
                               "0.000%) [0001 ap-bw]"), fh3.symptoms
    assert d.cannot_tell_for == ["lossy or flapping NICs: a NIC stalling 1 % of its samples would be found with 1 % "
                                 "power from 14 pairs per rank (80 % needed): measure more pairs per rank "
                                 "(all-pairs, a larger budget) or more iterations"], d.cannot_tell_for


def test_a_flapping_host_of_two_gpus_stands_out_of_the_pairs_that_touch_neither_of_them(tmp_path):
    """8 hosts x 2 GPUs, host6 flapping: in the latency test its 15 pairs (the one inside
    the host counted once) stall against the 3.3 % of the pairs that touch neither of its
    GPUs, so the test names it by itself as well as the family over both tests."""
    path = tmp_path / "flapping.h5"
    generate(path, Cluster(8, 2, 2), faults=["flapping:host6"], seed=5)
    d = _diagnose(path)
    host6, = d.culprits
    assert host6.host == "host6" and host6.symptoms[1] == (
        "tail: 5/15 of its pairs stalled beyond 5x their median, 8.33% of its samples (other pairs: 3.3% "
        "stalled; typical side: 0.000% of samples) [0000 ap-latency]"), d.lines()


def test_a_clean_two_leaf_fabric_says_its_heavy_tail_and_the_slow_pairs_no_retest_measured(tmp_path):
    """8 hosts x 2 GPUs in 2 leaves, realistic noise, seed 4: the bandwidth test's pairs
    between hosts have a heavy tail (fitted on those pairs, not on the pairs inside a
    host), a blind spot for single GPU pairs; of its 13 slow pairs between leaves the
    retest measured 3 alone, so 10 stay ECMP-collision-like."""
    path = tmp_path / "clean.h5"
    generate(path, Cluster(8, 2, 2), seed=4)
    d = _diagnose(path)
    assert d.verdict == "fit", d.lines()
    heavy = [b for b in d.cannot_tell_for if b.startswith("single GPU pairs within the heavy tail")]
    assert heavy == ["single GPU pairs within the heavy tail of the healthy ones: 0002 ap-bandwidth: healthy "
                     "pairs between hosts have a heavy tail (their fast side a Student-t of 7 degrees of "
                     "freedom), so a single GPU pair is named from 1.80x the time its ends predict (a normal "
                     "spread would name it from 1.30x)"], d.cannot_tell_for
    congestion, = [c for c in d.lines() if c.startswith("congestion or routing in 0002 ap-bandwidth")]
    assert "13/240 pairs" in congestion and "(100% of them between leaves); 3/3 retested alone" in congestion
    assert ("0002 ap-bandwidth: 10 pair(s) between leaves slow under load and not measured alone: an ECMP "
            "collision looks the same (a serial retest, as all-pairs runs, would tell)") in d.notes, d.notes


def test_a_serial_retest_of_two_pairs_is_no_pairs_test(tmp_path):
    """The retest measures two pairs, each rank one peer, like a pairs test; but the median
    of two pairs is no typical pair: the links it retested (fh4 -> fh5 slow on its first
    visit alone only, a transient) get no "pairs test" evidence."""
    path = tmp_path / "two-retested.h5"
    write_matrix_run(path, nranks=8, link={(0, 3): 0.4, (4, 5): 0.4}, seed=5, retest=[(0, 3), (4, 5)],
                     controls=[(1, 6), (2, 7), (6, 1)], retest_factor={(0, 3): 1.0}, second_visit={(4, 5): 0.4})
    d = _diagnose(path)
    assert [(c.host, c.direction, c.evidence) for c in d.culprits] == [
        ("fh0", "link", ["residual z=59.3, q=5.1e-192 after both ends' effects"]),
        ("fh4", "link", ["residual z=57.0, q=1.2e-163 after both ends' effects"])], d.lines()


def test_a_noise_free_fabric_of_four_hosts_is_fit_without_a_heavy_tail(tmp_path):
    """The generator's ideal noise on 4 hosts: every pair exactly what its ends predict (no
    residual spread, so no bar for a single pair to pass and no tail to fit): fit, with
    the tail test's power the only blind spot."""
    path = tmp_path / "ideal.h5"
    generate(path, Cluster(4), noise="ideal", seed=1)
    d = _diagnose(path)
    assert d.verdict == "fit" and not d.culprits, d.lines()
    assert d.cannot_tell_for == ["lossy or flapping NICs: a NIC stalling 1 % of its samples would be found with "
                                 "25 % power from 9 pairs per rank (80 % needed): measure more pairs per rank "
                                 "(all-pairs, a larger budget) or more iterations"], d.lines()


def test_pair_data_leaves_out_a_sample_of_a_rank_or_peer_just_outside_the_run():
    """Ranks of a run of n are 0 .. n-1: a sample naming rank or peer n (a file at odds with
    its own rank count) is no pair of the run, as is one beyond it."""
    rows = [(s, r, it, 1000, 10_000 * it, 10_000 * it + 100 + it) for s, r in ((0, 1), (1, 2), (2, 0))
            for it in range(4)]
    rows += [(3, 0, 0, 1000, 0, 500), (0, 3, 0, 1000, 0, 500), (4, 1, 0, 1000, 0, 500)]
    frame = pd.DataFrame(rows, columns=["rank", "peer", "iter", "bytes", "t_post_ns", "t_done_ns"]).assign(flags=0)
    inst = SimpleNamespace(metric="latency", samples=lambda: frame)
    d = pair_data(inst, 3)
    assert (d.s.tolist(), d.r.tolist(), d.samples.tolist()) == ([0, 1, 2], [1, 2, 0], [4, 4, 4])
