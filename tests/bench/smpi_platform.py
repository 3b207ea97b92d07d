#!/usr/bin/python3
"""A leaf-spine fabric for SimGrid SMPI, with one planted fault, for the real binary.

Writes, into OUTDIR:
  platform.xml   SimGrid 4.1 platform: HOSTS nodes of GPUS cores each, every node's
                 network port one split-duplex link (send and receive apart) into its
                 leaf; leaves of HOSTS_PER_LEAF nodes; every leaf one split-duplex
                 uplink to each spine; a static route per node pair through one spine
                 chosen by a hash of the pair (ECMP per host pair); NVLink inside a node.
  hostfile       one line per node, "nodeNN:GPUS" (smpirun places GPUS ranks on it).
  topology.yaml  the leaf of every node, for `fabscope run --topology`.
  truth.json     what was planted (never given to fabscope or diagnose).

A node's port carries the GPUS NICs of the node together (GPUS x NIC_GBPS); SMPI
places ranks on hosts and routes host to host, so one NIC of the eight cannot be
told apart from its node's port here: a fault is planted on a node's port (send,
receive or both), or on one leaf uplink.

usage: smpi_platform.py OUTDIR [--hosts 32] [--gpus 8] [--hosts-per-leaf 8]
         [--spines 4] [--nic-gbps 400] [--fault rx-slow:0.25@node13 | tx-slow:F@node |
          port-slow:F@node | uplink-slow:F@leafL.spineS | none]
"""
import argparse
import json
import sys
from pathlib import Path

NIC_LATENCY_US = 1.0  # NIC + cable to the leaf, one way
SWITCH_LATENCY_US = 0.6  # one switch traversal
NVLINK_GBYTES = 450.0  # inside a node
NVLINK_LATENCY_US = 0.8


def fail(what):
    print(f"smpi_platform: {what}", file=sys.stderr)
    sys.exit(2)


def parse_fault(text, hosts, leaves, spines):
    if text == "none":
        return None
    try:
        head, target = text.split("@", 1)
        kind, value = head.split(":", 1)
        factor = float(value)
    except ValueError:
        fail(f"--fault '{text}': expected KIND:FACTOR@TARGET (e.g. rx-slow:0.5@node13) or none")
    if not 0 < factor <= 1:
        fail(f"--fault '{text}': the factor must be in (0, 1], got {factor}")
    if kind in ("rx-slow", "tx-slow", "port-slow"):
        if target not in hosts:
            fail(f"--fault '{text}': no node '{target}' (nodes are {hosts[0]}..{hosts[-1]})")
    elif kind == "uplink-slow":
        leaf, _, spine = target.partition(".")
        if leaf not in leaves or spine not in spines:
            fail(f"--fault '{text}': expected leafL.spineS with leaf in {leaves[0]}..{leaves[-1]}, "
                 f"spine in {spines[0]}..{spines[-1]}")
    else:
        fail(f"--fault '{text}': unknown kind '{kind}'; expected rx-slow, tx-slow, port-slow or uplink-slow")
    return {"kind": kind, "factor": factor, "target": target}


