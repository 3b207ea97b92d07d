"""The whole cluster, node by node: which node that would serve makes requests miss TTFT.

A kvpush test with `role_rotation: ring` moves the prefill and decode roles over every
measuring node, round by round, so each node pushed KV as prefill and received it as
decode, each time with another partner; the request rows name the pair (prefill_rank,
decode_rank -> hosts). Per node and role this counts the requests whose KV transfer alone
took longer than the fabric's share of the TTFT target (`ttft_pNN x ttft_share`): a
pNN over all requests allows 1 - NN % of them over it. A role is slow when both
- the 95 % lower (Clopper-Pearson) bound of its share over the budget is above that
  allowance (its requests miss the target more often than the pNN allows), and
- its share stands out from the requests that did not touch the node (one-sided Fisher
  exact test, p < 5 % / nodes): where other work on shared CPUs slows every node now and
  then, the node is not singled out for it.

- A node slow in **both** roles is named: every request it takes part in, whichever its
  partner, risks missing the target. So is a node slow in one role with more than one of
  the partners it met there (`rotation_cycles` gives each side a new partner every cycle),
  as `host (send)` or `host (receive)`. The check FAILs naming it, with the share of the
  measured requests that crossed it there (about 2 / N of them for both roles, 1 / N for
  one, over N nodes: what a deployment placing requests on every node sends through it).
- A role slow with one partner only is the pair's, not the node's: the partner, or the link
  between them; named as a pair in the text, judged by the TTFT check over all requests
  (which the rotation already makes the cluster's mix).
- Fewer than 3 nodes, or a node measured in one role only (fixed roles): nothing per node
  (None); the plan says what one KV pair cannot see.

Only the KV transfer is split by node: the front end's and the prefill chunk's parts are
not per node (they are in the TTFT check over all requests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
from scipy.stats import beta, fisher_exact

from .checks import FAIL, PASS, Check
from .measured import Measured
from .slo import Slo, format_ms

NODES_CHECK = "nodes"
CONFIDENCE = 0.95
ROLES = ("prefill", "decode")


def lower_bound(over: int, n: int, confidence: float = CONFIDENCE) -> float:
    """One-sided Clopper-Pearson lower bound of a share seen as `over` of `n`."""
    if over <= 0 or n <= 0:
        return 0.0
    return float(beta.ppf(1.0 - confidence, over, n - over + 1))


def stands_out(over: int, n: int, rest_over: int, rest_n: int, alpha: float) -> bool:
    """Whether `over` of `n` is a larger share than `rest_over` of `rest_n` (one-sided
    Fisher exact test at `alpha`)."""
    if over == 0 or rest_n <= 0:
        return over > 0 and rest_n <= 0
    _, p = fisher_exact([[over, n - over], [rest_over, rest_n - rest_over]],
                        alternative="greater")
    return p < alpha


@dataclass
class NodeRole:
    node: str
    role: str
    requests: int
    over: int
    partners: List[str]
    rest_requests: int = 0   # the requests with neither end on the node
    rest_over: int = 0
    partners_over: int = 0   # partners with at least one of the requests over

    def slow(self, allowed: float, alpha: float) -> bool:
        return lower_bound(self.over, self.requests) > allowed and stands_out(
            self.over, self.requests, self.rest_over, self.rest_requests, alpha)

    def the_nodes(self) -> bool:
        """Met with several partners, and slow with more than one of them: the node's side,
        not one pair's."""
        return len(self.partners) > 1 and self.partners_over > 1

    def side(self) -> str:
        return "send" if self.role == "prefill" else "receive"

    def words(self) -> str:
        return (f"{self.over} of {self.requests} as {self.role}, with "
                f"{self.partners_over} of {len(self.partners)} partners")


def node_roles(prefill: np.ndarray, decode: np.ndarray, times: np.ndarray,
               budget_ns: float) -> Dict[str, Dict[str, NodeRole]]:
    """Per node, per role: its requests and how many took longer than budget_ns."""
    over = times > budget_ns
    out: Dict[str, Dict[str, NodeRole]] = {}
    for role, mine, other in (("prefill", prefill, decode), ("decode", decode, prefill)):
        for node in sorted(set(mine)):
            on = mine == node
            rest = (prefill != node) & (decode != node)
            out.setdefault(node, {})[role] = NodeRole(
                node, role, int(on.sum()), int(over[on].sum()), sorted(set(other[on])),
                int(rest.sum()), int(over[rest].sum()), len(set(other[on & over])))
    return out


