"""Which shipped criteria judge a file that names none: one host's (local.yaml) when the
file says one host or says nothing of its hosts, the rack's for several."""

import h5py

from fabscope_analysis import open_result
from fabscope_analysis.verdict import criteria_in_force


def _with_hosts(files, tmp_path, hosts):
    path = tmp_path / f"h{hosts}.h5"
    path.write_bytes(open(files["clean"], "rb").read())
    with h5py.File(path, "r+") as f:
        f.attrs["scenario_text"] = "name: synthetic\n"     # names no criteria
        if hosts is None:
            del f.attrs["nhosts"]
        else:
            f.attrs["nhosts"] = hosts
    return str(path)


def test_shipped_default_by_the_files_host_count(files, tmp_path):
    for hosts, name, why in ((None, "local.yaml", "shipped default for a run on one host"),
                             (1, "local.yaml", "shipped default for a run on one host"),
                             (2, "rack-acceptance.yaml", "shipped default for a run on 2 hosts")):
        with open_result(_with_hosts(files, tmp_path, hosts)) as result:
            criteria, source = criteria_in_force(result)
        assert criteria.path.endswith(name) and source == why, (hosts, criteria.path, source)


def test_the_verdict_line_names_each_failed_rule_and_diagnose_by_its_culprits():
    """'N of M checks failed: ...' lists the failed checks' rules in order, the diagnose check
    as 'culprits A, B' when diagnose named some, as 'diagnose' when it named none."""
    from fabscope_analysis.accept_result import CheckResult
    from types import SimpleNamespace
    from fabscope_analysis.verdict import Reason, Verdict
    criteria = SimpleNamespace(path="c.yaml", rules=[])
    checks = [CheckResult("p99_us", "t1", messages=["too slow"]), CheckResult("samples", "t2"),
              CheckResult("diagnose", "run", messages=["culprits"])]
    with_culprits = Verdict(criteria, "test", "x.h5", checks,
                            [Reason("culprit", "rank 3 slow", rule="diagnose", subject="host h3")])
    assert "(2 of 3 checks failed: p99_us, culprits host h3;" in with_culprits.line()
    without = Verdict(criteria, "test", "x.h5", checks)
    assert "(2 of 3 checks failed: p99_us, diagnose;" in without.line()
