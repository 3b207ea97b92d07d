"""The simulated cluster's shape and the pair schedules fabscope runs on it.

Hosts are numbered in rank order (rank = host x GPUs + local rank, as mpirun's
by-slot mapping places them), leaves hold consecutive hosts and pods
consecutive leaves. The schedules are ports of src/kinds/p2p/PairSchedule.cpp
and TopologySchedule.cpp: the same circle method, the same splitmix64 draws,
so a pattern here pairs ranks the way `fabscope run` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np

Pair = Tuple[int, int]
Round = List[Pair]
Schedule = List[Round]

PATTERNS = ("all-pairs", "rails", "cross-rail", "ring", "bisection", "hierarchical")
# samples.level (docs/file-format.md)
SAME_NODE, SAME_LEAF, SAME_POD, CROSS_POD = 1, 2, 3, 4
MASK64 = (1 << 64) - 1


class SynthError(ValueError):
    """A cluster, noise model or fault the generator cannot build."""


@dataclass(frozen=True)
class Cluster:
    """hosts x gpus ranks in `leaves` leaves and `pods` pods (each divides the one above)."""
    hosts: int
    gpus: int = 1
    leaves: int = 1
    pods: int = 1

    def __post_init__(self):
        if self.hosts < 2 or self.gpus < 1:
            raise SynthError(f"cluster: expected at least 2 hosts and 1 GPU each, got "
                             f"{self.hosts} hosts x {self.gpus} GPUs")
        if self.leaves < 1 or self.hosts % self.leaves:
            raise SynthError(f"cluster: expected a number of leaves that divides the {self.hosts} "
                             f"hosts, got {self.leaves}")
        if self.pods < 1 or self.leaves % self.pods:
            raise SynthError(f"cluster: expected a number of pods that divides the "
                             f"{self.leaves} leaves, got {self.pods}")

    @property
    def ranks(self) -> int:
        return self.hosts * self.gpus

    def host_name(self, host: int) -> str:
        return f"host{host:0{len(str(self.hosts - 1))}d}"

    def nic_name(self, local: int) -> str:
        return f"mlx5_{local}"

    def leaf_of_host(self, host: int) -> int:
        return host // (self.hosts // self.leaves)

    def pod_of_leaf(self, leaf: int) -> int:
        return leaf // (self.leaves // self.pods)

    def host_of(self) -> np.ndarray:
        return np.arange(self.ranks) // self.gpus

    def local_of(self) -> np.ndarray:
        return np.arange(self.ranks) % self.gpus

    def leaf_of(self) -> np.ndarray:
        return self.host_of() // (self.hosts // self.leaves)

    def pod_of(self) -> np.ndarray:
        return self.leaf_of() // (self.leaves // self.pods)

    def host_index(self, name: str) -> int:
        """A host by its name (host12) or index (12)."""
        text = name.strip()
        digits = text[4:] if text.startswith("host") else text
        if digits.isdigit() and int(digits) < self.hosts:
            return int(digits)
        raise SynthError(f"no host {name!r} in a cluster of {self.hosts} hosts "
                         f"(expected {self.host_name(0)} .. {self.host_name(self.hosts - 1)})")

    def leaf_index(self, name: str) -> int:
        text = name.strip()
        digits = text[4:] if text.startswith("leaf") else text
        if digits.isdigit() and int(digits) < self.leaves:
            return int(digits)
        raise SynthError(f"no leaf {name!r} in a cluster of {self.leaves} leaves "
                         f"(expected leaf0 .. leaf{self.leaves - 1})")

    def levels(self, s: np.ndarray, d: np.ndarray) -> np.ndarray:
        """samples.level of the pairs s -> d (arrays of ranks)."""
        host, leaf, pod = self.host_of(), self.leaf_of(), self.pod_of()
        return np.select([host[s] == host[d], leaf[s] == leaf[d], pod[s] == pod[d]],
                         [SAME_NODE, SAME_LEAF, SAME_POD], CROSS_POD).astype(np.uint8)


@dataclass(frozen=True)
class Layout:
    """The measuring ranks in measuring order (group index i = world rank ranks[i]) and where
    each sits, as the driver's RankLayout."""
    ranks: np.ndarray
    host: np.ndarray
    local: np.ndarray
    leaf: np.ndarray
    pod: np.ndarray

    @property
    def n(self) -> int:
        return len(self.ranks)


