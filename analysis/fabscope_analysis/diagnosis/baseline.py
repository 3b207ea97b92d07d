"""Against a known-good run of the same fabric (`diagnose --baseline`): what no single
run can tell, a fabric uniformly slower, and a spine slowing its flows from every leaf
alike (docs/analysis.md)."""

from __future__ import annotations

import math
from typing import Dict, List, Tuple

import numpy as np

from ..inference import benjamini_hochberg
from ..reader import ResultFile, TestInstance
from . import evidence, labels, paths
from .model import Fit, Layout, fit, fitted_instances, pair_data
from .result import FABRIC, Culprit


def against_baseline(result: ResultFile, baseline: ResultFile, layout: Layout, fits: Dict[str, Fit],
                     q: float) -> Tuple[List[str], List[Culprit]]:
    """A fabric uniformly slower has no culprit inside the run, only against a
    known-good run of the same scenario: its median pair against the baseline's. And a
    spine slowing its flows from every leaf alike, which no leaf shows: each one-way
    test's share of pairs between leaves slow under load against the baseline's, block
    by block (paths.spine_against_baseline), Benjamini-Hochberg over the tests at the
    family's level. `fits`: the run's own fit of each test, by label (only the
    baseline's tests are fitted here)."""
    notes, fabric, spine = [], [], []
    base = {(str(i.get("case")), str(i.get("condition")), str(i.get("pass"))): i
            for i in baseline.instances()}
    base_layout = None
    for inst in fitted_instances(result):
        b = base.get((str(inst.get("case")), str(inst.get("condition")), str(inst.get("pass"))))
        if b is None:
            notes.append(f"baseline has no instance like {inst.index:04d} {inst.get('name')}")
            continue
        now, before = pair_data(inst, 1 << 20), pair_data(b, 1 << 20)
        if now is None or before is None:
            continue
        slower = math.exp(float(np.median(now.logt)) - float(np.median(before.logt)))
        name = f"{inst.index:04d} {inst.get('name')}"
        notes.append(f"{name}: median pair {slower:.2f}x the baseline's time")
        if slower >= evidence.MARGIN:
            fabric.append(Culprit(host="(all hosts)", ranks=[], gpus=[], nics=[], direction="both",
                                  symptoms=[f"the whole fabric: median pair {slower:.2f}x the "
                                            f"baseline's time [{name}]"],
                                  evidence=[f"baseline {baseline.path}, same case"],
                                  confidence="medium", score=0.5, component=FABRIC))
        if not now.symmetric and len(layout.leaf_names) > 2 and name in fits:
            if base_layout is None:
                base_layout = labels.resolve(baseline, Layout.of(baseline))[0]
            spine.append((name, _blocks(fits[name], layout), _baseline_blocks(b, base_layout)))
    return notes + _spine_notes(spine, q, fabric, baseline), fabric


def _blocks(f: Fit, layout: Layout):
    d = f.data
    return paths.between_blocks(f.resid, d.s, d.r, layout.leaf, layout.leaf_names)


def _baseline_blocks(inst: TestInstance, layout: Layout):
    data = pair_data(inst, layout.n)
    return {} if data is None else _blocks(fit(data, layout), layout)


def _spine_notes(spine, q: float, fabric: List[Culprit], baseline: ResultFile) -> List[str]:
    """The spine comparison's line per test; a culprit where it is significant and the
    share at least paths.SPINE_SHARE_RATIO times the known-good run's."""
    tested = [(name, paths.spine_against_baseline(now, before)) for name, now, before in spine]
    tested = [(name, t) for name, t in tested if t is not None]
    if not tested:
        return []
    rejected, adjusted = benjamini_hochberg([t[2] for _, t in tested], q)
    notes = []
    for (name, (share, before, p, blocks)), hit, qv in zip(tested, rejected, adjusted):
        said = (f"{100 * share:.1f} % of the pairs between leaves at least {evidence.MARGIN:g}x slow "
                f"under load against {100 * before:.1f} % in the baseline [{name}]")
        if hit and share >= paths.SPINE_SHARE_RATIO * before:
            fabric.append(Culprit(
                host="(the spines)", ranks=[], gpus=[], nics=[], direction="both",
                symptoms=[f"a spine, or its links into every leaf: {said}"],
                evidence=[f"signed rank over {blocks} blocks of pairs from one leaf to another, "
                          f"p={p:.2g}, q={qv:.2g}; baseline {baseline.path}, same case (the file "
                          "holds no flow's route: which spine, its counters tell)"],
                confidence="medium", score=0.5, component=FABRIC))
        else:
            notes.append(f"spine against the baseline: {said}; signed rank over {blocks} blocks "
                         f"p={p:.2g}: not a spine")
    return notes
