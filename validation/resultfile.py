"""Writes a simulated run as the file `fabscope run` writes (docs/file-format.md).

The tables' rows are built from the schema's declarations (src/output/schema.yaml, read
by fabscope_analysis.reader.declared_dtype: the file-format contract, not the analysis),
so a table has the real one's columns, types and offsets; the attributes are those the
schema declares for the root, for every instance, for bandwidth metrics and for the
latency and bandwidth kinds. What the world planted is not in the file: it goes to a
JSON file beside it (truth_path), so the analysis reads exactly what it would read of
a real run.
"""

from __future__ import annotations

import json
from typing import Dict, List, Sequence

import h5py
import numpy as np

from fabscope_analysis.reader import declared_dtype

from .fabric import Fabric, host_name, nic_name
from .simulate import Instance, medians_by_key

T0_NS = 50_000_000_000_000            # the global clock at simulated time 0 (ns)
EPOCH_NS = 1_796_000_000_000_000_000  # UNIX ns of the global clock's zero
LEVEL_SAME_NODE, LEVEL_SAME_LEAF, LEVEL_SAME_POD, LEVEL_CROSS_NODE = 1, 2, 3, 5


def truth_path(out: str) -> str:
    return out[:-3] + ".truth.json" if out.endswith(".h5") else out + ".truth.json"


def levels(s: np.ndarray, d: np.ndarray, host: np.ndarray, leaf: List[str]) -> np.ndarray:
    """samples.level as the driver derives it from /ranks (the labels, right or wrong)."""
    leaf_arr = np.array(leaf)
    same_host = host[s] == host[d]
    labelled = (leaf_arr[s] != "") & (leaf_arr[d] != "")
    out = np.where(labelled, np.where(leaf_arr[s] == leaf_arr[d], LEVEL_SAME_LEAF, LEVEL_SAME_POD),
                   LEVEL_CROSS_NODE)
    return np.where(same_host, LEVEL_SAME_NODE, out).astype(np.uint8)


def _ranks_table(f: Fabric, leaf: List[str], rng) -> np.ndarray:
    n = f.ranks
    rows = np.zeros(n, dtype=declared_dtype("ranks"))
    rows["rank"] = np.arange(n)
    rows["host"] = [host_name(int(h)).encode() for h in f.host_of_rank]
    rows["local_rank"] = f.local_of_rank
    rows["local_size"] = f.shape.gpus
    rows["pid"] = 7000 + np.arange(n)
    rows["gpu"] = f.local_of_rank
    rows["nic"] = [nic_name(int(g)).encode() for g in f.local_of_rank]
    # A simulated global clock: the offsets a clock sync would find are small and known.
    rows["clock_offset_ns"] = np.where(np.arange(n) == 0, 0, rng.integers(-50_000, 50_000, n))
    rows["clock_uncertainty_ns"] = np.where(np.arange(n) == 0, 0, rng.integers(500, 1500, n))
    rows["site"] = b""
    rows["pod"] = [b"pod0" if x else b"" for x in leaf]
    rows["leaf"] = [x.encode() for x in leaf]
    return rows


def _samples_table(inst: Instance, f: Fabric, leaf: List[str]) -> np.ndarray:
    rows = np.array(inst.rows, dtype=np.float64) if inst.rows else np.zeros((0, 7))
    out = np.zeros(len(rows), dtype=declared_dtype("samples"))
    if not len(rows):
        return out
    t_post = T0_NS + np.round(rows[:, 4] * 1e9).astype(np.int64)
    t_done = np.maximum(T0_NS + np.round(rows[:, 5] * 1e9).astype(np.int64), t_post + 1)
    order = np.lexsort((t_post, rows[:, 0]))  # gathered by rank, each rank's in time order
    s, d = rows[order, 0].astype(np.int64), rows[order, 2].astype(np.int64)
    out["rank"], out["peer"] = s, d
    out["iter"] = rows[order, 1].astype(np.int32)
    out["bytes"] = rows[order, 3].astype(np.int64)
    out["t_post_ns"], out["t_done_ns"] = t_post[order], t_done[order]
    out["flags"] = rows[order, 6].astype(np.uint32)
    out["level"] = levels(s, d, f.host_of_rank, leaf)
    return out


def _summary_table(s: np.ndarray, value: np.ndarray) -> np.ndarray:
    order = np.argsort(s["rank"], kind="stable")   # each rank's samples in their order
    ranks, starts = np.unique(s["rank"][order], return_index=True)
    ends = np.r_[starts[1:], len(order)]
    out = np.zeros(len(ranks), dtype=declared_dtype("summary"))
    for i, r in enumerate(ranks):
        v = value[order[starts[i]:ends[i]]]
        p50, p99, p999 = np.percentile(v, [50, 99, 99.9])
        out[i] = (r, len(v), v.min(), v.mean(), p50, p99, p999, v.max(),
                  int(s["bytes"][order[starts[i]:ends[i]]].sum()), 0, b"")
    return out


