import h5py
import numpy as np
import pytest

from fabscope_analysis import (IncompleteResultWarning, ResultFileError,
                               UnsupportedVersionError, open_result)
from synthetic import SAMPLE_DTYPE, SyntheticRun


def test_lists_instances_with_attributes(files):
    with open_result(files["standard"]) as run:
        assert run.format_version == 1 and run.complete
        tests = run.tests()
        assert list(tests["index"]) == [0, 1, 2, 3, 4, 5]
        assert list(tests["name"][:2]) == ["pingpong", "pingpong"]
        assert list(tests["condition"][:2]) == ["quiet", "incast"]
        assert tests.loc[2, "has_pair_matrix"] and not tests.loc[0, "has_pair_matrix"]
        assert tests.loc[5, "n_samples"] == 0
        assert isinstance(tests.loc[0, "case"], str)
        assert tests.loc[1, "quiet_index"] == 0


def test_tables_decode_strings(files):
    with open_result(files["standard"]) as run:
        ranks = run.ranks()
        assert list(ranks["host"][:3]) == ["fh0", "fh0", "fh1"]
        assert ranks["nic"][0] == "eth0"
        ev = run.test(4).events()
        assert list(ev["kind"]) == ["fault", "detected", "rerouted", "recovered"]
        assert ev["detail"][0] == "link fh1:eth1 down (injected)"
        ct = run.test(1).counters()
        assert set(ct["source"]) == {"snmp:Tcp"} and (ct["delta"] == ct["after"] - ct["before"]).all()
        s = run.test(0).samples()
        assert list(s.columns) == list(SAMPLE_DTYPE.names) and len(s) == 2400
        m = run.test(2).pair_matrix()
        assert m.shape == (8, 8) and np.isnan(np.diag(m)).all()
        assert m[2, 5] < 0.5 * np.nanmedian(m)
        assert run.test(0).pair_matrix() is None
        assert set(run.hosts()) == {"fh0", "fh1", "fh2", "fh3"}
        fh2 = run.hosts()["fh2"]["tables"]["inventory"]
        assert dict(zip(fh2["key"], fh2["value"]))["net/eth0/mtu"] == "1500"
        assert len(run.all_events()) == 4 and "test" in run.all_events().columns


def test_empty_test_has_columns(files):
    with open_result(files["standard"]) as run:
        inst = run.test(5)
        assert inst.get("status") == "error"
        assert len(inst.samples()) == 0 and "t_post_ns" in inst.samples().columns
        assert len(inst.events()) == 0 and "kind" in inst.events().columns


def test_incomplete_file_warns(files):
    with pytest.warns(IncompleteResultWarning, match="did not end normally"):
        run = open_result(files["incomplete"])
    assert not run.complete
    run.close()


def test_unknown_version_refused(tmp_path):
    path = tmp_path / "v2.h5"
    SyntheticRun(path, format_version=2).close()
    with pytest.raises(UnsupportedVersionError) as err:
        open_result(path)
    assert str(path) in str(err.value) and "format_version 2" in str(err.value)
    assert "version 1" in str(err.value)


def test_version_as_string_refused(tmp_path):
    path = tmp_path / "vs.h5"
    SyntheticRun(path, format_version="1").close()
    with pytest.raises(UnsupportedVersionError):
        open_result(path)


def test_not_fabscope_refused(tmp_path):
    other = tmp_path / "other.h5"
    SyntheticRun(other, fmt="something-else").close()
    with pytest.raises(ResultFileError, match="not a fabscope result file"):
        open_result(other)
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as f:
        f.create_dataset("x", data=[1, 2])
    with pytest.raises(ResultFileError, match="expected 'fabscope'"):
        open_result(plain)
    text = tmp_path / "text.h5"
    text.write_text("hello")
    with pytest.raises(ResultFileError, match="cannot be read as HDF5"):
        open_result(text)
    with pytest.raises(ResultFileError, match="no such file"):
        open_result(tmp_path / "missing.h5")


def test_file_without_tests(tmp_path):
    path = tmp_path / "none.h5"
    SyntheticRun(path).close()
    with open_result(path) as run:
        assert run.tests().empty and run.instances() == []
        with pytest.raises(KeyError, match="no test instance 3"):
            run.test(3)


def test_padded_compound_layout(tmp_path):
    """The C++ writer stores structs as they are in memory (aligned, with padding)."""
    from synthetic import EVENT_DTYPE
    path = tmp_path / "padded.h5"
    run = SyntheticRun(path, nranks=2)
    aligned = np.dtype({"names": list(SAMPLE_DTYPE.names),
                        "formats": [SAMPLE_DTYPE[n] for n in SAMPLE_DTYPE.names]}, align=True)
    samples = np.zeros(3, dtype=aligned)
    samples["rank"], samples["peer"], samples["bytes"] = 0, 1, 8
    samples["t_post_ns"] = [100, 300, 500]
    samples["t_done_ns"] = [150, 360, 570]
    index = run.add_test("pp", "latency", samples.astype(SAMPLE_DTYPE), nbytes=8)
    group = run.file["tests"][f"{index:04d}"]
    del group["samples"]
    group.create_dataset("samples", data=samples)
    ev_aligned = np.dtype({"names": list(EVENT_DTYPE.names),
                           "formats": [EVENT_DTYPE[n] for n in EVENT_DTYPE.names]}, align=True)
    ev = np.zeros(1, dtype=ev_aligned)
    ev[0] = (1, 123, b"deadline", 0, b"x" * 160)  # full width: no NUL terminator
    group.create_dataset("events", data=ev)
    run.close()
    assert aligned.itemsize > SAMPLE_DTYPE.itemsize
    with open_result(path) as result:
        s = result.test(index).samples()
        assert list(s["t_done_ns"] - s["t_post_ns"]) == [50, 60, 70]
        e = result.test(index).events()
        assert e["kind"][0] == "deadline" and e["detail"][0] == "x" * 160
