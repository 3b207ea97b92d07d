"""Whole outputs of the serving commands (fit, impact, placement, plan and its calibration)
on fixed inputs, held against analysis/tests/expected/serving/ (expected_outputs.py: these
detect change, not correctness; the promises are tested in test_serving_*.py).

The inputs spread over the branches and thresholds of serving/: result files of a healthy
deployment, a slow one (over its share of the targets), a MoE one with a front end, one
whose all-reduces stall rarely, one measured on hosts whose line rate is known, and a
slow all-reduce on a cluster whose diagnosis names a host; a grid of placements and plans
over the shipped models (dense and MoE, TP/PP/EP, attention data parallel, cluster shapes
given and not, budgets from seconds to an hour) and the calibrated plan.

`plan` asks the fabscope binary for the model's sizes and the scenario's estimate
(`fabscope list`). Here those answers are replayed from expected/serving/listings.json,
recorded from the binary with the expectations (FABSCOPE_RECORD_EXPECTED=1 with
build/fabscope or FABSCOPE_BIN), keyed by the listed scenario's text: a plan whose
scenario changed finds no answer and fails, as its expectation would."""

import hashlib
import json
import re

import numpy as np
import pytest

from expected_outputs import EXPECTED_DIR, RECORD, check_expected, text_lines
from serving_files import add_collective, add_kv, reopened, serving_file
from synthetic import SAMPLE_DTYPE, SyntheticRun, write_matrix_run
from test_serving_calibrate import PROBE_LISTING, Calibration
from test_serving_fit_groups import grouped_run
from test_serving_fit_nodes import rotated_run
from test_serving_line_rate import inventory
from test_mix import write_mix_file

from fabscope_analysis.cli import main
from fabscope_analysis.reader import open_result
from fabscope_analysis.serving import plan_command
from fabscope_analysis.serving.calibrate import calibration_scenario, parse_instances
from fabscope_analysis.serving.impact_text import compare_lines, impact_html, report_impact
from fabscope_analysis.serving.plan_list import fabscope_binary, run_list

GROUP = "serving"
LISTINGS = EXPECTED_DIR / GROUP / "listings.json"
_RECORDED = {}
_TEMPORARY = re.compile(r"\.(plan|calibration)-\w+\.yaml")   # listed scenarios: temporary files


def stall_file(path):
    """TP all-reduces of 20 us of which 0.2 % stall 1 ms (more under incast), 4000
    measured: too few to tell a p99 of 160 a step; KV requests quiet only."""
    rng = np.random.default_rng(5)
    run = SyntheticRun(path, nranks=4)
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-8b\nparallel: {tp: 4}\n"
    times = 20e3 * rng.lognormal(0, 0.1, 4000)
    times[rng.random(4000) < 0.002] += 1e6
    quiet = add_collective(run, "allreduce", times, 32 * 4096 * 2, "quiet")
    loaded = times * 1.1
    loaded[rng.random(4000) < 0.01] += 2e6
    add_collective(run, "allreduce", loaded, 32 * 4096 * 2, "incast", quiet)
    add_kv(run, 30e6 * rng.lognormal(0, 0.3, 40), np.full(40, 5e6), nbytes=64 << 20)
    run.close()
    return str(path)


def line_rate_file(path):
    """KV requests between hosts of known line rate (fh0 10 Gb/s -> fh1 200 Gb/s RDMA),
    at 0.9 GB/s: 72 % of the 10 Gb/s sender's line rate, below the share where the likely
    limiters are named."""
    run = SyntheticRun(path, nranks=4, ranks_per_host=1)
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-70b\nparallel: {tp: 8}\n"
    run.add_hosts(inventory())
    rng = np.random.default_rng(2)
    nbytes = 64 << 20
    q = add_kv(run, nbytes / 0.9 * rng.lognormal(0, 0.02, 60), np.full(60, 1e4), nbytes=nbytes,
               prefill=0, decode=1, messages=4)
    add_kv(run, nbytes / 0.6 * rng.lognormal(0, 0.02, 60), np.full(60, 1e4), "bidirectional",
           nbytes=nbytes, prefill=0, decode=1, messages=4, quiet_index=q)
    run.close()
    return str(path)


