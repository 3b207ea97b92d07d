"""tests/support/mutation_anchors.py: a catalogue break follows the code it changes when the
code moves (within its file, to a renamed file, or into another file), says so when its
lines are gone or ambiguous, and every break of today's catalogue re-bases onto today's
tree as the same change."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))

import mutation_anchors as M  # noqa: E402

SOURCE = """def first():
    return 1


def judge(value, limit):
    if value <= limit:
        return "PASS"
    return "FAIL"


def last():
    return 3
"""

PATCH = """# break: a value at the limit fails
# promise: a value at the limit passes
# pytest: tests/x.py
diff --git a/pkg/mod.py b/pkg/mod.py
index 1111111..2222222 100644
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -4,6 +4,6 @@ def first():
 
 def judge(value, limit):
-    if value <= limit:
+    if value < limit:
         return "PASS"
     return "FAIL"
 
"""


def _tree(tmp_path, source):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(source)
    patch = tmp_path / "judge-limit-strict.patch"
    patch.write_text(PATCH)
    return patch


def _applied(tmp_path, text):
    (tmp_path / "y.patch").write_text(text)
    subprocess.run(["git", "apply", "y.patch"], cwd=tmp_path, check=True, capture_output=True)
    return (tmp_path / "pkg" / "mod.py").read_text()


def test_a_break_follows_its_lines_when_the_code_moves(tmp_path):
    moved = ("import os\n\n\ndef added_above():\n    return os.sep\n\n\n"
             + SOURCE.replace("    return 1\n", "    # first\n    return 1\n"))
    patch = _tree(tmp_path, moved)
    result = M.anchor(patch, tmp_path)
    assert not result.problems and result.moved
    assert result.text.startswith("# break: a value at the limit fails\n")
    after = _applied(tmp_path, result.text)
    assert after == moved.replace("    if value <= limit:", "    if value < limit:")


def test_an_unmoved_break_is_left_as_its_change(tmp_path):
    patch = _tree(tmp_path, SOURCE)
    result = M.anchor(patch, tmp_path)
    assert not result.problems
    assert _applied(tmp_path, result.text) == SOURCE.replace("value <= limit", "value < limit")


def test_lines_gone_or_ambiguous_are_named(tmp_path):
    patch = _tree(tmp_path, SOURCE.replace("value <= limit", "limit >= value"))
    gone = M.anchor(patch, tmp_path)
    assert gone.text is None
    assert gone.problems == ["judge-limit-strict.patch: pkg/mod.py: the lines it changes are gone "
                             "from every file of the tree (first: 'if value <= limit:')"]
    twice = tmp_path / "twice"
    twice.mkdir()
    body = "def a(value, limit):\n    if value <= limit:\n        return 1\n"
    (twice / "pkg").mkdir()
    (twice / "pkg" / "mod.py").write_text(body + "\n\n" + body.replace("def a", "def b"))
    (twice / "p.patch").write_text(PATCH)
    assert "appear 2 times and the context does not tell them apart" in \
        M.anchor(twice / "p.patch", twice).problems[0]


def test_context_breaks_the_tie_between_two_places(tmp_path):
    other = "def other(value, limit):\n    if value <= limit:\n        return 0\n\n\n"
    patch = _tree(tmp_path, other + SOURCE)
    result = M.anchor(patch, tmp_path)
    assert not result.problems
    after = _applied(tmp_path, result.text)
    assert after == other + SOURCE.replace("    if value <= limit:\n        return \"PASS\"",
                                           "    if value < limit:\n        return \"PASS\"")


def test_every_break_of_the_catalogue_rebases_as_the_same_change(tmp_path):
    """Anchored anew on today's tree, each patch applies and leaves its files exactly as
    the patch as written does."""
    patches = sorted((ROOT / "tests" / "mutations").glob("*.patch"))
    assert len(patches) > 80
    for patch in patches:
        result = M.anchor(patch, ROOT)
        assert not result.problems, result.problems
        _, files = M.split_patch(patch.read_text())
        outcomes = []
        for text in (patch.read_text(), result.text):
            work = tmp_path / f"{patch.stem}-{len(outcomes)}"
            for f in files:
                (work / f.path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(ROOT / f.path, work / f.path)
            (work / "x.patch").write_text(text)
            subprocess.run(["git", "apply", "x.patch"], cwd=work, check=True, capture_output=True)
            outcomes.append([(work / f.path).read_text() for f in files])
        assert outcomes[0] == outcomes[1], patch.name


def _git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                   check=True, capture_output=True)


def _repo(tmp_path, files):
    """A git repository holding `files` ({path: text}) in one commit, and the patch."""
    repo = tmp_path / "repo"
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "first")
    patch = tmp_path / "judge-limit-strict.patch"
    patch.write_text(PATCH)
    return repo, patch


def _applied_in(repo, text, path):
    (repo / "y.patch").write_text(text)
    subprocess.run(["git", "apply", "y.patch"], cwd=repo, check=True, capture_output=True)
    (repo / "y.patch").unlink()
    return (repo / path).read_text()


def test_a_break_follows_a_committed_rename(tmp_path):
    # A second file holds the same lines: only git's rename says which one is the file's.
    repo, patch = _repo(tmp_path, {"pkg/mod.py": SOURCE, "pkg/copy.py": SOURCE})
    _git(repo, "mv", "pkg/mod.py", "pkg/judge.py")
    _git(repo, "commit", "-q", "-m", "renamed")
    result = M.anchor(patch, repo)
    assert not result.problems, result.problems
    assert result.renamed == ["pkg/mod.py -> pkg/judge.py"]
    assert "diff --git a/pkg/judge.py b/pkg/judge.py" in result.text and "pkg/mod.py" not in result.text
    assert _applied_in(repo, result.text, "pkg/judge.py") == SOURCE.replace("value <= limit",
                                                                            "value < limit")


def test_a_break_follows_a_rename_git_has_not_seen(tmp_path):
    """A plain `mv` not yet added: the only file of the tree that holds the lines."""
    repo, patch = _repo(tmp_path, {"pkg/mod.py": SOURCE})
    (repo / "pkg" / "mod.py").rename(repo / "pkg" / "rules.py")
    result = M.anchor(patch, repo)
    assert not result.problems, result.problems
    assert result.renamed == ["pkg/mod.py -> pkg/rules.py"]
    assert _applied_in(repo, result.text, "pkg/rules.py") == SOURCE.replace("value <= limit",
                                                                            "value < limit")


TWO_HUNKS = PATCH + """@@ -11,2 +11,2 @@ def judge(value, limit):
 def last():
