"""Line-rate accounting: each rank's rate and its source from the inventory (emulated limit,
RDMA port, interface speed), a path's rate (the slower side), KV push and p2p bandwidth as
shares, the headline, and the likely limiter named below the stated share."""

import numpy as np
import pytest

from serving_files import add_kv
from synthetic import SyntheticRun, bandwidth_entries, make_samples

from fabscope_analysis import open_result
from fabscope_analysis.run_analysis import size_text
from fabscope_analysis.serving.line_rate import (ShareRow, headline, kv_headline, parse_tc_rate,
                                                 path_rate, rank_rates, share_rows)

MIB = 1 << 20


def inventory(emulated_receive=None):
    """fh0: a 10 Gb/s interface; fh1: eth0 on an RDMA device of 200 Gb/s; fh2: a 25 Gb/s
    interface; fh3: the emulated cluster's 1 Gbit receive limit on a nominal 10 Gb/s veth."""
    up = {"net/eth0/operstate": "up", "net/lo/operstate": "unknown"}
    hosts = {"fh0": dict(up, **{"net/eth0/speed_mbps": "10000"}),
             "fh1": dict(up, **{"net/eth0/speed_mbps": "200000", "net/eth0/rdma_device": "mlx5_0",
                                "rdma/mlx5_0/port/1/state": "ACTIVE",
                                "rdma/mlx5_0/port/1/rate_gbps": "200"}),
             "fh2": dict(up, **{"net/eth0/speed_mbps": "25000"}),
             "fh3": dict(up, **{"net/eth0/speed_mbps": "10000"})}
    if emulated_receive:
        hosts["fh3"]["env/FABSCOPE_EMULATED_RECEIVE_RATE"] = emulated_receive
    return hosts


def kv_file(path, gbps, receive="1Gbit", decode=3, messages=1, gather_ns=0, requests=50,
            validity=None):
    run = SyntheticRun(path, nranks=4, ranks_per_host=1)
    run.add_hosts(inventory(receive))
    if validity:
        run.add_validity(validity)
    nbytes = 64 * MIB
    seconds = nbytes / (gbps * 1e9)
    rng = np.random.default_rng(1)
    add_kv(run, seconds * 1e9 * rng.lognormal(0, 0.02, requests), np.full(requests, 1e4),
           nbytes=nbytes, prefill=0, decode=decode, messages=messages, gather_ns=gather_ns)
    run.close()
    return str(path)


def test_tc_rates_and_sources():
    assert parse_tc_rate("1Gbit") == 1.0 and parse_tc_rate("500Mbit") == 0.5
    assert parse_tc_rate("125Mbps") == pytest.approx(1.0) and parse_tc_rate("fast") is None
    # every prefix tc prints, each a factor 1000 (tc's units are decimal)
    assert parse_tc_rate("800Kbit") == pytest.approx(8e-4) and parse_tc_rate("2Tbit") == pytest.approx(2000.0)
    assert parse_tc_rate("1000bit") == pytest.approx(1e-6) and parse_tc_rate("100kbps") == pytest.approx(8e-4)


def test_rank_rates_take_the_emulated_limit_then_rdma_then_speed(tmp_path):
    path = kv_file(tmp_path / "r.h5", 0.1)
    with open_result(path) as result:
        rates = rank_rates(result)
    assert rates[3]["receive"].gbps == 1.0 and "emulated cluster's receive limit" in \
        rates[3]["receive"].source
    assert rates[3]["send"].gbps == 10.0 and rates[3]["send"].source == "interface eth0 speed"
    assert rates[1]["send"].gbps == 200 and rates[1]["send"].source == "RDMA port mlx5_0/1 rate"
    assert path_rate(rates, 0, 3).gbps == 1.0          # the slower side: fh3's 1 Gbit
    assert path_rate(rates, 0, 2).gbps == 10.0 and path_rate(rates, 2, 1).gbps == 25.0


