"""Every derived figure of a fabscope result file, recomputed from its raw rows.

An independent reader: plain h5py and numpy, nothing from fabscope_analysis, and the
definitions taken from docs/file-format.md (the C++ writes them; the analysis reads
them back). For every instance that passed or failed, the headline statistics, the
`/tests/NNNN/summary` rows, the pair matrix, the counters' deltas, the batch figure, the
impact factors (against the quiet instance of the same case, replicate and pass) and each
kind's own figures are recomputed from `/tests/NNNN/samples` (and the kind's own tables)
and must agree to float64 rounding: a factor of two, a unit or a ceil/floor slip fails,
where a `> 0` check would pass.

Used by analysis/tests/test_recompute_attributes.py on the real files ./tests/run writes,
and by the MPI tests' checkers (tests/mpi/check_result.py, kv_check.py) on each test's own
file, so that what the runner writes is recomputed wherever a test reads it.

usage: recompute.py FILE...   (exit 1 naming every figure that differs)
"""

import math
import os
import re
import sys
from collections import defaultdict

import h5py
import numpy as np

# Float64 rounding of sums and divisions done in another order: far below any slip.
RTOL = 1e-9

AUXILIARY = 0xFF00       # flag bits 8-15: not part of the headline
DATA_CHECK_FAILED = 0x1
INCAST_AGGREGATE = 1 << 8
INCAST_PROBE = 1 << 9
ALLTOALL_DISPATCH = 1 << 11
ALLTOALL_COMBINE = 1 << 12
MIX_CLASS_SHIFT, MIX_CLASS_MASK, MIX_TOGETHER = 16, 0x7 << 16, 1 << 19
MIX_CLASSES = ["allreduce", "alltoall", "kvpush", "api"]
CLOCK_READS_PER_SAMPLE = 2  # docs/file-format.md, latency: "two clock reads per iteration"


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


class Mismatches:
    """Collects every disagreement of a file, so one run names them all."""

    def __init__(self):
        self.found = []

    def close(self, where, name, written, recomputed, rtol=RTOL):
        written = float(written)
        recomputed = float(recomputed)
        if math.isnan(written) and math.isnan(recomputed):
            return
        if not math.isclose(written, recomputed, rel_tol=rtol, abs_tol=1e-12):
            self.found.append(f"{where} {name}: written {written!r}, recomputed {recomputed!r}")

    def attr(self, where, attrs, name, recomputed):
        """The instance attribute `name` against its recomputation."""
        self.close(where, name, attrs[name], recomputed)

    def equal(self, where, name, written, recomputed):
        if written != recomputed:
            self.found.append(f"{where} {name}: written {written!r}, recomputed {recomputed!r}")


def pct(values, q):
    """Linear-interpolated percentile, as numpy.percentile (docs/file-format.md)."""
    if not len(values):
        return math.nan
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def stats_of(values):
    v = np.asarray(values, dtype=np.float64)
    if not len(v):
        return dict(count=0, min=math.nan, mean=math.nan, p50=math.nan, p99=math.nan,
                    p999=math.nan, max=math.nan)
    return dict(count=len(v), min=v.min(), mean=v.sum() / len(v), p50=pct(v, 50),
                p99=pct(v, 99), p999=pct(v, 99.9), max=v.max())


def _instances(path):
    with h5py.File(path, "r") as f:
        for name in sorted(f["tests"]):
            g = f["tests"][name]
            tables = {k: g[k][()] for k in g.keys() if isinstance(g[k], h5py.Dataset)}
            attrs = {k: (_text(v) if isinstance(v, (bytes, str)) else v)
                     for k, v in g.attrs.items()}
            yield f"{os.path.basename(path)}:/tests/{name}", attrs, tables


# --- figures every instance has -------------------------------------------------------

