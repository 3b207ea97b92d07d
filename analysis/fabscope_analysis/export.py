"""`export --openmetrics OUT FILE...`: a run's headline figures as metrics for Prometheus.

Every number comes from the function that computes it for the other commands, so a
figure here is the figure they print:

- per test instance and site scope: RunAnalysis.summary_frame(), the rows of `summary`
  (p50, p99, p99.9, mean, worst, samples, impact factors, status, stragglers), and the
  per-rank tails the straggler rule is computed from (InstanceStats.rank_tails);
- per directed pair: stats.pair_values(), the pair medians of accept's pair rules;
- the run's one verdict: verdict.compute_verdict(), the line `verdict --brief` prints;
- diagnose's culprits when the criteria in force use diagnose: the verdict's own
  Diagnosis (diagnose runs once, and no surface shows a second verdict);
- the serving impact when the scenario (or --model) names a model:
  impact.compute_impact(), the figures of `impact` and of the report.

Format: OpenMetrics 1.0 text restricted to what the Prometheus text format 0.0.4 also
reads, so one file serves node_exporter's textfile collector and `promtool check
metrics` (both parse the Prometheus text format) and OpenMetrics parsers alike:

- every family is a gauge: the OpenMetrics `info` type is an error to the Prometheus
  parser ("unknown metric type"), so `_info` families are gauges of value 1, the
  Prometheus idiom for metadata;
- `# UNIT` lines and the closing `# EOF` are comments to the Prometheus parser;
- no timestamps (the textfile collector refuses them) and no NaN: a figure that cannot
  be computed (no samples, no quiet partner) has no sample;
- no `quantile` label on a gauge (promtool's lint: "non-summary metrics should not have
  'quantile' label"): percentiles are a `stat` label with summary's column names;
- HELP texts hold no double quote or backslash (the two formats escape them differently);
  label values escape backslash, double quote and newline as both formats say.

The file is written to a temporary file in the same directory and renamed over OUT, so
node_exporter never reads half a file; on any error nothing is written and an existing
OUT stays as it was.
"""

from __future__ import annotations

import math
import os
import re
import sys
import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Dict, Iterable, List, Optional, Sequence, TextIO, Tuple

from .errors import CriteriaError, ResultFileError
from .reader import ResultFile
from .run_analysis import RunAnalysis
from .stats import is_bandwidth, pair_values

# Per instance and scope, at most this many pairs get per-pair series by default: an
# all-pairs test on n ranks has n(n-1) pairs, 65 280 at 256 ranks, too many series for
# one textfile. 4096 covers 64 ranks.
DEFAULT_MAX_PAIRS = 4096

# summary's columns -> the `stat` label (the same names as summary's table headers)
ROW_STATS = (("p50", "p50"), ("p99", "p99"), ("p99.9", "p99.9"), ("mean", "mean"),
             ("worst", "worst"))
US_PER_S = 1e6
BYTES_PER_GB = 1e9   # GB/s = 10^9 B/s (docs/analysis.md conventions)


@dataclass(frozen=True)
class FamilySpec:
    name: str
    unit: str      # OpenMetrics UNIT ("" for none): the name ends with _<unit>
    help: str


