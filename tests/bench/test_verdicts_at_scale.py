"""verdicts_at_scale.py splits a campaign over calls and merges their JSON: two calls
with different --first-seed write the cells and accept runs they ran, and --merge
prints them together, a run found in two files counted once (6 hosts, one case: a few
seconds)."""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import verdicts_at_scale as bench  # noqa: E402

SMALL = ["--sizes", "6x1", "--patterns", "all-pairs", "--noise", "realistic", "--cases", "clean",
         "--seeds", "1", "--accept-runs", "8x8:1", "--compare-trials", "0"]


def test_two_calls_merge_into_one_table(tmp_path, capsys):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert bench.main(SMALL + ["--first-seed", "1", "--json", str(first)]) == 0
    assert bench.main(SMALL + ["--first-seed", "2", "--json", str(second)]) == 0
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    assert [c["seed"] for c in a["cells"]] == [1] and [c["seed"] for c in b["cells"]] == [2]
    assert [r["seed"] for r in a["accept_runs"]] == [1000]
    assert [r["seed"] for r in b["accept_runs"]] == [1001]
    capsys.readouterr()
    assert bench.main(["--merge", str(first), str(second), str(first)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| 6x1"))
    assert [x.strip() for x in row.split("|")][4:6] == ["clean", "2"], row   # case, runs
    accept = next(line for line in out.splitlines() if line.startswith("| 8x8"))
    assert [x.strip() for x in accept.split("|")][4] == "2", accept            # runs
    assert "merged 3 files: 2 diagnosed runs, 2 accept runs" in out


def test_a_campaign_past_its_time_starts_nothing_and_says_so(tmp_path, capsys):
    out_json = tmp_path / "late.json"
    assert bench.main(SMALL + ["--max-minutes", "0", "--json", str(out_json)]) == 0
    assert "2 not started (--max-minutes 0)" in capsys.readouterr().out
    assert json.loads(out_json.read_text())["cells"] == []
