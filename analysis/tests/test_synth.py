"""The synthetic cluster generator: its files have the binary's layout and read the same
way as a real run; its schedules are the driver's; planted faults and noise show where
they were planted; bad input is refused naming what was expected."""
import contextlib
import importlib.util
import io
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from fabscope_analysis.reader import open_result
from fabscope_analysis.synth import Cluster, SynthError, generate, read_truth, topology, writer
from fabscope_analysis.synth.run import TestPlan, control_pairs

ROOT = Path(__file__).resolve().parents[2]
REAL = Path(__file__).resolve().parent / "data" / "emulated-6-hosts-planted.h5"
SCHEMA = yaml.safe_load((ROOT / "src/output/schema.yaml").read_text())["tables"]
NUMPY = {"int32": "<i4", "int64": "<i8", "uint32": "<u4", "uint8": "|u1", "float64": "<f8"}


def _structure(path):
    """tests/structure/dump_structure.py's lines for a file."""
    spec = importlib.util.spec_from_file_location("dump_structure",
                                                  ROOT / "tests/structure/dump_structure.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        module.main(str(path))
    return out.getvalue().splitlines()


def _instance_lines(lines, index):
    return sorted(re.sub(rf"/tests/{index}\b", "/tests/N", line) for line in lines
                  if f"/tests/{index}" in line)


@pytest.fixture(scope="module")
def six(tmp_path_factory):
    """6 hosts as the checked-in real run: 8 B ping-pong x 100, 256 KiB x window 4 x 12."""
    path = tmp_path_factory.mktemp("synth") / "six.h5"
    plans = [TestPlan(kind="latency", iterations=100, size=8, retest_worst=2),
             TestPlan(kind="bandwidth", iterations=12, size=262144, window=4, retest_worst=2)]
    truth = generate(path, Cluster(6), noise="realistic", faults=["slow-recv:host2"], plans=plans,
                     seed=3)
    return path, truth


@pytest.fixture(scope="module")
def racks(tmp_path_factory):
    """16 hosts x 8 GPUs in 4 leaves and 2 pods, one fault of each kind."""
    path = tmp_path_factory.mktemp("synth") / "racks.h5"
    faults = ["slow-send:host1/mlx5_2", "slow-recv:host4", "lossy:host6/3:0.05",
              "host-pair:host9-host13", "bad-pair:host10/1-host14/2", "oversubscribed-uplink:leaf3"]
    truth = generate(path, Cluster(16, 8, 4, 2), noise="ideal", faults=faults, iterations=20, seed=7)
    return path, truth


def test_the_layout_is_the_one_the_binary_writes(six):
    """Root attributes, /ranks, /validity and every all-pairs instance (parallel pass and
    serial retest, latency and bandwidth) against the structure of the binary's smoke run."""
    real = (ROOT / "tests/data/structure/smoke.txt").read_text().splitlines()
    mine = _structure(six[0])
    top = re.compile(r"attr / |dataset /ranks|dataset /validity")
    assert [x for x in mine if top.match(x) and "synthetic_truth" not in x] == \
        [x for x in real if top.match(x)]
    # smoke's all-pairs latency pass and retest are 0007 and 0008, bandwidth 0009 and 0010;
    # the real ones carry /hosts inventories, the synthetic ones none
    for synthetic, binary in (("0000", "0007"), ("0001", "0008"), ("0002", "0009"), ("0003", "0010")):
        assert _instance_lines(mine, synthetic) == _instance_lines(real, binary), synthetic


def test_tables_are_the_declared_ones():
    for table, dtype in (("samples", writer.SAMPLE_DTYPE), ("summary", writer.SUMMARY_DTYPE),
                         ("ranks", writer.RANK_DTYPE), ("validity", writer.VALIDITY_DTYPE),
                         ("counters", writer.COUNTER_DTYPE)):
        declared = SCHEMA[table]
        assert list(dtype.names) == [name for name, _ in declared], table
        for name, kind in declared:
            m = re.fullmatch(r"str\[(\d+)\]", kind)
            want = f"|S{m.group(1)}" if m else NUMPY[kind]
            assert np.dtype(dtype.fields[name][0]).str == want, (table, name)


def test_the_reader_reads_it_as_a_real_run(six):
    """Same instances, columns, dtypes and labels as the checked-in run of the binary."""
    with open_result(REAL) as real, open_result(six[0]) as mine:
        rt, mt = real.tests(), mine.tests()
        assert list(mt["name"]) == ["ap-latency"] * 2 + ["ap-bandwidth"] * 2
        keys = ["kind", "pattern", "pass", "retest_of", "metric", "sample_divisor", "bytes",
                "window", "iterations", "status", "condition"]
        assert mt[keys].to_dict("records") == rt[keys].to_dict("records")
        assert set(rt.columns) <= set(mt.columns)
        for real_inst, inst in zip(real.instances(), mine.instances()):
            for table in ("samples", "summary", "counters"):
                a, b = getattr(real_inst, table)(), getattr(inst, table)()
                assert list(a.columns) == list(b.columns), table
                assert [str(t) for t in a.dtypes] == [str(t) for t in b.dtypes], table
            a, b = real_inst.pair_matrix(), inst.pair_matrix()
            assert a.shape == b.shape == (6, 6) and b.dtype == a.dtype
            if inst.get("kind") == "latency":
                assert np.allclose(np.nan_to_num(b), np.nan_to_num(b.T))
        a, b = real.ranks(), mine.ranks()
        assert list(a.columns) == list(b.columns) and list(a.dtypes) == list(b.dtypes)
        assert list(b["host"]) == [f"host{i}" for i in range(6)] and set(b["leaf"]) == {"leaf0"}
        assert list(real.validity().columns) == list(mine.validity().columns)


def test_retests_and_controls_are_recorded_as_the_driver_records_them(six):
    with open_result(six[0]) as run:
        for parent, retest in ((0, 1), (2, 3)):
            s = run.test(retest).samples()
            control = (s["flags"] & (1 << 10)) != 0
            pairs = s.groupby(["rank", "peer"]).size()
            # suite::controlCount: as many controls as retested pairs, at least 10, capped
            # by the pairs left (15 round trips, 30 directed bandwidth pairs, 2 retested)
            assert len(pairs) == 2 + 10 and set(pairs) == {run.test(parent).get("iterations")}
            assert s[control].groupby(["rank", "peer"]).ngroups == 10
            # the retested pairs are the parallel pass's worst two
            m = run.test(parent).pair_matrix()
            worst = s[~control][["rank", "peer"]].drop_duplicates().to_numpy()
            bandwidth = run.test(parent).get("metric") == "bandwidth"
            cells = [m[a, b] for a, b in worst]
            others = m[np.isfinite(m)]
            assert (min(cells) <= np.sort(others)[1]) if bandwidth else (max(cells) >= np.sort(others)[-4])


def test_the_planted_faults_show_where_they_were_planted(racks):
    path, truth = racks
    assert [f["component"] for f in truth["faults"]] == ["nic", "host", "nic", "host-pair",
                                                          "gpu-pair", "leaf"]
    assert read_truth(path) == truth
    with open_result(path) as run:
        bw = run.test(2).pair_matrix()  # GB/s
        healthy = np.nanmedian(bw[40:48, 48:56])  # host5 -> host6... no fault in between
        assert np.nanmedian(bw[10, :]) < 0.6 * healthy  # host1/mlx5_2 sends at half speed
        assert np.nanmedian(bw[:, 32:40]) < 0.6 * healthy  # every NIC of host4 receives slowly
        assert np.nanmedian(bw[72:80, 104:112]) < 0.6 * healthy  # host9 <-> host13
        assert bw[81, 114] < 0.4 * healthy and bw[114, 81] < 0.4 * healthy  # one GPU pair
        s = run.test(2).samples()
        dur = s["t_done_ns"] - s["t_post_ns"]
        stalled = dur > 10 * dur.median()
        lossy = (s["rank"] == 51) | (s["peer"] == 51)
        assert 0.03 < stalled[lossy].mean() < 0.08 and stalled[~lossy].mean() == 0
        # leaf3's uplink is oversubscribed: cross-leaf pairs into leaf3 slow in the parallel pass
        into = np.nanmedian(bw[0:32, 96:128])
        across = np.nanmedian(bw[0:32, 32:64])
        assert into < 0.75 * across


def test_load_only_slowness_clears_alone(tmp_path):
    """An ECMP-like load-only slowdown of a pair is in the parallel pass, not in its retest."""
    path = tmp_path / "load.h5"
    generate(path, Cluster(8), noise="ideal", faults=["bad-pair:host1/0-host5/0:3@load"],
             plans=[TestPlan(kind="bandwidth", size=1 << 20, window=4, retest_worst=1)], seed=2)
    with open_result(path) as run:
        parallel, alone = run.test(0).pair_matrix(), run.test(1).pair_matrix()
        s = run.test(1).samples()
        assert set(map(tuple, s[s["flags"] == 0][["rank", "peer"]].drop_duplicates().to_numpy())) <= \
            {(1, 5), (5, 1)}
        worst = np.nanargmin(parallel)
        assert parallel.flat[worst] < 0.4 * np.nanmedian(parallel)
        assert alone.flat[worst] > 0.9 * np.nanmedian(parallel)


def test_noise_models_are_seeded_and_the_fabric_seed_is_the_fabric(tmp_path):
    c = Cluster(16)  # one leaf, one GPU a host: every pair at one level
    plans = [TestPlan(kind="bandwidth", size=1 << 20, window=4, retest_worst=0)]
    for name, kwargs in (("a", dict(seed=4)), ("b", dict(seed=4)), ("c", dict(seed=5)),
                         ("d", dict(seed=5, fabric_seed=4))):
        generate(tmp_path / f"{name}.h5", c, noise="realistic-quiet,run_spread=0", plans=plans,
                 **kwargs)
    m = {}
    for name in "abcd":
        with open_result(tmp_path / f"{name}.h5") as run:
            m[name] = run.test(0).pair_matrix()
    assert np.array_equal(m["a"], m["b"], equal_nan=True)
    assert not np.allclose(np.nan_to_num(m["a"]), np.nan_to_num(m["c"]))
    # one fabric, two runs: the pair medians correlate far more than across fabrics
    off = ~np.eye(16, dtype=bool)
    same = np.corrcoef(np.log(m["a"][off]), np.log(m["d"][off]))[0, 1]
    other = np.corrcoef(np.log(m["a"][off]), np.log(m["c"][off]))[0, 1]
    assert same > 0.8 and abs(other) < 0.3


def test_shared_cpus_are_declared_in_validity(tmp_path):
    path = tmp_path / "shared.h5"
    generate(path, Cluster(4), noise="ideal+shared-cpu", patterns=["ring"], iterations=50)
    with open_result(path) as run:
        assert list(run.validity()["what"]) == ["oversubscribed"]
        assert run.attrs["waits_yield"] == 1 and run.attrs["validity_findings"] == 1
        s = run.test(0).samples()
        assert ((s["t_done_ns"] - s["t_post_ns"]) > 500_000).any()  # a 1-4 ms slice


def test_patterns_pair_ranks_as_the_driver_does():
    c = Cluster(8, 4, 2, 2)
    host, local, leaf = c.host_of(), c.local_of(), c.leaf_of()
    lay = topology.layout_of(c)
    for both in (False, True):
        s, d, r = topology.all_pairs_arrays(c.ranks, both)
        pairs = {(a, b) for a, b in zip(s, d)}
        assert len(pairs) == len(s) == (c.ranks * (c.ranks - 1) // (1 if both else 2))
        for k in np.unique(r):  # every rank at most once in a round
            ends = np.concatenate([s[r == k], d[r == k]])
            assert len(ends) == len(set(ends))
    rails = topology.flatten(topology.schedule_of("rails", lay, True))
    assert (local[rails[0]] == local[rails[1]]).all() and (host[rails[0]] != host[rails[1]]).all()
    assert len(rails[0]) == 4 * 8 * 7
    cross = topology.flatten(topology.schedule_of("cross-rail", lay, True, draws=3, seed=2))
    assert (local[cross[0]] != local[cross[1]]).all() and (host[cross[0]] != host[cross[1]]).all()
    hier = topology.flatten(topology.schedule_of("hierarchical", lay, True, draws=4, seed=9))
    within = leaf[hier[0]] == leaf[hier[1]]
    assert within.sum() == 2 * 16 * 15 and (~within).sum() > 0
    ring = topology.schedule_of("ring", lay, False, draws=2, seed=5)
    assert len(ring) == 4 and sum(len(x) for x in ring) == 2 * c.ranks
    assert topology.schedule_of("bisection", lay, False, 3, 1) != \
        topology.schedule_of("bisection", lay, False, 3, 2)
    # the driver's generator: splitmix64's published first output for seed 0
    assert topology._next([0]) == 0xe220a8397b1dcdaf


def test_the_default_control_count_is_the_drivers_capped_by_the_pairs_left(tmp_path):
    """4 ranks: 6 round trips, 3 retested, so 3 controls (not 10); 12 directed pairs: 9 left, 9."""
    generate(tmp_path / "four.h5", Cluster(4), noise="ideal", iterations=5, seed=2)
    with open_result(tmp_path / "four.h5") as run:
        for retest, controls in ((1, 3), (3, 9)):
            s = run.test(retest).samples()
            flagged = s[(s["flags"] & (1 << 10)) != 0]
            assert flagged.groupby(["rank", "peer"]).ngroups == controls


def test_controls_come_from_the_middle_away_from_the_suspects():
    ranked = np.array([(a, b) for a in range(8) for b in range(8) if a != b])  # 56 pairs
    for seed in (1, 2, 3):
        controls = control_pairs(ranked, 3, 3, seed)
        suspects = set(ranked[:3].ravel())
        at = [int(np.flatnonzero((ranked == c).all(axis=1))[0]) for c in controls]
        assert len(set(at)) == 3 and all(14 <= i < 42 for i in at)
        assert not suspects & set(controls.ravel())


def test_a_budget_thins_whole_rounds(tmp_path):
    path = tmp_path / "budget.h5"
    generate(path, Cluster(8, 2), noise="ideal", patterns=["all-pairs"], budget_keep=0.25,
             retest_worst=0, iterations=2)
    with open_result(path) as run:
        lat = run.test(0)
        assert lat.get("rounds_left_out") == 15 - 4 and "kept 4 of 15 rounds" in lat.get("budget_left_out")
        assert lat.get("pairs_left_out") + lat.samples().groupby(["rank", "peer"]).ngroups == 120


@pytest.mark.parametrize("call, expected", [
    (dict(faults=["slow-recv:host99"]), "no host 'host99' in a cluster of 6 hosts (expected host0 .. host5)"),
    (dict(faults=["slowrecv:host1"]), "unknown kind 'slowrecv'"),
    (dict(faults=["host-pair:host1"]), "expected two ends A-B"),
    (dict(faults=["slow-uplink:leaf0"]), "an uplink needs at least 2 leaves"),
    (dict(faults=["slow-send:host1:fast"]), "value 'fast' is not a number"),
    (dict(noise="realistc"), "unknown model 'realistc' (expected one of ideal, realistic"),
    (dict(noise="realistic,hiccup_rat=1"), "unknown figure 'hiccup_rat'"),
    (dict(patterns=["mesh"]), "unknown pattern 'mesh' (expected one of all-pairs, rails"),
])
def test_bad_input_names_what_was_expected(tmp_path, call, expected):
    with pytest.raises(SynthError) as err:
        generate(tmp_path / "x.h5", Cluster(6), **call)
    assert expected in str(err.value)


def test_a_cluster_must_divide_evenly():
    with pytest.raises(SynthError, match="expected a number of leaves that divides the 6 hosts, got 4"):
        Cluster(6, 1, 4)


def test_the_command_writes_a_series_of_one_fabric(tmp_path, capsys):
    from fabscope_analysis.cli import main
    out = tmp_path / "aa-{run}.h5"
    assert main(["synth", "-o", str(out), "--hosts", "8", "--gpus", "2", "--leaves", "2",
                 "--plant", "slow-recv:host5", "--pattern", "rails", "--runs", "2", "--seed", "4",
                 "--iterations", "5"]) == 0
    printed = capsys.readouterr().out
    assert "16 ranks) in 2 leaves" in printed and "planted: slow-recv host5 receive" in printed
    truths = [read_truth(tmp_path / f"aa-{i}.h5") for i in (1, 2)]
    assert [t["seed"] for t in truths] == [4, 5] and {t["fabric_seed"] for t in truths} == {4}
    assert main(["synth", "-o", str(tmp_path / "x.h5"), "--hosts", "8", "--leaves", "3"]) == 2
    assert "expected a number of leaves that divides the 8 hosts, got 3" in capsys.readouterr().err


def test_a_congested_condition_measures_half_the_ranks_under_load(tmp_path):
    """As the driver: the same canaries (half the ranks, spread over the hosts) in quiet and
    congested instances, the others congestors; the congested instance has the attributes
    schema.yaml declares for it, and cross-leaf pairs are slower under the load."""
    path = tmp_path / "congested.h5"
    generate(path, Cluster(8, 4, 2), noise="ideal", conditions=["quiet", "alltoall"],
             retest_worst=1, seed=3)
    declared = yaml.safe_load((ROOT / "src/output/schema.yaml").read_text())["instance_attributes"]
    names = lambda group: {n for n, *_ in group}  # noqa: E731
    with open_result(path) as run:
        tests = run.tests()
        assert list(tests["condition"]) == ["quiet", "quiet", "alltoall", "alltoall"] * 2
        quiet, loaded = run.test(0), run.test(2)
        canaries = [int(x) for x in quiet.get("canaries").split(",")]
        congestors = [int(x) for x in loaded.get("congestors").split(",")]
        assert canaries == [int(x) for x in loaded.get("canaries").split(",")] and len(canaries) == 16
        assert sorted(canaries + congestors) == list(range(32))
        assert {r // 4 for r in canaries} == set(range(8))  # every host measures
        assert set(loaded.attrs) == names(declared["every"]) | names(declared["kinds"]["latency"]) \
            | names(declared["when"]["congested"])
        assert loaded.get("quiet_index") == 0 and run.test(3).get("quiet_index") == 1
        q, c = quiet.pair_matrix(), loaded.pair_matrix()
        cross = np.zeros((32, 32), dtype=bool)
        cross[:16, 16:] = cross[16:, :16] = True
        ratio = c / q
        assert np.nanmedian(ratio[cross]) > 1.2 and np.nanmedian(ratio[~cross]) < 1.2
