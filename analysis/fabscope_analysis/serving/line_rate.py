"""Bandwidth as a share of the path's line rate, with the rate's source and, below a
stated share, the likely limiter.

A rank's line rate, per direction, from its host's inventory (/hosts) and its NIC (/ranks),
first that applies:

1. the emulated cluster's configured limit: `env/FABSCOPE_EMULATED_RECEIVE_RATE` /
   `..._SEND_RATE` (tc's rate text, e.g. `1Gbit`, recorded by launch/emulated-cluster-rsh);
2. the RDMA port rate (`rdma/<dev>/port/<n>/rate_gbps`) of the rank's NIC, an RDMA device
   or the device of its interface (`net/<if>/rdma_device`);
3. the interface's speed (`net/<if>/speed_mbps`);
4. with no NIC named, the host's only fabric interface (up, not `lo`).

A transfer from S to R is limited by min(send rate of S, receive rate of R): that is its
path's line rate, and its source is the limiting side's. Shares are of bits on the wire
(GB/s x 8 over Gb/s), payload only: headers make 100 % unreachable (about 95 % is the top
of a healthy RoCE or InfiniBand link at large messages).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from .. import html as H
from ..inventory import inventory_frame
from ..kinds import analysis_of
from ..kinds.base import Transfers
from ..reader import ResultFile
from ..run_analysis import size_text
from .limiters import RunKnowledge

LIMITER_SHARE = 0.80          # below this share, at large transfers, a limiter is named
LARGE_BYTES = 1 << 20         # "large": at least 1 MiB per transfer
_TC_RATE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(bit|bps)\s*$", re.I)
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


@dataclass
class Rate:
    gbps: float               # gigabits per second
    source: str

    def text(self) -> str:
        return f"{self.gbps:g} Gb/s ({self.source})"


def parse_tc_rate(text: str) -> Optional[float]:
    """Gb/s of a tc rate ('1Gbit', '500Mbit', '125Mbps' = bytes/s); None if unreadable."""
    match = _TC_RATE.match(str(text))
    if not match:
        return None
    value = float(match.group(1)) * _SCALE[match.group(2).upper()]
    if match.group(3).lower() == "bps":
        value *= 8
    return value / 1e9


def _number(facts: dict, key: str) -> Optional[float]:
    try:
        value = float(facts.get(key))
    except (TypeError, ValueError):
        return None
    return value if value > 0 and np.isfinite(value) else None


def _rdma_rate(facts: dict, device: str) -> Optional[Rate]:
    ports = sorted(k for k in facts if k.startswith(f"rdma/{device}/port/") and
                   k.endswith("/rate_gbps"))
    for key in ports:
        state = str(facts.get(key.replace("/rate_gbps", "/state"), "ACTIVE"))
        value = _number(facts, key)
        if value and state.upper().startswith("ACTIVE"):
            port = key.split("/")[3]
            return Rate(value, f"RDMA port {device}/{port} rate")
    return None


def _interface_rate(facts: dict, nic: str) -> Optional[Rate]:
    found = _rdma_rate(facts, nic)           # the NIC named as an RDMA device (mlx5_0)
    if found:
        return found
    device = str(facts.get(f"net/{nic}/rdma_device") or "")
    if device:
        found = _rdma_rate(facts, device)
        if found:
            return found
    speed = _number(facts, f"net/{nic}/speed_mbps")
    if speed:
        return Rate(speed / 1000.0, f"interface {nic} speed")
    return None


def _only_interface(facts: dict) -> str:
    names = {k.split("/")[1] for k in facts if k.startswith("net/") and k.endswith("/operstate")
             and str(facts[k]).lower() == "up" and k.split("/")[1] != "lo"}
    return names.pop() if len(names) == 1 else ""


def rank_rates(result: ResultFile) -> Dict[int, Dict[str, Optional[Rate]]]:
    """{rank: {"send": Rate|None, "receive": Rate|None}}."""
    frame = inventory_frame(result)
    by_host = {str(row["host"]): row.dropna().to_dict() for _, row in frame.iterrows()} \
        if len(frame) else {}
    out: Dict[int, Dict[str, Optional[Rate]]] = {}
    ranks = result.ranks()
    for _, row in ranks.iterrows():
        host, nic = str(row["host"]), str(row.get("nic", "") or "")
        facts = by_host.get(host, {})
        nic = nic if nic and nic != "-" else _only_interface(facts)
        base = _interface_rate(facts, nic) if nic else None
        rates = {}
        for direction in ("send", "receive"):
            limit = parse_tc_rate(facts.get(f"env/FABSCOPE_EMULATED_{direction.upper()}_RATE", ""))
            rates[direction] = (Rate(limit, f"emulated cluster's {direction} limit on {host}")
                                if limit else base)
        out[int(row["rank"])] = rates
    return out


def path_rate(rates, sender: Optional[int], receiver: Optional[int]) -> Optional[Rate]:
    """The lower of the sender's send and the receiver's receive rate (sender None: the
    receiver's side alone, e.g. an incast receiver's aggregate; receiver None: the sender's
    alone, e.g. what one rank sends to all others in an all-to-all phase)."""
    receive = rates.get(receiver, {}).get("receive")
    send = rates.get(sender, {}).get("send")
    if sender is None:
        return receive
    if receiver is None:
        return send
    if send is None or receive is None:
        return None
    return send if send.gbps <= receive.gbps else receive


@dataclass
class ShareRow:
    """One instance's bandwidth as a share of its paths' line rates."""
    test: str
    kind: str
    condition: str
    bytes: int
    gbps_p50: float
    share_p50: float          # median over transfers of (GB/s x 8) / path Gb/s
    share_worst_path: float   # the lowest path's median share
    worst_path: str
    rate: str                 # the rate(s) and source(s) used
    transfers: int
    limiters: List[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return dict(self.__dict__)


def _transfers(inst) -> Optional[Transfers]:
    """(senders, receivers, bytes, seconds) of an instance's data transfers, or None: as
    its kind's module reads them (kinds/*.py `transfers`)."""
    read = analysis_of(inst.get("kind")).transfers
    return read(inst) if read is not None else None


