"""The analysis of each kind, found by the file's `kind` attribute.

One module per kind family (the C++ families of src/kinds): p2p (latency, bandwidth,
bibw), collectives (allreduce, alltoall), incast, kvpush, fault, api, mix, reference.
Each declares one KindAnalysis per kind (kinds/base.py: what the summary, the report, the
line rate, fit and diagnose do with its instances) in its ANALYSES. Outside these modules
the analysis asks the registry (analysis_of, kind_measuring, report_sections) and tests no
kind name (analysis/tests/test_kind_modules.py holds both rules: every kind of
src/output/schema.yaml has a module here, and no module elsewhere compares the kind
attribute with a kind's name).

Each kind computes apart from rendering (kinds/base.py): compute_kinds runs every kind's
`compute` once over the run and keeps the figures in a KindResults; summary and report
render those figures (summary lines, drill lines, report sections) and compute nothing of
a kind's own.

A new kind: an entry in its family's module, or a new module here, found by its file name
(every module of this package that has ANALYSES; kinds/example.py is the template). The
report shows the kinds' own sections in REPORT_ORDER, then those of the modules it does
not name, by module name.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Dict, List, Tuple

from .base import Figures, KindAnalysis, KindMetric, ReportSection, no_metrics

# The report's order of the kinds' own sections (incast before the KV push); a family not
# named here follows these, by module name.
REPORT_ORDER = ("p2p", "collectives", "incast", "kvpush", "fault", "api", "mix", "reference")


def _families() -> tuple:
    """Every module of this package that declares ANALYSES, in REPORT_ORDER."""
    names = [m.name for m in pkgutil.iter_modules(__path__) if m.name != "base"]
    modules = [importlib.import_module(f"{__name__}.{name}") for name in names]
    families = [m for m in modules if hasattr(m, "ANALYSES")]
    rank = {name: i for i, name in enumerate(REPORT_ORDER)}
    return tuple(sorted(families, key=lambda m: (rank.get(m.__name__.rsplit(".", 1)[1], len(rank)),
                                                 m.__name__)))


FAMILIES = _families()


def _registry() -> Dict[str, KindAnalysis]:
    out: Dict[str, KindAnalysis] = {}
    for family in FAMILIES:
        for analysis in family.ANALYSES:
            for kind in analysis.kinds:
                if kind in out:
                    raise ValueError(f"kind {kind!r} has two analysis modules: "
                                     f"{family.__name__} and another")
                out[kind] = analysis
    return out


REGISTRY = _registry()
# A kind no module knows (a file from a newer fabscope): in its tables, nothing more.
UNKNOWN_KIND = KindAnalysis(())


def analysis_of(kind) -> KindAnalysis:
    """The analysis of the kind named `kind` (an instance's `kind` attribute)."""
    return REGISTRY.get(str(kind), UNKNOWN_KIND)


def kinds_where(predicate) -> List[str]:
    """The registered kinds whose analysis satisfies predicate(KindAnalysis), in FAMILIES
    order (latency, bandwidth, bibw, allreduce, ...)."""
    return [kind for kind, analysis in REGISTRY.items() if predicate(analysis)]


def kind_measuring(serving_class: str) -> str:
    """The kind whose instances fit and impact read for a serving class (tp, moe, pp, kv,
    api, mix and their _prefill twins)."""
    kinds = kinds_where(lambda a: serving_class in a.serving_classes)
    if len(kinds) != 1:
        raise KeyError(f"serving class {serving_class!r} is measured by "
                       f"{len(kinds)} kinds ({', '.join(kinds) or 'none'}); exactly one must "
                       "declare it (kinds/*.py serving_classes)")
    return kinds[0]


def report_sections() -> List[ReportSection]:
    """The report sections of the kinds' own, in FAMILIES order."""
    seen, out = set(), []
    for family in FAMILIES:
        for analysis in family.ANALYSES:
            section = analysis.report_section
            if section is not None and section.anchor not in seen:
                seen.add(section.anchor)
                out.append(section)
    return out


@dataclass(frozen=True)
class KindResults:
    """The kinds' figures over one run, computed once (compute_kinds); the reporters only
    render them."""
    figures: Dict[int, Figures]                          # instance index -> its figures
    kinds: Dict[int, str]                                # instance index -> its kind
    sections: Tuple[Tuple[ReportSection, Tuple[Figures, ...]], ...]

    def summary_lines(self, index: int) -> List[str]:
        """The lines summary prints under instance `index`'s row."""
        figures = self.figures.get(index)
        if figures is None:
            return []
        return analysis_of(self.kinds[index]).summary_lines(figures)

    def drill_lines(self, index: int) -> List[str]:
        """A fault drill's lines for the report's faults section ([] for other kinds)."""
        figures = self.figures.get(index)
        render = analysis_of(self.kinds.get(index)).drill_lines
        if figures is None or render is None:
            return []
        return render(figures)

    def metrics(self, index: int) -> List[KindMetric]:
        """Instance `index`'s own figures as export's samples ([] for a kind with none)."""
        figures = self.figures.get(index)
        if figures is None:
            return []
        return analysis_of(self.kinds[index]).metrics(figures)

    def is_drill(self, index: int) -> bool:
        return analysis_of(self.kinds.get(index)).drill_lines is not None


def compute_kinds(analysis, summary: bool = False, report: bool = False,
                  export: bool = False) -> KindResults:
    """Every kind's figures of the run `analysis` (a RunAnalysis) holds: per instance those
    summary (summary=True), the report's faults section (report=True) or export
    (export=True) renders, and with report=True every kind's own report section."""
    figures: Dict[int, Figures] = {}
    kinds: Dict[int, str] = {}
    for inst in analysis.instances:
        kind = str(inst.get("kind"))
        kinds[inst.index] = kind
        a = analysis_of(kind)
        if summary or (report and a.drill_lines is not None) or \
                (export and a.metrics is not no_metrics):
            computed = a.compute(inst)
            if computed is not None:
                figures[inst.index] = computed
    sections = tuple((section, tuple(section.compute(analysis)))
                     for section in report_sections()) if report else ()
    return KindResults(figures, kinds, sections)
