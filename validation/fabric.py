"""The fabric as components: hosts with G NICs, leaves, k uplinks per leaf, spines.

Every component that carries traffic is a one-way link with a capacity (B/s) and a
latency (s); a flow's route is the list of links it crosses, and SimGrid shares each
link's capacity among the flows on it (validation/simulate.py). Nothing here draws a
pair's time: times come from the links a flow shares.

Per rank r (host h, local rank g, NIC g of h):
  pcie_tx[r] GPU -> NIC, pcie_rx[r] NIC -> GPU      (the host's PCIe path)
  nic_tx[r]  NIC port -> leaf (send), nic_rx[r] leaf -> NIC port (receive)
Per rank r: nvl_tx[r], nvl_rx[r], its GPU's ports into the host's internal switch
(NVLink), and per host intra[h], that switch: the route of a pair on one host.
Per leaf l: leaf[l], its switching capacity (shared by all flows through it).
Per leaf l and uplink j (to spine j): up[l][j] leaf -> spine, down[j][l] spine -> leaf.
Per spine j: spine[j], its switching capacity.

Topologies:
  leaf-spine      hosts_per_leaf hosts on a leaf, all G NICs of a host on that leaf;
  rail            rail-optimized: NIC g of every host of a rail group on leaf (group, g),
                  so a pair across rails crosses a spine.
ECMP: a flow (one queue pair: one direction of one rank pair) takes uplink
hash(seed, s, d) % k, the same for all its messages, so collisions are per flow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

GB = 1e9
MASK64 = (1 << 64) - 1


class WorldError(ValueError):
    """A world that cannot be built as asked (the message says what was expected)."""


def mix64(x: int) -> int:
    """splitmix64's finaliser: the flow hash of the switches' ECMP."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


@dataclass(frozen=True)
class Shape:
    """What the cluster is: sizes and nominal speeds."""
    hosts: int = 16
    gpus: int = 8
    topology: str = "leaf-spine"     # leaf-spine or rail
    hosts_per_leaf: int = 4          # leaf-spine
    rail_group: int = 16             # rail: hosts per rail group (one leaf per rail and group)
    uplinks: int = 8                 # k uplinks per leaf, uplink j to spine j
    nic_gbps: float = 50.0           # GB/s a NIC port (400 Gb/s)
    pcie_gbps: float = 63.0          # GB/s a GPU <-> NIC PCIe Gen5 x16 path
    intra_gbps: float = 450.0        # GB/s a GPU's port into the host's internal switch
    oversubscription: float = 1.0    # leaf downlink capacity / uplink capacity
    software_s: float = 0.5e-6       # mean software time of one message end (host's stack)

    def check(self) -> None:
        if self.hosts < 2 or self.gpus < 1:
            raise WorldError(f"hosts {self.hosts}, gpus {self.gpus}: expected at least 2 hosts "
                             "and 1 GPU a host")
        if self.topology not in ("leaf-spine", "rail"):
            raise WorldError(f"topology {self.topology!r}: expected leaf-spine or rail")
        if self.uplinks < 1 or self.hosts_per_leaf < 1 or self.rail_group < 1:
            raise WorldError("uplinks, hosts_per_leaf and rail_group: expected at least 1")
        if not self.nic_gbps > 0 or not self.software_s >= 0:
            raise WorldError(f"nic speed {self.nic_gbps} GB/s, software time {self.software_s} s: "
                             "expected a speed above 0 and a time of 0 or more")
        if self.oversubscription < 1:
            raise WorldError(f"oversubscription {self.oversubscription}: expected 1 or more")


@dataclass
class Link:
    name: str
    kind: str            # pcie_tx pcie_rx nic_tx nic_rx nvl_tx nvl_rx intra leaf up down spine
    bandwidth: float     # B/s as drawn (healthy), before faults
    latency: float       # s
    owner: Tuple = ()    # (rank,), (host,), (leaf,), (leaf, j), (j, leaf), (j,)


