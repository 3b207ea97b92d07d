"""The HDF5 layout `fabscope run` writes (docs/file-format.md, src/output/schema.yaml).

Tables are compound types from the schema's declaration with the C++ records' member
alignment (reader.declared_dtype), so a synthetic table has the real one's columns,
types and offsets.
"""

from __future__ import annotations

import json
from typing import Dict, Optional, Sequence, Tuple

import h5py
import numpy as np

from .. import __version__
from ..reader import declared_dtype

# Each table's row as src/output/schema.yaml declares it (printed there from the C++
# records): the columns and their types are declared there, not here.
SAMPLE_DTYPE = declared_dtype("samples")
SUMMARY_DTYPE = declared_dtype("summary")
RANK_DTYPE = declared_dtype("ranks")
COUNTER_DTYPE = declared_dtype("counters")
VALIDITY_DTYPE = declared_dtype("validity")

T0 = 50_000_000_000_000  # global clock at the start of the run (ns)
EPOCH = 1_796_000_000_000_000_000  # UNIX ns of the global clock's zero
TRUTH_ATTRIBUTE = "synthetic_truth"  # JSON: cluster, noise, seeds, planted faults


def root_attributes(f: h5py.File, *, nranks: int, nhosts: int, seed: int, scenario: str,
                    command: str, truth: Dict[str, object], waits_yield: bool) -> None:
    a = f.attrs
    text = {"format": "fabscope", "tool_version": f"{__version__}-synthetic",
            "run_id": f"synthetic-{seed}", "started_utc": "2026-01-01T00:00:00.000Z",
            "finished_utc": "", "command_line": command, "scenario_name": "synthetic",
            "scenario_file": "", "scenario_text": scenario, "overrides": "",
            "hdf5_mode": "serial-gather", "launch_preset": "synthetic",
            "waits_yield_why": "ranks outnumber the CPUs open to them" if waits_yield
            else "every rank has a CPU of its own"}
    for key, value in text.items():
        a[key] = value
    numbers = {"format_version": 1, "complete": 0, "exit_code": -1, "nranks": nranks,
               "nhosts": nhosts, "epoch_offset_ns": EPOCH, "seed": seed, "validity_findings": 0,
               "waits_yield": int(waits_yield), "consistency_flags": 0, "manifest_failed": 0}
    for key, value in numbers.items():
        a[key] = np.int64(value)
    a[TRUTH_ATTRIBUTE] = json.dumps(truth, sort_keys=True)


def close_run(f: h5py.File, t_end: int) -> None:
    a = f.attrs
    a["missed_deadlines"] = np.int64(0)
    a["not_run_after_missed_deadlines"] = np.int64(0)
    a["finished_utc"] = "2026-01-01T00:10:00.000Z"
    a["exit_code"] = np.int64(0)
    a["complete"] = np.int64(1)


def write_ranks(f: h5py.File, labels: Dict[str, np.ndarray], gpus: int, rng) -> None:
    n = len(labels["host"])
    rows = np.zeros(n, dtype=RANK_DTYPE)
    rows["rank"] = np.arange(n)
    rows["host"] = np.char.encode(labels["host"].astype(str))
    rows["local_rank"] = labels["local"]
    rows["local_size"] = gpus
    rows["pid"] = 4000 + np.arange(n)
    rows["gpu"] = labels["local"]
    rows["nic"] = np.char.encode(labels["nic"].astype(str))
    rows["clock_offset_ns"] = np.where(np.arange(n) == 0, 0, rng.integers(-2_000_000, 2_000_000, n))
    rows["clock_uncertainty_ns"] = np.where(np.arange(n) == 0, 0, rng.integers(800, 3000, n))
    rows["pod"] = np.char.encode(labels["pod"].astype(str))
    rows["leaf"] = np.char.encode(labels["leaf"].astype(str))
    f.create_dataset("ranks", data=rows)


def write_validity(f: h5py.File, rows: Sequence[Tuple[str, str, float, float, str]]) -> None:
    data = np.zeros(len(rows), dtype=VALIDITY_DTYPE)
    for i, (host, what, value, limit, effect) in enumerate(rows):
        data[i] = (host.encode(), what.encode(), value, limit, effect.encode())
    f.create_dataset("validity", data=data)
    f.attrs["validity_findings"] = np.int64(len(rows))


def _grouped_stats(keys: np.ndarray, values: np.ndarray):
    """Per key (sorted unique): count, min, mean, p50, p99, p99.9, max (numpy's linear)."""
    if np.any(keys[1:] < keys[:-1]):
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
    uniq, start, count = np.unique(keys, return_index=True, return_counts=True)
    out = {"key": uniq, "count": count, "min": np.minimum.reduceat(values, start),
           "max": np.maximum.reduceat(values, start), "mean": np.add.reduceat(values, start) / count}
    q = np.empty((len(uniq), 3))
    for i, (a, m) in enumerate(zip(start, count)):  # one rank's samples: a partition each
        q[i] = np.percentile(values[a:a + m], [50, 99, 99.9])
    out["p50"], out["p99"], out["p999"] = q[:, 0], q[:, 1], q[:, 2]
    return out


