"""A host pair inside a leaf of two hosts is all of that leaf's pairs between hosts: the
leaf's inside class term takes its slowness, so diagnose cannot see it there and says
so (`cannot tell for host pairs (cables) inside a leaf of two hosts`), never a silent
fit; with more hosts a leaf the same fault is named."""

from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.reader import open_result
from fabscope_analysis.synth import Cluster, generate


def _diagnose(tmp_path, cluster, fault):
    path = tmp_path / "run.h5"
    generate(path, cluster, noise="realistic", faults=[fault], seed=22, controls=10)
    with open_result(path, warn_incomplete=False) as result:
        return diagnose(result)


def test_a_host_pair_inside_a_leaf_of_two_hosts_is_a_stated_blind_spot(tmp_path):
    d = _diagnose(tmp_path, Cluster(hosts=8, gpus=4, leaves=4), "host-pair:host2-host3:3")
    assert not d.culprits, d.lines()
    [line] = [x for x in d.cannot_tell_for if x.startswith("host pairs (cables) inside a leaf of two hosts")]
    assert "(leaf0, leaf1, leaf2, leaf3)" in line
    assert d.first_line().startswith("fit; cannot tell for") and "inside a leaf of two hosts" in d.first_line()


def test_with_four_hosts_a_leaf_the_pair_is_named_and_nothing_is_said(tmp_path):
    d = _diagnose(tmp_path, Cluster(hosts=16, gpus=4, leaves=4), "host-pair:host4-host5:3")
    assert [c.subject() for c in d.culprits] == ["host pair host04 <-> host05"], d.lines()
    assert not [x for x in d.cannot_tell_for if "inside a leaf of two hosts" in x]
