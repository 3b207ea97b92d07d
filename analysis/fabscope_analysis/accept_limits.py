"""accept's figure rules: a figure, its interval, and a limit.

PASS when the interval's bound on the bad side is on the good side of the limit, FAIL
when the whole interval is on the bad side, CANNOT TELL when the limit lies inside it.

- p50/p99/p99.9/mean of an instance: 95 % bootstrap interval over blocks of each
  rank's consecutive iterations, every rank kept (the ranks are the fabric judged;
  resampling.figure_interval). One run: run-to-run variation is not in it.
- max/worst, samples, flagged_samples: counted, not estimated: judged as they are.
- impact: the bootstrap interval of congested / quiet (both resampled).
- baseline ratio, one baseline run: bootstrap interval of this run / the baseline (both
  resampled; within-run variation only, said in the details); two or more baseline
  runs: t interval on log figures (this run against the baselines' mean, their spread
  as run-to-run variation, df = runs - 1).
- tolerance: the limit itself comes from two or more known-good runs: the one-sided
  normal tolerance limit of their log figures (Krishnamoorthy & Mathew 2009) with the
  rule's coverage and confidence; this run's interval is then judged against it.
"""

from __future__ import annotations

import math
from typing import Dict, Tuple

import numpy as np
import pandas as pd

from .accept_result import CheckResult, named_list
from .criteria import BANDWIDTH_METRICS, LATENCY_METRICS, Bound, Rule
from .inference import log_difference_interval, tolerance_limit
from .reader import FLAG_DATA_CHECK_FAILED, TestInstance
from .kinds import analysis_of
from .resampling import Laid, figure_interval, rank_units, thin
from .run_analysis import RunAnalysis, format_number, instance_key
from .scopes import Scope
from .stats import figure_value, impact_factor, is_bandwidth, worse_is_higher_times

LEVEL = 0.95          # two-sided: each bound is one-sided at 97.5 %
RESAMPLES = 200
SEED = 12345
MAX_SAMPLES = 10000   # more are thinned by a fixed stride per rank (wider, never narrower)
BOOTSTRAP_STATS = ("p50", "p99", "p99.9", "mean")
EXACT_KEYS = {"samples", "flagged_samples", "max_us", "worst_gbps"}
PASS, FAIL, CANNOT_TELL = "pass", "fail", "cannot tell"
Interval = Tuple[float, float, float]  # value, low, high


def applicable(key: str, inst: TestInstance) -> bool:
    if analysis_of(inst.get("kind")).reference_tool:
        return False  # an external tool measured it: no fabscope samples to judge
    if key in LATENCY_METRICS:
        return not is_bandwidth(inst.metric)
    if key in BANDWIDTH_METRICS:
        return is_bandwidth(inst.metric)
    return True


def unit_of_key(key: str) -> str:
    return " us" if key.endswith("_us") else " GB/s" if key.endswith("_gbps") else ""


def stat_of(key: str) -> str:
    """'p99_us' -> 'p99', 'p999_gbps' -> 'p99.9', 'impact_mean' -> 'mean'."""
    stat = key.split("_", 1)[1] if key.startswith("impact_") else key.rsplit("_", 1)[0]
    return {"p999": "p99.9", "max": "worst"}.get(stat, stat)


def judge(interval: Interval, bound: Bound) -> str:
    """PASS / FAIL / CANNOT TELL of an interval against a min and/or max."""
    value, low, high = interval
    if not np.isfinite(value):
        return FAIL
    states = []
    if bound.max is not None:
        states.append(PASS if high <= bound.max else FAIL if low > bound.max else CANNOT_TELL)
    if bound.min is not None:
        states.append(PASS if low >= bound.min else FAIL if high < bound.min else CANNOT_TELL)
    return FAIL if FAIL in states else CANNOT_TELL if CANNOT_TELL in states else PASS


