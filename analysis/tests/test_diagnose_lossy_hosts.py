"""Several lossy hosts at once (diagnosis/tails.py): each is the others' reference, so
their stalls raise every healthy rank's expected count and the measured over-dispersion;
ranks standing far out of the median rank's stalls are left out of the references
before the second round, and every lossy host is named."""

from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.reader import open_result
from fabscope_analysis.synth import Cluster, generate

# 8 hosts x 4 GPUs in 4 leaves: host4 and host6 sit on different leaves
CLUSTER = Cluster(hosts=8, gpus=4, leaves=4)


def _named(tmp_path, faults, seed):
    path = tmp_path / f"run-{seed}.h5"
    generate(path, CLUSTER, noise="realistic", faults=faults, seed=seed, controls=10)
    with open_result(path, warn_incomplete=False) as result:
        return diagnose(result)


def test_two_lossy_hosts_on_two_leaves_are_both_named(tmp_path):
    for seed in (22, 23):
        d = _named(tmp_path, ["lossy:host4:0.03", "lossy:host6:0.03"], seed)
        assert sorted(c.subject() for c in d.culprits) == ["host4", "host6"], d.lines()
        assert all("tail" in c.symptoms[0] for c in d.culprits), d.lines()


def test_one_lossy_host_and_a_clean_fabric_are_as_before(tmp_path):
    d = _named(tmp_path, ["lossy:host4:0.03"], 22)
    assert [c.subject() for c in d.culprits] == ["host4"], d.lines()
    assert not _named(tmp_path, [], 22).culprits


def test_two_hosts_losing_one_percent_are_both_named(tmp_path):
    """At 1 % a quarter of the ranks stalling spreads the log ratios too widely for any
    to stand OUTLYING_Z robust sigmas out; a plain Poisson test against the references
    leaves them out, round by round, and both hosts are named."""
    d = _named(tmp_path, ["lossy:host2", "lossy:host5"], 1)
    assert sorted(c.subject() for c in d.culprits) == ["host2", "host5"], d.lines()
