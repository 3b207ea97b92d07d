"""diagnose(): fit every pair test, gather the evidence, name the components.

The method is docs/analysis.md's "diagnose"; the parts are model.py (the fit),
evidence.py (what stands out of the run's own noise), retest.py (pairs measured
alone against control pairs), rules.py (the smallest components that explain it),
validity.py (what the run's validity findings change), supporting.py (counters,
incast, collectives).
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..reader import (FLAG_AUXILIARY_MASK, FLAG_CONTROL_PAIR, FLAG_RETEST_SECOND_VISIT, ResultFile,
                      TestInstance)
from . import (evidence, labels, leaf_rows, outages, pair_null, pair_tails, paths, persistence, supporting,
               systemic, tails, validity)
from ..tail_null import fast_side_df
from .model import Fit, Layout, fit, fitted_instances, pair_data
from .result import Culprit, Diagnosis, Finding
from .retest import RetestJudgement, judge_retest_visits, pass_sigma
from .baseline import against_baseline
from .rules import TestEvidence, name_components

# Below this many ranks in a test a slow pair cannot be pinned on one end.
MIN_RANKS = 4
# rank sides, tail sides, the other sides of flagged tail sides, links, host pairs,
# leaves, host-pair tails, leaf paths, local ranks
FAMILIES_PER_TEST = 9
# tails of each rank over every test; host pairs holding a named link; error counters;
# outages and flaps (the run's longest stalls against its own tail of stalls)
RUN_FAMILIES = 4
# with a known-good run: the spine comparison over the one-way tests
BASELINE_FAMILIES = 1


class _Run:
    """What one diagnosis gathers as it reads the file."""

    def __init__(self, result: ResultFile):
        self.result = result
        # leaves inferred from the latency test where /ranks has none or wrong ones
        self.layout, self.label_notes, self.label_blind = labels.resolve(result, Layout.of(result))
        self.validity = validity.rows(result)
        self.widen = validity.widen(self.validity)
        self.tests: List[TestEvidence] = []
        self.tail_fits: List[Fit] = []      # each test's fit less its stalled host pairs
        self.notes: List[str] = []
        self.cannot: List[str] = []
        self.underpowered: List[str] = []
        self.between_only: List[str] = []   # sides that cannot be told from their leaf's uplink
        self.used: List[str] = []
        self.powered = 0
        self.q_family = evidence.Q
        self.measured = np.zeros(0, dtype=np.int64)   # rank pairs the fitted tests measured
        self.tail_power = None    # (power of the tail test for a lossy NIC, pairs per rank)
        self.host_pair_power: List[Tuple[int, int, int]] = []   # per test: blocks too thin
        # per test: (metric, the smallest side it finds with 80 % power, why)
        self.small_sides: List[Tuple[str, float, str]] = []
        self.heavy_links: List[str] = []   # per test: single pairs a heavy tail hides
        self.path_blind: List[str] = []    # per test: leaf links its collisions hide
        # per one-way test with pairs between leaves: its share of them slow under load
        self.between_slow: List[Tuple[str, float]] = []
        # GPU pairs a serial retest of one visit a pair confirmed (files from before the
        # second visit): a burst that lasted through the visit reads the same
        self.one_visit: List[str] = []

    def judge(self, inst: TestInstance):
        data = pair_data(inst, self.layout.n)
        label = f"{inst.index:04d} {inst.get('name')}"
        if data is None:
            return
        ranks_in = len(set(data.s.tolist()) | set(data.r.tolist()))
        if ranks_in < MIN_RANKS:
            self.cannot.append(f"{label}: {ranks_in} ranks measured; naming a culprit from pairs "
                               f"needs at least {MIN_RANKS}")
            return
        f = fit(data, self.layout)
        n = self.layout.n
        self.measured = np.union1d(self.measured,
                                   np.minimum(data.s, data.r) * n + np.maximum(data.s, data.r))
        if label not in self.used:
            self.used.append(label)
        q = self.q_family
        sides, power = evidence.side_effects(f, self.widen, q, self.layout.leaf)
        links, n_links = evidence.links(f, self.widen, q, self.layout)
        host_pairs = evidence.host_pairs(f, self.layout, q)
        centre = TestEvidence(f, "centre", sides=sides, links=links, n_links=n_links, host_pairs=host_pairs,
                              leaves=evidence.leaves(f, self.layout, self.widen, q),
                              paths=evidence.leaf_path_effects(f, self.layout, q, host_pairs),
                              local_ranks=systemic.local_ranks(f, self.layout, self.widen, q),
                              leaf_rows=leaf_rows.raw_rows(f, self.layout, self.widen, q))
        self._path_blind(f, label)
        stalled = pair_tails.host_pair_tails(f, self.layout, q)
        quiet = pair_tails.without(f, self.layout, stalled)
        self.tail_fits.append(quiet)
        tail = TestEvidence(f, "tail", sides=tails.tail_sides(quiet, self.layout.host, q),
                            host_pairs=stalled)
        self._heavy_tail(f, label)
        seen = evidence.host_pair_power(f, self.layout, q)
        if seen is not None:
            self.host_pair_power.append(seen)
        self.tests += [centre, tail]
        self._between_only(label, power.get("between_only"))
        weak, mde = evidence.side_power(power)
        if weak:
            self.underpowered.append(
                f"{label}: the smallest rank-side effect it could detect (80 % power) is "
                f"{mde:.2f}x, above the {evidence.DETECT:g}x a fit verdict needs"
                + (f"; {evidence.iterations_to_tell(power)}" if "tau" in power else ""))
        else:
            self.powered += 1
        margin = power.get("margin", evidence.MARGIN)
        if "tau" in power and mde > margin:
            # a side between the margin and what the test finds is neither named nor
            # cleared: a blind spot of the verdict, not a note (an underpowered test too,
            # when another test gives the run its verdict)
            what = "bandwidth" if data.bandwidth else "latency"
            self.small_sides.append((what, mde,
                f"{label}: would find a rank side {mde:.2f}x slow ({what} "
                f"{100 / mde:.0f} % of the typical) with 80 % power, smaller ones down to "
                f"{margin:g}x only sometimes; " + evidence.iterations_to_tell(power, margin)))

    def _between_only(self, label: str, sides):
        if sides:
            ranks = ", ".join(f"rank {r} ({self.layout.host_of(r)}) {side}" for r, side in sides)
            self.between_only.append(
                f"{label}: {ranks} stand(s) out only on pairs between leaves, with fewer than two "
                "pairs inside its leaf to tell a NIC from its leaf's uplink or from collisions "
                "under load: not named (measure more pairs inside the leaf: all-pairs, rails or "
                "hierarchical)")

    def _path_blind(self, f: Fit, label: str):
        """The leaf links a bandwidth test's collisions hide (a round trip cannot tell into
        a leaf from out of it: none for latency)."""
        d = f.data
        if d.symmetric:
            return
        blind = paths.collision_blind_spot(f.resid, d.s, d.r, self.layout.leaf, label)
        self.path_blind += [blind] if blind else []
        share = paths.slow_between_share(f.resid, d.s, d.r, self.layout.leaf)
        self.between_slow += [(label, share)] if share is not None else []   # None: one leaf

    def _heavy_tail(self, f: Fit, label: str):
        """A blind spot when the healthy pairs' tail raises the bar a single pair must
        pass well above the normal null's (tail_null.py)."""
        bar, normal_bar, df = pair_null.link_bars(f, self.widen, self.q_family, self.layout)
        if bar > max(1.1 * normal_bar, evidence.MARGIN):
            self.heavy_links.append(
                f"{label}: healthy pairs between hosts have a heavy tail (their fast side a Student-t of "
                f"{df:g} degrees of freedom), so a single GPU pair is named from "
                + (f"{bar:.2f}x" if bar < 100 else "over 100x (in practice none)")
                + f" the time its ends predict (a normal spread would name it from {normal_bar:.2f}x)")

    def combined_tails(self):
        """Each rank's stalls over every fitted test and both directions (the power a
        test of a dozen pairs per side lacks), as one more family of the run."""
        fits = self.tail_fits
        if len(fits) < 1:
            return
        label = "all tests" if len(fits) > 1 else fits[0].data.label
        self.tail_power = tails.tail_power(fits, self.layout.n, self.q_family)
        self.tests.append(TestEvidence(fits[0], "tail", name=label,
                                       sides=tails.tail_ranks(fits, self.layout.host,
                                                                 self.q_family)))

    def retests(self, instances: Sequence[TestInstance]):
        by_parent = {t.fit.data.inst.index: t for t in self.tests if t.measure == "centre"}
        # the run clock's zero (the first test's start), as the outage windows use it
        starts = [int(i.get("t_start_ns", 0)) for i in instances if int(i.get("t_start_ns", 0) or 0) > 0]
        zero = min(starts) if starts else None
        for inst in instances:
            if str(inst.get("pass")) != "serial-retest":
                continue
            parent = by_parent.get(int(inst.get("retest_of", -1)))
            if parent is None:
                continue
            judged = _judge_retest(inst, parent.fit, self.widen, self.layout, zero)
            if judged is None:
                self.notes.append(f"serial retest {inst.index:04d} {inst.get('name')} has no "
                                  "control pairs measured the same way: it can neither clear nor "
                                  f"confirm its pairs; the parallel pass {parent.label} is what "
                                  "was judged")
                continue
            parent.retest.update(judged)
            self.one_visit += [f"{self.layout.host_of(s)} -> {self.layout.host_of(r)}"
                               for (s, r), j in judged.items() if j.slow and j.visits < 2]
            for (s, r), j in judged.items():
                self.notes.append(f"serial retest {inst.index:04d} {inst.get('name')}: "
                                  f"{self.layout.host_of(s)} -> {self.layout.host_of(r)} {j.describe()}"
                                  f" ({j.controls} control pairs)")