def check_headline(where, a, t, m):
    s = t.get("samples")
    if s is None or not len(s) or "scopes" in t:
        return  # several site scopes: NaN by design (test_real_files checks that)
    head = s[(s["flags"].astype(np.int64) & AUXILIARY) == 0]
    raw = (head["t_done_ns"] - head["t_post_ns"]).astype(np.float64)
    lat = raw / a["sample_divisor"]
    st = stats_of(lat)
    for key in ("p50", "p99", "p999", "max", "mean"):
        m.attr(where, a, f"{key}_ns", st[key])
    if a["metric"] == "bandwidth":
        per_sample = head["bytes"].astype(np.float64).sum() / len(head)
        m.attr(where, a, "gbps_p50", per_sample / st["p50"])
        m.attr(where, a, "gbps_p99", per_sample / st["p99"])
        m.attr(where, a, "gbps_mean", head["bytes"].astype(np.float64).sum() / raw.sum())
    elif "gbps_p50" in a:
        m.found.append(f"{where}: gbps_p50 on a latency-metric instance")


def check_summary_rows(where, a, t, m):
    s, summary = t.get("samples"), t.get("summary")
    if s is None or summary is None or "scopes" in t:
        return
    head = s[(s["flags"].astype(np.int64) & AUXILIARY) == 0]
    lat = (head["t_done_ns"] - head["t_post_ns"]).astype(np.float64) / a["sample_divisor"]
    ranks = sorted(set(head["rank"].tolist()))
    m.equal(where, "summary ranks", sorted(summary["rank"].tolist()), ranks)
    for row in summary:
        mine = head["rank"] == row["rank"]
        st = stats_of(lat[mine])
        w = f"{where}/summary rank {row['rank']}"
        m.equal(w, "samples", int(row["samples"]), st["count"])
        for key in ("min", "mean", "p50", "p99", "p999", "max"):
            m.close(w, f"{key}_ns", row[f"{key}_ns"], st[key])
        m.equal(w, "bytes", int(row["bytes"]), int(head["bytes"][mine].sum()))
        # errors: 1 when the rank's data check failed (flag bit 0 on any of its samples).
        flags = s["flags"][s["rank"] == row["rank"]].astype(np.int64)
        failed = int(((flags & DATA_CHECK_FAILED) != 0).any())
        if failed:
            m.equal(w, "errors", int(row["errors"]), 1)


def check_pair_matrix(where, a, t, m):
    """all-pairs: the median per (rank, peer) of the headline samples; GB/s for bandwidth
    (bytes per sample over the median time); latency cells filled both ways."""
    if "pair_matrix" not in t:
        return
    s = t["samples"]
    head = s[(s["flags"].astype(np.int64) & AUXILIARY) == 0]
    lat = (head["t_done_ns"] - head["t_post_ns"]).astype(np.float64) / a["sample_divisor"]
    written = t["pair_matrix"]
    expected = np.full(written.shape, np.nan)
    for rank, peer in sorted(set(zip(head["rank"].tolist(), head["peer"].tolist()))):
        mine = (head["rank"] == rank) & (head["peer"] == peer)
        median = pct(lat[mine], 50)
        if a["metric"] == "latency":
            expected[rank, peer] = expected[peer, rank] = median
        else:
            expected[rank, peer] = head["bytes"][mine].astype(np.float64).mean() / median
    same_nan = np.isnan(written) == np.isnan(expected)
    if not same_nan.all():
        m.found.append(f"{where}/pair_matrix: measured cells "
                       f"{np.argwhere(~np.isnan(written)).tolist()}, pairs with samples "
                       f"{np.argwhere(~np.isnan(expected)).tolist()}")
        return
    for (i, j) in np.argwhere(~np.isnan(expected)):
        m.close(where, f"pair_matrix[{i}][{j}]", written[i, j], expected[i, j])


def check_counters(where, a, t, m):
    c = t.get("counters")
    if c is not None and len(c):
        bad = c[c["delta"] != c["after"] - c["before"]]
        for row in bad[:3]:
            m.found.append(f"{where}/counters rank {row['rank']} {_text(row['source'])} "
                           f"{_text(row['name'])}: delta {row['delta']}, after - before "
                           f"{row['after'] - row['before']}")