def summary_table(s: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """/tests/NNNN/summary of the headline samples s, lat their latencies (ns, after the divisor)."""
    if not len(s):
        return np.zeros(0, dtype=SUMMARY_DTYPE)
    st = _grouped_stats(s["rank"].astype(np.int64), lat)
    out = np.zeros(len(st["key"]), dtype=SUMMARY_DTYPE)
    out["rank"], out["samples"] = st["key"], st["count"]
    for col, key in (("min_ns", "min"), ("mean_ns", "mean"), ("p50_ns", "p50"),
                     ("p99_ns", "p99"), ("p999_ns", "p999"), ("max_ns", "max")):
        out[col] = st[key]
    out["bytes"] = np.bincount(s["rank"], weights=s["bytes"])[st["key"]].astype(np.int64)
    out["errors"] = 0
    return out


def headline_attributes(s: np.ndarray, lat: np.ndarray, divisor: int,
                        bandwidth: bool) -> Dict[str, float]:
    dur = lat * divisor
    nan = float("nan")
    if not len(s):
        a = {k: nan for k in ("p50_ns", "p99_ns", "p999_ns", "max_ns", "mean_ns")}
    else:
        p50, p99, p999 = np.percentile(lat, [50, 99, 99.9])
        dur_p50, dur_p99 = p50 * divisor, p99 * divisor
        a = {"p50_ns": p50, "p99_ns": p99, "p999_ns": p999, "max_ns": lat.max(),
             "mean_ns": lat.mean()}
    if bandwidth:
        per_sample = float(s["bytes"][0]) if len(s) else nan
        a["gbps_p50"] = per_sample / dur_p50 if len(s) else nan
        a["gbps_p99"] = per_sample / dur_p99 if len(s) else nan
        a["gbps_mean"] = float(s["bytes"].sum()) / float(dur.sum()) if len(s) else nan
        a["batch_gbps"] = per_sample / (dur.mean() + 200.0) if len(s) else nan
    a["batch_mean_ns"] = (dur.mean() + 200.0) / divisor if len(s) else nan
    a["clock_read_ns"] = 20.0
    return {k: float(v) for k, v in a.items()}


def counter_table(samples: np.ndarray, nics: np.ndarray, before: np.ndarray) -> np.ndarray:
    """Each rank's NIC data counters around the instance (IB port counters count 4-byte words);
    `before` (ranks x 2: sent, received words) is advanced in place."""
    n = len(nics)
    sent = np.bincount(samples["rank"], weights=samples["bytes"], minlength=n)
    received = np.bincount(samples["peer"], weights=samples["bytes"], minlength=n)
    delta = (np.stack([sent, received], axis=1) // 4).astype(np.int64)
    out = np.zeros(2 * n, dtype=COUNTER_DTYPE)
    out["rank"] = np.repeat(np.arange(n), 2)
    out["source"] = np.repeat(np.char.encode(np.char.add("ib:", np.char.add(nics.astype(str), "/1"))), 2)
    out["name"] = np.tile([b"port_xmit_data", b"port_rcv_data"], n)
    out["before"] = before.ravel()
    out["delta"] = delta.ravel()
    out["after"] = out["before"] + out["delta"]
    before += delta
    return out


def write_instance(f: h5py.File, index: int, attrs: Dict[str, object], samples: np.ndarray,
                   pair_matrix: Optional[np.ndarray], counters: Optional[np.ndarray] = None) -> None:
    """/tests/NNNN with its attributes, samples, summary and (all-pairs) pair matrix."""
    g = f.require_group("tests").create_group(f"{index:04d}")
    headline = (samples["flags"] & 0xff00) == 0
    s = samples if headline.all() else samples[headline]
    divisor = int(attrs["sample_divisor"])
    lat = (s["t_done_ns"] - s["t_post_ns"]).astype(np.float64) / divisor
    full = dict(attrs)
    full.update(headline_attributes(s, lat, divisor, attrs["metric"] == "bandwidth"))
    full["index"] = index
    for key, value in full.items():
        g.attrs[key] = np.int64(value) if isinstance(value, (int, np.integer)) \
            and not isinstance(value, bool) else value
    g.create_dataset("samples", data=samples, chunks=True if len(samples) else None,
                     maxshape=(None,))
    g.create_dataset("summary", data=summary_table(s, lat))
    if pair_matrix is not None:
        g.create_dataset("pair_matrix", data=pair_matrix.astype(np.float64))
    if counters is not None:
        g.create_dataset("counters", data=counters)