def slow_cluster_file(path):
    """Six hosts, fh1 receiving at 10 %, and a TP all-reduce on ranks 0 and 1 of 40 us:
    160 per token over the 5 ms the fabric may take of a 50 ms ITL p99."""
    run = reopened(write_matrix_run(path, nranks=6, receive={1: 0.1}))
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-70b\nparallel: {tp: 8}\n"
    rng = np.random.default_rng(1)
    add_collective(run, "allreduce", 40e3 * rng.lognormal(0, 0.1, 300), 32 * 8192 * 2, "quiet")
    run.close()
    return run.path


def with_more(build, more):
    """What `build()` writes, with what `more(run)` adds just before the file is closed."""
    close = SyntheticRun.close

    def close_with_more(run, *args, **kwargs):
        more(run)
        close(run, *args, **kwargs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SyntheticRun, "close", close_with_more)
        return build()


def two_series(run):
    """Two TP all-reduce series of one class, the faster named last: fit judges the one of
    the lowest quiet median and names the other."""
    rng = np.random.default_rng(4)
    for name, us in (("tp-allreduce", 30.0), ("tp-allreduce-tuned", 22.0)):
        add_collective(run, "allreduce", us * 1e3 * rng.lognormal(0, 0.1, 2000), 32 * 8192 * 2,
                       "quiet", name=name)


def tp_only_conditions(run):
    """The TP all-reduce alone under incast (the MoE rounds not), and 19 operations of it
    under copy, one fewer than a composed step needs."""
    rng = np.random.default_rng(6)
    nbytes = 32 * 7168 * 2
    add_collective(run, "allreduce", 25e3 * rng.lognormal(0, 0.1, 2000), nbytes, "incast")
    add_collective(run, "allreduce", 25e3 * rng.lognormal(0, 0.1, 19), nbytes, "copy")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("serving")
    chunk = {"chunk": 2048, "tp_us": 150.0}
    return d, {
        "healthy": serving_file(d / "healthy.h5", iterations=6000, requests=300, prefill=chunk),
        "slow": serving_file(d / "slow.h5", seed=2, tp_us=45.0, tp_loaded=(("incast", 2.4),
                             ("bidirectional", 1.05)), kv_ms=260.0,
                             kv_loaded=(("incast", 3.1),), iterations=3000, requests=100),
        "moe": serving_file(d / "moe.h5", seed=3, model="deepseek-v3", moe_us=90.0,
                            iterations=3000, requests=60, api_ms=4.0,
                            prefill={"chunk": 1024, "tp_us": 120.0, "moe_us": 400.0}),
        "stalls": stall_file(d / "stalls.h5"),
        "line_rate": line_rate_file(d / "line_rate.h5"),
        "cluster": slow_cluster_file(d / "cluster.h5"),
        "groups": grouped_run(d, slow_group=2, name="groups.h5"),
        "groups_bursts": grouped_run(d, everywhere=0.004, bursts=((1, 3), (5, 0)), rounds=6,
                                     name="bursts.h5", seed=8),
        "nodes": rotated_run(d, slow_node=5, name="nodes.h5"),
        # the serving mix: all-reduces doubled together, KV x1.5, the front end unchanged
        "mix": with_more(lambda: write_mix_file(d / "mix.h5"), two_series),
        "moe_partial": with_more(lambda: serving_file(d / "moe_partial.h5", seed=9, model="deepseek-v3",
                                                      moe_us=70.0, tp_loaded=(), iterations=2000,
                                                      requests=30, tp_us=15.0), tp_only_conditions),
        "criteria": _write(d / "fit.criteria.yaml", "slo:\n  itl_p99: 60ms\n  ttft_p99: 2s\n"
                                                    "  itl_share: 12%\n  cif_p99: 3\n"),
        "absent_criteria": str(d / "absent.criteria.yaml"),
        "bad_criteria": _write(d / "bad.criteria.yaml", "slo:\n  itl_p99: 60ms\n  ttft_p99: soon\n"),
    }


