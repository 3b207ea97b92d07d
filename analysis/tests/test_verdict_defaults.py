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