def test_kv_push_share_within_ten_percent_of_the_emulated_rate(tmp_path):
    """0.1 GB/s into a 1 Gbit/s host = 80 % of its line rate."""
    with open_result(kv_file(tmp_path / "kv.h5", 0.1)) as result:
        rows = share_rows(result)
        line = headline(result)
    kv = next(r for r in rows if r.kind == "kvpush")
    assert kv.share_p50 == pytest.approx(0.8, rel=0.1) and kv.gbps_p50 == pytest.approx(0.1, rel=0.05)
    assert "1 Gb/s (emulated cluster's receive limit on fh3)" in kv.rate
    assert line.startswith("KV push at 80 % of line rate") and "rank 0@fh0 -> 3@fh3" in line
    assert "[kv-staged, 64 MiB per request, quiet]" in line


def test_below_the_share_the_limiter_is_named_from_what_the_run_knows(tmp_path):
    slow = kv_file(tmp_path / "slow.h5", 0.05, messages=4096, gather_ns=int(0.6e9))
    with open_result(slow) as result:
        kv = next(r for r in share_rows(result) if r.kind == "kvpush")
    assert kv.share_p50 == pytest.approx(0.4, rel=0.1)
    text = " | ".join(kv.limiters)
    assert "QP/slice settings: 16 KiB per message" in text
    assert "CPU-bound progress: host gather/scatter copies take" in text
    fine = kv_file(tmp_path / "fine.h5", 0.05)
    with open_result(fine) as result:
        kv = next(r for r in share_rows(result) if r.kind == "kvpush")
    assert kv.limiters and kv.limiters[0].startswith("nothing this run recorded explains it")
    # the run's own validity findings: its ranks competed for cores
    busy = kv_file(tmp_path / "busy.h5", 0.05, validity=[
        ("fh0", "oversubscribed", 4.0, 1.0, "4 ranks per core"),
        ("fh1", "busy_host", 0.9, 0.5, "load average 7 on 8 cores")])
    with open_result(busy) as result:
        kv = next(r for r in share_rows(result) if r.kind == "kvpush")
    assert kv.limiters == ["CPU-bound progress: the run's validity findings say busy_host, "
                           "oversubscribed (ranks competed for cores)"]
    fast = kv_file(tmp_path / "fast.h5", 0.115)
    with open_result(fast) as result:
        kv = next(r for r in share_rows(result) if r.kind == "kvpush")
    assert kv.share_p50 > 0.8 and kv.limiters == []


def test_unknown_rate_is_said_not_guessed(tmp_path):
    run = SyntheticRun(tmp_path / "none.h5", nranks=4, ranks_per_host=1)
    add_kv(run, np.full(20, 1e8), np.full(20, 1e4), nbytes=8 * MIB, prefill=0, decode=3)
    run.close()
    with open_result(str(tmp_path / "none.h5")) as result:
        rows = share_rows(result)
    assert "line rate unknown: the file has no host inventory" in kv_headline(rows)


def test_an_inventory_without_rates_names_the_hosts_whose_nics_have_none(tmp_path):
    """A /hosts inventory that records no port rate, speed or emulated limit: the rate is
    unknown, and the row names the hosts of the transfer's ranks (the prefill, rank 0 on
    fh0, and the decode, rank 3 on fh3), not the others'."""
    run = SyntheticRun(tmp_path / "norate.h5", nranks=4, ranks_per_host=1)
    run.add_hosts({f"fh{h}": {"net/lo/operstate": "unknown"} for h in range(4)})
    add_kv(run, np.full(20, 1e8), np.full(20, 1e4), nbytes=8 * MIB, prefill=0, decode=3)
    run.close()
    with open_result(str(tmp_path / "norate.h5")) as result:
        kv = next(r for r in share_rows(result) if r.kind == "kvpush")
    assert kv.rate == ("rate unknown: no RDMA port rate, interface speed or emulated limit "
                       "recorded for the NICs of fh0, fh3"), kv.rate