def _write(path, text):
    path.write_text(text)
    return str(path)


def _run(capsys, argv, replace):
    code = main(argv)
    done = capsys.readouterr()
    return {"exit": code, "out": text_lines(done.out, replace), "err": text_lines(done.err, replace)}


FIT_CASES = {
    "healthy": ["healthy", "--slo", "itl_p99=50ms,ttft_p99=2s", "--prefill-chunk", "2048",
                "--gpus-per-node", "8"],
    "healthy_tight_p50": ["healthy", "--slo", "itl_p50=30ms,ttft_p50=1s,itl_share=15%,cif_p99=1.25",
                          "--prompt", "2048", "--decode-batch", "8", "--no-diagnose"],
    "slow": ["slow", "--slo", "itl_p99=50ms,ttft_p99=2s", "--no-diagnose", "--pp", "2"],
    "slow_colocated_cif_off": ["slow", "--slo", "itl_p99=80ms,cif_p99=off", "--colocated",
                               "--no-diagnose", "--gpus-per-node", "4"],
    "moe": ["moe", "--slo", "itl_p99=60ms,ttft_p99=1500ms", "--prefill-chunk", "1024",
            "--ep", "16", "--gpus-per-node", "8", "--no-diagnose"],
    "moe_dp_attention": ["moe", "--slo", "itl_p99=40ms", "--tp", "1", "--dp-attention", "--ep",
                         "8", "--no-diagnose"],
    "stalls": ["stalls", "--slo", "itl_p99=20ms,ttft_p99=500ms", "--no-diagnose"],
    "line_rate": ["line_rate", "--slo", "ttft_p99=1s", "--no-diagnose", "--prompt", "4096"],
    "cluster_diagnosed": ["cluster", "--slo", "itl_p99=50ms"],
    "groups_slow_group": ["groups", "--model", "llama3-8b", "--tp", "2", "--gpus-per-node", "1",
                          "--decode-batch", "1", "--slo", "itl_p99=200ms,cif_p99=off", "--no-diagnose"],
    "groups_bursts": ["groups_bursts", "--model", "llama3-8b", "--tp", "2", "--gpus-per-node",
                      "1", "--decode-batch", "1", "--slo", "itl_p99=150ms", "--no-diagnose"],
    "mix_two_series": ["mix", "--tp", "8", "--slo", "itl_p99=50ms,ttft_p99=2s", "--no-diagnose"],
    "moe_conditions_partial": ["moe_partial", "--slo", "itl_p99=80ms", "--ep", "16",
                               "--no-diagnose"],
    "nodes_slow_node": ["nodes", "--slo", "ttft_p99=2s,cif_p99=off"],
    "criteria_file": ["healthy", "--criteria", "<criteria>", "--slo", "ttft_p99=1s", "--no-diagnose"],
    "bad_criteria_file": ["healthy", "--criteria", "<bad_criteria>"],
    "absent_criteria_file": ["healthy", "--criteria", "<absent_criteria>"],
    "healthy_colocated_ttft": ["healthy", "--slo", "ttft_p99=2s,ttft_p50=1s", "--colocated",
                               "--prefill-chunk", "2048", "--no-diagnose"],
    "bad_slo": ["healthy", "--slo", "itl_p99=fast"],
}


