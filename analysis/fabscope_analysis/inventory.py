"""Host inventory (/hosts) and topology facts (/ranks) in comparable form.

docs/file-format.md (version 1) does not define /hosts yet. This module reads what is
there without assuming more than: per host a group whose attributes, and whose tables
with ``key`` and ``value`` columns, are inventory facts; and tables with a ``what``
column (severity/host/component/what/expected/found) are consistency flags written by
fabscope itself.
"""

from __future__ import annotations

import fnmatch
import os
import re
from functools import lru_cache
from typing import Dict, List, Tuple

import pandas as pd

from .reader import ResultFile

# Facts that are unique per host by nature; a difference there is not a finding.
UNIQUE_PER_HOST = re.compile(r"(^|/)(host|hostname|name|node_guid|sys_image_guid|guid|mac|"
                             r"address|serial|uuid|pci|bus_id|gid(/\d+)?|pid)$", re.I)


LAUNCHER_VARIABLES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                                       "launcher-variables.txt")


@lru_cache(maxsize=1)
def launcher_variable_patterns() -> Tuple[str, ...]:
    """The one list of per-job/per-rank launcher variables (data/launcher-variables.txt,
    also compiled into the C++ run: src/inventory/LauncherVariables)."""
    with open(LAUNCHER_VARIABLES_FILE, encoding="utf-8") as f:
        return tuple(line.strip() for line in f
                     if line.strip() and not line.lstrip().startswith("#"))


def is_launcher_variable(name: str) -> bool:
    """True for OMPI_COMM_WORLD_RANK, OMPI_MCA_orte_hnp_uri, SLURM_JOB_ID, PMIX_RANK, ..."""
    return any(fnmatch.fnmatchcase(name, p) for p in launcher_variable_patterns())


def is_launcher_fact(fact: str) -> bool:
    """An inventory fact 'env/NAME' whose NAME a launcher sets per job or rank."""
    fact = str(fact)
    return fact.startswith("env/") and is_launcher_variable(fact[4:])


def _is_key_value(frame: pd.DataFrame) -> bool:
    return {"key", "value"} <= set(frame.columns)


def _is_flags(frame: pd.DataFrame) -> bool:
    return "what" in frame.columns


def inventory_frame(result: ResultFile, launcher: bool = False) -> pd.DataFrame:
    """One row per host, one column per inventory fact (empty without /hosts).

    Facts a launcher sets per job or rank (is_launcher_fact) are left out unless
    ``launcher`` is true: they differ between any two jobs and say nothing of the fabric.
    """
    rows = []
    for host, entry in result.hosts().items():
        facts = {k: (", ".join(map(str, v)) if isinstance(v, list) else v)
                 for k, v in entry["attrs"].items()}
        for frame in entry["tables"].values():
            if _is_key_value(frame):
                facts.update({str(k): v for k, v in zip(frame["key"], frame["value"])})
        if not launcher:
            facts = {k: v for k, v in facts.items() if not is_launcher_fact(k)}
        if facts:
            rows.append({"host": host, **facts})
    return pd.DataFrame(rows)


def launcher_fact_count(result: ResultFile) -> int:
    """How many per-job launcher facts the file's /hosts hold (shown as a count only)."""
    full = inventory_frame(result, launcher=True)
    return sum(1 for c in full.columns if is_launcher_fact(c))


def recorded_flags(result: ResultFile) -> pd.DataFrame:
    """Consistency flags fabscope wrote into /hosts (empty frame when there are none).

    Flags on a per-job launcher variable (written by releases before the ignore list)
    are dropped: they are never a finding.
    """
    parts = []
    for host, entry in result.hosts().items():
        for frame in entry["tables"].values():
            if _is_flags(frame) and len(frame):
                frame = frame.copy()
                if "host" not in frame.columns:
                    frame.insert(0, "host", host)
                parts.append(frame)
    if not parts:
        return pd.DataFrame()
    flags = pd.concat(parts, ignore_index=True).drop_duplicates()
    if "component" in flags.columns:
        flags = flags[[not is_launcher_fact(c) for c in flags["component"]]]
    return flags.reset_index(drop=True)


def other_tables(result: ResultFile) -> Dict[str, Dict[str, pd.DataFrame]]:
    """Tables under /hosts that are neither key/value inventory nor flags (e.g. manifest)."""
    out: Dict[str, Dict[str, pd.DataFrame]] = {}
    for host, entry in result.hosts().items():
        for name, frame in entry["tables"].items():
            if not (_is_key_value(frame) or _is_flags(frame)):
                out.setdefault(host, {})[name] = frame
    return out


