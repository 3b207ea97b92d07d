"""The run, simulated on SimGrid's flow-level network model.

Each rank is a SimGrid host; each component of validation/fabric.py a link; each rank
pair a static route (the ECMP choice of its flow). A message is `Comm.sendto_async`
between two hosts: SimGrid gives it the links' latencies plus its size over the share of
bandwidth max-min fairness leaves it on the most contended link of its route (model
CM02, no TCP correction factors: an RDMA fabric, not TCP). What SimGrid does not model
is added by explicit, named stages of the measuring process, so each is visible:

  software   each message end costs its host's software time (a per-host gamma draw,
             drifting when drift is on) plus an exponential jitter, and now and then an
             OS hiccup (Pareto-tailed, capped at 5 ms);
  retransmit a message crossing a lossy component loses a packet with the component's
             probability per 4 KiB packet; a loss costs either a NAK round trip and a
             resend of the rest of the message (SimGrid times the resend), or a
             retransmission timeout of 0.5-4 ms (lost tail or ack);
  queueing   a latency message crossing a link carrying another tenant's burst waits
             2-20 us in its queue (a flow-level model has no queues; bandwidth flows
             share the link with the burst's flows in SimGrid itself);
  outage     a NIC port turned off (SimGrid's link state): a message crossing it fails
             and is sent again after the transport's retransmission timeout (retry_s,
             1 ms by default) until the port is back.

The measurement follows the real all-pairs kinds: the circle schedule (every rank in a
pair each round, pairs of a round at once, a pair's iterations back to back), latency as
an 8 B ping-pong (round trip, sample divisor 2), bandwidth as a window of messages one
way plus an 8 B acknowledgement (its route's latency); then a serial retest of the worst pairs beside control
pairs, one pair at a time, and each worst pair again after every other pair and at least
REVISIT_GAP_S after its first visit (flag bit 15), as the runner does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from .fabric import Fabric
from .faults import Planted
from .scheduler import Scheduler

FLAG_CONTROL_PAIR = 1 << 10
FLAG_RETEST_SECOND_VISIT = 1 << 15
# a retested pair's second visit starts at least this long after its first ended (the
# runner's kRevisitGapNs, src/kinds/p2p/PairPlan.hpp)
REVISIT_GAP_S = 0.1
PACKET = 4096
MIN_CONTROL_PAIRS = 10


@dataclass(frozen=True)
class Noise:
    """Healthy variation that is not a fault (fabric.py draws the static part)."""
    jitter_s: float = 60e-9            # mean exponential jitter per message end
    hiccup_rate: float = 1e-4          # OS hiccups per sample
    bursts: float = 0.0                # share of (round, inter-switch link) slots with a burst
    burst_s: Tuple[float, float] = (0.2e-3, 1.5e-3)   # a burst lasts uniform in this (s)
    drift: bool = False                # per-leaf NIC speed and per-host software time wander
    # healthy pair effects with a heavy tail: each flow's time x exp(pair_spread x t / sd(t)),
    # t a Student-t draw with pair_df degrees of freedom, fixed for the run (0: none)
    pair_spread: float = 0.0
    pair_df: float = 3.0


@dataclass(frozen=True)
class Test:
    kind: str            # latency or bandwidth
    size: int            # bytes a message
    window: int          # messages a sample
    iterations: int
    retest_worst: int = 3
    # visits of each retested pair: 2 as the runner does (the second after every other
    # pair of the retest and REVISIT_GAP_S after the first), 1 as runners before it did
    retest_visits: int = 2

    @property
    def sample_bytes(self) -> int:
        return self.size * self.window


@dataclass
class Instance:
    """One /tests/NNNN: the test, its pass, samples (structured rows as lists)."""
    test: Test
    pass_: str
    t_start: float
    t_end: float
    rows: List[Tuple[int, int, int, int, int, int, int]] = field(default_factory=list)
    retest_of: int = -1
    rounds: int = 0


def medians_by_key(keys: np.ndarray, values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The distinct keys (ascending) and the median of each key's values, as np.median
    gives it (the middle value, or the mean of the two middle values), in one sort."""
    order = np.lexsort((values, keys))
    keys, values = keys[order], values[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    counts = np.diff(np.r_[starts, len(keys)])
    low, high = starts + (counts - 1) // 2, starts + counts // 2
    return keys[starts], np.where(low == high, values[low], (values[low] + values[high]) / 2)


def circle_rounds(n: int) -> List[List[Tuple[int, int]]]:
    """All unordered pairs of n ranks in n-1 (n even) rounds of disjoint pairs, the
    circle method as the driver's all-pairs schedule lays it out."""
    seats = n + (n % 2)
    rounds = []
    for k in range(seats - 1):
        pairs = []
        for i in range(seats // 2):
            a = 0 if i == 0 else (k + i - 1) % (seats - 1) + 1
            b = (k + seats - 2 - i) % (seats - 1) + 1
            if a < n and b < n:
                pairs.append((b, a) if (k + i) % 2 else (a, b))
        rounds.append(pairs)
    return rounds


# bandwidth of a link that only carries a dropped switch's latency: no flow set reaches it
HOP_BANDWIDTH = 1e18


def never_binding(fabric: Fabric, planted: Planted,
                  routes: Optional[Dict[Tuple[int, int], List[int]]] = None,
                  ) -> Tuple[set, Dict[Tuple[int, int], bool]]:
    """The switches whose capacity no set of flows can reach, and where their latency goes.

    A leaf switches twice its ports' speed: what crosses it enters or leaves by one of its
    NIC ports, each at most the nominal speed (leaf spread, capacity spread, drift and slow
    faults only lower it). A spine too (one uplink's worth to and from each leaf), twice what
    the uplinks into it carry; a host's switch as much as all its GPUs' ports. A constraint that
    never binds does not change max-min fairness, but SimGrid's solver couples every flow
    through it, so one flow ending recomputes every flow of the fabric. These switches are
    left out of the routes and their latency kept, for each link a route crosses right
    before one (key (before, switch)): added to that link (True) when every route through
    it goes on into the switch and no tenant's burst crosses it (a NIC or NVLink port), or
    else carried by a link of its own after it (False: after an uplink or a spine downlink,
    which a burst crosses alone). A switch with a capacity fault stays in its routes."""
    dropped = {i for i, link in enumerate(fabric.links)
               if link.kind in ("leaf", "spine", "intra") and i not in planted.capacity}
    after: Dict[int, set] = {}
    if routes is None:
        routes = {(s, d): fabric.route(s, d) for s in range(fabric.ranks) for d in range(fabric.ranks)
                  if s != d}
    for route in routes.values():
        dropped.discard(route[0])   # a latency needs a link before it
        for k in range(len(route) - 1):
            after.setdefault(route[k], set()).add(route[k + 1])
    placement = {}
    for before, nexts in after.items():
        for i in nexts & dropped:
            placement[(before, i)] = (nexts == {i} and
                                      fabric.links[before].kind in ("nic_tx", "nvl_tx"))
    return dropped, placement


class World:
    """The SimGrid platform of a fabric, and the processes that measure on it."""

    def __init__(self, fabric: Fabric, planted: Planted, noise: Noise, seed: int,
                 retry_s: float = 1e-3):
        import simgrid as sg  # only the simulation needs SimGrid
        self.sg = sg
        self.f, self.p, self.noise = fabric, planted, noise
        # a message that meets a port down is sent again this long after (the transport's
        # retransmission timeout: an RC queue pair's is 4.096 us x 2^timeout, UCX's 1 s by
        # default, TCP's at least 200 ms)
        self.retry_s = retry_s
        self.seed = seed
        # the driver's draws (bursts, outage starts, control pairs): one stream, drawn in
        # the driver's order; the measuring pairs and the drift draw from streams of their own
        self.rng = np.random.default_rng([seed, 0x51D])
        self.engine = sg.Engine(["validation", "--cfg=network/model:CM02",
                                 "--cfg=network/crosstraffic:0", "--cfg=contexts/factory:raw",
                                 "--log=root.thres:critical", "--log=xbt_cfg.thres:critical"])
        zone = sg.NetZone.create_full_zone("fabric")
        n = fabric.ranks
        self.hosts = [zone.create_host(f"r{r}", 1e9) for r in range(n)]
        self.links = []
        self.drift_factor = np.ones(len(fabric.links))
        self.host_drift = [1.0] * fabric.shape.hosts
        self.host_overhead = [float(x) for x in fabric.host_overhead_s]
        latency = [link.latency + planted.latency_add.get(i, 0.0) for i, link in enumerate(fabric.links)]
        nominal = [self.bandwidth(i) for i in range(len(fabric.links))]   # drift only lowers it
        # per route, the shortest time of a message: (SimGrid's latency, least nominal bandwidth)
        self.fastest: Dict[Tuple[int, int], Tuple[float, float]] = {}
        route_latency = list(latency)
        self.routes: Dict[Tuple[int, int], List[int]] = {
            (s, d): fabric.route(s, d) for s in range(n) for d in range(n) if s != d}
        dropped, placement = never_binding(fabric, planted, self.routes)
        for (before, i), folded in placement.items():
            if folded:
                latency[before] += latency[i]
        for i, link in enumerate(fabric.links):
            sl = zone.create_link(link.name, self.bandwidth(i))
            sl.set_latency(latency[i])
            self.links.append(sl.seal())
        hops = {key: zone.create_link(f"hop/{fabric.links[key[0]].name}/{fabric.links[key[1]].name}",
                                      HOP_BANDWIDTH).set_latency(latency[key[1]]).seal()
                for key, folded in placement.items() if not folded}
        self.lossy_routes: Dict[Tuple[int, int], List[float]] = {}
        self.path_latency: Dict[Tuple[int, int], float] = {}
        for s in range(n):
            for d in range(n):
                if s == d:
                    continue
                route = self.routes[(s, d)]
                self.fastest[(s, d)] = (sum(route_latency[i] for i in route),
                                        min(nominal[i] for i in route))
                crossed = [self.links[i] if i not in dropped else hops.get((route[k - 1], i))
                           for k, i in enumerate(route)]
                zone.add_route(self.hosts[s].netpoint, self.hosts[d].netpoint, None, None,
                               [sg.LinkInRoute(link) for link in crossed if link is not None],
                               False)
                losses = [planted.loss[i] for i in route if i in planted.loss]
                if (s, d) in planted.path_loss:
                    losses.append(planted.path_loss[(s, d)])
                if losses:
                    self.lossy_routes[(s, d)] = losses
                self.path_latency[(s, d)] = sum(fabric.links[i].latency for i in route)
        self.burst_links = [i for i, link in enumerate(fabric.links) if link.kind in ("up", "down")]
        self.tenants = {}
        if noise.bursts > 0:
            for i in self.burst_links:  # another tenant's hosts on either side of the link
                a = zone.create_host(f"tenant-src/{i}", 1e9)
                b = zone.create_host(f"tenant-dst/{i}", 1e9)
                zone.add_route(a.netpoint, b.netpoint, None, None,
                               [sg.LinkInRoute(self.links[i])], False)
                self.tenants[i] = (a, b, latency[i], nominal[i])
        zone.seal()
        self.active_bursts: Dict[int, int] = {}
        self.pair_factor = self._pair_factors(n)
        self.instances: List[Instance] = []
        self.events: List[Dict[str, object]] = []
        self.failed_at: List[float] = []   # when a message failed on a port that was down
        self.scheduler = Scheduler(sg)

    def _pair_factors(self, n: int) -> Optional[np.ndarray]:
        """Per ordered pair, a persistent time factor (the pair stage: what a flow's own
        path, queue pair and firmware add beyond its components, heavy-tailed, symmetric
        in log: most pairs within a few percent, a few far out, none of them a fault).
        A round trip takes the factor of its unordered pair. Drawn from its own stream,
        so the rest of the run's draws are those of the same seed without it."""
        if self.noise.pair_spread <= 0:
            return None
        rng = np.random.default_rng([self.f.seed, 0x7A11])
        df = self.noise.pair_df
        unit = math.sqrt(df / (df - 2)) if df > 2 else 1.0
        return np.exp(self.noise.pair_spread * rng.standard_t(df, (n, n)) / unit)

    def bandwidth(self, i: int) -> float:
        return self.f.links[i].bandwidth * self.p.capacity.get(i, 1.0) * self.drift_factor[i]

    # -- the measuring process's stages ------------------------------------------------
    def visit_draws(self, test: Test, key: Tuple[int, ...], pairs: int) -> np.ndarray:
        """The software stage's draws of `pairs` pairs visited together, per pair and
        iteration: exponential jitter, a uniform that decides a hiccup, the hiccup's Pareto
        draw. Drawn at once from a stream of the visit's own (key: instance, round or retest
        visit), so no pair's draws depend on the order SimGrid wakes the pairs in."""
        rng = np.random.default_rng([self.seed, 0x50F7, *key])
        ends = 4 if test.kind == "latency" else 2
        shape = (pairs, test.iterations)
        return np.stack([rng.exponential(self.noise.jitter_s * ends, shape), rng.random(shape),
                         rng.pareto(1.5, shape)], axis=-1)

    def software_time(self, hs: int, hd: int, ends: int, draw) -> float:
        """A sample's software time: the two hosts' per-message cost (drifting) over
        `ends` message ends, the jitter, and now and then an OS hiccup."""
        overhead, drift = self.host_overhead, self.host_drift
        t = (overhead[hs] * drift[hs] + overhead[hd] * drift[hd]) * ends / 2 + draw[0]
        if draw[1] < self.noise.hiccup_rate:
            t += min(20e-6 * (draw[2] + 1.0), 5e-3)
        return t

    def send(self, s: int, d: int, size: int, stream, arrived: bool):
        """The stages of one message s -> d after its first try (a process: yield from it,
        when the try failed, the route is lossy or a burst is on): outage retry,
        retransmit, queueing. `stream()` gives the pair's generator for the draws of the
        retransmit and queueing stages."""
        sg = self.sg
        src, dst = self.hosts[s], self.hosts[d]
        latency, bandwidth = self.fastest[(s, d)]
        while not arrived:
            self.failed_at.append(sg.Engine.clock)
            yield ("sleep", self.retry_s)
            arrived = yield ("send", src, dst, size, latency + size / bandwidth, bandwidth)
        losses = self.lossy_routes.get((s, d))
        if losses:
            packets = max(1, math.ceil(size / PACKET))
            keep = 1.0
            for q in losses:
                keep *= (1.0 - q) ** packets
            rng = stream()
            if rng.random() >= keep:
                if rng.random() < 0.7:  # NAK: a round trip, then the rest again
                    yield ("sleep", 2 * self.path_latency[(s, d)] + 1e-6)
                    rest = int(size * rng.random())
                    while rest > 0 and not (yield ("send", src, dst, rest, latency + rest / bandwidth,
                                                   bandwidth)):
                        self.failed_at.append(sg.Engine.clock)
                        yield ("sleep", self.retry_s)
                else:                        # retransmission timeout
                    yield ("sleep", rng.uniform(0.5e-3, 4e-3))
        if self.active_bursts and size <= 64:
            crossed = sum(1 for i in self.routes[(s, d)] if self.active_bursts.get(i))
            if crossed:
                rng = stream()
                yield ("sleep", sum(rng.uniform(2e-6, 20e-6) for _ in range(crossed)))

    def pair(self, inst: Instance, test: Test, s: int, d: int, flags: int, draws: np.ndarray,
             key: Tuple[int, ...]):
        """A pair's iterations back to back (a process). Each sample: the software time,
        then the message(s); its end is the end of the last message (latency: the reply;
        bandwidth: the window's last byte plus the 8 B acknowledgement, taken as its
        route's latency, as SimGrid would time a message that small)."""
        latency = test.kind == "latency"
        ends = 4 if latency else 2
        size = test.size if latency else test.sample_bytes
        ack = 0.0 if latency else self.path_latency[(d, s)]
        factor = 1.0
        if self.pair_factor is not None:
            a, b = (min(s, d), max(s, d)) if latency else (s, d)
            factor = float(self.pair_factor[a, b])
        generator: List[np.random.Generator] = []

        def stream() -> np.random.Generator:   # made on first use: most pairs need none
            if not generator:
                generator.append(np.random.default_rng([self.seed, 0x5EED, *key, s, d]))
            return generator[0]

        hs, hd = int(self.f.host_of_rank[s]), int(self.f.host_of_rank[d])
        draws = draws.tolist()
        (forth_latency, forth_bandwidth), (back_latency, back_bandwidth) = \
            self.fastest[(s, d)], self.fastest[(d, s)]
        forth = (self.hosts[s], self.hosts[d], size, forth_latency + size / forth_bandwidth,
                 forth_bandwidth)
        back = (self.hosts[d], self.hosts[s], size, back_latency + size / back_bandwidth,
                back_bandwidth)
        lossy_forth, lossy_back = (s, d) in self.lossy_routes, (d, s) in self.lossy_routes
        scheduler = self.scheduler
        t0 = scheduler.now
        wait = self.software_time(hs, hd, ends, draws[0])
        for it in range(test.iterations):
            arrived = yield ("send after", wait, *forth)
            if not arrived or lossy_forth or (self.active_bursts and size <= 64):
                yield from self.send(s, d, size, stream, arrived)
            if latency:
                arrived = yield ("send", *back)
                if not arrived or lossy_back or (self.active_bursts and size <= 64):
                    yield from self.send(d, s, size, stream, arrived)
            now = scheduler.now
            t1 = now + ack
            hold = 0.0
            if factor != 1.0:
                if factor > 1:   # the slower pair holds its slot longer
                    hold = (t1 - t0) * (factor - 1)
                t1 = t0 + (t1 - t0) * factor
            inst.rows.append((s, it, d, test.sample_bytes, t0, t1, flags))
            wait = ack + hold
            if it + 1 < test.iterations:   # the next sample starts where this one ended
                t0 = now + wait
                wait += self.software_time(hs, hd, ends, draws[it + 1])
        if wait > 0:   # the last sample's acknowledgement, and its pair's hold
            yield ("sleep", wait)

    # -- time-varying noise and faults ---------------------------------------------------
    def burst(self, i: int, duration: float, flows: int):
        """Another tenant's flows across link i (a process)."""
        size = int(self.f.links[i].bandwidth * duration / flows)
        src, dst, latency, bandwidth = self.tenants[i]
        self.active_bursts[i] = self.active_bursts.get(i, 0) + 1
        yield ("all", [(src, dst, size, latency + size / bandwidth, bandwidth)] * flows)
        self.active_bursts[i] -= 1
        self.events.append({"event": "burst", "link": self.f.links[i].name,
                            "end_s": self.sg.Engine.clock, "duration_s": duration})

    def start_round_bursts(self) -> None:
        if self.noise.bursts <= 0:
            return
        hit = self.rng.random(len(self.burst_links)) < self.noise.bursts
        for i in np.array(self.burst_links)[hit]:
            duration = float(self.rng.uniform(*self.noise.burst_s))
            self.scheduler.spawn(self.burst(int(i), duration, int(self.rng.integers(4, 17))))

    def drift(self):
        """Every 5 ms: each leaf's NIC ports and each host's software time take a step of
        a bounded random walk (thermal, firmware, co-located load). A process, with a
        stream of its own."""
        rng = np.random.default_rng([self.seed, 0xD21F7])
        kinds = np.array([link.kind for link in self.f.links])
        nic_links = np.flatnonzero((kinds == "nic_tx") | (kinds == "nic_rx"))
        leaf_of_link = np.array([self.f.leaf_of_rank[self.f.links[i].owner[0]] for i in nic_links])
        leaf_walk = np.ones(self.f.leaves)
        while True:
            yield ("sleep", 5e-3)
            leaf_walk = np.clip(leaf_walk * np.exp(rng.normal(0, 0.004, self.f.leaves)), 0.95, 1.0)
            step = np.exp(rng.normal(0, 0.01, len(self.host_drift)))
            self.host_drift = np.clip(np.array(self.host_drift) * step, 0.8, 1.25).tolist()
            factors = leaf_walk[leaf_of_link]
            changed = nic_links[factors != self.drift_factor[nic_links]]
            self.drift_factor[nic_links] = factors
            for i in changed:   # a link whose speed did not move keeps its SimGrid bandwidth
                if self.links[i].is_on():
                    self.links[i].set_bandwidth(self.bandwidth(i))

    def outage(self, kind: str, start: float, length: float, ids: List[int]):
        """A NIC port down (a process)."""
        yield ("until", start)
        pieces = [(start, start + length)] if kind == "outage" else \
            [(start + k * length / 7, start + (k + 1) * length / 7) for k in range(0, 7, 2)]
        for a, b in pieces:
            yield ("until", a)
            self.scheduler.watch_all += 1   # a message may now fail at any time
            for i in ids:
                self.links[i].turn_off()
            yield ("until", b)
            for i in ids:
                self.links[i].turn_on()
                self.links[i].set_bandwidth(self.bandwidth(i))
            self.scheduler.watch_all -= 1
            # failures during [a, b]: a message crossed the port while it was down, so the
            # piece is observable in the samples (a piece no message tried to cross is not)
            failed = sum(1 for t in self.failed_at if a <= t <= b + 1e-9)
            self.events.append({"event": kind, "links": [self.f.links[i].name for i in ids],
                                "start_s": a, "end_s": b, "failed_messages": failed})

    # -- the run ---------------------------------------------------------------------
    def parallel_pass(self, test: Test, rounds: List[List[Tuple[int, int]]]):
        sg = self.sg
        index = len(self.instances)
        inst = Instance(test, "parallel", sg.Engine.clock, 0.0, rounds=len(rounds))
        schedule = rounds if test.kind == "latency" else \
            [p if k % 2 == 0 else [(d, s) for s, d in p] for r in rounds for k, p in enumerate((r, r))]
        inst.rounds = len(schedule)
        for number, pairs in enumerate(schedule):
            round_start = sg.Engine.clock
            self.start_round_bursts()
            draws = self.visit_draws(test, (index, number), len(pairs))
            running = [self.scheduler.spawn(self.pair(inst, test, s, d, 0, draws[k], (index, number)))
                       for k, (s, d) in enumerate(pairs)]
            yield ("join", running)
            if number == 0 and test.kind == "bandwidth":
                self.start_timed_faults(round_start, (sg.Engine.clock - round_start) * len(schedule))
            yield ("sleep", 20e-6)  # the round's synchronisation
        inst.t_end = sg.Engine.clock
        return inst

    def start_timed_faults(self, pass_start: float, pass_estimate: float) -> None:
        for kind, share, ids in self.p.timed:
            start = pass_start + self.rng.uniform(0.2, 0.7) * pass_estimate
            length = -share if share < 0 else share * pass_estimate  # < 0: seconds
            self.scheduler.spawn(self.outage(kind, start, length, ids))

    def retest(self, parent: Instance, parent_index: int):
        sg = self.sg
        test = parent.test
        rows = np.array([(s, d, t0, t1) for s, _, d, _, t0, t1, _ in parent.rows], dtype=np.float64)
        n = self.f.ranks
        pair_key = rows[:, 0].astype(np.int64) * n + rows[:, 1].astype(np.int64)
        keys, medians = medians_by_key(pair_key, rows[:, 3] - rows[:, 2])
        first_seen = np.unique(pair_key, return_index=True)[1]
        # pairs in the order they first appear in the samples, then by their median, slowest
        # first (a stable sort: ties keep that order)
        by_appearance = np.argsort(first_seen, kind="stable")
        med = {(int(k) // n, int(k) % n): float(m) for k, m in zip(keys[by_appearance],
                                                                  medians[by_appearance])}
        ranked = sorted(med, key=lambda key: -med[key])
        worst = ranked[:test.retest_worst]
        suspects = {r for pair in worst for r in pair}
        middle = ranked[len(ranked) // 4: 3 * len(ranked) // 4]
        pool = [p for p in middle if not suspects & set(p)] or middle
        count = min(len(pool), max(len(worst), MIN_CONTROL_PAIRS))
        controls = [pool[i] for i in self.rng.choice(len(pool), count, replace=False)]
        index = len(self.instances)
        inst = Instance(test, "serial-retest", sg.Engine.clock, 0.0, retest_of=parent_index)
        order = []
        for i in range(max(len(worst), len(controls))):
            order += [(worst[i], 0)] if i < len(worst) else []
            order += [(controls[i], FLAG_CONTROL_PAIR)] if i < len(controls) else []
        if test.retest_visits > 1:   # each retested pair again, after every other pair
            order += [(pair, FLAG_RETEST_SECOND_VISIT) for pair in worst]
        first_ended: Dict[Tuple[int, int], float] = {}
        for visit, ((s, d), flags) in enumerate(order):
            if flags & FLAG_RETEST_SECOND_VISIT:   # its ranks wait out the rest of the gap
                yield ("until", first_ended[(s, d)] + REVISIT_GAP_S)
            self.start_round_bursts()
            draws = self.visit_draws(test, (index, visit), 1)
            yield from self.pair(inst, test, s, d, flags, draws[0], (index, visit))
            first_ended.setdefault((s, d), sg.Engine.clock)
            yield ("sleep", 20e-6)
        inst.t_end = sg.Engine.clock
        return inst

    def run(self, tests: List[Test]) -> List[Instance]:
        sg = self.sg
        rounds = circle_rounds(self.f.ranks)

        def driver():
            if self.noise.drift:
                self.scheduler.spawn(self.drift())
            for test in tests:
                inst = yield from self.parallel_pass(test, rounds)
                self.instances.append(inst)
                if test.retest_worst > 0:
                    retest = yield from self.retest(inst, len(self.instances) - 1)
                    self.instances.append(retest)

        # the only actor of the simulation (contexts/factory:raw needs that: see Scheduler)
        sg.Actor.create("driver", self.hosts[0], self.scheduler.run, driver())
        self.engine.run()
        return self.instances
