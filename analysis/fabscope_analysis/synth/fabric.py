"""The simulated fabric: every pair's time, alone and under load, sample by sample.

One-way leg s -> d takes base(level) x a[s] (send side) x b[d] (receive side) x
e[s, d] (pair) x the faults' factors; a ping-pong round trip takes the mean of its
two legs, twice. Under load (a pattern's parallel pass: every rank busy) ECMP
collisions and load-only faults multiply too; a serial retest measures alone. During a
congested condition the congestors' traffic also slows pairs through the uplinks
(background_factor), and collisions and load-only faults act even on a retest.
Per sample: the run's level, a lognormal spread, and rare additive pauses
(hiccups, retransmission stalls of a lossy NIC, a flapping link's down time,
scheduler slices on shared CPUs).
"""

from __future__ import annotations

import numpy as np

from .faults import Effects
from .noise import NoiseModel
from .topology import Cluster

# One-way latency (ns) and bandwidth (GB/s = bytes/ns) by samples.level
# (1 same node, 2 same leaf, 3 same pod, 4 cross pod): an HDR/NDR-class fabric.
LATENCY_NS = np.array([0.0, 1500.0, 2500.0, 3500.0, 4500.0])
BANDWIDTH_GBPS = np.array([0.0, 40.0, 24.0, 23.5, 23.0])
STALL_MS = (1.0, 4.0)       # a retransmission timeout
FLAP_MS = (2.0, 20.0)       # a sample posted while the link retrains
FLAP_BLOCK = 5              # iterations a link stays down once it flaps


class Fabric:
    def __init__(self, cluster: Cluster, noise: NoiseModel, effects: Effects,
                 fabric_seed: int, run_seed: int):
        self.cluster, self.noise, self.effects = cluster, noise, effects
        n = cluster.ranks
        fabric_rng = np.random.default_rng([fabric_seed, 0xfab])
        self.send = fabric_rng.lognormal(0.0, noise.host_spread, n) if noise.host_spread \
            else np.ones(n)
        self.receive = fabric_rng.lognormal(0.0, noise.host_spread, n) if noise.host_spread \
            else np.ones(n)
        pair = fabric_rng.lognormal(0.0, noise.pair_spread, (n, n)) if noise.pair_spread \
            else np.ones((n, n))
        self.alone = self.send[:, None] * self.receive[None, :] * pair * effects.always
        run_rng = np.random.default_rng([run_seed, 0x12])
        # a planted fault's stalls and flaps draw from their own stream: the run's noise is
        # then the same sample for sample with and without the fault (common random
        # numbers), so a fault ladder compares one fabric and one run, not fresh draws
        self.fault_rng = np.random.default_rng([run_seed, 0xfa17])
        self.run_level = noise.scale * (float(run_rng.lognormal(0.0, noise.run_spread))
                                        if noise.run_spread else 1.0)
        self.bimodal_high = bool(noise.bimodal_step and run_rng.random() < 0.5)
        if self.bimodal_high:
            self.run_level *= 1.0 + noise.bimodal_step
        idx = np.arange(n)
        self.level = cluster.levels(np.repeat(idx, n), np.tile(idx, n)).reshape(n, n)
        collide = (self.level >= 3) & (run_rng.random((n, n)) < noise.ecmp_share)
        self.ecmp_pairs = int(collide.sum())
        self.loaded = self.alone * np.where(collide, noise.ecmp_factor, 1.0) * effects.load
        self.background = np.select([self.level >= 3, self.level == 2],
                                    [noise.background_factor, np.sqrt(noise.background_factor)], 1.0)

    def durations(self, s: np.ndarray, d: np.ndarray, iterations: int, metric: str,
                  sample_bytes: int, under_load: bool, rng: np.random.Generator,
                  background: bool = False) -> np.ndarray:
        """(pairs, iterations) sample durations in ns: a round trip for latency. under_load:
        in a pattern's parallel pass; background: during a congested condition."""
        leg = self.loaded if under_load or background else self.alone
        if background:
            leg = leg * self.background
        if metric == "latency":
            factor = (leg[s, d] + leg[d, s]) / 2.0
            base = 2.0 * LATENCY_NS[self.level[s, d]]
        else:
            factor = leg[s, d]
            base = sample_bytes / BANDWIDTH_GBPS[self.level[s, d]]
        shape = (len(s), iterations)
        dur = (base * factor * self.run_level)[:, None] * \
            rng.lognormal(0.0, self.noise.sample_spread, shape)
        self._pauses(dur, s, d, metric, rng)
        return dur

    def _pauses(self, dur: np.ndarray, s: np.ndarray, d: np.ndarray, metric: str,
                rng: np.random.Generator) -> None:
        noise, e = self.noise, self.effects
        stall = e.stall[s, d] if metric != "latency" else np.maximum(e.stall[s, d], e.stall[d, s])
        for rate, span, draw in ((noise.hiccup_rate, noise.hiccup_ms, rng),
                                 (noise.slice_rate, noise.slice_ms, rng),
                                 (stall[:, None], STALL_MS, self.fault_rng)):
            if not np.any(rate):
                continue
            hit = draw.random(dur.shape) < rate
            dur[hit] += draw.uniform(span[0] * 1e6, span[1] * 1e6, int(hit.sum()))
        flap = e.flap[s, d] if metric != "latency" else np.maximum(e.flap[s, d], e.flap[d, s])
        if np.any(flap):
            blocks = -(-dur.shape[1] // FLAP_BLOCK)
            down = self.fault_rng.random((len(s), blocks)) < flap[:, None]
            down = np.repeat(down, FLAP_BLOCK, axis=1)[:, :dur.shape[1]]
            dur[down] += self.fault_rng.uniform(FLAP_MS[0] * 1e6, FLAP_MS[1] * 1e6, int(down.sum()))