def check_batch(where, a, t, m):
    """latency/bandwidth/bibw: the loop time of each pair's run of consecutive iterations."""
    if "batch_mean_ns" not in a:
        return
    s = t["samples"]
    per_read = CLOCK_READS_PER_SAMPLE * a["clock_read_ns"]
    loop = nbytes = 0.0
    iterations = 0
    first = 0
    for i in range(1, len(s) + 1):
        if i < len(s) and s["rank"][i] == s["rank"][i - 1] and s["peer"][i] == s["peer"][i - 1] \
                and s["iter"][i] == s["iter"][i - 1] + 1:
            continue
        run = s[first:i]
        span = float(run["t_done_ns"][-1] - run["t_post_ns"][0])
        timed = float((run["t_done_ns"] - run["t_post_ns"]).astype(np.float64).sum())
        loop += max(span - len(run) * per_read, timed)
        nbytes += float(run["bytes"].astype(np.float64).sum())
        iterations += len(run)
        first = i
    if not iterations:
        return
    m.attr(where, a, "batch_mean_ns", loop / iterations / max(1, a["sample_divisor"]))
    if a["metric"] == "bandwidth":
        m.attr(where, a, "batch_gbps", nbytes / loop)


def check_impact(where, a, t, m, by_index):
    """A congested instance against its quiet one: `quiet_index` names the quiet instance
    of the same case, replicate and pass, and the impacts are the two instances' own mean
    and p99 divided. A quiet instance has neither, and its /scopes rows say NaN."""
    if a["condition"] == "quiet":
        if "quiet_index" in a or "impact_mean" in a:
            m.found.append(f"{where}: a quiet instance with an impact")
        if "scopes" in t and not np.isnan(t["scopes"]["impact_mean"]).all():
            m.found.append(f"{where}/scopes: a quiet instance's rows carry an impact")
        return
    if "quiet_index" not in a:
        return
    qa, qt = by_index[a["quiet_index"]]
    key = [(x["case"], int(x.get("replicate", 0)), x["pass"]) for x in (a, qa)]
    if key[0] != key[1] or qa["condition"] != "quiet":
        m.found.append(f"{where}: quiet_index {a['quiet_index']} is {key[1]} "
                       f"{qa['condition']}, not the quiet instance of {key[0]}")
        return
    if "impact_mean" not in a:
        return
    # Congested / quiet time for both metrics: for bandwidth that is docs/file-format.md's
    # quiet / congested GB/s (the same bytes per sample on both sides).
    mine = stats_of(_headline_latency(a, t))
    theirs = stats_of(_headline_latency(qa, qt))
    m.attr(where, a, "impact_mean", mine["mean"] / theirs["mean"])
    m.attr(where, a, "impact_p99", mine["p99"] / theirs["p99"])


def _headline_latency(a, t):
    s = t["samples"]
    head = s[(s["flags"].astype(np.int64) & AUXILIARY) == 0]
    return (head["t_done_ns"] - head["t_post_ns"]).astype(np.float64) / a["sample_divisor"]


# --- each kind's own figures ------------------------------------------------------------

def _collective_times(s, stamps_in, stamps_out):
    """Per iteration over the group: last exit - first arrival, last arrival - first arrival,
    and who arrived last (the lowest rank on a tie), as docs/file-format.md defines them."""
    ranks = sorted(set(s["rank"].tolist()))
    iters = sorted(set(s["iter"].tolist()))
    duration, lateness, last_count = [], [], defaultdict(int)
    for it in iters:
        at = s["iter"] == it
        ins = {int(r): int(stamps_in[at & (s["rank"] == r)][0]) for r in ranks}
        outs = [int(stamps_out[at & (s["rank"] == r)][0]) for r in ranks]
        first_in, last_in = min(ins.values()), max(ins.values())
        duration.append(max(outs) - first_in)
        lateness.append(last_in - first_in)
        last_count[min(r for r in ranks if ins[r] == last_in)] += 1
    most = max(last_count.values())
    straggler = min(r for r in ranks if last_count[r] == most)
    return duration, lateness, straggler, most / len(iters), len(ranks)