def inconsistent_fields(frame: pd.DataFrame) -> Dict[str, Dict[str, List[str]]]:
    """Fields whose value differs between hosts: {field: {value: [hosts]}}.

    Facts that are unique per host by nature (names, GUIDs, addresses) are ignored.
    """
    flags: Dict[str, Dict[str, List[str]]] = {}
    if len(frame) < 2:
        return flags
    for col in frame.columns:
        if col == "host" or UNIQUE_PER_HOST.search(str(col)):
            continue
        groups: Dict[str, List[str]] = {}
        for host, value in zip(frame["host"], frame[col]):
            groups.setdefault("(absent)" if pd.isna(value) else str(value), []).append(str(host))
        if len(groups) > 1:
            flags[col] = groups
    return flags


def topology(result: ResultFile) -> Dict[str, str]:
    """Facts that must match for two runs to be comparable, as strings."""
    a = result.attrs
    ranks = result.ranks()
    per_host = ranks.groupby("host").size() if len(ranks) else pd.Series(dtype=int)
    tests = result.tests()

    def distinct(col):
        if col not in tests.columns or tests.empty:
            return ""
        return ", ".join(sorted({str(v) for v in tests[col].dropna()}))

    inv = inventory_frame(result)
    facts = {
        "scenario": str(a.get("scenario_name", "")),
        "ranks": str(a.get("nranks", len(ranks))),
        "hosts": str(a.get("nhosts", len(per_host))),
        "ranks per host": ", ".join(sorted({str(int(v)) for v in per_host.values})),
        "launch preset": str(a.get("launch_preset", "")),
        "nics": ", ".join(sorted({str(n) for n in ranks.get("nic", []) if str(n)})),
        # Site labels decide the scopes results are split into (scopes.py).
        "sites": ", ".join(sorted({str(v) for v in ranks.get("site", [])
                                   if isinstance(v, str) and v})),
        "gpus used": str(int((ranks["gpu"] >= 0).sum())) if "gpu" in ranks else "",
        "transports": distinct("transport"),
        "memory": distinct("memory"),
        "conditions": distinct("condition"),
        "test kinds": distinct("kind"),
        "hdf5 mode": str(a.get("hdf5_mode", "")),
        "tool version": str(a.get("tool_version", "")),
        "complete": str(a.get("complete", "")),
    }
    for col in inv.columns:
        if col != "host" and not UNIQUE_PER_HOST.search(str(col)):
            facts[f"inventory: {col}"] = ", ".join(sorted({str(v) for v in inv[col]
                                                           if not pd.isna(v)}))
    return facts


# Facts that only describe the run, so a difference is not a reason to doubt a comparison.
INFORMATIONAL_FACTS = {"tool version", "hdf5 mode", "complete"}


# Counters that explain a latency tail, with their meaning: the same list as fabscope's
# closing summary (src/inventory/Counters.cpp, knownCounters()).
KNOWN_COUNTERS = {
    "port_xmit_wait": "ticks the port had data to send but no credits (congestion back-pressure)",
    "port_xmit_discards": "packets dropped on send (port down or congested)",
    "port_rcv_errors": "malformed packets received",
    "symbol_error": "physical-layer symbol errors (cable, transceiver)",
    "link_error_recovery": "link retrained after errors",
    "link_downed": "link went down",
    "local_link_integrity_errors": "local physical errors beyond threshold",
    "excessive_buffer_overrun_errors": "receive buffer overruns",
    "port_rcv_remote_physical_errors": "packets marked bad by a remote physical error",
    "out_of_sequence": "packets received out of order (RoCE: loss or reordering)",
    "packet_seq_err": "NAKs for packet sequence errors",
    "local_ack_timeout_err": "transport retries after an ACK timeout",
    "rnr_nak_retry_err": "receiver-not-ready retries exhausted",
    "implied_nak_seq_err": "implied NAKs (lost responses)",
    "duplicate_request": "requests received twice (retransmissions)",
    "rx_icrc_encapsulated": "RoCE packets with a bad ICRC",
    "np_cnp_sent": "congestion notifications sent by this receiver (ECN marks seen)",
    "rp_cnp_handled": "congestion notifications handled by this sender (rate reduced)",
    "rp_cnp_ignored": "congestion notifications ignored",
    "np_ecn_marked_roce_packets": "received RoCE packets that carried an ECN mark",
    "rx_dropped": "interface receive drops",
    "tx_dropped": "interface transmit drops",
    "rx_errors": "interface receive errors",
    "tx_errors": "interface transmit errors",
    "RetransSegs": "TCP segments retransmitted",
    "TCPLostRetransmit": "TCP retransmissions that were lost again",
    "TCPTimeouts": "TCP retransmission timeouts",
    "TCPSynRetrans": "TCP SYN retransmissions",
    "InErrs": "TCP segments received in error",
}


