"""The command line's own rules (cli.py), run in this process through main(): how compare
splits its files into two sides around `--`. (The commands' outcomes and exit codes:
test_contract_analysis.py; the real processes: test_verdict.py.)"""

from helpers import run_main


def test_compare_splits_its_sides_at_the_double_dash(files):
    both = run_main("compare", files["standard"], files["same"], "--", files["slower"],
                    "--resamples", "10")
    assert both.returncode == 0, both.stderr
    assert "runs per side: 2 vs 1" in both.stdout, both.stdout
    one_each = run_main("compare", files["standard"], "--", files["same"], "--resamples", "10")
    assert one_each.returncode == 0, one_each.stderr
    for empty_side in (("--", files["same"], files["standard"]), (files["same"], files["standard"], "--")):
        refused = run_main("compare", *empty_side, "--resamples", "10")
        assert refused.returncode == 2 and "each side needs at" in refused.stderr, refused.stderr
