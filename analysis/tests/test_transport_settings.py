"""/transports/<name>: the settings a scenario gave a transport, with where each was
given, read back through the reader as schema.yaml declares them (transport_settings),
and documented in docs/file-format.md. The binary's side: tests/unit/test_result_file.cpp
(the recorder writes them) and tests/mpi/mpi_blocking_waits.sh (a real run read back)."""
from pathlib import Path

import h5py
import pytest
import yaml

from fabscope_analysis import reader
from fabscope_analysis.errors import ResultFileError

ROOT = Path(__file__).resolve().parents[2]
DECLARED = yaml.safe_load((ROOT / "src/output/schema.yaml").read_text())["transport_settings"]


def write(path, transports):
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "fabscope"
        f.attrs["format_version"] = 1
        f.attrs["complete"] = 1
        for name, attrs in transports.items():
            g = f.create_group(f"transports/{name}")
            for key, value in attrs.items():
                g.attrs[key] = value


def test_settings_and_facts_read_back(tmp_path):
    path = tmp_path / "t.h5"
    write(path, {"mpi": {"setting_wait": "blocking", "setting_wait_from": "run.yaml:3:21",
                         "mpi_wait": "blocking (MPI_Wait)"},
                 "ucx": {"UCX_TLS": "sm,self"}})
    with reader.open_result(str(path)) as r:
        t = r.transports()
    assert t["mpi"]["settings"] == {"wait": reader.TransportSetting("blocking", "run.yaml:3:21")}
    assert t["mpi"]["facts"] == {"mpi_wait": "blocking (MPI_Wait)"}
    assert t["ucx"] == {"settings": {}, "facts": {"UCX_TLS": "sm,self"}}


def test_a_file_without_transports_has_none(tmp_path):
    path = tmp_path / "t.h5"
    write(path, {})
    with reader.open_result(str(path)) as r:
        assert r.transports() == {}


def test_an_undeclared_setting_is_an_error_naming_file_group_and_keys(tmp_path):
    path = tmp_path / "t.h5"
    write(path, {"mpi": {"setting_window": "8", "setting_window_from": "run.yaml:4:3"}})
    with reader.open_result(str(path)) as r:
        with pytest.raises(ResultFileError, match=r"t\.h5: /transports/mpi has setting_window, but schema\.yaml "
                                                  r"declares for transport 'mpi' only setting_wait"):
            r.transports()


def test_a_setting_without_its_origin_is_an_error(tmp_path):
    path = tmp_path / "t.h5"
    write(path, {"verbs": {"setting_max_rd_atomic": "4"}})
    with reader.open_result(str(path)) as r:
        with pytest.raises(ResultFileError, match=r"setting_max_rd_atomic without setting_max_rd_atomic_from"):
            r.transports()


def test_the_reader_takes_the_declared_keys():
    assert reader.declared_transport_settings() == {name: list(keys) for name, keys in DECLARED.items()}


def test_docs_name_every_declared_setting():
    """docs/file-format.md's /transports section names each transport's setting_<key>."""
    text = (ROOT / "docs/file-format.md").read_text()
    body = text.split("## `/transports/<name>` (attributes)", 1)[1].split("\n## ", 1)[0]
    for name, keys in DECLARED.items():
        for key in keys:
            assert f"`{name}`: `setting_{key}`" in body, f"docs/file-format.md does not name {name}'s setting_{key}"
    assert "`setting_<key>_from`" in body