@pytest.mark.parametrize("case", sorted(FIT_CASES))
def test_fit_text_and_json(files, tmp_path, capsys, case):
    d, paths = files
    which, *options = FIT_CASES[case]
    options = [paths[o[1:-1]] if o.startswith("<") else o for o in options]
    out_json = tmp_path / "fit.json"
    got = _run(capsys, ["fit", paths[which], *options, "--json", str(out_json)],
               {str(d): "<dir>", str(tmp_path): "<out>"})
    if out_json.exists():
        got["json"] = json.loads(out_json.read_text().replace(str(d), "<dir>"))
    check_expected(GROUP, f"fit_{case}", got)


IMPACT_CASES = {
    "healthy": ["healthy", "--prefill-ms", "300"],
    "slow_tp4": ["slow", "--tp", "4", "--decode-batch", "64", "--prompt", "2048"],
    "moe": ["moe", "--ep", "16", "--prefill-ms", "80"],
    "moe_dp_attention": ["moe", "--tp", "1", "--dp-attention", "--ep", "8"],
    "stalls": ["stalls", "--model", "llama3-8b", "--block-tokens", "32"],
    "line_rate": ["line_rate", "--prefill-ms", "1500"],
    "mix_two_series": ["mix", "--tp", "8", "--prefill-ms", "400"],
}


@pytest.mark.parametrize("case", sorted(IMPACT_CASES))
def test_impact_text_and_json(files, tmp_path, capsys, case):
    d, paths = files
    which, *options = IMPACT_CASES[case]
    out_json = tmp_path / "impact.json"
    got = _run(capsys, ["impact", paths[which], *options, "--json", str(out_json)],
               {str(d): "<dir>"})
    if out_json.exists():
        got["json"] = json.loads(out_json.read_text().replace(str(d), "<dir>"))
    check_expected(GROUP, f"impact_{case}", got)


def test_impact_in_the_report_and_compare(files):
    """The report's section (the headline lines) and compare's lines, from the same files."""
    d, paths = files
    opened = {name: open_result(paths[name]) for name in ("healthy", "slow", "moe", "mix")}
    got = {name: impact_html(report_impact(r)).replace(str(d), "<dir>").split("<li")
           for name, r in opened.items()}
    got["unknown_model"] = impact_html(report_impact(opened["healthy"], "gpt-5"))
    got["compare"] = compare_lines([opened["healthy"], opened["slow"]], ["A", "B"])
    got["compare_reverse"] = compare_lines([opened["slow"], opened["healthy"]], ["B", "A"])
    got["compare_mix"] = compare_lines([opened["mix"], opened["mix"]], ["A", "B"], tp=8)
    got["compare_models_differ"] = compare_lines([opened["healthy"], opened["moe"]], ["A", "M"])
    check_expected(GROUP, "impact_report_compare", got)


PLACEMENTS = {
    "llama70_tp8_no_shape": ["--model", "llama3-70b"],
    "llama70_tp8_8_per_node": ["--model", "llama3-70b", "--gpus-per-node", "8"],
    "llama70_tp16_8_per_node": ["--model", "llama3-70b", "--tp", "16", "--gpus-per-node", "8"],
    "llama70_tp8_pp2_4_per_node": ["--model", "llama3-70b", "--pp", "2", "--gpus-per-node", "4",
                                   "--prefill-chunk", "0"],
    "llama8_tp1_colocated": ["--model", "llama3-8b", "--tp", "1", "--colocated", "--gpus-per-node",
                             "1", "--decode-batch", "1", "--prompt", "1"],
    "llama405_tp8_pp4_nvl72": ["--model", "llama3-405b", "--pp", "4", "--gpus-per-node", "4",
                               "--nodes-per-nvlink-domain", "18", "--block-tokens", "32"],
    "deepseek_tp8_ep16": ["--model", "deepseek-v3", "--ep", "16", "--gpus-per-node", "8"],
    "deepseek_dp_attention_ep8": ["--model", "deepseek-v3", "--tp", "1", "--dp-attention", "--ep",
                                  "8", "--gpus-per-node", "8", "--prefill-chunk", "4096"],
    "deepseek_dp_attention_ep9_no_shape": ["--model", "deepseek-v3", "--tp", "1",
                                           "--dp-attention", "--ep", "9"],
    "deepseek_tp16_ep32_4_per_node": ["--model", "deepseek-v3", "--tp", "16", "--ep", "32",
                                      "--gpus-per-node", "4"],
    "refused_ep_dense": ["--model", "llama3-70b", "--ep", "8"],
    "refused_dp_attention_tp8": ["--model", "deepseek-v3", "--dp-attention"],
    "refused_batch_0": ["--model", "llama3-70b", "--decode-batch", "0"],
    "refused_tp3": ["--model", "llama3-70b", "--tp", "3"],
}


