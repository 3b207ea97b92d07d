"""compare's whole text table (every row, interval, verdict word and the lines above it)
on fixed runs, held against the recorded expectation (expected_outputs.py: a change
detector; the promises are test_compare*.py's and test_prop_compare.py's)."""

import re

import pytest

from expected_outputs import check_expected, text_lines
from helpers import run_main
from synthetic import write_standard_run

CASES = {
    "same-fabric": (["standard", "same"], ["--resamples", "200"]),
    "slower": (["standard", "slower"], []),
    "slower-negligible-40": (["standard", "slower"], ["--negligible", "40", "--resamples", "200"]),
    "three-files": (["clean", "standard", "slower"], ["--resamples", "200", "--seed", "7"]),
    "two-runs-a-side": (["standard", "same", "--", "slower", "clean"], ["--resamples", "200"]),
    "small-vs-standard": (["small", "standard"], ["--resamples", "200"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_compare(files, case):
    names, options = CASES[case]
    args = [files[n] if n != "--" else n for n in names]
    out = run_main("compare", *args, *options)
    replace = {str(p): f"<{name}>" for name, p in files.items()}
    check_expected("compare", case, {
        "exit": out.returncode, "stdout": text_lines(out.stdout, replace),
        "stderr": text_lines(re.sub(r"/tmp/\S+", "<path>", out.stderr), replace)})


def test_compare_with_an_aa_archive(files, tmp_path):
    archive = tmp_path / "aa"
    archive.mkdir()
    for name in ("standard", "same"):
        (archive / f"{name}.h5").symlink_to(files[name])
    out = run_main("compare", files["clean"], files["slower"], "--aa-archive", archive, "--resamples", "200")
    replace = {str(p): f"<{name}>" for name, p in files.items()}
    replace[str(archive)] = "<archive>"
    check_expected("compare", "aa-archive", {"exit": out.returncode, "stdout": text_lines(out.stdout, replace),
                                             "stderr": text_lines(out.stderr, replace)})


@pytest.fixture(scope="module")
def more_runs(tmp_path_factory):
    """Two more runs of the standard fabric and two 30 % slower: three runs a side."""
    d = tmp_path_factory.mktemp("compare-runs")
    out = {}
    for name, seed, scale in (("a2", 12, 1.0), ("a3", 13, 1.0), ("b2", 14, 1.3), ("b3", 15, 1.3)):
        out[name] = str(d / f"{name}.h5")
        write_standard_run(out[name], seed=seed, latency_scale=scale, slow_pair=None, with_hosts=False)
    return out


def test_compare_three_runs_a_side(files, more_runs):
    """3 vs 3: the runs' permutation test over every split."""
    runs = dict(files, **more_runs)
    out = run_main("compare", files["standard"], more_runs["a2"], more_runs["a3"], "--",
                   files["slower"], more_runs["b2"], more_runs["b3"], "--resamples", "200")
    replace = {str(p): f"<{name}>" for name, p in runs.items()}
    check_expected("compare", "three-runs-a-side", {
        "exit": out.returncode, "stdout": text_lines(out.stdout, replace),
        "stderr": text_lines(out.stderr, replace)})
