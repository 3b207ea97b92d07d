"""The seeded sample of generated mutants.

All sites of the target files are listed in a fixed order (file path, then position in
the file, then replacement); the seed shuffles the list with Python's own Mersenne
Twister (`random.Random(seed)`, the same on every platform and version since 3.2 for
integer seeds), and mutant (seed, index) is the index-th of that order. The same tree,
targets and seed give the same mutants: `tests/mutate --auto-show SEED:INDEX` prints one.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .mutants import Mutant, sites_of

# The targets: the analysis's diagnosis, serving, acceptance, comparison, verdict
# and command line, and the C++ command line, driver and the kvpush and incast kinds.
DEFAULT_TARGETS = (
    "analysis/fabscope_analysis/diagnosis/",
    "analysis/fabscope_analysis/serving/",
    "analysis/fabscope_analysis/accept",
    "analysis/fabscope_analysis/compare",
    "analysis/fabscope_analysis/verdict.py",
    "analysis/fabscope_analysis/cli.py",
    "src/cli/",
    "src/driver/",
    "src/kinds/kvpush/",
    "src/kinds/incast/",
)
SOURCE_SUFFIXES = (".py", ".cpp", ".hpp")
# only the product is mutated: --only narrows these, it never reaches the tests themselves
PRODUCT_ROOTS = ("analysis/fabscope_analysis/", "src/")


def resolve_prefixes(only: Sequence[str]) -> List[str]:
    """--only narrows the default targets: a prefix above some of them ('analysis/', 'src/')
    stands for those, and any other prefix (a file, or a folder outside them) for itself."""
    if not only:
        return list(DEFAULT_TARGETS)
    prefixes: List[str] = []
    for prefix in only:
        inside = [t for t in DEFAULT_TARGETS if t.startswith(prefix)]
        prefixes += inside or [prefix]
    return list(dict.fromkeys(prefixes))


def target_files(root: Path, prefixes: Sequence[str]) -> List[str]:
    """Repository paths of the sources under the prefixes, sorted; tracked by git or not."""
    root = Path(root)
    found = set()
    for prefix in prefixes:
        top = prefix.split("/")
        folder = root.joinpath(*top[:-1]) if not prefix.endswith("/") else root / prefix
        if not folder.is_dir():
            continue
        for path in folder.rglob("*"):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and rel.startswith(prefix) and rel.startswith(PRODUCT_ROOTS) \
                    and rel.endswith(SOURCE_SUFFIXES) and "__pycache__" not in rel:
                found.add(rel)
    return sorted(found)


def all_sites(root: Path, prefixes: Sequence[str]) -> List[Mutant]:
    sites: List[Mutant] = []
    for rel in target_files(root, prefixes):
        sites += sites_of(rel, (Path(root) / rel).read_bytes())
    return sites


def seeded_order(count: int, seed: int) -> List[int]:
    order = list(range(count))
    random.Random(seed).shuffle(order)
    return order


def sample(root: Path, prefixes: Sequence[str], seed: int, n: int) -> List[Mutant]:
    """The first n mutants of the seed's order over every site of the target files."""
    sites = all_sites(root, prefixes)
    return [sites[i] for i in seeded_order(len(sites), seed)[:n]]


def parse_indices(text: str) -> List[int]:
    """`--auto-indices`: "3,7,10-12" -> [3, 7, 10, 11, 12] (sorted, each once)."""
    out = set()
    for part in text.split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise ValueError(f"--auto-indices: {part!r} is not an index or a range a-b (e.g. 3,7,10-12)")
        first, last = int(lo), int(hi) if dash else int(lo)
        if last < first:
            raise ValueError(f"--auto-indices: the range {part!r} ends before it starts")
        out.update(range(first, last + 1))
    return sorted(out)


def chosen_mutants(sites: Sequence[Mutant], seed: int, n: int,
                   indices: Optional[Sequence[int]] = None) -> List[Tuple[int, Mutant]]:
    """(index, mutant) of the seed's sample: the first n, or only those at `indices` (the
    same mutants, under the same indices, as in the sample they were drawn from)."""
    order = seeded_order(len(sites), seed)
    if indices is None:
        return [(i, sites[order[i]]) for i in range(min(n, len(sites)))]
    outside = [i for i in indices if not 0 <= i < len(sites)]
    if outside:
        raise ValueError(f"--auto-indices: {outside} outside 0..{len(sites) - 1}")
    return [(i, sites[order[i]]) for i in indices]


def counts_by_module(mutants: Sequence[Mutant]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for m in mutants:
        counts[module_of(m.path)] = counts.get(module_of(m.path), 0) + 1
    return counts


def module_of(path: str) -> str:
    """The row a mutant is reported under: a package or C++ folder, or the Python file."""
    if path.startswith("analysis/fabscope_analysis/"):
        rest = path[len("analysis/fabscope_analysis/"):]
        return rest.split("/")[0] + "/" if "/" in rest else rest
    if path.startswith("src/"):
        return path.rsplit("/", 1)[0] + "/"
    return path
