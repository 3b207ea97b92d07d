"""diagnose's whole output (the text it prints, its exit code and the JSON of --json) on a
spread of fixed inputs, held against expected/diagnose/CASE.json (expected_outputs.py:
these tests detect change, not correctness; each recorded expectation was read for the
planted fault being named, or the verdict saying why it cannot tell).

The inputs drive the diagnosis's rules: a clean realistic fabric; each fault synth plants
(a NIC's send or receive side, a whole host, a lossy and a flapping NIC, a GPU pair, a
host pair, a slow and an oversubscribed uplink); two faults at once; a NIC side just
above and just below the practical margin; leaf labels missing or wrong (leaves
inferred); budget-thinned and sparse designs; too few samples; one local rank slow on
every host; a NIC slow only from other leaves; outages and flaps stalled into the
samples; error counters; serial retests; a baseline run. Small clusters (8 hosts x 4
GPUs in 4 leaves, 4 x 8) keep the file to a few seconds.
Re-record after a deliberate change: FABSCOPE_RECORD_EXPECTED=1 and read the diff.
"""
from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from expected_outputs import check_expected, text_lines
from fabscope_analysis.diagnose import acceptance_checks, culprits_html, diagnose
from fabscope_analysis.reader import open_result
from fabscope_analysis.synth import Cluster, generate
from helpers import run_main
from synthetic import write_matrix_run

SMALL = Cluster(hosts=8, gpus=4, leaves=4)
WIDE = Cluster(hosts=4, gpus=8, leaves=2)
# the practical margin is 1.25x: a side 1.32x slow is beyond it, one 1.18x short of it
ABOVE, BELOW = 1.32, 1.18


def _synth(cluster, faults=(), seed=1, noise="realistic", **kw):
    def build(path):
        generate(path, cluster, noise=noise, faults=list(faults), seed=seed, controls=10, **kw)
    return build


def _local_rank_everywhere(path):
    # the same local rank's NIC sends slowly on every host: one placement, not 8 NICs
    generate(path, SMALL, noise="realistic-quiet", seed=6, controls=10,
             faults=[f"slow-send:host{h}/3:1.6" for h in range(SMALL.hosts)])


def _relabel(build, leaf_of_host):
    """A synth run whose /ranks leaf column is rewritten: leaf_of_host(host index, leaf
    label) -> the new label ('' = no label)."""
    def rebuilt(path):
        build(path)
        with h5py.File(path, "r+") as f:
            rows = f["ranks"][...]
            hosts = sorted(set(rows["host"].tolist()))
            for i, row in enumerate(rows):
                rows["leaf"][i] = leaf_of_host(hosts.index(row["host"]), row["leaf"].decode()).encode()
            f["ranks"][...] = rows
    return rebuilt


def _parallel_bandwidth(f):
    for g in f["tests"].values():
        if g.attrs.get("metric") in (b"bandwidth", "bandwidth") and \
                g.attrs.get("pass") in (b"parallel", "parallel"):
            return g
    raise AssertionError("no parallel bandwidth pass")


def _stalled(seconds, victim_peers):
    """A clean 8 x 2 synth run with samples stalled as a port down stalls them: the first
    sample of rank 3 with each of `victim_peers` peers (1: one link down) ends `seconds`
    later."""
    def build(path):
        generate(path, Cluster(8, 2, 2), noise="realistic", seed=4)
        with h5py.File(path, "r+") as f:
            samples = _parallel_bandwidth(f)["samples"]
            rows = samples[...]
            mine = np.flatnonzero((rows["rank"] == 3) & (rows["peer"] >= 0))
            peers = {}
            for i in mine:
                peers.setdefault(int(rows["peer"][i]), int(i))
            for i in list(peers.values())[:victim_peers]:
                rows["t_done_ns"][i] += int(seconds * 1e9)
            samples[...] = rows
    return build


