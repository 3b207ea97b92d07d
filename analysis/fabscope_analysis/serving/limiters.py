"""What a run knows that can hold a transfer below its line rate.

Named, with the evidence, only from what the file records (never from the share alone):

- NIC count vs ranks: more of the instance's ranks on one host share one NIC than the NIC
  has ports (each gets a part of it);
- PCIe / NUMA placement: a rank's GPU and NIC across NUMA nodes (`affinity/...` = SYS, or a
  consistency flag), or the NIC on another NUMA node than the rank's GPU;
- QP / slice settings: KV requests cut into messages smaller than 64 KiB (per-message
  overhead dominates: raise the block or slice size, or the queue pairs in flight);
- CPU-bound progress: host copies (gather / scatter) taking a large part of the transfer,
  or the run's validity findings (oversubscribed cores, a busy host);
- congestion: the instance ran under a neighbour condition.
"""

from __future__ import annotations

from typing import Dict, List

import numpy as np

from ..inventory import inventory_frame, recorded_flags
from ..kinds import analysis_of
from ..reader import ResultFile
from ..run_analysis import size_text

SMALL_MESSAGE = 64 * 1024
COPY_SHARE = 0.25


class RunKnowledge:
    def __init__(self, result: ResultFile, rates: Dict[int, dict]):
        self.result = result
        self.rates = rates
        ranks = result.ranks()
        self.host = {int(r["rank"]): str(r["host"]) for _, r in ranks.iterrows()}
        self.nic = {int(r["rank"]): str(r.get("nic", "") or "") for _, r in ranks.iterrows()}
        self.gpu = {int(r["rank"]): int(r.get("gpu", -1)) for _, r in ranks.iterrows()}
        frame = inventory_frame(result)
        self.facts = {str(row["host"]): row.dropna().to_dict() for _, row in frame.iterrows()} \
            if len(frame) else {}

    def path_name(self, sender: int, receiver: int) -> str:
        if sender < 0:
            return f"into rank {receiver}@{self.host.get(receiver, '?')}"
        if receiver < 0:
            return f"out of rank {sender}@{self.host.get(sender, '?')}"
        return (f"rank {sender}@{self.host.get(sender, '?')} -> "
                f"{receiver}@{self.host.get(receiver, '?')}")

    def unknown_rate_reason(self, receivers) -> str:
        hosts = sorted({self.host.get(int(r), "?") for r in receivers if r >= 0}) or ["?"]
        if not self.facts:
            return "the file has no host inventory (/hosts)"
        return (f"no RDMA port rate, interface speed or emulated limit recorded for the NICs of "
                f"{', '.join(hosts[:4])}{' ...' if len(hosts) > 4 else ''}")

    def limiters(self, inst, senders, receivers) -> List[str]:
        found = []
        found += self._shared_nics(senders, "sending")
        found += self._shared_nics(receivers, "receiving")
        found += self._placement(set(int(r) for r in np.concatenate([senders, receivers])
                                     if r >= 0))
        found += self._messages_and_copies(inst)
        found += self._cpu()
        condition = str(inst.get("condition", "quiet"))
        if condition != "quiet":
            found.append(f"congestion: measured under neighbour traffic ({condition})")
        return found or ["nothing this run recorded explains it (NIC sharing, placement, message "
                         "size, host copies and CPU load look normal): check the switch's "
                         "counters and the transport's settings"]

    def _shared_nics(self, ranks, role: str) -> List[str]:
        users: Dict[tuple, set] = {}
        for r in set(int(x) for x in ranks if x >= 0):
            users.setdefault((self.host.get(r, "?"), self.nic.get(r, "")), set()).add(r)
        crowded = [(k, v) for k, v in users.items() if len(v) > 1]
        return [f"NIC count vs ranks: {len(v)} {role} ranks share NIC {k[1] or '(unnamed)'} on "
                f"{k[0]} (each gets about 1/{len(v)} of its line rate)" for k, v in crowded[:2]]

    def _placement(self, ranks) -> List[str]:
        out = []
        for r in sorted(ranks):
            facts = self.facts.get(self.host.get(r, ""), {})
            relation = str(facts.get(f"affinity/gpu{self.gpu.get(r, -1)}/{self.nic.get(r, '')}", ""))
            if relation.startswith("SYS"):
                out.append(f"PCIe/NUMA placement: rank {r}@{self.host[r]}'s GPU {self.gpu[r]} and "
                           f"NIC {self.nic[r]} are on different NUMA nodes (SYS)")
        flags = recorded_flags(self.result)
        if len(flags) and "what" in flags.columns:
            numa = flags[flags["what"].astype(str).str.contains("NUMA", case=False)]
            out += [f"PCIe/NUMA placement: {row['host']}: {row['what']}" for _, row in
                    numa.head(2).iterrows()]
        return out[:3]

    def _messages_and_copies(self, inst) -> List[str]:
        if not analysis_of(inst.get("kind")).request_rows:
            return []
        req = inst.requests()
        if req.empty:
            return []
        out = []
        if "messages" in req.columns and (req["messages"] > 0).all():
            per_message = float(np.median(req["bytes"] / req["messages"]))
            if per_message < SMALL_MESSAGE:
                out.append(f"QP/slice settings: {size_text(per_message)} per message (the "
                           f"request is cut into {int(req['messages'].median())} messages): "
                           "per-message overhead; raise the block or slice size or the messages "
                           "in flight")
        transfer = (req["t_done_ns"] - req["t_start_ns"]).to_numpy(dtype=np.float64)
        copies = sum(req[c].to_numpy(dtype=np.float64) for c in ("gather_ns", "scatter_ns")
                     if c in req.columns)
        if np.ndim(copies) and transfer.sum() > 0 and copies.sum() / transfer.sum() > COPY_SHARE:
            out.append(f"CPU-bound progress: host gather/scatter copies take "
                       f"{100 * copies.sum() / transfer.sum():.0f} % of the transfer time "
                       f"(memory path {inst.get('memory_path', inst.get('memory'))})")
        return out

    def _cpu(self) -> List[str]:
        validity = self.result.validity()
        if validity is None or not len(validity) or "what" not in validity.columns:
            return []
        whats = sorted(set(str(w) for w in validity["what"]) & {"oversubscribed", "busy_host"})
        return [f"CPU-bound progress: the run's validity findings say {', '.join(whats)} "
                "(ranks competed for cores)"] if whats else []
