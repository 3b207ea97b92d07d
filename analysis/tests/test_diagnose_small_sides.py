"""Small slowdowns: a NIC side at 90 % of the typical bandwidth is named when the run
has the power to see it, and when it has not the verdict says it cannot tell for NIC
sides below the size it could see, with the iterations that would tell (never a
silent `fit`). Synthetic all-pairs files of 16 ranks (tests/synthetic.py)."""

from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.reader import open_result
from synthetic import write_matrix_run


def _diagnose(path):
    with open_result(path) as result:
        return diagnose(result)


def test_a_nic_receiving_at_90_percent_is_named_when_the_run_has_the_power(tmp_path):
    path = tmp_path / "small.h5"
    write_matrix_run(path, nranks=16, receive={5: 0.9}, pair_noise=0.01, jitter=0.01, seed=2)
    d = _diagnose(path)
    assert [(c.ranks, c.direction) for c in d.culprits] == [([5], "receive")], d.lines()
    assert "90% of the typical" in d.culprits[0].symptoms[0], d.culprits[0].symptoms


def test_without_the_power_the_verdict_cannot_tell_for_small_nic_sides(tmp_path):
    path = tmp_path / "noisy.h5"
    write_matrix_run(path, nranks=16, receive={5: 0.9}, pair_noise=0.08, jitter=0.05, seed=2)
    d = _diagnose(path)
    assert not d.culprits, d.lines()
    blind = [b for b in d.cannot_tell_for if b.startswith("NIC sides slower by less than")
             and " in bandwidth" in b]
    assert blind and "the iterations" in blind[0], d.cannot_tell_for
    assert d.first_line().startswith("fit; cannot tell for "), d.first_line()
