"""`export --openmetrics OUT FILE...`: metrics for Prometheus.

The exported figures must be the numbers summary, verdict, diagnose and impact compute
for the same file (parsed back from the written text); the text must pass `promtool check
metrics` (Debian's prometheus package), an OpenMetrics parser (python3-prometheus-client)
and node_exporter's textfile collector (prometheus-node-exporter) with hostile host names;
bad input exits 2 naming the file and leaves an existing OUT as it was.
"""

import json
import math
import os
import re
import shutil
import socket
import stat as file_mode
import subprocess
import time
import urllib.request

import h5py
import numpy as np
import pytest

import synthetic
from fabscope_analysis import open_result
from fabscope_analysis.export import collect, write_atomically
from fabscope_analysis.export_format import FAMILY_SPECS, escape_label_value, parse_text
from fabscope_analysis.serving.impact import compute_impact, deployment_from_run
from fabscope_analysis.run_analysis import RunAnalysis
from fabscope_analysis.verdict import compute_verdict
from contracts import outcome_contract
from helpers import run_cli, run_main
from synthetic import write_matrix_run

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "data", "emulated-6-hosts-planted.h5")
DOCS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs", "analysis.md")
# A kvpush of a llama3-70b TP8 request of 8192 tokens (320 MiB per rank), as test_impact.
def KV_320MIB(rng):
    return {"nbytes": 320 << 20, "transfer_ns": rng.normal(60e6, 3e6, 50),
            "queue_ns": rng.normal(1e5, 1e4, 50)}


# Every character a label value must survive: quote, backslash, newline, the syntax of
# a sample line ({ } , = #) and a trailing backslash.
HOSTILE = ['fh"0', 'fh\\1\n', 'fh{2},x="y"', 'fh#3 \\n\\']


def _series(text):
    """{(name, frozenset(labels)): value}, asserting no series is written twice."""
    out = {}
    for name, labels, value in parse_text(text):
        key = (name, frozenset(labels.items()))
        assert key not in out, f"series written twice: {name} {labels}"
        out[key] = value
    return out


def _find(all_series, name, **want):
    """Values of the samples of `name` whose labels include `want`."""
    return [v for (n, labels), v in all_series.items()
            if n == name and all(dict(labels).get(k) == w for k, w in want.items())]


def _one(all_series, name, **want):
    found = _find(all_series, name, **want)
    assert len(found) == 1, (name, want, found)
    return found[0]


def _export(tmp_path, *files, name="out.prom", extra=()):
    out = tmp_path / name
    proc = run_cli("export", "--openmetrics", out, *files, *extra)
    assert proc.returncode == 0, proc.stderr
    return out.read_text(), proc


def _render(*paths, **kwargs):
    """export's text for these files, in process (the CLI is tested on its own)."""
    results = [open_result(p, warn_incomplete=False) for p in paths]
    try:
        return collect(results, **kwargs).render()
    finally:
        for r in results:
            r.close()


