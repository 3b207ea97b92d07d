"""The reader, the synthetic test files and docs/file-format.md against the one
declaration of the file's tables (src/output/schema.yaml). The C++ side is
checked by tests/unit/test_schema.cpp."""
import re
from pathlib import Path

import h5py
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


@pytest.mark.parametrize("table", sorted(SCHEMA))
def test_a_table_a_file_lacks_has_the_declared_columns(table, tmp_path):
    """The reader names no table's columns: a table absent from an instance comes
    back empty with the schema's columns, one the file has with the file's."""
    path = tmp_path / "t.h5"
    with h5py.File(path, "w") as f:
        f.create_group("tests/0000").attrs["index"] = 0
        f["tests/0000"].create_dataset("other", data=np.zeros(2, dtype=[("x", "<i4"), ("y", "<f8")]))
    with h5py.File(path, "r") as f:
        instance = reader.TestInstance(f["tests/0000"], str(path))
        absent = instance.table(table)
        present = instance.table("other")
    assert list(absent.columns) == columns(table) and len(absent) == 0
    assert list(present.columns) == ["x", "y"] and len(present) == 2


def test_reader_column_names_are_the_declared_ones():
    assert reader.SAMPLE_COLUMNS == columns("samples")
    assert reader.RANK_COLUMNS == columns("ranks")
    assert reader.MIX_CLASS_COLUMNS == columns("mix_classes")


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


def test_declared_rows_are_laid_out_as_the_binary_writes_them():
    """reader.declared_dtype (the synthetic files' rows) puts every column at the offset
    the binary's records put it, row for row as long: a file the binary wrote (before
    samples.level: its samples are a leading part with the same row size)."""
    compared = set()
    with h5py.File(ROOT / "analysis/tests/data/emulated-6-hosts-planted.h5", "r") as f:
        tables = [f["ranks"], f["validity"]] + [f["tests/0000"][t] for t in ("samples", "summary", "counters")]
        for written in tables:
            table = written.name.rsplit("/", 1)[1]
            declared = reader.declared_dtype(table)
            assert written.dtype.itemsize == declared.itemsize, table
            for name, (kind, offset) in written.dtype.fields.items():
                assert declared.fields[name] == (kind, offset), (table, name)
            compared.add(table)
    assert compared == {"ranks", "validity", "samples", "summary", "counters"}


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


# --- /tests/NNNN attributes ------------------------------------------------------

INSTANCE = DECLARED["instance_attributes"]
EVERY = {name: kind for name, kind, *_ in INSTANCE["every"]}
WHEN = {group: {name: kind for name, kind, *_ in attrs} for group, attrs in INSTANCE["when"].items()}
KINDS = {kind: {name: (t, bool(rest)) for name, t, *rest in (attrs or [])}
         for kind, attrs in INSTANCE["kinds"].items()}
# Where docs/file-format.md describes a kind's attributes: its own section, or its
# bullet under "Kind-specific attributes".
KIND_SECTIONS = {"kvpush": "## KV-cache push", "alltoall": "## MoE all-to-all",
                 "api": "## Front-end API traffic", "mix": "## The serving mix",
                 "reference": "## Reference tools"}


# Names a kind's text mentions that are scenario keys or event kinds, not attributes.
NOT_ATTRIBUTES = {"fault": {"down_for", "hang_for", "loss_for", "not_recovered", "gone_after_stop",
                            "abort_stuck", "abort_within"}}  # event kinds and scenario keys


def _written_instances():
    """{(reference, group): {attribute: type}} from the structure references."""
    out = {}
    for path in sorted((ROOT / "tests/data/structure").glob("*.txt")):
        for line in path.read_text().splitlines():
            m = re.fullmatch(r"attr /tests/(\d{4}) ([a-z_0-9]+): (\S+)", line)
            if m:
                out.setdefault((path.stem, m.group(1)), {})[m.group(2)] = \
                    STRUCTURE_TYPE.get(m.group(3), m.group(3))
    return out


def _section(text, heading):
    body = text.split(heading, 1)[1]
    return body.split("\n## ", 1)[0]


def test_the_kinds_declared_are_the_kinds_there_are():
    """Every kind the binary registers has an entry (`fabscope list --kinds` is not
    needed: the kinds are named once in src/kinds/Registry.cpp's factories)."""
    names = set()
    for path in (ROOT / "src/kinds").rglob("*.cpp"):
        names |= set(re.findall(r'std::string name\(\) const override \{ return "([a-z0-9]+)"; \}',
                                path.read_text()))
    assert names == set(KINDS), names ^ set(KINDS)


