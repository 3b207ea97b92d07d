"""The run, simulated on SimGrid's flow-level network model.

Each rank is a SimGrid host; each component of validation/fabric.py a link; each rank
pair a static route (the ECMP choice of its flow). A message is `Comm.sendto_async`
between two hosts: SimGrid gives it the links' latencies plus its size over the share of
bandwidth max-min fairness leaves it on the most contended link of its route (model
CM02, no TCP correction factors: an RDMA fabric, not TCP). What SimGrid does not model
is added by explicit, named stages of the measuring actor, so each is visible:

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
             and is retried every 1 ms until the port is back.

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


class World:
    """The SimGrid platform of a fabric, and the actors that measure on it."""

    def __init__(self, fabric: Fabric, planted: Planted, noise: Noise, seed: int,
                 retry_s: float = 1e-3):
        import simgrid as sg  # only the simulation needs SimGrid
        self.sg = sg
        self.f, self.p, self.noise = fabric, planted, noise
        # a message that meets a port down is sent again this long after (the transport's
        # retransmission timeout: an RC queue pair's is 4.096 us x 2^timeout, UCX's 1 s by
        # default, TCP's at least 200 ms)
        self.retry_s = retry_s
        self.rng = np.random.default_rng([seed, 0x51D])
        self.engine = sg.Engine(["validation", "--cfg=network/model:CM02",
                                 "--cfg=network/crosstraffic:0", "--log=root.thres:critical",
                                 "--log=xbt_cfg.thres:critical"])
        zone = sg.NetZone.create_full_zone("fabric")
        n = fabric.ranks
        self.hosts = [zone.create_host(f"r{r}", 1e9) for r in range(n)]
        self.links = []
        self.drift_factor = np.ones(len(fabric.links))
        self.host_drift = np.ones(fabric.shape.hosts)
        for i, link in enumerate(fabric.links):
            sl = zone.create_link(link.name, self.bandwidth(i))
            sl.set_latency(link.latency + planted.latency_add.get(i, 0.0))
            self.links.append(sl.seal())
        self.routes: Dict[Tuple[int, int], List[int]] = {}
        self.lossy_routes: Dict[Tuple[int, int], List[float]] = {}
        self.path_latency: Dict[Tuple[int, int], float] = {}
        for s in range(n):
            for d in range(n):
                if s == d:
                    continue
                route = fabric.route(s, d)
                self.routes[(s, d)] = route
                zone.add_route(self.hosts[s].netpoint, self.hosts[d].netpoint, None, None,
                               [sg.LinkInRoute(self.links[i]) for i in route], False)
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
                self.tenants[i] = (a, b)
        zone.seal()
        self.active_bursts: Dict[int, int] = {}
        self.pair_factor = self._pair_factors(n)
        self.instances: List[Instance] = []
        self.events: List[Dict[str, object]] = []
        self.failed_at: List[float] = []   # when a message failed on a port that was down

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

    # -- the measuring actor's stages ------------------------------------------------
    def software_time(self, s: int, d: int, ends: int) -> float:
        hs, hd = self.f.host_of_rank[s], self.f.host_of_rank[d]
        base = (self.f.host_overhead_s[hs] * self.host_drift[hs]
                + self.f.host_overhead_s[hd] * self.host_drift[hd]) * ends / 2
        t = base + self.rng.exponential(self.noise.jitter_s * ends)
        if self.rng.random() < self.noise.hiccup_rate:
            t += min(20e-6 * (self.rng.pareto(1.5) + 1.0), 5e-3)
        return t

    def send(self, s: int, d: int, size: int) -> None:
        """One message s -> d, through the stages: outage retry, retransmit, queueing."""
        sg = self.sg
        while True:
            try:
                sg.Comm.sendto_async(self.hosts[s], self.hosts[d], size).wait()
                break
            except sg.NetworkFailureException:
                self.failed_at.append(sg.Engine.clock)
                sg.this_actor.sleep_for(self.retry_s)
        losses = self.lossy_routes.get((s, d))
        if losses:
            packets = max(1, math.ceil(size / PACKET))
            keep = 1.0
            for q in losses:
                keep *= (1.0 - q) ** packets
            if self.rng.random() >= keep:
                if self.rng.random() < 0.7:  # NAK: a round trip, then the rest again
                    sg.this_actor.sleep_for(2 * self.path_latency[(s, d)] + 1e-6)
                    rest = int(size * self.rng.random())
                    if rest > 0:
                        sg.Comm.sendto_async(self.hosts[s], self.hosts[d], rest).wait()
                else:                        # retransmission timeout
                    sg.this_actor.sleep_for(self.rng.uniform(0.5e-3, 4e-3))
        if self.active_bursts and size <= 64:
            crossed = sum(1 for i in self.routes[(s, d)] if self.active_bursts.get(i))
            if crossed:
                sg.this_actor.sleep_for(sum(self.rng.uniform(2e-6, 20e-6) for _ in range(crossed)))

    def pair(self, inst: Instance, test: Test, s: int, d: int, flags: int) -> None:
        for it in range(test.iterations):
            t0 = self.sg.Engine.clock
            if test.kind == "latency":
                self.sg.this_actor.sleep_for(self.software_time(s, d, 4))
                self.send(s, d, test.size)
                self.send(d, s, test.size)
            else:
                self.sg.this_actor.sleep_for(self.software_time(s, d, 2))
                self.send(s, d, test.sample_bytes)
                # The 8 B acknowledgement: its path's latency, as SimGrid would time it
                # (its size is nothing beside the links' capacity), without a second message.
                self.sg.this_actor.sleep_for(self.path_latency[(d, s)])
            t1 = self.sg.Engine.clock
            if self.pair_factor is not None:
                a, b = (min(s, d), max(s, d)) if test.kind == "latency" else (s, d)
                factor = float(self.pair_factor[a, b])
                if factor > 1:   # the slower pair holds its slot longer
                    self.sg.this_actor.sleep_for((t1 - t0) * (factor - 1))
                t1 = t0 + (t1 - t0) * factor
            inst.rows.append((s, it, d, test.sample_bytes, t0, t1, flags))

    # -- time-varying noise and faults ---------------------------------------------------
    def burst(self, i: int, duration: float) -> None:
        sg = self.sg
        flows = int(self.rng.integers(4, 17))
        size = int(self.f.links[i].bandwidth * duration / flows)
        src, dst = self.tenants[i]
        self.active_bursts[i] = self.active_bursts.get(i, 0) + 1
        comms = [sg.Comm.sendto_async(src, dst, size) for _ in range(flows)]
        sg.Comm.wait_all(comms)
        self.active_bursts[i] -= 1
        self.events.append({"event": "burst", "link": self.f.links[i].name, "end_s": sg.Engine.clock,
                            "duration_s": duration})

    def start_round_bursts(self) -> None:
        if self.noise.bursts <= 0:
            return
        hit = self.rng.random(len(self.burst_links)) < self.noise.bursts
        for i in np.array(self.burst_links)[hit]:
            actor = self.sg.Actor.create("burst", self.hosts[0], self.burst, int(i),
                                         float(self.rng.uniform(*self.noise.burst_s)))
            actor.daemonize()

    def drift(self) -> None:
        """Every 5 ms: each leaf's NIC ports and each host's software time take a step of
        a bounded random walk (thermal, firmware, co-located load)."""
        kinds = np.array([link.kind for link in self.f.links])
        nic_links = np.flatnonzero((kinds == "nic_tx") | (kinds == "nic_rx"))
        leaf_of_link = np.array([self.f.leaf_of_rank[self.f.links[i].owner[0]] for i in nic_links])
        leaf_walk = np.ones(self.f.leaves)
        while True:
            self.sg.this_actor.sleep_for(5e-3)
            leaf_walk = np.clip(leaf_walk * np.exp(self.rng.normal(0, 0.004, self.f.leaves)), 0.95, 1.0)
            step = np.exp(self.rng.normal(0, 0.01, len(self.host_drift)))
            self.host_drift = np.clip(self.host_drift * step, 0.8, 1.25)
            for i, leaf in zip(nic_links, leaf_of_link):
                self.drift_factor[i] = leaf_walk[leaf]
                if self.links[i].is_on():
                    self.links[i].set_bandwidth(self.bandwidth(i))

    def outage(self, kind: str, start: float, length: float, ids: List[int]) -> None:
        sg = self.sg
        sg.this_actor.sleep_until(start)
        pieces = [(start, start + length)] if kind == "outage" else \
            [(start + k * length / 7, start + (k + 1) * length / 7) for k in range(0, 7, 2)]
        for a, b in pieces:
            sg.this_actor.sleep_until(a)
            for i in ids:
                self.links[i].turn_off()
            sg.this_actor.sleep_until(b)
            for i in ids:
                self.links[i].turn_on()
                self.links[i].set_bandwidth(self.bandwidth(i))
            # failures during [a, b]: a message crossed the port while it was down, so the
            # piece is observable in the samples (a piece no message tried to cross is not)
            failed = sum(1 for t in self.failed_at if a <= t <= b + 1e-9)
            self.events.append({"event": kind, "links": [self.f.links[i].name for i in ids],
                                "start_s": a, "end_s": b, "failed_messages": failed})

    # -- the run ---------------------------------------------------------------------
    def parallel_pass(self, test: Test, rounds: List[List[Tuple[int, int]]]) -> Instance:
        sg = self.sg
        inst = Instance(test, "parallel", sg.Engine.clock, 0.0, rounds=len(rounds))
        schedule = rounds if test.kind == "latency" else \
            [p if k % 2 == 0 else [(d, s) for s, d in p] for r in rounds for k, p in enumerate((r, r))]
        inst.rounds = len(schedule)
        for number, pairs in enumerate(schedule):
            round_start = sg.Engine.clock
            self.start_round_bursts()
            actors = [sg.Actor.create("pair", self.hosts[s], self.pair, inst, test, s, d, 0)
                      for s, d in pairs]
            for a in actors:
                a.join()
            if number == 0 and test.kind == "bandwidth":
                self.start_timed_faults(round_start, (sg.Engine.clock - round_start) * len(schedule))
            sg.this_actor.sleep_for(20e-6)  # the round's synchronisation
        inst.t_end = sg.Engine.clock
        return inst

    def start_timed_faults(self, pass_start: float, pass_estimate: float) -> None:
        for kind, share, ids in self.p.timed:
            start = pass_start + self.rng.uniform(0.2, 0.7) * pass_estimate
            length = -share if share < 0 else share * pass_estimate  # < 0: seconds
            self.sg.Actor.create(kind, self.hosts[0], self.outage, kind, start, length, ids).daemonize()

    def retest(self, parent: Instance, parent_index: int) -> Instance:
        sg = self.sg
        test = parent.test
        med: Dict[Tuple[int, int], float] = {}
        groups: Dict[Tuple[int, int], List[float]] = {}
        for s, _, d, _, t0, t1, _ in parent.rows:
            groups.setdefault((s, d), []).append(t1 - t0)
        for key, values in groups.items():
            med[key] = float(np.median(values))
        ranked = sorted(med, key=lambda key: -med[key])
        worst = ranked[:test.retest_worst]
        suspects = {r for pair in worst for r in pair}
        middle = ranked[len(ranked) // 4: 3 * len(ranked) // 4]
        pool = [p for p in middle if not suspects & set(p)] or middle
        count = min(len(pool), max(len(worst), MIN_CONTROL_PAIRS))
        controls = [pool[i] for i in self.rng.choice(len(pool), count, replace=False)]
        inst = Instance(test, "serial-retest", sg.Engine.clock, 0.0, retest_of=parent_index)
        order = []
        for i in range(max(len(worst), len(controls))):
            order += [(worst[i], 0)] if i < len(worst) else []
            order += [(controls[i], FLAG_CONTROL_PAIR)] if i < len(controls) else []
        if test.retest_visits > 1:   # each retested pair again, after every other pair
            order += [(pair, FLAG_RETEST_SECOND_VISIT) for pair in worst]
        first_ended: Dict[Tuple[int, int], float] = {}
        for (s, d), flags in order:
            if flags & FLAG_RETEST_SECOND_VISIT:   # its ranks wait out the rest of the gap
                sg.this_actor.sleep_until(max(sg.Engine.clock, first_ended[(s, d)] + REVISIT_GAP_S))
            self.start_round_bursts()
            sg.Actor.create("retest", self.hosts[s], self.pair, inst, test, s, d, flags).join()
            first_ended.setdefault((s, d), sg.Engine.clock)
            sg.this_actor.sleep_for(20e-6)
        inst.t_end = sg.Engine.clock
        return inst

    def run(self, tests: List[Test]) -> List[Instance]:
        sg = self.sg
        rounds = circle_rounds(self.f.ranks)

        def driver():
            if self.noise.drift:
                sg.Actor.create("drift", self.hosts[0], self.drift).daemonize()
            for test in tests:
                inst = self.parallel_pass(test, rounds)
                self.instances.append(inst)
                if test.retest_worst > 0:
                    self.instances.append(self.retest(inst, len(self.instances) - 1))
        sg.Actor.create("driver", self.hosts[0], driver)
        self.engine.run()
        return self.instances