def test_placement_grid(capsys):
    got = {case: _run(capsys, ["placement", *argv], {}) for case, argv in PLACEMENTS.items()}
    check_expected(GROUP, "placement", got)


def _listing_key(args, replace):
    """The answer's key: the arguments, with a listed scenario's file as its text (temporary
    directories replaced)."""
    words = list(args)
    if "--scenario" in words:
        i = words.index("--scenario") + 1
        with open(words[i], encoding="utf-8") as f:
            text = f.read()
        for old, new in replace.items():
            text = text.replace(old, new)
        words[i] = hashlib.sha256(text.encode()).hexdigest()[:20]
    return " ".join(words)


@pytest.fixture
def replayed_listings(monkeypatch, tmp_path):
    """`fabscope list` answered from listings.json (recorded from the binary)."""
    # recording starts afresh (one process: not under -n), so no answer outlives its plan
    store = _RECORDED if RECORD else json.loads(LISTINGS.read_text())
    replace = {str(tmp_path): "<dir>"}

    def listed(binary, args):
        key = _listing_key(args, replace)
        if RECORD:
            rc, out, err = run_list(fabscope_binary(), args)
            store[key] = [rc] + [_TEMPORARY.sub(r".\1-<tmp>.yaml", text.replace(str(tmp_path), "<dir>"))
                                 for text in (out, err)]
            LISTINGS.write_text(json.dumps(dict(sorted(store.items())), indent=0) + "\n")
        assert key in store, (f"no recorded `fabscope list {key}`: the plan's scenario changed; "
                              "re-record with FABSCOPE_RECORD_EXPECTED=1 and review the diff")
        return tuple(store[key])

    monkeypatch.setattr(plan_command, "run_list", listed)
    monkeypatch.setattr(plan_command, "fabscope_binary", lambda explicit=None: "fabscope")
    return tmp_path


