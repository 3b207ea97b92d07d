"""Faults on the paths between leaves: what is slow only through the spine.

A NIC or a host slows every pair it takes part in. A fault between the leaf and the
spine slows only the pairs that leave or enter the leaf, and the pairs inside the leaf,
carried by one switch, stay typical. Two shapes:

- one rank side slow on (nearly) all its pairs between leaves and typical inside its
  leaf: "receive into NIC X through the spine" (its traffic from other leaves takes a
  path its local traffic does not: a spine -> leaf link its flows share, a misrouted
  or mis-hashed port). Collisions under load slow a random share of the pairs between
  leaves; a side is named only when its pairs between leaves that are at least the
  margin slow are more than that share explains (binomial against the share among
  every other rank's pairs between leaves) and they are at least half of them.
  Several ranks of one leaf so slow on one side are one finding: the leaf's links to
  the spine in that direction.
- a leaf whose pairs between leaves, in one direction, are slow far more often than
  the other leaves' (an uplink or a spine -> leaf link at a fraction of its speed
  slows the flows ECMP hashes onto it: a share of the leaf's pairs, never its median).
  Per leaf and direction (into the leaf: receive; out of it: send) the share of its
  pairs between leaves at least the bar slower than their ends predict is tested
  against the share among the pairs between two other leaves, the (source leaf,
  destination leaf) blocks as units: collisions come in bundles of a round's flows
  between two leaves, a link to the spine slows every block of its direction (Wald t,
  the spread of block shares beyond their pairs' draws in the error; _leaf_direction).
  Two bars (the margin, and the 99th percentile of the other leaves' pairs: a link at a
  tenth of its speed, among collisions that slow a fifth of all pairs past the
  margin); the share must be at least twice the other leaves' and MIN_PATH_SHARE. Both directions of one leaf name its uplinks; only into the leaf, its
  spine -> leaf links. Which of the k links carries it needs the flows' hashes, which
  the file does not hold: the finding says so.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import numpy as np
from scipy.stats import binom, norm, wilcoxon
from scipy.stats import t as t_dist

from ..inference import PRACTICAL_MARGIN as MARGIN
from ..inference import benjamini_hochberg
from .result import SPINE_LINK, UPLINK, Culprit

# A side judged on its pairs between leaves alone needs this many of them.
MIN_BETWEEN_PAIRS = 8
# A leaf direction needs this many pairs between leaves, over at least two other leaves.
MIN_LEAF_PAIRS = 16
# A leaf direction is a path fault when at least this share of its pairs between leaves
# is slow (beside the test): a few extra collisions are not a failed link.
MIN_PATH_SHARE = 0.04
# The second bar of a leaf direction: this quantile of the other leaves' pairs between
# leaves (see leaf_paths).
HIGH_QUANTILE = 0.99
# Links per leaf beyond which a blind spot is not worth saying: leaves of a few dozen
# ports have 4 to 32 links to the spine.
MAX_LINKS = 32


def between_leaves_p(null, rank: int, leaf: np.ndarray, centre: float, margin: float = MARGIN
                     ) -> Optional[Tuple[float, int]]:
    """(p, pairs) of rank's pairs between leaves standing out, for a side whose pairs
    inside its leaf are typical: at least half of them at least the margin slower than
    the centre, and more of them than the share of such pairs among every other rank's
    pairs between leaves explains (binomial). None with too few pairs between leaves,
    or fewer than half of them slow."""
    _, _, owner, own, peer = null
    between = leaf[owner] != leaf[peer]
    mine = (owner == rank) & between
    m = int(mine.sum())
    if m < MIN_BETWEEN_PAIRS:
        return None
    slow = own - centre >= math.log(margin)
    k = int((slow & mine).sum())
    if 2 * k < m:
        return None
    others = between & (owner != rank)
    total = int(others.sum())
    if total == 0:
        return None
    share = min(max(float((slow & others).sum()) / total, 0.5 / total), 1.0)
    return float(binom.sf(k - 1, m, share)), m


def leaf_paths(resid: np.ndarray, s: np.ndarray, r: np.ndarray, leaf: np.ndarray,
               q_family: float) -> List[Tuple[int, str, int, int, float, float, float, float]]:
    """(leaf, side, slow pairs, pairs, pooled share, z, q, bar) of each leaf direction whose
    pairs between leaves are slow more often than the other leaves'. side is receive
    (pairs into the leaf) or send (pairs out of it), judged by its (source leaf,
    destination leaf) blocks against the blocks between two other leaves (neither end on
    the tested leaf): _leaf_direction."""
    nl = int(leaf.max()) + 1 if len(leaf) else 0
    ls, lr = leaf[s], leaf[r]
    between = ls != lr
    if nl < 3 or between.sum() < MIN_LEAF_PAIRS:
        return []
    pair_block = (ls, lr)
    tests, ps = [], []
    for x in range(nl):
        # the pairs between two other leaves: the leaf's other direction may be slow too
        # (an uplink carries both), and would raise the share it is judged against
        others = between & (ls != x) & (lr != x)
        if others.sum() < MIN_LEAF_PAIRS:
            continue
        # two bars: the margin (a link at half speed slows its flows a little, under
        # load), and the 99th percentile of the other leaves' pairs (a link at a tenth
        # slows its flows far beyond the collisions that, on a fabric of few uplinks
        # per NIC, slow a fifth of all pairs past the margin); Bonferroni over the two
        bars = sorted({math.log(MARGIN), max(math.log(MARGIN),
                                             float(np.quantile(resid[others], HIGH_QUANTILE)))})
        for side in ("receive", "send"):
            best = None
            for bar in bars:
                judged = _leaf_direction(resid >= bar, between, pair_block, nl, x, side)
                if judged is not None and (best is None or judged[3] < best[3]):
                    best = judged + (bar,)
            if best is None:
                continue
            k, m, share, p, bar = best
            tests.append((x, side, k, m, share, bar))
            ps.append(min(1.0, p * len(bars)))
    if not tests:
        return []
    rejected, q = benjamini_hochberg(np.array(ps), q_family)
    out = []
    for (x, side, k, m, share, bar), p, ok, qv in zip(tests, ps, rejected, q):
        if ok and k >= MIN_PATH_SHARE * m and k > 2 * share * m:
            out.append((x, side, k, m, share, float(norm.isf(max(p, 1e-300))), float(qv),
                        math.exp(bar)))
    return out


def slow_between_share(resid: np.ndarray, s: np.ndarray, r: np.ndarray, leaf: np.ndarray
                       ) -> Optional[float]:
    """The share of the pairs between leaves at least MARGIN slow beside the test (under
    load: collisions, or what slows flows between leaves); None with fewer than
    MIN_LEAF_PAIRS of them."""
    between = leaf[s] != leaf[r]
    if between.sum() < MIN_LEAF_PAIRS:
        return None
    return float(np.mean(resid[between] >= math.log(MARGIN)))


def spine_blind_spot(shares: List[Tuple[str, float]]) -> Optional[str]:
    """What no leaf-path rule can see: a spine (or its links into every leaf) slowing the
    flows hashed through it. Every leaf sends 1/k of its flows between leaves through
    each of its k spines, so a slow spine slows every leaf alike and leaves compared with
    each other show nothing; what rises is the share of pairs between leaves slow under
    load, which ECMP collisions fill too. `shares`: (test, slow_between_share) of the
    tests that measured pairs between leaves in one direction."""
    if not shares:
        return None
    said = ", ".join(f"{label}: {100 * share:.1f} %" for label, share in shares)
    return (f"a spine, or its links into every leaf, slowing the flows hashed through it: it "
            f"slows every leaf's share of flows alike, so no leaf stands out of the others, and "
            f"the pairs between leaves it slows read as ECMP collisions ({said} of the pairs "
            f"between leaves at least {MARGIN:g}x slow under load), and the file holds no "
            "flow's route (that share against the same line of a known-good run of this "
            "fabric, or the spines' own counters, would tell)")


def between_blocks(resid: np.ndarray, s: np.ndarray, r: np.ndarray, leaf: np.ndarray,
                   leaf_names: List[str]) -> Dict[Tuple[str, str], Tuple[int, int]]:
    """Per ordered pair of leaves, by their names: (pairs at least MARGIN slow, pairs)."""
    nl = len(leaf_names)
    between = leaf[s] != leaf[r]
    block = (leaf[s] * nl + leaf[r])[between]
    slow = np.bincount(block, weights=(resid[between] >= math.log(MARGIN)), minlength=nl * nl)
    pairs = np.bincount(block, minlength=nl * nl)
    return {(leaf_names[b // nl], leaf_names[b % nl]): (int(slow[b]), int(pairs[b]))
            for b in np.flatnonzero(pairs)}


# Fewer ordered pairs of leaves in common with the known-good run give a signed-rank
# test that cannot reach significance (6 blocks all higher: p = 1/64)
SPINE_MIN_BLOCKS = 6
# The share of pairs between leaves slow under load must at least double against the
# known-good run's: collisions move it from run to run (another hash of the flows); a
# spine at a tenth of its capacity quadrupled it in the validation world
SPINE_SHARE_RATIO = 2.0


def spine_against_baseline(now: Dict[Tuple[str, str], Tuple[int, int]],
                           before: Dict[Tuple[str, str], Tuple[int, int]]
                           ) -> Optional[Tuple[float, float, float, int]]:
    """(share of pairs between leaves slow now, in the known-good run, one-sided p,
    blocks) of one test against the same test of a known-good run of the same fabric,
    or None with fewer than SPINE_MIN_BLOCKS blocks in common. A slow spine (or its links
    into every leaf) slows the flows hashed through it from every leaf to every other:
    the share rises in every block of pairs from one leaf to another, where collisions
    of another hash of the flows move blocks up and down. The unit is the block, not the
    pair (collisions come in bundles); the test is Wilcoxon's signed rank over the
    blocks' differences, one-sided."""
    common = sorted(k for k in now if k in before and now[k][1] >= 2 and before[k][1] >= 2)
    if len(common) < SPINE_MIN_BLOCKS:
        return None
    d = np.array([now[k][0] / now[k][1] - before[k][0] / before[k][1] for k in common])
    share_now = sum(now[k][0] for k in common) / sum(now[k][1] for k in common)
    share_before = sum(before[k][0] for k in common) / sum(before[k][1] for k in common)
    # blocks alike in both runs split their ranks between the signs; the exact
    # distribution has no ties, so with any the normal approximation
    method = "approx" if np.any(d == 0) else "auto"
    p = 1.0 if not np.any(d) else float(wilcoxon(d, alternative="greater", zero_method="zsplit",
                                                 method=method).pvalue)
    return share_now, share_before, p, len(common)


