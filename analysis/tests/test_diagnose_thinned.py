"""diagnose on a budget-thinned all-pairs run (a tenth of the rounds: about 13 peers per
rank and test, 3 of them inside its leaf) and on what a run cannot see.

16 hosts x 8 GPUs in 4 leaves, realistic noise, seeded: a slow uplink is named as its
leaf (not as NICs of the leaf's hosts), a lossy NIC and a slow NIC send side as those
NICs, a clean fabric fit with `cannot tell for single GPU pairs` (most pairs were not
measured), and a two-leaf fabric says it cannot tell its uplinks. The rates over many
seeds are tests/bench/verdicts_at_scale.py's (docs/analysis.md).
"""
import contextlib
import io
import sys
from pathlib import Path

import pytest

from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.reader import open_result
from fabscope_analysis.synth import Cluster, generate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "bench"))
from synth_scoring import score  # noqa: E402

RACKS = Cluster(16, 8, 4)
CASES = {"clean": [], "slow-uplink": ["slow-uplink:leaf2"], "lossy": ["lossy:host6/1:0.01"],
         "slow-send": ["slow-send:host5/4"]}


@pytest.fixture(scope="module")
def thinned(tmp_path_factory):
    """case -> (diagnosis, its score against what was planted), seed 1, budget 10 %."""
    out, tmp = {}, tmp_path_factory.mktemp("thinned")
    for case, faults in CASES.items():
        path = tmp / f"{case}.h5"
        truth = generate(path, RACKS, noise="realistic", faults=faults, seed=1, budget_keep=0.1)
        with open_result(path) as result, contextlib.redirect_stdout(io.StringIO()):
            d = diagnose(result)
        out[case] = (d, score(d, truth))
        path.unlink()
    return out


def test_a_slow_uplink_is_its_leaf_not_the_nics_of_its_hosts(thinned):
    d, s = thinned["slow-uplink"]
    assert s["faults"] == ["right"], d.lines()
    assert [c.component for c in d.culprits] == ["leaf"], d.lines()


@pytest.mark.parametrize("case", ["lossy", "slow-send"])
def test_a_nic_fault_is_that_nic(thinned, case):
    d, s = thinned[case]
    assert s["verdict"] == "not fit" and s["faults"] == ["right"] and s["false"] == 0, d.lines()


def test_a_clean_thinned_fabric_is_fit_and_cannot_tell_for_the_pairs_it_did_not_measure(thinned):
    d, s = thinned["clean"]
    assert s["verdict"] == "fit" and s["culprits"] == 0, d.lines()
    assert any(b.startswith("single GPU pairs") for b in d.cannot_tell_for), d.cannot_tell_for
    assert d.first_line().startswith("fit; cannot tell for single GPU pairs"), d.first_line()
    assert d.to_dict()["cannot_tell_for"] == d.cannot_tell_for
    # the counts: of 128 x 127 / 2 rank pairs and 16 x 15 / 2 host pairs, the share to 0.1 %
    import re
    line = next(b for b in d.cannot_tell_for if b.startswith("single GPU pairs"))
    measured, pairs, share, hosts, host_pairs = re.search(
        r"the tests measured (\d+) of (\d+) rank pairs \(([\d.]+) %\) and (\d+) of (\d+) host pairs", line).groups()
    assert (int(pairs), int(host_pairs)) == (8128, 120), line
    assert share == f"{100 * int(measured) / 8128:.1f}" and 0 < int(measured) < 8128 and int(hosts) <= 120, line
    # 4 leaves of 4 hosts: 4 x (32 x 31 / 2) = 1,984 of the 8,128 rank pairs lie inside a
    # leaf (24 %); the measured ones split the same way, between leaves the larger part
    between, inside = map(int, re.search(r"; (\d+) of those lie between leaves, .*, (\d+) inside a leaf",
                                         line).groups())
    assert between + inside == int(measured) and between > 2 * inside, line


def test_two_leaves_cannot_tell_their_uplinks(tmp_path):
    path = tmp_path / "two-leaves.h5"
    generate(path, Cluster(8, 4, 2), noise="realistic", faults=["slow-uplink:leaf1"], seed=2)
    with open_result(path) as result, contextlib.redirect_stdout(io.StringIO()):
        d = diagnose(result)
    assert d.culprits == [] or all(c.component != "nic" for c in d.culprits), d.lines()
    assert any(b.startswith("leaf uplinks") for b in d.cannot_tell_for), d.lines()


def test_over_dispersion_never_makes_every_pair_stalled_a_certainty():
    """A side of 4 pairs, all stalled, with the pairs' share 14.3 % and over-dispersion 1.2:
    3 of 3 effective trials (0.143^3), not 4 hits of 3 trials (p = 0, a culprit from any
    side whose few pairs all stalled)."""
    from fabscope_analysis.diagnosis.evidence import overdispersed_sf
    assert overdispersed_sf(4, 4, 1.0, 0.143) == pytest.approx(0.143 ** 4)
    assert overdispersed_sf(4, 4, 1.2, 0.143) == pytest.approx(0.143 ** 3)
    assert overdispersed_sf(1, 4, 1.2, 0.143) == pytest.approx(1 - (1 - 0.143) ** 3)


def test_a_pair_between_leaves_slow_only_in_a_parallel_pass_is_no_culprit(tmp_path):
    """The five scale patterns (no serial retest) on a clean fabric whose collisions slow
    pairs between leaves under load (seed 2: two ring pairs about 2x): not links to
    fix, a congestion finding with a note."""
    path = tmp_path / "scale.h5"
    generate(path, RACKS, noise="realistic+shared-cpu", seed=2,
             patterns=["rails", "cross-rail", "ring", "bisection", "hierarchical"])
    with open_result(path) as result, contextlib.redirect_stdout(io.StringIO()):
        d = diagnose(result)
    assert d.verdict == "fit" and d.culprits == [], d.lines()
    # Said either as a congestion finding's note (when the slow pairs pass the link
    # test at the run's level) or, always, as what the thinned design cannot tell.
    assert (any("ECMP collision looks the same" in n for n in d.notes)
            or any("looks like an ECMP collision unless a serial retest" in b
                   for b in d.cannot_tell_for)), (d.notes, d.cannot_tell_for)
