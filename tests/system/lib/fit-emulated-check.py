"""Checks of tests/system/fit_emulated.sh on what launch/fabscope-fit wrote.

  verdict DIR EXPECTED EXIT [HOST]   fit.json says EXPECTED (exit 0 for PASS, else 1); a
                                     FAIL names HOST (fix:) and what it costs (cost:, or the
                                     nodes check's share of the requests through HOST).
                                     CANNOT TELL is accepted only where the run says other
                                     work kept the CPUs busy (validity busy_host).
  cluster DIR EXIT HOST              fit.json says FAIL naming HOST (fix:) through its `nodes`
                                     check (the rotated KV push) or its `cluster` check (the
                                     diagnosis), whatever the other serving ranks showed
  rates FILE GBPS [RANK:GBPS...]     every rank's receive line rate is its host's emulated
                                     limit (GBPS, or the RANK's own), with that source
  share FILE RANK|incast             transfers into RANK (bandwidth tests), or an incast's
                                     aggregate, read 86-105 % of the line rate: within 10 %
                                     of the ~95 % TCP's payload fills on a saturated link
"""

import json
import sys

import numpy as np

from fabscope_analysis.reader import open_result
from fabscope_analysis.serving import line_rate as L

TCP_PAYLOAD_SHARE = 0.955      # 1448 payload bytes per 1514-byte Ethernet frame
LOW, HIGH = 0.86, 1.05         # within 10 % of that (the top bounded by the tbf's burst)


def busy(path):
    with open_result(path) as result:
        whats = {str(w) for w in result.validity()["what"]}
    return "busy_host" in whats


def verdict(folder, expected, status, host=None):
    with open(f"{folder}/fit.json", encoding="utf-8") as f:
        fit = json.load(f)
    said = fit["verdict"]
    if int(status) != (0 if said == "PASS" else 1):
        sys.exit(f"fabscope-fit exited {status} for verdict {said}")
    if said == "CANNOT TELL" and busy(f"{folder}/result.h5"):
        print(f"CANNOT TELL on a busy machine (validity busy_host), not {expected}: "
              + "; ".join(c["text"][:160] for c in fit["checks"] if c["status"] != "PASS"))
        return
    if said != expected:
        sys.exit(f"verdict {said}, expected {expected}: {fit['line']}")
    if expected == "FAIL":
        named = [line for line in fit["to_fix"] if f"host {host} (receive)" in line]
        costs = [line for line in fit["costs"] if line.startswith(f"{host} (receive)")
                 and "ttft_p99 FAIL" in line and "% of the 2s TTFT target" in line]
        # the KV push rotates over every host: the slow host receives one request in 8,
        # which the TTFT check over all requests may not tell; the nodes check names it
        # with the share of requests it receives
        nodes = next((c for c in fit["checks"] if c["name"] == "nodes"), {})
        share = nodes.get("figures", {}).get("shares", {}).get(host)
        costs += [f"nodes: {host} receives {100 * share:.3g} % of the requests"
                  for _ in [0] if nodes.get("status") == "FAIL" and share]
        if not named or not costs:
            sys.exit(f"the FAIL does not name {host} and its cost: fix {fit['to_fix']}, "
                     f"cost {fit['costs']}, nodes {nodes.get('text', '')[:300]}")
        print(f"named: {named[0]}\ncost: {costs[0]}")


def cluster(folder, status, host):
    with open(f"{folder}/fit.json", encoding="utf-8") as f:
        fit = json.load(f)
    if int(status) != (0 if fit["verdict"] == "PASS" else 1):
        sys.exit(f"fabscope-fit exited {status} for verdict {fit['verdict']}")
    checks = {c["name"]: c for c in fit["checks"]}
    naming = [c for c in (checks.get("nodes"), checks.get("cluster"))
              if c and c["status"] == "FAIL" and host in c["text"]]
    if fit["verdict"] != "FAIL" or not naming:
        if fit["verdict"] == "CANNOT TELL" and busy(f"{folder}/result.h5"):
            print(f"CANNOT TELL on a busy machine (validity busy_host), not FAIL: {fit['line']}")
            return
        sys.exit(f"no failing nodes or cluster check names {host}: {fit['line']}")
    named = [line for line in fit["to_fix"] if line.startswith(f"host {host}")]
    if not named:
        sys.exit(f"no fix: line names {host}: fix {fit['to_fix']}")
    print(f"{naming[0]['name']}: {naming[0]['text'][:200]}\nnamed: {named[0][:200]}")


def rates(path, gbps, *own):
    expected = {int(k): float(v) for k, v in (item.split(":") for item in own)}
    with open_result(path) as result:
        hosts = {int(r["rank"]): str(r["host"]) for _, r in result.ranks().iterrows()}
        found = L.rank_rates(result)
    for rank, host in sorted(hosts.items()):
        rate, want = found[rank]["receive"], expected.get(rank, float(gbps))
        if rate is None or abs(rate.gbps - want) > 1e-9 or \
                rate.source != f"emulated cluster's receive limit on {host}":
            sys.exit(f"rank {rank} on {host}: receive line rate "
                     f"{rate.text() if rate else 'unknown'}, expected {want:g} Gb/s from the "
                     "emulated cluster's limit (recorded by launch/emulated-cluster-rsh)")
    print(f"line rates: {len(hosts)} ranks read their hosts' emulated receive limits")


def share(path, into):
    shares = []
    with open_result(path) as result:
        rates_ = L.rank_rates(result)
        for inst in result.instances():
            if str(inst.get("kind")) not in ("bandwidth", "incast"):
                continue
            moved = L._transfers(inst)
            if moved is None:
                continue
            for s, r, nbytes, seconds in zip(*moved):
                wanted = (s < 0) if into == "incast" else (r == int(into))
                rate = L.path_rate(rates_, None if s < 0 else int(s), int(r))
                if wanted and seconds > 0 and rate is not None:
                    shares.append(nbytes / seconds / 1e9 * 8 / rate.gbps)
                    source = rate.text()
    if not shares:
        sys.exit(f"{path}: no transfer into {into} with a known line rate")
    median = float(np.median(shares))
    print(f"into {into}: median share {100 * median:.1f} % of {source} over {len(shares)} "
          f"transfers (expected {100 * LOW:.0f}-{100 * HIGH:.0f} %)")
    if not LOW <= median <= HIGH:
        sys.exit(f"share {100 * median:.1f} % is not within 10 % of "
                 f"{100 * TCP_PAYLOAD_SHARE:.1f} %")


if __name__ == "__main__":
    {"verdict": verdict, "cluster": cluster, "rates": rates, "share": share}[sys.argv[1]](*sys.argv[2:])