def collision_blind_spot(resid: np.ndarray, s: np.ndarray, r: np.ndarray, leaf: np.ndarray,
                         label: str) -> Optional[str]:
    """What the leaf-direction rule cannot see among the run's collisions, or None. A link
    of a leaf to the spine carries 1/k of the leaf's flows between leaves (k links); slow
    past the margin but not past the high bar, it adds at most (1 - S)/k to the share S
    of pairs between leaves the collisions already slow past the margin, and the rule
    needs twice S: found only when k < (1 - S)/S. The file does not hold k (nor the
    hashes), so the limit is said in links per leaf, where it is below MAX_LINKS."""
    nl = int(leaf.max()) + 1 if len(leaf) else 0
    share = slow_between_share(resid, s, r, leaf)
    if nl < 3 or share is None or share <= 1.0 / (MAX_LINKS + 1):
        return None
    between = leaf[s] != leaf[r]
    high = max(MARGIN, math.exp(float(np.quantile(resid[between], HIGH_QUANTILE))))
    most = int(math.ceil((1.0 - share) / share - 1e-9)) - 1   # k < (1 - S)/S is found
    return (f"an uplink or spine -> leaf link slowing its flows by less than {high:.2f}x on a leaf "
            f"of more than {max(most, 1)} link(s) to the spine: {label}: {100 * share:.1f} % of the "
            f"pairs between leaves are at least {MARGIN:g}x slow under load (collisions), and such "
            f"a link slows 1/k of its leaf's flows, fewer than twice that share (a serial retest "
            "of the leaf's pairs between leaves, or a quieter pass, would tell)")