def test_p2p_bandwidth_share_per_pair(tmp_path):
    """Pairs at 1 GB/s: 40 % of fh2's 25 Gb/s send side when it sends to fh1 (200 Gb/s)."""
    run = SyntheticRun(tmp_path / "bw.h5", nranks=4, ranks_per_host=1)
    run.add_hosts(inventory())
    rng = np.random.default_rng(2)
    s = make_samples(bandwidth_entries([(2, 1), (0, 2)], 30, 4 * MIB, 1.0, rng), run.start_ns())
    run.add_test("p2p-bw", "bandwidth", s, nbytes=4 * MIB, metric="bandwidth")
    run.close()
    with open_result(str(tmp_path / "bw.h5")) as result:
        row = share_rows(result)[0]
    assert row.share_worst_path == pytest.approx(8 / 25, rel=0.05)
    assert row.worst_path == "rank 2@fh2 -> 1@fh1"
    assert row.share_p50 == pytest.approx(np.median([8 / 25] * 30 + [8 / 10] * 30), rel=0.1)


def test_headline_in_summary_and_compare(tmp_path, capsys):
    from fabscope_analysis.cli import main
    a = kv_file(tmp_path / "a.h5", 0.1)
    b = kv_file(tmp_path / "b.h5", 0.05)
    assert main(["summary", a]) == 0
    assert "KV push at 80 % of line rate" in capsys.readouterr().out
    main(["compare", a, b, "--resamples", "10"])
    out = capsys.readouterr().out
    assert "a.h5: KV push at 80 % of line rate" in out and "b.h5: KV push at 40 % of line rate" \
        in out


def test_headline_and_shares_in_the_report(tmp_path):
    from fabscope_analysis.report import build_report
    with open_result(kv_file(tmp_path / "a.h5", 0.1)) as result:
        page = build_report(result, verdict="not computed in this test")
    section = page[page.index("id=\"line-rate\""):]
    assert "KV push at 80 % of line rate" in section
    assert "1 Gb/s (emulated cluster&#x27;s receive limit on fh3)" in section


def test_all_to_all_phases_as_a_share_of_each_ranks_send_rate(tmp_path):
    """Dispatch and combine rows (flags 11, 12): 1 MiB sent in 1 ms from fh0 (10 Gb/s) is
    84 % of its line rate, from fh2 (25 Gb/s) 34 %; the headline round row is not used."""
    from synthetic import SAMPLE_DTYPE
    run = SyntheticRun(tmp_path / "a2a.h5", nranks=4, ranks_per_host=1)
    run.add_hosts(inventory())
    rows, t = [], run.start_ns()
    for it in range(20):
        for rank in (0, 2):
            rows += [(rank, it, -1, 2 * MIB, t, t + 10**7, 0, 0),
                     (rank, it, -1, MIB, t, t + 10**6, 1 << 11, 0),
                     (rank, it, -1, MIB, t + 10**6, t + 2 * 10**6, 1 << 12, 0)]
        t += 2 * 10**7
    run.add_test("moe", "alltoall", np.array(rows, dtype=SAMPLE_DTYPE), nbytes=MIB)
    run.close()
    with open_result(str(tmp_path / "a2a.h5")) as result:
        row = share_rows(result)[0]
    assert row.kind == "alltoall" and row.transfers == 80
    assert row.share_worst_path == pytest.approx(MIB * 8 / 1e6 / 25, rel=0.01)
    assert row.worst_path == "out of rank 2@fh2"
    assert "10 Gb/s (interface eth0 speed)" in row.rate and "25 Gb/s" in row.rate


def test_incast_aggregate_is_a_share_of_the_receivers_rate(tmp_path):
    """fabscope's incast records latency as its metric and the receiver's aggregate as rows
    flagged 1 << 8: 3 senders x 4 MiB into fh3 (1 Gbit receive limit) at 0.95 Gb/s in all."""
    run = SyntheticRun(tmp_path / "i.h5", nranks=4, ranks_per_host=1)
    run.add_hosts(inventory("1Gbit"))
    entries, flags = [], {}
    for it in range(20):
        for sender in (0, 1, 2):   # each sender's own completion: slower, not a path figure
            entries.append((sender, it, 3, 4 * MIB, 4 * MIB * 8 / 0.2))
        entries.append((3, it, -1, 12 * MIB, 12 * MIB * 8 / 0.95))
        flags[(3, it)] = 1 << 8
    run.add_test("into-one", "incast", make_samples(entries, run.start_ns(), flags=flags),
                 nbytes=4 * MIB, pattern="incast")
    run.close()
    with open_result(str(tmp_path / "i.h5")) as result:
        rows = share_rows(result)
    assert len(rows) == 1 and rows[0].kind == "incast" and rows[0].transfers == 20
    assert rows[0].share_p50 == pytest.approx(0.95, rel=1e-3)
    assert "1 Gb/s (emulated cluster's receive limit on fh3)" in rows[0].rate


