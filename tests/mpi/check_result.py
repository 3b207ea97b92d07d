#!/usr/bin/python3
"""Checks a fabscope result file's structure and contents (used by the MPI tests).

usage: check_result.py FILE NRANKS [--mode parallel|serial-gather] [--transport NAME]
Exits 1 with a message naming what is wrong.
"""
import argparse
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import recompute  # noqa: E402  (every derived figure, recomputed from the raw rows)

CONTROL_PAIR = 1 << 10  # sample flag: a serial retest's control pair
SECOND_VISIT = 1 << 15  # sample flag: a serial retest's second visit of a retested pair
REVISIT_GAP_NS = 100_000_000  # kRevisitGapNs: a second visit starts this long after the first
# kind: (sample_divisor, messages per sample per window slot; 0: one message, no window)
P2P_SAMPLE = {"latency": (2, 0), "bandwidth": (1, 1), "bibw": (1, 2)}


def fail(msg):
    print(f"check_result: {msg}", file=sys.stderr)
    sys.exit(1)


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


ap = argparse.ArgumentParser()
ap.add_argument("file")
ap.add_argument("nranks", type=int)
ap.add_argument("--mode")
ap.add_argument("--transport", default="mpi")
a = ap.parse_args()

with h5py.File(a.file, "r") as f:
    at = f.attrs
    if text(at["format"]) != "fabscope" or int(at["format_version"]) != 1:
        fail("format/format_version wrong")
    if int(at["complete"]) != 1 or int(at["exit_code"]) != 0:
        fail(f"complete={at['complete']} exit_code={at['exit_code']}")
    # Every instance must pass below, so none missed its deadline or was left unrun.
    if int(at["missed_deadlines"]) != 0 or int(at["not_run_after_missed_deadlines"]) != 0:
        fail(f"missed_deadlines={at['missed_deadlines']} not_run_after_missed_deadlines="
             f"{at['not_run_after_missed_deadlines']} in a run whose every instance passed")
    if int(at["nranks"]) != a.nranks:
        fail(f"nranks {at['nranks']} != {a.nranks}")
    if a.mode and text(at["hdf5_mode"]) != a.mode:
        fail(f"hdf5_mode {text(at['hdf5_mode'])} != {a.mode}")
    for key in ("run_id", "started_utc", "finished_utc", "command_line", "scenario_text", "tool_version"):
        if not text(at[key]):
            fail(f"root attribute {key} is empty")
    ranks = f["ranks"][()]
    if sorted(ranks["rank"].tolist()) != list(range(a.nranks)):
        fail(f"/ranks rows {ranks['rank'].tolist()}")
    if any(not text(h) for h in ranks["host"]):
        fail("a rank without host")
    if np.any(ranks["clock_uncertainty_ns"] < 0):
        fail("negative clock uncertainty")
    uncertainty = {int(r): int(u) for r, u in zip(ranks["rank"], ranks["clock_uncertainty_ns"])}
    tests = f["tests"]
    if len(tests) == 0:
        fail("no test instances")
    for name in sorted(tests):
        g = tests[name]
        ga = g.attrs
        where = f"/tests/{name} ({text(ga['case'])})"
        if text(ga["status"]) != "passed":
            fail(f"{where}: status {text(ga['status'])}: {text(ga['error'])}")
        if text(ga["transport"]) != a.transport:
            fail(f"{where}: transport {text(ga['transport'])}")
        s = g["samples"][()]
        if len(s) == 0:
            fail(f"{where}: no samples")
        took = s["t_done_ns"].astype(np.int64) - s["t_post_ns"].astype(np.int64)
        # A KV request starts on its prefill rank's clock and ends on its decode rank's:
        # the two ranks' recorded clock uncertainty is its slack (on a loaded machine a
        # transfer of a few ms can come out shorter than the clocks' disagreement).
        # Every other kind times a sample on one rank's clock: no slack.
        slack = np.zeros(len(s), dtype=np.int64)
        if text(ga["kind"]) == "kvpush":
            slack = np.array([uncertainty.get(int(r), 0) + uncertainty.get(int(p), 0)
                              for r, p in zip(s["rank"], s["peer"])], dtype=np.int64)
        if np.any(took + slack <= 0):
            worst = int(np.argmin(took + slack))
            fail(f"{where}: a sample ends before it starts ({int(took[worst])} ns, clock slack "
                 f"{int(slack[worst])} ns, rank {int(s['rank'][worst])} peer {int(s['peer'][worst])})")
        # A serial retest's control pairs carry flag bit 10 (the reference, not headline),
        # its second visits of the retested pairs bit 15 (not headline either).
        allowed = CONTROL_PAIR | SECOND_VISIT if text(ga["pass"]) == "serial-retest" else 0
        if np.any(s["bytes"] <= 0) or np.any((s["flags"] & ~np.uint32(allowed)) != 0):
            fail(f"{where}: bad bytes or flags")
        if text(ga["pass"]) == "serial-retest":
            control = (s["flags"] & CONTROL_PAIR) != 0
            second = (s["flags"] & SECOND_VISIT) != 0
            first = ~control & ~second
            # as many control pairs as retested ones and at least 10, where enough
            # pairs were left
            retested = {(int(r), int(p)) for r, p in zip(s["rank"][first], s["peer"][first])}
            controls = {(int(r), int(p)) for r, p in zip(s["rank"][control], s["peer"][control])}
            if retested & controls or len(controls) > max(len(retested), 10):
                fail(f"{where}: control pairs {sorted(controls)} against retested {sorted(retested)}")
            # each retested pair visited again, after every other pair and the gap
            again = {(int(r), int(p)) for r, p in zip(s["rank"][second], s["peer"][second])}
            if again != retested or np.any(control & second):
                fail(f"{where}: second visits of {sorted(again)}, retested {sorted(retested)}")
            for r, p in retested:
                mine = (s["rank"] == r) & (s["peer"] == p)
                gap = int(s["t_post_ns"][mine & second].min()) - int(s["t_done_ns"][mine & first].max())
                if gap < REVISIT_GAP_NS:
                    fail(f"{where}: pair {r}->{p} visited again {gap} ns after its first visit")
            s = s[first]  # the headline: what the attributes and /summary describe
        # What one sample is, per point-to-point kind: a latency sample is a round
        # trip of one message, halved (sample_divisor 2, as osu_latency); a bandwidth
        # sample is a whole window; a bibw sample is a window each way.
        kind = text(ga["kind"])
        if kind in P2P_SAMPLE:
            divisor, messages = P2P_SAMPLE[kind]
            expected = int(ga["bytes"]) * (messages * int(ga["window"]) if messages else 1)
            if int(ga["sample_divisor"]) != divisor:
                fail(f"{where}: sample_divisor {int(ga['sample_divisor'])}, a {kind} sample's is {divisor}")
            if np.any(s["bytes"] != expected):
                fail(f"{where}: sample bytes {sorted(set(s['bytes'].tolist()))}, expected {expected} "
                     f"({kind}, {int(ga['bytes'])} bytes, window {int(ga['window'])})")
        if np.any((s["peer"] < 0) | (s["peer"] >= a.nranks) | (s["peer"] == s["rank"])):
            fail(f"{where}: bad peer")
        # A sample sits on the global clock through its rank's offset, known to the rank's
        # recorded uncertainty: that is its slack against the instance's span (on a loaded
        # machine the offsets of ranks on one host are estimates too).
        own = np.array([uncertainty.get(int(r), 0) for r in s["rank"]], dtype=np.int64)
        early = int(ga["t_start_ns"]) - (s["t_post_ns"].astype(np.int64) + own)
        late = (s["t_done_ns"].astype(np.int64) - own) - int(ga["t_end_ns"])
        if early.max() > 0 or late.max() > 0:
            worst = int(np.argmax(np.maximum(early, late)))
            fail(f"{where}: samples outside the instance's time span by {int(max(early.max(), late.max()))} ns "
                 f"beyond their ranks' clock uncertainty (rank {int(s['rank'][worst])}, uncertainty "
                 f"{int(own[worst])} ns): global clock broken?")
        iters = int(ga["iterations"])
        per_rank = {}
        for r in s["rank"]:
            per_rank[int(r)] = per_rank.get(int(r), 0) + 1
        if any(c % iters for c in per_rank.values()):
            fail(f"{where}: sample counts {per_rank} are not multiples of {iters} iterations")
        pattern, pas = text(ga["pattern"]), text(ga["pass"])
        if pattern == "pairs" and pas == "parallel":
            # the first half of the test's ranks measure (the canaries' under neighbour load)
            members = [int(x) for x in text(ga["canaries"]).split(",") if x] or list(range(a.nranks))
            measuring = members[:len(members) // 2]
            if sorted(per_rank) != measuring or set(per_rank.values()) != {iters}:
                fail(f"{where}: pairs pattern expects ranks {measuring} with {iters} samples each, got {per_rank}")
        if pattern == "all-pairs" and pas == "parallel":
            pairs = {(int(r), int(p)) for r, p in zip(s["rank"], s["peer"])}
            kind = text(ga["kind"])
            want = a.nranks * (a.nranks - 1) // (1 if kind == "bandwidth" else 2)
            if len(pairs) != want:
                fail(f"{where}: all-pairs measured {len(pairs)} pairs, expected {want}")
            m = g["pair_matrix"][()]
            if m.shape != (a.nranks, a.nranks) or not np.all(np.isnan(np.diag(m))):
                fail(f"{where}: pair_matrix shape {m.shape} or diagonal wrong")
        if pas == "serial-retest":
            if int(ga["retest_of"]) < 0:
                fail(f"{where}: serial-retest without retest_of")
        summ = g["summary"][()]
        if sorted(summ["rank"].tolist()) != sorted(per_rank):
            fail(f"{where}: summary ranks {summ['rank'].tolist()} != sampled ranks {sorted(per_rank)}")
        # Without site labels there is one site scope: no scope names, no /scopes table.
        if not any(text(x) for x in f["ranks"]["site"]):
            if any(text(x) for x in summ["scope"]) or "scopes" in g or "site_scopes" in ga:
                fail(f"{where}: site scopes in a run without site labels")
checked, found = recompute.mismatches(a.file)
if found:
    fail(f"{len(found)} figure(s) differ from the raw rows:\n  " + "\n  ".join(found))
print(f"check_result: {a.file}: ok ({checked} instances' figures recomputed)")