def _stretched(build, pick, factor):
    """A synth run of SMALL whose samples of the pairs pick(rank, peer, leaf of rank, leaf
    of peer) (arrays) take `factor` times as long, in every test and pass: a slowdown on
    a path no synth fault follows."""
    def rebuilt(path):
        build(path)
        leaf = np.arange(SMALL.ranks) // (SMALL.ranks // SMALL.leaves)
        with h5py.File(path, "r+") as f:
            for g in f["tests"].values():
                rows = g["samples"][...]
                rank, peer = rows["rank"].astype(np.int64), rows["peer"].astype(np.int64)
                hit = (peer >= 0) & pick(rank, peer, leaf[rank], leaf[np.maximum(peer, 0)])
                took = rows["t_done_ns"][hit] - rows["t_post_ns"][hit]
                rows["t_done_ns"][hit] = rows["t_post_ns"][hit] + (took * factor).astype(np.int64)
                g["samples"][...] = rows
    return rebuilt


def _matrix(**kw):
    def build(path):
        write_matrix_run(path, **kw)
    return build


def _counters(counts, name="symbol_error"):
    rows = [(r, "sysfs:mlx5_0/1", name, 100, 100 + counts.get(r, 0)) for r in range(8)]
    return _matrix(nranks=8, iterations=30, seed=6, counters=rows)


_RETEST_CONTROLS = [(s, d) for s in range(8) for d in range(8)
                    if s != d and 0 not in (s, d) and 3 not in (s, d)][:12]

