"""What `plan` reads from the fabscope binary and the cluster's description.

The model's sizes come from the C++ model code (`fabscope list --model M --tp N`), never
from a table in Python; the time estimate and budget thinning come from the scenario
loader (`fabscope list --scenario FILE --ranks N`). Both outputs are text meant for
people: the parsers here read only the lines whose form docs/models.md and
docs/scenarios.md show, and say what they expected when a line is missing.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import yaml

from ..kinds import kind_measuring

LIST_TIMEOUT_S = 300   # a `fabscope list` of 1,024 ranks plans in seconds; bound it anyway


class PlanError(ValueError):
    """Bad input or an answer from the binary that the plan cannot use; `option` names the
    command-line option at fault when there is one."""

    def __init__(self, message: str, option: Optional[str] = None):
        super().__init__(message)
        self.option = option


@dataclass
class ModelSizes:
    """The sizes `fabscope list --model M --tp N` prints, as the plan needs them."""
    name: str
    has_experts: bool
    allreduces_per_step: int
    decode_batches: List[int] = field(default_factory=list)
    prompt_tokens: List[int] = field(default_factory=list)
    block_tokens: int = 16
    size_lines: List[str] = field(default_factory=list)   # "allreduce 448KiB derive: ..."


_MODEL_LINE = re.compile(r"^model (\S+): (.*)$")
_STEP_LINE = re.compile(r"^deployment: tp (\d+); all-reduces per decode step: (\d+)")
_SIZE_LINE = re.compile(r"^\s+(allreduce|kvpush)\s+(\S+)\s+derive:\s*(.+?)\s*$")
_MOE_LINE = re.compile(r"^\s+MoE dispatch:")
_ESTIMATE = re.compile(r"^estimated time: (\S+) in all")
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:([0-9.]+(?:e[-+]?\d+)?)s)?$")
_MEMORY_REFUSAL = re.compile(r"needs about (\d+) MiB per rank for samples and buffers, more than "
                             r"max_memory_per_rank")
_BUDGET_REFUSAL = re.compile(r"more than its budget of")
# the loader's refusal names what the scenario needs at its smallest (one round an instance)
_SMALLEST = re.compile(r"still (\S+) with one round per instance")


def _derive_fields(text: str, line: str) -> Dict[str, str]:
    derive, _, rest = text.partition(",")
    fields = {"derive": derive.strip()}
    for part in filter(str.strip, rest.split(",")):
        if ":" not in part:
            raise PlanError(f"fabscope list --model: expected 'derive: KIND, key: value, ...', got "
                            f"{line.strip()!r}")
        key, value = (s.strip() for s in part.split(":", 1))
        fields[key] = value
    return fields


def parse_model_listing(text: str) -> ModelSizes:
    """The model's name, whether it has experts, its all-reduces per decode step and the
    decode batches / prompt lengths whose sizes it printed. PlanError names what is
    missing when the text is not what `fabscope list --model` prints."""
    name, steps, sizes = None, None, None
    for line in text.splitlines():
        if name is None and _MODEL_LINE.match(line):
            match = _MODEL_LINE.match(line)
            name, header = match.group(1), match.group(2)
            sizes = ModelSizes(name, " moe " in f" {header} ", 0)
            continue
        if sizes is None:
            continue
        if _STEP_LINE.match(line):
            steps = int(_STEP_LINE.match(line).group(2))
        elif _MOE_LINE.match(line):
            sizes.has_experts = True
        elif _SIZE_LINE.match(line):
            kind, size, derive = _SIZE_LINE.match(line).groups()
            fields = _derive_fields(derive, line)
            sizes.size_lines.append(f"{kind} {size} ({derive})")
            if kind == kind_measuring("tp") and "decode_batch" in fields:
                sizes.decode_batches.append(int(fields["decode_batch"]))
            elif kind == kind_measuring("kv") and "prompt_tokens" in fields:
                sizes.prompt_tokens.append(int(fields["prompt_tokens"]))
                sizes.block_tokens = int(fields.get("block_tokens", sizes.block_tokens))
    if sizes is None:
        raise PlanError("fabscope list --model printed no 'model NAME: ...' line")
    # no TP all-reduce (tp 1: attention data parallel) prints no decode-batch size line
    if steps is None or (steps and not sizes.decode_batches) or not sizes.prompt_tokens:
        raise PlanError(f"fabscope list --model {name}: expected a 'deployment: tp N; all-reduces per "
                        "decode step: K' line and 'allreduce'/'kvpush' size lines with 'derive:'")
    sizes.allreduces_per_step = steps
    return sizes


def parse_duration_s(text: str) -> float:
    """`19.2s`, `1m05s`, `1h02m` (fabscope's estimate form) or `30m`, `90s`, `2h` (a budget)."""
    match = _DURATION.match(text.strip())
    if not text.strip() or not match or not any(match.groups()):
        raise PlanError(f"expected a duration such as 30m, 90s, 1h or 1m05s, got {text!r}")
    hours, minutes, seconds = match.groups()
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds or 0)


