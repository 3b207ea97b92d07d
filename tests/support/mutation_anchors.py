"""A catalogue break is anchored on the code text it changes, not on line numbers.

Each hunk of a tests/mutations/*.patch names the lines it removes (and the context
between them). When code moves, those lines are found again in today's file, the hunk
is placed there (the context around it breaking ties), and the patch is written anew
from the file itself, so a refactor that only moves code re-bases the whole catalogue
with one command (`tests/mutate --rebase`).

Where its lines are looked for, hunk by hunk: the file the patch names; else the name
git says that file was renamed to (committed renames, `git log -M`, then those of the
work tree, `git diff -M HEAD`); else every other file of the tree (git's tracked and
untracked files, ignored ones left out), for code moved into another file. The patch
is written with the path where each hunk was found. A break whose lines are gone
everywhere, or that several places (in one file or in several) match equally, is
reported with the file and the first line looked for: that anchor is broken and the
break needs a person.
"""

from __future__ import annotations

import difflib
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@.*$")


@dataclass
class Hunk:
    old: List[str]          # context and removed lines, in order
    new: List[str]          # context and added lines, in order
    changed: Tuple[int, int] = (0, 0)   # [first, last] index in `old` of the change's span


@dataclass
class FilePatch:
    path: str
    hunks: List[Hunk] = field(default_factory=list)


@dataclass
class Anchored:
    """The outcome for one patch: its new text (None when an anchor broke), and why."""
    name: str
    text: Optional[str]
    problems: List[str] = field(default_factory=list)
    moved: bool = False     # the text differs from the patch as it was
    # 'old path -> new path' for each file whose hunks now live under another name
    renamed: List[str] = field(default_factory=list)


def split_patch(text: str) -> Tuple[str, List[FilePatch]]:
    """(the header before the first 'diff --git', the files and hunks of the diff)."""
    head, sep, body = text.partition("diff --git ")
    if not sep:
        raise ValueError("no 'diff --git' line")
    files: List[FilePatch] = []
    lines = ("diff --git " + body).splitlines()
    hunk: Optional[Hunk] = None
    for line in lines:
        if line.startswith("diff --git "):
            hunk = None
        elif line.startswith("+++ "):
            files.append(FilePatch(line[4:].split("/", 1)[1] if "/" in line[4:] else line[4:]))
        elif HUNK.match(line):
            hunk = Hunk([], [])
            files[-1].hunks.append(hunk)
        elif hunk is not None and line[:1] in (" ", "-", "+"):
            if line[:1] in (" ", "-"):
                hunk.old.append(line[1:])
            if line[:1] in (" ", "+"):
                hunk.new.append(line[1:])
        elif hunk is not None and line == "":
            hunk.old.append("")     # a blank context line whose space was trimmed
            hunk.new.append("")
    for f in files:
        for h in f.hunks:
            h.changed = _changed_span(h)
    return head, files


def _changed_span(h: Hunk) -> Tuple[int, int]:
    """[first, last] indexes in h.old of the lines that differ from h.new (by the common
    prefix and suffix); an insertion anchors on the line before it."""
    lead = 0
    while lead < min(len(h.old), len(h.new)) and h.old[lead] == h.new[lead]:
        lead += 1
    trail = 0
    while trail < min(len(h.old), len(h.new)) - lead and h.old[-1 - trail] == h.new[-1 - trail]:
        trail += 1
    first, last = lead, len(h.old) - 1 - trail
    if last < first:          # nothing removed: anchor on the line before the insertion
        first = last = max(lead - 1, 0)
    return first, last


def _place(lines: List[str], h: Hunk) -> Tuple[Optional[int], str]:
    """(index in `lines` where h.old[0] lands, or None and why)."""
    first, last = h.changed
    core = h.old[first:last + 1]
    if not core:
        return None, "a hunk with no line to anchor on"
    starts = [i for i in range(len(lines) - len(core) + 1) if lines[i:i + len(core)] == core]
    if not starts:
        return None, f"the lines it changes are gone (first: {core[0].strip()!r})"

    def score(i: int) -> int:
        """How many of the hunk's context lines sit around the core at i."""
        n = 0
        for k in range(first):
            j = i - first + k
            n += 0 <= j < len(lines) and lines[j] == h.old[k]
        for k in range(last + 1, len(h.old)):
            j = i + k - first
            n += 0 <= j < len(lines) and lines[j] == h.old[k]
        return n
    scored = sorted(((score(i), i) for i in starts), reverse=True)
    if len(scored) > 1 and scored[0][0] == scored[1][0]:
        return None, (f"the lines it changes appear {len(starts)} times and the context does not "
                      f"tell them apart (first: {core[0].strip()!r})")
    return scored[0][1] - first, ""


def apply_hunks(lines: List[str], hunks: List[Hunk]) -> Tuple[Optional[List[str]], List[str]]:
    """Today's lines with every hunk's change made where its anchor is found (bottom up, so
    earlier places do not move), or None and the problems."""
    placed, problems = [], []
    for h in hunks:
        at, why = _place(lines, h)
        if at is None:
            problems.append(why)
        else:
            placed.append((at, h))
    if problems:
        return None, problems
    out = list(lines)
    for at, h in sorted(placed, key=lambda p: p[0], reverse=True):
        first, last = h.changed
        lo, hi = at + first, at + last + 1
        new_first = first
        new_last = len(h.new) - (len(h.old) - last)
        out[lo:hi] = h.new[new_first:new_last + 1]
    return out, []