def test_written_instance_attributes_are_declared():
    """Each instance the binary wrote (every reference of tests/data/structure) has all
    of `every`, whole `when` groups, and the attributes of exactly one kind with the
    declared types; nothing undeclared."""
    written = _written_instances()
    assert len(written) >= 40, "the structure references hold too few instances to check"
    seen_kinds, seen_groups = set(), set()
    for where, attrs in written.items():
        missing = set(EVERY) - set(attrs)
        assert not missing, (where, "missing attributes every instance has", missing)
        rest = {n: t for n, t in attrs.items() if n not in EVERY}
        assert all(attrs[n] == t for n, t in EVERY.items()), \
            (where, {n: (attrs[n], t) for n, t in EVERY.items() if attrs[n] != t})
        for group, declared in WHEN.items():
            present = set(declared) & set(rest)
            if group == "congested" and present:  # impact_* only for single-scope pairs
                present |= {"impact_mean", "impact_p99"} & set(rest)
                assert {"load", "load_bytes", "load_gbps", "quiet_index"} <= present, (where, present)
            elif present:
                assert present == set(declared), (where, group, set(declared) - present)
            for n in present:
                assert rest.pop(n) == declared[n], (where, n)
            if present:
                seen_groups.add(group)
        fits = []
        for kind, declared in KINDS.items():
            required = {n for n, (_, optional) in declared.items() if not optional}
            if required <= set(rest) <= set(declared) and \
                    all(declared[n][0] == t for n, t in rest.items()):
                fits.append(kind)
        assert fits, (where, "no declared kind has these attributes", sorted(rest))
        seen_kinds.update(fits)
    # the references exercise every kind that runs on a CPU machine
    assert {"latency", "bandwidth", "allreduce", "alltoall", "incast", "kvpush", "api",
            "fault"} <= seen_kinds, seen_kinds
    assert {"bandwidth", "congested"} <= seen_groups, seen_groups


def test_docs_instance_table_is_the_declared_one():
    """The /tests/NNNN attribute table of docs/file-format.md names every attribute of
    `every` and nothing that is not declared; every `when` attribute is documented in
    the section."""
    text = (ROOT / "docs/file-format.md").read_text()
    body = _section(text, "## `/tests/NNNN` (one group per test instance")
    table = body.split("### ", 1)[0]
    documented = set()
    for row in table.splitlines():
        if row.startswith("| `"):
            documented |= set(re.findall(r"`([a-z_0-9]+)`", row.split("|")[1]))
    when = {n for g in WHEN.values() for n in g}
    assert set(EVERY) <= documented, set(EVERY) - documented
    assert documented <= set(EVERY) | when, documented - set(EVERY) - when
    mentioned = set(re.findall(r"`([a-z_0-9]+)`", body))
    assert when <= mentioned, when - mentioned


@pytest.mark.parametrize("kind", sorted(k for k, a in KINDS.items() if a))
def test_docs_name_every_declared_kind_attribute(kind):
    """Each kind's declared attributes are documented where the docs describe that kind,
    and the kind's text names no attribute-looking word that is not declared."""
    text = (ROOT / "docs/file-format.md").read_text()
    if kind in KIND_SECTIONS:
        body = _section(text, KIND_SECTIONS[kind])
        body = body.split("Attributes added to `/tests/NNNN`:", 1)[1].split("\n\n", 1)[0]
    else:
        bullets = _section(text, "### Kind-specific attributes").split("\n- ")
        body = next(b for b in bullets if b.startswith(f"`{kind}`"))
        body = body.split(f"`{kind}`", 1)[1]
    named = set(re.findall(r"`([a-z][a-z_0-9]*)`", body))
    declared = set(KINDS[kind])
    assert declared <= named, (kind, "declared but not documented", declared - named)
    # values shown in backticks (`closed`, `zipf`, ...) are not attributes: only names
    # that look like attributes (with an underscore) and are not declared are reported
    # (nor are columns of the tables, which the text may mention) are not attributes
    table_columns = {c for t in SCHEMA for c in columns(t)} | set(SCHEMA)
    stray = {n for n in named - declared - set(EVERY) - table_columns - NOT_ATTRIBUTES.get(kind, set())
             if "_" in n}
    assert not stray, (kind, "documented but not declared", stray)
