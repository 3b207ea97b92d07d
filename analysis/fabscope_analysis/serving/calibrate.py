"""The plan's time estimate calibrated on the cluster it will run on.

The loader's estimate (`fabscope list`, src/driver/Planning.hpp) is a planning figure:
per instance, rounds x (warmup + iterations) x (20 us + bytes x window / 10 GB/s) + rounds
x 1 ms. On a cluster whose links, CPUs or start-up differ it can be off by orders of
magnitude (2.6 s planned against 3 min 43 s run on a busy machine). So before the plan
is chosen, a short probe runs on the actual cluster (`calibration_scenario`: 8 B
ping-pongs, 256 KiB and 1 MiB windows between rank pairs, all-pairs rounds of few
iterations; a few seconds), and the same form is fitted to what each probe instance took
(its t_start_ns .. t_end_ns), by non-negative least squares:

    instance time = rounds x (warmup + iterations) x (message + bytes x window / rate)
                    + rounds x round + instance

message (per-operation cost), rate (bytes per second per pair), round (a round's barrier
and set-up) and instance (an instance's own set-up and writing its samples); the run's
start-up and closing (what the probe run took beyond its instances, from its wall time
when the launcher measured it, else from the file's started_utc .. finished_utc) is added
once. The plan's instances are read from `fabscope list` (the same rows, the same
form), so each is re-estimated with the calibrated figures.

Serving's GPU paths cost what MPI through host memory does not: an instance on NCCL sets
up its communicator and the GPU's context (about a second on an H200), and an operation
on GPU memory launches kernels and copies (11 us for an 8 KiB NCCL all-reduce against
1.3 us for an MPI ping-pong). So when the plan measures over the GPU paths, the probe
also runs each serving test on its GPU path three times, at the plan's sizes and quiet:
few operations, few again, and more (`gpu_path_probes`). The first pays what a process
pays once for that path (the GPU's context, NCCL's first communicator: half a second on an
H200, measured), the other two part each operation's cost from an instance's own set-up.
Each such planned instance is then estimated from its test's three:

    instance time = set-up + operations x per-operation  (+ first-time, for the first)

(`GpuPathCost`); the form above stays for the instances over MPI through host memory.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..errors import ResultFileError
from ..reader import open_result
from .plan_list import PlanError, format_duration, parse_duration_s

# the loader's own figures (src/driver/Planning.hpp, estimate::assumed*)
LOADER_MESSAGE_S, LOADER_RATE, LOADER_ROUND_S = 20e-6, 10e9, 1e-3
_ROW = re.compile(r"^\d+\s")
_WINDOW = re.compile(r"window (\d+)")
_SIZE = re.compile(r"^(\d+)(B|KiB|MiB|GiB)$")
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
LISTED_NAME_WIDTH = 22   # `fabscope list` cuts a test's name there (src/cli/ListCommand.cpp)


def same_test(listed: str, name: str) -> bool:
    """A name as `fabscope list` prints it is the test's, or its first 22 characters."""
    return listed == name or (len(listed) == LISTED_NAME_WIDTH and name.startswith(listed))


@dataclass
class ListedInstance:
    """One row of `fabscope list --scenario`'s table, with its rounds recovered."""
    test: str
    nbytes: int
    operations: int       # warmup + iterations
    window: int
    rounds: int
    loader_s: float

    def seconds(self, cal: "Calibration") -> float:
        per_op = cal.message_s + self.nbytes * self.window / cal.bytes_per_s
        return self.rounds * (self.operations * per_op + cal.round_s) + cal.instance_s


def parse_instances(text: str) -> List[ListedInstance]:
    """The table's rows: `# test kind size cond transp mem iters warmup timeout mem/rank
    rounds estimate plan`. The estimated rounds (thinned, or one for a kind without
    rounds) are recovered from the loader's estimate, whose form is known."""
    rows = []
    for line in text.splitlines():
        if not _ROW.match(line):
            continue
        words = line.split()
        size = _SIZE.match(words[3])
        if len(words) < 13 or not size:
            raise PlanError(f"fabscope list: expected a row '# test kind size ... estimate plan', "
                            f"got {line.strip()!r}")
        nbytes = int(size.group(1)) * _UNITS[size.group(2)]
        operations = int(words[7]) + int(words[8])
        window = int(_WINDOW.search(line).group(1)) if _WINDOW.search(line) else 1
        loader_s = parse_duration_s(words[12])
        per_round = operations * (LOADER_MESSAGE_S + nbytes * window / LOADER_RATE) + LOADER_ROUND_S
        rounds = max(1, int(round(loader_s / per_round)))
        rows.append(ListedInstance(words[1], nbytes, operations, window, rounds, loader_s))
    return rows


