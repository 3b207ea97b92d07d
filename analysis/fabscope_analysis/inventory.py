"""Host inventory (/hosts) and topology facts (/ranks) in comparable form."""

from __future__ import annotations

from typing import Dict, List

import pandas as pd

from .reader import ResultFile


def inventory_frame(result: ResultFile) -> pd.DataFrame:
    """One row per host, one column per inventory attribute (empty without /hosts)."""
    rows = []
    for host, entry in result.hosts().items():
        row = {"host": host}
        row.update({k: (", ".join(map(str, v)) if isinstance(v, list) else v)
                    for k, v in entry["attrs"].items()})
        rows.append(row)
    return pd.DataFrame(rows)


def inconsistent_fields(frame: pd.DataFrame) -> Dict[str, Dict[str, List[str]]]:
    """Fields whose value differs between hosts: {field: {value: [hosts]}}."""
    flags: Dict[str, Dict[str, List[str]]] = {}
    for col in frame.columns:
        if col == "host":
            continue
        groups: Dict[str, List[str]] = {}
        for host, value in zip(frame["host"], frame[col]):
            groups.setdefault(str(value), []).append(str(host))
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
        if col != "host":
            facts[f"inventory: {col}"] = ", ".join(sorted({str(v) for v in inv[col]}))
    return facts


# Facts that only describe the run, so a difference is not a reason to doubt a comparison.
INFORMATIONAL_FACTS = {"tool version", "hdf5 mode", "complete"}
