"""Which hosts' error counters name them: a rate test against the other hosts.

An error counter that moved says little by itself: a fabric under an all-pairs pass
drops and discards on every host now and then, and a counter that every host bumps is
the fabric's. A host is named by a counter only when its count stands out of the
other hosts' counts of the same counter (source and name) over the same run: Poisson
against the other hosts' mean at its one-sided 95 % upper bound (an all-pairs pass
gives every host the same traffic), over-dispersion measured across the hosts,
Benjamini-Hochberg over every (host, counter) tested, one family of the run's budget;
and at least RATE_FACTOR times the other hosts' mean (a practical bar, as the margin
of the pair effects).

Only physical error counters (a damaged packet or a link event: CRC, symbol, FCS,
integrity, link down, carrier, and generic `err` counters) name a host. Congestion
counters (discards, drops, overruns, pauses, out-of-buffer) count the fabric's load,
not a broken component: they are supporting evidence, listed with a culprit.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

import numpy as np
from scipy.stats import chi2, poisson

from ..inference import benjamini_hochberg

# A damaged packet or a link event: physical. Everything else the error pattern takes
# (discard, drop, overrun, excessive, ...) is congestion or transport.
PHYSICAL_COUNTER = re.compile(r"(crc|symbol|fcs|integrity|link_?down|downed|carrier|phy|"
                              r"align|err)", re.IGNORECASE)
CONGESTION_COUNTER = re.compile(r"(discard|drop|overrun|excessive|pause|buffer|congest|ecn|cnp)",
                                re.IGNORECASE)
# Hosts that read a counter before its rates can be compared.
MIN_HOSTS = 4
# A host named by a counter has at least this many times the other hosts' mean count.
RATE_FACTOR = 2.0
ALPHA = 0.05   # the upper bound on the other hosts' mean


def physical(name: str) -> bool:
    """A physical error counter (names a host when its rate stands out)."""
    return bool(PHYSICAL_COUNTER.search(name)) and not CONGESTION_COUNTER.search(name)


def standing_out(deltas: Dict[Tuple[str, str], Dict[str, int]], q_family: float
                 ) -> Dict[str, List[str]]:
    """host -> the physical counters (`source name`) whose count on that host stands out
    of the other hosts' (the module's docstring). `deltas`: (source, name) -> {host:
    increase over the run} for every host that read the counter, zeros included."""
    tests: List[Tuple[str, str, float]] = []
    for (source, name), per_host in sorted(deltas.items()):
        if not physical(name) or len(per_host) < MIN_HOSTS:
            continue
        hosts = sorted(per_host)
        k = np.array([max(int(per_host[h]), 0) for h in hosts], dtype=np.float64)
        if k.sum() <= 0:
            continue
        others = (k.sum() - k) / (len(k) - 1)
        upper = chi2.ppf(1.0 - ALPHA, 2.0 * (k.sum() - k + 1.0)) / 2.0 / (len(k) - 1)
        pearson = (k - others) ** 2 / np.maximum(others, 0.5)
        phi = max(1.0, float(np.median(pearson)) / 0.455)
        p = poisson.sf(np.ceil(k / phi) - 1, upper / phi)
        p = np.where(k >= RATE_FACTOR * np.maximum(others, 0.5), p, 1.0)
        tests += [(h, f"{source} {name}", float(pv)) for h, pv in zip(hosts, p)]
    if not tests:
        return {}
    rejected, _ = benjamini_hochberg(np.array([t[2] for t in tests]), q_family)
    out: Dict[str, List[str]] = {}
    for (h, what, _), ok in zip(tests, rejected):
        if ok:
            out.setdefault(h, []).append(what)
    return out
