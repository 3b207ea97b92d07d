"""The example kind's analysis (kinds/example.py, the template of a new kind): its summary
line and diagnose's pair evidence, from hop rows as the C++ kind writes them (one row per
hop and lap on the sender, peer = its successor). tests/mpi/example_kind.sh runs the real
kind and reads its file through summary and report."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fabscope_analysis.diagnosis.supporting import pairs_tests
from fabscope_analysis.kinds import analysis_of, report_sections
from fabscope_analysis.kinds.example import EXAMPLE


class Ring:
    """A test instance of the example kind over `ranks` ranks, each hop taking hop_us[r]."""

    def __init__(self, hop_us, laps=20, condition="quiet"):
        rows = []
        for rank, us in enumerate(hop_us):
            for lap in range(laps):
                t0 = 1_000_000 * lap
                rows.append((rank, lap, (rank + 1) % len(hop_us), 4096, t0, t0 + int(us * 1e3), 0))
        self.frame = pd.DataFrame(rows, columns=["rank", "iter", "peer", "bytes", "t_post_ns",
                                                 "t_done_ns", "flags"])
        self.attrs = {"kind": "example", "name": "ring", "pattern": "ring", "condition": condition}
        self.index = 0
        self.metric = "latency"

    def get(self, key, default=None):
        return self.attrs.get(key, default)

    def samples(self):
        return self.frame


class Hosts:
    def host_of(self, rank):
        return f"host{rank}"


def test_the_example_is_registered_by_its_module_alone():
    assert analysis_of("example") is EXAMPLE
    assert "ring" in [s.anchor for s in report_sections()]


def test_summary_line_names_the_slowest_hop():
    line = EXAMPLE.summary_lines(EXAMPLE.compute(Ring([10, 10, 30, 10])))[0]
    assert line == "ring of 4 ranks: hop p50 10 us over 80 hops; slowest hop 2 -> 3 p50 30 us", line


def test_a_slow_hop_supports_both_its_ends():
    findings = pairs_tests([Ring([10, 10, 30, 10])], Hosts())
    assert sorted((f.rank, f.side) for f in findings) == [(2, "both"), (3, "both")], findings
    assert all(np.isclose(f.ratio, 3.0) and "host2 -> host3" in f.symptom for f in findings)


def test_an_even_ring_or_a_congested_one_supports_nothing():
    assert pairs_tests([Ring([10, 10, 11, 10])], Hosts()) == []
    assert pairs_tests([Ring([10, 10, 30, 10], condition="alltoall")], Hosts()) == []
