"""`fit` over the whole cluster: a KV push whose roles rotated over every node (kvpush
`role_rotation: ring`) is judged node by node; a node slow in both roles FAILs, named,
with the share of requests that cross it."""

import json

import numpy as np
import pytest

from serving_files import add_kv, reopened
from synthetic import write_matrix_run

from fabscope_analysis.cli import main
from fabscope_analysis.diagnosis.result import Culprit
from fabscope_analysis.serving.command import disagreements
from fabscope_analysis.serving.fit import FitVerdict
from fabscope_analysis.serving.measured import ClassSeries, Measured
from fabscope_analysis.serving.nodes import lower_bound, node_roles, nodes_check, stands_out
from fabscope_analysis.serving.slo import parse_slo_text

NODES = 8
PER_ROUND = 40   # 320 requests: a p99 with the rule of three's 1 % bound


def ring(nodes=NODES, per_round=PER_ROUND, cycles=1):
    """Each request's (prefill, decode) rank: round r of cycle c pushes rank r -> r + 1 + c
    (kvpush's ring with rotation_cycles)."""
    prefill = np.tile(np.repeat(np.arange(nodes), per_round // cycles), cycles)
    cycle = np.repeat(np.arange(cycles), nodes * (per_round // cycles))
    return prefill, (prefill + 1 + cycle) % nodes


def rotated_run(tmp_path, slow_node=None, slow_share=0.3, name="r.h5", seed=3, receive=None):
    """Eight hosts fh0..fh7 (one rank each), healthy probes (unless `receive`: rank ->
    its probes' receive factor), and a 320 MiB KV push rotated over them taking about
    40 ms; requests with an end on `slow_node` take 400 ms in `slow_share` of cases (over
    the 200 ms the fabric may take of a 2 s TTFT)."""
    run = reopened(write_matrix_run(tmp_path / name, nranks=NODES, receive=receive))
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-70b\nparallel: {tp: 8}\n"
    rng = np.random.default_rng(seed)
    prefill, decode = ring()
    transfer = 40e6 * rng.lognormal(0, 0.1, len(prefill))
    if slow_node is not None:
        on = (prefill == slow_node) | (decode == slow_node)
        transfer[on & (rng.random(len(prefill)) < slow_share)] = 400e6
    add_kv(run, transfer, np.full(len(prefill), 1e5), prefill=prefill, decode=decode)
    run.close()
    return run.path


def fit(path, tmp_path, capsys, *extra):
    out_json = tmp_path / "fit.json"
    code = main(["fit", path, "--slo", "ttft_p99=2s,cif_p99=off", "--json", str(out_json),
                 *extra])
    checks = {c["name"]: c for c in json.loads(out_json.read_text())["checks"]}
    return code, capsys.readouterr().out, checks


def test_a_node_slow_in_both_roles_fails_named_with_its_share_of_requests(tmp_path, capsys):
    code, out, checks = fit(rotated_run(tmp_path, slow_node=5), tmp_path, capsys)
    assert code == 1, out
    nodes = checks["nodes"]
    assert nodes["status"] == "FAIL", out
    assert nodes["figures"]["nodes_named"] == ["fh5"], out
    # ring rotation over 8 nodes: fh5 pushes to fh6 and receives from fh4, 80 of 320
    assert nodes["figures"]["shares"]["fh5"] == pytest.approx(0.25)
    assert "fh5: " in nodes["text"]
    assert "25 % of requests cross it there, 80 of 320" in nodes["text"]
    assert nodes["figures"]["sides"] == {"fh5": "both"}
    # its partners are slow in one role only: named as pairs, not as nodes
    assert not {"fh4", "fh6"} & set(nodes["figures"]["nodes_named"])
    # the diagnosis's probes are healthy: fit says why it disagrees with them
    assert ("the rotated KV push names fh5, the diagnosis (the run's closing verdict) does "
            "not") in out


def test_a_healthy_rotated_push_passes_every_node(tmp_path, capsys):
    code, out, checks = fit(rotated_run(tmp_path), tmp_path, capsys)
    assert code == 0, out
    assert checks["nodes"]["status"] == "PASS"
    assert "(8 nodes, quiet): none is slow in both roles" in checks["nodes"]["text"]


def test_one_slow_pair_is_not_a_slow_node(tmp_path, capsys):
    """Only the requests fh2 -> fh3 slow: neither end is slow in both roles."""
    run = reopened(write_matrix_run(tmp_path / "p.h5", nranks=NODES))
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-70b\nparallel: {tp: 8}\n"
    prefill, decode = ring()
    transfer = np.full(len(prefill), 40e6)
    transfer[(prefill == 2) & (np.arange(len(prefill)) % 3 == 0)] = 400e6
    add_kv(run, transfer, np.full(len(prefill), 1e5), prefill=prefill, decode=decode)
    run.close()
    code, out, checks = fit(run.path, tmp_path, capsys)
    assert checks["nodes"]["status"] == "PASS", out
    assert "slow in one role with one partner" in checks["nodes"]["text"]
    text = checks["nodes"]["text"]
    assert "fh2 as prefill" in text and "fh3 as decode" in text
    assert checks["ttft_p99"]["status"] == "FAIL" and code == 1   # 4 % of all requests over


def test_one_fixed_pair_gives_no_per_node_check(tmp_path, capsys):
    run = reopened(write_matrix_run(tmp_path / "f.h5", nranks=NODES))
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-70b\nparallel: {tp: 8}\n"
    add_kv(run, np.full(320, 40e6), np.full(320, 1e5), prefill=0, decode=1)
    run.close()
    code, out, checks = fit(run.path, tmp_path, capsys)
    assert "nodes" not in checks and code == 0, out


def test_node_roles_count_each_role_and_the_bound_is_clopper_pearson():
    prefill, decode = np.array(["a", "b", "c", "a"]), np.array(["b", "c", "a", "b"])
    roles = node_roles(prefill, decode, np.array([5.0, 1.0, 5.0, 1.0]), 2.0)
    assert (roles["a"]["prefill"].requests, roles["a"]["prefill"].over) == (2, 1)
    assert (roles["a"]["decode"].requests, roles["a"]["decode"].over) == (1, 1)
    assert roles["b"]["decode"].partners == ["a"]
    # 1 of 10: the 95 % lower bound is 1 - 0.95 ** 0.1
    assert lower_bound(1, 10) == pytest.approx(1 - 0.95 ** 0.1)
    assert lower_bound(0, 10) == 0.0


def test_two_slow_partners_make_it_the_nodes_side_one_does_not():
    """Node a sends to b, c and d, slow with b and c: two partners, the node's side. Node e
    sends to b and c, slow with b only: one pair's. The rest of a's requests (neither end
    on a) are e's two, one of them over."""
    prefill, decode = np.array(["a", "a", "a", "e", "e"]), np.array(["b", "c", "d", "b", "c"])
    roles = node_roles(prefill, decode, np.array([5.0, 5.0, 1.0, 5.0, 1.0]), 2.0)
    a, e = roles["a"]["prefill"], roles["e"]["prefill"]
    assert (a.partners, a.partners_over, a.rest_requests, a.rest_over) == (["b", "c", "d"], 2, 2, 1)
    assert (e.partners, e.partners_over, e.rest_requests, e.rest_over) == (["b", "c"], 1, 3, 2)
    assert (a.the_nodes(), e.the_nodes()) == (True, False)
    assert a.words() == "2 of 3 as prefill, with 2 of 3 partners"


def test_slow_requests_everywhere_single_out_no_node(tmp_path, capsys):
    """Every request 400 ms in 8 % of cases (other work on the CPUs, everywhere): the
    TTFT check over all requests FAILs, but no node stands out from the others."""
    run = reopened(write_matrix_run(tmp_path / "e.h5", nranks=NODES))
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-70b\nparallel: {tp: 8}\n"
    rng = np.random.default_rng(11)
    prefill, decode = ring()
    transfer = np.where(rng.random(len(prefill)) < 0.08, 400e6, 40e6)
    add_kv(run, transfer, np.full(len(prefill), 1e5), prefill=prefill, decode=decode)
    run.close()
    code, out, checks = fit(run.path, tmp_path, capsys)
    assert checks["ttft_p99"]["status"] == "FAIL" and code == 1, out
    assert checks["nodes"]["status"] == "PASS" and checks["nodes"]["figures"]["nodes_named"] == []


def rotated_cycles_run(tmp_path, slow, name="c.h5"):
    """The ring run 4 times, each node receiving from 4 partners; requests for which
    `slow(prefill, decode)` holds take 400 ms in 3 of 10 cases."""
    run = reopened(write_matrix_run(tmp_path / name, nranks=NODES))
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-70b\nparallel: {tp: 8}\n"
    rng = np.random.default_rng(5)
    prefill, decode = ring(per_round=PER_ROUND * 2, cycles=4)
    transfer = 40e6 * rng.lognormal(0, 0.1, len(prefill))
    transfer[slow(prefill, decode) & (rng.random(len(prefill)) < 0.3)] = 400e6
    add_kv(run, transfer, np.full(len(prefill), 1e5), prefill=prefill, decode=decode)
    run.close()
    return run.path


def test_a_slow_receive_side_met_with_several_partners_is_named_as_such(tmp_path, capsys):
    code, out, checks = fit(rotated_cycles_run(tmp_path, lambda p, d: d == 5), tmp_path, capsys)
    nodes = checks["nodes"]
    assert code == 1 and nodes["status"] == "FAIL", out
    assert nodes["figures"]["nodes_named"] == ["fh5"] and nodes["figures"]["sides"] == {
        "fh5": "receive"}, out
    assert nodes["figures"]["shares"]["fh5"] == pytest.approx(1 / 8)   # it decodes 1 in 8
    assert "fh5 (receive): " in nodes["text"] and "with 4 of 4 partners" in nodes["text"]
    assert "fix: host fh5 (receive): the KV requests it receives as decode miss the TTFT budget" \
        in out


def test_one_slow_pair_among_several_partners_names_no_node(tmp_path, capsys):
    code, out, checks = fit(rotated_cycles_run(tmp_path, lambda p, d: (p == 2) & (d == 3)),
                            tmp_path, capsys)
    assert checks["nodes"]["status"] == "PASS", out
    assert "fh3 as decode" in checks["nodes"]["text"], out   # named as the pair's


def test_a_host_the_diagnosis_names_costs_the_share_of_requests_the_rotated_push_sent_through_it(
        tmp_path, capsys):
    """The probes show fh5 receiving at 10 %; the rotated push itself is healthy. The
    cluster check FAILs naming fh5 with the share the push measured crossing it (a ring
    over 8 nodes: 80 of 320 requests have an end on fh5), not the share of hosts."""
    code, out, checks = fit(rotated_run(tmp_path, receive={5: 0.1}), tmp_path, capsys)
    assert code == 1 and checks["cluster"]["status"] == "FAIL", out
    assert checks["cluster"]["figures"]["request_share"] == pytest.approx(0.25)
    assert ("25 % of them (the KV push, rotated over every node, sent 80 of its 320 requests "
            "through it)") in checks["cluster"]["text"], checks["cluster"]["text"]


def test_a_node_stands_out_by_fishers_exact_test_on_its_own_and_the_other_requests():
    """3 of 10 requests over the budget against 1 of 30 not touching the node: the one-sided
    Fisher exact p of [[3, 7], [1, 29]] is 0.0417, under 5 % and over 1 %; 2 of 4 against 0
    of 20 is 0.0217. No request over stands out nowhere; with no other request to compare,
    any request over does."""
    assert stands_out(3, 10, 1, 30, 0.05) and not stands_out(3, 10, 1, 30, 0.04)
    assert stands_out(2, 4, 0, 20, 0.025) and not stands_out(2, 4, 0, 20, 0.02)
    assert not stands_out(0, 10, 0, 30, 0.05)
    assert stands_out(1, 10, 0, 0, 0.05) and not stands_out(0, 10, 0, 0, 0.05)


def test_a_node_slow_on_one_side_crosses_the_requests_of_that_side_only():
    """a pushes 10 requests each to b, c and d, all over the 500 ms budget, and receives 5
    from b, all within it; b, c and d push 30 each round a ring, within it. a is slow as
    prefill with 3 partners: the node's send side; what crosses it there are the 30
    requests it pushed of the 125, not the 5 it received. A host the diagnosis names and
    the per-node check does not is said so; without a per-node check nothing is said."""
    prefill = np.array(["a"] * 30 + ["b"] * 5 + ["b"] * 30 + ["c"] * 30 + ["d"] * 30)
    decode = np.array(["b", "c", "d"] * 10 + ["a"] * 5 + ["c"] * 30 + ["d"] * 30 + ["b"] * 30)
    times = np.where(np.arange(125) < 30, 1e9, 40e6)
    kv = ClassSeries("kv", "kv-push", 1, 0, by_condition={"quiet": times},
                     hosts={"quiet": (prefill, decode)})
    slo = parse_slo_text("ttft_p99=2s,ttft_share=25%")
    check = nodes_check("ttft_p99", slo, Measured(classes={"kv": kv}))
    assert check.status == "FAIL" and check.figures["nodes_named"] == ["a"]
    assert check.figures["sides"] == {"a": "send"} and check.figures["shares"] == {"a": 30 / 125}
    assert "a (send): 30 of 30 as prefill, with 3 of 3 partners over [quiet]; 24 % of requests " \
        "cross it there, 30 of 125" in check.text, check.text
    named = [Culprit(host, [], [], [], "receive", [], [], "high", 1.0) for host in ("a", "e")]
    assert disagreements(FitVerdict("d", slo, checks=[check]), named) == [
        "the diagnosis names e, the rotated KV push does not (its requests through it stayed "
        "within the budget): fit FAILs on the diagnosis, as the run's closing verdict does"]
    assert disagreements(FitVerdict("d", slo, checks=[]), named) == []
