"""Rows of `impact` that need no deployment arithmetic: which instances a kind has, the
front end's share of a request (kind api) and the serving mix's classes (kind mix; each
instance's rows are its kind module's, kinds/mix.py)."""

from __future__ import annotations

from typing import List

import numpy as np

from ..kinds import kind_measuring
from ..kinds.mix import mix_instance_rows
from ..reader import FLAG_CHUNK_GAP, ResultFile, TestInstance


def instances_of(result: ResultFile, kind: str) -> List[TestInstance]:
    return [i for i in result.instances()
            if str(i.get("kind")) == kind and str(i.get("pass", "")) != "serial-retest"
            and str(i.get("status", "")) in ("passed", "failed")]


def api_request_rows(result: ResultFile, missing: List[str]) -> List[dict]:
    """What the network adds to a request at the front end (api kind): the connect, the
    time to first byte beyond the server's service time, the chunk gaps beyond its
    interval: the fabric's (or front end's) share, the model server's own time taken off."""
    insts = instances_of(result, kind_measuring("api"))
    if not insts:
        missing.append("front-end API share of a request: not measured in this file (add a "
                       "kind: api test)")
        return []
    out = []
    for inst in insts:
        rows = inst.api_requests()
        ok = rows[rows["status"] == "ok"] if not rows.empty else rows
        if ok.empty:
            missing.append(f"front end {inst.get('name')} [{inst.get('condition', 'quiet')}]: "
                           "no request answered")
            continue
        service_ns = float(inst.get("service_time_s", 0)) * 1e9
        interval_ns = float(inst.get("chunk_interval_s", 0)) * 1e9
        s = inst.samples()  # raw: the gaps are flagged rows, left out of the headline
        gaps = (s.loc[(s["flags"].astype("int64") & FLAG_CHUNK_GAP) != 0, "t_done_ns"]
                - s.loc[(s["flags"].astype("int64") & FLAG_CHUNK_GAP) != 0, "t_post_ns"]
                ).to_numpy(dtype=np.float64)
        connect = ok["connect_ns"].to_numpy(dtype=np.float64)
        added = np.maximum(ok["ttfb_ns"].to_numpy(dtype=np.float64) - service_ns, 0)
        row = {"series": str(inst.get("name")), "condition": str(inst.get("condition", "quiet")),
               "network": str(inst.get("network", "")), "interface": str(inst.get("interface", "")),
               "requests": int(len(ok)),
               "connect_p50_ms": float(np.percentile(connect, 50)) / 1e6,
               "connect_p99_ms": float(np.percentile(connect, 99)) / 1e6,
               "ttft_added_p50_ms": float(np.percentile(added, 50)) / 1e6,
               "ttft_added_p99_ms": float(np.percentile(added, 99)) / 1e6}
        if len(gaps):
            row["per_token_added_p99_ms"] = max(float(np.percentile(gaps, 99)) - interval_ns, 0) / 1e6
        out.append(row)
    return out


def mix_rows(result: ResultFile) -> List[dict]:
    """Every mix test's rows (mix_instance_rows), in file order."""
    rows: List[dict] = []
    for inst in instances_of(result, kind_measuring("mix")):
        rows.extend(mix_instance_rows(inst))
    return rows