def bound_text(bound: Bound, unit: str = "", ratio: bool = False) -> str:
    suffix = "x" if ratio else unit
    parts = [f">= {format_number(bound.min)}{suffix}"] if bound.min is not None else []
    if bound.max is not None:
        parts.append(f"<= {format_number(bound.max)}{suffix}")
    return " and ".join(parts)


def interval_text(interval: Interval, unit: str) -> str:
    value, low, high = interval
    if low == value == high:
        return f"{format_number(value)}{unit}"
    return f"{format_number(value)}{unit} [95% interval {format_number(low)}, {format_number(high)}]"


def group_values(samples: pd.DataFrame, metric: str, key: str, by) -> Dict[object, float]:
    """Per group (rank, or (rank, peer)) value of the figure of criteria key `key`."""
    out = {}
    if samples.empty or key in ("samples", "flagged_samples"):
        return out
    for group_key, group in samples.groupby(by, sort=True):
        out[group_key] = figure_value(metric, stat_of(key), worse_is_higher_times(group, metric),
                                      group["bytes"].to_numpy(dtype=np.float64))
    return out


def _violates(value: float, bound: Bound) -> bool:
    return not np.isfinite(value) or (bound.min is not None and value < bound.min) or \
        (bound.max is not None and value > bound.max)


class Figures:
    """Figures of one run's instances, with their intervals (cached per instance)."""

    def __init__(self, analysis: RunAnalysis):
        self.a = analysis
        self._cache: Dict[Tuple[int, str, str], Interval] = {}
        self._boot: Dict[Tuple[int, str, str], Dict[str, Interval]] = {}

    def interval(self, inst: TestInstance, scope: Scope, key: str) -> Interval:
        cache_key = (inst.index, scope.name, key)
        if cache_key not in self._cache:
            self._cache[cache_key] = self._compute(inst, scope, key)
        return self._cache[cache_key]

    def _compute(self, inst: TestInstance, scope: Scope, key: str) -> Interval:
        s = self.a.samples(inst, scope)
        if key == "samples":
            return (float(len(s)),) * 3
        if key == "flagged_samples":
            n = float(np.count_nonzero(s["flags"].to_numpy(dtype=np.int64) & FLAG_DATA_CHECK_FAILED)) \
                if len(s) else 0.0
            return (n, n, n)
        if key.startswith("impact_"):
            return self._impact(inst, scope, key)
        st = self.a.stats(inst, scope)
        value = st.value(stat_of(key))
        if key in EXACT_KEYS or not len(s):
            return (value, value, value)
        _, low, high = self._bootstrap(inst, scope)[stat_of(key)]
        return (value, min(low, value), max(high, value))

    def _bootstrap(self, inst: TestInstance, scope: Scope) -> Dict[str, Interval]:
        """Every figure of the instance's scope from one set of bootstrap draws."""
        key = (inst.index, scope.name, "*")
        if key not in self._boot:
            units = [[rank_units(self.a.samples(inst, scope), inst.metric)]]
            found = figure_interval(inst.metric, units, BOOTSTRAP_STATS, resamples=RESAMPLES,
                                    seed=SEED, level=LEVEL, max_samples=MAX_SAMPLES)
            self._boot[key] = dict(zip(BOOTSTRAP_STATS, found))
        return self._boot[key]

    def _impact(self, inst: TestInstance, scope: Scope, key: str) -> Interval:
        value = self.a.impacts(inst, scope)[0 if key == "impact_mean" else 1]
        quiet, quiet_scope = self.a.quiet_partner(inst), self.a.quiet_scope(inst, scope)
        if quiet is None or quiet_scope is None or not np.isfinite(value):
            return (value, value, value)
        draws = ratio_draws(inst.metric, self.a.samples(quiet, quiet_scope),
                            self.a.samples(inst, scope), stat_of(key))
        # draws are congested / quiet figures; impact > 1 is worse: for bandwidth quiet / congested
        with np.errstate(divide="ignore", invalid="ignore"):
            draws = 1.0 / draws if is_bandwidth(inst.metric) else draws
        return _percentiles(value, draws)


