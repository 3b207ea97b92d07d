"""Rows of `impact` that need no deployment arithmetic: which instances a kind has, the
front end's share of a request (kind api), the serving mix's classes (kind mix), and the
inflation of a condition over its baseline row that every table shows."""

from __future__ import annotations

from typing import List

import numpy as np

from ..reader import (FLAG_AUXILIARY_MASK, FLAG_CHUNK_GAP, FLAG_MIX_CLASS_MASK,
                     FLAG_MIX_CLASS_SHIFT, FLAG_MIX_TOGETHER, MIX_CLASSES, ResultFile,
                     TestInstance)


def instances_of(result: ResultFile, kind: str) -> List[TestInstance]:
    return [i for i in result.instances()
            if str(i.get("kind")) == kind and str(i.get("pass", "")) != "serial-retest"
            and str(i.get("status", "")) in ("passed", "failed")]


def api_request_rows(result: ResultFile, missing: List[str]) -> List[dict]:
    """What the network adds to a request at the front end (api kind): the connect, the
    time to first byte beyond the server's service time, the chunk gaps beyond its
    interval: the fabric's (or front end's) share, the model server's own time taken off."""
    insts = instances_of(result, "api")
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


def add_inflation(rows: List[dict], baseline: str = "quiet") -> None:
    """Each congested row's p50/p99 (and mean, where rows have one) over its series' baseline
    row ("quiet" for conditions, "isolated" for the serving mix), where both exist."""
    for row in rows:
        base = next((r for r in rows if r["condition"] == baseline and r["series"] == row["series"]
                     and r.get("p99_ms") is not None), None)
        if row["condition"] != baseline and base and row.get("p99_ms") is not None:
            row["inflation_p50"] = row["p50_ms"] / base["p50_ms"]
            row["inflation_p99"] = row["p99_ms"] / base["p99_ms"]
            if "mean_ms" in row and "mean_ms" in base:
                row["inflation_mean"] = row["mean_ms"] / base["mean_ms"]


def mix_rows(result: ResultFile) -> List[dict]:
    """Every mix test's rows (mix_instance_rows), in file order."""
    rows: List[dict] = []
    for inst in instances_of(result, "mix"):
        rows.extend(mix_instance_rows(inst))
    return rows


def mix_instance_rows(inst: TestInstance) -> List[dict]:
    """Per traffic class and phase of one mix instance: samples, mean/p50/p99 (ms) from the
    raw samples (the headline rows: an api request's first-byte and gap rows are left out),
    with the together phase's inflation over the isolated one, paired as conditions are
    (series = test/class; the isolated phase is the baseline); the file's stored figures
    beside them (stored_inflation_*), so a reader sees both agree."""
    s = inst.samples()
    flags = s["flags"].astype("int64")
    head = s[(flags & FLAG_AUXILIARY_MASK) == 0]
    hflags = head["flags"].to_numpy(dtype=np.int64)
    took = (head["t_done_ns"] - head["t_post_ns"]).to_numpy(dtype=np.float64) / 1e6
    cls = (hflags & FLAG_MIX_CLASS_MASK) >> FLAG_MIX_CLASS_SHIFT
    together = (hflags & FLAG_MIX_TOGETHER) != 0
    stored = inst.mix_classes()
    rows = []
    for k, name in enumerate(MIX_CLASSES):
        for phase, is_together in (("isolated", False), ("together", True)):
            values = took[(cls == k + 1) & (together == is_together)]
            if not len(values):
                continue
            row = {"series": f"{inst.get('name')}/{name}", "test": str(inst.get("name")),
                   "class": name, "condition": phase, "samples": int(len(values)),
                   "mean_ms": float(np.mean(values)),
                   "p50_ms": float(np.percentile(values, 50)),
                   "p99_ms": float(np.percentile(values, 99))}
            match = stored[(stored["class"] == name) & (stored["phase"] == phase)]
            if is_together and not match.empty:
                row["stored_inflation_mean"] = float(match["inflation_mean"].iloc[0])
                row["stored_inflation_p99"] = float(match["inflation_p99"].iloc[0])
                row["verified"] = int(match["verified"].iloc[0])
                row["failed"] = int(match["failed"].iloc[0])
            rows.append(row)
    add_inflation(rows, baseline="isolated")
    return rows