CASES = {
    "clean-realistic": _synth(SMALL, seed=2),
    "clean-wide-bimodal": _synth(WIDE, seed=3, noise="realistic+bimodal"),
    "slow-send-nic": _synth(SMALL, ["slow-send:host2/1"], seed=1),
    "slow-recv-host": _synth(SMALL, ["slow-recv:host5"], seed=2),
    "lossy-nic": _synth(SMALL, ["lossy:host3/2:0.02"], seed=3),
    "flapping-nic": _synth(SMALL, ["flapping:host6/0:0.1"], seed=4),
    "bad-gpu-pair": _synth(SMALL, ["bad-pair:host1/0-host4/2"], seed=5),
    "host-pair": _synth(SMALL, ["host-pair:host1-host6"], seed=6),
    # inside a leaf of four hosts (with two a leaf, its class term takes the pair whole)
    "host-pair-inside-leaf": _synth(Cluster(hosts=8, gpus=4, leaves=2), ["host-pair:host0-host1:2.0"],
                                    seed=24),
    "slow-uplink": _synth(SMALL, ["slow-uplink:leaf1:2.0"], seed=7),
    "oversubscribed-uplink": _synth(SMALL, ["oversubscribed-uplink:leaf2:2.5"], seed=8),
    "load-only-nic": _synth(SMALL, ["slow-recv:host4/3:2.0@load"], seed=9),
    "two-faults": _synth(SMALL, ["slow-recv:host0/2:2.5", "host-pair:host3-host7:2.0"], seed=10),
    "side-above-margin": _synth(SMALL, [f"slow-recv:host5/1:{ABOVE}"], seed=11,
                                noise="realistic-quiet"),
    "side-below-margin": _synth(SMALL, [f"slow-recv:host5/1:{BELOW}"], seed=11,
                                noise="realistic-quiet"),
    # every host of a leaf slow: the leaf (its raw pairs with the other leaves say so);
    # the same on two leaves, where nothing compares them
    "leaf-hosts-slow": _synth(SMALL, ["slow-recv:host2:2.0", "slow-recv:host3:2.0"], seed=21),
    "lossy-host": _synth(SMALL, ["lossy:host4:0.03"], seed=22),
    "two-leaves-leaf-hosts-slow": _synth(WIDE, ["slow-send:host0:1.8", "slow-send:host1:1.8"],
                                         seed=23),
    "local-rank-everywhere": _local_rank_everywhere,
    # the same on hosts of two GPUs: two local ranks are too few to compare
    "local-rank-two-gpus": _synth(Cluster(hosts=8, gpus=2, leaves=4), seed=25, noise="realistic-quiet",
                                  faults=[f"slow-send:host{h}/1:1.6" for h in range(8)]),
    "labels-missing": _relabel(_synth(SMALL, ["slow-send:host2/1"], seed=12), lambda h, leaf: ""),
    "labels-wrong": _relabel(_synth(SMALL, seed=13),
                             lambda h, leaf: "leaf0" if h == 5 else leaf),
    "thinned-budget": _synth(SMALL, ["slow-send:host3/0:2.0"], seed=14, budget_keep=0.3),
    "few-iterations": _synth(SMALL, ["slow-recv:host1/1:1.5"], seed=15, iterations=3),
    "sparse-patterns": _synth(SMALL, ["slow-recv:host6/2:2.0"], seed=16,
                              patterns=["ring", "hierarchical"]),
    "conditions-under-load": _synth(WIDE, ["slow-send:host1/2:2.0"], seed=17,
                                    conditions=["quiet", "incast", "alltoall"]),
    "one-link-down": _stalled(1.5, 1),
    "flapping-stalls": _stalled(0.4, 3),
    # rank 13 (host3, leaf1) slow only on its pairs with ranks of other leaves
    "nic-slow-from-other-leaves": _stretched(
        _synth(SMALL, seed=18, noise="realistic-quiet"),
        lambda r, p, lr, lp: (p == 13) & (lr != lp), 2.0),
    # ranks 9 and 13, both of leaf1: its links to the spine, not two NICs
    "leaf-nics-slow-from-other-leaves": _stretched(
        _synth(SMALL, seed=19, noise="realistic-quiet"),
        lambda r, p, lr, lp: np.isin(p, [9, 13]) & (lr != lp), 2.0),
    # a third of the pairs into leaf2 from other leaves (those ECMP would hash onto one of
    # its spine links) 3x slow, beside the realistic collisions
    "spine-link-share": _stretched(
        _synth(SMALL, seed=20),
        lambda r, p, lr, lp: (lp == 2) & (lr != 2) & ((r * 7 + p) % 3 == 0), 3.0),
    "small-side-powered": _matrix(nranks=16, receive={5: 0.9}, pair_noise=0.01, jitter=0.01, seed=2),
    "small-side-noisy": _matrix(nranks=16, receive={5: 0.9}, pair_noise=0.08, jitter=0.05, seed=2),
    "counter-errors": _counters({3: 40, 1: 1, 6: 1}),
    # a counter every host bumps (about 20 each) and one host at 2.5x that
    "counter-background": _counters({0: 20, 1: 22, 2: 18, 3: 21, 4: 19, 5: 23, 6: 20, 7: 50},
                                    name="port_rcv_errors"),
    "too-few-ranks": _matrix(nranks=3, send={1: 0.5}, seed=4),
    "counter-discards": _counters({3: 40, 1: 1, 6: 1}, name="port_rcv_discards"),
    "retest-confirmed": _matrix(nranks=8, link={(0, 3): 0.25}, seed=3, retest=[(0, 3)],
                                controls=_RETEST_CONTROLS),
    "retest-burst": _matrix(nranks=8, link={(0, 3): 0.25}, seed=3, retest=[(0, 3)],
                            controls=_RETEST_CONTROLS, retest_burst={(0, 3): 8}),
    # visited twice: slow on the first visit only (a transient), slow on both (confirmed)
    "retest-transient": _matrix(nranks=8, link={(0, 3): 0.25}, seed=3, retest=[(0, 3)],
                                controls=_RETEST_CONTROLS, second_visit={(0, 3): 1.0}),
    "retest-twice-slow": _matrix(nranks=8, link={(0, 3): 0.25}, seed=3, retest=[(0, 3)],
                                 controls=_RETEST_CONTROLS, second_visit={}),
    "retest-two-controls": _matrix(nranks=8, link={(0, 3): 0.25}, seed=3, retest=[(0, 3)],
                                   controls=_RETEST_CONTROLS[:2]),
    "lossy-matrix-latency-host": _matrix(nranks=12, ranks_per_host=2, lossy={4: 0.05},
                                         latency_host={9: 1.6}, seed=5),
    "validity-widened-link": _matrix(nranks=8, link={(1, 5): 0.6}, seed=7, validity=[
        ("*", "oversubscribed", 8.0, 2.0, "8 ranks on 2 CPUs: scheduler slices in the times")]),
    "validity-widened": _matrix(nranks=8, send={2: 0.6}, seed=7, validity=[
        ("*", "oversubscribed", 8.0, 2.0, "8 ranks on 2 CPUs: scheduler slices in the times")]),
}