def ratio_draws(metric: str, before: pd.DataFrame, now: pd.DataFrame, stat: str) -> np.ndarray:
    """Bootstrap draws of figure(now) / figure(before), each side's ranks all kept and
    blocks of their consecutive iterations drawn."""
    rng = np.random.default_rng(SEED)
    laid = [Laid(thin([[rank_units(s, metric)]], MAX_SAMPLES)) for s in (before, now)]
    out = np.empty(RESAMPLES)
    for i in range(RESAMPLES):
        b, n = (figure_value(metric, stat, *lay.draw(rng, resample_ranks=False)) for lay in laid)
        out[i] = n / b if b > 0 else np.nan
    return out


def _percentiles(value: float, draws: np.ndarray) -> Interval:
    draws = draws[np.isfinite(draws)]
    if not len(draws):
        return (value, value, value)
    alpha = 100 * (1 - LEVEL) / 2
    low, high = np.percentile(draws, [alpha, 100 - alpha])
    return (value, float(min(low, value)), float(max(high, value)))


def responsible(ev, inst: TestInstance, scope: Scope, key: str, bound: Bound) -> str:
    """Ranks (and pairs, for pair patterns) whose own value breaks the bound."""
    s = ev.a.samples(inst, scope)
    unit = unit_of_key(key)
    higher_bad = bound.max is not None
    parts = []
    s_pairs = s[s["peer"] >= 0]
    by_pair = not s_pairs.empty and s_pairs.groupby("rank")["peer"].nunique().max() >= 2
    for label, frame, by, namer in (("ranks", s, "rank", lambda k: ev.rank(k)),
                                    ("pairs", s_pairs, ["rank", "peer"], lambda k: ev.pair(*k))):
        if label == "pairs" and not by_pair:
            continue  # one peer per rank: the rank list already names the pair
        values = group_values(frame, inst.metric, key, by)
        bad = [(namer(k), v) for k, v in values.items() if _violates(v, bound)]
        bad.sort(key=lambda item: -item[1] if higher_bad else item[1])
        if bad:
            parts.append(f"{label} beyond the limit: {named_list(bad, unit)}")
    if not parts:
        values = group_values(s, inst.metric, key, "rank")
        if values:
            pick = max if higher_bad else min
            worst = pick(values.items(), key=lambda kv: kv[1])
            parts.append(f"no single rank breaks it (all ranks together do); worst "
                         f"{ev.rank(worst[0])} {format_number(worst[1])}{unit}")
    return "; ".join(parts)


def check_limits(ev, rule: Rule, inst: TestInstance, scope: Scope, result: CheckResult) -> None:
    for key, bound in rule.limits.items():
        if not applicable(key, inst):
            continue
        if key.startswith("impact_") and ev.a.quiet_scope(inst, scope) is None:
            continue
        if key not in ("samples", "flagged_samples") and ev.a.stats(inst, scope).n_samples == 0:
            result.failed.append(key)
            result.messages.append(f"{key}: no samples to evaluate (status "
                                   f"{inst.get('status')}: {inst.get('error') or '-'})")
            continue
        interval = ev.figures.interval(inst, scope, key)
        state = judge(interval, bound)
        unit = unit_of_key(key)
        result.details.append(f"{key} = {interval_text(interval, unit)}")
        required = f"required {bound_text(bound, unit)}"
        if state == CANNOT_TELL:
            result.add_cannot_tell(f"{key} = {interval_text(interval, unit)}: the interval holds "
                                   f"the limit ({required}); more iterations narrow it")
        if state != FAIL:
            continue
        result.failed.append(key)
        msg = f"{key} = {interval_text(interval, unit)}, {required}"
        result.messages.append(msg + "; " + _who(ev, inst, scope, key, bound))


