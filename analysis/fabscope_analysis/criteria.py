"""Criteria files for `accept`: YAML loading with line numbers and strict validation.

Format (docs/analysis.md has the full description)::

    fabscope_criteria: 1
    require_complete: true
    allowed_status: [passed]
    rules:
      - name: small messages, quiet
        match: {kind: latency, condition: quiet, bytes: {max: 65536}}
        limits: {p99_us: {max: 10}}
        baseline: {p99_us: {max_ratio: 1.1}}
        tolerance: {p99_us: {coverage: 0.95, confidence: 0.95}}
        outliers: {rank_p99_max_ratio_to_median: 2.0, false_discovery_rate: 0.05}

Every key of format 1 keeps working; what a key means is in docs/analysis.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import yaml

from .errors import CriteriaError

CRITERIA_VERSION = 1

LATENCY_METRICS = {"p50_us", "p99_us", "p999_us", "max_us", "mean_us"}
BANDWIDTH_METRICS = {"p50_gbps", "p99_gbps", "p999_gbps", "worst_gbps", "mean_gbps"}
IMPACT_METRICS = {"impact_mean", "impact_p99"}
COUNT_METRICS = {"samples", "flagged_samples"}
ALL_METRICS = LATENCY_METRICS | BANDWIDTH_METRICS | IMPACT_METRICS | COUNT_METRICS
RATIO_METRICS = LATENCY_METRICS | BANDWIDTH_METRICS
OUTLIER_RULES = {"pair_min_fraction_of_median", "rank_p99_max_ratio_to_median"}
OUTLIER_KEYS = OUTLIER_RULES | {"false_discovery_rate"}
DEFAULT_FDR = 0.05
TOLERANCE_KEYS = ("coverage", "confidence")
MATCH_KEYS = {"kind", "condition", "name", "case", "transport", "memory", "pattern", "pass",
              "metric", "bytes", "scope"}
RULE_KEYS = {"name", "match", "limits", "baseline", "outliers", "optional", "description",
             "reference_ratio_max", "tolerance"}
TOP_KEYS = {"fabscope_criteria", "require_complete", "allowed_status", "rules", "description",
            "diagnose", "allow_validity", "slo"}   # slo: read by `fit` (serving/slo.py)
# /validity findings (docs/file-format.md) a criteria file may allow
VALIDITY_WHATS = ("oversubscribed", "clock_uncertainty", "cpu_governor", "busy_host")


class _LineDict(dict):
    line = 0
    key_lines: Dict[str, int] = {}


class LineLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = key_node.value
        if key in seen:
            raise CriteriaError(loader.name, key_node.start_mark.line + 1,
                                f"duplicate key {key!r} (first on line {seen[key]})")
        seen[key] = key_node.start_mark.line + 1
    mapping = _LineDict(loader.construct_mapping(node, deep=True))
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = seen
    return mapping


LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


@dataclass
class Bound:
    min: Optional[float] = None
    max: Optional[float] = None


@dataclass
class Tolerance:
    """A limit from known-good runs: `coverage` of healthy runs' figures below (above,
    for bandwidth) it, with `confidence` (accept_limits.check_tolerance)."""
    coverage: float = 0.95
    confidence: float = 0.95


@dataclass
class Rule:
    name: str
    line: int
    match: Dict[str, object] = field(default_factory=dict)
    limits: Dict[str, Bound] = field(default_factory=dict)
    baseline: Dict[str, Bound] = field(default_factory=dict)  # min/max of current/baseline
    outliers: Dict[str, float] = field(default_factory=dict)
    tolerance: Dict[str, Tolerance] = field(default_factory=dict)  # needs 2+ --baseline runs
    optional: bool = False
    # kind: reference (reference.py): fabscope's figure and a reference tool's of the same
    # size and transport may differ by at most this factor, either way.
    reference_ratio_max: Optional[float] = None


@dataclass
class Criteria:
    path: str
    rules: List[Rule]
    require_complete: bool = True
    allowed_status: Optional[List[str]] = None
    # diagnose (diagnose.py): "off", "on" (a culprit host fails) or "strict" (also fails
    # when diagnose cannot tell)
    diagnose: str = "off"
    # /validity findings that do not fail the run (what codes); every other finding
    # fails it. `allow_validity: true` allows them all.
    allow_validity: List[str] = field(default_factory=list)

    def needs_baseline(self) -> bool:
        return any(r.baseline or r.tolerance for r in self.rules)

    def baseline_runs_needed(self) -> int:
        return 2 if any(r.tolerance for r in self.rules) else 1 if self.needs_baseline() else 0


def line_of(obj, key=None, default=0) -> int:
    if isinstance(obj, _LineDict):
        if key is not None and key in obj.key_lines:
            return obj.key_lines[key]
        return obj.line
    return default


def _expect_mapping(path, obj, what, line) -> _LineDict:
    if not isinstance(obj, dict):
        raise CriteriaError(path, line, f"{what} must be a mapping (key: value), "
                                        f"found {type(obj).__name__}")
    return obj


def _check_keys(path, mapping, allowed, what):
    for key in mapping:
        if key not in allowed:
            raise CriteriaError(path, line_of(mapping, key),
                                f"unknown key {key!r} in {what} (known: "
                                f"{', '.join(sorted(allowed))})")


def _number(path, value, line, what) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CriteriaError(path, line, f"{what} must be a number, found {value!r}")
    return float(value)


def _bound(path, spec, line, what, keys=("min", "max")) -> Bound:
    spec = _expect_mapping(path, spec, what, line)
    _check_keys(path, spec, set(keys), what)
    if not spec:
        raise CriteriaError(path, line_of(spec, default=line), f"{what} needs {' or '.join(keys)}")
    values = {k: _number(path, v, line_of(spec, k, line), f"{what}.{k}") for k, v in spec.items()}
    return Bound(min=values.get(keys[0]), max=values.get(keys[1]))


def _parse_match(path, spec, line) -> Dict[str, object]:
    spec = _expect_mapping(path, spec, "match", line)
    _check_keys(path, spec, MATCH_KEYS, "match")
    out: Dict[str, object] = {}
    for key, value in spec.items():
        kline = line_of(spec, key, line)
        if key == "bytes":
            if isinstance(value, dict):
                out[key] = _bound(path, value, kline, "match.bytes")
            else:
                v = _number(path, value, kline, "match.bytes")
                out[key] = Bound(min=v, max=v)
        elif isinstance(value, list):
            if not all(isinstance(v, (str, int)) for v in value):
                raise CriteriaError(path, kline, f"match.{key} must be a string or a list of "
                                                 "strings")
            out[key] = [str(v) for v in value]
        elif isinstance(value, (str, int)):
            out[key] = [str(value)]
        else:
            raise CriteriaError(path, kline, f"match.{key} must be a string or a list of strings")
    return out


def _parse_rule(path, spec, index, line) -> Rule:
    spec = _expect_mapping(path, spec, f"rule {index + 1}", line)
    line = line_of(spec, default=line)
    _check_keys(path, spec, RULE_KEYS, "a rule")
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip():
        raise CriteriaError(path, line, f"rule {index + 1} needs a 'name' (a string)")
    rule = Rule(name=name.strip(), line=line)
    if "match" in spec:
        rule.match = _parse_match(path, spec["match"], line_of(spec, "match", line))
    if "limits" in spec:
        limits = _expect_mapping(path, spec["limits"], "limits", line_of(spec, "limits", line))
        _check_keys(path, limits, ALL_METRICS, "limits")
        rule.limits = {m: _bound(path, b, line_of(limits, m, line), f"limits.{m}")
                       for m, b in limits.items()}
    if "baseline" in spec:
        base = _expect_mapping(path, spec["baseline"], "baseline", line_of(spec, "baseline", line))
        _check_keys(path, base, RATIO_METRICS, "baseline")
        rule.baseline = {m: _bound(path, b, line_of(base, m, line), f"baseline.{m}",
                                   keys=("min_ratio", "max_ratio")) for m, b in base.items()}
    if "outliers" in spec:
        out = _expect_mapping(path, spec["outliers"], "outliers", line_of(spec, "outliers", line))
        _check_keys(path, out, OUTLIER_KEYS, "outliers")
        if not any(k in OUTLIER_RULES for k in out):
            raise CriteriaError(path, line_of(out, default=line), "outliers needs "
                                + " or ".join(sorted(OUTLIER_RULES)))
        for key, value in out.items():
            v = _number(path, value, line_of(out, key, line), f"outliers.{key}")
            if key == "false_discovery_rate" and not 0 < v < 1:
                raise CriteriaError(path, line_of(out, key, line),
                                    f"outliers.{key} must be in (0, 1), found {v}")
            if key == "pair_min_fraction_of_median" and not 0 < v <= 1:
                raise CriteriaError(path, line_of(out, key, line),
                                    f"outliers.{key} must be in (0, 1], found {v}")
            if key == "rank_p99_max_ratio_to_median" and v < 1:
                raise CriteriaError(path, line_of(out, key, line),
                                    f"outliers.{key} must be >= 1, found {v}")
            rule.outliers[key] = v
    if "tolerance" in spec:
        rule.tolerance = _parse_tolerance(path, spec["tolerance"], line_of(spec, "tolerance", line))
    if "reference_ratio_max" in spec:
        kline = line_of(spec, "reference_ratio_max", line)
        v = _number(path, spec["reference_ratio_max"], kline, "reference_ratio_max")
        if v < 1:
            raise CriteriaError(path, kline, f"reference_ratio_max must be >= 1 (a factor either "
                                             f"way), found {v}")
        rule.reference_ratio_max = v
    if "optional" in spec:
        if not isinstance(spec["optional"], bool):
            raise CriteriaError(path, line_of(spec, "optional", line), "optional must be true/false")
        rule.optional = spec["optional"]
    if not (rule.limits or rule.baseline or rule.outliers or rule.reference_ratio_max
            or rule.tolerance):
        raise CriteriaError(path, line, f"rule {rule.name!r} checks nothing: give limits, "
                                        "baseline, tolerance, outliers or reference_ratio_max")
    return rule


def _parse_tolerance(path, spec, line) -> Dict[str, Tolerance]:
    spec = _expect_mapping(path, spec, "tolerance", line)
    _check_keys(path, spec, RATIO_METRICS, "tolerance")
    out = {}
    for metric, body in spec.items():
        mline = line_of(spec, metric, line)
        body = _expect_mapping(path, body if body is not None else {}, f"tolerance.{metric}", mline)
        _check_keys(path, body, set(TOLERANCE_KEYS), f"tolerance.{metric}")
        values = {}
        for key in TOLERANCE_KEYS:
            if key in body:
                v = _number(path, body[key], line_of(body, key, mline), f"tolerance.{metric}.{key}")
                if not 0.5 <= v < 1:
                    raise CriteriaError(path, line_of(body, key, mline),
                                        f"tolerance.{metric}.{key} must be in [0.5, 1), found {v}")
                values[key] = v
        out[metric] = Tolerance(**values)
    return out


def _parse_options(path, doc, criteria: Criteria) -> None:
    """The file's top-level options (everything but the rules) into `criteria`."""
    if "require_complete" in doc:
        if not isinstance(doc["require_complete"], bool):
            raise CriteriaError(path, line_of(doc, "require_complete"),
                                "require_complete must be true/false")
        criteria.require_complete = doc["require_complete"]
    if "diagnose" in doc:
        value = doc["diagnose"]
        if value is True or value is False:
            criteria.diagnose = "on" if value else "off"
        elif value == "strict":
            criteria.diagnose = "strict"
        else:
            raise CriteriaError(path, line_of(doc, "diagnose"),
                                f"diagnose must be true, false or strict, found {value!r}")
    if "allow_validity" in doc:
        value = doc["allow_validity"]
        if value is True or value is False:
            criteria.allow_validity = list(VALIDITY_WHATS) if value else []
        elif isinstance(value, list) and all(v in VALIDITY_WHATS for v in value):
            criteria.allow_validity = list(value)
        else:
            raise CriteriaError(path, line_of(doc, "allow_validity"),
                                f"allow_validity must be true, false or a list of "
                                f"{', '.join(VALIDITY_WHATS)}, found {value!r}")
    if "allowed_status" in doc:
        status = doc["allowed_status"]
        if status is None:
            criteria.allowed_status = None
        elif isinstance(status, list) and all(isinstance(s, str) for s in status):
            criteria.allowed_status = status
        else:
            raise CriteriaError(path, line_of(doc, "allowed_status"),
                                "allowed_status must be a list of statuses (passed, failed, "
                                "timeout, error, skipped) or null")