def moved_known_counters(counters: pd.DataFrame, hosts: Dict[int, str]) -> List[str]:
    """'RetransSegs +57 (largest fh1 snmp:Tcp +50 of 2 readers)' per known counter that
    moved (positive delta) in one test's counters table, largest total first."""
    if counters.empty:
        return []
    moved = counters[(counters["delta"] > 0) & counters["name"].isin(list(KNOWN_COUNTERS))]
    out = []
    totals = moved.groupby("name")["delta"].sum().sort_values(ascending=False, kind="stable")
    for name, total in totals.items():
        rows = moved[moved["name"] == name]
        top = rows.loc[rows["delta"].idxmax()]
        where = f"{hosts.get(int(top['rank']), 'rank %d' % int(top['rank']))} {top['source']}"
        if len(rows) > 1:
            out.append(f"{name} +{int(total)} (largest {where} +{int(top['delta'])} of "
                       f"{len(rows)} readers)")
        else:
            out.append(f"{name} +{int(total)} ({where})")
    return out


# Congestion control and QoS settings (fabscope's qos/* inventory facts, docs/inventory.md),
# in the order a reader checks a lossless fabric, with short labels.
QOS_INTERFACE_FACTS = [("dcb", "dcb"), ("pfc", "pfc_enabled"), ("trust", "trust"),
                       ("dscp>prio", "app_dscp"), ("ets prio>tc", "ets_prio_tc"),
                       ("ecn np", "ecn_np"), ("ecn rp", "ecn_rp")]
QOS_PORT_FACTS = [("roce mode", "default_roce_mode"), ("roce tos", "default_roce_tos"),
                  ("traffic class", "traffic_class"), ("sm sl", "sm_sl"),
                  ("vl arb low", "vlarb_low"), ("vl arb high", "vlarb_high"), ("sl>vl", "sl2vl")]
QOS_ENVIRONMENT = ["NCCL_IB_TC", "NCCL_IB_SL", "NCCL_IB_GID_INDEX", "NCCL_IB_ADAPTIVE_ROUTING",
                   "UCX_IB_TRAFFIC_CLASS", "UCX_IB_SL", "UCX_IB_AR_ENABLE",
                   "OMPI_MCA_btl_openib_ib_service_level"]
_QOS_KEY = re.compile(r"^qos/(net/(?P<net>[^/]+)|rdma/(?P<dev>[^/]+)/port/(?P<port>\d+))/(?P<fact>.+)$")
# The adapter's firmware congestion-control / QoS parameters (mlxconfig, when installed).
_FIRMWARE_KEY = re.compile(r"^qos/rdma/(?P<dev>[^/]+)/firmware/(?P<name>.+)$")


def qos_settings(result: ResultFile) -> Dict[str, str]:
    """{setting: value} of one run's congestion control / QoS, e.g. 'ens1f0 pfc': '3'.

    A setting that differs between hosts reads 'hostA: 3; hostB: none'. Library
    variables that pick the traffic class / SL are included ('unset' when not set) once
    the file has any qos fact; a file from before fabscope recorded QoS gives {}.
    """
    inv = inventory_frame(result)
    if inv.empty or not any(str(c).startswith("qos/") for c in inv.columns):
        return {}
    labels = {fact: label for label, fact in QOS_INTERFACE_FACTS + QOS_PORT_FACTS}
    wanted = []
    for col in inv.columns:
        m = _QOS_KEY.match(str(col))
        if m and m.group("fact") in labels:
            where = m.group("net") or f"{m.group('dev')}/{m.group('port')}"
            order = [f for _, f in QOS_INTERFACE_FACTS + QOS_PORT_FACTS].index(m.group("fact"))
            wanted.append((where, order, f"{where} {labels[m.group('fact')]}", col))
    for col in inv.columns:
        m = _FIRMWARE_KEY.match(str(col))
        if m:
            wanted.append((m.group("dev"), 100, f"{m.group('dev')} fw {m.group('name')}", col))
    wanted.sort()
    wanted += [("~env", i, f"env {name}", f"env/{name}") for i, name in enumerate(QOS_ENVIRONMENT)]
    wanted.append(("~tool", 0, "vendor tool", "qos/vendor_tool"))
    out: Dict[str, str] = {}
    for _, _, label, col in wanted:
        per_host = {str(h): ("unset" if col.startswith("env/") else "(absent)")
                    if col not in inv.columns or pd.isna(v) else str(v)
                    for h, v in zip(inv["host"], inv[col] if col in inv.columns
                                    else [None] * len(inv))}
        values = set(per_host.values())
        out[label] = values.pop() if len(values) == 1 else "; ".join(
            f"{h}: {v}" for h, v in per_host.items())
    return out


def qos_frame(results: List[ResultFile], labels: List[str]) -> pd.DataFrame:
    """Settings as rows, one column per run: the side-by-side CC/QoS block (empty when no
    run recorded QoS)."""
    settings = [qos_settings(r) for r in results]
    names = list(dict.fromkeys(k for s in settings for k in s))
    if not names:
        return pd.DataFrame()
    return pd.DataFrame([{"setting": n, **{label: s.get(n, "(not recorded)")
                                           for label, s in zip(labels, settings)}}
                         for n in names])