PLANS = {
    "llama70_16_ranks_2m": ["--model", "llama3-70b", "--ranks", "16", "--budget", "2m",
                            "--slo", "itl_p99=50ms", "--prompt", "512", "--paths", "host"],
    "llama70_tp16_gpu_30m": ["--model", "llama3-70b", "--tp", "16", "--ranks", "16",
                             "--slo", "itl_p99=50ms,ttft_p99=2s", "--paths", "gpu"],
    "llama70_pp2_leaves_5m": ["--model", "llama3-70b", "--pp", "2", "--ranks", "32",
                              "--nodes-per-leaf", "2", "--leaves-per-pod", "2", "--budget", "5m",
                              "--slo", "ttft_p99=1s", "--paths", "host",
                              "--conditions", "quiet,alltoall", "--prefill-chunk", "none"],
    "llama70_64_ranks_tight_40s": ["--model", "llama3-70b", "--ranks", "64", "--budget", "40s",
                                   "--slo", "itl_p99=50ms,ttft_p99=2s", "--paths", "host"],
    "llama8_tp2_1_per_node_1h": ["--model", "llama3-8b", "--tp", "2", "--ranks", "8",
                                 "--ranks-per-node", "1", "--budget", "1h", "--slo",
                                 "itl_p99=25ms,itl_share=20%", "--decode-batch", "1,8,64",
                                 "--paths", "host"],
    "deepseek_ep16_5m": ["--model", "deepseek-v3", "--ep", "16", "--ranks", "16", "--budget",
                         "5m", "--slo", "itl_p99=50ms", "--prompt", "512", "--paths", "gpu"],
    "deepseek_dp_attention_ep8": ["--model", "deepseek-v3", "--tp", "1", "--dp-attention",
                                  "--ep", "8", "--ranks", "16", "--budget", "10m", "--slo",
                                  "itl_p99=40ms,ttft_p99=3s", "--paths", "host"],
    "deepseek_dp_attention_ep16": ["--model", "deepseek-v3", "--tp", "1", "--dp-attention",
                                   "--ep", "16", "--ranks", "32", "--budget", "10m", "--slo",
                                   "itl_p99=40ms", "--paths", "gpu", "--conditions", "quiet,incast"],
    "llama405_nvl_domain": ["--model", "llama3-405b", "--pp", "2", "--ranks", "32",
                            "--ranks-per-node", "4", "--nodes-per-nvlink-domain", "2",
                            "--budget", "20m", "--slo", "itl_p99=80ms", "--paths", "host"],
    "llama70_topology_gpu_paths": ["--model", "llama3-70b", "--ranks", "32", "--topology",
                                   "<topology>", "--budget", "8m", "--slo",
                                   "itl_p99=50ms,ttft_p50=800ms", "--paths", "gpu",
                                   "--decode-batch", "4", "--prompt", "4096"],
    "deepseek_ep32_tight_90s": ["--model", "deepseek-v3", "--ep", "32", "--ranks", "32",
                                "--budget", "90s", "--slo", "itl_p99=50ms,ttft_p99=2s",
                                "--paths", "host", "--conditions", "quiet,incast"],
    "llama70_20_ranks_4_canaries": ["--model", "llama3-70b", "--tp", "4", "--ranks", "20",
                                    "--ranks-per-node", "4", "--budget", "10m", "--slo",
                                    "itl_p99=50ms", "--paths", "host", "--conditions",
                                    "quiet,copy", "--prefill-chunk", "none"],
    "llama70_128_ranks_all_pairs": ["--model", "llama3-70b", "--ranks", "128", "--budget", "30m",
                                    "--slo", "ttft_p99=2s", "--paths", "host", "--conditions",
                                    "quiet", "--prompt", "8192"],
    "llama70_136_ranks_sampled": ["--model", "llama3-70b", "--ranks", "136", "--budget", "30m",
                                  "--slo", "ttft_p99=2s", "--paths", "host", "--conditions",
                                  "quiet", "--prompt", "8192"],
    "refused_topology_pattern": ["--model", "llama3-70b", "--ranks", "16", "--topology",
                                 "<pattern_topology>", "--slo", "itl_p99=50ms", "--paths", "host"],
    "refused_conditions": ["--model", "llama3-70b", "--ranks", "16", "--slo", "itl_p99=50ms",
                           "--conditions", "incast,quiet", "--paths", "host"],
    "refused_budget": ["--model", "llama3-70b", "--ranks", "16", "--budget", "1s", "--slo",
                       "itl_p99=50ms", "--paths", "host"],
    "refused_tp": ["--model", "llama3-70b", "--tp", "32", "--ranks", "16", "--slo", "itl_p99=50ms",
                   "--paths", "host"],
    "refused_gpu_paths": ["--model", "llama3-70b", "--ranks", "16", "--slo", "itl_p99=50ms",
                          "--paths", "host", "--require-gpu-paths"],
}


TOPOLOGIES = {
    "topology": "hosts:\n" + "".join(f"  n{i}: {{pod: p{i // 4}, leaf: l{i // 2}}}\n" for i in range(4)),
    "pattern_topology": "hosts:\n  'n*': {pod: p0, leaf: l0}\n",
}


