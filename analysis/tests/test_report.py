import os
import re

import numpy as np
import pytest

from fabscope_analysis import open_result
from fabscope_analysis.report import build_report
from helpers import chromium_binary, run_cli, screenshot
from synthetic import SyntheticRun, latency_entries, make_samples


def _section_ids(text):
    return set(re.findall(r'<h2 id="([a-z]+)"', text))


@pytest.fixture(scope="module")
def standard_report(files, tmp_path_factory):
    """The report of the standard file, built once through the command line."""
    html = tmp_path_factory.mktemp("report") / "report.html"
    out = run_cli("report", files["standard"], "-o", html)
    assert out.returncode == 0, out.stderr
    assert f"wrote {html}" in out.stdout
    return html


def test_full_report_has_every_section(standard_report):
    text = standard_report.read_text()
    assert _section_ids(text) == {"verdict", "summary", "cdf", "ranks", "pairs", "incast", "kv",
                                  "faults", "inventory", "counters"}
    # self-contained: every image embedded, nothing fetched from elsewhere
    images = re.findall(r'<img [^>]*src="([^"]+)"', text)
    assert len(images) >= 8 and all(src.startswith("data:image/png;base64,") for src in images)
    assert "http://" not in text and "https://" not in text
    assert "Inconsistent net/eth0/mtu: 9000 on fh0, fh1, fh3; 1500 on fh2" in text
    assert "Jain index" in text and "link fh1:eth1 down (injected)" in text
    assert "RetransSegs" in text


def test_absent_data_sections_omitted(tmp_path):
    path = tmp_path / "minimal.h5"
    run = SyntheticRun(path, nranks=2)
    run.add_test("pp", "latency", make_samples(latency_entries([(0, 1)], 50, 1500, run.rng),
                                              run.start_ns()), nbytes=8, divisor=2)
    run.close()
    with open_result(path) as result:
        text = build_report(result)
    # no pair matrix, incast, kv, events, counters or /hosts; one rank measures (no tails)
    assert _section_ids(text) == {"verdict", "summary", "cdf", "inventory"}
    assert "Host inventory" not in text


def test_incomplete_report_says_so(tmp_path):
    path = tmp_path / "crashed.h5"
    run = SyntheticRun(path, nranks=2)
    run.add_test("pp", "latency", make_samples(latency_entries([(0, 1)], 20, 1500, run.rng),
                                              run.start_ns()), nbytes=8, divisor=2)
    run.close(complete=False)
    html = tmp_path / "crashed.html"
    out = run_cli("report", path, "-o", html)
    assert out.returncode == 0 and "incomplete" in out.stderr
    assert "This file is incomplete" in html.read_text()


@pytest.mark.skipif(chromium_binary() is None,
                    reason="chromium is not installed (Debian package `chromium`); the HTML "
                           "report cannot be rendered here")
def test_report_renders_in_chromium(standard_report, tmp_path):
    png = tmp_path / "report.png"
    shot = screenshot(standard_report, png)
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert png.exists() and png.stat().st_size > 20_000
    import matplotlib.image as mpimg
    pixels = mpimg.imread(str(png))
    assert pixels.shape[1] == 1280
    # a blank or error page is (almost) one colour; the report has text, tables and plots
    assert np.std(pixels) > 0.05
    assert len(np.unique(pixels.reshape(-1, pixels.shape[-1])[::97], axis=0)) > 50
    if os.environ.get("FABSCOPE_KEEP_SCREENSHOT"):
        os.replace(png, os.environ["FABSCOPE_KEEP_SCREENSHOT"])


def test_key_value_inventory_and_recorded_flags(tmp_path):
    path = tmp_path / "inv.h5"
    run = SyntheticRun(path, nranks=4)
    run.add_test("pp", "latency", make_samples(latency_entries([(0, 1), (2, 3)], 20, 1500,
                                                              run.rng), run.start_ns()),
                 nbytes=8, divisor=2)
    for host, fw in (("fh0", "22.36.1010"), ("fh1", "20.31.1014")):
        run.add_host_table(host, "inventory", [("host/name", host),
                                               ("rdma/mlx5_0/fw_ver", fw),
                                               ("net/eth0/mtu", "9000")], ["key", "value"])
    run.add_host_table("fh1", "consistency",
                       [("warning", "fh1", "rdma/mlx5_0/fw_ver", "firmware differs from peers",
                         "22.36.1010", "20.31.1014")],
                       ["severity", "host", "component", "what", "expected", "found"])
    run.close()
    with open_result(path) as result:
        text = build_report(result)
    assert "Consistency flags (recorded by fabscope)" in text
    assert "firmware differs from peers" in text
    assert "rdma/mlx5_0/fw_ver" in text and "Host inventory (3 facts" in text
    from fabscope_analysis.inventory import inconsistent_fields, inventory_frame
    with open_result(path) as result:
        assert list(inconsistent_fields(inventory_frame(result))) == ["rdma/mlx5_0/fw_ver"]
