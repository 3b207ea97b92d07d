"""Reader for fabscope result files (docs/file-format.md, format_version 1).

This is the API users' own scripts import::

    from fabscope_analysis.reader import open_result
    with open_result("results/demo.h5") as run:
        print(run.tests()[["name", "condition", "bytes", "status"]])
        s = run.test(0).samples()

Everything comes back as pandas DataFrames (numpy for the pair matrix) with the
fixed-length byte strings of the tables decoded to ``str``.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np
import pandas as pd

from .errors import IncompleteResultWarning, ResultFileError, UnsupportedVersionError

try:
    import h5py
except ImportError as exc:  # pragma: no cover - depends on the machine
    raise ImportError(
        "fabscope_analysis needs h5py: on Debian/Ubuntu `apt-get install python3-h5py` "
        "and run with /usr/bin/python3, or `pip install h5py`") from exc

KNOWN_FORMAT_VERSIONS = (1,)

# The tables' columns come from the file's own dtype; for a table a file lacks,
# from the schema (src/output/schema.yaml, its `tables:` printed from the C++
# records; installed beside this package), so an absent table still has its columns.
_SCHEMA_PLACES = (os.path.join(os.path.dirname(__file__), "schema.yaml"),
                  os.path.join(os.path.dirname(__file__), "..", "..", "src", "output", "schema.yaml"))
_schema: Optional[dict] = None
# The schema's types as numpy writes them (str[N]: fixed, NUL-padded bytes).
_NUMPY_TYPES = {"int32": "<i4", "int64": "<i8", "uint32": "<u4", "uint8": "u1", "float64": "<f8"}


def _declared() -> dict:
    """The schema, as declared (read once)."""
    global _schema
    if _schema is None:
        import yaml
        place = next((p for p in _SCHEMA_PLACES if os.path.exists(p)), None)
        if place is None:
            raise ResultFileError("fabscope_analysis: schema.yaml not found (looked in "
                                  + ", ".join(os.path.normpath(p) for p in _SCHEMA_PLACES) + ")")
        with open(place, encoding="utf-8") as f:
            _schema = yaml.safe_load(f) or {}
    return _schema


def _declared_columns() -> Dict[str, list]:
    """Table name -> [[column, type], ...] as the schema declares them."""
    return _declared().get("tables") or {}


def declared_transport_settings() -> Dict[str, list]:
    """Transport name -> its scenario keys, as the schema declares them (transport_settings)."""
    return {name: list(keys or []) for name, keys in (_declared().get("transport_settings") or {}).items()}


@dataclass(frozen=True)
class TransportSetting:
    """One key the scenario gave a transport: the value the run used and where it was
    given (the scenario's file:line:column, or the --set option)."""
    value: str
    given_at: str


def declared_tables() -> Dict[str, list]:
    """Table name -> [column, ...] as the schema declares them."""
    return {name: [column[0] for column in columns] for name, columns in _declared_columns().items()}


def declared_dtype(table: str) -> np.dtype:
    """The table's row as the schema declares it, laid out as the C++ record is (each
    member at its natural alignment), so rows made with it have the real table's
    columns, types and offsets. KeyError for a table the schema does not know."""
    def numpy_type(declared: str) -> str:
        return "S" + declared[4:-1] if declared.startswith("str[") else _NUMPY_TYPES[declared]
    return np.dtype([(name, numpy_type(kind)) for name, kind in _declared_columns()[table]], align=True)


def columns_of(table: str) -> list:
    """The declared columns of `table` (empty for a table the schema does not know)."""
    return [column[0] for column in _declared_columns().get(table, [])]


SAMPLE_COLUMNS = columns_of("samples")
# samples.level: the topology level the sample's pair crosses; 0 in files
# written before the column existed and for samples that are not between a pair.
LEVEL_NAMES = {0: "unknown", 1: "same-node", 2: "same-leaf", 3: "same-pod", 4: "cross-pod",
               5: "cross-node"}
SUMMARY_COLUMNS = columns_of("summary")
SCOPE_COLUMNS = columns_of("scopes")
REQUEST_COLUMNS = columns_of("requests")
ALLTOALL_RANK_COLUMNS = columns_of("alltoall_ranks")
API_REQUEST_COLUMNS = columns_of("api_requests")
MIX_CLASS_COLUMNS = columns_of("mix_classes")
EVENT_COLUMNS = columns_of("events")
COUNTER_COLUMNS = columns_of("counters")
RANK_COLUMNS = columns_of("ranks")

FLAG_DATA_CHECK_FAILED = 1 << 0
# Bits 8-15: rows that are not part of the instance's headline statistics (an incast
# receiver's aggregate, a latency probe), as in docs/file-format.md.
FLAG_AUXILIARY_MASK = 0xff00
# A serial retest's control pair (the reference, from the middle of the parallel pass) and
# a retested pair's second visit (after every other pair; older files have one visit).
FLAG_CONTROL_PAIR = 1 << 10
FLAG_RETEST_SECOND_VISIT = 1 << 15
# An all-to-all's dispatch and combine phases (the headline row is the whole round).
FLAG_DISPATCH_PHASE = 1 << 11
FLAG_COMBINE_PHASE = 1 << 12
# A front-end request's time to first byte and the gaps between its chunks (api).
FLAG_FIRST_BYTE = 1 << 13
FLAG_CHUNK_GAP = 1 << 14
# A mix instance's samples: traffic class + 1 in bits 16-18, bit 19 set in the together phase.
FLAG_MIX_CLASS_SHIFT = 16
FLAG_MIX_CLASS_MASK = 0x7 << FLAG_MIX_CLASS_SHIFT
FLAG_MIX_TOGETHER = 1 << 19
MIX_CLASSES = ["allreduce", "alltoall", "kvpush", "api"]
# /validity: what makes the run's numbers meaningless or doubtful.
VALIDITY_COLUMNS = columns_of("validity")


def _decode_scalar(value):
    """Attribute value -> plain Python value (str, int, float, or list of those)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace").rstrip("\0")
    if isinstance(value, np.ndarray):
        if value.shape == ():
            return _decode_scalar(value[()])
        return [_decode_scalar(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value


def decode_attrs(attrs) -> Dict[str, object]:
    """h5py AttributeManager -> dict of plain Python values."""
    return {key: _decode_scalar(attrs[key]) for key in attrs.keys()}


def table_to_frame(data: np.ndarray, columns=None) -> pd.DataFrame:
    """Compound numpy array -> DataFrame, decoding byte-string columns to str."""
    if data is None or data.dtype.names is None:
        return pd.DataFrame(columns=columns or [])
    frame = {}
    for name in data.dtype.names:
        col = data[name]
        if col.dtype.kind == "S":
            frame[name] = np.char.decode(np.char.rstrip(col, b"\0"), "ascii", errors="replace") \
                .astype(object) if len(col) else np.array([], dtype=object)
        elif col.dtype.kind == "O":
            frame[name] = [_decode_scalar(v) for v in col]
        else:
            frame[name] = col
    df = pd.DataFrame(frame)
    if columns:
        for missing in [c for c in columns if c not in df.columns]:
            df[missing] = pd.Series(dtype="int64")
    return df


class TestInstance:
    """One ``/tests/NNNN`` group."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(self, group, path: str):
        self._group = group
        self._path = path
        self.group_name = group.name.rsplit("/", 1)[-1]
        self.attrs: Dict[str, object] = decode_attrs(group.attrs)
        self.index = int(self.attrs.get("index", int(self.group_name)))

    def __repr__(self):
        a = self.attrs
        return (f"TestInstance({self.index}, name={a.get('name')!r}, kind={a.get('kind')!r}, "
                f"condition={a.get('condition')!r}, bytes={a.get('bytes')})")

    def get(self, key, default=None):
        return self.attrs.get(key, default)

    @property
    def metric(self) -> str:
        return str(self.attrs.get("metric", "latency"))

    @property
    def sample_divisor(self) -> int:
        divisor = int(self.attrs.get("sample_divisor", 1) or 1)
        return divisor if divisor > 0 else 1

    def table(self, name: str) -> pd.DataFrame:
        """Any table of the instance (a kind's own included), columns as in the file;
        an absent table comes back empty with the schema's columns for it."""
        columns = columns_of(name)
        if name not in self._group:
            return pd.DataFrame({c: pd.Series(dtype="int64") for c in columns})
        obj = self._group[name]
        if not isinstance(obj, h5py.Dataset):
            raise ResultFileError(f"{self._path}: {obj.name} should be a table (dataset), "
                                  f"found a group")
        return table_to_frame(obj[()], columns)

    def has(self, name: str) -> bool:
        return name in self._group

    def samples(self) -> pd.DataFrame:
        """Raw samples, one row per timed operation per rank (columns as in the file;
        ``level`` 0 when the file predates it)."""
        frame = self.table("samples")
        if frame["level"].isna().any():
            frame["level"] = frame["level"].fillna(0)
        frame["level"] = frame["level"].astype("uint8")
        return frame

    def summary(self) -> pd.DataFrame:
        return self.table("summary")

    def scope_table(self) -> pd.DataFrame:
        """/tests/NNNN/scopes as fabscope wrote it (empty in runs without site labels)."""
        return self.table("scopes")

    def events(self) -> pd.DataFrame:
        return self.table("events")

    def requests(self) -> pd.DataFrame:
        """/tests/NNNN/requests (kvpush: one row per measured request; empty otherwise)."""
        return self.table("requests")

    def alltoall_ranks(self) -> pd.DataFrame:
        """/tests/NNNN/alltoall_ranks (alltoall: one row per measuring rank; empty otherwise)."""
        return self.table("alltoall_ranks")

    def api_requests(self) -> pd.DataFrame:
        """/tests/NNNN/api_requests (api: one row per measured request; empty otherwise)."""
        return self.table("api_requests")

    def mix_classes(self) -> pd.DataFrame:
        """/tests/NNNN/mix_classes (mix: one row per traffic class and phase; empty otherwise)."""
        return self.table("mix_classes")

    def counters(self) -> pd.DataFrame:
        return self.table("counters")

    def pair_matrix(self) -> Optional[np.ndarray]:
        """nranks x nranks float64 (row = measuring rank, column = peer), or None."""
        if "pair_matrix" not in self._group:
            return None
        return np.asarray(self._group["pair_matrix"][()], dtype=np.float64)


class ResultFile:
    """An open fabscope result file. Use as a context manager or call close()."""

    def __init__(self, path: str, h5file):
        self.path = path
        self._file = h5file
        self.attrs: Dict[str, object] = decode_attrs(h5file.attrs)
        self._instances: Optional[Dict[int, TestInstance]] = None

    # -- context manager -------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    # -- root --------------------------------------------------------------
    @property
    def format_version(self) -> int:
        return int(self.attrs["format_version"])

    @property
    def complete(self) -> bool:
        return int(self.attrs.get("complete", 0)) == 1

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def ranks(self) -> pd.DataFrame:
        """The /ranks table (host and nic decoded to str)."""
        if "ranks" not in self._file:
            return pd.DataFrame({c: pd.Series(dtype="int64") for c in RANK_COLUMNS})
        return table_to_frame(self._file["ranks"][()], RANK_COLUMNS)

    def validity(self) -> pd.DataFrame:
        """The /validity table: one row per finding (host "*" = every host), in the
        file's order; empty (with its columns) when nothing was found or the file
        predates it. The root attribute ``validity_findings`` holds the count."""
        if "validity" not in self._file:
            return pd.DataFrame(columns=VALIDITY_COLUMNS)
        return table_to_frame(self._file["validity"][()], VALIDITY_COLUMNS)

    def host_of_rank(self) -> Dict[int, str]:
        ranks = self.ranks()
        return {int(r): str(h) for r, h in zip(ranks["rank"], ranks["host"])}

    def transports(self) -> Dict[str, Dict[str, object]]:
        """/transports/<name>: {name: {"settings": {key: TransportSetting}, "facts": {...}}}
        (`setting_<key>` with its `_from`, as schema.yaml declares; facts: the rest);
        an undeclared setting or one without its origin is a ResultFileError."""
        out: Dict[str, Dict[str, object]] = {}
        if "transports" not in self._file:
            return out
        declared = declared_transport_settings()
        for name, group in self._file["transports"].items():
            attrs = decode_attrs(group.attrs)
            keys = declared.get(name, [])
            settings, facts = {}, {}
            for attribute, value in attrs.items():
                if not attribute.startswith("setting_"):
                    facts[attribute] = value
                    continue
                if attribute.endswith("_from"):
                    continue
                key = attribute[len("setting_"):]
                if key not in keys:
                    raise ResultFileError(
                        f"{self.path}: /transports/{name} has {attribute}, but schema.yaml declares "
                        f"for transport '{name}' only " + (", ".join(f"setting_{k}" for k in keys) or "no settings"))
                if f"{attribute}_from" not in attrs:
                    raise ResultFileError(f"{self.path}: /transports/{name} has {attribute} without "
                                          f"{attribute}_from (where the scenario gave it)")
                settings[key] = TransportSetting(str(value), str(attrs[f"{attribute}_from"]))
            out[name] = {"settings": settings, "facts": facts}
        return out

    def has_hosts(self) -> bool:
        return "hosts" in self._file

    def hosts(self) -> Dict[str, Dict[str, object]]:
        """/hosts/<host>/... as {host: {"attrs": {...}, "tables": {name: DataFrame}}}.

        docs/file-format.md (version 1) does not define /hosts yet; this reads whatever
        attributes and tables are there without assuming names.
        """
        result: Dict[str, Dict[str, object]] = {}
        if "hosts" not in self._file:
            return result
        for host, group in self._file["hosts"].items():
            entry = {"attrs": {}, "tables": {}}
            if isinstance(group, h5py.Dataset):
                entry["tables"][host] = _dataset_to_frame(group)
                result[host] = entry
                continue
            entry["attrs"] = decode_attrs(group.attrs)

            def visit(name, obj, entry=entry):
                if isinstance(obj, h5py.Dataset):
                    entry["tables"][name] = _dataset_to_frame(obj)
                elif len(obj.attrs):
                    for key, value in decode_attrs(obj.attrs).items():
                        entry["attrs"][f"{name}/{key}"] = value
            group.visititems(visit)
            result[host] = entry
        return result

    # -- tests -------------------------------------------------------------
    def _load_instances(self) -> Dict[int, TestInstance]:
        if self._instances is None:
            instances = {}
            if "tests" in self._file:
                for group_name in sorted(self._file["tests"].keys()):
                    group = self._file["tests"][group_name]
                    if not isinstance(group, h5py.Group):
                        continue
                    inst = TestInstance(group, self.path)
                    instances[inst.index] = inst
            self._instances = dict(sorted(instances.items()))
        return self._instances

    def instances(self):
        """TestInstance objects in index order."""
        return list(self._load_instances().values())

    def test(self, index: int) -> TestInstance:
        try:
            return self._load_instances()[int(index)]
        except KeyError:
            raise KeyError(f"{self.path}: no test instance {index} "
                           f"(have {sorted(self._load_instances())})") from None

    def tests(self) -> pd.DataFrame:
        """One row per test instance: every attribute, plus n_samples and which tables exist."""
        rows = []
        for inst in self.instances():
            row = dict(inst.attrs)
            row["index"] = inst.index
            row["group"] = inst.group_name
            row["n_samples"] = int(inst._group["samples"].shape[0]) if inst.has("samples") else 0
            row["has_pair_matrix"] = inst.has("pair_matrix")
            row["has_events"] = inst.has("events")
            row["has_counters"] = inst.has("counters")
            rows.append(row)
        df = pd.DataFrame(rows)
        if df.empty:
            return pd.DataFrame(columns=["index", "name", "kind", "case", "condition", "bytes",
                                         "status", "n_samples"])
        first = [c for c in ["index", "name", "kind", "case", "condition", "transport", "memory",
                             "pattern", "pass", "bytes", "metric", "status"] if c in df.columns]
        return df[first + [c for c in df.columns if c not in first]].reset_index(drop=True)

    def _concat(self, getter) -> pd.DataFrame:
        parts = []
        for inst in self.instances():
            part = getter(inst)
            if len(part):
                part = part.copy()
                part.insert(0, "test", inst.index)
                parts.append(part)
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()

    def all_events(self) -> pd.DataFrame:
        """Events of every instance, with a leading ``test`` column (instance index)."""
        return self._concat(lambda i: i.events())

    def all_counters(self) -> pd.DataFrame:
        return self._concat(lambda i: i.counters())


def _dataset_to_frame(ds) -> pd.DataFrame:
    data = ds[()]
    if isinstance(data, np.ndarray) and data.dtype.names:
        return table_to_frame(data)
    if isinstance(data, np.ndarray) and data.ndim <= 2:
        if data.dtype.kind in "SO":
            data = np.vectorize(_decode_scalar, otypes=[object])(data) if data.size else data
        return pd.DataFrame(np.atleast_1d(data))
    return pd.DataFrame({"value": [_decode_scalar(data)]})


def open_result(path, warn_incomplete: bool = True) -> ResultFile:
    """Open a fabscope result file, checking ``format`` and ``format_version``.

    Raises ResultFileError (UnsupportedVersionError for a version this reader does not
    know). Warns with IncompleteResultWarning when the run did not end normally.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ResultFileError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ResultFileError(f"{path}: is a directory, expected a fabscope .h5 result file")
    try:
        h5file = h5py.File(path, "r")
    except OSError as exc:
        raise ResultFileError(f"{path}: cannot be read as HDF5 ({exc})") from None
    try:
        attrs = h5file.attrs
        fmt = _decode_scalar(attrs["format"]) if "format" in attrs else None
        if fmt != "fabscope":
            raise ResultFileError(
                f"{path}: not a fabscope result file (root attribute format is "
                f"{fmt!r}, expected 'fabscope')")
        if "format_version" not in attrs:
            raise ResultFileError(f"{path}: root attribute format_version is missing")
        version = _decode_scalar(attrs["format_version"])
        if not isinstance(version, (int, np.integer)) or int(version) not in KNOWN_FORMAT_VERSIONS:
            known = ", ".join(str(v) for v in KNOWN_FORMAT_VERSIONS)
            raise UnsupportedVersionError(
                f"{path}: format_version {version!r} is not supported by this "
                f"fabscope_analysis (it reads version {known}); use a matching "
                f"fabscope_analysis release")
        result = ResultFile(path, h5file)
    except Exception:
        h5file.close()
        raise
    if warn_incomplete and not result.complete:
        warnings.warn(
            f"{path}: the run did not end normally (complete=0, exit_code="
            f"{result.attrs.get('exit_code')}); results may be partial",
            IncompleteResultWarning, stacklevel=2)
    return result


def open_for_command(path) -> ResultFile:
    """open_result for a command line: an incomplete file is read, with one warning on
    stderr saying the run did not end normally."""
    result = open_result(path, warn_incomplete=False)
    if not result.complete:
        print(f"warning: {path} is incomplete (complete=0, exit_code="
              f"{result.attrs.get('exit_code')}): the run did not end normally",
              file=sys.stderr)
    return result