-    return 3
+    return 4
"""


def test_a_function_moved_into_another_file_takes_its_hunk_along(tmp_path):
    repo, patch = _repo(tmp_path, {"pkg/mod.py": SOURCE})
    patch.write_text(TWO_HUNKS)
    assert subprocess.run(["git", "apply", "--check", str(patch)], cwd=repo).returncode == 0
    judge = SOURCE[SOURCE.index("def judge"):SOURCE.index("def last")]
    (repo / "pkg" / "mod.py").write_text(SOURCE.replace(judge, ""))
    (repo / "pkg" / "rules.py").write_text("from pkg.mod import first\n\n\n" + judge)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "judge moves to rules.py")
    result = M.anchor(patch, repo)
    assert not result.problems, result.problems
    assert result.renamed == ["pkg/mod.py -> pkg/rules.py"]
    after = SOURCE.replace(judge, "").replace("return 3", "return 4")
    moved = "from pkg.mod import first\n\n\n" + judge.replace("value <= limit", "value < limit")
    _applied_in(repo, result.text, "pkg/mod.py")
    assert (repo / "pkg" / "mod.py").read_text() == after
    assert (repo / "pkg" / "rules.py").read_text() == moved


def test_a_moved_break_found_in_two_files_or_none_is_refused(tmp_path):
    repo, patch = _repo(tmp_path, {"pkg/mod.py": SOURCE})
    (repo / "pkg" / "mod.py").rename(repo / "pkg" / "a.py")
    (repo / "pkg" / "b.py").write_text(SOURCE)
    twice = M.anchor(patch, repo)
    assert twice.text is None
    assert twice.problems == [
        "judge-limit-strict.patch: pkg/mod.py: no such file, and the lines it changes are found "
        "in several files, so where it moved is ambiguous: pkg/a.py, pkg/b.py "
        "(first: 'if value <= limit:')"]
    for name in ("a.py", "b.py"):
        (repo / "pkg" / name).write_text(SOURCE.replace("value <= limit", "limit >= value"))
    gone = M.anchor(patch, repo)
    assert gone.text is None and gone.problems == [
        "judge-limit-strict.patch: pkg/mod.py: no such file, and the lines it changes are gone "
        "from every file of the tree (first: 'if value <= limit:')"]


@pytest.mark.parametrize("bad", ["no diff here\n", "# break: x\n"])
def test_a_patch_without_a_diff_is_a_problem(tmp_path, bad):
    patch = tmp_path / "area-name.patch"
    patch.write_text(bad)
    assert M.anchor(patch, tmp_path).problems == ["area-name.patch: no 'diff --git' line"]