@dataclass
class GpuPathCost:
    """One serving test on its GPU path at one size, from its two probe instances."""
    setup_s: float
    per_operation_s: float
    first_time_s: float = 0.0   # what the process's first instance on the path paid beyond

    def seconds(self, operations: int, first: bool = False) -> float:
        return self.setup_s + operations * self.per_operation_s + (self.first_time_s if first else 0.0)


@dataclass
class Calibration:
    message_s: float
    bytes_per_s: float
    round_s: float
    instance_s: float
    startup_s: float
    probe_instances: int
    probe_s: float         # what the probe's instances took in all
    fitted_s: float        # what the fitted figures give for them
    # (planned test name, message bytes) -> its GPU path's cost; empty over host memory
    gpu_paths: Dict[Tuple[str, int], GpuPathCost] = field(default_factory=dict)

    def describe(self) -> str:
        gpu = "".join(f"; {name} on its GPU path at {nbytes} B: {cost.setup_s:.3g} s set-up "
                      f"(the first instance {cost.first_time_s:.3g} s more), "
                      f"{1e6 * cost.per_operation_s:.3g} us per operation"
                      for (name, nbytes), cost in sorted(self.gpu_paths.items()))
        return (f"calibrated on this cluster: {1e6 * self.message_s:.3g} us per message, "
                f"{self.bytes_per_s / 1e9:.3g} GB/s per pair, {1e3 * self.round_s:.3g} ms per "
                f"round, {1e3 * self.instance_s:.3g} ms per instance, {self.startup_s:.3g} s "
                f"start-up (fitted to {self.probe_instances} probe instances: {self.fitted_s:.3g} s "
                f"for their {self.probe_s:.3g} s){gpu}")

    def instance_seconds(self, row: ListedInstance, first: bool = False) -> float:
        """A planned instance: from its GPU path's probes when the probe measured that test
        (the nearest probed size when the plan kept another), else the host form; `first`:
        the plan's first instance of that test, which pays the path's first time."""
        probed = [(name, nbytes) for name, nbytes in self.gpu_paths if same_test(row.test, name)]
        if not probed:
            return row.seconds(self)
        nearest = min(probed, key=lambda key: (key[0] != row.test, abs(key[1] - row.nbytes)))
        return self.gpu_paths[nearest].seconds(row.rounds * row.operations, first)

    def estimate_s(self, listing_text: str) -> float:
        total, seen = self.startup_s, set()
        for row in parse_instances(listing_text):
            total += self.instance_seconds(row, first=row.test not in seen)
            seen.add(row.test)
        return total


DEFAULT_WINDOW = 64     # the bandwidth kind's messages per sample (docs/scenarios.md)
PROBE_MESSAGE = 1 << 20


