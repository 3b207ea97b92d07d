"""Planted faults: a component that is slow, lossy or flapping, and what it does to pairs.

Spec: ``KIND:TARGET[:VALUE][@load]``. TARGET names hosts as ``host12`` (or ``12``),
one NIC of a host as ``host12/mlx5_3`` (or ``host12/3``: the local rank it serves),
a GPU as the same ``host12/3``, a leaf as ``leaf2`` (or ``2``). ``@load`` makes a
slowdown show only under load (the parallel pass of a pattern), never alone.

| kind | target | value (default) | acts on |
|---|---|---|---|
| slow-send | host or host/nic | time factor (2.0) | pairs the NIC sends on |
| slow-recv | host or host/nic | time factor (2.0) | pairs the NIC receives on |
| lossy | host or host/nic | stalled share of samples (0.01) | both directions |
| flapping | host or host/nic | share of 5-iteration blocks down (0.05) | both directions |
| bad-pair | host/gpu-host/gpu | time factor (3.0) | one GPU pair, both directions |
| host-pair | hostA-hostB | time factor (2.0) | every GPU pair of two hosts (a cable or port) |
| slow-uplink | leaf | time factor (1.5) | every pair through the leaf's uplink |
| oversubscribed-uplink | leaf | time factor (1.5), load only | the same, only under load |

Each fault's ground truth (what, which component, which hosts, NICs, side, leaf)
is `Fault.truth()`, stored in the file so a benchmark can score a diagnosis.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from .topology import Cluster, SynthError

KINDS = {"slow-send": 2.0, "slow-recv": 2.0, "lossy": 0.01, "flapping": 0.05, "bad-pair": 3.0,
         "host-pair": 2.0, "slow-uplink": 1.5, "oversubscribed-uplink": 1.5}
NIC_KINDS = ("slow-send", "slow-recv", "lossy", "flapping")


@dataclass(frozen=True)
class Fault:
    kind: str
    ranks_a: tuple          # ranks of the component (NIC, host, GPU; first host of a pair)
    ranks_b: tuple = ()     # the other end of a pair fault
    leaf: int = -1
    value: float = 1.0
    load_only: bool = False
    spec: str = ""
    subject: str = ""       # the component in words: host12/mlx5_3 send, host3<->host7, leaf2

    def truth(self, c: Cluster) -> Dict[str, object]:
        host = c.host_of()
        hosts = sorted({c.host_name(h) for h in host[list(self.ranks_a + self.ranks_b)]}) \
            if self.ranks_a else []
        side = {"slow-send": "send", "slow-recv": "receive"}.get(self.kind, "both")
        component = {"bad-pair": "gpu-pair", "host-pair": "host-pair", "slow-uplink": "leaf",
                     "oversubscribed-uplink": "leaf"}.get(self.kind)
        if component is None:
            whole_host = len(self.ranks_a) == c.gpus and c.gpus > 1
            component = "host" if whole_host or c.gpus == 1 else "nic"
        return {"fault": self.kind, "spec": self.spec, "component": component,
                "subject": self.subject, "side": side, "hosts": hosts,
                "ranks": sorted(int(r) for r in self.ranks_a + self.ranks_b),
                "nics": sorted({c.nic_name(int(r) % c.gpus) for r in self.ranks_a})
                if component == "nic" else [],
                "leaf": f"leaf{self.leaf}" if self.leaf >= 0 else "",
                "value": self.value, "when": "load" if self.load_only else "always"}


def _ranks(c: Cluster, target: str, spec: str, gpu: bool = False) -> tuple:
    host_text, _, nic_text = target.partition("/")
    h = c.host_index(host_text)
    if not nic_text:
        if gpu:
            raise SynthError(f"fault {spec!r}: expected a GPU as HOST/LOCAL (host3/2), got {target!r}")
        return tuple(range(h * c.gpus, (h + 1) * c.gpus))
    local = nic_text[5:] if nic_text.startswith("mlx5_") else nic_text
    if not local.isdigit() or int(local) >= c.gpus:
        raise SynthError(f"fault {spec!r}: no NIC or GPU {nic_text!r} on {c.host_name(h)} "
                         f"(expected 0 .. {c.gpus - 1} or mlx5_0 .. mlx5_{c.gpus - 1})")
    return (h * c.gpus + int(local),)


def _name(c: Cluster, ranks: tuple) -> str:
    """host12 (every NIC of it) or host12/mlx5_3 (one)."""
    host = c.host_name(int(ranks[0]) // c.gpus)
    return host if len(ranks) == c.gpus else f"{host}/{c.nic_name(int(ranks[0]) % c.gpus)}"


def parse_fault(spec: str, c: Cluster) -> Fault:
    """'slow-recv:host12', 'host-pair:host3-host7:2.5', 'oversubscribed-uplink:leaf2' -> Fault."""
    text, load_only = (spec[:-5], True) if spec.endswith("@load") else (spec, False)
    kind, _, rest = text.partition(":")
    if kind not in KINDS:
        raise SynthError(f"fault {spec!r}: unknown kind {kind!r} (expected KIND:TARGET[:VALUE]"
                         f"[@load] with KIND one of {', '.join(KINDS)})")
    target, _, value_text = rest.partition(":")
    if not target:
        raise SynthError(f"fault {spec!r}: expected a target after '{kind}:'")
    try:
        value = float(value_text) if value_text else KINDS[kind]
    except ValueError:
        raise SynthError(f"fault {spec!r}: value {value_text!r} is not a number") from None
    load_only = load_only or kind == "oversubscribed-uplink"
    if kind in NIC_KINDS:
        ranks = _ranks(c, target, spec)
        subject = _name(c, ranks) + {"slow-send": " send", "slow-recv": " receive"}.get(kind, "")
        return Fault(kind, ranks, value=value, load_only=load_only, spec=spec, subject=subject)
    if kind in ("bad-pair", "host-pair"):
        ends = target.split("-")
        if len(ends) != 2:
            raise SynthError(f"fault {spec!r}: expected two ends A-B, got {target!r}")
        gpu = kind == "bad-pair"
        a, b = (_ranks(c, e, spec, gpu=gpu) for e in ends)
        if c.host_of()[a[0]] == c.host_of()[b[0]] and not gpu:
            raise SynthError(f"fault {spec!r}: expected two different hosts")
        if set(a) & set(b):
            raise SynthError(f"fault {spec!r}: expected two different ends")
        return Fault(kind, a, b, value=value, load_only=load_only, spec=spec,
                     subject=f"{_name(c, a)}<->{_name(c, b)}")
    leaf = c.leaf_index(target)
    if c.leaves < 2:
        raise SynthError(f"fault {spec!r}: an uplink needs at least 2 leaves, the cluster has 1")
    return Fault(kind, (), leaf=leaf, value=value, load_only=load_only, spec=spec,
                 subject=f"leaf{leaf}")


@dataclass
class Effects:
    """What the faults do to each ordered pair s -> d (one-way, n x n)."""
    always: np.ndarray      # time factor, alone and under load
    load: np.ndarray        # extra time factor under load
    stall: np.ndarray       # share of samples with a retransmission stall
    flap: np.ndarray        # share of 5-iteration blocks with the link down


def effects_of(faults: Sequence[Fault], c: Cluster) -> Effects:
    n = c.ranks
    e = Effects(np.ones((n, n)), np.ones((n, n)), np.zeros((n, n)), np.zeros((n, n)))
    leaf = c.leaf_of()
    for f in faults:
        mask = np.zeros((n, n), dtype=bool)
        a, b = list(f.ranks_a), list(f.ranks_b)
        if f.kind == "slow-send":
            mask[a, :] = True
        elif f.kind == "slow-recv":
            mask[:, a] = True
        elif f.kind in ("lossy", "flapping"):
            mask[a, :] = mask[:, a] = True
        elif f.kind in ("bad-pair", "host-pair"):
            mask[np.ix_(a, b)] = mask[np.ix_(b, a)] = True
        else:
            inside = leaf == f.leaf
            mask = inside[:, None] != inside[None, :]  # one end in the leaf, one outside
        np.fill_diagonal(mask, False)
        if f.kind == "lossy":
            e.stall[mask] = np.maximum(e.stall[mask], f.value)
        elif f.kind == "flapping":
            e.flap[mask] = np.maximum(e.flap[mask], f.value)
        else:
            (e.load if f.load_only else e.always)[mask] *= f.value
    return e


def parse_faults(specs: Optional[Sequence[str]], c: Cluster) -> List[Fault]:
    return [parse_fault(s, c) for s in (specs or [])]