def _git(root: Path, *args: str) -> Optional[str]:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def renames(root: Path) -> List[Tuple[str, str]]:
    """(old, new) paths of every rename git knows under root, oldest first: the committed
    ones (log -M) and then the work tree's against HEAD (diff -M: `git mv`, or a staged
    move). [] outside a git checkout."""
    out: List[Tuple[str, str]] = []
    for args in (("log", "--reverse", "--format=", "--name-status", "-M", "--diff-filter=R", "HEAD"),
                 ("diff", "--name-status", "-M", "--diff-filter=R", "HEAD")):
        text = _git(root, *args) or ""
        for line in text.splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and parts[0].startswith("R"):
                out.append((parts[1], parts[2]))
    return out


def renamed_path(path: str, moves: List[Tuple[str, str]]) -> str:
    """Where `path` is now, following its renames in order (path itself when none)."""
    for old, new in moves:
        if old == path:
            path = new
    return path


def tree_files(root: Path) -> List[str]:
    """The tree's files, relative to root: git's tracked and untracked ones (ignored files,
    such as build folders, left out), or every file outside a git checkout; patches left
    out (the catalogue holds every anchor's text)."""
    listed = _git(root, "ls-files", "-co", "--exclude-standard")
    if listed is not None:
        names = [n for n in listed.splitlines() if n]
    else:
        names = [str(p.relative_to(root)) for p in sorted(root.rglob("*")) if p.is_file()]
    return [n for n in names if not n.endswith((".patch", ".diff"))
            and ".git" not in Path(n).parts]


class _Tree:
    """The sources under root, read on first use."""

    def __init__(self, root: Path):
        self.root = root
        self._lines: Dict[str, Optional[List[str]]] = {}
        self._files: Optional[List[str]] = None
        self._moves: Optional[List[Tuple[str, str]]] = None

    def lines(self, path: str) -> Optional[List[str]]:
        if path not in self._lines:
            source = self.root / path
            try:
                self._lines[path] = source.read_text(encoding="utf-8").splitlines() \
                    if source.is_file() else None
            except (UnicodeDecodeError, OSError):
                self._lines[path] = None
        return self._lines[path]

    def files(self) -> List[str]:
        if self._files is None:
            self._files = tree_files(self.root)
        return self._files

    def moves(self) -> List[Tuple[str, str]]:
        if self._moves is None:
            self._moves = renames(self.root)
        return self._moves


def _find_elsewhere(tree: _Tree, h: Hunk, skip: List[str]) -> Tuple[Optional[str], str]:
    """(the one other file whose lines hold the hunk's anchor, or None and why)."""
    first, last = h.changed
    needle = h.old[first]
    found, ambiguous = [], []
    for name in tree.files():
        if name in skip:
            continue
        try:
            text = (tree.root / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if needle not in text:
            continue
        at, why = _place(tree.lines(name) or [], h)
        if at is not None:
            found.append(name)
        elif "appear" in why:
            ambiguous.append(name)
    if len(found) == 1 and not ambiguous:
        return found[0], ""
    if found or ambiguous:
        return None, ("the lines it changes are found in several files, so where it moved is "
                      f"ambiguous: {', '.join(sorted(found + ambiguous))} "
                      f"(first: {needle.strip()!r})")
    return None, f"the lines it changes are gone from every file of the tree (first: {needle.strip()!r})"


def _locate(tree: _Tree, path: str, h: Hunk) -> Tuple[Optional[str], str]:
    """(the file that holds the hunk's anchor, or None and why): the named file, the name git
    says it was renamed to, or the one other file of the tree that holds it."""
    tried = []
    for candidate in (path, None):
        if candidate is None:      # git's renames: asked only for a hunk not where it was
            candidate = renamed_path(path, tree.moves())
            if candidate in tried:
                break
        lines = tree.lines(candidate)
        if lines is None:
            continue
        tried.append(candidate)
        at, why = _place(lines, h)
        if at is not None:
            return candidate, ""
        if "appear" in why:
            return None, why      # several places in the file itself: the context cannot tell
    elsewhere, why = _find_elsewhere(tree, h, tried)
    if elsewhere is None and not tried:
        why = f"no such file, and {why}"
    return elsewhere, why


def anchor(patch: Path, root: Path) -> Anchored:
    """Re-base one patch on the sources under `root`, following its files' renames and code
    moved into another file."""
    text = patch.read_text(encoding="utf-8")
    result = Anchored(patch.stem, None)
    try:
        head, files = split_patch(text)
    except ValueError as exc:
        result.problems.append(f"{patch.name}: {exc}")
        return result
    tree = _Tree(root)
    placed: Dict[str, List[Hunk]] = {}
    for f in files:
        for h in f.hunks:
            where, why = _locate(tree, f.path, h)
            if where is None:
                result.problems.append(f"{patch.name}: {f.path}: {why}")
                continue
            placed.setdefault(where, []).append(h)
            move = f"{f.path} -> {where}"
            if where != f.path and move not in result.renamed:
                result.renamed.append(move)
    diffs = []
    for path, hunks in placed.items():
        lines = tree.lines(path) or []
        changed, problems = apply_hunks(lines, hunks)
        if changed is None:
            result.problems += [f"{patch.name}: {path}: {p}" for p in problems]
            continue
        body = "\n".join(difflib.unified_diff(lines, changed, f"a/{path}", f"b/{path}",
                                              n=3, lineterm=""))
        diffs.append(f"diff --git a/{path} b/{path}\n{body}\n")
    if result.problems:
        return result
    result.text = head + "".join(diffs)
    result.moved = result.text != text
    return result