def _leaf_direction(slow: np.ndarray, between: np.ndarray, pair_block, nl: int, x: int,
                    side: str) -> Optional[Tuple[int, int, float, float]]:
    """(slow pairs, pairs, share among the blocks between two other leaves, p) of leaf
    x's pairs into it (receive) or out of it (send); None with too few pairs or blocks.

    The unit is the block of pairs from one leaf to another, not the pair: collisions
    come in bundles (in one round a leaf's flows to one other leaf, several on one link),
    so a block's share varies far beyond its pairs' binomial draws, and one block can
    hold most of a direction's slow pairs. A link to the spine slows the flows hashed
    onto it from every other leaf: every block of the direction. The blocks are three
    groups, each with its own share of slow pairs: the direction judged, the leaf's
    other direction (an uplink slows both) and the blocks between two other leaves.
    tau^2, the variance of a block's share beyond its pairs' draws, is the squares of
    every block's share about its group's, less what the draws explain, over the
    degrees of freedom (blocks less the three shares; at least 0). A group's share (its
    blocks' shares weighted by their pairs) then has the error p (1 - p) / pairs + tau^2
    x the sum of its blocks' squared weights, and the direction's share is tested
    against the others' by that Wald t, on the Welch-Satterthwaite degrees of freedom
    (only the tau^2 part is estimated from the blocks: normal when it is 0, those degrees
    of freedom when it is all). One block of any count moves both the share and tau^2,
    and alone cannot carry the test."""
    ls, lr = pair_block
    k_block = np.zeros((nl, nl))
    m_block = np.zeros((nl, nl))
    np.add.at(k_block, (ls[between], lr[between]), slow[between])
    np.add.at(m_block, (ls[between], lr[between]), 1)
    own = np.zeros((nl, nl), dtype=bool)
    if side == "receive":
        own[:, x] = True
    else:
        own[x, :] = True
    own &= m_block > 0
    rest = m_block > 0
    rest[x, :] = rest[:, x] = False
    other_way = (m_block > 0) & ~own & ~rest
    np.fill_diagonal(other_way, False)
    groups = [g for g in (own, rest, other_way) if g.any()]
    df = sum(int(g.sum()) for g in groups) - len(groups)
    if own.sum() < 2 or rest.sum() < 2 or m_block[own].sum() < MIN_LEAF_PAIRS or df < 1:
        return None
    k, m = float(k_block[own].sum()), float(m_block[own].sum())
    # each group's share, and the spread of its blocks' shares beyond their pairs' draws
    shares, beyond, weights = [], 0.0, []
    for g in groups:
        mb = m_block[g]
        total = float(mb.sum())
        share_g = min(max(k_block[g].sum() / total, 0.5 / total), 0.999)
        shares.append(share_g)
        beyond += float(np.sum((k_block[g] / mb - share_g) ** 2)
                        - np.sum(share_g * (1 - share_g) / mb * (1 - mb / total)))
        weights.append(float(np.sum((mb / total) ** 2)))
    tau2 = max(0.0, beyond / df)
    mine, share = shares[0], shares[1]
    m_rest = float(m_block[rest].sum())
    spread = tau2 * (weights[0] + weights[1])
    var = mine * (1 - mine) / m + share * (1 - share) / m_rest + spread
    # Welch-Satterthwaite: only tau^2 is estimated from the blocks; the draws' part is not
    dof = df * (var / spread) ** 2 if spread > 0 else math.inf
    return int(k), int(m), share, float(t_dist.sf((k / m - share) / math.sqrt(var), dof))