def kind_allreduce(where, a, t, m):
    s = t["samples"]
    duration, lateness, straggler, fraction, n = _collective_times(s, s["t_post_ns"],
                                                                   s["t_done_ns"])
    p50 = pct(duration, 50)
    m.attr(where, a, "collective_p50_ns", p50)
    m.attr(where, a, "collective_p99_ns", pct(duration, 99))
    algbw = a["bytes"] / p50
    m.attr(where, a, "algbw_gbps", algbw)
    m.attr(where, a, "busbw_gbps", algbw * 2 * (n - 1) / n)
    m.attr(where, a, "pipelined_algbw_gbps", a["bytes"] / a["pipelined_time_ns"])
    m.close(where, "pipelined_busbw_gbps", a["pipelined_busbw_gbps"],
            a["pipelined_algbw_gbps"] * 2 * (n - 1) / n)
    m.equal(where, "pipelined_calls", a["pipelined_calls"], a["iterations"])
    m.equal(where, "straggler_rank", a["straggler_rank"], straggler)
    m.attr(where, a, "straggler_last_fraction", fraction)
    m.attr(where, a, "arrival_spread_p50_ns", pct(lateness, 50))
    m.attr(where, a, "arrival_spread_p99_ns", pct(lateness, 99))


def kind_alltoall(where, a, t, m):
    s = t["samples"]
    flags = s["flags"].astype(np.int64)
    whole = s[flags == 0]
    disp, comb = s[(flags & ALLTOALL_DISPATCH) != 0], s[(flags & ALLTOALL_COMBINE) != 0]
    # Three rows per rank and iteration: the round, its dispatch, its combine.
    m.equal(where, "rows per phase", (len(disp), len(comb)), (len(whole), len(whole)))
    d_dur, _, _, _, n = _collective_times(disp, disp["t_post_ns"], disp["t_done_ns"])
    c_dur, _, _, _, _ = _collective_times(comb, disp["t_done_ns"], comb["t_done_ns"])
    r_dur, late, straggler, fraction, _ = _collective_times(whole, whole["t_post_ns"],
                                                            whole["t_done_ns"])
    for name, values in (("collective", r_dur), ("dispatch", d_dur), ("combine", c_dur)):
        m.attr(where, a, f"{name}_p50_ns", pct(values, 50))
        m.attr(where, a, f"{name}_p99_ns", pct(values, 99))
    m.equal(where, "straggler_rank", a["straggler_rank"], straggler)
    m.attr(where, a, "straggler_last_fraction", fraction)
    m.attr(where, a, "arrival_spread_p50_ns", pct(late, 50))
    m.attr(where, a, "arrival_spread_p99_ns", pct(late, 99))
    ranks = t["alltoall_ranks"]
    sent = ranks["dispatch_copies_sent"].astype(np.float64) + ranks["dispatch_copies_local"]
    # Copies a rank's experts hold: those received plus its own tokens' local copies.
    held = ranks["dispatch_bytes_received"].astype(np.float64) / a["dispatch_token_bytes"] + \
        ranks["dispatch_copies_local"]
    mean_sent = sent.mean()
    m.attr(where, a, "copies_per_token", mean_sent / a["tokens_per_rank"])
    m.attr(where, a, "send_imbalance", sent.max() / mean_sent)
    m.attr(where, a, "load_imbalance", held.max() / held.mean())
    bus = (n - 1) / n
    for phase, values in (("dispatch", d_dur), ("combine", c_dur)):
        algbw = mean_sent * a[f"{phase}_token_bytes"] / pct(values, 50)
        m.attr(where, a, f"{phase}_algbw_gbps", algbw)
        m.attr(where, a, f"{phase}_busbw_gbps", algbw * bus)
        pipe = mean_sent * a[f"{phase}_token_bytes"] / a[f"{phase}_pipelined_ns"]
        m.attr(where, a, f"{phase}_pipelined_algbw_gbps", pipe)
        m.attr(where, a, f"{phase}_pipelined_busbw_gbps", pipe * bus)
    m.equal(where, "alltoall_ranks tokens", set(ranks["tokens"].tolist()), {a["tokens_per_rank"]})
    per_copy = ranks["dispatch_copies_sent"] * a["dispatch_token_bytes"]
    m.equal(where, "dispatch bytes sent", (ranks["dispatch_bytes_sent"] == per_copy).all(), True)