def _who(ev, inst: TestInstance, scope: Scope, key: str, bound: Bound) -> str:
    if key in ("impact_mean", "impact_p99"):
        return impact_ranks(ev, inst, scope, key)
    if key == "flagged_samples":
        s = ev.a.samples(inst, scope)
        failed = (s["flags"].astype("int64") & FLAG_DATA_CHECK_FAILED) != 0
        flagged = s[failed].groupby("rank").size().sort_values(ascending=False)
        return "flagged on " + named_list([(ev.rank(r), float(n)) for r, n in flagged.items()],
                                          " samples")
    if key == "samples":
        return "too few samples to judge the figures"
    return responsible(ev, inst, scope, key, bound)


def impact_ranks(ev, inst: TestInstance, scope: Scope, key: str) -> str:
    quiet = ev.a.quiet_partner(inst)
    q_vals = group_values(ev.a.samples(quiet, ev.a.quiet_scope(inst, scope)), inst.metric, key,
                          "rank")
    c_vals = group_values(ev.a.samples(inst, scope), inst.metric, key, "rank")
    per_rank = [(ev.rank(r), impact_factor(inst.metric, q_vals[r], c_vals[r]))
                for r in c_vals if r in q_vals]
    per_rank = sorted(((w, v) for w, v in per_rank if np.isfinite(v)), key=lambda item: -item[1])
    return "most affected: " + (named_list(per_rank, "x") if per_rank else "-")


def baseline_instances(ev, inst: TestInstance, scope: Scope, result: CheckResult):
    """[(baseline Figures, its instance, its scope)] of every baseline run, or None after
    saying which baseline lacks the instance or the scope (a failure)."""
    out = []
    for base in ev.baselines:
        base_inst = base.index.get(instance_key(inst))
        path = base.figures.a.result.path
        if base_inst is None:
            key = instance_key(inst)
            result.messages.append(f"baseline {path} has no instance with case {key[0]!r}, "
                                   f"condition {key[1]!r}, pass {key[2]!r}")
            return None
        scopes = base.figures.a.scopes(base_inst)
        base_scope = next((b for b in scopes if b.name == scope.name), None)
        if base_scope is None:
            result.messages.append(
                f"baseline {path} has no site scope {scope.name or '(none)'!r} for case "
                f"{instance_key(inst)[0]!r} (it has: {', '.join(b.name or '(none)' for b in scopes)}"
                "); a site's results are only compared with the same site's")
            return None
        out.append((base.figures, base_inst, base_scope))
    return out


def ratio_interval(ev, inst, scope, key, bases) -> Tuple[Interval, str]:
    """This run's figure / the baseline's, with its interval and the method's words."""
    now = ev.figures.interval(inst, scope, key)[0]
    befores = [f.interval(bi, bs, key)[0] for f, bi, bs in bases]
    if not all(np.isfinite(v) and v > 0 for v in befores + [now]):
        return (float("nan"),) * 3, "no ratio"
    if len(bases) >= 2:
        logs = np.log(befores)
        # one run against several: the baselines' spread is the run-to-run variation
        centre, low, high, df = log_difference_interval(logs, [math.log(now)], LEVEL)
        return ((math.exp(centre), math.exp(low), math.exp(high)),
                f"t interval on log figures against {len(bases)} baseline runs ({df} df)")
    figures, base_inst, base_scope = bases[0]
    if key in EXACT_KEYS:
        ratio = now / befores[0]
        return (ratio, ratio, ratio), "counted figures"
    draws = ratio_draws(inst.metric, figures.a.samples(base_inst, base_scope),
                        ev.a.samples(inst, scope), stat_of(key))
    return (_percentiles(now / befores[0], draws),
            "bootstrap within both runs only: run-to-run variation unknown with one baseline run")


