"""The binary's plan as `fabscope list` prints it (every test instance, its size, rounds,
memory, estimate and schedule) for every shipped scenario at a few cluster shapes, and
the serving model listing, held against the recorded expectation (expected_outputs.py:
a change detector for the runner's planning, the kinds' configuration and schedules;
the promises are the C++ unit and MPI tests'). And `fabscope inventory`, whose values
are this machine's: its two forms read back, as `plan` reads the JSON one."""

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from expected_outputs import check_expected, text_lines
from fabscope_analysis.serving.plan_paths import detect_gpus

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted(p.name for p in (ROOT / "scenarios").glob("*.yaml"))
# (ranks, ranks per node, nodes per leaf): two hosts on one leaf; 16 hosts in 4 leaves
SHAPES = [(16, 8, 0), (128, 8, 4)]


def _binary() -> str:
    for candidate in (os.environ.get("FABSCOPE_BIN"), str(ROOT / "build" / "fabscope")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.skip("no fabscope binary (build/fabscope or FABSCOPE_BIN)")


def _list(*args):
    done = subprocess.run([_binary(), "list", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, OMPI_MCA_plm="isolated"))
    return {"exit": done.returncode, "stdout": text_lines(done.stdout), "stderr": text_lines(done.stderr)}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_fabscope_list(scenario):
    held = {f"{n} ranks, {per_node} a node, {leaf} nodes a leaf": _list(
        "--scenario", f"scenarios/{scenario}", "--ranks", n, "--ranks-per-node", per_node,
        "--nodes-per-leaf", leaf) for n, per_node, leaf in SHAPES}
    check_expected("binary", scenario[:-len(".yaml")], held)


@pytest.mark.parametrize("model", ["llama3-8b", "llama3-70b", "deepseek-v3"])
def test_fabscope_list_model(model):
    check_expected("binary", f"model-{model}", {
        "tp 8": _list("--model", model),
        "tp 4, batches and prompts": _list("--model", model, "--tp", 4, "--decode-batch", 1, 7, 64,
                                           "--prompt", 1000, 32768, "--block-tokens", 32),
        "with a scenario": _list("--model", model, "--scenario", "scenarios/llama3-70b-serving.yaml",
                                 "--ranks", 16)})


def test_fabscope_list_model_counts_refused_below_1_and_taken_at_1():
    """--tp, --decode-batch, --prompt and --block-tokens are counts: 1 of every one is a
    deployment (as the analysis's impact takes it), 0 of any one is refused (exit 2)."""
    ones = {"--tp": 1, "--decode-batch": 1, "--prompt": 1, "--block-tokens": 1}
    taken = _list("--model", "llama3-8b", *[str(v) for item in ones.items() for v in item])
    assert taken["exit"] == 0, taken
    assert "derive: kv-request, block_tokens: 1, prompt_tokens: 1" in "\n".join(taken["stdout"])
    for option in ones:
        sizes = {**ones, option: 0}
        refused = _list("--model", "llama3-8b", *[str(v) for item in sizes.items() for v in item])
        assert refused["exit"] == 2, (option, refused)
        assert any("must be at least 1" in line for line in refused["stderr"]), (option, refused)


# One test of each kind with only the keys it cannot do without (and sizes): every other
# value is the kind's default, which the shipped scenarios mostly set explicitly.
MINIMAL = {
    "latency": "", "bandwidth": "", "bibw": "", "incast": "", "allreduce": "", "alltoall": "",
    "api": "", "example": "",
    "kvpush": "",
    "mix": "    layout: {prefill: 1, decode: 1, tp: 1, frontend: 5}\n    clients: 4\n",
    "fault": "    fault: loss\n    transport: ucx\n    fault_command: 'true'\n",
    "reference": "    tool: ib_write_bw\n",
}


@pytest.mark.parametrize("kind", sorted(MINIMAL))
def test_fabscope_list_defaults(kind, tmp_path):
    path = tmp_path / f"{kind}.yaml"
    sizes = {"kvpush": "{derive: kv-request, block_tokens: 16, prompt_tokens: [2048]}",
             "alltoall": "[59264]"}.get(kind, "[64KiB]")   # alltoall: 8 tokens of 7408 B
    model = "deepseek-v3" if kind == "alltoall" else "llama3-8b"   # tokens routed to experts
    path.write_text(f"name: defaults\nmodel: {model}\ntests:\n  - name: t\n    kind: {kind}\n"
                    f"    sizes: {sizes}\n" + MINIMAL[kind])
    held = _list("--scenario", path, "--ranks", 16)
    held["stdout"] = [line.replace(str(tmp_path), "<dir>") for line in held["stdout"]]
    held["stderr"] = [line.replace(str(tmp_path), "<dir>") for line in held["stderr"]]
    check_expected("binary", f"defaults-{kind}", held)


# docs/inventory.md's parts, as `inventory --json` names them
INVENTORY_KEYS = {"hostname", "rdma_devices", "interfaces", "gpus", "gpu_nic_affinity",
                  "numa_source", "versions", "environment", "notes"}


def test_fabscope_inventory_json_and_text():
    """`inventory --json` is one JSON object with every documented part and this host's
    name (what `plan --paths auto` reads through detect_gpus); plain `inventory` is the
    text form, not JSON."""
    binary = _binary()
    as_json = subprocess.run([binary, "inventory", "--json"], capture_output=True, text=True,
                             timeout=60, env=dict(os.environ, OMPI_MCA_plm="isolated"))
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert INVENTORY_KEYS <= set(doc), sorted(INVENTORY_KEYS - set(doc))
    assert doc["hostname"] == socket.gethostname()
    assert any(i["name"] == "lo" for i in doc["interfaces"]), doc["interfaces"]
    gpus, _, where = detect_gpus(binary)
    assert gpus == len(doc["gpus"]) and where.startswith(f"fabscope inventory on {doc['hostname']}:")
    as_text = subprocess.run([binary, "inventory"], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, OMPI_MCA_plm="isolated"))
    assert as_text.returncode == 0 and as_text.stdout.startswith(f"host {doc['hostname']}\n")
    with pytest.raises(ValueError):
        json.loads(as_text.stdout)