def kind_incast(where, a, t, m):
    s = t["samples"]
    flags = s["flags"].astype(np.int64)
    dur = (s["t_done_ns"] - s["t_post_ns"]).astype(np.float64)
    agg = s["bytes"][(flags & INCAST_AGGREGATE) != 0] / dur[(flags & INCAST_AGGREGATE) != 0]
    m.attr(where, a, "aggregate_gbps_p50", pct(agg, 50))
    m.attr(where, a, "aggregate_gbps_min", agg.min() if len(agg) else math.nan)
    senders = (flags & (INCAST_AGGREGATE | INCAST_PROBE)) == 0
    rates = []
    for r in sorted(set(s["rank"][senders].tolist())):
        mine = senders & (s["rank"] == r)
        rates.append(s["bytes"][mine].astype(np.float64).sum() / dur[mine].sum())
    rates = np.asarray(rates)
    m.equal(where, "senders", a["senders"], len(rates))
    m.attr(where, a, "jain_fairness", rates.sum() ** 2 / (len(rates) * (rates ** 2).sum()))
    probe = dur[(flags & INCAST_PROBE) != 0] / 2
    m.equal(where, "probe_samples", a["probe_samples"], len(probe))
    if "probe_rank" in a:
        m.attr(where, a, "probe_p50_ns", pct(probe, 50))
        m.attr(where, a, "probe_p99_ns", pct(probe, 99))
        m.equal(where, "probe rows' rank", set(s["rank"][(flags & INCAST_PROBE) != 0].tolist()),
                {a["probe_rank"]})
    m.equal(where, "aggregate rows' rank", set(s["rank"][(flags & INCAST_AGGREGATE) != 0].tolist()),
            {a["receiver_rank"]})


def kind_kvpush(where, a, t, m):
    r = t["requests"]
    m.equal(where, "requests_measured", a["requests_measured"], len(r))
    m.equal(where, "requests_verified", a["requests_verified"],
            int(r["verified"].astype(np.int64).sum()))
    # integer sums (exact in float64) and one division each, as the C++ does them: equal
    # to the last bit, so a nanosecond's slip in a sum shows
    nbytes = float(r["bytes"].astype(np.float64).sum())
    span = int(r["t_done_ns"].max()) - int(r["t_start_ns"].min())
    m.close(where, "kv_gbps_aggregate", a["kv_gbps_aggregate"], nbytes / span, rtol=0)
    m.close(where, "kv_gbps_per_request", a["kv_gbps_per_request"],
            nbytes / float((r["t_done_ns"] - r["t_start_ns"]).astype(np.float64).sum()), rtol=0)
    for name in ("gather", "scatter", "copy"):
        m.close(where, f"{name}_ns_mean", a[f"{name}_ns_mean"],
                float(r[f"{name}_ns"].astype(np.int64).sum()) / len(r), rtol=0)
    m.equal(where, "blocks per request", set(r["blocks"].tolist()), {a["blocks_per_request"]})
    m.equal(where, "messages per request", set(r["messages"].tolist()), {a["messages_per_request"]})
    m.equal(where, "bytes per request", set(r["bytes"].tolist()), {a["bytes"]})
    # One sample per measured request: its transfer, start to done.
    s = t["samples"]
    m.equal(where, "samples", len(s), len(r))
    m.equal(where, "sample durations", sorted((s["t_done_ns"] - s["t_post_ns"]).tolist()),
            sorted((r["t_done_ns"] - r["t_start_ns"]).tolist()))