@dataclass
class Fabric:
    shape: Shape
    seed: int
    links: List[Link] = field(default_factory=list)
    index: Dict[str, int] = field(default_factory=dict)
    leaf_of_rank: np.ndarray = None     # true leaf of each rank's NIC
    host_of_rank: np.ndarray = None
    local_of_rank: np.ndarray = None
    leaves: int = 0
    host_overhead_s: np.ndarray = None  # per host: software time of one message end (s)
    # what the flows' ECMP hashes mix in beside the ranks: a connection's source port,
    # new each run; None: the fabric's seed (a run of this fabric measured again under
    # another salt sees other flows collide)
    flow_salt: Optional[int] = None

    @property
    def ranks(self) -> int:
        return self.shape.hosts * self.shape.gpus

    def add(self, link: Link) -> int:
        self.index[link.name] = len(self.links)
        self.links.append(link)
        return len(self.links) - 1

    def link_id(self, name: str) -> int:
        try:
            return self.index[name]
        except KeyError:
            raise WorldError(f"no component named {name!r} in this fabric") from None

    def uplink_of_flow(self, s: int, d: int) -> int:
        """ECMP: the uplink (and spine) a flow s -> d hashes to."""
        salt = self.seed if self.flow_salt is None else self.flow_salt
        return mix64((salt << 40) ^ (s << 20) ^ d) % self.shape.uplinks

    def route(self, s: int, d: int) -> List[int]:
        """Link ids a message from rank s to rank d crosses, in order."""
        hs, hd = self.host_of_rank[s], self.host_of_rank[d]
        if hs == hd:
            return [self.index[f"nvl_tx/{s}"], self.index[f"intra/{hs}"], self.index[f"nvl_rx/{d}"]]
        ls, ld = self.leaf_of_rank[s], self.leaf_of_rank[d]
        path = [self.index[f"pcie_tx/{s}"], self.index[f"nic_tx/{s}"], self.index[f"leaf/{ls}"]]
        if ls != ld:
            j = self.uplink_of_flow(s, d)
            path += [self.index[f"up/{ls}/{j}"], self.index[f"spine/{j}"],
                     self.index[f"down/{j}/{ld}"], self.index[f"leaf/{ld}"]]
        path += [self.index[f"nic_rx/{d}"], self.index[f"pcie_rx/{d}"]]
        return path


def _capacity_factors(rng: np.random.Generator, n: int) -> np.ndarray:
    """Healthy per-link capacity: most links within 1-2 % of nominal, a heavy (Pareto)
    tail of a few links a few per cent short; never the 10 % of a fault."""
    deficit = 0.004 * (rng.pareto(2.5, n) + 1.0) - 0.004
    return 1.0 - np.minimum(deficit, 0.06)