def parse_criteria_text(text: str, path: str = "<criteria>") -> Criteria:
    try:
        loader = LineLoader(text)
        loader.name = path
        try:
            doc = loader.get_single_data()
        finally:
            loader.dispose()
    except CriteriaError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        problem = getattr(exc, "problem", None) or str(exc)
        raise CriteriaError(path, line, f"not valid YAML: {problem}") from None
    doc = _expect_mapping(path, doc, "the criteria file", 1)
    _check_keys(path, doc, TOP_KEYS, "the criteria file")
    version = doc.get("fabscope_criteria")
    if version != CRITERIA_VERSION:
        raise CriteriaError(path, line_of(doc, "fabscope_criteria", 1),
                            f"fabscope_criteria must be {CRITERIA_VERSION} (the criteria format "
                            f"version), found {version!r}")
    criteria = Criteria(path=path, rules=[], allowed_status=["passed"])
    _parse_options(path, doc, criteria)
    rules = doc.get("rules")
    if not isinstance(rules, list) or not rules:
        raise CriteriaError(path, line_of(doc, "rules", 1), "rules must be a non-empty list")
    rules_line = line_of(doc, "rules", 1)
    criteria.rules = [_parse_rule(path, spec, i, rules_line) for i, spec in enumerate(rules)]
    names = {}
    for rule in criteria.rules:
        if rule.name in names:
            raise CriteriaError(path, rule.line, f"rule name {rule.name!r} used twice (first on "
                                                 f"line {names[rule.name]})")
        names[rule.name] = rule.line
    return criteria


def load_criteria(path: str) -> Criteria:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise CriteriaError(path, 0, f"cannot read criteria file ({exc.strerror})") from None
    return parse_criteria_text(text, path)