def pair_spine(a, b, spines):
    # splitmix64 of the (unordered) host pair: ECMP keeps one path per host pair.
    x = (min(a, b) * 1_000_003 + max(a, b) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 31
    return x % spines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("outdir", type=Path)
    p.add_argument("--hosts", type=int, default=32)
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--hosts-per-leaf", type=int, default=8)
    p.add_argument("--spines", type=int, default=4)
    p.add_argument("--nic-gbps", type=float, default=400.0, help="one NIC's line rate in Gbit/s")
    p.add_argument("--fault", default="rx-slow:0.25@node13")
    a = p.parse_args(argv)
    if a.hosts < 2 or a.gpus < 1 or a.hosts_per_leaf < 1 or a.spines < 1:
        fail("--hosts must be at least 2 and --gpus, --hosts-per-leaf, --spines at least 1")
    hosts = [f"node{i:02d}" for i in range(a.hosts)]
    nleaves = (a.hosts + a.hosts_per_leaf - 1) // a.hosts_per_leaf
    leaves = [f"leaf{i}" for i in range(nleaves)]
    spines = [f"spine{i}" for i in range(a.spines)]
    fault = parse_fault(a.fault, hosts, leaves, spines)
    port_gbytes = a.gpus * a.nic_gbps / 8.0  # the node's NICs together, GB/s
    # 1:1: a leaf's uplinks carry what its nodes' ports can send.
    uplink_gbytes = a.hosts_per_leaf * port_gbytes / a.spines

    def leaf_of(h):
        return h // a.hosts_per_leaf

    lines = ["<?xml version='1.0'?>",
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">',
             '<zone id="fabric" routing="Full">']
    for h in hosts:
        lines.append(f'  <host id="{h}" speed="1Gf" core="{a.gpus}"/>')
    port_up = {h: port_gbytes for h in hosts}
    port_down = {h: port_gbytes for h in hosts}
    uplink = {(leaf, s): uplink_gbytes for leaf in leaves for s in spines}
    if fault:
        k, f, t = fault["kind"], fault["factor"], fault["target"]
        if k in ("rx-slow", "port-slow"):
            port_down[t] *= f
        if k in ("tx-slow", "port-slow"):
            port_up[t] *= f
        if k == "uplink-slow":
            leaf, _, spine = t.partition(".")
            uplink[(leaf, spine)] *= f
    # A SPLITDUPLEX link is one link per direction (UP, DOWN) of one capacity;
    # a one-direction fault needs the two directions as separate links.
    for h in hosts:
        lines.append(f'  <link id="{h}-tx" bandwidth="{port_up[h]:.4f}GBps" latency="{NIC_LATENCY_US}us"/>')
        lines.append(f'  <link id="{h}-rx" bandwidth="{port_down[h]:.4f}GBps" latency="{NIC_LATENCY_US}us"/>')
        lines.append(f'  <link id="{h}-nvlink" bandwidth="{NVLINK_GBYTES}GBps" latency="{NVLINK_LATENCY_US}us"/>')
    for leaf in leaves:
        lines.append(f'  <link id="{leaf}-switch" bandwidth="100TBps" latency="{SWITCH_LATENCY_US}us" '
                     'sharing_policy="FATPIPE"/>')
        for s in spines:
            lines.append(f'  <link id="{leaf}-{s}-up" bandwidth="{uplink[(leaf, s)]:.4f}GBps" latency="0.05us"/>')
            lines.append(f'  <link id="{s}-{leaf}-down" bandwidth="{uplink_gbytes:.4f}GBps" latency="0.05us"/>')
    for s in spines:
        lines.append(f'  <link id="{s}-switch" bandwidth="100TBps" latency="{SWITCH_LATENCY_US}us" '
                     'sharing_policy="FATPIPE"/>')
    for i, src in enumerate(hosts):
        for j, dst in enumerate(hosts):
            if i == j:
                hops = [f"{src}-nvlink"]
            elif leaf_of(i) == leaf_of(j):
                hops = [f"{src}-tx", f"leaf{leaf_of(i)}-switch", f"{dst}-rx"]
            else:
                s = f"spine{pair_spine(i, j, a.spines)}"
                li, lj = f"leaf{leaf_of(i)}", f"leaf{leaf_of(j)}"
                hops = [f"{src}-tx", f"{li}-switch", f"{li}-{s}-up", f"{s}-switch", f"{s}-{lj}-down",
                        f"{lj}-switch", f"{dst}-rx"]
            ctn = "".join(f'<link_ctn id="{h}"/>' for h in hops)
            lines.append(f'  <route src="{src}" dst="{dst}" symmetrical="NO">{ctn}</route>')
    lines += ["</zone>", "</platform>", ""]
    a.outdir.mkdir(parents=True, exist_ok=True)
    (a.outdir / "platform.xml").write_text("\n".join(lines))
    (a.outdir / "hostfile").write_text("".join(f"{h}:{a.gpus}\n" for h in hosts))
    topo = ["hosts:"] + [f"  {h}: {{site: sim, pod: pod0, leaf: leaf{leaf_of(i)}}}" for i, h in enumerate(hosts)]
    (a.outdir / "topology.yaml").write_text("\n".join(topo) + "\n")
    truth = {"hosts": a.hosts, "gpus": a.gpus, "ranks": a.hosts * a.gpus, "hosts_per_leaf": a.hosts_per_leaf,
             "spines": a.spines, "port_gbytes_per_s": port_gbytes, "uplink_gbytes_per_s": uplink_gbytes,
             "fault": fault}
    if fault and fault["kind"] in ("rx-slow", "tx-slow", "port-slow"):
        h = hosts.index(fault["target"])
        truth["fault"]["ranks"] = list(range(h * a.gpus, (h + 1) * a.gpus))
    (a.outdir / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
