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
- per test instance, its kind's own figures (an all-to-all's phases, a drill's detection,
  an API request's anatomy, a reference tool's figure, ...): kinds.compute_kinds(), the
  figures summary prints under the instance's row, rendered by the kind's `metrics`;
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

import os
import sys
import tempfile
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Dict, List, Optional, Sequence, TextIO, Tuple

from .accept_result import OUTCOMES, outcome_counts
from .errors import CriteriaError, ResultFileError
from .export_format import DIAGNOSIS_ANSWERS, MetricSet
from .kinds import compute_kinds
from .kinds.base import BYTES_PER_SECOND, NO_UNIT, SECONDS
from .serving.impact import compute_impact, deployment_from_run
from .models import ModelError
from .reader import ResultFile
from .run_analysis import RunAnalysis
from .stats import is_bandwidth, pair_values
from .verdict import compute_verdict

# Per instance and scope, at most this many pairs get per-pair series by default: an
# all-pairs test on n ranks has n(n-1) pairs, 65 280 at 256 ranks, too many series for
# one textfile. 4096 covers 64 ranks.
DEFAULT_MAX_PAIRS = 4096

# summary's columns -> the `stat` label (the same names as summary's table headers)
ROW_STATS = (("p50", "p50"), ("p99", "p99"), ("p99.9", "p99.9"), ("mean", "mean"),
             ("worst", "worst"))
US_PER_S = 1e6
# the family of each unit a kind's own figures come in (kinds/base.py KindMetric)
KIND_FAMILIES = {SECONDS: "fabscope_kind_seconds", BYTES_PER_SECOND: "fabscope_kind_bytes_per_second",
                 NO_UNIT: "fabscope_kind_value"}
BYTES_PER_GB = 1e9   # GB/s = 10^9 B/s (docs/analysis.md conventions)


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
    try:
        verdict = compute_verdict(result, criteria)
    except CriteriaError as exc:
        raise ResultFileError(f"{result.path}: the criteria in force: {exc}") from None
    labels = {**base, "criteria": os.path.basename(verdict.criteria.path)}
    m.add("fabscope_verdict_passed", labels, verdict.passed)
    failed = [c for c in verdict.checks if not c.passed]
    # the outcomes accept counts apart (a check that cannot tell did not pass)
    counts = outcome_counts(verdict.checks)
    for label, words in OUTCOMES:
        m.add("fabscope_verdict_checks", {**labels, "outcome": words.replace(" ", "_")},
              counts[label])
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
    _kind_metrics(analysis, frame, base, m)


def _kind_metrics(analysis: RunAnalysis, frame, base: Dict[str, str], m: MetricSet) -> None:
    """Each instance's own figures of its kind, with the test labels of its first scope's
    row (the scope label left out: a kind's figures are the whole instance's)."""
    kinds = compute_kinds(analysis, export=True)
    by_index = {inst.index: inst for inst in analysis.instances}
    rows = frame.drop_duplicates("index").to_dict("records") if not frame.empty else []
    for row in rows:
        inst = by_index[int(row["index"])]
        labels = _row_labels(base, row, inst, labelled=False)
        for metric in kinds.metrics(inst.index):
            m.add(KIND_FAMILIES[metric.unit], {**labels, "figure": metric.figure,
                                               **dict(metric.labels)}, metric.value)


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
        for stat, value in row.get("cif", {}).items():
            if value is not None:
                m.add("fabscope_serving_kv_cif_ratio", {**labels, "stat": stat}, value)


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
