"""Synthetic result files for the serving-fit tests: TP all-reduces, MoE rounds and KV
requests per neighbour condition, with known distributions."""

import numpy as np

from synthetic import SAMPLE_DTYPE, SyntheticRun
from test_impact import REQUEST_DTYPE, allreduce_samples

from fabscope_analysis import models

LLAMA70 = models.preset("llama3-70b")
AR_512K = 32 * 8192 * 2
KV_320M = 320 << 20


def add_kv(run, transfer_ns, queue_ns, condition="quiet", nbytes=KV_320M, strategy="staged",
           quiet_index=None, prefill=0, decode=1, messages=1, gather_ns=0):
    """prefill, decode: the ranks of every request, or one rank for all."""
    n = len(transfer_ns)
    req = np.zeros(n, dtype=REQUEST_DTYPE)
    samples = np.zeros(n, dtype=SAMPLE_DTYPE)
    prefill, decode = (np.broadcast_to(np.asarray(r), (n,)) for r in (prefill, decode))
    t = run.start_ns()
    for i in range(n):
        start = t + int(queue_ns[i])
        done = start + int(transfer_ns[i])
        req[i] = (i, prefill[i], decode[i], nbytes, messages, messages, t, start, done, gather_ns,
                  0, 0, strategy.encode(), b"push", 1)
        samples[i] = (decode[i], i, prefill[i], nbytes, start, done, 0, 0)
        t = done + 1000
    idx = run.add_test(f"kv-{strategy}", "kvpush", samples, nbytes=nbytes, condition=condition,
                       case=f"kv-{strategy}/{nbytes}", metric="bandwidth", quiet_index=quiet_index,
                       extra_attrs={"strategy": strategy, "direction": "push",
                                    "memory_path": "host", "loop": "closed",
                                    "prompt_tokens": np.int64(8192)})
    run.file["tests"][f"{idx:04d}"].create_dataset("requests", data=req)
    return idx


API_REQUEST_DTYPE = np.dtype([("status", "S16"), ("connect_ns", "<i8"), ("ttfb_ns", "<i8")])


def add_api(run, ttfb_ns, service_s, condition="quiet"):
    """A front-end api test: every request answered, its first byte after ttfb_ns (which
    holds the server's own service_s)."""
    requests = np.zeros(len(ttfb_ns), dtype=API_REQUEST_DTYPE)
    requests["status"], requests["connect_ns"], requests["ttfb_ns"] = b"ok", 1_000_000, ttfb_ns
    samples = np.zeros(1, dtype=SAMPLE_DTYPE)
    samples[0] = (0, 0, 1, 512, run.start_ns(), run.start_ns() + 1_000_000, 0, 0)
    idx = run.add_test("front", "api", samples, nbytes=512, condition=condition,
                       extra_attrs={"service_time_s": service_s, "network": "lan",
                                    "interface": "eth0"})
    run.file["tests"][f"{idx:04d}"].create_dataset("api_requests", data=requests)
    return idx


def add_collective(run, kind, times, nbytes, condition, quiet_index=None, extra=None,
                   name=None):
    s = allreduce_samples(times, (0, 1), start=run.start_ns())
    s["bytes"] = nbytes
    name = name or ("tp-allreduce" if kind == "allreduce" else "moe")
    return run.add_test(name, kind, s, nbytes=nbytes, condition=condition,
                        case=f"{name}/{nbytes}", quiet_index=quiet_index, extra_attrs=extra)


def add_prefill(run, rng, spec, iterations, loaded, chunk, tp_us, moe_us=None):
    """A prefill chunk's TP all-reduce (and MoE normal round, DeepEP normal) per condition,
    times lognormal around tp_us / moe_us, scaled as the decode ones under load."""
    token = models.moe_dispatch_bytes_per_token(spec, "fp8") if spec.moe else 0
    for kind, us, nbytes, extra in (
            ("allreduce", tp_us, models.allreduce_bytes(spec, chunk), None),
            ("alltoall", moe_us, chunk * token,
             {"dispatch_token_bytes": np.int64(token), "tokens_per_rank": np.int64(chunk)})):
        if us is None:
            continue
        q = add_collective(run, kind, us * 1e3 * rng.lognormal(0, 0.1, iterations), nbytes,
                           "quiet", extra=extra)
        for condition, factor in loaded:
            add_collective(run, kind, factor * us * 1e3 * rng.lognormal(0, 0.1, iterations),
                           nbytes, condition, q, extra=extra)


def serving_file(path, *, seed=1, tp_us=20.0, tp_loaded=(("incast", 1.3),), kv_ms=40.0,
                 kv_loaded=(("incast", 1.2),), requests=300, iterations=48_000,
                 model="llama3-70b", moe_us=None, inventory=None, prefill=None, api_ms=None):
    """A run with the deployment's sizes: all-reduce per-iteration times lognormal around
    tp_us (times factor per loaded condition), KV requests around kv_ms; with api_ms, a
    front end whose first byte comes api_ms after its 10 ms of service, quiet only."""
    rng = np.random.default_rng(seed)
    run = SyntheticRun(path, nranks=4)
    run.file.attrs["scenario_text"] = f"name: s\nmodel: {model}\nparallel: {{tp: 8}}\n"
    spec = models.preset(model)
    ar = models.allreduce_bytes(spec, 32)
    quiet = add_collective(run, "allreduce", tp_us * 1e3 * rng.lognormal(0, 0.1, iterations),
                           ar, "quiet")
    for condition, factor in tp_loaded:
        add_collective(run, "allreduce", factor * tp_us * 1e3 * rng.lognormal(0, 0.1, iterations),
                       ar, condition, quiet)
    if moe_us is not None:
        token = models.moe_dispatch_bytes_per_token(spec, "fp8")
        extra = {"dispatch_token_bytes": np.int64(token), "tokens_per_rank": np.int64(32)}
        q = add_collective(run, "alltoall", moe_us * 1e3 * rng.lognormal(0, 0.1, iterations),
                           32 * token, "quiet", extra=extra)
        for condition, factor in tp_loaded:
            add_collective(run, "alltoall",
                           factor * moe_us * 1e3 * rng.lognormal(0, 0.1, iterations),
                           32 * token, condition, q, extra=extra)
    if prefill is not None:
        add_prefill(run, rng, spec, iterations, tp_loaded, **prefill)
    kv_bytes = models.kv_request_bytes(spec, 8, 16, 8192)
    q = add_kv(run, kv_ms * 1e6 * rng.lognormal(0, 0.05, requests), np.full(requests, 1e5),
               nbytes=kv_bytes)
    for condition, factor in kv_loaded:
        add_kv(run, factor * kv_ms * 1e6 * rng.lognormal(0, 0.05, requests),
               np.full(requests, 1e5), condition, nbytes=kv_bytes, quiet_index=q)
    if api_ms is not None:
        add_api(run, np.full(requests, int((10 + api_ms) * 1e6)), 0.010)
    if inventory:
        from synthetic import write_host_inventory
        write_host_inventory(run.file, inventory)
    run.close()
    return str(path)


def reopened(run):
    """A closed SyntheticRun opened again to add instances (e.g. to write_matrix_run's file)."""
    import h5py
    run.file = h5py.File(run.path, "a")
    run.next_index = len(run.file["tests"])
    return run