def name_leaf_paths(layout, tests, out) -> None:
    """Culprits for the leaf directions whose pairs between leaves stand out (each test's
    `paths`), a leaf already named (its switch explains its pairs) left out: both
    directions of a leaf are its uplinks, only into it its spine -> leaf links, only out
    of it its uplinks' send side. Registers (leaf, side) in out.paths, so the pairs
    through it are explained (explains())."""
    found = {}
    for t in tests:
        for e in getattr(t, "paths", []):
            x, side = e.key
            if x in out.leaves:
                continue
            found.setdefault(x, {}).setdefault(side, []).append((t, e))
    for x, by_side in sorted(found.items()):
        sides = set(by_side)
        component = SPINE_LINK if sides == {"receive"} else UPLINK
        direction = "both" if len(sides) == 2 else sides.pop()
        items = [item for v in by_side.values() for item in v]
        for side in by_side:
            out.paths.add((x, side))
        z = max(e.z for _, e in items)
        q = min(e.q for _, e in items)
        score = round(min(1.0, 0.4 + 0.04 * z), 3)
        confidence = "high" if q < 1e-4 and score >= 0.75 else "medium" if q < 1e-2 else "low"
        where = {"receive": "into the leaf from other leaves",
                 "send": "out of the leaf to other leaves"}
        out.culprits.append(Culprit(
            host=layout.leaf_names[x], ranks=[], gpus=[], nics=[], direction=direction,
            symptoms=[f"pairs {where[e.key[1]]}: {e.detail} [{t.label}]" for t, e in items],
            evidence=[f"{t.label}: z={e.z:.1f}, q={e.q:.2g} against the pairs between two other "
                      "leaves (blocks of pairs between two leaves as units, their spread in the "
                      "error); pairs inside the leaf are not part of it" for t, e in items]
            + ["which of the leaf's links to the spine carries it needs the flows' ECMP hashes, "
               "which the file does not hold: check each link's counters or speed, or retest "
               "its flows"],
            confidence=confidence, score=score, component=component))


