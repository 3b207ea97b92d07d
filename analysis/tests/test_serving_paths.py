"""Serving's data paths: the plan measures the serving classes over NCCL on GPU memory (the
KV push GPU-direct) where the nodes have GPUs, `fit` says which path each judged class ran
over (`measured over host memory: a stand-in` otherwise), and `--require-gpu-paths` refuses
a plan or a file over host memory (docs/serving-fit.md, "Data paths")."""

import json
import os
import stat
import subprocess

import h5py
import pytest

from contracts import outcome_contract
from helpers import run_main
from serving_files import serving_file
from test_serving_plan import by_name, REPO

from fabscope_analysis.serving.plan import fit_arguments
from fabscope_analysis.serving.plan_list import PlanError
from fabscope_analysis.serving.plan_paths import GPU, HOST, DataPaths, choose_paths, detect_gpus

SLO = "itl_p99=50ms,ttft_p99=2s"


def gpu_plan(model="llama3-70b", ranks=16, required=False, mode=GPU):
    """plan_for with the serving tests on `mode`'s path (TP 8 on 8-rank nodes: TP crosses
    the fabric only through PP or TP 16; DeepSeek-V3's MoE rounds cross with EP 16)."""
    from test_serving_plan import fake_estimate, knobs, listing
    from fabscope_analysis.serving.plan import Cluster, PlanRequest, probes_for
    from fabscope_analysis.serving.plan_budget import fit_budget
    k = knobs()
    cluster = Cluster(ranks)
    k.probes = probes_for(cluster)
    req = PlanRequest(model, 16 if model == "llama3-70b" else 8, 16 if model == "deepseek-v3"
                      else None, cluster, 1800.0, SLO,
                      paths=DataPaths(mode, f"--paths {mode}", required))
    return fit_budget(req, listing(model), k, "plan.criteria.yaml", fake_estimate)


def test_on_gpu_nodes_the_serving_tests_run_over_nccl_on_gpu_memory():
    for model, serving in (("llama3-70b", {"tp-allreduce", "tp-allreduce-prefill", "kv-push"}),
                           ("deepseek-v3", {"moe-dispatch-combine",
                                            "moe-dispatch-combine-prefill", "kv-push"})):
        tests = by_name(gpu_plan(model))
        assert serving <= set(tests), sorted(tests)
        for name, test in tests.items():
            on_gpu = (test.get("transport"), test.get("memory")) == ("nccl", "cuda")
            # the diagnosis's probes and GPCNeT's canaries stay on MPI through host memory
            assert on_gpu == (name in serving), (name, test)
        host = by_name(gpu_plan(model, mode=HOST))
        assert not any("transport" in t or "memory" in t for t in host.values())
    plan = gpu_plan()
    assert any(n.startswith("paths: serving's GPU paths") for n in plan.notes), plan.notes
    assert any(n.startswith("paths: MPI through host memory, a stand-in")
               for n in gpu_plan(mode=HOST).notes)
    # the requirement travels to fit through the plan's fit line
    assert fit_arguments(gpu_plan(required=True)).endswith(" --require-gpu-paths")
    assert "--require-gpu-paths" not in fit_arguments(plan)