def _hostile_run(path):
    """A 6-host all-pairs run whose host names and scenario name need escaping, with a
    planted receiver (a culprit named by one of the hostile names)."""
    names = HOSTILE + ["plain-4", "plain-5"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(synthetic.SyntheticRun, "host", lambda self, rank: names[rank])
        write_matrix_run(path, receive={1: 0.3})
    with h5py.File(path, "r+") as f:
        f.attrs["scenario_name"] = 'rack "A"\\nightly\n2'
    return names


@pytest.fixture(scope="module")
def exported(files, tmp_path_factory):
    d = tmp_path_factory.mktemp("export")
    text, proc = _export(d, files["standard"])
    return {"text": text, "stdout": proc.stdout, "dir": d}


def test_figures_are_summarys_and_verdicts(files, exported):
    """Every summary row's figures, impact factors, samples, status and stragglers, the
    per-rank tails and the run's verdict, parsed back from the file, equal what summary
    and verdict compute for it; and the verdict equals the line `verdict --brief` prints."""
    series = _series(exported["text"])
    with open_result(files["standard"]) as result:
        analysis = RunAnalysis(result)
        frame = analysis.summary_frame()
        verdict = compute_verdict(result)
        by_index = {i.index: i for i in analysis.instances}
        hosts = analysis.hosts
        run_id = result.attrs["run_id"]
        for row in frame.to_dict("records"):
            labels = {"file": "standard.h5", "case": row["case"],
                      "condition": row["condition"], "pass": row["pass"]}
            assert _one(series, "fabscope_test_samples", **labels) == row["samples"]
            assert _one(series, "fabscope_test_status", status=row["status"], **labels) == 1
            bandwidth = row["metric"] == "bandwidth"
            family = ("fabscope_bandwidth_bytes_per_second" if bandwidth
                      else "fabscope_latency_seconds")
            for column, stat in (("p50", "p50"), ("p99", "p99"), ("p99.9", "p99.9"),
                                 ("mean", "mean"), ("worst", "worst")):
                got = _find(series, family, stat=stat, **labels)
                if math.isnan(row[column]):   # no samples: no series
                    assert got == [], (row["case"], stat)
                    continue
                want = row[column] * 1e9 if bandwidth else row[column] / 1e6
                assert got == [pytest.approx(want, rel=1e-12)], (row["case"], stat)
            for column, stat in (("impact_mean", "mean"), ("impact_p99", "p99")):
                got = _find(series, "fabscope_impact_ratio", stat=stat, **labels)
                assert got == ([] if math.isnan(row[column])
                               else [pytest.approx(row[column], rel=1e-12)])
            stats = analysis.stats(by_index[row["index"]])
            assert sorted(dict(k[1])["rank"] for k in series
                          if k[0] == "fabscope_straggler"
                          and all(dict(k[1]).get(a) == b for a, b in labels.items())) == \
                sorted(str(r) for r in stats.stragglers)
            rank_family = ("fabscope_rank_bandwidth_bytes_per_second" if bandwidth
                           else "fabscope_rank_latency_seconds")
            for tail in stats.rank_tails.to_dict("records"):
                for stat in ("p50", "p99"):
                    want = tail[stat] * 1e9 if bandwidth else tail[stat] / 1e6
                    assert _one(series, rank_family, rank=str(int(tail["rank"])),
                                host=hosts[int(tail["rank"])], stat=stat, **labels) == \
                        pytest.approx(want, rel=1e-12)
    # the planted defects are in the figures: the congested pingpong's impact is > 1,
    # rank 3 (5x slower) is a straggler, the slow pair 2 -> 5 has the lowest median
    assert _one(series, "fabscope_impact_ratio", case="pingpong/8", condition="incast",
                stat="p99") > 1.3
    assert _one(series, "fabscope_straggler", case="pingpong/8", condition="quiet",
                rank="3") == 1
    pairs = {dict(k[1])["rank"] + "->" + dict(k[1])["peer_rank"]: v for k, v in series.items()
             if k[0] == "fabscope_pair_bandwidth_bytes_per_second"
             and dict(k[1])["case"] == "allpairs-bw/1048576"}
    assert len(pairs) == 8 * 7 and min(pairs, key=pairs.get) in ("2->5", "5->2")
    # the verdict, its checks, and the same answer as `verdict --brief`
    assert _one(series, "fabscope_verdict_passed", file="standard.h5") == int(verdict.passed)
    assert _one(series, "fabscope_verdict_checks", outcome="failed") == \
        sum(1 for c in verdict.checks if not c.passed)
    # every check in exactly one outcome, as accept counts them (cannot tell is not passed)
    counts = {o: _one(series, "fabscope_verdict_checks", outcome=o)
              for o in ("passed", "failed", "cannot_tell", "skipped")}
    assert sum(counts.values()) == len(verdict.checks), counts
    assert counts["passed"] == sum(1 for c in verdict.checks if c.label == "PASS"), counts
    brief = run_cli("verdict", files["standard"], "--brief")
    assert brief.stdout.startswith("verdict: FAIL") and brief.returncode == 1
    assert _one(series, "fabscope_run_info", run_id=run_id, file="standard.h5") == 1
    assert _one(series, "fabscope_run_complete") == 1
    assert _one(series, "fabscope_run_ranks") == 8
    assert exported["stdout"].startswith("wrote ")


def test_culprits_are_diagnoses(tmp_path):
    """On the real emulated run with three planted culprits (criteria in force: the
    rack default, which uses diagnose): the culprits, their directions, confidence and
    score, and the answer, equal `diagnose --json`."""
    text, _ = _export(tmp_path, REAL)
    series = _series(text)
    proc = run_cli("diagnose", REAL, "--json", tmp_path / "d.json")
    assert proc.returncode == 1
    d = json.loads((tmp_path / "d.json").read_text())
    assert d["verdict"] == "not fit" and len(d["culprits"]) == 3
    assert _one(series, "fabscope_diagnosis", verdict="not fit") == 1
    assert _one(series, "fabscope_diagnosis", verdict="fit") == 0
    assert _one(series, "fabscope_diagnosis_culprits") == 3
    exported = {(dict(k[1])["host"], dict(k[1])["direction"], dict(k[1])["confidence"])
                for k in series if k[0] == "fabscope_culprit"}
    assert exported == {(c["host"], c["direction"], c["confidence"]) for c in d["culprits"]}
    for c in d["culprits"]:
        assert _one(series, "fabscope_culprit_score", host=c["host"],
                    direction=c["direction"]) == pytest.approx(c["score"], rel=1e-12)
    assert {h for h, _, _ in exported} == {"fdiag1", "fdiag3", "fdiag5"}
    assert _one(series, "fabscope_verdict_passed", criteria="rack-acceptance.yaml") == 0
    assert _one(series, "fabscope_validity_finding", host="*", what="oversubscribed") == 1


def test_no_diagnose_verdict_when_the_criteria_do_not_use_it(files, tmp_path):
    """With criteria that do not use diagnose, no second verdict (docs: one verdict)."""
    criteria = tmp_path / "no-diagnose.yaml"
    criteria.write_text("fabscope_criteria: 1\ndiagnose: false\nrules:\n"
                        "  - {name: samples, match: {kind: \"*\"}, limits: {samples: {min: 1}}}\n")
    with open_result(REAL) as result:
        m = collect([result], criteria=str(criteria))
    text = m.render()
    assert "fabscope_diagnosis" not in text and "fabscope_culprit" not in text
    assert 'criteria="no-diagnose.yaml"' in text


def test_hostile_names_are_escaped(outputs):
    """Host and scenario names with quotes, backslashes, newlines and line syntax read
    back exactly, in the culprit, per-rank and per-pair series."""
    names, text = outputs["hostile names"], outputs["hostile"]
    series = _series(text)
    scenarios = {dict(k[1])["scenario"] for k in series}
    assert scenarios == {'rack "A"\\nightly\n2'}
    culprits = [dict(k[1])["host"] for k in series if k[0] == "fabscope_culprit"]
    assert culprits == [names[1]], culprits
    ranks = {dict(k[1])["rank"]: dict(k[1])["host"] for k in series
             if k[0] == "fabscope_rank_bandwidth_bytes_per_second"}
    assert ranks == {str(r): n for r, n in enumerate(names)}
    ends = {dict(k[1])[end] for k in series for end in ("host", "peer_host")
            if k[0] == "fabscope_pair_latency_seconds"}
    assert ends == set(names)
    # every line is one sample or one comment: no raw newline inside a label
    for line in text.splitlines():
        assert line.startswith("# ") or re.match(r"^fabscope_[a-z_]+[{ ]", line), line
    assert escape_label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'


# An all-reduce's own figures as its kind writes them (kinds/collectives.py).
PIPELINED = {"busbw_gbps": 11.5, "collective_p50_ns": 41_000.0, "pipelined_busbw_gbps": 23.25,
             "pipelined_time_ns": 20_500.0, "pipelined_calls": np.int64(200)}


def _kind_files(d, allreduce_file):
    """A fault drill (test_fault_drill.write_drill, one false loss) and a copy of an
    all-reduce file whose first instance holds the pipelined figures."""
    from test_fault_drill import write_drill
    drill = d / "drill.h5"
    write_drill(drill, false_losses=["rank 2 (host2)"])
    allreduce = d / "allreduce-pipelined.h5"
    shutil.copy(allreduce_file, allreduce)
    with h5py.File(allreduce, "r+") as f:
        first = f["tests"][sorted(f["tests"])[0]]
        for key, value in PIPELINED.items():
            first.attrs[key] = value
    return drill, allreduce


def test_a_kinds_own_figures_are_its_summary_figures(tmp_path):
    """fabscope_kind_*: the figures the kind's summary lines print (the same computed
    figures, kinds.compute_kinds), in base units, labelled by figure."""
    from test_impact import spiky, write_allreduce_file
    rng = np.random.default_rng(3)
    source = write_allreduce_file(tmp_path / "ar.h5", {(512 << 10, "quiet"): spiky(rng, 50)})
    drill, allreduce = _kind_files(tmp_path, source)
    series = _series(_render(drill, allreduce))
    assert _one(series, "fabscope_kind_seconds", kind="fault", figure="detection") == 0.412
    assert _one(series, "fabscope_kind_seconds", figure="expected_detection",
                stack="UCX over TCP") == 924.6
    assert _one(series, "fabscope_kind_seconds", figure="expected_detection",
                stack="a verbs RC queue pair") == 0.537
    assert _one(series, "fabscope_kind_seconds", figure="return_to_baseline") == 0.73
    assert _one(series, "fabscope_kind_value", figure="false_losses") == 1
    assert _one(series, "fabscope_kind_bytes_per_second", kind="allreduce",
                figure="busbw_pipelined") == 23.25e9
    assert _one(series, "fabscope_kind_bytes_per_second", figure="busbw_per_call") == 11.5e9
    assert _one(series, "fabscope_kind_seconds", figure="collective_p50") == pytest.approx(41e-6)
    assert _one(series, "fabscope_kind_seconds", figure="pipelined_time_per_call") == \
        pytest.approx(20.5e-6)
    # the labels are the instance's test labels, as its other series have them
    status = [dict(k[1]) for k in series if k[0] == "fabscope_test_status"
              and dict(k[1])["kind"] == "fault"]
    detection = [dict(k[1]) for k in series if k[0] == "fabscope_kind_seconds"
                 and dict(k[1])["figure"] == "detection"][0]
    assert {k: v for k, v in detection.items() if k != "figure"} == \
        {k: v for k, v in status[0].items() if k != "status"}


@pytest.fixture(scope="module")
def outputs(files, tmp_path_factory):
    """Outputs covering every family and the edge cases: the synthetic standard run and
    its incomplete twin together (written by the CLI), the real run, hostile names, site
    scopes, a serving model."""
    d = tmp_path_factory.mktemp("outputs")
    hostile = d / "hostile.h5"
    names = _hostile_run(hostile)
    from test_impact import spiky, write_allreduce_file
    rng = np.random.default_rng(3)
    serving = write_allreduce_file(d / "serving.h5",
                                   {(512 << 10, "quiet"): spiky(rng, 200),
                                    (512 << 10, "incast"): spiky(rng, 200, 40_000.0)},
                                   kv=[KV_320MIB(rng)])
    from test_scopes import _write as write_sites
    from serving_files import serving_file
    sites = write_sites(d / "sites.h5", congested=True)
    kv_loaded = serving_file(d / "kv.h5", kv_loaded=(("incast", 2.0),))
    drill, allreduce = _kind_files(d, serving)
    out = {"two": _export(d, files["standard"], files["incomplete"])[0]}
    for label, paths in (("real", [REAL]), ("hostile", [hostile]), ("serving", [serving]),
                         ("sites", [sites]), ("kv under load", [kv_loaded]),
                         ("kinds", [drill, allreduce])):
        out[label] = _render(*paths)
    return {"texts": out, "hostile": out["hostile"], "hostile names": names}


def test_promtool_check_metrics(outputs):
    """promtool (Debian's prometheus package) parses and lints every output clean."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (apt-get install prometheus): the exported "
                    "text is not checked against Prometheus' own parser and lint")
    outputs = outputs["texts"]
    families = set()
    for label, text in outputs.items():
        proc = subprocess.run([promtool, "check", "metrics"], input=text, text=True,
                              capture_output=True, timeout=60)
        assert proc.returncode == 0 and not proc.stdout.strip() and not proc.stderr.strip(), \
            (label, proc.returncode, proc.stdout, proc.stderr)
        families |= {name for name, _, _ in parse_text(text)}
    # the outputs together hold every family, so every family was checked
    assert families == {s.name for s in FAMILY_SPECS}, \
        {s.name for s in FAMILY_SPECS} - families
    # and promtool does catch what this test relies on it for: a broken escape
    broken = outputs["hostile"].replace('\\"', '"', 1)
    proc = subprocess.run([promtool, "check", "metrics"], input=broken, text=True,
                          capture_output=True, timeout=60)
    assert proc.returncode != 0


def test_openmetrics_parser(outputs):
    """The OpenMetrics parser of python3-prometheus-client (checks # EOF, UNIT against the
    name, families not split) reads every output to the same samples."""
    try:
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
    except ImportError:
        pytest.skip("python3-prometheus-client not installed: the text is not checked "
                    "against an OpenMetrics parser")
    for label, text in outputs["texts"].items():
        assert text.endswith("\n# EOF\n")
        families = list(text_string_to_metric_families(text))
        assert [f.name for f in families] == list(dict.fromkeys(
            name for name, _, _ in parse_text(text)))
        units = {s.name: s.unit for s in FAMILY_SPECS}
        parsed = {}
        for family in families:
            assert family.type == "gauge" and family.unit == units[family.name], family.name
            for s in family.samples:
                parsed[(s.name, frozenset(s.labels.items()))] = s.value
        assert parsed == _series(text), label


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_node_exporter_textfile_collector(files, tmp_path):
    """node_exporter's textfile collector reads the file (no scrape error) and serves
    the series with the same labels, hostile names included."""
    binary = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if binary is None:
        pytest.skip("prometheus-node-exporter not installed: the textfile collector is "
                    "not tried on the exported file")
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    hostile = tmp_path / "hostile.h5"
    names = _hostile_run(hostile)
    _export(textfiles, hostile, files["standard"], name="fabscope.prom")
    port = _free_port()
    proc = subprocess.Popen([binary, "--collector.disable-defaults", "--collector.textfile",
                             f"--collector.textfile.directory={textfiles}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 15
        body = None
        while body is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                            timeout=5) as r:
                    body = r.read().decode()
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.2)
    finally:
        proc.terminate()
        try:
            log = proc.communicate(timeout=10)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            log = proc.communicate()[0]
    assert "node_textfile_scrape_error 0" in body, log
    served = {(n, frozenset(lab.items())) for n, lab, _ in parse_text(
        "\n".join(line for line in body.splitlines() if line.startswith(("#", "fabscope_"))))}
    hosts = {dict(k[1]).get("host") for k in served if k[0] == "fabscope_culprit"}
    assert names[1] in hosts, hosts
    assert any(k[0] == "fabscope_verdict_passed" and dict(k[1])["file"] == "standard.h5"
               for k in served)


def test_incomplete_run_exports_with_complete_0(files, tmp_path):
    text, proc = _export(tmp_path, files["incomplete"])
    assert "incomplete" in proc.stderr
    series = _series(text)
    assert _one(series, "fabscope_run_complete") == 0
    assert _one(series, "fabscope_run_exit_code") == -1
    assert _find(series, "fabscope_run_finished_timestamp_seconds") == []
    assert _one(series, "fabscope_run_started_timestamp_seconds") == 1735689600  # 2025-01-01
    assert _one(series, "fabscope_verdict_failed_checks", rule="run complete") == 1
    assert _one(series, "fabscope_verdict_passed") == 0


@outcome_contract("export", 2, "—")
def test_bad_input_exits_2_and_keeps_the_old_file(files, tmp_path):
    out = tmp_path / "out.prom"
    out.write_text("old\n")
    not_hdf5 = tmp_path / "not.h5"
    not_hdf5.write_bytes(b"not hdf5")
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f.attrs["format"] = "something-else"
    twin = tmp_path / "twin"
    twin.mkdir()
    shutil.copy(files["standard"], twin / "standard.h5")
    for bad, message in (([tmp_path / "missing.h5"], "missing.h5: no such file"),
                         ([not_hdf5], "not.h5: cannot be read as HDF5"),
                         ([other], "other.h5: not a fabscope result file"),
                         ([files["standard"], twin / "standard.h5"], "the same file name"),
                         ([files["standard"], "--criteria", tmp_path / "none.yaml"],
                          "standard.h5: the criteria in force: "),
                         ([files["standard"], "--model", "llama3-70b", "--tp", "3"],
                          "standard.h5: the serving deployment: ")):
        proc = run_main("export", "--openmetrics", out, *bad)   # the real process: below
        assert proc.returncode == 2 and message in proc.stderr, (bad, proc.stderr)
        assert out.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["not.h5", "other.h5", "out.prom", "twin"]
    proc = run_cli("export", "--openmetrics", tmp_path / "no-dir" / "x.prom", files["clean"])
    assert proc.returncode == 2 and "no-dir" in proc.stderr
    assert run_cli("export", files["clean"]).returncode == 2   # --openmetrics is required


def test_written_atomically_and_readable(tmp_path, monkeypatch):
    out = tmp_path / "m.prom"
    write_atomically("a 1\n# EOF\n", str(out))
    assert out.read_text() == "a 1\n# EOF\n"
    assert os.stat(out).st_mode & file_mode.S_IROTH, "node_exporter runs as another user"
    # a failure before the rename leaves the old file and no temporary file
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk")))
    with pytest.raises(OSError):
        write_atomically("b 2\n# EOF\n", str(out))
    assert out.read_text() == "a 1\n# EOF\n" and os.listdir(tmp_path) == ["m.prom"]


def test_several_files_scopes_and_max_pairs(files, tmp_path):
    """Two files: each series carries its file; a family's samples stay together. Site
    scopes: one series per scope. --max-pairs: per-pair series left out with a note."""
    from test_scopes import _write as write_sites
    sites = write_sites(tmp_path / "sites.h5")
    text, proc = _export(tmp_path, files["standard"], files["same"], sites,
                         extra=("--max-pairs", "10"))
    assert "56 pairs, more than --max-pairs 10" in proc.stderr
    helps = re.findall(r"^# HELP (\S+)", text, re.M)
    assert len(helps) == len(set(helps))
    series = _series(text)
    assert {dict(k[1])["file"] for k in series} == {"standard.h5", "same.h5", "sites.h5"}
    pair_cases = {dict(k[1])["case"] for k in series if k[0].startswith("fabscope_pair_")}
    assert "allpairs-bw/1048576" not in pair_cases   # 56 pairs
    assert {"pingpong/8", "lat/8"} <= pair_cases      # 8 and 6 pairs
    scopes = {dict(k[1]).get("scope") for k in series
              if k[0] == "fabscope_latency_seconds" and dict(k[1])["file"] == "sites.h5"
              and dict(k[1])["test"] == "lat"}
    assert scopes == {"site=A", "site=B", "inter-site A<->B"}
    assert not any("scope" in dict(k[1]) for k in series if dict(k[1])["file"] != "sites.h5")


def test_serving_figures_are_impacts(tmp_path):
    from test_impact import spiky, write_allreduce_file
    rng = np.random.default_rng(5)
    path = write_allreduce_file(tmp_path / "serving.h5",
                                {(512 << 10, "quiet"): spiky(rng, 200),
                                 (512 << 10, "incast"): spiky(rng, 200, 40_000.0)},
                                kv=[KV_320MIB(rng)])
    with open_result(path) as result:
        series = _series(collect([result]).render())
        impact = compute_impact(result, deployment_from_run(result))
    rows = [r for r in impact.tp_rows if r.get("p99_ms") is not None]
    assert len(rows) == 2
    for row in rows:
        for stat in ("p50", "p99"):
            assert _one(series, "fabscope_serving_tp_communication_seconds", model="llama3-70b",
                        tp="8", condition=row["condition"], stat=stat) == \
                pytest.approx(row[f"{stat}_ms"] / 1e3, rel=1e-12)
    incast = next(r for r in rows if r["condition"] == "incast")
    inflation = _one(series, "fabscope_serving_tp_inflation_ratio", condition="incast",
                     stat="p99")
    assert inflation == pytest.approx(incast["inflation_p99"], rel=1e-12) and inflation > 1
    kv = next(r for r in impact.kv_rows if "transfer_p99_ms" in r)
    for stat in ("p50", "p99"):
        assert _one(series, "fabscope_serving_kv_transfer_seconds", series=kv["series"],
                    stat=stat) == pytest.approx(kv[f"transfer_{stat}_ms"] / 1e3, rel=1e-12)


def test_kv_push_cif_is_exported_per_condition(tmp_path):
    from serving_files import serving_file
    path = serving_file(tmp_path / "kv.h5", tp_loaded=(), kv_loaded=(("incast", 3.0),))
    with open_result(path) as result:
        series = _series(collect([result], model="llama3-70b", tp=8).render())
    cif = {dict(k[1])["stat"]: v for k, v in series.items()
           if k[0] == "fabscope_serving_kv_cif_ratio"}
    assert set(cif) == {"p50", "p99"} and cif["p50"] == pytest.approx(3.0, rel=0.05)


def test_docs_name_every_family():
    docs = open(DOCS).read()
    section = docs[docs.index("## `export"):]
    section = section[:section.index("\n## ", 5)]
    missing = [s.name for s in FAMILY_SPECS if f"`{s.name}" not in section]
    assert not missing, missing
