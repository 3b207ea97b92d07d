"""A result file from elsewhere whose names carry markup, quotes, newlines and control
characters goes through every output of the analysis: the HTML report
(rendered in headless Chromium: none of the file's script runs), JUnit XML (parses, the
names read back), JSON (diagnose, impact: parse, names read back), the text of summary
(no raw terminal control bytes), compare (text and HTML, with the inventory of both
sides) and OpenMetrics (test_export.py covers its escaping). Inventory values (the
/hosts tables, which a site's own hosts or a tampered file fill) carry the same strings."""

import json
import os
import subprocess
import tempfile
import xml.etree.ElementTree as ET

import h5py
import pytest

import synthetic
from helpers import chromium_binary, run_cli
from synthetic import write_matrix_run

# Each would do something if written raw: run script, close an attribute, start a
# terminal escape, break an XML or JSON string.
MARK = "data-pwned"
HOSTILE = [
    "<script>document.title='PWNED'</script>",
    "\"><img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">",
    "h'2\n</td><b onmouseover=alert(1)>",
    "h\x1b[31m3\x07&amp;",
]
INVENTORY_VALUES = [
    "<script>document.body.setAttribute('data-pwned','1')</script>",
    "fw\"><svg onload=\"document.body.setAttribute('data-pwned','1')\">",
    "20.4\n</td></tr><iframe srcdoc=x>",
]


@pytest.fixture(scope="module")
def hostile_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    path = d / "hostile.h5"
    names = HOSTILE + ["plain-4", "plain-5"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(synthetic.SyntheticRun, "host", lambda self, rank: names[rank])
        write_matrix_run(path, ranks_per_host=1, receive={1: 0.3})
    with h5py.File(path, "r+") as f:
        f.attrs["scenario_name"] = "</title><script>document.title='PWNED'</script>"
        f.attrs["scenario_text"] = ("name: x\ndescription: \"</pre><script>document.body.setAttribute("
                                    "'data-pwned','1')</script>\"\ntests: []\n")
        for g in f["tests"].values():
            g.attrs["name"] = "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">\x1b[2J"
    # Inventory values that differ between hosts are shown first in the report's table
    # and in compare's side-by-side: each host gets its own hostile firmware string.
    with h5py.File(path, "r+") as f:
        synthetic.write_host_inventory(f, {name: {"firmware": INVENTORY_VALUES[i % len(INVENTORY_VALUES)],
                              "kernel": "6.1\x1b]0;title\x07"}
                       for i, name in enumerate(names)})
    return d, path, names


RAW_MARKUP = ("<script>document.title='PWNED'", "<img src=x onerror=", "<b onmouseover",
              "<script>document.body", "<svg onload=", "<iframe srcdoc")


def _check_page(html):
    """No hostile markup written raw, and none of it runs when the page is rendered."""
    text = html.read_text()
    for raw in RAW_MARKUP:
        assert raw not in text, f"written raw into the page: {raw}"
    if chromium_binary() is None:
        pytest.skip("chromium is not installed (Debian package `chromium`): the page was checked "
                    "as text only, not rendered")
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run(
            [chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", "--virtual-time-budget=3000",
             "--dump-dom", "file://" + os.path.abspath(html)],
            capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0 and "</html>" in dom.stdout, dom.stderr[-2000:]
    assert f'{MARK}="1"' not in dom.stdout, "a script from the file ran in the page"
    assert "<title>PWNED" not in dom.stdout
    return dom.stdout.replace("&#x27;", "'").replace("&#39;", "'")


def test_html_report_runs_none_of_the_files_script(hostile_file):
    d, path, names = hostile_file
    html = d / "report.html"
    out = run_cli("report", path, "-o", html)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    dom = _check_page(html)
    assert "document.title='PWNED'" in dom, "the hostile name should be shown as text"
    assert "svg onload=" in dom, "the hostile inventory value should be shown as text"


def test_compare_page_and_text_keep_the_file_inert(hostile_file):
    """compare puts two runs' tests and inventories side by side: both sides hostile."""
    d, path, names = hostile_file
    html = d / "compare.html"
    out = run_cli("compare", path, path, "-o", html, "--resamples", "50")
    assert out.returncode in (0, 1), out.stderr[-2000:]
    for stream in (out.stdout, out.stderr):
        assert "\x1b" not in stream and "\x07" not in stream, \
            "a control character from the file reached the terminal raw"
    _check_page(html)


def test_junit_parses_and_keeps_the_names(hostile_file):
    d, path, names = hostile_file
    junit = d / "accept.xml"
    out = run_cli("accept", path, "--junit", junit)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    root = ET.parse(junit).getroot()  # raises on a raw control character or markup
    text = ET.tostring(root, encoding="unicode")
    assert "\x1b" not in text and "\x07" not in text
    everything = " ".join(filter(None, (e.text for e in root.iter()))) + " ".join(
        v for e in root.iter() for v in e.attrib.values())
    assert "<img src=x onerror=" in everything or "PWNED" in everything, \
        "the names should read back from the XML as text"


def test_json_outputs_parse_and_keep_the_names(hostile_file):
    d, path, names = hostile_file
    out = run_cli("diagnose", path, "--json", d / "diag.json")
    assert out.returncode in (0, 1, 3), out.stderr[-2000:]
    doc = json.loads((d / "diag.json").read_text())
    # /ranks keeps 64 bytes of a host name (str[64]): the culprit is named by those
    assert names[1].encode()[:64].decode() in {c["host"] for c in doc["culprits"]}, doc["culprits"]
    out = run_cli("impact", path, "--model", "llama3-70b", "--json", d / "impact.json")
    assert out.returncode in (0, 1), out.stderr[-2000:]
    json.loads((d / "impact.json").read_text())


def test_summary_writes_no_terminal_control_bytes(hostile_file):
    d, path, names = hostile_file
    out = run_cli("summary", path)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    assert "\x1b" not in out.stdout and "\x07" not in out.stdout, \
        "a control character from the file reached the terminal raw"
