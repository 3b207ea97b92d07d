"""The data path the plan's serving tests measure over.

Engines move a step's collectives and MoE dispatch with NCCL on GPU memory and the KV cache
GPU-direct (NIXL/UCX, Mooncake, NCCL); MPI through host memory is a stand-in for them, up
to two orders of magnitude slower on the same nodes. So where the nodes have GPUs, the plan
measures the serving classes (TP all-reduce, MoE dispatch + combine, PP activation sends,
KV push) over `transport: nccl, memory: cuda`: the all-reduce and all-to-all kinds run
NCCL's collectives on device buffers, the point-to-point kinds and the KV push send
straight from and into GPU memory (the KV push's `memory_path` is then `gpu-direct`).
UCX is not used for the KV: fabscope's UCX transport moves GPU memory only staged through
pinned host buffers (docs/transports.md, docs/scenarios.md `kvpush`). The diagnosis's
probes and GPCNeT's canaries stay on MPI through host memory: they relate ranks to each
other and compare with GPCNeT's figures, not serving's paths.

How the plan knows the nodes have GPUs (`--paths`):
- `auto` (default): `fabscope inventory --json` on the host the plan runs on lists a GPU
  and the binary was built with NCCL (its `versions.nccl`); otherwise host memory, and the
  plan says why. Plan on a GPU node, or say `--paths gpu` where it runs elsewhere (a login
  node);
- `gpu`: the GPU paths, whatever this host has (a binary without NCCL refuses them when
  the plan is loaded: exit 2);
- `host`: MPI through host memory, a stand-in that `fit` names in its verdict line.
`--require-gpu-paths` refuses (exit 2) a plan that would measure over host memory, and is
passed on to `fit`, which then refuses a file that did.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import List, Tuple

from .plan_list import PlanError

PATH_MODES = ("auto", "gpu", "host")
GPU, HOST = "gpu", "host"
SERVING_TESTS = ("tp-allreduce", "moe-dispatch-combine", "pp-activation", "kv-push")
GPU_KEYS = {"transport": "nccl", "memory": "cuda"}
SERVING_WORDS = {"tp-allreduce": "the TP all-reduce", "moe-dispatch-combine": "the MoE rounds",
                 "pp-activation": "the PP sends"}
INVENTORY_TIMEOUT_S = 60


@dataclass
class DataPaths:
    mode: str            # GPU or HOST
    why: str             # how it was decided, for the plan's notes
    required: bool = False

    def note(self, tests: List[dict]) -> str:
        """The plan's note on its data paths, naming the serving tests the plan holds."""
        if self.mode == GPU:
            names = {t["name"].removesuffix("-prefill") for t in tests}
            collectives = [words for name, words in SERVING_WORDS.items() if name in names]
            parts = ([_listed(collectives) + " over NCCL on GPU memory"] if collectives else []) \
                + (["the KV push GPU-direct over NCCL"] if "kv-push" in names else [])
            return f"paths: serving's GPU paths: {', '.join(parts)} ({self.why})"
        return ("paths: MPI through host memory, a stand-in for NCCL and GPU-direct RDMA (" + self.why
                + "); fit says so in its verdict line")


def _listed(words: List[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def detect_gpus(binary: str) -> Tuple[int, bool, str]:
    """(GPUs on this host, binary built with NCCL, where that was read) from `fabscope
    inventory --json`; (0, False, why) when it cannot be read."""
    try:
        done = subprocess.run([binary, "inventory", "--json"], capture_output=True, text=True,
                              timeout=INVENTORY_TIMEOUT_S, check=False)
        doc = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        doc = None
    if not isinstance(doc, dict):
        return 0, False, f"{binary} inventory --json gave no inventory"
    gpus = doc.get("gpus") or []
    nccl = str((doc.get("versions") or {}).get("nccl") or "")
    host = doc.get("hostname", "this host")
    return len(gpus), bool(nccl), f"fabscope inventory on {host}: {len(gpus)} GPU(s), " + (
        f"NCCL {nccl}" if nccl else "built without NCCL")


def choose_paths(mode: str, binary_for_inventory, required: bool = False) -> DataPaths:
    """The data path for `--paths MODE`; `binary_for_inventory()` gives the binary whose
    inventory `auto` reads (called only then). PlanError naming --require-gpu-paths when
    the GPU paths are required and not chosen."""
    if mode not in PATH_MODES:
        raise PlanError(f"--paths: expected one of {', '.join(PATH_MODES)}, got {mode!r}", "--paths")
    if mode == GPU:
        paths = DataPaths(GPU, "--paths gpu", required)
    elif mode == HOST:
        paths = DataPaths(HOST, "--paths host", required)
    else:
        gpus, nccl, seen = detect_gpus(binary_for_inventory())
        if gpus and nccl:
            paths = DataPaths(GPU, f"--paths auto: {seen}", required)
        else:
            paths = DataPaths(HOST, f"--paths auto: {seen}; give --paths gpu where the plan runs "
                                    "off the GPU nodes", required)
    if required and paths.mode != GPU:
        raise PlanError(f"--require-gpu-paths: the plan would measure over host memory, a "
                        f"stand-in ({paths.why})", "--require-gpu-paths")
    return paths


def apply_paths(tests: List[dict], paths: DataPaths) -> None:
    """Puts the serving tests (and their prefill-chunk twins) on the chosen path."""
    if paths.mode != GPU:
        return
    for test in tests:
        if test["name"].removesuffix("-prefill") in SERVING_TESTS:
            test.update(GPU_KEYS)