def _judge_retest(inst: TestInstance, parent: Fit, widen: float, layout: Layout,
                  zero: Optional[int] = None) -> Optional[Dict[Tuple[int, int], RetestJudgement]]:
    """The retest's pairs and controls, each referred to what the parallel pass's model
    predicts for it (mu + its class term + its ends' effects), judged by the one retest
    rule. The driver draws controls from the middle of a ranking of raw times, so they
    may sit in another class than the suspects (same leaf where the worst cross leaves:
    1.4x apart on a two-leaf fabric): raw times would confirm the class difference.
    What is left is the pair's own part, the link residual the parallel pass flagged:
    the question the retest answers is whether that persists alone."""
    s = inst.samples()
    kept = FLAG_AUXILIARY_MASK & ~(FLAG_CONTROL_PAIR | FLAG_RETEST_SECOND_VISIT)
    s = s[(s["peer"] >= 0) & ((s["flags"] & kept) == 0)]
    if s.empty:
        return {}
    flags = s["flags"].to_numpy()
    control = (flags & FLAG_CONTROL_PAIR) != 0
    if not control.any():
        return None
    visit = np.where((flags & FLAG_RETEST_SECOND_VISIT) != 0, 2, 1)
    t = (s["t_done_ns"] - s["t_post_ns"]).to_numpy(np.float64)
    per_byte = s["bytes"].to_numpy(np.float64) if inst.metric == "bandwidth" else 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        logt = np.log(np.where(t > 0, t, np.nan) / per_byte)
    frame = s[["rank", "peer", "iter", "t_post_ns", "t_done_ns"]].assign(
        v=logt, control=control, visit=visit).dropna()
    medians = persistence.retest_levels(frame)
    spans = frame.groupby(["rank", "peer", "visit"]).agg(a=("t_post_ns", "min"), b=("t_done_ns", "max"))
    predicted = _predicted(parent)
    visits: Dict[Tuple[int, int], Dict[int, float]] = {}
    when: Dict[Tuple[int, int], Dict[int, str]] = {}
    controls = []
    for (r, p, is_control, k), v in medians.items():
        expected = predicted.get((int(r), int(p)))
        if expected is None:  # a pair the parallel pass did not measure: no reference
            continue
        if is_control:
            controls.append(math.exp(v - expected))
            continue
        key = (int(r), int(p))
        visits.setdefault(key, {})[int(k)] = math.exp(v - expected)
        if zero is not None:
            a, b = spans.loc[(r, p, k)]
            when.setdefault(key, {})[int(k)] = (f"+{(a - zero) / 1e9:.4f} to +{(b - zero) / 1e9:.4f} s "
                                                "of the run")
    # the spread of the pass's residuals bounds what of a pair's own part persists alone
    floor = pass_sigma(np.exp(parent.resid), bandwidth=False)
    judged = judge_retest_visits(
        {pair: [v[k] for k in sorted(v)] for pair, v in visits.items()}, controls,
        when={pair: [w[k] for k in sorted(w)] for pair, w in when.items()},
        pool=len(parent.data.logt), bandwidth=False, widen=widen, sigma_floor=floor,
        tail_df=_pair_tail(parent, layout),
        reference="the control pairs' time (each against what its class and ends predict)")
    return {j.pair: j for j in judged}