def check_baseline(ev, rule: Rule, inst: TestInstance, scope: Scope, result: CheckResult) -> None:
    """baseline: {key: {min_ratio, max_ratio}} on this run / the baseline run(s)."""
    if not rule.baseline:
        return
    bases = baseline_instances(ev, inst, scope, result)
    if bases is None:
        return
    for key, bound in rule.baseline.items():
        if not applicable(key, inst):
            continue
        interval, method = ratio_interval(ev, inst, scope, key, bases)
        if not np.isfinite(interval[0]):
            result.messages.append(f"{key}: cannot compare with the baseline (no positive "
                                   "figure on both sides)")
            continue
        text = (f"{key} ratio to baseline = {interval[0]:.3f} [95% interval {interval[1]:.3f}, "
                f"{interval[2]:.3f}] ({method})")
        result.details.append(text)
        state = judge(interval, bound)
        if state == CANNOT_TELL:
            result.add_cannot_tell(f"{text}: the interval holds the limit "
                                   f"{bound_text(bound, ratio=True)}")
        if state != FAIL:
            continue
        result.failed.append(key)
        result.messages.append(f"{key} is {interval[0]:.3f}x the baseline [95% interval "
                               f"{interval[1]:.3f}, {interval[2]:.3f}], required "
                               f"{bound_text(bound, ratio=True)}; "
                               + _ranks_beyond_ratio(ev, inst, scope, key, bound, bases[0]))


def _ranks_beyond_ratio(ev, inst, scope, key, bound: Bound, base) -> str:
    figures, base_inst, base_scope = base
    now_ranks = group_values(ev.a.samples(inst, scope), inst.metric, key, "rank")
    base_ranks = group_values(figures.a.samples(base_inst, base_scope), inst.metric, key, "rank")
    ratios = [(ev.rank(r), now_ranks[r] / base_ranks[r]) for r in now_ranks
              if r in base_ranks and base_ranks[r]]
    bad = sorted(((w, v) for w, v in ratios if _violates(v, bound)),
                 key=lambda item: -item[1] if bound.max is not None else item[1])
    return f"ranks beyond it: {named_list(bad, 'x')}" if bad else "no single rank beyond it"


def check_tolerance(ev, rule: Rule, inst: TestInstance, scope: Scope, result: CheckResult) -> None:
    """tolerance: the limit is the one-sided normal tolerance limit of the baselines' log
    figures (upper for times, lower for bandwidth); this run's interval is judged on it."""
    if not rule.tolerance:
        return
    bases = baseline_instances(ev, inst, scope, result)
    if bases is None:
        return
    for key, tol in rule.tolerance.items():
        if not applicable(key, inst):
            continue
        values = [f.interval(bi, bs, key)[0] for f, bi, bs in bases]
        if len(values) < 2 or not all(np.isfinite(v) and v > 0 for v in values):
            result.messages.append(f"{key}: a tolerance limit needs 2 or more baseline runs with "
                                   f"a positive figure, got {len(values)}")
            continue
        higher_bad = not (key in BANDWIDTH_METRICS)
        limit_log, k = tolerance_limit(np.log(values), tol.coverage, tol.confidence, higher_bad)
        limit = math.exp(limit_log)
        bound = Bound(max=limit) if higher_bad else Bound(min=limit)
        interval = ev.figures.interval(inst, scope, key)
        unit = unit_of_key(key)
        how = (f"normal tolerance limit on log figures of {len(values)} baseline runs: "
               f"{100 * tol.coverage:g}% of healthy runs with {100 * tol.confidence:g}% "
               f"confidence (k = {k:.2f})")
        result.details.append(f"{key} = {interval_text(interval, unit)}; limit "
                              f"{bound_text(bound, unit)} ({how})")
        state = judge(interval, bound)
        if state == CANNOT_TELL:
            result.add_cannot_tell(f"{key} = {interval_text(interval, unit)}: the interval holds "
                                   f"the tolerance limit {bound_text(bound, unit)}")
        elif state == FAIL:
            result.failed.append(key)
            result.messages.append(f"{key} = {interval_text(interval, unit)}, beyond the "
                                   f"tolerance limit {bound_text(bound, unit)} ({how}); "
                                   + responsible(ev, inst, scope, key, bound))