def _diagnose_outputs(tmp_path, path, *extra):
    """What `diagnose FILE --json OUT` gives: exit code, printed lines, the JSON."""
    out = tmp_path / "diagnosis.json"
    done = run_main("diagnose", path, "--json", out, *extra)
    replace = {str(tmp_path): "<dir>"}
    return {"exit": done.returncode, "text": text_lines(done.stdout, replace),
            "stderr": text_lines(done.stderr, replace),
            "json": json.loads(out.read_text().replace(str(tmp_path), "<dir>"))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_diagnose_output(tmp_path, case):
    path = tmp_path / f"{case}.h5"
    CASES[case](path)
    check_expected("diagnose", case, _diagnose_outputs(tmp_path, path))


def test_diagnose_output_against_a_baseline(tmp_path):
    # every rank sends at 70 %: no culprit inside the run, the whole fabric against the baseline;
    # and a baseline of another scenario has no instance like the run's
    slow, good, other = tmp_path / "slow.h5", tmp_path / "good.h5", tmp_path / "other.h5"
    write_matrix_run(slow, nranks=8, send={r: 0.7 for r in range(8)}, seed=8)
    write_matrix_run(good, nranks=8, seed=9)
    generate(other, Cluster(4, 2, 2), noise="ideal", seed=1)
    check_expected("diagnose", "baseline-slower", _diagnose_outputs(tmp_path, slow, "--baseline", good))
    check_expected("diagnose", "baseline-other-scenario",
                   _diagnose_outputs(tmp_path, good, "--baseline", other))


def test_an_inconclusive_retest_is_not_counted_as_cleared_alone(tmp_path):
    # two controls are too few to judge the retest: the congestion finding must not say the
    # pair was as fast as the controls alone (it was 3.8x their time)
    path = tmp_path / "two-controls.h5"
    CASES["retest-two-controls"](path)
    with open_result(path, warn_incomplete=False) as result:
        d = diagnose(result)
    found = [(c.cleared_alone, c.retested) for c in d.congestion]
    assert found == [(0, 1)], d.lines()


def _check(kind, name, messages=(), details=()):
    return {"kind": kind, "name": name, "messages": list(messages), "details": list(details)}


@pytest.mark.parametrize("case", ["counter-errors", "side-below-margin", "thinned-budget", "two-faults"])
def test_diagnosis_report_block_and_accept_checks(tmp_path, case):
    """The report's culprits block and accept's `diagnose` checks (lenient and strict) of
    one diagnosis each: not fit, fit with blind spots, cannot tell."""
    path = tmp_path / f"{case}.h5"
    CASES[case](path)
    with open_result(path, warn_incomplete=False) as result:
        d = diagnose(result)
        check_expected("diagnose", f"surfaces-{case}", {
            "html": text_lines(culprits_html(d)),
            "accept": acceptance_checks(result, None, _check, diagnosis=d),
            "accept_strict": acceptance_checks(result, None, _check, strict=True, diagnosis=d)})