def _pair_tail(parent: Fit, layout: Layout) -> float:
    """The tail null's degrees of freedom for a retested pair: fitted on the parallel
    pass's pairs between hosts (the retest measures those; pairs inside a host have the
    hosts' software spread, evidence.same_host)."""
    inside = pair_null.same_host(parent, layout)
    between = parent.resid[~inside]
    return fast_side_df(between if len(between) else parent.resid)


def _predicted(f: Fit) -> Dict[Tuple[int, int], float]:
    """(s, r) -> the model's log time for the pair without its residual (a round trip
    under either orientation)."""
    d = f.data
    fitted = d.logt - f.resid
    out = {(int(a), int(b)): float(v) for a, b, v in zip(d.s, d.r, fitted)}
    if d.symmetric:
        for a, b, v in zip(d.s, d.r, fitted):
            out.setdefault((int(b), int(a)), float(v))
    return out


def diagnose(result: ResultFile, baseline: Optional[ResultFile] = None) -> Diagnosis:
    run = _Run(result)
    instances = list(result.instances())
    fitted = fitted_instances(result)
    # BH within each family (a test's rank sides, tails, links, host pairs, leaves),
    # the run's false discovery rate split evenly over its families
    run.q_family = evidence.Q / max(FAMILIES_PER_TEST * len(fitted) + RUN_FAMILIES
                                    + (BASELINE_FAMILIES if baseline is not None else 0), 1)
    for inst in fitted:
        run.judge(inst)
    run.combined_tails()
    run.retests(instances)
    naming = name_components(run.layout, run.tests, run.q_family)
    culprits = naming.culprits
    notes = run.label_notes + list(run.notes) + naming.notes
    support, extra_notes = _supporting(result, instances, run.layout, run.q_family)
    notes += extra_notes
    culprits += _counter_culprits(run.layout, support, culprits)
    down, down_notes = outages.outages(result, run.layout, run.q_family)
    culprits += down
    notes += down_notes
    _attach_support(run.layout, support, culprits)
    if baseline is not None:
        fits = {t.label: t.fit for t in run.tests if t.measure == "centre"}
        extra, fabric = against_baseline(result, baseline, run.layout, fits, run.q_family)
        notes += extra
        culprits += fabric
    culprits, withheld = validity.apply(culprits, run.validity)
    if run.widen > 1:
        notes.append(f"noise figures widened {run.widen:g}x for the validity findings on every host")
    verdict = _verdict(run, culprits, withheld, notes, naming.congestion)
    verdict.cannot_tell_for += naming.cannot_tell
    return verdict


