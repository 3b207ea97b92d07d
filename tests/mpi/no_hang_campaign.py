#!/usr/bin/python3
"""No hang anywhere: a seeded campaign of runs that each lose
a random rank at a random moment, SIGKILL or SIGSTOP, during latency,
bandwidth, incast, all-reduce (over MPI only, the transports it runs on here)
and kvpush, over MPI, UCX on shared memory and UCX on TCP (loopback).

Every run must end by itself within the test's timeout + the control grace +
the watchdog's grace + a few seconds of the fault (an outer limit kills it
otherwise and counts a hang; hangs must be 0); its file must open; every test
the file says passed must be intact (its samples readable, not empty); and the
lost or silent rank must be named (in the survivors' output or the file's
lost_ranks). Seeds are printed; FABSCOPE_CAMPAIGN_SEED=N replays a campaign,
FABSCOPE_CAMPAIGN_RUNS=N changes its size (20 when run by hand; no_hang_campaign.sh: 7 by default, 40 under --full).

Usage: no_hang_campaign.py FABSCOPE_BIN WORKDIR
"""
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import h5py

RANKS = 4
TEST_TIMEOUT_S = 3  # the target test's own deadline
CONTROL_GRACE_S = 2  # scenario 'control_grace'
CONTROL_TIMEOUT_S = 5  # scenario 'control_timeout'
WATCHDOG_GRACE_S = 10  # runtime/Watchdog.hpp graceSeconds
# From the fault to the end of the job: the test's deadline, the control
# grace, the loss round (5 s answers + 2 s acknowledgements), the watchdog's
# grace, and a few seconds for the launcher to end the rest.
END_LIMIT_S = TEST_TIMEOUT_S + CONTROL_GRACE_S + 7 + WATCHDOG_GRACE_S + 5
# Two jobs at a time: 8 ranks on this 2-core machine, waits yield. Under
# AddressSanitizer (FABSCOPE_SANITIZED, tests/run.d/sanitizers.sh) one: each
# rank runs 2-3 times slower there, and with 8 of them the machine was busy
# at the start of a run (1.6 to 1.9 of its 2 CPUs while every rank slept),
# watchdogs fired up to 12 s late and loss rounds overran the limit below:
# that measures the scheduler, not whether a run ends.
CONCURRENT = 1 if os.environ.get("FABSCOPE_SANITIZED") == "1" else 2