def probe_window(cal: "Calibration") -> int:
    """Messages of 1 MiB per bandwidth sample so that a sample takes what the kind's default
    window of 64 takes at the loader's 10 GB/s (6.7 ms): at 1 Gbit/s one message, not 64
    (a 64 MiB sample there takes 0.6 s, and all-pairs of 8 ranks 14 rounds of them)."""
    sample_s = DEFAULT_WINDOW * PROBE_MESSAGE / LOADER_RATE
    return int(max(1, min(DEFAULT_WINDOW, cal.bytes_per_s * sample_s // PROBE_MESSAGE)))


GPU_PROBE_FEW, GPU_PROBE_MORE = 10, 100   # operations of a GPU path's probe instances
GPU_PROBE_PREFIX, GPU_PROBE_AGAIN_SUFFIX, GPU_PROBE_MORE_SUFFIX = "cal-gpu-", "-again", "-more"
GPU_PROBE_COPIES = (("", GPU_PROBE_FEW), (GPU_PROBE_AGAIN_SUFFIX, GPU_PROBE_FEW),
                    (GPU_PROBE_MORE_SUFFIX, GPU_PROBE_MORE))


def gpu_path_probes(plan_tests: List[dict]) -> List[dict]:
    """Three short copies of each planned test on a GPU path (NCCL, or GPU memory), in the
    plan's order, quiet, its sizes and roles: few operations (the first time on the path),
    few again and more; what the last two took apart is each operation's cost on that path,
    the rest an instance's set-up (NCCL's communicator), and the first's excess the
    process's first time."""
    probes = []
    for test in plan_tests:
        if test.get("transport") != "nccl" and test.get("memory") != "cuda":
            continue
        for suffix, iterations in GPU_PROBE_COPIES:
            probe = copy.deepcopy(test)
            probe.update(name=f"{GPU_PROBE_PREFIX}{test['name']}{suffix}", iterations=iterations,
                         conditions=["quiet"])
            probes.append(probe)
    return probes


def calibration_scenario(seed: int = 7, gpu_probes: Optional[List[dict]] = None,
                         scenario_keys: Optional[dict] = None) -> dict:
    """The probe: what separates the four figures (many 8 B ping-pongs: message; three
    instances of few: instance; 1 MiB windows: rate; all-pairs rounds of few iterations:
    round), on MPI through host memory between rank pairs (i with i + N/2: across nodes).
    Sized to take a few seconds at 1 Gbit/s: the bandwidth window is 4, not 64. Then the
    GPU paths' probes (`gpu_path_probes`), with the plan's scenario keys their sizes derive
    from (model, parallel) and its default warm-up."""
    def test(name, pattern, size, iterations, warmup, kind="latency", **extra):
        t = {"name": name, "kind": kind, "pattern": pattern, "sizes": [size],
             "iterations": iterations, "warmup": warmup}
        t.update(extra)
        return t
    scenario = {"name": "plan-calibration", "description": "a short probe of the cluster: "
                "per-message cost, link rate, per-round overhead (python3 -m fabscope_analysis "
                "plan --calibration)", "seed": seed}
    scenario.update(scenario_keys or {})
    scenario["defaults"] = {"warmup": 10, "timeout": "120s"}
    scenario["tests"] = ([test("cal-latency-many", "pairs", 8, 2000, 10)]
                         + [test(f"cal-instance-{k}", "pairs", 8, 10, 0) for k in (1, 2, 3)]
                         + [test("cal-bandwidth", "pairs", "1MiB", 8, 2, kind="bandwidth", window=4),
                            test("cal-rounds", "all-pairs", 8, 2, 1, all_pairs={"retest_worst": 0})]
                         + list(gpu_probes or []))
    return scenario


def _utc(text: str) -> Optional[float]:
    try:
        return dt.datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def fit_gpu_paths(listed: List[ListedInstance], took_s: List[float]
                  ) -> Dict[Tuple[str, int], GpuPathCost]:
    """Each GPU path probe's three copies (first, again, more; row by row, one row a size)
    give that planned test's per-operation cost, set-up and first time, none below zero."""
    by_copy: Dict[Tuple[str, str], List[Tuple[ListedInstance, float]]] = {}
    for r, t in zip(listed, took_s):
        base = r.test
        suffix = next((x for x, _ in GPU_PROBE_COPIES[1:] if base.endswith(x)), "")
        by_copy.setdefault((base.removesuffix(suffix), suffix), []).append((r, t))
    out: Dict[Tuple[str, int], GpuPathCost] = {}
    for (base, suffix), firsts in by_copy.items():
        if suffix:
            continue
        for k, (r, t_first) in enumerate(firsts):
            rows = []
            for copy_suffix, _ in GPU_PROBE_COPIES[1:]:
                copies = by_copy.get((base, copy_suffix), [])
                if k >= len(copies) or copies[k][0].nbytes != r.nbytes:
                    raise PlanError(f"--calibration: the GPU path probe {base} at {r.nbytes} B has "
                                    f"no {base}{copy_suffix} row of that size", "--calibration")
                rows.append(copies[k])
            (r_again, t_again), (r_more, t_more) = rows
            ops, ops_more = r_again.rounds * r_again.operations, r_more.rounds * r_more.operations
            per_op = max(0.0, (t_more - t_again) / (ops_more - ops)) if ops_more > ops else 0.0
            out[(base.removeprefix(GPU_PROBE_PREFIX), r.nbytes)] = GpuPathCost(
                max(0.0, t_again - ops * per_op), per_op, max(0.0, t_first - t_again))
    return out


def fit_calibration(listed: List[ListedInstance], took_s: List[float],
                    run_wall_s: float) -> Calibration:
    """The four figures from what each probe instance over host memory took (non-negative
    least squares on the seconds themselves: the plan's total is what they must predict),
    and the GPU paths' costs from their probe pairs; the start-up is the run's wall time
    less every probe instance."""
    from scipy.optimize import nnls
    if len(listed) != len(took_s):
        raise PlanError(f"--calibration: {len(took_s)} measured instances for {len(listed)} "
                        "planned (expected the probe's instances)", "--calibration")
    gpu = [i for i, r in enumerate(listed) if r.test.startswith(GPU_PROBE_PREFIX)]
    gpu_paths = fit_gpu_paths([listed[i] for i in gpu], [took_s[i] for i in gpu])
    all_took = float(np.sum(took_s))
    listed = [r for i, r in enumerate(listed) if i not in gpu]
    took_s = [t for i, t in enumerate(took_s) if i not in gpu]
    if len(listed) < 4:
        raise PlanError(f"--calibration: {len(listed)} probe instances over host memory, expected "
                        "the probe's 6", "--calibration")
    a = np.array([[i.rounds * i.operations, i.rounds * i.operations * i.nbytes * i.window,
                   i.rounds, 1.0] for i in listed])
    y = np.array(took_s)
    w = np.ones_like(y)
    scale = np.abs(a).max(axis=0)
    x, _ = nnls(a / scale * w[:, None], y * w)
    x = x / scale
    message, per_byte, round_s, instance = (float(v) for v in x)
    fitted = a @ x
    cal = Calibration(message, 1.0 / per_byte if per_byte > 0 else float("inf"), round_s, instance,
                      max(0.0, run_wall_s - all_took), len(listed), float(np.sum(y)),
                      float(np.sum(fitted)), gpu_paths)
    if not np.isfinite(cal.bytes_per_s):
        raise PlanError("--calibration: the probe's bandwidth instances show no cost per byte",
                        "--calibration")
    return cal


def calibrate(result_path: str, listing_text: str, run_wall_s: Optional[float] = None) -> Calibration:
    """The calibration from the probe's result file and `fabscope list` of the probe
    scenario at the run's ranks (the same instances, in order)."""
    listed = parse_instances(listing_text)
    try:
        with open_result(result_path) as result:
            insts = list(result.instances())
            took = [(int(i.get("t_end_ns")) - int(i.get("t_start_ns"))) / 1e9 for i in insts]
            names = [str(i.get("name")) for i in insts]
            start, end = _utc(result.attrs.get("started_utc", "")), _utc(result.attrs.get("finished_utc", ""))
    except (OSError, KeyError, TypeError, ValueError, ResultFileError) as exc:
        raise PlanError(f"--calibration {result_path}: not a finished probe result ({exc})",
                        "--calibration") from None
    if len(names) != len(listed) or not all(same_test(i.test, n) for i, n in zip(listed, names)):
        raise PlanError(f"--calibration {result_path}: its instances {names} are not the probe's "
                        f"{[i.test for i in listed]}", "--calibration")
    for row, name in zip(listed, names):
        row.test = name   # whole, as the file has it: the list cuts long names
    if run_wall_s is None:
        run_wall_s = (end - start) if start and end and end > start else float(sum(took))
    return fit_calibration(listed, took, run_wall_s)


def estimate_words(cal: Optional[Calibration], loader_s: float) -> str:
    if cal is None:
        return "the loader's planning figure: 20 us and 10 GB/s per pair, 1 ms per round"
    return f"{cal.describe()}; the loader's planning figure {format_duration(loader_s)}"