def explains(layout, out, s: int, r: int) -> bool:
    """A pair between leaves that leaves or enters a leaf direction named by
    name_leaf_paths."""
    ls, lr = int(layout.leaf[s]), int(layout.leaf[r])
    return ls != lr and ((lr, "receive") in out.paths or (ls, "send") in out.paths)


def group_spine_sides(layout, by_host, out) -> None:
    """Rank sides slow only through the spine (Effect.through_spine), two or more of one
    leaf on one side, with no other evidence on that side: one finding, the leaf's
    links to the spine in that direction (their NICs share nothing else), in place of a
    NIC each. Taken out of by_host (host -> {(rank, side): [(test, effect)]})."""
    groups = {}
    for h, flagged in by_host.items():
        for (rank, side), items in flagged.items():
            if items and all(e.through_spine for _, e in items):
                groups.setdefault((int(layout.leaf[rank]), side), []).append((h, rank, side))
    for (x, side), members in sorted(groups.items()):
        if len(members) < 2 or x in out.leaves:
            continue
        items = []
        for h, rank, sd in members:
            items += by_host[h].pop((rank, sd))
            if not by_host[h]:
                del by_host[h]
        out.paths.add((x, side))
        ranks = sorted(rank for _, rank, _ in members)
        z = max(e.z for _, e in items)
        q = min(e.q for _, e in items)
        score = round(min(1.0, 0.4 + 0.04 * z), 3)
        confidence = "high" if q < 1e-4 and score >= 0.75 else "medium" if q < 1e-2 else "low"
        towards = "into the leaf from" if side == "receive" else "out of the leaf to"
        out.culprits.append(Culprit(
            host=layout.leaf_names[x], ranks=ranks, gpus=[layout.gpu.get(r, -1) for r in ranks],
            nics=[layout.nic.get(r, "") for r in ranks], direction=side,
            symptoms=[f"{len(ranks)} ranks ({', '.join(str(r) for r in ranks)}) slow only on pairs "
                      f"{towards} other leaves; their pairs inside the leaf typical"],
            evidence=[f"{t.label}: rank {e.key[0]} {e.key[1]} z={e.z:.1f}, q={e.q:.2g}, over {e.pairs} "
                      "pairs" for t, e in items],
            confidence=confidence, score=score,
            component=SPINE_LINK if side == "receive" else UPLINK))