def _verdict(run: _Run, culprits, withheld, notes, congestion) -> Diagnosis:
    if culprits:
        verdict, reasons = "not fit", []
        notes += withheld + run.between_only + run.underpowered
    elif withheld or run.between_only:
        verdict, reasons = "cannot tell", withheld + run.between_only
    elif not run.tests:
        verdict = "cannot tell"
        reasons = run.cannot or ["no quiet pair test in the file relates ranks to several peers "
                                 "(add a test with pattern: all-pairs, rails, cross-rail, ring, "
                                 "bisection or hierarchical)"]
    elif run.powered == 0:
        verdict, reasons = "cannot tell", run.underpowered
    else:
        verdict, reasons = "fit", []
        notes += run.cannot + run.underpowered
    return Diagnosis(verdict=verdict, culprits=culprits, reasons=reasons, notes=notes,
                     tests_used=run.used, congestion=congestion,
                     cannot_tell_for=_blind_spots(run) if run.tests else [])


def _blind_spots(run: _Run) -> List[str]:
    """Classes of fault the fitted tests could not see, each with why: a fault on one GPU
    pair, or between two hosts none of whose GPU pairs was measured, is outside the
    pairs measured (rings, bisections, matchings, thinned matrices measure a share);
    a lossy or flapping NIC is outside what the run's tail test could find when its
    ranks have too few pairs (tails.tail_power)."""
    out = list(run.label_blind) + _one_visit(run)
    n = run.layout.n
    pairs = n * (n - 1) // 2
    if pairs and len(run.measured) < pairs:
        hosts = run.layout.host
        lo, hi = run.measured // n, run.measured % n
        host_pairs = {(int(a), int(b)) for a, b in zip(np.minimum(hosts[lo], hosts[hi]),
                                                       np.maximum(hosts[lo], hosts[hi])) if a != b}
        nh = len(run.layout.host_names)
        what = "single GPU pairs" + (" and host pairs (cables)" if len(host_pairs) < nh * (nh - 1) // 2
                                     else "")
        leaf = run.layout.leaf
        inside = int((leaf[lo] == leaf[hi]).sum())
        between = "" if len(run.layout.leaf_names) < 2 else (
            f"; {len(run.measured) - inside} of those lie between leaves, where a slow pair of a "
            "parallel pass looks like an ECMP collision unless a serial retest measured it alone "
            f"(only all-pairs retests), {inside} inside a leaf")
        out.append(f"{what}: the tests measured {len(run.measured)} of {pairs} rank pairs "
                   f"({100 * len(run.measured) / pairs:.1f} %) and {len(host_pairs)} of "
                   f"{nh * (nh - 1) // 2} host pairs; a fault on a pair not measured cannot be "
                   f"seen (all-pairs measures every pair){between}")
    if run.host_pair_power and all(thin for thin, _, _ in run.host_pair_power):
        thin, blocks, need = min(run.host_pair_power)
        out.append(f"host pairs (cables): {thin} of the {blocks} host pairs measured have fewer "
                   f"than the {need} GPU pairs a block needs for even all of them slow to stand "
                   "out at the false-discovery bar (all-pairs, or a larger budget, measures more)")
    if run.small_sides:
        for what in sorted({w for w, _, _ in run.small_sides}):
            mine = [(mde, why) for w, mde, why in run.small_sides if w == what]
            worst = max(mde for mde, _ in mine)
            out.append(f"NIC sides slower by less than {100 * (1 - 1 / worst):.0f} % in {what}: "
                       + "; ".join(why for _, why in mine))
    out += run.path_blind
    spine = paths.spine_blind_spot(run.between_slow)
    out += [spine] if spine else []
    if run.heavy_links:
        out.append("single GPU pairs within the heavy tail of the healthy ones: "
                   + "; ".join(run.heavy_links))
    out += _two_host_leaves(run.layout)
    if len(run.layout.leaf_names) == 2:
        out.append("leaf uplinks: with two leaves every pair between them crosses both uplinks, "
                   "and nothing in the run says how much slower than pairs inside a leaf they "
                   "should be (with three leaves or more the uplinks are compared)")
    if run.tail_power is not None and run.tail_power[0] < tails.TAIL_POWER:
        power, pairs_per_rank = run.tail_power
        out.append(f"lossy or flapping NICs: a NIC stalling {100 * tails.TAIL_DETECT:g} % of its "
                   f"samples would be found with {100 * power:.0f} % power from {pairs_per_rank:.0f} "
                   f"pairs per rank (80 % needed): measure more pairs per rank (all-pairs, a larger "
                   "budget) or more iterations")
    return out


