#!/usr/bin/python3
"""Checks the kvpush tests of a fabscope result file (used by tests/mpi/kv_push.sh
and tests/system/kv_emulated.sh).

usage: kv_check.py FILE --prefill P --decode D [--directions push,pull] [--expect-corrupt]
Every kvpush test must hold a requests table with prefill x requests_per_prefill
rows, one sample per request, times in order, every request verified, the
direction column equal to the test's `direction` attribute; --directions: the
file must hold exactly these directions, each with every strategy; with
--expect-corrupt (fabscope run --self-test kv-corrupt), every test must have failed
on exactly one request: prefill rank 0's first measured one; with --expect-corrupt P:K
(--self-test kv-corrupt=P:K), on prefill rank P's request K (warm-up requests counted
from 0): the error names it and, when K is a measured request, it is the one
unverified row (a warm-up request has no row).
"""
import argparse
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import recompute  # noqa: E402  (every derived figure, recomputed from the raw rows)


def fail(msg):
    print(f"kv_check: {msg}", file=sys.stderr)
    sys.exit(1)


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


ap = argparse.ArgumentParser()
ap.add_argument("file")
ap.add_argument("--prefill", type=int, required=True)
ap.add_argument("--decode", type=int, required=True)
ap.add_argument("--directions", help="comma-separated directions the file must hold, each with every strategy")
ap.add_argument("--expect-corrupt", nargs="?", const="first", metavar="P:K")
a = ap.parse_args()

