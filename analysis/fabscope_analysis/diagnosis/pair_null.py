"""The null a single pair is judged against: healthy pairs' own tail, per kind of pair.

links() (evidence.py) and the serial retest (core.py) judge one GPU pair against the
less favourable of the normal null and the tail null (tail_null.py) fitted on the fast
side of the test's residuals, per kind of pair (inside a host, between hosts: kind_dfs).
"""

from __future__ import annotations

import math
from typing import Optional, Tuple

import numpy as np
from scipy.stats import norm

from ..tail_null import fast_side_df, tail_isf, tail_sf
from .model import Fit, Layout

def same_host(fit: Fit, layout: Optional[Layout]) -> Optional[np.ndarray]:
    """Per pair, whether both ranks sit on one host (None without a layout). Pairs inside
    a host cross no NIC and no switch: their spread is the hosts' software time and
    NVLink, its tail not the fabric's pairs' (in the validation world a host's large
    software time gives its own pairs a heavy tail that a clean fabric's pairs between
    hosts do not have), so each kind's tail is fitted on its own pairs."""
    if layout is None:
        return None
    d = fit.data
    return layout.host[d.s] == layout.host[d.r]


def kind_dfs(values: np.ndarray, inside: np.ndarray) -> Tuple[float, float]:
    """(the tail null's degrees of freedom for pairs inside a host, for pairs between
    hosts). Pairs between hosts are judged against their own tail: the software spread
    of the pairs inside hosts is not theirs. Pairs inside a host are judged against the
    heavier of their own tail and that of the pairs between hosts: every pair carries
    its own effect (queue pairs, firmware; between hosts its route), and inside a host
    the hosts' software time adds a wider spread on top of it, so the fit of their few
    hundred values reads the bulk of that spread and not the pair effects' tail (validation
    world, pair effects a Student-t of 3 degrees of freedom: the fast side of the pairs
    inside hosts read as 10 degrees of freedom or the normal in latency, those between
    hosts as 3; one pair of the 448 inside hosts drawn 4x slow was then named). What the
    pairs between hosts show of that tail bounds it from below; a host's own heavier
    tail stays its own."""
    between = fast_side_df(values[~inside])
    return min(fast_side_df(values[inside]), between), between


def null_p(z: np.ndarray, values: np.ndarray, kinds: Optional[np.ndarray] = None) -> np.ndarray:
    """One-sided p of each z (robust sigmas) under the less favourable of the normal null
    and the tail null fitted on the fast side of `values`, per kind of pair when `kinds`
    (a mask: pairs inside a host) is given (kind_dfs: pairs between hosts their own
    tail, pairs inside a host the heavier of theirs and that one)."""
    if kinds is None:
        return np.maximum(norm.sf(z), tail_sf(z, fast_side_df(values)))
    p = np.empty(len(z))
    for part, df in zip((kinds, ~kinds), kind_dfs(values, kinds)):
        if part.any():
            p[part] = np.maximum(norm.sf(z[part]), tail_sf(z[part], df))
    return p


def link_bars(fit: Fit, widen: float, q_family: float, layout: Optional[Layout] = None
              ) -> Tuple[float, float, float]:
    """(the time factor a single pair between two hosts needs to stand out at the
    family's first Benjamini-Hochberg bar under the null links() uses, the same under
    the normal null, the tail null's degrees of freedom): a faulty GPU pair slower than
    the first is named; between the two, a heavy-tailed healthy population hides it."""
    m = len(fit.resid)
    if m < 4 or fit.sigma_e <= 0:
        return math.inf, math.inf, math.inf
    inside = same_host(fit, layout)
    df = fast_side_df(fit.resid if inside is None else fit.resid[~inside])
    sigma = fit.sigma_e * widen
    tail = max(tail_isf(q_family / m, df), float(norm.isf(q_family / m)))
    return math.exp(tail * sigma), math.exp(float(norm.isf(q_family / m)) * sigma), df
