"""A catalogue break is anchored on the code text it changes, not on line numbers.

Each hunk of a tests/mutations/*.patch names the lines it removes (and the context
between them). When code moves, those lines are found again in today's file, the hunk
is placed there (the context around it breaking ties), and the patch is written anew
from the file itself, so a refactor that only moves code re-bases the whole catalogue
with one command (`tests/mutate --rebase`). A break whose lines are gone, or that
several places match equally, is reported with the file and the first line looked
for: that anchor is broken and the break needs a person.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

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


def anchor(patch: Path, root: Path) -> Anchored:
    """Re-base one patch on the sources under `root`."""
    text = patch.read_text(encoding="utf-8")
    result = Anchored(patch.stem, None)
    try:
        head, files = split_patch(text)
    except ValueError as exc:
        result.problems.append(f"{patch.name}: {exc}")
        return result
    diffs = []
    for f in files:
        source = root / f.path
        if not source.is_file():
            result.problems.append(f"{patch.name}: {f.path}: no such file")
            continue
        lines = source.read_text(encoding="utf-8").splitlines()
        changed, problems = apply_hunks(lines, f.hunks)
        if changed is None:
            result.problems += [f"{patch.name}: {f.path}: {p}" for p in problems]
            continue
        body = "\n".join(difflib.unified_diff(lines, changed, f"a/{f.path}", f"b/{f.path}",
                                              n=3, lineterm=""))
        diffs.append(f"diff --git a/{f.path} b/{f.path}\n{body}\n")
    if result.problems:
        return result
    result.text = head + "".join(diffs)
    result.moved = result.text != text
    return result