def share_row(inst, rates, knowledge: "RunKnowledge") -> Optional[ShareRow]:
    moved = _transfers(inst)
    if moved is None:
        return None
    senders, receivers, nbytes, seconds = moved
    keep = seconds > 0
    senders, receivers, nbytes, seconds = senders[keep], receivers[keep], nbytes[keep], seconds[keep]
    paths = [path_rate(rates, None if s < 0 else int(s), None if r < 0 else int(r))
             for s, r in zip(senders, receivers)]
    known = np.array([p is not None for p in paths])
    row_gbps = nbytes / seconds / 1e9
    name = str(inst.get("name"))
    if not known.any():
        why = knowledge.unknown_rate_reason(np.concatenate([senders, receivers]))
        return ShareRow(name, str(inst.get("kind")), str(inst.get("condition", "quiet")),
                        int(inst.get("bytes", 0)), float(np.median(row_gbps)), float("nan"),
                        float("nan"), "", "rate unknown: " + why, int(len(row_gbps)))
    line = np.array([p.gbps if p else np.nan for p in paths])
    share = row_gbps * 8 / line
    per_path: Dict[Tuple[int, int], List[float]] = {}
    for s_, r_, v in zip(senders[known], receivers[known], share[known]):
        per_path.setdefault((int(s_), int(r_)), []).append(float(v))
    worst = min(per_path, key=lambda k: np.median(per_path[k]))
    sources = sorted({p.text() for p in paths if p is not None})
    row = ShareRow(name, str(inst.get("kind")), str(inst.get("condition", "quiet")),
                   int(inst.get("bytes", 0)), float(np.median(row_gbps)),
                   float(np.median(share[known])), float(np.median(per_path[worst])),
                   knowledge.path_name(*worst), "; ".join(sources[:3]) +
                   (f" and {len(sources) - 3} more" if len(sources) > 3 else ""),
                   int(known.sum()))
    if row.bytes >= LARGE_BYTES and row.share_worst_path < LIMITER_SHARE:
        row.limiters = knowledge.limiters(inst, senders, receivers)
    return row


