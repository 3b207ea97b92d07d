"""Which shipped criteria judge a file that names none: one host's (local.yaml) when the
file says one host or says nothing of its hosts, the rack's for several."""

from types import SimpleNamespace

import h5py
import pytest

from fabscope_analysis import open_result
from fabscope_analysis.accept_result import CheckResult
from fabscope_analysis.errors import CriteriaError
from fabscope_analysis.verdict import CRITERIA_DIR, Reason, Verdict, criteria_in_force


def _with_hosts(files, tmp_path, hosts, scenario_text="name: synthetic\n"):   # names no criteria
    path = tmp_path / f"h{hosts}.h5"
    path.write_bytes(open(files["clean"], "rb").read())
    with h5py.File(path, "r+") as f:
        f.attrs["scenario_text"] = scenario_text
        if hosts is None:
            del f.attrs["nhosts"]
        else:
            f.attrs["nhosts"] = hosts
    return str(path)


def test_shipped_default_by_the_files_host_count(files, tmp_path):
    # a count of 0 (a file that wrote no hosts) says nothing of them: one host's too
    for hosts, name, why in ((None, "local.yaml", "shipped default for a run on one host"),
                             (0, "local.yaml", "shipped default for a run on one host"),
                             (1, "local.yaml", "shipped default for a run on one host"),
                             (2, "rack-acceptance.yaml", "shipped default for a run on 2 hosts")):
        with open_result(_with_hosts(files, tmp_path, hosts)) as result:
            criteria, source = criteria_in_force(result)
        assert criteria.path.endswith(name) and source == why, (hosts, criteria.path, source)


def test_the_verdict_line_names_each_failed_rule_and_diagnose_by_its_culprits():
    """'N of M checks failed: ...' lists the failed checks' rules in order, the diagnose check
    as 'culprits A, B' when diagnose named some, as 'diagnose' when it named none."""
    criteria = SimpleNamespace(path="c.yaml", rules=[])
    checks = [CheckResult("p99_us", "t1", messages=["too slow"]), CheckResult("samples", "t2"),
              CheckResult("diagnose", "run", messages=["culprits"])]
    with_culprits = Verdict(criteria, "test", "x.h5", checks,
                            [Reason("culprit", "rank 3 slow", rule="diagnose", subject="host h3")])
    assert "(2 of 3 checks failed: p99_us, culprits host h3;" in with_culprits.line()
    without = Verdict(criteria, "test", "x.h5", checks)
    assert "(2 of 3 checks failed: p99_us, diagnose;" in without.line()


def test_criteria_the_scenario_names_win_over_the_default_and_a_missing_name_is_an_error(files, tmp_path):
    """A one-host file whose scenario names the rack's criteria is judged by them; a name
    found nowhere is a CriteriaError that says where it looked, never a silent default."""
    named = _with_hosts(files, tmp_path, 1, "name: synthetic\ncriteria: rack-acceptance.yaml\n")
    with open_result(named) as result:
        criteria, source = criteria_in_force(result)
    assert criteria.path.endswith("rack-acceptance.yaml") and source.startswith("named by scenario"), \
        (criteria.path, source)
    missing = _with_hosts(files, tmp_path, 2, "name: synthetic\ncriteria: no-such-criteria.yaml\n")
    with open_result(missing) as result, pytest.raises(CriteriaError) as refused:
        criteria_in_force(result)
    # the scenario file the run names, and no line: the name came from the scenario text the
    # run stored (here on its second line), which need not match that file as it is now
    assert str(refused.value) == ("synthetic.yaml: the scenario names criteria 'no-such-criteria.yaml', "
                                  f"found neither next to the scenario nor in {CRITERIA_DIR}; pass "
                                  "--criteria FILE")


def test_the_verdict_line_names_four_failed_rules_and_counts_the_rest():
    criteria = SimpleNamespace(path="c.yaml", rules=[])
    checks = [CheckResult(rule, "t1", messages=["failed"]) for rule in ("a", "b", "c", "d", "e", "f")]
    reasons = [Reason("check", f"{c.rule}: failed", rule=c.rule) for c in checks]
    line = Verdict(criteria, "test", "x.h5", checks, reasons).line()
    assert line.startswith("verdict: FAIL (6 of 6 checks failed: a, b, c, d and 2 more rules;"), line
