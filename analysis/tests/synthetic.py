"""Writes small fabscope result files exactly as docs/file-format.md (version 1) says.

Used by the tests to plant known defects (a slow pair, a slow rank, a crash) and edge
cases (incomplete file, unknown version, empty test) where the answer is known.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import h5py
import numpy as np

SAMPLE_DTYPE = np.dtype([("rank", "<i4"), ("iter", "<i4"), ("peer", "<i4"), ("bytes", "<i8"),
                         ("t_post_ns", "<i8"), ("t_done_ns", "<i8"), ("flags", "<u4"),
                         ("level", "u1")])
SUMMARY_DTYPE = np.dtype([("rank", "<i4"), ("samples", "<i8"), ("min_ns", "<f8"),
                          ("mean_ns", "<f8"), ("p50_ns", "<f8"), ("p99_ns", "<f8"),
                          ("p999_ns", "<f8"), ("max_ns", "<f8"), ("bytes", "<i8"),
                          ("errors", "<i8")])
RANK_DTYPE = np.dtype([("rank", "<i4"), ("host", "S64"), ("local_rank", "<i4"),
                       ("local_size", "<i4"), ("pid", "<i4"), ("gpu", "<i4"), ("nic", "S32"),
                       ("clock_offset_ns", "<i8"), ("clock_uncertainty_ns", "<i8")])
# Since site labels: /ranks also has site, pod and leaf (str[32]).
RANK_DTYPE_SITES = np.dtype(RANK_DTYPE.descr + [("site", "S32"), ("pod", "S32"),
                                                ("leaf", "S32")])
EVENT_DTYPE = np.dtype([("rank", "<i4"), ("t_ns", "<i8"), ("kind", "S32"), ("peer", "<i4"),
                        ("detail", "S160")])
COUNTER_DTYPE = np.dtype([("rank", "<i4"), ("source", "S64"), ("name", "S64"),
                          ("before", "<i8"), ("after", "<i8"), ("delta", "<i8")])
VALIDITY_DTYPE = np.dtype([("host", "S64"), ("what", "S32"), ("value", "<f8"), ("limit", "<f8"),
                           ("effect", "S512")])

T0 = 1_000_000_000_000  # global clock at run start (ns)


def make_samples(entries: Iterable[Tuple[int, int, int, int, float]], start_ns: int,
                 gap_ns: int = 1000, flags: Optional[Dict[Tuple[int, int], int]] = None,
                 levels: Optional[Dict[Tuple[int, int], int]] = None) -> np.ndarray:
    """entries: (rank, iter, peer, bytes, duration_ns) -> samples table.

    Each rank's operations follow each other with gap_ns between them; ``levels``
    gives the topology level of a (rank, peer) pair (samples.level, 0 otherwise).
    """
    entries = list(entries)
    out = np.zeros(len(entries), dtype=SAMPLE_DTYPE)
    clock: Dict[int, int] = {}
    for i, (rank, it, peer, nbytes, duration) in enumerate(entries):
        t = clock.get(rank, start_ns)
        d = max(int(round(duration)), 1)
        out[i] = (rank, it, peer, nbytes, t, t + d, (flags or {}).get((rank, it), 0),
                  (levels or {}).get((rank, peer), 0))
        clock[rank] = t + d + gap_ns
    return out


def latency_entries(pairs: Sequence[Tuple[int, int]], iterations: int, base_ns: float,
                    rng: np.random.Generator, nbytes: int = 8, divisor: int = 2,
                    slow_ranks: Dict[int, float] = None, jitter: float = 0.05):
    """Ping-pong round trips (durations include the divisor) measured by pair[0]."""
    for rank, peer in pairs:
        factor = (slow_ranks or {}).get(rank, 1.0)
        noise = rng.lognormal(0.0, jitter, iterations)
        for it in range(iterations):
            yield rank, it, peer, nbytes, base_ns * divisor * factor * noise[it]


def bandwidth_entries(pairs: Sequence[Tuple[int, int]], iterations: int, nbytes: int,
                      gbps: float, rng: np.random.Generator,
                      slow_pairs: Dict[Tuple[int, int], float] = None, jitter: float = 0.03):
    for rank, peer in pairs:
        factor = (slow_pairs or {}).get((rank, peer), 1.0)
        noise = rng.lognormal(0.0, jitter, iterations)
        for it in range(iterations):
            yield rank, it, peer, nbytes, nbytes / (gbps * factor) * noise[it]


def write_host_inventory(file: h5py.File, inventory: Dict[str, Dict[str, object]]):
    """/hosts/<host>/inventory as the binary writes it (docs/file-format.md): a table
    of key str[96] and value str[256], values as text."""
    group = file.require_group("hosts")
    dtype = np.dtype([("key", "S96"), ("value", "S256")])
    for host, facts in inventory.items():
        g = group.require_group(host)
        data = np.array([(str(k).encode(), str(v).encode()) for k, v in facts.items()], dtype=dtype)
        g.create_dataset("inventory", data=data)


class SyntheticRun:
    def __init__(self, path, nranks: int = 4, ranks_per_host: int = 2, seed: int = 7,
                 format_version=1, fmt: str = "fabscope", sites: Optional[Dict[int, str]] = None):
        self.sites = sites  # rank -> site label; None: a /ranks table without site columns
        self.path = str(path)
        self.nranks = nranks
        self.ranks_per_host = ranks_per_host
        self.rng = np.random.default_rng(seed)
        self.format_version = format_version
        self.fmt = fmt
        self.file = h5py.File(self.path, "w")
        self.next_index = 0
        self.clock = T0 + 1_000_000
        self._write_root()
        self._write_ranks()
        self.file.create_group("tests")

    def host(self, rank: int) -> str:
        return f"fh{rank // self.ranks_per_host}"

    def _write_root(self):
        a = self.file.attrs
        a["format"] = self.fmt
        a["format_version"] = np.int64(self.format_version) if isinstance(
            self.format_version, int) else self.format_version
        a["tool_version"] = "0.1.0-synthetic"
        a["run_id"] = "synthetic-run"
        a["started_utc"] = "2025-01-01T00:00:00Z"
        a["finished_utc"] = ""
        a["complete"] = np.int64(0)
        a["exit_code"] = np.int64(-1)
        a["command_line"] = "fabscope run --scenario synthetic.yaml --output x.h5"
        a["scenario_name"] = "synthetic"
        a["scenario_file"] = "synthetic.yaml"
        a["scenario_text"] = "name: synthetic\n"
        a["overrides"] = ""
        a["nranks"] = np.int64(self.nranks)
        a["nhosts"] = np.int64((self.nranks + self.ranks_per_host - 1) // self.ranks_per_host)
        a["hdf5_mode"] = "serial-gather"
        a["epoch_offset_ns"] = np.int64(1_700_000_000_000_000_000 - T0)
        a["seed"] = np.int64(1)
        a["launch_preset"] = ""

    def _write_ranks(self):
        rows = np.zeros(self.nranks, dtype=RANK_DTYPE if self.sites is None else RANK_DTYPE_SITES)
        for r in range(self.nranks):
            row = (r, self.host(r).encode(), r % self.ranks_per_host, self.ranks_per_host,
                   1000 + r, -1, b"eth0", 0 if r == 0 else 1234 * r, 150)
            if self.sites is not None:
                site = self.sites.get(r, "")
                row += (site.encode(), f"{site}-pod".encode() if site else b"", b"")
            rows[r] = row
        self.file.create_dataset("ranks", data=rows)

    def add_validity(self, rows: Sequence[Tuple[str, str, float, float, str]],
                     waits_yield: int = 0):
        """/validity as the runner writes it (docs/file-format.md), and its root attributes."""
        data = np.zeros(len(rows), dtype=VALIDITY_DTYPE)
        for i, (host, what, value, limit, effect) in enumerate(rows):
            data[i] = (host.encode(), what.encode(), value, limit, effect.encode())
        self.file.create_dataset("validity", data=data)
        self.file.attrs["validity_findings"] = np.int64(len(rows))
        self.file.attrs["waits_yield"] = np.int64(waits_yield)

    def add_hosts(self, inventory: Dict[str, Dict[str, object]]):
        write_host_inventory(self.file, inventory)

    def add_host_table(self, host: str, name: str, rows: Sequence[Sequence[str]],
                       columns: Sequence[str]):
        """/hosts/<host>/<name>: a table of fixed-length strings (e.g. key/value inventory)."""
        group = self.file.require_group("hosts").require_group(host)
        dtype = np.dtype([(c, "S128") for c in columns])
        data = np.array([tuple(str(v).encode() for v in row) for row in rows], dtype=dtype)
        group.create_dataset(name, data=data)

    def add_test(self, name: str, kind: str, samples: np.ndarray, *, nbytes: int,
                 condition: str = "quiet", case: Optional[str] = None, metric: str = "latency",
                 divisor: int = 1, pattern: str = "pairs", pass_: str = "parallel",
                 status: str = "passed", error: str = "", window: int = 1,
                 events: Sequence[Tuple[int, int, str, int, str]] = (),
                 counters: Sequence[Tuple[int, str, str, int, int]] = (),
                 pair_matrix: Optional[np.ndarray] = None, transport: str = "mpi",
                 memory: str = "host", quiet_index: Optional[int] = None,
                 extra_attrs: Optional[Dict[str, object]] = None) -> int:
        index = self.next_index
        self.next_index += 1
        g = self.file["tests"].create_group(f"{index:04d}")
        t_start = self.clock
        if len(samples):
            t_end = int(samples["t_done_ns"].max()) + 1000
        else:
            t_end = t_start + 1000
        self.clock = t_end + 1_000_000
        a = g.attrs
        for key, value in (("index", np.int64(index)), ("name", name), ("kind", kind),
                           ("case", case or f"{name}/{nbytes}"), ("condition", condition),
                           ("transport", transport), ("memory", memory), ("pattern", pattern),
                           ("pass", pass_), ("bytes", np.int64(nbytes)),
                           ("window", np.int64(window)),
                           ("iterations", np.int64(int(samples["iter"].max()) + 1
                                                   if len(samples) else 0)),
                           ("warmup", np.int64(10)), ("timeout_s", 30.0), ("metric", metric),
                           ("sample_divisor", np.int64(divisor)), ("status", status),
                           ("error", error), ("t_start_ns", np.int64(t_start)),
                           ("t_end_ns", np.int64(t_end)),
                           ("retest_of", np.int64(-1))):
            a[key] = value
        lat = (samples["t_done_ns"] - samples["t_post_ns"]).astype(np.float64) / divisor
        stat = (lambda f: float(f(lat)) if len(lat) else float("nan"))
        a["p50_ns"] = stat(lambda x: np.percentile(x, 50))
        a["p99_ns"] = stat(lambda x: np.percentile(x, 99))
        a["p999_ns"] = stat(lambda x: np.percentile(x, 99.9))
        a["max_ns"] = stat(np.max)
        a["mean_ns"] = stat(np.mean)
        if metric == "bandwidth" and len(samples):
            dur = (samples["t_done_ns"] - samples["t_post_ns"]).astype(np.float64)
            a["gbps_p50"] = nbytes * window / np.percentile(dur, 50)
            a["gbps_p99"] = nbytes * window / np.percentile(dur, 99)
            a["gbps_mean"] = float(samples["bytes"].sum()) / float(dur.sum())
        else:
            a["gbps_p50"] = a["gbps_p99"] = a["gbps_mean"] = float("nan")
        for key, value in (extra_attrs or {}).items():
            a[key] = value
        if condition != "quiet" and quiet_index is not None:
            a["quiet_index"] = np.int64(quiet_index)
            a["impact_mean"] = float("nan")  # the analysis recomputes from samples
            a["impact_p99"] = float("nan")
        g.create_dataset("samples", data=samples, dtype=SAMPLE_DTYPE, maxshape=(None,))
        g.create_dataset("summary", data=self._summary(samples, divisor))
        if pair_matrix is not None:
            g.create_dataset("pair_matrix", data=np.asarray(pair_matrix, dtype=np.float64))
        if events:
            ev = np.zeros(len(events), dtype=EVENT_DTYPE)
            for i, (rank, dt, ekind, peer, detail) in enumerate(events):
                ev[i] = (rank, t_start + dt, ekind.encode(), peer, detail.encode())
            g.create_dataset("events", data=ev)
        if counters:
            ct = np.zeros(len(counters), dtype=COUNTER_DTYPE)
            for i, (rank, source, cname, before, after) in enumerate(counters):
                ct[i] = (rank, source.encode(), cname.encode(), before, after, after - before)
            g.create_dataset("counters", data=ct)
        self.file.flush()
        return index

    @staticmethod
    def _summary(samples: np.ndarray, divisor: int) -> np.ndarray:
        ranks = sorted(set(int(r) for r in samples["rank"]))
        out = np.zeros(len(ranks), dtype=SUMMARY_DTYPE)
        for i, r in enumerate(ranks):
            s = samples[samples["rank"] == r]
            lat = (s["t_done_ns"] - s["t_post_ns"]).astype(np.float64) / divisor
            out[i] = (r, len(s), lat.min(), lat.mean(), np.percentile(lat, 50),
                      np.percentile(lat, 99), np.percentile(lat, 99.9), lat.max(),
                      int(s["bytes"].sum()), int(np.count_nonzero(s["flags"])))
        return out

    def start_ns(self) -> int:
        return self.clock

    def close(self, complete: bool = True, exit_code: int = 0):
        if complete:
            self.file.attrs["complete"] = np.int64(1)
            self.file.attrs["exit_code"] = np.int64(exit_code)
            self.file.attrs["finished_utc"] = "2025-01-01T00:05:00Z"
        self.file.close()


def all_pairs(nranks: int) -> List[Tuple[int, int]]:
    return [(r, p) for r in range(nranks) for p in range(nranks) if r != p]


def pair_matrix_from(samples: np.ndarray, nranks: int, metric: str, divisor: int = 1
                     ) -> np.ndarray:
    m = np.full((nranks, nranks), np.nan)
    for r in range(nranks):
        for p in range(nranks):
            s = samples[(samples["rank"] == r) & (samples["peer"] == p)]
            if not len(s):
                continue
            dur = (s["t_done_ns"] - s["t_post_ns"]).astype(np.float64)
            m[r, p] = (np.median(s["bytes"] / dur) if metric == "bandwidth"
                       else np.median(dur / divisor))
    return m


def write_standard_run(path, *, slow_pair: Optional[Tuple[int, int]] = (2, 5),
                       slow_rank: Optional[int] = 3, complete: bool = True, nranks: int = 8,
                       latency_scale: float = 1.0, bandwidth_scale: float = 1.0,
                       seed: int = 7, with_hosts: bool = True, slow_sender: bool = True,
                       with_empty: bool = True, mtu_mismatch: bool = True) -> SyntheticRun:
    """A run with every section the report knows, and planted defects.

    - 0000 latency quiet, 0001 latency under incast (impact ~1.8), rank `slow_rank` 5x slower
    - 0002 bandwidth all-pairs with pair `slow_pair` at 40% speed, pair matrix
    - 0003 incast (one receiver, senders 1..n-1), one sender starved
    - 0004 kvpush with requests and a fault event sequence
    - 0005 empty latency test (0 samples, status error)
    - /hosts with fh2 at MTU 1500 while the others have 9000

    Each planted defect can be switched off to get a run that should be accepted.
    """
    run = SyntheticRun(path, nranks=nranks, ranks_per_host=2, seed=seed)
    rng = run.rng
    pairs = [(r, r ^ 1) for r in range(nranks)]
    slow = {slow_rank: 5.0} if slow_rank is not None else {}
    quiet = run.add_test(
        "pingpong", "latency",
        make_samples(latency_entries(pairs, 300, 2000 * latency_scale, rng, slow_ranks=slow),
                     run.start_ns()),
        nbytes=8, divisor=2, case="pingpong/8",
        counters=[(r, "net:eth0", "rx_bytes", 10_000, 10_000 + 4800 + r) for r in range(nranks)]
        + [(1, "snmp:Tcp", "RetransSegs", 5, 5)])
    run.add_test(
        "pingpong", "latency",
        make_samples(latency_entries(pairs, 300, 3600 * latency_scale, rng, slow_ranks=slow,
                                     jitter=0.25), run.start_ns()),
        nbytes=8, divisor=2, case="pingpong/8", condition="incast", quiet_index=quiet,
        counters=[(r, "snmp:Tcp", "RetransSegs", 5, 5 + 3 * r) for r in range(nranks)])
    slow_pairs = {}
    if slow_pair is not None:
        slow_pairs = {slow_pair: 0.4, (slow_pair[1], slow_pair[0]): 0.4}
    bw = make_samples(bandwidth_entries(all_pairs(nranks), 20, 1 << 20,
                                        10.0 * bandwidth_scale, rng, slow_pairs=slow_pairs),
                      run.start_ns())
    run.add_test("allpairs-bw", "bandwidth", bw, nbytes=1 << 20, metric="bandwidth",
                 pattern="all-pairs", window=1,
                 pair_matrix=pair_matrix_from(bw, nranks, "bandwidth"))
    senders = list(range(1, nranks))
    inc = make_samples(bandwidth_entries([(s, 0) for s in senders], 30, 256 << 10, 2.0, rng,
                                         slow_pairs={(senders[-1], 0): 0.3} if slow_sender else {}),
                       run.start_ns())
    run.add_test("incast-7to1", "incast", inc, nbytes=256 << 10, metric="bandwidth",
                 pattern="incast")
    kv_start = run.start_ns()
    kv = make_samples(bandwidth_entries([(0, 2), (1, 3)], 40, 640 << 10, 5.0, rng),
                      kv_start, gap_ns=20_000)
    run.add_test("kv-push", "kvpush", kv, nbytes=640 << 10, metric="bandwidth",
                 events=[(1, 200_000, "fault", 3, "link fh1:eth1 down (injected)"),
                         (1, 450_000, "detected", 3, "send to rank 3 timed out after 250 us"),
                         (1, 900_000, "rerouted", 3, "retry via rank 2"),
                         (1, 1_500_000, "recovered", 3, "link up, latency back to normal")])
    if with_empty:
        run.add_test("pingpong-empty", "latency", np.zeros(0, dtype=SAMPLE_DTYPE), nbytes=64,
                     divisor=2, status="error",
                     error="rank 1 at t=1000000123 ns: peer 0 unreachable (deadline 30 s)")
    if with_hosts:
        run.add_hosts({run.host(r): {"rdma/mlx5_0/port1/link_layer": "Ethernet",
                                     "rdma/mlx5_0/port1/rate_gbps": "100",
                                     "net/eth0/mtu": 1500 if r == 4 and mtu_mismatch else 9000,
                                     "rdma/mlx5_0/fw_ver": "22.36.1010"}
                       for r in range(0, nranks, 2)})
    run.close(complete=complete, exit_code=0 if complete else -1)
    return run


def matrix_samples(nranks: int, iterations: int, base_ns: float, rng: np.random.Generator,
                   factor: np.ndarray, nbytes: int, start_ns: int, jitter: float = 0.05,
                   tail: Optional[np.ndarray] = None, symmetric: bool = False) -> np.ndarray:
    """All-pairs samples, vectorised (fast enough for 256 ranks).

    factor[s][d] multiplies the time of pair s -> d; tail[s][d] (optional) is the
    fraction of that pair's samples that take 50x longer (a retransmission timeout).
    With symmetric=True each unordered pair is measured once, by its lower rank (a
    ping-pong), as fabscope does for latency.
    """
    s_idx, d_idx = np.nonzero(~np.eye(nranks, dtype=bool))
    if symmetric:
        keep = s_idx < d_idx
        s_idx, d_idx = s_idx[keep], d_idx[keep]
    npairs = len(s_idx)
    rank = np.repeat(s_idx, iterations)
    peer = np.repeat(d_idx, iterations)
    it = np.tile(np.arange(iterations), npairs)
    dur = base_ns * np.repeat(factor[s_idx, d_idx], iterations) * \
        rng.lognormal(0.0, jitter, npairs * iterations)
    if tail is not None:
        p = np.repeat(tail[s_idx, d_idx], iterations)
        dur = np.where(rng.random(len(p)) < p, dur * 50.0, dur)
    out = np.zeros(len(rank), dtype=SAMPLE_DTYPE)
    out["rank"], out["iter"], out["peer"], out["bytes"] = rank, it, peer, nbytes
    out["t_post_ns"] = start_ns + np.arange(len(rank), dtype=np.int64) * 10
    out["t_done_ns"] = out["t_post_ns"] + np.maximum(dur.astype(np.int64), 1)
    return out


def fast_pair_matrix(samples: np.ndarray, nranks: int, metric: str, divisor: int = 1,
                     symmetric: bool = False) -> np.ndarray:
    """Median per pair (GB/s or ns), as fabscope's pair_matrix; mirrored when symmetric."""
    import pandas as pd
    dur = (samples["t_done_ns"] - samples["t_post_ns"]).astype(np.float64)
    value = samples["bytes"] / dur if metric == "bandwidth" else dur / divisor
    med = pd.DataFrame({"r": samples["rank"], "p": samples["peer"], "v": value}) \
        .groupby(["r", "p"])["v"].median()
    m = np.full((nranks, nranks), np.nan)
    m[med.index.get_level_values(0), med.index.get_level_values(1)] = med.to_numpy()
    if symmetric:
        m = np.where(np.isfinite(m), m, m.T)
    return m