# Target tests far too long to finish before their deadline: the fault always
# finds the run still going (in the lead test, between tests or in the target).
KINDS = {
    "latency": "{name: target, kind: latency, pattern: pairs, sizes: [8], iterations: 2000000, warmup: 10}",
    "bandwidth": "{name: target, kind: bandwidth, pattern: pairs, sizes: [64KiB], iterations: 100000, warmup: 2}",
    "incast": "{name: target, kind: incast, sizes: [64KiB], window: 4, iterations: 200000, warmup: 3}",
    "allreduce": "{name: target, kind: allreduce, sizes: [64KiB], iterations: 250000, warmup: 3}",
    "kvpush": ("{name: target, kind: kvpush, strategy: per-block, prefill_ranks: 3, decode_ranks: 1, "
               "sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [100]}, "
               "loop: {mode: closed, in_flight: 2}, iterations: 100000, warmup_requests: 1}"),
}
TRANSPORTS = {
    "mpi": ("mpi", {}),
    "ucx-shm": ("ucx", {"UCX_TLS": "sm,self", "UCX_NET_DEVICES": "all", "UCX_KEEPALIVE_INTERVAL": "1s"}),
    "ucx-tcp": ("ucx", {"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "lo", "UCX_KEEPALIVE_INTERVAL": "1s"}),
}


def scenario_text(kind, transport):
    model = "model: llama3-8b\nparallel: {tp: 8}\n" if kind == "kvpush" else ""
    return (f"name: no-hang-{kind}-{transport}\nseed: 7\n{model}"
            f"control_timeout: {CONTROL_TIMEOUT_S}s\ncontrol_grace: {CONTROL_GRACE_S}s\n"
            f"defaults: {{transport: {TRANSPORTS[transport][0]}, memory: host, timeout: {TEST_TIMEOUT_S}s}}\n"
            "tests:\n"
            "  - {name: lead, kind: latency, pattern: pairs, sizes: [8], iterations: 2000, warmup: 10}\n"
            f"  - {KINDS[kind]}\n")


def rank_pids(marker):
    """pid of each rank (OMPI_COMM_WORLD_RANK) among the processes running `marker`."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            if marker not in cmd or "mpirun" in cmd.split(" ")[0]:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        for e in env:
            if e.startswith(b"OMPI_COMM_WORLD_RANK="):
                out[int(e.split(b"=", 1)[1])] = int(pid)
    return out


class Run:
    def __init__(self, index, seed, kind, transport, workdir, binary):
        rng = random.Random(seed)
        self.index, self.seed, self.kind, self.transport = index, seed, kind, transport
        self.fault = rng.choice(["kill", "stop"])
        self.victim = rng.randrange(1, RANKS)  # rank 0 holds the result file
        # After rank 0 says it writes the file: in the lead test, between the
        # tests or (mostly) inside the target test.
        self.delay = rng.uniform(0.3, 2.5)
        self.name = f"run{index:02d}"
        self.yaml = os.path.join(workdir, self.name + ".yaml")
        self.h5 = os.path.join(workdir, self.name + ".h5")
        self.log = os.path.join(workdir, self.name + ".log")
        with open(self.yaml, "w") as f:
            f.write(scenario_text(kind, transport))
        env = dict(os.environ, FABSCOPE_REPORT_EXIT="1", OMPI_MCA_mpi_yield_when_idle="1")
        env.update(TRANSPORTS[transport][1])
        exports = []
        for key in list(TRANSPORTS[transport][1]) + ["FABSCOPE_REPORT_EXIT", "OMPI_MCA_mpi_yield_when_idle"]:
            exports += ["-x", key]
        self.started = time.monotonic()
        self.logfile = open(self.log, "w")
        self.proc = subprocess.Popen(
            ["mpirun", "-np", str(RANKS), "--mca", "orte_abort_on_non_zero_status", "0", *exports, binary, "run",
             "--scenario", self.yaml, "--output", self.h5, "--overwrite", "--no-verdict"],
            stdout=self.logfile, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.fault_at = None
        self.fault_note = ""  # why the fault was not made
        self.hang_note = ""
        self.ended_at = None
        self.hung = False
        self.writing_seen_at = None

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def step(self, now):
        """Drives the run; True once it is over."""
        if self.ended_at is not None:
            return True
        overdue = self.fault_at is not None and now - self.fault_at > END_LIMIT_S + 5
        if self.proc.poll() is not None:
            # Over when every rank has gone too, not only the launcher (a
            # rank left behind may still hold the file).
            if not rank_pids(self.yaml):
                self.ended_at = now
                self.logfile.close()
                return True
            if overdue:
                self.hung, self.hang_note = True, "ranks still alive after the launcher ended"
                self.kill_all(now)
                return True
            return False
        if overdue:
            self.hung, self.hang_note = True, "the launcher still runs"
            self.kill_all(now)
            return True
        if self.writing_seen_at is None:
            if "fabscope: writing " in self.text():
                self.writing_seen_at = now
            elif now - self.started > 120:
                self.fault_note = "rank 0 never started writing its file"
                self.hung, self.hang_note = True, "no start within 120 s"
                self.kill_all(now)
                return True
            return False
        if self.fault_at is None and now >= self.writing_seen_at + self.delay:
            pid = rank_pids(self.yaml).get(self.victim)
            self.fault_at = now
            if pid is None:
                self.fault_note = f"rank {self.victim} not found at the fault moment"
                return False
            self.victim_pid = pid
            os.kill(pid, signal.SIGKILL if self.fault == "kill" else signal.SIGSTOP)
        return False

    def release_victim(self):
        """A rank this test stopped stays frozen (holding the file's lock) until it is
        killed; once the job has ended, kill it and wait, bounded, until it is gone."""
        pid = getattr(self, "victim_pid", None)
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            return
        limit = time.monotonic() + 5
        while time.monotonic() < limit and os.path.exists(f"/proc/{pid}"):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        break  # dead; its parent reaps it
            except OSError:
                break
            time.sleep(0.05)

    def processes(self):
        """State of the launcher and every process of this run (what a hang left), for the report."""
        rows = []
        for pid in [self.proc.pid, *rank_pids(self.yaml).values()]:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
                with open(f"/proc/{pid}/wchan") as f:
                    wchan = f.read().strip()
                threads = len(os.listdir(f"/proc/{pid}/task"))
                rows.append(f"pid {pid} state {state} wchan {wchan or '-'} threads {threads}")
            except OSError:
                rows.append(f"pid {pid} gone")
        return "; ".join(rows)

    def stacks(self):
        """Where each process of a hung run is (gdb's backtraces, fabscope's and the
        libraries' frames only), for the report: a hang that shows up once in a CI run
        must say where it was. Nothing if gdb is missing."""
        if not shutil.which("gdb"):
            return "(no gdb: no stacks)"
        out = []
        for rank, pid in sorted(rank_pids(self.yaml).items()):
            try:
                text = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 24"],
                                      capture_output=True, text=True, timeout=60).stdout
            except (subprocess.TimeoutExpired, OSError) as e:
                out.append(f"rank {rank} (pid {pid}): gdb failed: {e}")
                continue
            frames = [line for line in text.splitlines()
                      if line.startswith("Thread ") or (line.startswith("#") and " in " in line)]
            out.append(f"rank {rank} (pid {pid}):\n  " + "\n  ".join(line[:160] for line in frames))
        return "\n".join(out)

    def kill_all(self, now):
        if self.hung:
            self.hang_note += f" [{self.processes()}]"
            self.hang_stacks = self.stacks()
        for pid in rank_pids(self.yaml).values():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()
        self.ended_at = now
        self.logfile.close()

    def check(self):
        """List of problems (empty: the run is fine)."""
        problems = []
        if self.hung:
            problems.append(f"HANG: {self.hang_note} {END_LIMIT_S + 5} s after the fault")
        if self.fault_at is None or self.fault_note:
            problems.append(f"the fault was not made ({self.fault_note or 'the run ended before it'})")
            return problems
        after = self.ended_at - self.fault_at
        if after > END_LIMIT_S:
            problems.append(f"ended {after:.1f} s after the fault, limit {END_LIMIT_S} s")
        text = self.text()
        # The victim named: by rank 0's loss round (kept in the file), a
        # survivor's UCX error, or a watchdog line naming the peer it waited on.
        v = self.victim
        named = re.search(rf"(lost contact with [^\n]*rank {v} \(|UCX endpoint to rank {v} failed|"
                          rf"lost peer rank {v} |watchdog: [^\n]* on rank {v} \(|watchdog: [^\n]* rank {v} \([^)]*\) is (gone|stopped)|"
                          rf"ranks? [0-9, and]*\b{v} \()", text)
        lost_ranks = ""
        self.release_victim()
        try:
            with open_when_unlocked(self.h5) as f:
                lost_ranks = str(f.attrs.get("lost_ranks", ""))
                for name, g in f["tests"].items():
                    status = g.attrs["status"]
                    status = status.decode() if isinstance(status, bytes) else status
                    if status == "passed":
                        n = len(g["samples"][:])
                        if n == 0:
                            problems.append(f"test {name} passed but has no samples")
        except Exception as e:  # the file must open and read
            problems.append(f"the file does not open or read: {type(e).__name__}: {e}")
        if not named and str(v) not in lost_ranks.split(","):
            problems.append(f"rank {v} is not named in the output nor in lost_ranks={lost_ranks!r}")
        return problems


def open_when_unlocked(path):
    """The result file, read-only; a lock still held by a rank process on its way out
    (the job has ended; slow under AddressSanitizer) is waited for up to 5 s."""
    limit = time.monotonic() + 5
    while True:
        try:
            return h5py.File(path, "r")
        except BlockingIOError:
            if time.monotonic() > limit:
                raise
            time.sleep(0.1)


def main():
    binary, workdir = sys.argv[1], sys.argv[2]
    base = int(os.environ.get("FABSCOPE_CAMPAIGN_SEED", "20261201"))
    runs = int(os.environ.get("FABSCOPE_CAMPAIGN_RUNS", "20"))
    # All-reduce runs over MPI only (or NCCL on GPUs): the other kinds over all three.
    combos = [(k, t) for k in KINDS for t in TRANSPORTS if k != "allreduce" or t == "mpi"]
    random.Random(base).shuffle(combos)
    # Combinations that bring a kind or a transport not yet drawn go first: a short
    # campaign (the default run's) still loses a rank in every kind and transport.
    first, seen = [], set()
    for combo in combos:
        if not {("kind", combo[0]), ("transport", combo[1])} <= seen:
            first.append(combo)
            seen |= {("kind", combo[0]), ("transport", combo[1])}
    combos = first + [c for c in combos if c not in first]
    print(f"no-hang campaign: base seed {base} (FABSCOPE_CAMPAIGN_SEED={base} replays it), {runs} runs, "
          f"{RANKS} ranks, test timeout {TEST_TIMEOUT_S} s, control grace {CONTROL_GRACE_S} s, "
          f"limit {END_LIMIT_S} s from the fault to the end", flush=True)
    pending = [(i, base * 100 + i, *combos[i % len(combos)]) for i in range(runs)]
    if os.environ.get("FABSCOPE_CAMPAIGN_ONLY"):  # replays one run of the campaign: its index
        pending = [p for p in pending if p[0] == int(os.environ["FABSCOPE_CAMPAIGN_ONLY"])]
    active, done = [], []
    campaign_start = time.monotonic()
    while pending or active:
        while pending and len(active) < CONCURRENT:
            i, seed, kind, transport = pending.pop(0)
            active.append(Run(i, seed, kind, transport, workdir, binary))
        now = time.monotonic()
        for r in list(active):
            if r.step(now):
                active.remove(r)
                done.append(r)
                problems = r.check()
                after = f"{r.ended_at - r.fault_at:.1f} s after the fault" if r.fault_at else "no fault"
                print(f"{r.name} seed {r.seed}: {r.kind:9s} over {r.transport:7s} {r.fault:4s} rank {r.victim} "
                      f"{r.delay:.1f} s after the file opened: ended {after}, exit {r.proc.returncode}"
                      f"{'' if not problems else ' -- FAIL: ' + '; '.join(problems)}", flush=True)
                r.problems = problems
        time.sleep(0.05)
    hangs = sum(r.hung for r in done)
    failed = [r for r in done if r.problems]
    longest = max((r.ended_at - r.fault_at for r in done if r.fault_at), default=0.0)
    print(f"no-hang campaign summary: runs {len(done)}, longest time from the fault to the end {longest:.1f} s "
          f"(limit {END_LIMIT_S} s), hangs {hangs}, failed runs {len(failed)}, "
          f"total {time.monotonic() - campaign_start:.0f} s", flush=True)
    for r in failed:
        print(f"--- {r.name} (seed {r.seed}) output, last lines:", file=sys.stderr)
        lines = [line for line in r.text().splitlines() if "UCX  WARN" not in line]
        print("\n".join(lines[-25:]), file=sys.stderr)
        if getattr(r, "hang_stacks", ""):
            print(f"--- {r.name}: stacks of its processes when it was declared hung:\n{r.hang_stacks}", file=sys.stderr)
    return 1 if failed or hangs else 0


if __name__ == "__main__":
    sys.exit(main())