def _one_visit(run: _Run) -> List[str]:
    if not run.one_visit:
        return []
    return [f"a transient from a fault on {len(run.one_visit)} GPU pair(s) a serial retest "
            f"confirmed slow alone ({', '.join(run.one_visit[:3])}): the file's runner "
            "measured each retested pair once, and a burst (another tenant, a pause) that "
            "lasted through that visit reads the same (a runner that visits each retested "
            "pair twice tells them apart)"]


def _two_host_leaves(layout: Layout) -> List[str]:
    """A host pair inside a leaf of two hosts is all of that leaf's pairs between hosts:
    the leaf's class term inside it takes the pair's slowness, and nothing is left to
    compare it with (a third host on the leaf would be)."""
    if len(layout.leaf_names) < 2:
        return []
    hosts_of = [sorted({int(h) for h in layout.host[layout.leaf == x]}) for x in range(len(layout.leaf_names))]
    two = [layout.leaf_names[x] for x, hosts in enumerate(hosts_of) if len(hosts) == 2]
    if not two:
        return []
    return [f"host pairs (cables) inside a leaf of two hosts ({', '.join(two[:4])}"
            + (f" and {len(two) - 4} more" if len(two) > 4 else "") + "): the pair is all of its "
            "leaf's pairs between hosts, whose class term takes its slowness (a leaf of three "
            "hosts or more compares them)"]