with h5py.File(a.file, "r") as f:
    uncertainty = {int(r): int(u) for r, u in zip(f["ranks"]["rank"], f["ranks"]["clock_uncertainty_ns"])}
    groups = [g for g in f["tests"].values() if text(g.attrs["kind"]) == "kvpush"]
    if not groups:
        fail("no kvpush test in the file")
    strategies = set()
    combinations = set()
    for i, g in enumerate(groups):
        name = g.name
        at = g.attrs
        if "requests" not in g:
            fail(f"{name}: no requests table")
        r = g["requests"][()]
        s = g["samples"][()]
        n = a.prefill * int(at["requests_per_prefill"])
        if len(r) != n or len(s) != n:
            fail(f"{name}: {len(r)} request rows and {len(s)} samples, expected {n}")
        if int(at["prefill_ranks"]) != a.prefill or int(at["decode_ranks"]) != a.decode:
            fail(f"{name}: roles {at['prefill_ranks']} -> {at['decode_ranks']}")
        if sorted(set(r["prefill_rank"].tolist())) != list(range(a.prefill)):
            fail(f"{name}: prefill ranks {sorted(set(r['prefill_rank'].tolist()))}")
        if sorted(set(r["decode_rank"].tolist())) != list(range(a.prefill, a.prefill + a.decode)):
            fail(f"{name}: decode ranks {sorted(set(r['decode_rank'].tolist()))}")
        if len(set(r["request_id"].tolist())) != n:
            fail(f"{name}: request ids repeat")
        if np.any(r["bytes"] != int(at["bytes"])) or np.any(r["blocks"] != int(at["blocks_per_request"])):
            fail(f"{name}: bytes or blocks differ from the instance")
        # Arrival and start are the prefill rank's clock; done is the decode rank's, so
        # start < done holds up to both ranks' recorded clock uncertainty.
        slack = np.array([uncertainty[int(p)] + uncertainty[int(d)]
                          for p, d in zip(r["prefill_rank"], r["decode_rank"])], dtype=np.int64)
        took = r["t_done_ns"].astype(np.int64) - r["t_start_ns"].astype(np.int64)
        if np.any(r["t_start_ns"] < r["t_arrival_ns"]) or np.any(took + slack <= 0):
            worst = int(np.argmin(took + slack))
            fail(f"{name}: arrival <= start < done does not hold (start to done {int(took[worst])} ns, "
                 f"clock slack {int(slack[worst])} ns)")
        if not np.array_equal(np.sort(s["t_post_ns"]), np.sort(r["t_start_ns"])) or \
           not np.array_equal(np.sort(s["t_done_ns"]), np.sort(r["t_done_ns"])):
            fail(f"{name}: samples and request rows disagree")
        strategy = text(at["strategy"])
        strategies.add(strategy)
        if any(text(x) != strategy for x in r["strategy"]):
            fail(f"{name}: strategy column differs from attribute {strategy}")
        direction = text(at["direction"])
        if direction not in ("push", "push-put", "pull"):
            fail(f"{name}: direction attribute {direction!r}")
        if any(text(x) != direction for x in r["direction"]):
            fail(f"{name}: direction column {sorted(set(text(x) for x in r['direction']))} differs from attribute {direction}")
        if int(at["one_sided"]) != (direction != "push"):
            fail(f"{name}: one_sided {at['one_sided']} for direction {direction}")
        combinations.add((direction, strategy))
        # staged: one contiguous message a request; per-block and layer-stream: one a block,
        # layer and plane (a whole multiple of the blocks).
        per_request = int(at["messages_per_request"])
        if np.any(r["messages"] != per_request):
            fail(f"{name}: request rows' messages {sorted(set(r['messages'].tolist()))} differ from {per_request}")
        blocks = int(at["blocks_per_request"])
        if (strategy == "staged" and per_request != 1) or \
           (strategy != "staged" and (per_request < blocks or per_request % blocks != 0)):
            fail(f"{name}: {per_request} messages a request of {blocks} blocks for strategy {strategy}")
        if strategy == "staged" and (np.any(r["gather_ns"] <= 0) or np.any(r["scatter_ns"] <= 0)):
            fail(f"{name}: staged requests without gather/scatter times")
        if strategy != "staged" and (np.any(r["gather_ns"] != 0) or np.any(r["scatter_ns"] != 0)):
            fail(f"{name}: gather/scatter times on a {strategy} request")
        memory = text(at["memory"])
        path = text(at["memory_path"])
        # Device memory crosses through pinned host staging (copies timed)
        # unless the transport addresses it directly (gpu-direct: no copies).
        if memory == "cuda" and path != "gpu-direct" and np.any(r["copy_ns"] <= 0):
            fail(f"{name}: memory cuda via {path} without host<->device copy times")
        if (memory != "cuda" or path == "gpu-direct") and np.any(r["copy_ns"] != 0):
            fail(f"{name}: copy times on {memory} memory ({path})")
        if not float(at["kv_gbps_aggregate"]) > 0:
            fail(f"{name}: kv_gbps_aggregate {at['kv_gbps_aggregate']}")
        bad = r[r["verified"] == 0]
        if a.expect_corrupt:
            if text(at["status"]) != "failed" or "expected" not in text(at["error"]):
                fail(f"{name}: status {text(at['status'])!r}, error {text(at['error'])!r}; the corruption was not reported")
            warmup = int(at["warmup_requests"])
            if a.expect_corrupt == "first":
                prefill, index = 0, warmup
            else:
                prefill, index = (int(x) for x in a.expect_corrupt.split(":"))
            # Request ids: prefill index x (warm-up + measured requests) + the request's index.
            spoiled = prefill * (warmup + int(at["requests_per_prefill"])) + index
            if f"request {spoiled} from prefill rank {prefill} " not in text(at["error"]):
                fail(f"{name}: error {text(at['error'])!r} does not name request {spoiled} from prefill rank {prefill}")
            expected_bad = [spoiled] if index >= warmup else []
            if bad["request_id"].tolist() != expected_bad:
                fail(f"{name}: unverified requests {bad['request_id'].tolist()}, expected {expected_bad}")
            continue
        if text(at["status"]) != "passed":
            fail(f"{name}: status {text(at['status'])}: {text(at['error'])}")
        if len(bad) or int(at["requests_verified"]) != n:
            fail(f"{name}: {len(bad)} requests not verified")
    # the KV push's rates, means and counts (and every other derived figure) from its rows
    checked, found = recompute.mismatches(a.file)
    if found:
        fail(f"{len(found)} figure(s) differ from the raw rows:\n  " + "\n  ".join(found))
    if a.directions:
        wanted = {(d, st) for d in a.directions.split(",") for st in ("per-block", "staged", "layer-stream")}
        if combinations != wanted:
            fail(f"direction x strategy: missing {sorted(wanted - combinations)}, unexpected {sorted(combinations - wanted)}")
    print(f"kv_check: {len(groups)} kvpush tests ({', '.join(sorted(strategies))}; "
          f"{', '.join(sorted({d for d, _ in combinations}))}), "
          f"{a.prefill} prefill -> {a.decode} decode, every request accounted for")
