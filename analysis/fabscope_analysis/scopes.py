"""Site scopes: results inside one site are never mixed with results between sites.

A WAN path is not a cluster fabric. Every headline sample belongs to exactly one scope,
decided by the sites (``/ranks`` column ``site``) of its two ends, the same way fabscope
itself splits its statistics (src/stats/SiteScopes.hpp, docs/file-format.md):

- ``site=A``: the rank and its peer are both in site A;
- ``inter-site A<->B``: one end in A, the other in B (names sorted);
- ``group site=A`` / ``group across A,B``: collective samples (``peer`` < 0) take the
  sites of the whole measuring group (the instance's ``canaries``).

A rank without a site label is in site ``?``: it never joins a known site. In a run where
no rank has a site label there is a single unnamed scope ``""`` holding every sample, so
the numbers are exactly those of a run before the split existed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Sequence

import numpy as np
import pandas as pd

UNKNOWN_SITE = "?"


@dataclass(frozen=True)
class Scope:
    name: str = ""          # "" in a run without site labels
    sites: str = ""         # sites involved, sorted, comma-separated
    crosses_sites: bool = False

    @property
    def is_group(self) -> bool:
        return self.name.startswith("group ")

    def sort_key(self):
        return (self.crosses_sites, self.is_group, self.sites)


WHOLE = Scope()


def site_of_rank(ranks: pd.DataFrame) -> Dict[int, str]:
    """rank -> site label ('' when unknown or when the file has no site column)."""
    if "site" not in ranks.columns or ranks.empty:
        return {}
    out = {}
    for rank, site in zip(ranks["rank"], ranks["site"]):
        out[int(rank)] = "" if site is None or (isinstance(site, float) and np.isnan(site)) \
            else str(site)
    return out


def group_of(inst, samples: pd.DataFrame) -> List[int]:
    """The measuring ranks of an instance: its ``canaries`` attribute, else the sample ranks."""
    canaries = str(inst.get("canaries", "") or "")
    ranks = [int(x) for x in canaries.split(",") if x.strip().lstrip("-").isdigit()]
    if ranks:
        return ranks
    return sorted(int(r) for r in samples["rank"].unique()) if len(samples) else []


class SiteScopes:
    def __init__(self, sites: Dict[int, str], group: Iterable[int]):
        self.sites = sites
        self.labelled = any(bool(s) for s in sites.values())
        group_sites = sorted({self.site(r) for r in group})
        joined = ",".join(group_sites)
        crosses = len(group_sites) > 1
        self.group = Scope(("group across " if crosses else "group site=") + joined, joined,
                           crosses)

    def site(self, rank: int) -> str:
        return self.sites.get(int(rank), "") or UNKNOWN_SITE

    def scope_of(self, rank: int, peer: int) -> Scope:
        if not self.labelled:
            return WHOLE
        if peer < 0:
            return self.group
        a, b = self.site(rank), self.site(peer)
        if a == b:
            return Scope(f"site={a}", a, False)
        a, b = sorted((a, b))
        return Scope(f"inter-site {a}<->{b}", f"{a},{b}", True)

    def assign(self, samples: pd.DataFrame) -> pd.Series:
        """The scope name of every sample (one lookup per distinct rank/peer pair)."""
        if not self.labelled or samples.empty:
            return pd.Series([""] * len(samples), index=samples.index, dtype=object)
        pairs = samples[["rank", "peer"]].drop_duplicates()
        names = {(int(r), int(p)): self.scope_of(int(r), int(p)).name
                 for r, p in zip(pairs["rank"], pairs["peer"])}
        keys = zip(samples["rank"].astype(int), samples["peer"].astype(int))
        return pd.Series([names[k] for k in keys], index=samples.index, dtype=object)

    def scopes_in(self, samples: pd.DataFrame) -> List[Scope]:
        """The scopes present in the samples, in display order: sites, inter-site, groups."""
        if not self.labelled or samples.empty:
            return [WHOLE]
        pairs = samples[["rank", "peer"]].drop_duplicates()
        found = {self.scope_of(int(r), int(p)) for r, p in zip(pairs["rank"], pairs["peer"])}
        return sorted(found, key=Scope.sort_key)


def scope_label(scope: Scope) -> str:
    return scope.name or "-"


def by_name(scopes: Sequence[Scope]) -> Dict[str, Scope]:
    return {s.name: s for s in scopes}
