"""The reader, the synthetic test files and docs/file-format.md against the one
declaration of the file's tables (src/output/schema.yaml). The C++ side is
checked by tests/unit/test_schema.cpp."""
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from fabscope_analysis import reader
import synthetic

ROOT = Path(__file__).resolve().parents[2]
DECLARED = yaml.safe_load((ROOT / "src/output/schema.yaml").read_text())
SCHEMA = DECLARED["tables"]
ROOT_ATTRIBUTES = DECLARED["root_attributes"]
NUMPY = {"int32": "<i4", "int64": "<i8", "uint32": "<u4", "uint8": "|u1", "float64": "<f8"}


def numpy_type(declared):
    m = re.fullmatch(r"str\[(\d+)\]", declared)
    return f"|S{m.group(1)}" if m else NUMPY[declared]


def columns(table):
    return [name for name, _ in SCHEMA[table]]


READER_LISTS = {"ranks": reader.RANK_COLUMNS, "samples": reader.SAMPLE_COLUMNS,
                "summary": reader.SUMMARY_COLUMNS, "scopes": reader.SCOPE_COLUMNS,
                "events": reader.EVENT_COLUMNS, "counters": reader.COUNTER_COLUMNS,
                "validity": reader.VALIDITY_COLUMNS, "requests": reader.REQUEST_COLUMNS,
                "alltoall_ranks": reader.ALLTOALL_RANK_COLUMNS,
                "api_requests": reader.API_REQUEST_COLUMNS,
                "mix_classes": reader.MIX_CLASS_COLUMNS}


@pytest.mark.parametrize("table", sorted(READER_LISTS))
def test_reader_columns_are_the_declared_ones(table):
    assert READER_LISTS[table] == columns(table)


# The synthetic files also stand for older files (summary before `scope`,
# /ranks before site labels): each is a leading part of the declared table,
# with the declared types.
SYNTHETIC = {"samples": synthetic.SAMPLE_DTYPE, "summary": synthetic.SUMMARY_DTYPE,
             "ranks": synthetic.RANK_DTYPE_SITES, "events": synthetic.EVENT_DTYPE,
             "counters": synthetic.COUNTER_DTYPE, "validity": synthetic.VALIDITY_DTYPE}


@pytest.mark.parametrize("table", sorted(SYNTHETIC))
def test_synthetic_tables_follow_the_declaration(table):
    dtype = SYNTHETIC[table]
    declared = SCHEMA[table][:len(dtype.names)]
    assert list(dtype.names) == [name for name, _ in declared]
    assert [np.dtype(dtype.fields[n][0]).str for n in dtype.names] == \
        [np.dtype(numpy_type(t)).str for _, t in declared]


def doc_sections():
    """docs/file-format.md: the text under each heading that names a table."""
    text = (ROOT / "docs/file-format.md").read_text()
    sections = {}
    for part in re.split(r"^#+ ", text, flags=re.M)[1:]:
        heading, _, body = part.partition("\n")
        m = re.match(r"`/(?:tests/NNNN/)?([a-z_]+)`", heading)
        if m and m.group(1) in SCHEMA:
            sections[m.group(1)] = body
    return sections


@pytest.mark.parametrize("table", sorted(SCHEMA))
def test_docs_name_every_declared_column(table):
    body = doc_sections().get(table)
    assert body is not None, f"docs/file-format.md has no section for the table {table}"
    named = set(re.findall(r"`([a-z_0-9]+)`", body))
    missing = [c for c in columns(table) if c not in named]
    assert not missing, f"docs/file-format.md, table {table}: columns not documented: {missing}"


@pytest.mark.parametrize("table", sorted(SCHEMA))
def test_docs_column_tables_name_no_other_column(table):
    body = doc_sections()[table]
    rows = [line for line in body.splitlines() if line.startswith("| `")]
    if not rows:  # described in prose: checked one way only
        return
    documented = [name for row in rows for name in re.findall(r"`([a-z_0-9]+)`", row.split("|")[1])]
    assert sorted(documented) == sorted(columns(table))


def test_docs_root_attributes_are_the_declared_ones():
    text = (ROOT / "docs/file-format.md").read_text()
    body = text.split("## `/` (root attributes)", 1)[1].split("\n## ", 1)[0]
    documented = []
    for row in body.splitlines():
        if row.startswith("| `"):
            cells = row.split("|")
            documented += [(name, cells[2].strip()) for name in re.findall(r"`([a-z_0-9]+)`", cells[1])]
    assert sorted(documented) == sorted((a[0], a[1]) for a in ROOT_ATTRIBUTES)


# attribute types as tests/structure/dump_structure.py prints them
STRUCTURE_TYPE = {"str": "str", "i8": "int", "f8": "float"}


@pytest.mark.parametrize("reference", ["smoke", "llama3-70b-serving", "kv-disagg-llama70b"])
def test_written_root_attributes_are_the_declared_ones(reference):
    """The binary's files (their structure, kept by tests/mpi/file_structure.sh) have
    exactly the declared root attributes of a normal end, with the declared types."""
    lines = (ROOT / "tests/data/structure" / f"{reference}.txt").read_text().splitlines()
    written = sorted((name, STRUCTURE_TYPE.get(kind, kind)) for name, kind in
                     (line[len("attr / "):].split(": ") for line in lines if line.startswith("attr / ")))
    assert written == sorted((a[0], a[1]) for a in ROOT_ATTRIBUTES if a[2:] != ["after_loss"])