def kind_api(where, a, t, m):
    r = t["api_requests"]
    status = np.array([_text(x) for x in r["status"]])
    m.equal(where, "requests_measured", a["requests_measured"], len(r))
    m.equal(where, "requests_ok", a["requests_ok"], int((status == "ok").sum()))
    m.equal(where, "measured requests", a["requests_measured"],
            a["clients"] * a["requests_per_client"])
    m.equal(where, "answered_by_servers", a["answered_by_servers"],
            a["clients"] * (a["requests_per_client"] + a["warmup_requests"]))
    ok = r[status == "ok"]
    m.equal(where, "chunks of an ok request", set(ok["chunks"].tolist()), {a["chunks"]})
    m.equal(where, "bytes of an ok request", set(ok["bytes"].tolist()),
            {a["chunks"] * a["chunk_bytes"]})
    # Headline rows: one per request, start to done; bit 13 its time to first byte.
    s = t["samples"]
    flags = s["flags"].astype(np.int64)
    whole = s[(flags & AUXILIARY) == 0]
    m.equal(where, "request durations", sorted((whole["t_done_ns"] - whole["t_post_ns"]).tolist()),
            sorted((ok["t_done_ns"] - ok["t_start_ns"]).tolist()))
    ttfb = s[(flags & (1 << 13)) != 0]
    m.equal(where, "first-byte durations", sorted((ttfb["t_done_ns"] - ttfb["t_post_ns"]).tolist()),
            sorted(ok["ttfb_ns"].tolist()))


def kind_mix(where, a, t, m):
    s = t["samples"]
    flags = s["flags"].astype(np.int64)
    classes = t["mix_classes"]
    m.equal(where, "classes", a["classes"].split(","),
            list(dict.fromkeys(_text(c) for c in classes["class"])))
    for row in classes:
        cls, phase = _text(row["class"]), _text(row["phase"])
        w = f"{where}/mix_classes {cls} {phase}"
        code = MIX_CLASSES.index(cls) + 1
        mine = (((flags & MIX_CLASS_MASK) >> MIX_CLASS_SHIFT) == code) \
            & ((flags & AUXILIARY) == 0) \
            & (((flags & MIX_TOGETHER) != 0) == (phase == "together"))
        rows = s[mine]
        st = stats_of((rows["t_done_ns"] - rows["t_post_ns"]).astype(np.float64))
        m.equal(w, "samples", int(row["samples"]), st["count"])
        m.equal(w, "ranks", int(row["ranks"]), len(set(rows["rank"].tolist())))
        for key in ("mean", "p50", "p99", "max"):
            m.close(w, f"{key}_ns", row[f"{key}_ns"], st[key])
        if len(rows):
            m.equal(w, "bytes", int(row["bytes"]), int(rows["bytes"].max()))
            m.equal(w, "span_ns", int(row["span_ns"]),
                    int(rows["t_done_ns"].max() - rows["t_post_ns"].min()))
        if phase == "together":
            iso = classes[(classes["class"] == row["class"]) & (classes["phase"] == b"isolated")][0]
            m.close(w, "inflation_mean", row["inflation_mean"], row["mean_ns"] / iso["mean_ns"])
            m.close(w, "inflation_p99", row["inflation_p99"], row["p99_ns"] / iso["p99_ns"])
            m.attr(where, a, f"inflation_mean_{cls}", row["mean_ns"] / iso["mean_ns"])
            m.attr(where, a, f"inflation_p99_{cls}", row["p99_ns"] / iso["p99_ns"])


def kind_reference(where, a, t, m):
    if a["status"] == "skipped":
        return
    # reference_gbps: the tool's bandwidth in MiB/s, in GB/s (10^9 B/s).
    if not math.isnan(a["reference_bandwidth_mibps"]):
        m.attr(where, a, "reference_gbps", a["reference_bandwidth_mibps"] * 2 ** 20 / 1e9)
    m.equal(where, "reference_iterations", a["reference_iterations"], a["iterations"])
    out = a["reference_output"]
    for figure in ("reference_median_us", "reference_average_us"):
        if not math.isnan(a[figure]) and f"{a[figure]:.3f}" not in out:
            m.found.append(f"{where} {figure} {a[figure]} is not in the tool's output")


def _expected_seconds(basis):
    """'... = 4.096 us x 2^14 x (7 + 1) = 0.5369 s': the product the basis text states."""
    found = re.search(r"([\d.]+) us x 2\^(\d+) x \((\d+) \+ 1\)", basis)
    return None if not found else \
        float(found[1]) * 1e-6 * 2 ** int(found[2]) * (int(found[3]) + 1)


