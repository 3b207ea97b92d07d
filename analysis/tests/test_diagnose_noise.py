"""diagnose against noise that is not a fault, and the faults that hide in it: a host
pair whose samples stall (loss on one path) is a culprit; the same stalls in one slot
(a burst of another tenant) are not. Hand-built files (synthetic.write_matrix_run)."""

from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.reader import open_result
from synthetic import write_matrix_run

# The emulated case: 8 hosts of one rank, a host pair stalling 7 of its 60 samples.
SPREAD = [3, 11, 19, 27, 38, 45, 52]        # over the pass: a lossy path
IN_A_ROW = list(range(20, 27))              # one slot: a burst


def _diagnose(path):
    with open_result(path, warn_incomplete=False) as result:
        return diagnose(result)


def test_a_host_pair_whose_samples_stall_over_the_pass_is_named(tmp_path):
    path = tmp_path / "lossy-path.h5"
    write_matrix_run(path, nranks=8, iterations=60, seed=4, stall_iters={(2, 5): SPREAD})
    d = _diagnose(path)
    pairs = [c for c in d.culprits if c.component == "host-pair"]
    assert d.verdict == "not fit" and len(d.culprits) == 1, d.lines()
    assert {pairs[0].host, pairs[0].peer_host} == {"fh2", "fh5"}, d.lines()
    assert any("stall" in s for s in pairs[0].symptoms), d.lines()


def test_the_same_stalls_in_one_slot_name_nobody(tmp_path):
    path = tmp_path / "burst.h5"
    write_matrix_run(path, nranks=8, iterations=60, seed=4, stall_iters={(2, 5): IN_A_ROW})
    d = _diagnose(path)
    assert not d.culprits, d.lines()