def format_duration(seconds: float) -> str:
    if seconds >= 60:
        return f"{int(seconds // 60)} min {int(round(seconds % 60)):02d} s"
    return f"{seconds:.3g} s"


@dataclass
class ListAnswer:
    """`fabscope list --scenario`: its estimate and thinned rounds, or why it refused."""
    ok: bool
    estimate_s: float = 0.0
    instances: int = 0
    thinned: List[str] = field(default_factory=list)
    memory_needed_mib: Optional[int] = None
    over_budget: bool = False
    error: str = ""
    text: str = ""
    loader_estimate_s: Optional[float] = None   # the loader's own figure, when calibrated


def smallest_estimate(answer: ListAnswer) -> str:
    """What the smallest plan would take, for a budget refusal: the estimate, or the
    loader's figure at one round an instance, or (no figure) the loader's refusal."""
    if answer.ok:
        return format_duration(answer.estimate_s)
    found = _SMALLEST.search(answer.error)
    if found:
        return f"{format_duration(parse_duration_s(found.group(1)))} (one round a test instance)"
    return f"refused by the scenario loader: {answer.error}"


def parse_scenario_listing(rc: int, out: str, err: str) -> ListAnswer:
    if rc != 0:
        message = (err.strip() or out.strip()).splitlines()
        message = message[-1] if message else f"exit {rc}"
        memory = _MEMORY_REFUSAL.search(message)
        return ListAnswer(False, error=message, text=out,
                          memory_needed_mib=int(memory.group(1)) if memory else None,
                          over_budget=bool(_BUDGET_REFUSAL.search(message)))
    answer, estimated = ListAnswer(True, text=out), False
    for line in out.splitlines():
        if _ESTIMATE.match(line):
            estimated = True
            answer.estimate_s = parse_duration_s(_ESTIMATE.match(line).group(1))
        elif re.match(r"^\d+\s", line):
            answer.instances += 1
            kept = re.search(r"kept \d+ of \d+ rounds.*$", line)
            if kept and "left out" in line:   # "<#> <test> <kind> <size> <condition> ..."
                words = line.split()
                answer.thinned.append(f"{words[1]} {words[3]} {words[4]}: {kept.group(0)}")
    if not estimated:
        return ListAnswer(False, error="fabscope list printed no 'estimated time: ... in all' line",
                          text=out)
    return answer


def fabscope_binary(explicit: Optional[str] = None) -> str:
    """--fabscope, else $FABSCOPE_BIN, else build/fabscope of this source tree, else PATH."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    for candidate in (explicit, os.environ.get("FABSCOPE_BIN"), os.path.join(repo, "build", "fabscope")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    if explicit:
        raise PlanError(f"--fabscope {explicit}: not an executable file", "--fabscope")
    from shutil import which
    found = which("fabscope")
    if not found:
        raise PlanError("no fabscope binary: build it (build/fabscope), or give --fabscope PATH or "
                        "FABSCOPE_BIN", "--fabscope")
    return found


def run_list(binary: str, args: List[str]) -> Tuple[int, str, str]:
    """One `fabscope list` (it starts MPI as a singleton; rank 0 prints)."""
    try:
        done = subprocess.run([binary, "list"] + args, capture_output=True, text=True,
                              timeout=LIST_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise PlanError(f"{binary} list {' '.join(args)} did not answer in {LIST_TIMEOUT_S} s") from None
    except OSError as exc:
        raise PlanError(f"cannot run {binary}: {exc.strerror}", "--fabscope") from None
    return done.returncode, done.stdout, done.stderr


def layout_from_topology(path: str) -> Tuple[int, int]:
    """(nodes per leaf, leaves per pod) from a topology file (docs/inventory.md): counted
    over its exact host names; glob patterns cannot be counted and are refused."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except OSError as exc:
        raise PlanError(f"--topology {path}: cannot read it ({exc.strerror})", "--topology") from None
    except yaml.YAMLError as exc:
        raise PlanError(f"--topology {path}: not valid YAML ({exc})", "--topology") from None
    hosts = doc.get("hosts") if isinstance(doc, dict) else None
    if not isinstance(hosts, dict) or not hosts:
        raise PlanError(f"--topology {path}: expected a 'hosts:' mapping of host -> {{pod, leaf}}",
                        "--topology")
    per_leaf: Dict[str, int] = {}
    leaves_of_pod: Dict[str, set] = {}
    for host, labels in hosts.items():
        if any(ch in str(host) for ch in "*?["):
            raise PlanError(f"--topology {path}: host pattern {host!r} cannot be counted; list the "
                            "hosts or give --nodes-per-leaf and --leaves-per-pod", "--topology")
        labels = labels if isinstance(labels, dict) else {}
        leaf, pod = str(labels.get("leaf", "")), str(labels.get("pod", ""))
        if leaf:
            per_leaf[leaf] = per_leaf.get(leaf, 0) + 1
            leaves_of_pod.setdefault(pod, set()).add(leaf)
    nodes_per_leaf = max(per_leaf.values(), default=0)
    leaves_per_pod = max((len(v) for p, v in leaves_of_pod.items() if p), default=0)
    return nodes_per_leaf, leaves_per_pod