def share_rows(result: ResultFile) -> List[ShareRow]:
    """Every bandwidth-carrying instance (p2p, incast aggregate, KV push) as shares."""
    rates = rank_rates(result)
    knowledge = RunKnowledge(result, rates)
    rows = []
    for inst in result.instances():
        if str(inst.get("status", "")) not in ("passed", "failed"):
            continue
        row = share_row(inst, rates, knowledge)
        if row is not None:
            rows.append(row)
    return rows


def kv_headline(rows: List[ShareRow]) -> Optional[str]:
    """'KV push at N % of line rate (...)' for the largest quiet KV push; None without one."""
    kv = [r for r in rows if analysis_of(r.kind).line_rate_headline]
    if not kv:
        return None
    quiet = [r for r in kv if r.condition == "quiet"] or kv
    r = max(quiet, key=lambda r: (r.bytes, r.test))
    size = size_text(r.bytes)
    if not np.isfinite(r.share_p50):
        return (f"KV push: {r.gbps_p50:.3g} GB/s per request (p50), line {r.rate} "
                f"[{r.test}, {size} per request, {r.condition}]")
    text = (f"KV push at {100 * r.share_p50:.0f} % of line rate ({r.gbps_p50:.3g} GB/s per "
            f"request p50 over {r.rate}; slowest path {r.worst_path} at "
            f"{100 * r.share_worst_path:.0f} %) [{r.test}, {size} per request, {r.condition}]")
    if r.limiters:
        text += f"; below {100 * LIMITER_SHARE:.0f} %, likely limited by: {'; '.join(r.limiters)}"
    return text


@dataclass
class LineRate:
    """A run's shares of line rate, computed once; the renderers below only format it."""
    rows: List[ShareRow]
    headline: Optional[str]


def compute_line_rate(result: ResultFile) -> LineRate:
    rows = share_rows(result)
    return LineRate(rows, kv_headline(rows))


def headline(result: ResultFile) -> Optional[str]:
    return compute_line_rate(result).headline


def text_lines(line_rate: LineRate) -> List[str]:
    """The summary's headline ([] without a KV push)."""
    return [f"  {line_rate.headline}"] if line_rate.headline else []



def compare_lines(results, labels) -> List[str]:
    """One headline per side (its first run), for compare."""
    out = []
    for result, label in zip(results, labels):
        line = headline(result)
        if line:
            out.append(f"{label}: {line}")
    return out



def html_block(line_rate: LineRate) -> str:
    """The report's "Line rate" section: the headline and every bandwidth figure as a share."""
    rows, line = line_rate.rows, line_rate.headline
    if not rows:
        return ""
    table = "".join(
        f"<tr><td>{H.esc(r.test)}</td><td>{H.esc(r.kind)}</td><td>{H.esc(r.condition)}</td>"
        f"<td>{r.bytes}</td><td>{r.gbps_p50:.3g}</td>"
        f"<td>{'-' if not np.isfinite(r.share_p50) else f'{100 * r.share_p50:.0f} %'}</td>"
        f"<td>{'-' if not np.isfinite(r.share_worst_path) else f'{100 * r.share_worst_path:.0f} %'}"
        f" {H.esc(r.worst_path)}</td><td>{H.esc(r.rate)}</td>"
        f"<td>{H.esc('; '.join(r.limiters))}</td></tr>" for r in rows)
    return H.section("line-rate", "Line rate", [
        (f"<p><b>{H.esc(line)}</b></p>" if line else "") +
        "<table><tr><th>test</th><th>kind</th><th>condition</th><th>bytes</th>"
        "<th>GB/s p50</th><th>share p50</th><th>slowest path</th><th>line rate (source)</th>"
        f"<th>likely limiter (below {100 * LIMITER_SHARE:.0f} % at &ge; 1 MiB)</th></tr>"
        f"{table}</table>"],
        intro="Each transfer's bandwidth over its path's line rate: the lower of the "
              "sender's send and the receiver's receive rate, from the inventory "
              "(docs/serving-fit.md, \"Line-rate accounting\").")
