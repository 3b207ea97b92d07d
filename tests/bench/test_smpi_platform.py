"""The SMPI platform writer (smpi_platform.py): the planted fault lands on the link it names
and on no other, routes cross the links a leaf-spine path crosses, and a bad fault is refused
with what was expected. Pure Python, no SimGrid: a fraction of a second.
"""
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
WRITER = HERE / "smpi_platform.py"


def write(tmp_path, *args):
    out = tmp_path / "p"
    subprocess.run([sys.executable, str(WRITER), str(out), "--hosts", "4", "--gpus", "2",
                    "--hosts-per-leaf", "2", "--spines", "2", *args], check=True)
    root = ET.parse(out / "platform.xml").getroot()
    links = {l.get("id"): float(l.get("bandwidth").removesuffix("GBps"))
             for l in root.iter("link") if l.get("bandwidth").endswith("GBps")}
    routes = {(r.get("src"), r.get("dst")): [c.get("id") for c in r.iter("link_ctn")] for r in root.iter("route")}
    return out, links, routes


def test_receive_fault_slows_only_that_nodes_receive_link(tmp_path):
    out, links, _ = write(tmp_path, "--fault", "rx-slow:0.25@node02")
    port = 2 * 400 / 8  # 2 GPUs of 400 Gb/s
    assert links["node02-rx"] == port * 0.25
    others = {k: v for k, v in links.items() if k.endswith(("-rx", "-tx")) and k != "node02-rx"}
    assert others and all(v == port for v in others.values())
    truth = json.loads((out / "truth.json").read_text())
    assert truth["fault"]["target"] == "node02" and truth["fault"]["ranks"] == [4, 5]
    assert (out / "hostfile").read_text().splitlines() == ["node00:2", "node01:2", "node02:2", "node03:2"]


def test_routes_cross_the_leaf_spine_path(tmp_path):
    _, _, routes = write(tmp_path, "--fault", "none")
    assert routes[("node00", "node00")] == ["node00-nvlink"]
    assert routes[("node00", "node01")] == ["node00-tx", "leaf0-switch", "node01-rx"]
    across = routes[("node00", "node02")]
    assert across[0] == "node00-tx" and across[-1] == "node02-rx"
    spine = across[3].removesuffix("-switch")
    assert across[1:6] == ["leaf0-switch", f"leaf0-{spine}-up", f"{spine}-switch", f"{spine}-leaf1-down",
                           "leaf1-switch"]
    # ECMP per host pair: both directions of a pair go through one spine.
    assert routes[("node02", "node00")][3] == f"{spine}-switch"


def test_uplink_fault_slows_one_uplink(tmp_path):
    _, links, _ = write(tmp_path, "--fault", "uplink-slow:0.5@leaf1.spine0")
    up = 2 * (2 * 400 / 8) / 2
    assert links["leaf1-spine0-up"] == up * 0.5
    assert links["leaf0-spine0-up"] == up and links["leaf1-spine1-up"] == up and links["spine0-leaf1-down"] == up


def test_bad_fault_is_refused_with_what_was_expected(tmp_path):
    for bad, expected in [("rx-slow:0.5@node09", "no node 'node09'"), ("rx-slow:2@node01", "in (0, 1]"),
                          ("wobbly:0.5@node01", "unknown kind 'wobbly'"), ("rx-slow", "KIND:FACTOR@TARGET")]:
        r = subprocess.run([sys.executable, str(WRITER), str(tmp_path / "x"), "--hosts", "4", "--fault", bad],
                           capture_output=True, text=True)
        assert r.returncode == 2, bad
        assert expected in r.stderr, (bad, r.stderr)