def test_a_rank_takes_the_rate_of_its_own_nic_among_several(tmp_path):
    """Two interfaces up on every host: a rank's rate is that of the NIC `/ranks` names for it
    (eth0 here, 10 Gb/s), not the other's (eth1, 100 Gb/s), and not unknown."""
    run = SyntheticRun(tmp_path / "two.h5", nranks=4, ranks_per_host=1)
    two = {"net/eth0/operstate": "up", "net/eth1/operstate": "up", "net/lo/operstate": "unknown",
           "net/eth0/speed_mbps": "10000", "net/eth1/speed_mbps": "100000"}
    run.add_hosts({f"fh{h}": dict(two) for h in range(4)})
    add_kv(run, np.full(20, 1e7), np.full(20, 1e4), nbytes=MIB, prefill=0, decode=3)
    run.close()
    with open_result(str(tmp_path / "two.h5")) as result:
        rates = rank_rates(result)
    for rank in range(4):
        for direction in ("send", "receive"):
            rate = rates[rank][direction]
            assert rate is not None and rate.gbps == 10.0, (rank, direction, rate)
            assert rate.source == "interface eth0 speed"


def test_a_rows_rate_names_three_path_rates_and_counts_the_rest(tmp_path):
    """The row's rate column lists the distinct path rates (sorted), 3 at most, then
    `and N more`: 3 paths of 3 rates are all named with nothing more, 4 add `and 1 more`."""
    speeds = {0: 10, 1: 25, 2: 40, 3: 100, 4: 200}   # Gb/s of each host's eth0
    up = {"net/eth0/operstate": "up"}

    def row_rate(pairs, name):
        run = SyntheticRun(tmp_path / name, nranks=5, ranks_per_host=1)
        run.add_hosts({f"fh{r}": dict(up, **{"net/eth0/speed_mbps": str(g * 1000)})
                       for r, g in speeds.items()})
        s = make_samples(bandwidth_entries(pairs, 10, MIB, 1.0, np.random.default_rng(3)),
                         run.start_ns())
        run.add_test("p2p-bw", "bandwidth", s, nbytes=MIB, metric="bandwidth")
        run.close()
        with open_result(str(tmp_path / name)) as result:
            return share_rows(result)[0].rate
    text = [f"{g} Gb/s (interface eth0 speed)" for g in (10, 100, 25, 40)]   # sorted as text
    assert row_rate([(0, 4), (1, 4), (2, 4)], "three.h5") == "; ".join([text[0], text[2], text[3]])
    assert row_rate([(0, 4), (1, 4), (2, 4), (3, 4)], "four.h5") == \
        "; ".join(text[:3]) + " and 1 more"


def test_a_rank_without_a_nic_takes_its_hosts_only_interface_that_is_up(tmp_path):
    """/ranks without a nic: the rate is the host's one up interface other than lo; with
    two up there is no telling which, so no rate."""
    import h5py
    run = SyntheticRun(tmp_path / "nonic.h5", nranks=2, ranks_per_host=1)
    run.add_hosts({"fh0": {"net/lo/operstate": "unknown", "net/ib0/operstate": "up",
                           "net/ib0/speed_mbps": "25000", "net/eth9/operstate": "down",
                           "net/eth9/speed_mbps": "1000"},
                   "fh1": {"net/ib0/operstate": "up", "net/ib0/speed_mbps": "25000",
                           "net/eth1/operstate": "up", "net/eth1/speed_mbps": "1000"}})
    run.close()
    with h5py.File(tmp_path / "nonic.h5", "r+") as f:
        ranks = f["ranks"][...]
        ranks["nic"] = b""
        f["ranks"][...] = ranks
    with open_result(str(tmp_path / "nonic.h5")) as result:
        rates = rank_rates(result)
    assert (rates[0]["send"].gbps, rates[0]["send"].source) == (25.0, "interface ib0 speed")
    assert rates[1] == {"send": None, "receive": None}