def _pair_matrix(s: np.ndarray, value: np.ndarray, n: int, latency: bool) -> np.ndarray:
    """The driver's pair matrix: median one-way ns (latency, mirrored) or GB/s per pair."""
    m = np.full((n, n), np.nan)
    keys = s["rank"].astype(np.int64) * n + s["peer"]
    unique, medians = medians_by_key(keys, value)
    first = np.searchsorted(keys, unique, sorter=np.argsort(keys, kind="stable"))
    first_bytes = s["bytes"][np.argsort(keys, kind="stable")[first]]
    for key, med, size in zip(unique.tolist(), medians.tolist(), first_bytes.tolist()):
        a, b = divmod(key, n)
        if latency:
            m[a, b] = m[b, a] = med
        else:
            m[a, b] = float(size) / med
    return m


def _instance_attributes(inst: Instance, index: int, n: int, s: np.ndarray,
                         value: np.ndarray) -> Dict[str, object]:
    t = inst.test
    latency = t.kind == "latency"
    size = f"{t.size}B" if t.size < 1024 else f"{t.size >> 10}KiB"
    name = f"ap-{t.kind}"
    if inst.pass_ == "parallel":
        description = (f"all-pairs, {inst.rounds} rounds, every rank busy; then the "
                       f"{t.retest_worst} worst pairs serially")
    else:
        twice = ", each twice" if t.retest_visits > 1 else ""
        description = (f"serial retest of instance {inst.retest_of}: its {t.retest_worst} worst "
                       f"pairs{twice} beside control pairs from the middle of its ranking, one pair "
                       "at a time")
    if t.window > 1:
        description += f", window {t.window}"
    divisor = 2 if latency else 1
    a: Dict[str, object] = {
        "index": index, "name": name, "kind": t.kind, "case": f"{name}/{size}", "condition": "quiet",
        "transport": "mpi", "memory": "host", "pattern": "all-pairs", "pass": inst.pass_,
        "bytes": t.size, "window": t.window, "iterations": t.iterations, "warmup": 0,
        "timeout_s": 600.0, "metric": t.kind, "sample_divisor": divisor, "status": "passed",
        "error": "", "t_start_ns": T0_NS + int(round(inst.t_start * 1e9)),
        "t_end_ns": T0_NS + int(round(inst.t_end * 1e9)), "retest_of": inst.retest_of,
        "canaries": "", "congestors": "", "placement": "spread", "size_formula": "",
        "description": description}
    p50, p99, p999 = np.percentile(value, [50, 99, 99.9])
    a.update({"p50_ns": p50, "p99_ns": p99, "p999_ns": p999, "max_ns": value.max(),
              "mean_ns": value.mean()})
    duration = value * divisor
    a["batch_mean_ns"] = float(duration.mean() / divisor)
    a["clock_read_ns"] = 20.0
    if not latency:
        per_sample = float(t.sample_bytes)
        a.update({"gbps_p50": per_sample / p50, "gbps_p99": per_sample / p99,
                  "gbps_mean": float(s["bytes"].sum()) / float(duration.sum()),
                  "batch_gbps": per_sample / duration.mean(), "receive_slices": t.window})
    return a


def write(out: str, f: Fabric, leaf: List[str], instances: Sequence[Instance], seed: int,
          command: str, truth: Dict[str, object]) -> None:
    rng = np.random.default_rng([seed, 0xF11E])
    n = f.ranks
    with h5py.File(out, "w") as h5:
        root = {"format": "fabscope", "tool_version": "validation-world", "run_id": f"validation-{seed}",
                "started_utc": "2026-01-01T00:00:00.000Z", "finished_utc": "2026-01-01T00:10:00.000Z",
                "command_line": command, "scenario_name": "validation-world", "scenario_file": "",
                "scenario_text": "", "overrides": "", "hdf5_mode": "serial-gather",
                "launch_preset": "simgrid", "waits_yield_why": "every rank has a CPU of its own"}
        for key, value in root.items():
            h5.attrs[key] = value
        numbers = {"format_version": 1, "complete": 1, "exit_code": 0, "nranks": n,
                   "nhosts": f.shape.hosts, "epoch_offset_ns": EPOCH_NS, "seed": seed,
                   "validity_findings": 0, "waits_yield": 0, "consistency_flags": 0,
                   "manifest_failed": 0, "missed_deadlines": 0, "not_run_after_missed_deadlines": 0}
        for key, value in numbers.items():
            h5.attrs[key] = np.int64(value)
        h5.create_dataset("ranks", data=_ranks_table(f, leaf, rng))
        h5.create_dataset("validity", data=np.zeros(0, dtype=declared_dtype("validity")))
        tests = h5.create_group("tests")
        for index, inst in enumerate(instances):
            g = tests.create_group(f"{index:04d}")
            samples = _samples_table(inst, f, leaf)
            divisor = 2 if inst.test.kind == "latency" else 1
            headline = (samples["flags"] & 0xff00) == 0
            s = samples[headline]
            value = (s["t_done_ns"] - s["t_post_ns"]).astype(np.float64) / divisor
            for key, v in _instance_attributes(inst, index, n, s, value).items():
                g.attrs[key] = np.int64(v) if isinstance(v, (int, np.integer)) else \
                    (float(v) if isinstance(v, (float, np.floating)) else v)
            g.create_dataset("samples", data=samples, chunks=True, maxshape=(None,))
            g.create_dataset("summary", data=_summary_table(s, value))
            g.create_dataset("pair_matrix", data=_pair_matrix(s, value, n, inst.test.kind == "latency"))
    with open(truth_path(out), "w", encoding="utf-8") as t:
        json.dump(truth, t, indent=1, sort_keys=True, default=str)
