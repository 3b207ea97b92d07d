"""Which data path each judged serving class was measured over, for fit's verdict line.

Serving moves a step's collectives with NCCL on GPU memory and the KV cache GPU-direct;
a class measured over MPI through host memory (or its KV staged through pinned host
buffers) is a stand-in, and fit's verdict line says so: `[paths: measured over host
memory: a stand-in (...)]`. `fit --require-gpu-paths` refuses such a file
(plan_paths.py says how the plan chooses the path)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Tuple

from .measured import CLASS_TITLES, Measured

GPU_COLLECTIVE = ("nccl", "cuda")   # (transport, memory) of NCCL on GPU memory
GPU_DIRECT = "gpu-direct"           # the KV push's memory_path without a host hop
KV_STAGED = "gpu-via-pinned-host"   # the KV from GPU memory, staged through pinned host


def _is_gpu(cls: str, path: Tuple[str, str]) -> bool:
    transport, memory = path
    if cls == "kv":
        return memory == GPU_DIRECT
    return (transport, memory) == GPU_COLLECTIVE


def _words(cls: str, path: Tuple[str, str]) -> str:
    transport, memory = path
    if cls == "kv" and memory == GPU_DIRECT:
        return f"GPU-direct over {transport}"
    if cls == "kv" and memory == KV_STAGED:
        return f"from GPU memory staged through pinned host over {transport}"
    if memory == "cuda":
        return f"{transport} on GPU memory"
    return f"{transport} on {memory} memory"


@dataclass
class PathsOfFit:
    gpu: List[str] = field(default_factory=list)        # "TP all-reduce: nccl on GPU memory"
    stand_in: List[str] = field(default_factory=list)   # classes over host memory

    def statement(self) -> str:
        """The verdict line's bracket; "" when no serving class was judged."""
        if self.stand_in:
            rest = f"; {'; '.join(self.gpu)}" if self.gpu else ""
            return (f"measured over host memory: a stand-in ({'; '.join(self.stand_in)}){rest}")
        return f"serving's GPU paths ({'; '.join(self.gpu)})" if self.gpu else ""


def judged_classes(measured: Measured) -> List[str]:
    """The serving classes fit composes: a decode step's, a prefill chunk's, the KV push."""
    names = list(measured.itl_classes) + list(measured.prefill_classes)
    if measured.kv_on_fabric:
        names.append("kv")
    return [c for c in names if c in measured.classes]


def paths_of(measured: Measured) -> PathsOfFit:
    out = PathsOfFit()
    for cls in judged_classes(measured):
        series = measured.classes[cls]
        for path in sorted(series.paths):
            line = f"{CLASS_TITLES[cls]}: {_words(cls, path)}"
            (out.gpu if _is_gpu(cls, path) else out.stand_in).append(line)
    return out