def layout_of(c: Cluster, ranks=None) -> Layout:
    ranks = np.arange(c.ranks) if ranks is None else np.asarray(ranks, dtype=np.int64)
    return Layout(ranks, c.host_of()[ranks], c.local_of()[ranks], c.leaf_of()[ranks],
                  c.pod_of()[ranks])


def spread_half(c: Cluster) -> Tuple[np.ndarray, np.ndarray]:
    """(canaries, congestors) of a test with a congested condition: half the ranks (even)
    measure, placed spread (consecutive canaries on different hosts), the rest make load."""
    order = np.array([h * c.gpus + g for g in range(c.gpus) for h in range(c.hosts)])
    half = max(2, (c.ranks // 2) // 2 * 2)
    return order[:half], np.sort(order[half:])


# -- the driver's generator (splitmix64) and schedules ---------------------------------------

def _next(state: List[int]) -> int:
    state[0] = (state[0] + 0x9e3779b97f4a7c15) & MASK64
    z = state[0]
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & MASK64
    return z ^ (z >> 31)


def _shuffled(n: int, state: List[int]) -> List[int]:
    order = list(range(n))
    for i in range(n, 1, -1):
        j = _next(state) % i
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


def circle_rounds(n: int, both_directions: bool) -> int:
    seats = n if n % 2 == 0 else n + 1
    return max(seats - 1, 0) * (2 if both_directions else 1)


def circle_round(n: int, r: int, both_directions: bool) -> Round:
    """Round r of the circle method over n ranks (PairSchedule.cpp's circleRound)."""
    seats = n if n % 2 == 0 else n + 1
    k = r // 2 if both_directions else r
    mirror = both_directions and r % 2 == 1
    out = []
    for i in range(seats // 2):
        a = 0 if i == 0 else (k + i - 1) % (seats - 1) + 1
        b = (k + seats - 1 - i - 1) % (seats - 1) + 1
        if a >= n or b >= n:
            continue
        pair = (a, b) if (k + i) % 2 == 0 else (b, a)
        out.append((pair[1], pair[0]) if mirror else pair)
    return out


def _side_by_side(groups: Sequence[Sequence[int]], both: bool,
                  drop: Callable[[Pair], bool] = lambda p: False) -> Schedule:
    rounds = max((circle_rounds(len(g), both) for g in groups), default=0)
    schedule = []
    for r in range(rounds):
        round_ = []
        for g in groups:
            if r < circle_rounds(len(g), both):
                round_ += [(g[a], g[b]) for a, b in circle_round(len(g), r, both)]
        round_ = [p for p in round_ if not drop(p)]
        if round_:
            schedule.append(round_)
    return schedule


def _matching(n: int, state: List[int], fits: Callable[[int, int], bool]) -> Round:
    order = _shuffled(n, state)
    taken = [False] * n
    out = []
    for i, a in enumerate(order):
        if taken[a]:
            continue
        for b in order[i + 1:]:
            if taken[b] or not fits(a, b):
                continue
            taken[a] = taken[b] = True
            out.append((a, b) if _next(state) & 1 else (b, a))
            break
    return out


def _ring(n: int, draws: int, seed: int) -> Schedule:
    state, schedule = [seed], []
    for _ in range(draws if n >= 3 else 0):
        ring = _shuffled(n, state)
        edges = [(ring[k], ring[(k + 1) % n]) for k in range(n)]
        paired = n if n % 2 == 0 else n - 1
        schedule += [edges[0:paired:2], edges[1:paired:2]]
        if paired != n:
            schedule.append([edges[n - 1]])
    return schedule


def _bisection(n: int, draws: int, seed: int) -> Schedule:
    state, half, schedule = [seed], n // 2, []
    for _ in range(draws if half else 0):
        order = _shuffled(n, state)
        schedule.append([(order[i], order[half + i]) if i % 2 == 0 else (order[half + i], order[i])
                         for i in range(half)])
    return schedule


def _hierarchical(lay: Layout, both: bool, draws: int, seed: int) -> Schedule:
    leaf = lay.pod * 1_000_000 + lay.leaf  # leaves are named within pods
    ids = {key: i for i, key in enumerate(dict.fromkeys(leaf.tolist()))}
    group = np.array([ids[x] for x in leaf.tolist()], dtype=np.int64)
    groups = [list(np.flatnonzero(group == g)) for g in range(len(ids))]
    schedule = _side_by_side(groups, both)
    if len(groups) < 2:
        return schedule
    pods = {}
    for p, g in zip(lay.pod.tolist(), group.tolist()):
        pods.setdefault(p, set()).add(g)
    alternate = len(pods) > 1 and any(len(g) > 1 for g in pods.values())
    state, pod = [seed], lay.pod
    for d in range(draws):
        within = alternate and d % 2 == 0
        round_ = _matching(lay.n, state, lambda a, b: group[a] != group[b] and (
            not alternate or (pod[a] == pod[b]) == within))
        if round_:
            schedule.append(round_)
    return schedule


def all_pairs_arrays(n: int, both_directions: bool) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """circle_round of every round at once: (initiator, responder, round) arrays."""
    seats = n if n % 2 == 0 else n + 1
    rounds = circle_rounds(n, both_directions)
    r = np.arange(rounds)[:, None]
    i = np.arange(seats // 2)[None, :]
    k = r // 2 if both_directions else r
    a = np.where(i == 0, 0, (k + i - 1) % (seats - 1) + 1)
    b = (k + seats - 2 - i) % (seats - 1) + 1
    swap = (k + i) % 2 == 1
    if both_directions:
        swap = swap ^ (r % 2 == 1)
    s, d = np.where(swap, b, a), np.where(swap, a, b)
    keep = (a < n) & (b < n)
    return s[keep], d[keep], np.broadcast_to(r, a.shape)[keep]


def schedule_of(pattern: str, lay: Layout, both_directions: bool, draws: int = 4,
                seed: int = 1) -> Schedule:
    """The rounds of `pattern` over the layout's ranks, in group indices (initiator, responder)."""
    n, host, local = lay.n, lay.host, lay.local
    if pattern == "all-pairs":
        return [circle_round(n, r, both_directions) for r in range(circle_rounds(n, both_directions))]
    if pattern == "rails":
        rails = [list(np.flatnonzero(local == g)) for g in np.unique(local)]
        return _side_by_side(rails, both_directions, lambda p: host[p[0]] == host[p[1]])
    if pattern == "cross-rail":
        if len(np.unique(local)) < 2:
            raise SynthError("pattern 'cross-rail' needs at least 2 GPUs per host (2 rails); "
                             "the cluster has 1 (use pattern rails)")
        state = [seed]
        rounds = [_matching(n, state, lambda a, b: host[a] != host[b] and local[a] != local[b])
                  for _ in range(draws)]
        return [r for r in rounds if r]
    if pattern == "ring":
        return _ring(n, draws, seed)
    if pattern == "bisection":
        if n < 4:
            raise SynthError(f"pattern 'bisection' needs at least 4 ranks, the cluster has {n}")
        return _bisection(n, draws, seed)
    if pattern == "hierarchical":
        return _hierarchical(lay, both_directions, draws, seed)
    raise SynthError(f"unknown pattern {pattern!r} (expected one of {', '.join(PATTERNS)})")


def sample_rounds(rounds: int, keep: int, seed: int) -> List[int]:
    """The time budget's seeded choice of `keep` of `rounds` rounds, in order."""
    state, index = [seed], list(range(rounds))
    for i in range(keep):
        j = i + _next(state) % (rounds - i)
        index[i], index[j] = index[j], index[i]
    return sorted(index[:keep])


def flatten(schedule: Schedule) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(initiator, responder, round index) arrays of a schedule."""
    sizes = [len(r) for r in schedule]
    flat = [p for r in schedule for p in r]
    pairs = np.array(flat, dtype=np.int64).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1], np.repeat(np.arange(len(schedule)), sizes)


def rank_labels(c: Cluster) -> Dict[str, np.ndarray]:
    """Every rank's /ranks labels as arrays."""
    host, local = c.host_of(), c.local_of()
    return {"host": np.array([c.host_name(h) for h in host]),
            "nic": np.array([c.nic_name(g) for g in local]),
            "leaf": np.array([f"leaf{x}" for x in c.leaf_of()]),
            "pod": np.array([f"pod{x}" for x in c.pod_of()]),
            "local": local}
