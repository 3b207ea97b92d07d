"""The OpenMetrics side of `export`: the table of every family export writes, their
samples, the text they render to, and a strict reader of that text. What the format
allows and why is in export.py's docstring."""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Tuple


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
               "1 PASS, 0 FAIL or CANNOT TELL (the line verdict --brief prints)."),
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
    FamilySpec("fabscope_kind_seconds", "seconds", "A kind's own time figure of a test "
               "instance (its analysis module, kinds/), named by the figure label: an "
               "all-to-all phase's p50, a fault drill's detection, an API request's time to "
               "first byte, ..."),
    FamilySpec("fabscope_kind_bytes_per_second", "bytes_per_second", "A kind's own bandwidth "
               "figure of a test instance, named by the figure label: a collective's bus "
               "bandwidth per call or back to back, a reference tool's bandwidth."),
    FamilySpec("fabscope_kind_value", "", "A kind's own count or ratio of a test instance, "
               "named by the figure label: a serving mix class's inflation, an all-to-all's "
               "load imbalance, API requests answered."),
    FamilySpec("fabscope_serving_tp_communication_seconds", "seconds",
               "Time per decode step (one generated token per sequence) spent in "
               "tensor-parallel all-reduces for the model, composed from the raw samples, "
               "by stat p50 or p99 (the impact command's ms per token)."),
    FamilySpec("fabscope_serving_tp_inflation_ratio", "ratio", "TP communication per token "
               "under a condition over the same quiet, by stat p50 or p99."),
    FamilySpec("fabscope_serving_kv_transfer_seconds", "seconds", "KV cache transfer of one "
               "request of the prompt length (start to usable), by stat p50 or p99."),
    FamilySpec("fabscope_serving_kv_cif_ratio", "ratio", "KV push congestion impact factor: "
               "queue plus transfer of one request under a condition over the same quiet, by "
               "stat p50, p99 or p99.9 (absent where too few requests)."),
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