def test_a_host_takes_the_rate_of_its_first_active_rdma_port(tmp_path):
    """fh1's port 1 is DOWN but still reports 400 Gb/s: its rate is port 2's (ACTIVE, 200),
    the first port that carries traffic, not the first listed. Any rate above 0 is one:
    fh2's port of 1 Gb/s is its rate, not its interface's speed."""
    run = SyntheticRun(tmp_path / "down.h5", nranks=3, ranks_per_host=1)
    nic = {"net/eth0/operstate": "up", "net/eth0/speed_mbps": "200000",
           "net/eth0/rdma_device": "mlx5_0"}
    run.add_hosts({"fh0": dict(nic, **{"rdma/mlx5_0/port/1/state": "ACTIVE",
                                       "rdma/mlx5_0/port/1/rate_gbps": "100"}),
                   "fh1": dict(nic, **{"rdma/mlx5_0/port/1/state": "DOWN",
                                       "rdma/mlx5_0/port/1/rate_gbps": "400",
                                       "rdma/mlx5_0/port/2/state": "ACTIVE",
                                       "rdma/mlx5_0/port/2/rate_gbps": "200"}),
                   "fh2": dict(nic, **{"net/eth0/speed_mbps": "1000",
                                       "rdma/mlx5_0/port/1/state": "ACTIVE",
                                       "rdma/mlx5_0/port/1/rate_gbps": "1"})})
    run.close()
    with open_result(str(tmp_path / "down.h5")) as result:
        rates = rank_rates(result)
    assert (rates[0]["send"].gbps, rates[0]["send"].source) == (100.0, "RDMA port mlx5_0/1 rate")
    assert (rates[1]["send"].gbps, rates[1]["send"].source) == (200.0, "RDMA port mlx5_0/2 rate")
    assert (rates[2]["send"].gbps, rates[2]["send"].source) == (1.0, "RDMA port mlx5_0/1 rate")


def test_messages_just_under_64_kib_are_named_small_and_64_kib_is_not(tmp_path):
    """The QP/slice limiter names messages under 64 KiB: a 64 MiB request cut into 1025
    messages (63.94 KiB each) is named, cut into 1024 (64 KiB exactly) it is not."""
    texts = {}
    for messages in (1024, 1025):
        with open_result(kv_file(tmp_path / f"m{messages}.h5", 0.05, messages=messages)) as result:
            kv = next(r for r in share_rows(result) if r.kind == "kvpush")
        texts[messages] = [t for t in kv.limiters if t.startswith("QP/slice settings")]
    assert texts == {1024: [], 1025: [
        "QP/slice settings: 63.93 KiB per message (the request is cut into 1025 messages): "
        "per-message overhead; raise the block or slice size or the messages in flight"]}


def test_kv_headline_names_a_request_of_exactly_1_mib_in_mib():
    row = ShareRow("kv-8k", "kvpush", "quiet", MIB, 10.0, 0.5, 0.4, "rank 0@a -> 1@b",
                   "100 Gb/s (RDMA port)", 20)
    assert kv_headline([row]) == (
        "KV push at 50 % of line rate (10 GB/s per request p50 over 100 Gb/s (RDMA port); "
        "slowest path rank 0@a -> 1@b at 40 %) [kv-8k, 1 MiB per request, quiet]")
    row.bytes = MIB - 1
    assert kv_headline([row]).endswith("[kv-8k, 1023 KiB per request, quiet]")