def _plan(capsys, tmp_path, argv, name="plan.yaml"):
    for key, text in TOPOLOGIES.items():
        if f"<{key}>" in argv:
            (tmp_path / f"{key}.yaml").write_text(text)
            argv = [str(tmp_path / f"{key}.yaml") if a == f"<{key}>" else a for a in argv]
    out = tmp_path / name
    got = _run(capsys, ["plan", *argv, "--output", str(out)], {str(tmp_path): "<dir>"})
    for written in (out, out.with_name(out.stem + ".criteria.yaml")):
        if written.exists():
            got[written.name] = text_lines(written.read_text(), {str(tmp_path): "<dir>"})
    return got


@pytest.mark.parametrize("case", sorted(PLANS))
def test_plan_text_scenario_and_criteria(replayed_listings, capsys, case):
    check_expected(GROUP, f"plan_{case}", _plan(capsys, replayed_listings, PLANS[case]))


def _probe_result(path, listing, cal):
    """The probe's result file, each instance taking what `cal` says it takes."""
    run = SyntheticRun(path, nranks=8)
    for row in parse_instances(listing):
        s = np.zeros(1, dtype=SAMPLE_DTYPE)
        start = run.start_ns()
        s[0] = (0, 0, 1, row.nbytes, start, start + int(row.seconds(cal) * 1e9) - 1000, 0, 0)
        run.add_test(row.test, "latency", s, nbytes=row.nbytes)
    run.close()
    return str(path)


def test_calibrated_plan_and_its_probe(replayed_listings, capsys):
    """The probe written, then a plan of a slow cluster (0.05 GB/s a pair) calibrated from
    its result: shrunk to its budget, bandwidth probes of one 1 MiB message."""
    tmp_path = replayed_listings
    common = ["--model", "llama3-8b", "--tp", "2", "--ranks", "8", "--ranks-per-node", "1",
              "--budget", "40s", "--slo", "ttft_p99=2s", "--conditions", "quiet",
              "--decode-batch", "1", "--prefill-chunk", "none", "--prompt", "16", "--paths", "host"]
    got = {"probe": _run(capsys, ["plan", *common, "--output", str(tmp_path / "x.yaml"),
                                  "--calibration-probe", str(tmp_path / "probe.yaml")],
                         {str(tmp_path): "<dir>"})}
    got["probe"]["probe.yaml"] = text_lines((tmp_path / "probe.yaml").read_text())
    gpu = [w if w != "host" else "gpu" for w in common]
    got["probe_gpu"] = _run(capsys, ["plan", *gpu, "--output", str(tmp_path / "x.yaml"),
                                     "--calibration-probe", str(tmp_path / "probe-gpu.yaml")],
                            {str(tmp_path): "<dir>"})
    got["probe_gpu"]["probe.yaml"] = text_lines((tmp_path / "probe-gpu.yaml").read_text())
    slow = Calibration(500e-6, 0.05e9, 10e-3, 0.1, 0, 0, 0, 0)
    probe = _probe_result(tmp_path / "probe.h5", PROBE_LISTING, slow)
    got["calibrated"] = _plan(capsys, tmp_path, common + ["--calibration", probe,
                                                          "--calibration-wall", "30"], "cal.yaml")
    got["calibrated_file_times"] = _plan(capsys, tmp_path, common + ["--calibration", probe],
                                         "cal2.yaml")
    got["probe_scenario_of_defaults"] = calibration_scenario()
    check_expected(GROUP, "plan_calibrated", got)


def test_recorded_listings_are_the_binarys_form():
    """The replayed answers are `fabscope list`'s: an estimate line in each that succeeded."""
    store = json.loads(LISTINGS.read_text())
    for key, (rc, out, _) in store.items():
        if "--scenario" in key and rc == 0:
            assert re.search(r"^estimated time: \S+ in all", out, re.M), key
