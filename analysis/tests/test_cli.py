"""The command line's own rules (cli.py), run in this process through main(): how compare
splits its files into two sides around `--`. (The commands' outcomes and exit codes:
test_contract_analysis.py; the real processes: test_verdict.py.)"""

from fabscope_analysis.cli import build_parser
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


def test_compare_does_not_count_an_options_value_before_the_double_dash_as_a_file(files):
    """`--resamples 10` ahead of the files and `--` is one option and its value: the reference side is
    still the two files, not three (which would leave the other side empty)."""
    p = run_main("compare", "--resamples", "10", files["standard"], files["same"], "--", files["slower"])
    assert p.returncode == 0, p.stderr
    assert "runs per side: 2 vs 1" in p.stdout, p.stdout


def test_compare_writes_its_differences_into_the_html_page(files, tmp_path):
    """compare -o: the page holds the table of differences the text shows (a row per case
    and statistic), not only the notes around it."""
    html = tmp_path / "c.html"
    p = run_main("compare", files["standard"], files["slower"], "-o", html, "--resamples", "10")
    assert p.returncode == 0, p.stderr
    assert " pingpong/8 " in p.stdout and " p50 " in p.stdout, p.stdout
    page = html.read_text()
    for stat in ("p50", "p99"):
        assert (f'<td class="l">pingpong</td><td>8 B</td><td class="l">quiet</td><td>{stat}</td>'
                in page), stat


def test_impact_counts_sixteen_tokens_a_kv_block_unless_told():
    """impact's defaults are those its help names: 32 sequences a decode step, 8192
    prompt tokens, 16 tokens a KV block."""
    args = build_parser().parse_args(["impact", "run.h5"])
    assert (args.decode_batch, args.prompt, args.block_tokens) == (32, 8192, 16)