def _stall(samples: np.ndarray, stall_iters: Optional[Dict[Tuple[int, int], Sequence[int]]]):
    """The given iterations of the given pairs (either direction) 50x longer, in place."""
    for (a, b), iters in (stall_iters or {}).items():
        hit = (((samples["rank"] == a) & (samples["peer"] == b))
               | ((samples["rank"] == b) & (samples["peer"] == a))) & np.isin(samples["iter"], iters)
        samples["t_done_ns"][hit] = samples["t_post_ns"][hit] + \
            (samples["t_done_ns"][hit] - samples["t_post_ns"][hit]) * 50


def write_matrix_run(path, nranks: int = 6, ranks_per_host: int = 1, *,
                     send: Optional[Dict[int, float]] = None,
                     receive: Optional[Dict[int, float]] = None,
                     link: Optional[Dict[Tuple[int, int], float]] = None,
                     lossy: Optional[Dict[int, float]] = None, pair_noise: float = 0.0,
                     seed: int = 1, iterations: int = 30, jitter: float = 0.05,
                     retest: Optional[Sequence[Tuple[int, int]]] = None,
                     controls: Optional[Sequence[Tuple[int, int]]] = None,
                     control_flag: int = 1 << 10,
                     validity: Optional[Sequence[Tuple[str, str, float, float, str]]] = None,
                     retest_factor: Optional[Dict[Tuple[int, int], float]] = None,
                     link_tail: Optional[Dict[Tuple[int, int], float]] = None,
                     latency_host: Optional[Dict[int, float]] = None,
                     stall_iters: Optional[Dict[Tuple[int, int], Sequence[int]]] = None,
                     counters: Sequence[Tuple[int, str, str, int, int]] = (),
                     retest_burst: Optional[Dict[Tuple[int, int], int]] = None,
                     pair_tail_df: Optional[float] = None,
                     second_visit: Optional[Dict[Tuple[int, int], float]] = None,
                     latency_link: Optional[Dict[Tuple[int, int], float]] = None,
                     ) -> SyntheticRun:
    """An all-pairs latency (8 B ping-pong) and bandwidth (1 MiB) run with planted culprits.

    send/receive: rank -> bandwidth factor (0.3 = that rank sends/receives at 30 %); a rank
    in both is slow both ways. link: (s, d) -> factor for that one direction. lossy: rank ->
    fraction of the samples of every pair touching it that hit a 50x timeout (both tests).
    pair_noise: lognormal sigma of a per-pair factor (equal noise on every pair).
    pair_tail_df: the per-pair factor's log a Student-t of this many degrees of freedom
    scaled to the sd pair_noise (healthy pairs with a heavy tail), not a normal.
    retest: pairs re-measured alone in a serial-retest instance of the bandwidth test, with
    `controls` as control rows (flag control_flag); retest_factor: (s, d) -> time factor
    alone (1.0 = healthy alone: the parallel pass's slowness was interference).
    validity: /validity rows (host, what, value, limit, effect).
    link_tail: (s, d) -> fraction of that pair's samples (both directions) hitting the 50x
    timeout, like `lossy` for one link.
    latency_host: rank -> time factor of every latency pair touching it (bandwidth as is).
    latency_link: (s, d) -> time factor of that pair's round trips (both directions;
    bandwidth as is): a cost per message, not per byte.
    stall_iters: (s, d) -> the iterations of that pair (both directions, both tests) that
    take 50x longer: stalls placed by hand (spread over the pass: a lossy path; in a row:
    one burst).
    counters: (rank, source, name, before, after) rows of the latency test's counters.
    retest_burst: (s, d) -> how many of its first retest iterations keep the parallel
    pass's slowness (a burst still on); the rest are healthy.
    second_visit: given, every retested pair is measured a second time after the whole
    first pass of the retest and 100 ms after it (flag bit 15, as the runner does), at
    this time factor alone (s, d) -> factor, or as on its first visit when not listed
    (burst left out).
    """
    run = SyntheticRun(path, nranks=nranks, ranks_per_host=ranks_per_host, seed=seed)
    rng = run.rng
    slow = np.ones((nranks, nranks))  # time factor = 1 / bandwidth factor
    for r, f in (send or {}).items():
        slow[r, :] /= f
    for r, f in (receive or {}).items():
        slow[:, r] /= f
    for (s, d), f in (link or {}).items():
        slow[s, d] /= f
    if pair_noise and pair_tail_df:
        unit = np.sqrt(pair_tail_df / (pair_tail_df - 2.0))
        slow *= np.exp(pair_noise * rng.standard_t(pair_tail_df, (nranks, nranks)) / unit)
    elif pair_noise:
        slow *= rng.lognormal(0.0, pair_noise, (nranks, nranks))
    tail = None
    if lossy or link_tail:
        tail = np.zeros((nranks, nranks))
    for (s, d), frac in (link_tail or {}).items():
        tail[s, d] = tail[d, s] = max(tail[s, d], frac)
    if lossy:
        for r, frac in lossy.items():
            tail[r, :] = np.maximum(tail[r, :], frac)
            tail[:, r] = np.maximum(tail[:, r], frac)
    # latency: a round trip sees both directions' slowness (geometric mean, symmetric)
    lat_factor = np.sqrt(slow * slow.T)
    for r, f in (latency_host or {}).items():
        lat_factor[r, :] *= f
        lat_factor[:, r] *= f
    for (s, d), f in (latency_link or {}).items():
        lat_factor[s, d] *= f
        lat_factor[d, s] *= f
    lat = matrix_samples(nranks, iterations, 2 * 20_000, rng, lat_factor, 8, run.start_ns(),
                         jitter=jitter, tail=tail, symmetric=True)
    _stall(lat, stall_iters)
    run.add_test("ap-lat", "latency", lat, nbytes=8, divisor=2, pattern="all-pairs", counters=counters,
                 pair_matrix=fast_pair_matrix(lat, nranks, "latency", 2, symmetric=True))
    nbytes = 1 << 20
    bw = matrix_samples(nranks, iterations, nbytes / 1.0, rng, slow, nbytes, run.start_ns(),
                        jitter=jitter, tail=tail)
    _stall(bw, stall_iters)
    parallel = run.add_test("ap-bw", "bandwidth", bw, nbytes=nbytes, metric="bandwidth",
                            pattern="all-pairs",
                            pair_matrix=fast_pair_matrix(bw, nranks, "bandwidth"))
    if retest:
        entries, flags = [], {}
        pairs = list(retest) + list(controls or [])
        for i, (s, d) in enumerate(pairs):
            for it in range(10):
                # measured alone: retest_factor overrides the parallel pass's slowness
                alone = (retest_factor or {}).get((s, d), slow[s, d])
                if it >= (retest_burst or {}).get((s, d), 10):
                    alone = 1.0
                entries.append((s, i * 10 + it, d, nbytes,
                                nbytes / 1.0 * alone * rng.lognormal(0.0, jitter)))
                if i >= len(retest):
                    flags[(s, i * 10 + it)] = control_flag
        if second_visit is not None:
            for i, (s, d) in enumerate(retest):
                first = (retest_factor or {}).get((s, d), slow[s, d])
                for it in range(10):
                    k = (len(pairs) + i) * 10 + it
                    entries.append((s, k, d, nbytes, nbytes / 1.0 * second_visit.get((s, d), first)
                                    * rng.lognormal(0.0, jitter)))
                    flags[(s, k)] = 1 << 15
        samples = make_samples(entries, run.start_ns(), flags=flags)
        later = (samples["flags"] & (1 << 15)) != 0   # the runner's wait before second visits
        samples["t_post_ns"][later] += 100_000_000
        samples["t_done_ns"][later] += 100_000_000
        run.add_test("ap-bw", "bandwidth", samples, nbytes=nbytes, metric="bandwidth",
                     pattern="all-pairs", pass_="serial-retest",
                     extra_attrs={"retest_of": np.int64(parallel)},
                     pair_matrix=fast_pair_matrix(samples, nranks, "bandwidth"))
    if validity is not None:
        run.add_validity(validity, waits_yield=1)
    run.close()
    return run