# Every family export writes, in the order of the file. docs/analysis.md ("Export for
# Prometheus") lists each; test_export checks that the two agree.
FAMILY_SPECS: Tuple[FamilySpec, ...] = (
    FamilySpec("fabscope_run_info", "", "Metadata of a fabscope result file, value 1: run id, "
               "tool version, start and end times as the file records them."),
    FamilySpec("fabscope_run_complete", "", "1 when the run ended normally, 0 when it crashed "
               "or was killed (root attribute complete): its tests may be partial or missing."),
    FamilySpec("fabscope_run_exit_code", "", "The exit code fabscope returned "
               "(-1: the run did not finish)."),
    FamilySpec("fabscope_run_started_timestamp_seconds", "seconds",
               "When the run started (started_utc), as Unix time."),
    FamilySpec("fabscope_run_finished_timestamp_seconds", "seconds",
               "When the run finished (finished_utc), as Unix time; absent if it did not."),
    FamilySpec("fabscope_run_ranks", "", "Ranks of the run."),
    FamilySpec("fabscope_run_hosts", "", "Hosts of the run."),
    FamilySpec("fabscope_run_tests", "", "Test instances in the file by status "
               "(passed, failed, timeout, error, skipped)."),
    FamilySpec("fabscope_validity_findings", "", "Findings of /validity that make the run's "
               "numbers doubtful (as summary's VALIDITY lines)."),
    FamilySpec("fabscope_validity_finding", "", "One /validity finding, value 1 "
               "(host * = every host)."),
    FamilySpec("fabscope_verdict_passed", "", "The run's verdict against the criteria in force: "
               "1 PASS, 0 FAIL (the line verdict --brief prints)."),
    FamilySpec("fabscope_verdict_checks", "", "Checks of the criteria in force by outcome."),
    FamilySpec("fabscope_verdict_failed_checks", "", "Failed checks of the criteria in force "
               "per rule."),
    FamilySpec("fabscope_diagnosis", "", "diagnose's answer, one series per possible answer, "
               "1 for the one given (only when the criteria in force use diagnose)."),
    FamilySpec("fabscope_diagnosis_culprits", "", "Culprits diagnose named (only when the "
               "criteria in force use diagnose)."),
    FamilySpec("fabscope_culprit", "", "A culprit diagnose named, value 1: the host (or the "
               "link host -> peer_host), the side at fault and the confidence."),
    FamilySpec("fabscope_culprit_score", "", "diagnose's confidence score of a culprit, "
               "0 to 1."),
    FamilySpec("fabscope_test_status", "", "A test instance's status, value 1 "
               "(passed, failed, timeout, error, skipped)."),
    FamilySpec("fabscope_test_samples", "", "Headline samples of a test instance and scope "
               "(summary's samples column)."),
    FamilySpec("fabscope_test_flagged_samples", "", "Samples whose data check failed."),
    FamilySpec("fabscope_latency_seconds", "seconds", "Latency of a test instance and scope "
               "from all ranks' raw samples, by stat: p50, p99, p99.9, mean, worst "
               "(the summary's figures)."),
    FamilySpec("fabscope_bandwidth_bytes_per_second", "bytes_per_second",
               "Bandwidth of a test instance and scope, by stat: p50, p99 and p99.9 are "
               "bytes over that percentile of the sample times (the slow side), mean is all "
               "bytes over all time, worst the slowest sample (the summary's figures)."),
    FamilySpec("fabscope_impact_ratio", "ratio", "Impact factor of a congested condition "
               "against the same case run quiet, by stat mean or p99: congested/quiet for "
               "latency, quiet/congested for bandwidth; above 1 is worse."),
    FamilySpec("fabscope_straggler", "", "A straggler rank of a test instance, value 1: its "
               "p99 sample time exceeds 2x the median rank's."),
    FamilySpec("fabscope_rank_latency_seconds", "seconds", "Latency of one measuring rank's "
               "samples, by stat p50 or p99."),
    FamilySpec("fabscope_rank_bandwidth_bytes_per_second", "bytes_per_second",
               "Bandwidth of one measuring rank's samples, by stat p50 or p99 (the slow side)."),
    FamilySpec("fabscope_pair_latency_seconds", "seconds", "Median latency of one directed "
               "pair, rank -> peer (stat p50)."),
    FamilySpec("fabscope_pair_bandwidth_bytes_per_second", "bytes_per_second",
               "Median bandwidth of one directed pair, rank -> peer (stat p50)."),
    FamilySpec("fabscope_serving_tp_communication_seconds", "seconds",
               "Time per decode step (one generated token per sequence) spent in "
               "tensor-parallel all-reduces for the model, composed from the raw samples, "
               "by stat p50 or p99 (the impact command's ms per token)."),
    FamilySpec("fabscope_serving_tp_inflation_ratio", "ratio", "TP communication per token "
               "under a condition over the same quiet, by stat p50 or p99."),
    FamilySpec("fabscope_serving_kv_transfer_seconds", "seconds", "KV cache transfer of one "
               "request of the prompt length (start to usable), by stat p50 or p99."),
)
SPEC_BY_NAME: Dict[str, FamilySpec] = {s.name: s for s in FAMILY_SPECS}
DIAGNOSIS_ANSWERS = ("fit", "not fit", "cannot tell")
NAME_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def escape_label_value(value: str) -> str:
    """Backslash, double quote and newline, as the Prometheus text format and
    OpenMetrics both escape a label value (nothing else is escaped in either)."""
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def format_value(value: float) -> str:
    """Shortest text that reads back as the same float (ints without a point)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    v = float(value)
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


@dataclass
class Family:
    spec: FamilySpec
    samples: "OrderedDict[Tuple[Tuple[str, str], ...], float]" = field(
        default_factory=OrderedDict)


class MetricSet:
    """Samples of every family, gathered over all files, written family by family (each
    family's samples must be together in both formats)."""

    def __init__(self):
        self.families: "OrderedDict[str, Family]" = OrderedDict(
            (s.name, Family(s)) for s in FAMILY_SPECS)

    def add(self, name: str, labels: Dict[str, object], value) -> None:
        """One sample. Labels with an empty value are left out (Prometheus treats an empty
        label as absent); a value that is None, NaN or infinite adds nothing."""
        if value is None:
            return
        if not isinstance(value, (bool, int)):
            value = float(value)
            if not math.isfinite(value):
                return
        key = tuple((k, str(v)) for k, v in labels.items() if v is not None and str(v) != "")
        family = self.families[name]
        if key in family.samples:
            raise ValueError(f"export: series {name}{dict(key)} written twice")
        family.samples[key] = value

    def render(self) -> str:
        out: List[str] = []
        for family in self.families.values():
            if not family.samples:
                continue
            spec = family.spec
            out.append(f"# HELP {spec.name} {spec.help}")
            out.append(f"# TYPE {spec.name} gauge")
            if spec.unit:
                out.append(f"# UNIT {spec.name} {spec.unit}")
            for key, value in family.samples.items():
                labels = ",".join(f"{k}=\"{escape_label_value(v)}\"" for k, v in key)
                out.append(f"{spec.name}{{{labels}}} {format_value(value)}" if labels
                           else f"{spec.name} {format_value(value)}")
        out.append("# EOF")
        return "\n".join(out) + "\n"


def _check_specs() -> None:
    """The rules the module docstring states, on the family table itself."""
    for spec in FAMILY_SPECS:
        assert NAME_RE.match(spec.name) and spec.name.startswith("fabscope_"), spec.name
        assert "\"" not in spec.help and "\\" not in spec.help and "\n" not in spec.help, \
            spec.name
        assert not spec.unit or spec.name.endswith("_" + spec.unit), spec.name


_check_specs()


# --- gathering ------------------------------------------------------------------------------

def _unix_seconds(text) -> Optional[float]:
    text = str(text or "").strip()
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _int_attr(attrs, key) -> Optional[int]:
    try:
        return int(attrs[key])
    except (KeyError, TypeError, ValueError):
        return None


def file_labels(result: ResultFile) -> Dict[str, str]:
    """The labels every series of a file carries: its file name and scenario."""
    return {"file": result.name, "scenario": str(result.attrs.get("scenario_name", "") or "")}


def _run_metrics(result: ResultFile, base: Dict[str, str], m: MetricSet) -> None:
    a = result.attrs
    m.add("fabscope_run_info", {**base, "run_id": a.get("run_id", ""),
                                "tool_version": a.get("tool_version", ""),
                                "started_utc": a.get("started_utc", ""),
                                "finished_utc": a.get("finished_utc", "")}, 1)
    m.add("fabscope_run_complete", base, result.complete)
    m.add("fabscope_run_exit_code", base, _int_attr(a, "exit_code"))
    m.add("fabscope_run_started_timestamp_seconds", base, _unix_seconds(a.get("started_utc")))
    if result.complete:
        m.add("fabscope_run_finished_timestamp_seconds", base,
              _unix_seconds(a.get("finished_utc")))
    m.add("fabscope_run_ranks", base, _int_attr(a, "nranks"))
    m.add("fabscope_run_hosts", base, _int_attr(a, "nhosts"))
    by_status: Dict[str, int] = {}
    for inst in result.instances():
        status = str(inst.get("status", "") or "unknown")
        by_status[status] = by_status.get(status, 0) + 1
    for status, n in sorted(by_status.items()):
        m.add("fabscope_run_tests", {**base, "status": status}, n)
    validity = result.validity()
    m.add("fabscope_validity_findings", base, len(validity))
    seen = set()
    for row in validity.to_dict("records"):
        key = (str(row["host"]) or "*", str(row["what"]))
        if key not in seen:   # one series per host and finding
            seen.add(key)
            m.add("fabscope_validity_finding", {**base, "host": key[0], "what": key[1]}, 1)


def _verdict_metrics(result: ResultFile, base: Dict[str, str], m: MetricSet,
                     criteria) -> None:
    from .verdict import compute_verdict
    try:
        verdict = compute_verdict(result, criteria)
    except CriteriaError as exc:
        raise ResultFileError(f"{result.path}: the criteria in force: {exc}") from None
    labels = {**base, "criteria": os.path.basename(verdict.criteria.path)}
    m.add("fabscope_verdict_passed", labels, verdict.passed)
    failed = [c for c in verdict.checks if not c.passed]
    m.add("fabscope_verdict_checks", {**labels, "outcome": "passed"},
          len(verdict.checks) - len(failed))
    m.add("fabscope_verdict_checks", {**labels, "outcome": "failed"}, len(failed))
    per_rule: "OrderedDict[str, int]" = OrderedDict()
    for check in failed:
        per_rule[check.rule] = per_rule.get(check.rule, 0) + 1
    for rule, n in per_rule.items():
        m.add("fabscope_verdict_failed_checks", {**labels, "rule": rule}, n)
    d = verdict.diagnosis
    if d is None:
        return   # the criteria do not use diagnose: no diagnose verdict of its own
    for answer in DIAGNOSIS_ANSWERS:
        m.add("fabscope_diagnosis", {**base, "verdict": answer}, answer == d.verdict)
    m.add("fabscope_diagnosis_culprits", base, len(d.culprits))
    for c in d.culprits:
        who = {**base, "host": c.host, "direction": c.direction, "peer_host": c.peer_host}
        m.add("fabscope_culprit", {**who, "confidence": c.confidence}, 1)
        m.add("fabscope_culprit_score", who, c.score)


def _row_labels(base: Dict[str, str], row, inst, labelled: bool) -> Dict[str, str]:
    repeats = int(inst.get("repeats", 1) or 1)
    return {**base, "test": row["name"], "kind": row["kind"], "case": row["case"],
            "condition": row["condition"], "pass": row["pass"],
            # 1-based, as summary's "quiet #2"
            "replicate": str(int(inst.get("replicate", 0)) + 1) if repeats > 1 else "",
            "scope": row["scope"] if labelled else "",
            "transport": row["transport"], "memory": row["memory"],
            "size_bytes": str(int(row["bytes"]))}


def _test_metrics(result: ResultFile, base: Dict[str, str], m: MetricSet, max_pairs: int,
                  notes: List[str]) -> None:
    analysis = RunAnalysis(result)
    frame = analysis.summary_frame()
    by_index = {inst.index: inst for inst in analysis.instances}
    seen: Dict[Tuple, int] = {}
    for row in frame.to_dict("records") if not frame.empty else []:
        inst = by_index[int(row["index"])]
        labels = _row_labels(base, row, inst, analysis.labelled)
        identity = tuple(v for k, v in labels.items())
        if identity in seen:
            raise ResultFileError(
                f"{result.path}: test instances {seen[identity]:04d} and {inst.index:04d} have "
                "the same case, condition, pass, replicate and scope: their series could not be "
                "told apart")
        seen[identity] = inst.index
        bandwidth = is_bandwidth(row["metric"])
        family = ("fabscope_bandwidth_bytes_per_second" if bandwidth
                  else "fabscope_latency_seconds")

        def scaled(display_value):  # summary's display units -> base units
            return display_value * BYTES_PER_GB if bandwidth else display_value / US_PER_S

        m.add("fabscope_test_status", {**labels, "status": row["status"]}, 1)
        m.add("fabscope_test_samples", labels, int(row["samples"]))
        scope = next(s for s in analysis.scopes(inst) if s.name == row["scope"])
        stats = analysis.stats(inst, scope)
        m.add("fabscope_test_flagged_samples", labels, stats.flagged_data)
        for column, stat in ROW_STATS:
            m.add(family, {**labels, "stat": stat}, scaled(row[column]))
        m.add("fabscope_impact_ratio", {**labels, "stat": "mean"}, row["impact_mean"])
        m.add("fabscope_impact_ratio", {**labels, "stat": "p99"}, row["impact_p99"])
        for rank in stats.stragglers:
            m.add("fabscope_straggler", {**labels, "host": analysis.hosts.get(int(rank), ""),
                                         "rank": str(int(rank))}, 1)
        rank_family = ("fabscope_rank_bandwidth_bytes_per_second" if bandwidth
                       else "fabscope_rank_latency_seconds")
        for tail in stats.rank_tails.to_dict("records"):
            who = {**labels, "host": analysis.hosts.get(int(tail["rank"]), ""),
                   "rank": str(int(tail["rank"]))}
            for stat in ("p50", "p99"):
                m.add(rank_family, {**who, "stat": stat}, scaled(tail[stat]))
        _pair_metrics(analysis, inst, scope, labels, bandwidth, scaled, m, max_pairs, notes)


def _pair_metrics(analysis: RunAnalysis, inst, scope, labels, bandwidth, scaled, m: MetricSet,
                  max_pairs: int, notes: List[str]) -> None:
    samples = analysis.samples(inst, scope)
    if samples.empty or not (samples["peer"] >= 0).any():
        return   # a collective: no pairs
    pairs = samples.loc[samples["peer"] >= 0, ["rank", "peer"]].drop_duplicates()
    if len(pairs) > max_pairs:
        notes.append(f"{analysis.result.path}: test {inst.index:04d} {inst.get('name', '')}"
                     f"{analysis.scope_suffix(scope)}: {len(pairs)} pairs, more than "
                     f"--max-pairs {max_pairs}: its per-pair series are left out")
        return
    family = ("fabscope_pair_bandwidth_bytes_per_second" if bandwidth
              else "fabscope_pair_latency_seconds")
    for pair in pair_values(samples, inst.metric).to_dict("records"):
        rank, peer = int(pair["rank"]), int(pair["peer"])
        m.add(family, {**labels, "host": analysis.hosts.get(rank, ""), "rank": str(rank),
                       "peer_host": analysis.hosts.get(peer, ""), "peer_rank": str(peer),
                       "stat": "p50"}, scaled(pair["median"]))


def _serving_metrics(result: ResultFile, base: Dict[str, str], m: MetricSet,
                     model: Optional[str], tp: Optional[int]) -> None:
    from .impact import compute_impact, deployment_from_run
    from .models import ModelError
    try:
        deployment = deployment_from_run(result, model, tp)
    except ModelError as exc:   # exit 2, as impact
        raise ModelError(f"{result.path}: the serving deployment: {exc}") from None
    if deployment is None:
        return   # no model named: no serving figures (as the report)
    impact = compute_impact(result, deployment)
    dep = {**base, "model": deployment.model.name, "tp": str(deployment.tp)}
    for row in impact.tp_rows:
        if row.get("p99_ms") is None:
            continue
        labels = {**dep, "series": row["series"], "condition": row["condition"],
                  "ranks": str(row.get("ranks_measured", ""))}
        for stat in ("p50", "p99"):
            m.add("fabscope_serving_tp_communication_seconds", {**labels, "stat": stat},
                  row[f"{stat}_ms"] / 1e3)
            if f"inflation_{stat}" in row:
                m.add("fabscope_serving_tp_inflation_ratio", {**labels, "stat": stat},
                      row[f"inflation_{stat}"])
    for row in impact.kv_rows:
        if "transfer_p99_ms" not in row:
            continue
        labels = {**dep, "series": row["series"], "condition": row["condition"]}
        for stat in ("p50", "p99"):
            m.add("fabscope_serving_kv_transfer_seconds", {**labels, "stat": stat},
                  row[f"transfer_{stat}_ms"] / 1e3)


def collect(results: Sequence[ResultFile], criteria=None, model: Optional[str] = None,
            tp: Optional[int] = None, max_pairs: int = DEFAULT_MAX_PAIRS,
            notes: Optional[List[str]] = None) -> MetricSet:
    """Every family for every file. Raises ResultFileError (two files of one name, a
    criteria file that cannot be used), ModelError (a model that cannot be described)."""
    notes = notes if notes is not None else []
    names: Dict[str, str] = {}
    for result in results:
        if result.name in names:
            raise ResultFileError(
                f"{names[result.name]} and {result.path} have the same file name "
                f"{result.name}: the label file= could not tell their series apart; "
                "export one under another name")
        names[result.name] = result.path
    m = MetricSet()
    for result in results:
        base = file_labels(result)
        _run_metrics(result, base, m)
        _verdict_metrics(result, base, m, criteria)
        _test_metrics(result, base, m, max_pairs, notes)
        _serving_metrics(result, base, m, model, tp)
    return m


# --- writing --------------------------------------------------------------------------------

def write_atomically(text: str, path: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory, renamed
    over it: a reader (node_exporter) sees the old file or the new one, never half of
    one. The temporary name does not end in .prom, so the textfile collector skips it."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        umask = os.umask(0)
        os.umask(umask)
        # mkstemp makes 0600; node_exporter usually runs as another user
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def export_openmetrics(results: Sequence[ResultFile], output: str, criteria=None,
                       model: Optional[str] = None, tp: Optional[int] = None,
                       max_pairs: int = DEFAULT_MAX_PAIRS,
                       stderr: TextIO = sys.stderr) -> MetricSet:
    """Gather, then write OUT (``-``: standard output). Nothing is written on error."""
    notes: List[str] = []
    metrics = collect(results, criteria, model, tp, max_pairs, notes)
    for note in notes:
        print(f"note: {note}", file=stderr)
    text = metrics.render()
    if output == "-":
        sys.stdout.write(text)
        return metrics
    try:
        write_atomically(text, output)
    except OSError as exc:
        raise OSError(f"{output}: cannot be written ({exc.strerror or exc})") from None
    return metrics


def series_count(metrics: MetricSet) -> int:
    return sum(len(f.samples) for f in metrics.families.values())


def parse_text(text: str) -> Iterable[Tuple[str, Dict[str, str], float]]:
    """(name, labels, value) of every sample of a text this module wrote (for scripts and
    the tests; a strict reader of the subset above, not of any exposition)."""
    sample = re.compile(r'^([a-zA-Z_][a-zA-Z0-9_]*)(?:\{(.*)\})? (\S+)$')
    label = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = sample.match(line)
        if not match:
            raise ValueError(f"not a sample line: {line!r}")
        name, body, value = match.groups()
        labels: Dict[str, str] = {}
        pos = 0
        while body and pos < len(body):
            lm = label.match(body, pos)
            if not lm:
                raise ValueError(f"bad labels at {body[pos:]!r} in {line!r}")
            raw = lm.group(2)
            labels[lm.group(1)] = re.sub(r"\\([\\\"n])",
                                         lambda e: "\n" if e.group(1) == "n" else e.group(1), raw)
            pos = lm.end()
        yield name, labels, float(value)