def _supporting(result: ResultFile, instances, layout: Layout, q_family: float = evidence.Q
                ) -> Tuple[List[Finding], List[str]]:
    findings = supporting.pairs_tests(instances, layout)
    inc, notes = supporting.incast(instances)
    findings += inc + supporting.collectives(instances)
    ctr, ctr_notes = supporting.counters(result, layout, q_family)
    return findings + ctr, notes + ctr_notes


def _counter_culprits(layout: Layout, support: List[Finding], culprits: List[Culprit]) -> List[Culprit]:
    """Physical error counters whose count on a host stands out of the other hosts'
    (supporting.counters, counter_tests.py) name that host by themselves."""
    named = {c.host for c in culprits}
    out = []
    for f in support:
        host = layout.host_of(f.rank)
        if not f.primary or host in named:
            continue
        named.add(host)
        out.append(Culprit(host=host, ranks=[f.rank], gpus=[layout.gpu.get(f.rank, -1)],
                           nics=[layout.nic.get(f.rank, "")], direction=f.side,
                           symptoms=[f.symptom], evidence=[], confidence="medium", score=0.6))
    return out


def _attach_support(layout: Layout, support: List[Finding], culprits: List[Culprit]):
    by_host: Dict[str, List[Culprit]] = {}
    for c in culprits:
        by_host.setdefault(c.host, []).append(c)
    for f in support:
        for c in by_host.get(layout.host_of(f.rank), []):
            if f.symptom not in c.symptoms and f.symptom not in c.evidence:
                c.evidence.append(f.symptom)
