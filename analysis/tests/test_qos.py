"""The congestion control / QoS block (inventory.qos_settings, qos_frame) in report and
compare: two runs whose hosts carry fabscope's qos/* inventory facts side by side."""
import io

import h5py
import numpy as np

from fabscope_analysis import open_result
from fabscope_analysis.compare import run_compare
from fabscope_analysis.inventory import qos_frame, qos_settings
from fabscope_analysis.report import build_report
from synthetic import write_standard_run


def _add_inventory(path, facts_by_host):
    """/hosts/<host>/inventory key/value tables, as fabscope writes them."""
    with h5py.File(path, "a") as f:
        for host, facts in facts_by_host.items():
            group = f.require_group("hosts").require_group(host)
            dtype = np.dtype([("key", "S128"), ("value", "S128")])
            group.create_dataset("inventory", data=np.array(
                [(k.encode(), v.encode()) for k, v in facts.items()], dtype=dtype))


def _facts(pfc, ecn="3", tc="106"):
    return {"qos/net/ens1f0/dcb": "configured", "qos/net/ens1f0/pfc_enabled": pfc,
            "qos/net/ens1f0/trust": "dscp", "qos/net/ens1f0/app_dscp": "26:3,48:6",
            "qos/net/ens1f0/ecn_np": ecn, "qos/net/ens1f0/ecn_rp": "3",
            "qos/net/ens1f0/dcqcn/np/cnp_dscp": "48",
            "qos/rdma/mlx5_1/port/1/default_roce_mode": "RoCE v2",
            "qos/rdma/mlx5_1/port/1/traffic_class": tc,
            "qos/vendor_tool": "none (mlnx_qos not installed or not run)",
            "env/NCCL_IB_TC": tc}


def _two_runs(tmp_path):
    a, b = tmp_path / "lossless.h5", tmp_path / "lossy.h5"
    write_standard_run(a, with_hosts=False)
    write_standard_run(b, seed=9, with_hosts=False)
    _add_inventory(a, {"fh0": _facts("3"), "fh1": _facts("3")})
    # Run B: PFC off on one host, ECN off on the other.
    _add_inventory(b, {"fh0": _facts("none"), "fh1": _facts("3", ecn="none")})
    return a, b


def test_settings_of_one_run_say_which_host_differs(tmp_path):
    a, b = _two_runs(tmp_path)
    with open_result(a) as ra, open_result(b) as rb:
        sa, sb = qos_settings(ra), qos_settings(rb)
    assert sa["ens1f0 pfc"] == "3" and sa["ens1f0 trust"] == "dscp"
    assert sa["ens1f0 dscp>prio"] == "26:3,48:6"
    assert sa["mlx5_1/1 roce mode"] == "RoCE v2" and sa["mlx5_1/1 traffic class"] == "106"
    assert sa["env NCCL_IB_TC"] == "106" and sa["env UCX_IB_SL"] == "unset"
    assert sb["ens1f0 pfc"] == "fh0: none; fh1: 3"
    assert sb["ens1f0 ecn np"] == "fh0: 3; fh1: none"
    # DCQCN parameters are in the inventory table, not in the compact block.
    assert not any("cnp_dscp" in k for k in sa)


def test_compare_prints_the_block_side_by_side(tmp_path):
    a, b = _two_runs(tmp_path)
    with open_result(a) as ra, open_result(b) as rb:
        out = io.StringIO()
        run_compare([ra, rb], str(tmp_path / "c.html"), resamples=50, stream=out)
        frame = qos_frame([ra, rb], ["A", "B"])
    text = out.getvalue()
    assert "congestion control / QoS of each run:" in text
    line = next(l for l in text.splitlines() if l.strip().startswith("ens1f0 pfc"))
    assert "3" in line and "fh0: none; fh1: 3" in line
    assert list(frame.columns) == ["setting", "A", "B"]
    html = (tmp_path / "c.html").read_text()
    assert "Congestion control and QoS of each run" in html and "fh0: none; fh1: 3" in html
    assert "the same on every side" not in html  # they differ: shown open


def test_compare_folds_the_block_when_every_side_is_the_same(tmp_path):
    a, _ = _two_runs(tmp_path)
    with open_result(a) as ra, open_result(a) as rb:
        run_compare([ra, rb], str(tmp_path / "same.html"), resamples=50, stream=io.StringIO())
    html = (tmp_path / "same.html").read_text()
    assert "<details><summary>the same on every side (" in html


def test_report_shows_the_block_and_old_files_have_none(tmp_path):
    a, b = _two_runs(tmp_path)
    with open_result(a) as ra:
        page = build_report(ra)
    assert "Congestion control and QoS" in page and "26:3,48:6" in page
    old = tmp_path / "old.h5"  # /hosts attributes only, as files from before QoS was recorded
    write_standard_run(old, nranks=4)
    with open_result(old) as old:
        assert qos_settings(old) == {}
        assert "Congestion control and QoS" not in build_report(old)


def test_infiniband_vl_arbitration_and_firmware_settings_are_in_the_block(tmp_path):
    """smpquery's VL arbitration / SL-to-VL and mlxconfig's firmware CC parameters
    (collected only where those tools are installed) join the block; a host whose VL
    arbitration differs is named."""
    path = tmp_path / "ib.h5"
    write_standard_run(path, with_hosts=False)
    ib = {"qos/rdma/mlx5_0/port/1/sm_sl": "0", "qos/rdma/mlx5_0/port/1/vlarb_low": "0:32,1:32",
          "qos/rdma/mlx5_0/port/1/vlarb_high": "0:64", "qos/rdma/mlx5_0/port/1/sl2vl": "0,1,0,1",
          "qos/rdma/mlx5_0/firmware/ROCE_CC_PRIO_MASK_P1": "8",
          "qos/vendor_tool": "smpquery (/usr/sbin/smpquery), mlxconfig (/usr/bin/mlxconfig)"}
    _add_inventory(path, {"fh0": ib, "fh1": {**ib, "qos/rdma/mlx5_0/port/1/vlarb_high": "0:255"}})
    with open_result(path) as r:
        s = qos_settings(r)
    assert s["mlx5_0/1 vl arb low"] == "0:32,1:32" and s["mlx5_0/1 sl>vl"] == "0,1,0,1"
    assert s["mlx5_0/1 vl arb high"] == "fh0: 0:64; fh1: 0:255"
    assert s["mlx5_0 fw ROCE_CC_PRIO_MASK_P1"] == "8"
    assert s["vendor tool"].startswith("smpquery")
