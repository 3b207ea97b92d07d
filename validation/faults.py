"""Faults planted in components; their symptoms come from the flows that cross them.

A fault is `NAME:VALUE` or `NAME:VALUE@TARGET` (TARGET drawn from the seed when left
out). Slow faults scale a component's links' capacity by VALUE; lossy ones lose each
packet crossing them with probability VALUE (the retransmit stage of simulate.py pays
for it); outages and flaps take a NIC port down for a share VALUE of the bandwidth pass.

  nic-tx-slow:F@R     rank R's NIC port sends at F of its speed (nic_tx)
  nic-rx-slow:F@R     rank R's NIC port receives at F (nic_rx)
  nic-speed:F@R       rank R's NIC-leaf link trained at a lower speed: both ways at F
  nic-lossy:P@R       rank R's NIC port (both directions) drops packets with probability P
  nic-tx-lossy:P@R, nic-rx-lossy:P@R   one direction only
  pcie-slow:F@H       every GPU <-> NIC PCIe path of host H at F (both ways)
  local-rank-slow:F@G local rank G's PCIe path at F on every host (GPU and NIC on
                      different NUMA nodes: a placement fault, systemic)
  leaf-slow:F@L       leaf L switches at F of its capacity, with 2 us more latency
  uplink-slow:F@L.J   uplink J of leaf L (both directions) at F
  uplink-lossy:P@L.J  uplink J of leaf L (both directions) drops packets
  spine-link-slow:F@J.L  spine J -> leaf L (one direction: what rank on L receive from
                      other leaves through spine J) at F
  spine-slow:F@J      spine J switches at F
  path-lossy:P@A.B    every path between hosts A and B (both directions, every GPU pair)
                      drops packets with probability P: a host pair whose flows stall (a
                      bad cable or port of a host-to-host link, a flow-hash path only their
                      flows take, a netem rule); planted on the routes, not on one link
  outage:S@R          rank R's NIC port down for a share S of the bandwidth pass (contiguous);
                      outage:Ts@R (e.g. 1s, 0.25s): for T simulated seconds
  flap:S@R            rank R's NIC port going down and up over a window of share S (or Ts):
                      down for the 1st, 3rd, 5th and 7th of 7 equal pieces
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from .fabric import Fabric, WorldError, host_name, leaf_name, nic_name

SLOW = {"nic-tx-slow", "nic-rx-slow", "nic-speed", "pcie-slow", "local-rank-slow", "leaf-slow",
        "uplink-slow", "spine-link-slow", "spine-slow"}
LOSSY = {"nic-lossy", "nic-tx-lossy", "nic-rx-lossy", "uplink-lossy"}
PATH_LOSSY = {"path-lossy"}
TIMED = {"outage", "flap"}
KINDS = sorted(SLOW | LOSSY | PATH_LOSSY | TIMED)


@dataclass
class Planted:
    """All faults of a run, as the simulator applies them."""
    capacity: Dict[int, float] = field(default_factory=dict)    # link id -> factor
    latency_add: Dict[int, float] = field(default_factory=dict)  # link id -> s
    loss: Dict[int, float] = field(default_factory=dict)         # link id -> packet loss
    path_loss: Dict[Tuple[int, int], float] = field(default_factory=dict)  # (s, d) ranks -> loss
    # (kind, length, links): length a share of the bandwidth pass, or seconds when negative
    timed: List[Tuple[str, float, List[int]]] = field(default_factory=list)
    truth: List[Dict[str, object]] = field(default_factory=list)


def _parse(spec: str) -> Tuple[str, float, Optional[str]]:
    name, _, rest = spec.partition(":")
    value_text, _, target = rest.partition("@")
    if name not in KINDS:
        raise WorldError(f"fault {spec!r}: unknown fault {name!r} (expected one of {', '.join(KINDS)})")
    seconds = name in TIMED and value_text.endswith("s")
    try:
        value = float(value_text[:-1] if seconds else value_text)
    except ValueError:
        raise WorldError(f"fault {spec!r}: expected {name}:VALUE[@TARGET], VALUE a number") from None
    if name in SLOW and not 0 < value < 1:
        raise WorldError(f"fault {spec!r}: a slow fault's VALUE is the share of speed left, in (0, 1)")
    if name in LOSSY | PATH_LOSSY and not 0 < value < 1:
        raise WorldError(f"fault {spec!r}: a lossy fault's VALUE is a packet loss probability in (0, 1)")
    if name in TIMED and seconds and not 0 < value <= 600:
        raise WorldError(f"fault {spec!r}: an outage's VALUE in seconds is in (0, 600], e.g. 1s")
    if name in TIMED and not seconds and not 0 < value < 0.5:
        raise WorldError(f"fault {spec!r}: an outage's VALUE is a share of the pass in (0, 0.5) "
                         "or seconds (e.g. 1s)")
    return name, (-value if seconds else value), (target or None)


def _int_target(spec: str, target: Optional[str], limit: int, rng, what: str) -> int:
    if target is None:
        return int(rng.integers(limit))
    try:
        value = int(target)
    except ValueError:
        value = -1
    if not 0 <= value < limit:
        raise WorldError(f"fault {spec!r}: target {target!r} is not a {what} in 0..{limit - 1}")
    return value


def _pair_target(spec: str, target: Optional[str], limits: Tuple[int, int], rng,
                 what: str) -> Tuple[int, int]:
    if target is None:
        return int(rng.integers(limits[0])), int(rng.integers(limits[1]))
    parts = target.split(".")
    try:
        a, b = int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        a = b = -1
    if len(parts) != 2 or not (0 <= a < limits[0] and 0 <= b < limits[1]):
        raise WorldError(f"fault {spec!r}: target {target!r} is not {what} "
                         f"(A.B with A in 0..{limits[0] - 1}, B in 0..{limits[1] - 1})")
    return a, b


def _rank_truth(f: Fabric, r: int, side: str) -> Dict[str, object]:
    h, g = int(f.host_of_rank[r]), int(f.local_of_rank[r])
    return {"component": "nic", "hosts": [host_name(h)], "ranks": [r], "nics": [nic_name(g)],
            "side": side, "leaf": leaf_name(int(f.leaf_of_rank[r]))}


def _hosts_of_leaf(f: Fabric, leaf: int) -> List[str]:
    return sorted({host_name(int(h)) for h in f.host_of_rank[f.leaf_of_rank == leaf]})


def plant(f: Fabric, specs: List[str], rng: np.random.Generator) -> Planted:
    """The faults `specs` on fabric `f`; targets left out are drawn from `rng`."""
    p = Planted()
    n, k = f.ranks, f.shape.uplinks
    for spec in specs:
        name, value, target = _parse(spec)
        truth: Dict[str, object]
        if name in ("nic-tx-slow", "nic-rx-slow", "nic-speed", "nic-lossy", "nic-tx-lossy",
                    "nic-rx-lossy", "outage", "flap"):
            r = _int_target(spec, target, n, rng, "rank")
            side = "send" if "-tx-" in name else "receive" if "-rx-" in name else "both"
            links = ([f"nic_tx/{r}"] if side != "receive" else []) + \
                    ([f"nic_rx/{r}"] if side != "send" else [])
            truth = _rank_truth(f, r, side)
        elif name == "pcie-slow":
            h = _int_target(spec, target, f.shape.hosts, rng, "host")
            ranks = [int(r) for r in np.flatnonzero(f.host_of_rank == h)]
            links = [f"pcie_{d}/{r}" for r in ranks for d in ("tx", "rx")]
            truth = {"component": "host", "hosts": [host_name(h)], "ranks": ranks, "nics": [],
                     "side": "both"}
        elif name == "local-rank-slow":
            g = _int_target(spec, target, f.shape.gpus, rng, "local rank")
            ranks = [int(r) for r in np.flatnonzero(f.local_of_rank == g)]
            links = [f"pcie_{d}/{r}" for r in ranks for d in ("tx", "rx")]
            truth = {"component": "local-rank", "local_rank": g, "nics": [nic_name(g)],
                     "hosts": [host_name(h) for h in range(f.shape.hosts)], "ranks": ranks,
                     "side": "both"}
        elif name == "leaf-slow":
            leaf = _int_target(spec, target, f.leaves, rng, "leaf")
            links = [f"leaf/{leaf}"]
            p.latency_add[f.link_id(links[0])] = 2e-6
            truth = {"component": "leaf", "leaf": leaf_name(leaf), "hosts": _hosts_of_leaf(f, leaf),
                     "ranks": [], "side": "both"}
        elif name in ("uplink-slow", "uplink-lossy"):
            leaf, j = _pair_target(spec, target, (f.leaves, k), rng, "a leaf and an uplink")
            links = [f"up/{leaf}/{j}", f"down/{j}/{leaf}"]
            truth = {"component": "uplink", "leaf": leaf_name(leaf), "uplink": j,
                     "hosts": _hosts_of_leaf(f, leaf), "ranks": [], "side": "both"}
        elif name == "spine-link-slow":
            j, leaf = _pair_target(spec, target, (k, f.leaves), rng, "a spine and a leaf")
            links = [f"down/{j}/{leaf}"]
            truth = {"component": "spine-link", "leaf": leaf_name(leaf), "spine": j,
                     "hosts": _hosts_of_leaf(f, leaf), "ranks": [], "side": "receive"}
        elif name == "path-lossy":
            a, b = _pair_target(spec, target, (f.shape.hosts, f.shape.hosts), rng, "two hosts")
            if target is None:
                b = (a + 1 + b % (f.shape.hosts - 1)) % f.shape.hosts
            if a == b:
                raise WorldError(f"fault {spec!r}: a path joins two different hosts")
            ranks_a = [int(r) for r in np.flatnonzero(f.host_of_rank == a)]
            ranks_b = [int(r) for r in np.flatnonzero(f.host_of_rank == b)]
            for s in ranks_a:
                for d in ranks_b:
                    for key in ((s, d), (d, s)):
                        p.path_loss[key] = 1.0 - (1.0 - p.path_loss.get(key, 0.0)) * (1.0 - value)
            p.truth.append({"component": "host-pair", "hosts": [host_name(a), host_name(b)],
                            "ranks": ranks_a + ranks_b, "side": "both", "fault": name,
                            "value": value, "spec": spec, "links": []})
            continue
        else:  # spine-slow
            j = _int_target(spec, target, k, rng, "spine")
            links = [f"spine/{j}"]
            truth = {"component": "spine", "spine": j, "hosts": [], "ranks": [], "side": "both"}
        ids = [f.link_id(x) for x in links]
        if name in SLOW:
            for i in ids:
                p.capacity[i] = p.capacity.get(i, 1.0) * value
        elif name in LOSSY:
            for i in ids:
                p.loss[i] = 1.0 - (1.0 - p.loss.get(i, 0.0)) * (1.0 - value)
        else:
            p.timed.append((name, value, ids))
        truth.update({"fault": name, "value": value, "spec": spec, "links": links})
        if name in TIMED:
            truth.update({"value": abs(value), "unit": "s" if value < 0 else "share of the pass"})
        p.truth.append(truth)
    return p