def build(shape: Shape, seed: int) -> Fabric:
    """The fabric of `shape`, its healthy heterogeneity drawn from `seed`."""
    shape.check()
    rng = np.random.default_rng([seed, 0xFAB])
    f = Fabric(shape=shape, seed=seed)
    n = shape.hosts * shape.gpus
    f.host_of_rank = np.repeat(np.arange(shape.hosts), shape.gpus)
    f.local_of_rank = np.tile(np.arange(shape.gpus), shape.hosts)
    if shape.topology == "leaf-spine":
        f.leaf_of_rank = f.host_of_rank // shape.hosts_per_leaf
    else:
        f.leaf_of_rank = (f.host_of_rank // shape.rail_group) * shape.gpus + f.local_of_rank
    f.leaves = int(f.leaf_of_rank.max()) + 1
    ports = np.bincount(f.leaf_of_rank, minlength=f.leaves)
    nic = shape.nic_gbps * GB
    # Per-leaf spread (switch model, firmware, cabling): a leaf's ports a little faster or
    # slower, its latency a little longer, drawn uniform (not lognormal).
    leaf_speed = rng.uniform(0.97, 1.0, f.leaves)
    leaf_latency = rng.uniform(0.30e-6, 0.45e-6, f.leaves)
    # Host-level common factor: software time per message end, gamma-distributed.
    f.host_overhead_s = rng.gamma(6.0, shape.software_s / 6.0, shape.hosts)
    cap = _capacity_factors(rng, 4 * n)
    cable_m = rng.uniform(1.0, 30.0, 2 * n)      # NIC <-> leaf cables, 5 ns a metre
    for r in range(n):
        h, leaf = int(f.host_of_rank[r]), int(f.leaf_of_rank[r])
        f.add(Link(f"pcie_tx/{r}", "pcie_tx", shape.pcie_gbps * GB * cap[4 * r], 0.25e-6, (r,)))
        f.add(Link(f"pcie_rx/{r}", "pcie_rx", shape.pcie_gbps * GB * cap[4 * r + 1], 0.25e-6, (r,)))
        f.add(Link(f"nic_tx/{r}", "nic_tx", nic * leaf_speed[leaf] * cap[4 * r + 2],
                   0.3e-6 + 5e-9 * cable_m[2 * r], (r,)))
        f.add(Link(f"nic_rx/{r}", "nic_rx", nic * leaf_speed[leaf] * cap[4 * r + 3],
                   0.3e-6 + 5e-9 * cable_m[2 * r + 1], (r,)))
        f.add(Link(f"nvl_tx/{r}", "nvl_tx", shape.intra_gbps * GB, 0.2e-6, (r,)))
        f.add(Link(f"nvl_rx/{r}", "nvl_rx", shape.intra_gbps * GB, 0.2e-6, (r,)))
    for h in range(shape.hosts):
        f.add(Link(f"intra/{h}", "intra", shape.gpus * shape.intra_gbps * GB, 0.2e-6, (h,)))
    k = shape.uplinks
    spine_cables = rng.uniform(5.0, 60.0, (f.leaves, k, 2))
    up_cap = _capacity_factors(rng, 2 * f.leaves * k).reshape(f.leaves, k, 2)
    spine_ports = 0.0
    for leaf in range(f.leaves):
        f.add(Link(f"leaf/{leaf}", "leaf", ports[leaf] * nic * 2, leaf_latency[leaf], (leaf,)))
        per_uplink = ports[leaf] * nic / k / shape.oversubscription
        spine_ports += 2 * per_uplink
        for j in range(k):
            f.add(Link(f"up/{leaf}/{j}", "up", per_uplink * up_cap[leaf, j, 0],
                       0.05e-6 + 5e-9 * spine_cables[leaf, j, 0], (leaf, j)))
            f.add(Link(f"down/{j}/{leaf}", "down", per_uplink * up_cap[leaf, j, 1],
                       0.05e-6 + 5e-9 * spine_cables[leaf, j, 1], (j, leaf)))
    # a spine switches what its ports carry, as a leaf does: one port to each leaf, both
    # directions at the uplink's nominal rate (healthy, its ports bind before it does; at
    # a fraction F it carries F of them)
    for j in range(k):
        f.add(Link(f"spine/{j}", "spine", spine_ports, rng.uniform(0.35e-6, 0.5e-6), (j,)))
    return f


def host_name(h: int) -> str:
    return f"host{h:03d}"


def nic_name(g: int) -> str:
    return f"mlx5_{g}"


def leaf_name(leaf: int) -> str:
    return f"leaf{leaf}"


def labels(f: Fabric, mode: str, rng: np.random.Generator) -> Tuple[List[str], Dict[str, object]]:
    """The leaf label /ranks gives each rank: `true` (as cabled), `missing` (none), or
    `wrong:S` (a share S of hosts, at least one, labelled with another leaf's name, as a
    stale inventory would). Returns (labels, what was done)."""
    true = [leaf_name(int(x)) for x in f.leaf_of_rank]
    if mode == "true":
        return true, {"labels": "true"}
    if mode == "missing":
        return [""] * f.ranks, {"labels": "missing"}
    if mode.startswith("wrong:"):
        try:
            share = float(mode.split(":", 1)[1])
        except ValueError:
            share = -1.0
        if not 0 < share <= 1:
            raise WorldError(f"labels {mode!r}: expected wrong:S with S a share in (0, 1]")
        if f.leaves < 2:
            raise WorldError("labels wrong:S needs at least 2 leaves")
        count = max(1, int(round(share * f.shape.hosts)))
        hosts = sorted(int(h) for h in rng.choice(f.shape.hosts, count, replace=False))
        out = list(true)
        moved = {}
        for h in hosts:
            ranks = np.flatnonzero(f.host_of_rank == h)
            for r in ranks:
                leaf = int(f.leaf_of_rank[r])
                other = (leaf + 1 + int(rng.integers(f.leaves - 1))) % f.leaves
                out[r] = leaf_name(other)
            moved[host_name(h)] = sorted({out[r] for r in ranks})
        return out, {"labels": mode, "mislabelled_hosts": moved}
    raise WorldError(f"labels {mode!r}: expected true, missing or wrong:S")
