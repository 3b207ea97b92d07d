"""Per-run analysis shared by summary, report, compare and accept.

Derived samples and statistics are computed once per instance and cached; quiet and
congested instances are paired by ``case`` (via ``quiet_index`` when the file has it).
Statistics are per site scope (scopes.py): samples inside a site and samples between
sites are never summarised together. A run without site labels has one scope.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

from .reader import FLAG_AUXILIARY_MASK, LEVEL_NAMES, ResultFile, TestInstance
from .scopes import WHOLE, Scope, SiteScopes, group_of, scope_label, site_of_rank
from .stats import (InstanceStats, figure_value, impact_factor, instance_stats, is_bandwidth,
                    unit_of, with_derived, worse_is_higher_times)


def instance_key(inst: TestInstance) -> Tuple[str, str, str]:
    """What identifies 'the same measurement' across runs: case, condition, pass."""
    return (str(inst.get("case", inst.get("name", ""))), str(inst.get("condition", "")),
            str(inst.get("pass", "")))


def condition_label(inst: TestInstance, replicate: bool = True) -> str:
    """'quiet', 'congested', 'quiet (serial-retest)', 'quiet #2' (the second of a
    scenario's `repeats`): THE row label of a condition and pass, used by summary,
    report, compare (text, HTML, plots) and accept alike (and by the run's closing
    table). compare pools a case's replicates into one row: replicate=False."""
    label = str(inst.get("condition", "") or "?")
    if replicate and int(inst.get("repeats", 1) or 1) > 1:
        label += f" #{int(inst.get('replicate', 0)) + 1}"
    passname = str(inst.get("pass", "") or "")
    return label + (f" ({passname})" if passname not in ("", "parallel") else "")


def case_label(inst: TestInstance) -> str:
    """'p2p-latency/8B [quiet (serial-retest)]': a case and its condition label."""
    return f"{inst.get('case', inst.get('name', '?'))} [{condition_label(inst)}]"


def describe_instance(inst: TestInstance) -> str:
    return (f"test {inst.index:04d} {inst.get('name', '?')} [{inst.get('kind', '?')}, "
            f"{inst.get('bytes', '?')} B, condition {condition_label(inst)}]")


class RunAnalysis:
    def __init__(self, result: ResultFile, straggler_ratio: float = 2.0):
        self.result = result
        self.straggler_ratio = straggler_ratio
        self.instances: List[TestInstance] = result.instances()
        self.hosts: Dict[int, str] = result.host_of_rank()
        self.sites: Dict[int, str] = site_of_rank(result.ranks())
        # True when any rank has a site label: every statistic is then per site scope.
        self.labelled = any(bool(s) for s in self.sites.values())
        # Samples are the big part of a file: keep only the few most recently used.
        self._samples: "OrderedDict[int, pd.DataFrame]" = OrderedDict()
        self._stats: Dict[Tuple[int, str], InstanceStats] = {}
        self._scopes: Dict[int, List[Scope]] = {}

    SAMPLE_CACHE_SIZE = 4

    def _all_samples(self, inst: TestInstance) -> pd.DataFrame:
        if inst.index in self._samples:
            self._samples.move_to_end(inst.index)
        else:
            raw = inst.samples()
            if len(raw):
                # Auxiliary rows (incast receiver aggregate, latency probe) are not
                # headline samples, exactly as in the file's own statistics.
                raw = raw[(raw["flags"].astype("int64") & FLAG_AUXILIARY_MASK) == 0]
            s = with_derived(raw.reset_index(drop=True), inst.sample_divisor)
            s["scope"] = self.site_scopes(inst, s).assign(s)
            self._samples[inst.index] = s
            while len(self._samples) > self.SAMPLE_CACHE_SIZE:
                self._samples.popitem(last=False)
        return self._samples[inst.index]

    def site_scopes(self, inst: TestInstance, samples: pd.DataFrame) -> SiteScopes:
        return SiteScopes(self.sites, group_of(inst, samples))

    def scopes(self, inst: TestInstance) -> List[Scope]:
        """The instance's site scopes in display order ([WHOLE] without site labels)."""
        if inst.index not in self._scopes:
            s = self._all_samples(inst)
            self._scopes[inst.index] = self.site_scopes(inst, s).scopes_in(s)
        return self._scopes[inst.index]

    def samples(self, inst: TestInstance, scope: Optional[Scope] = None) -> pd.DataFrame:
        """Samples with duration_ns/latency_ns/gbps/scope columns (cached, bounded).

        With ``scope`` only that scope's samples; without, every sample of the instance
        (which mixes scopes in a run with site labels: use it for per-pair views only).
        """
        s = self._all_samples(inst)
        if scope is None or scope == WHOLE:
            return s
        return s[s["scope"] == scope.name]

    def stats(self, inst: TestInstance, scope: Optional[Scope] = None) -> InstanceStats:
        """Statistics of one scope (default: the instance's first scope)."""
        if scope is None:
            scope = self.scopes(inst)[0]
        key = (inst.index, scope.name)
        if key not in self._stats:
            self._stats[key] = instance_stats(inst, self.samples(inst, scope),
                                              self.straggler_ratio)
        return self._stats[key]

    def quiet_partner(self, inst: TestInstance) -> Optional[TestInstance]:
        """The quiet instance a congested one is compared with (None for quiet ones)."""
        if str(inst.get("condition", "quiet")) == "quiet":
            return None
        by_index = {i.index: i for i in self.instances}
        quiet_index = inst.get("quiet_index")
        if quiet_index is not None and int(quiet_index) in by_index:
            return by_index[int(quiet_index)]
        case = inst.get("case")
        candidates = [i for i in self.instances
                      if i.get("case") == case and str(i.get("condition")) == "quiet"]
        same_pass = [i for i in candidates if i.get("pass") == inst.get("pass")]
        chosen = same_pass or candidates
        return chosen[0] if chosen else None

    def quiet_scope(self, inst: TestInstance, scope: Scope) -> Optional[Scope]:
        """The same scope in the quiet partner (None when it has no such scope)."""
        quiet = self.quiet_partner(inst)
        if quiet is None:
            return None
        return next((q for q in self.scopes(quiet) if q.name == scope.name), None)

    def impacts(self, inst: TestInstance, scope: Optional[Scope] = None) -> Tuple[float, float]:
        """(impact_mean, impact_p99) of one scope against the same scope run quiet."""
        if scope is None:
            scope = self.scopes(inst)[0]
        quiet = self.quiet_partner(inst)
        quiet_scope = self.quiet_scope(inst, scope)
        if quiet is None or quiet_scope is None:
            return float("nan"), float("nan")
        q, c = self.stats(quiet, quiet_scope), self.stats(inst, scope)
        return (impact_factor(inst.metric, q.mean, c.mean),
                impact_factor(inst.metric, q.p99, c.p99))

    def summary_frame(self) -> pd.DataFrame:
        """One row per instance and site scope: the numbers of the `summary` command."""
        rows = []
        for inst in self.instances:
            for scope in self.scopes(inst):
                rows.append(self._summary_row(inst, scope))
        return pd.DataFrame(rows)

    def _summary_row(self, inst: TestInstance, scope: Scope) -> dict:
        st = self.stats(inst, scope)
        impact_mean, impact_p99 = self.impacts(inst, scope)
        status = str(inst.get("status", "?"))
        error = str(inst.get("error", "") or "")
        flagged = []
        if st.flagged_data:
            flagged.append(f"{st.flagged_data} data-check")
        return {
            "index": inst.index, "name": inst.get("name", ""), "kind": inst.get("kind", ""),
            "case": inst.get("case", ""), "condition": inst.get("condition", ""),
            "label": condition_label(inst),
            "transport": inst.get("transport", ""), "memory": inst.get("memory", ""),
            "pass": inst.get("pass", ""), "bytes": inst.get("bytes", 0),
            "scope": scope.name, "crosses_sites": scope.crosses_sites,
            "metric": inst.metric, "unit": unit_of(inst.metric), "samples": st.n_samples,
            "p50": st.p50, "p99": st.p99, "p99.9": st.p999, "worst": st.worst,
            "mean": st.mean, "impact_mean": impact_mean, "impact_p99": impact_p99,
            "status": status, "flagged": ", ".join(flagged), "error": error,
            "stragglers": ", ".join(self.describe_rank(r) for r in st.stragglers),
            "spans_sites": str(inst.get("spans_sites", "") or ""),
        }

    def level_frame(self, name: Optional[str] = None) -> pd.DataFrame:
        """One row per instance, site scope and topology level its pairs cross
        (samples.level), for the instances whose samples cross more than one level:
        the split by level beside the split by site. ``name``: one test only."""
        rows = []
        for inst in self.instances:
            if name is not None and inst.get("name", "") != name:
                continue
            for scope in self.scopes(inst):
                s = self.samples(inst, scope)
                if "level" not in s.columns or not len(s):
                    continue
                levels = sorted(int(v) for v in pd.unique(s["level"]) if int(v) > 0)
                if len(levels) < 2:
                    continue
                for level in levels:
                    part = s[s["level"] == level]
                    times = worse_is_higher_times(part, inst.metric)
                    b = part["bytes"].to_numpy(dtype=np.float64)
                    rows.append({
                        "index": inst.index, "name": inst.get("name", ""),
                        "bytes": inst.get("bytes", 0), "label": condition_label(inst),
                        "scope": scope.name, "level": LEVEL_NAMES.get(level, str(level)),
                        "pairs": int(len(part.drop_duplicates(["rank", "peer"]))),
                        "samples": int(len(part)), "unit": unit_of(inst.metric),
                        "p50": figure_value(inst.metric, "p50", times, b),
                        "p99": figure_value(inst.metric, "p99", times, b),
                        "worst": figure_value(inst.metric, "worst", times, b),
                    })
        return pd.DataFrame(rows)

    def scope_suffix(self, scope: Scope) -> str:
        """' [site=A]' in a run with site labels, '' otherwise."""
        return f" [{scope_label(scope)}]" if self.labelled else ""

    def describe_rank(self, rank: int) -> str:
        host = self.hosts.get(int(rank))
        return f"{int(rank)}@{host}" if host else str(int(rank))


def number_or_none(value) -> Optional[float]:
    """An attribute's value as a float; None when it is absent or not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def format_number(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "-"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    v = float(value)
    if v == 0:
        return "0"
    if v.is_integer() and abs(v) < 1e6:
        return str(int(v))
    mag = abs(v)
    if mag >= 1000:
        return f"{v:,.0f}"
    if mag >= 100:
        return f"{v:.1f}"
    if mag >= 1:
        return f"{v:.{digits - 1}f}".rstrip("0").rstrip(".") if digits > 1 else f"{v:.0f}"
    return f"{v:.{digits}g}"


def format_bytes(n) -> str:
    try:
        n = int(n)
    except (TypeError, ValueError):
        return str(n)
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def size_text(n: float) -> str:
    """A byte count in the largest binary unit it reaches, cut (not rounded) to four
    significant digits, so a size never reads larger than it is: a 1.5 MiB request reads
    "1.5 MiB", a message of 63.94 KiB is not the 64 KiB it falls short of, and one byte
    under 1 MiB reads "1023 KiB"."""
    value, unit = float(n), "B"
    for name, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            value, unit = n / size, name
            break
    if value >= 1:
        scale = 10.0 ** (3 - math.floor(math.log10(value)))
        value = math.floor(value * scale + 1e-9) / scale
    return f"{value:.4g} {unit}"


def metric_label(metric: str) -> str:
    return "GB/s (tails = slow side)" if is_bandwidth(metric) else "latency us"