def _judge_nodes(kv, allowed: float, budget_ms: float):
    """Per condition the KV push rotated in: the nodes slow in both roles or in one with
    several partners (named), the one-role one-partner cases (pairs), the conditions judged."""
    named: Dict[str, Tuple[str, List[NodeRole], int, int]] = {}
    pairs: List[str] = []
    judged: List[str] = []
    for condition in kv.conditions():
        if condition not in kv.hosts:
            continue
        prefill, decode = kv.hosts[condition]
        times = kv.by_condition[condition]
        roles = node_roles(prefill, decode, times, budget_ms * 1e6)
        if len(roles) < 3 or not any(len(r) == 2 for r in roles.values()):
            continue
        judged.append(condition)
        alpha = (1.0 - CONFIDENCE) / len(roles)
        for node, by_role in roles.items():
            slow = [r for r in by_role.values() if r.slow(allowed, alpha)]
            # slow in both roles, or in one with several of its partners: the node's
            if (len(slow) == 2 or any(r.the_nodes() for r in slow)) and node not in named:
                slow = slow if len(slow) == 2 else [r for r in slow if r.the_nodes()]
                on = np.zeros(len(times), dtype=bool)
                for r in slow:
                    on |= (prefill if r.role == "prefill" else decode) == node
                named[node] = (condition, slow, int(on.sum()), len(times))
            elif slow:
                r = slow[0]
                pairs.append(f"{r.node} as {r.role} ({r.words()} over, with "
                             f"{', '.join(r.partners)}) [{condition}]")
    return named, pairs, judged


def nodes_check(key: str, slo: Slo, measured: Measured) -> Optional[Check]:
    """The per-node check of TTFT target `key` (ttft_p50, ttft_p99), or None when the KV
    push did not rotate over 3 nodes or more."""
    kv = measured.classes.get("kv")
    if kv is None or not kv.hosts:
        return None
    q = {"p50": 50.0, "p99": 99.0}[key.split("_")[1]]
    allowed = 1.0 - q / 100.0
    budget_ms = slo.fabric_budget_ms(key)
    named, pairs, judged = _judge_nodes(kv, allowed, budget_ms)
    if not judged:
        return None
    rule = (f"a request's KV transfer over the fabric's {format_ms(budget_ms)} of the "
            f"{format_ms(slo.targets_ms[key])} TTFT {key.split('_')[1]} target more often than "
            f"a p{q:g} allows ({100 * allowed:g} %; 95 % lower bound) and than the requests "
            "without the node (Fisher, 5 % over the nodes)")
    pair_text = (f"; slow in one role with one partner (the pair or its link, judged by the "
                 f"TTFT check over all requests): {'; '.join(pairs)}") if pairs else ""
    if named:
        parts = []
        for node, (condition, slow, crossing, total) in sorted(named.items()):
            who = node if len(slow) == 2 else f"{node} ({slow[0].side()})"
            parts.append(f"{who}: {' and '.join(r.words() for r in slow)} over [{condition}]; "
                         f"{100 * crossing / total:.3g} % of requests cross it there, {crossing} "
                         f"of {total}")
        them = "it" if len(named) == 1 else "them"
        return Check(NODES_CHECK, FAIL,
                     f"every node that would serve, as prefill and as decode: {rule}: "
                     f"{'; '.join(parts)}: requests placed on {them} miss the target: "
                     f"FAIL{pair_text}",
                     judged[0], {"nodes_named": sorted(named),
                                 "sides": {n: ("both" if len(v[1]) == 2 else v[1][0].side())
                                           for n, v in named.items()},
                                 "shares": {n: v[2] / v[3] for n, v in named.items()}})
    nodes = len(node_roles(*kv.hosts[judged[0]], kv.by_condition[judged[0]], 0.0))
    return Check(NODES_CHECK, PASS,
                 f"every node that would serve, as prefill and as decode ({nodes} nodes, "
                 f"{', '.join(judged)}): none is slow in both roles, or in one with several "
                 f"partners, by {rule}: PASS{pair_text}",
                 judged[0], {"nodes_named": [], "nodes": nodes})


def named_hosts(check: Optional[Check]) -> List[str]:
    return list(check.figures.get("nodes_named", [])) if check is not None else []