def kind_fault(where, a, t, m):
    """From the drill's events (global clock) and samples: docs/file-format.md, `fault`."""
    s, e = t["samples"], t["events"]
    kinds = np.array([_text(k) for k in e["kind"]])
    victim, client = a["victim_rank"], int(a["canaries"].split(",")[0])
    m.equal(where, "completed", a["completed"], len(s))
    m.equal(where, "rerouted", a["rerouted"], int((kinds == "rerouted").sum()))
    after_ms = (e["t_ns"].astype(np.int64) - a["fault_ns"]) / 1e6
    detected = kinds == "detected"
    of_victim = detected & (e["peer"] == victim)
    mine = of_victim & (e["rank"] == client)
    if mine.any():
        m.attr(where, a, "detection_ms", after_ms[mine][0])
    recovered = (kinds == "recovered") & (e["rank"] == client)
    if recovered.any():
        m.attr(where, a, "recovered_ms", after_ms[recovered][0])
    # A detection of the victim before the fault, or of a live peer, is a false loss.
    in_time = of_victim & (after_ms >= 0)
    m.equal(where, "false_losses", a["false_losses"],
            int((detected & ~in_time).sum()))
    m.equal(where, "survivors_detected", a["survivors_detected"],
            len(set(e["rank"][in_time].tolist())))
    if in_time.any():
        m.attr(where, a, "detection_max_ms", after_ms[in_time].max())
    for name in ("expected_nccl_ib", "expected_verbs_qp"):
        if f"{name}_basis" in a and _expected_seconds(a[f"{name}_basis"]) is not None:
            m.attr(where, a, f"{name}_s", _expected_seconds(a[f"{name}_basis"]))


def kind_p2p(where, a, t, m):
    # latency, bandwidth, bibw: per-sample bytes as docs/file-format.md says.
    s = t["samples"]
    factor = 2 if a["kind"] == "bibw" else 1
    head = s[(s["flags"].astype(np.int64) & AUXILIARY) == 0]
    if len(head):
        m.equal(where, "samples' bytes", set(head["bytes"].tolist()),
                {factor * a["window"] * a["bytes"]})


def kind_example(where, a, t, m):
    """The token ring: one sample per hop on its sender (docs/file-format.md, `example`)."""
    s = t["samples"]
    ns = (s["t_done_ns"] - s["t_post_ns"]).astype(np.float64)
    senders = sorted(set(s["rank"].tolist()))
    m.equal(where, "ring_ranks", a["ring_ranks"], len(senders))
    m.attr(where, a, "hop_p50_ns", stats_of(ns)["p50"])
    p50 = {r: stats_of(ns[s["rank"] == r])["p50"] for r in senders}
    slowest = max(senders, key=lambda r: p50[r])  # the first of equal ones, as the kind
    m.equal(where, "slowest_hop_rank", a["slowest_hop_rank"], slowest)
    m.attr(where, a, "slowest_hop_p50_ns", p50[slowest])


KIND_CHECKS = {
    "latency": kind_p2p, "bandwidth": kind_p2p, "bibw": kind_p2p,
    "allreduce": kind_allreduce, "alltoall": kind_alltoall, "incast": kind_incast,
    "kvpush": kind_kvpush, "api": kind_api, "mix": kind_mix, "reference": kind_reference,
    "fault": kind_fault, "example": kind_example,
}


def mismatches(path):
    """(instances recomputed, every figure of the file that differs from its raw rows)."""
    m = Mismatches()
    instances = list(_instances(path))
    by_index = {a["index"]: (a, t) for _, a, t in instances}
    checked = 0
    for where, a, t in instances:
        if a["status"] not in ("passed", "failed"):
            continue
        check_headline(where, a, t, m)
        check_summary_rows(where, a, t, m)
        check_batch(where, a, t, m)
        check_pair_matrix(where, a, t, m)
        check_counters(where, a, t, m)
        check_impact(where, a, t, m, by_index)
        KIND_CHECKS[a["kind"]](where, a, t, m)
        checked += 1
    return checked, m.found


def main(paths):
    bad = 0
    for path in paths:
        checked, found = mismatches(path)
        for line in found if checked else [f"{path}: no instance passed or failed"]:
            print(f"recompute: {line}", file=sys.stderr)
        bad += bool(found) or not checked
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