def fake_binary(tmp_path, gpus, nccl):
    """A fabscope whose `inventory --json` lists `gpus` GPUs and NCCL or not."""
    doc = {"hostname": "node01", "gpus": [{"index": i} for i in range(gpus)],
           "versions": {"nccl": "2.28.9" if nccl else ""}}
    path = tmp_path / f"fabscope-{gpus}-{int(nccl)}"
    path.write_text("#!/bin/sh\n[ \"$1 $2\" = 'inventory --json' ] || exit 2\n"
                    f"cat <<'EOF'\n{json.dumps(doc)}\nEOF\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_auto_takes_the_gpu_paths_only_where_this_hosts_inventory_has_gpus_and_nccl(tmp_path):
    found = choose_paths("auto", lambda: fake_binary(tmp_path, 8, True))
    assert found.mode == GPU and "node01: 8 GPU(s), NCCL 2.28.9" in found.why
    for gpus, nccl, why in ((0, True, "0 GPU(s)"), (8, False, "built without NCCL")):
        chosen = choose_paths("auto", lambda: fake_binary(tmp_path, gpus, nccl))
        assert chosen.mode == HOST and why in chosen.why and "--paths gpu" in chosen.why
        with pytest.raises(PlanError, match="--require-gpu-paths: the plan would measure over "
                                            "host memory"):
            choose_paths("auto", lambda: fake_binary(tmp_path, gpus, nccl), required=True)
    # no inventory to read (the binary fails): no GPUs, no NCCL, and why; host memory
    assert detect_gpus("/bin/false") == (0, False, "/bin/false inventory --json gave no inventory")
    unread = choose_paths("auto", lambda: "/bin/false")
    assert unread.mode == HOST and "/bin/false inventory --json gave no inventory" in unread.why
    # an explicit choice reads no inventory
    assert choose_paths("gpu", lambda: pytest.fail("inventory read")).mode == GPU
    assert choose_paths("host", lambda: pytest.fail("inventory read")).mode == HOST


def on_gpu(path, kv_memory_path="gpu-direct"):
    """Marks a synthetic serving file's collectives as NCCL on GPU memory and its KV pushes
    as `kv_memory_path` over NCCL, as the plan's GPU paths record them."""
    with h5py.File(path, "a") as f:
        for inst in f["tests"].values():
            inst.attrs["transport"], inst.attrs["memory"] = "nccl", "cuda"
            if inst.attrs.get("kind") in ("kvpush", b"kvpush"):
                inst.attrs["memory_path"] = kv_memory_path
                if kv_memory_path != "gpu-direct":
                    inst.attrs["transport"] = "mpi"
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("paths")
    return {"host": serving_file(d / "host.h5", iterations=2000),
            "gpu": on_gpu(serving_file(d / "gpu.h5", iterations=2000)),
            "staged": on_gpu(serving_file(d / "staged.h5", iterations=2000),
                             "gpu-via-pinned-host")}


def first_line(p):
    return p.stdout.splitlines()[0]


def test_fit_says_which_path_each_judged_class_ran_over(files):
    p = run_main("fit", files["gpu"], "--slo", SLO)
    assert p.returncode in (0, 1), p.stderr
    assert first_line(p).endswith(" [paths: serving's GPU paths (TP all-reduce: nccl on GPU "
                                  "memory; KV push: GPU-direct over nccl)]"), first_line(p)
    p = run_main("fit", files["host"], "--slo", SLO)
    assert first_line(p).endswith(" [paths: measured over host memory: a stand-in (TP all-reduce: "
                                  "mpi on host memory; KV push: mpi on host memory)]"), first_line(p)
    # the KV from GPU memory staged through pinned host is not GPU-direct: still a stand-in
    p = run_main("fit", files["staged"], "--slo", SLO)
    assert first_line(p).endswith(" [paths: measured over host memory: a stand-in (KV push: from "
                                  "GPU memory staged through pinned host over mpi); TP all-reduce: "
                                  "nccl on GPU memory]"), first_line(p)


@outcome_contract("fit --require-gpu-paths", 2, "—")
def test_fit_refuses_a_file_measured_over_host_memory_when_gpu_paths_are_required(files):
    for name in ("host", "staged"):
        p = run_main("fit", files[name], "--slo", SLO, "--require-gpu-paths")
        assert p.returncode == 2 and not p.stdout, p.stdout
        assert "--require-gpu-paths" in p.stderr and "a stand-in" in p.stderr, p.stderr
    p = run_main("fit", files["gpu"], "--slo", SLO, "--require-gpu-paths")
    assert p.returncode in (0, 1) and "[paths: serving's GPU paths" in first_line(p), p.stderr


@outcome_contract("plan --require-gpu-paths", 2, "—")
def test_plan_refuses_host_memory_when_gpu_paths_are_required(tmp_path):
    out = tmp_path / "p.yaml"
    p = run_main("plan", "--model", "llama3-70b", "--ranks", "16", "--slo", SLO, "--paths",
                 "host", "--require-gpu-paths", "--output", out)
    assert p.returncode == 2 and not out.exists()
    assert p.stderr.startswith("error: --require-gpu-paths: the plan would measure over host "
                               "memory, a stand-in (--paths host)"), p.stderr


@outcome_contract("launch/fabscope-fit --require-gpu-paths", 2, "—")
def test_the_wrapper_refuses_to_run_without_gpu_paths_when_required(tmp_path):
    done = subprocess.run([os.path.join(REPO, "launch", "fabscope-fit"), "--dir",
                           str(tmp_path / "d"), "--model", "llama3-70b", "--ranks", "16",
                           "--slo", SLO, "--paths", "host", "--require-gpu-paths"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--require-gpu-paths: the plan would measure over host memory" in done.stderr
    assert not (tmp_path / "d" / "plan.yaml").exists() and "run:" not in done.stdout
    # refused before the calibration probe would run on the cluster
    assert not (tmp_path / "d" / "calibrate.yaml").exists() and "calibrate:" not in done.stdout