def kv_rows(path, prefill, decode, ranks_per_host, gbps, flags=()):
    """share_rows of a file of 20 64 MiB KV pushes at gbps GB/s from prefill to decode;
    flags: consistency flags (component, what) fabscope recorded on fh3."""
    run = SyntheticRun(path, nranks=4, ranks_per_host=ranks_per_host)
    run.add_hosts(inventory("1Gbit"))
    if flags:
        run.add_host_table("fh3", "consistency",
                           [("warning", "fh3", c, what, "", "") for c, what in flags],
                           ["severity", "host", "component", "what", "expected", "found"])
    add_kv(run, np.full(20, 64 * MIB / gbps), np.full(20, 1e4), nbytes=64 * MIB,
           prefill=prefill, decode=decode)
    run.close()
    with open_result(str(path)) as result:
        return share_rows(result)


def test_rank_0_as_receiver_limits_the_path_and_two_receivers_sharing_a_nic_are_named(tmp_path):
    """Rank 1 (fh1, 200 Gb/s RDMA) into rank 0 (fh0, 10 Gb/s): the path runs at the receiver's
    10 Gb/s, so 0.5 GB/s is 40 % of it (not 2 % of the sender's 200). Ranks 2 and 3 both on
    fh1 receiving through its one eth0 each get about half of it: named as the limiter."""
    [into_0] = kv_rows(tmp_path / "r0.h5", prefill=1, decode=0, ranks_per_host=1, gbps=0.5)
    assert (into_0.share_p50, into_0.worst_path, into_0.rate) == (
        pytest.approx(0.4), "rank 1@fh1 -> 0@fh0", "10 Gb/s (interface eth0 speed)")
    [shared] = kv_rows(tmp_path / "nic.h5", prefill=0, decode=np.array([2, 3] * 10),
                       ranks_per_host=2, gbps=0.05)
    assert shared.limiters == ["NIC count vs ranks: 2 receiving ranks share NIC eth0 on fh1 "
                               "(each gets about 1/2 of its line rate)"]


def test_a_senders_gpu_and_nic_on_different_numa_nodes_is_named_for_rank_0_too(tmp_path):
    """Rank 0 (fh0, GPU 0) pushes to rank 1 at 0.1 GB/s, far below fh0's 10 Gb/s; fh0's
    inventory puts GPU 0 and eth0 on different NUMA nodes (SYS): the limiter names rank 0's
    placement (the first rank is a rank like the others)."""
    import h5py
    path = tmp_path / "numa.h5"
    run = SyntheticRun(path, nranks=4, ranks_per_host=1)
    hosts = inventory("1Gbit")
    hosts["fh0"]["affinity/gpu0/eth0"] = "SYS"
    run.add_hosts(hosts)
    add_kv(run, np.full(20, 64 * MIB / 0.1), np.full(20, 1e4), nbytes=64 * MIB, prefill=0, decode=1)
    run.close()
    with h5py.File(path, "r+") as f:
        ranks = f["ranks"][...]
        ranks["gpu"] = 0
        f["ranks"][...] = ranks
    with open_result(str(path)) as result:
        [kv] = share_rows(result)
    assert "PCIe/NUMA placement: rank 0@fh0's GPU 0 and NIC eth0 are on different NUMA nodes " \
        "(SYS)" in kv.limiters, kv.limiters


def test_recorded_numa_flags_name_two_of_them_as_limiters(tmp_path):
    """Three NUMA flags recorded on the receiving host: the limiter names the first two,
    not a third."""
    flags = [(f"net/eth{i}/numa_node", f"NIC eth{i} on another NUMA node than GPU {i}")
             for i in range(3)]
    [row] = kv_rows(tmp_path / "numa.h5", 0, 3, 1, 0.05, flags)
    assert [t for t in row.limiters if t.startswith("PCIe/NUMA")] == [
        f"PCIe/NUMA placement: fh3: NIC eth{i} on another NUMA node than GPU {i}"
        for i in range(2)]


def test_sizes_are_cut_to_four_digits_in_the_largest_unit_and_never_read_larger():
    assert [size_text(n) for n in (0, 1023.6, 1024, 1536, 64 * MIB / 1025, MIB - 1, MIB,
                                   1.5 * MIB, 999.99 * MIB, 3 * (1 << 30) + 1)] == [
        "0 B", "1023 B", "1 KiB", "1.5 KiB", "63.93 KiB", "1023 KiB", "1 MiB", "1.5 MiB",
        "999.9 MiB", "3 GiB"]
