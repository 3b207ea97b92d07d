#!/usr/bin/python3
"""The planner and the runner reach a kind family's plan only through PlanPart's hooks.

A family's plan part is a class deriving PlanPart in its folder (the pair patterns':
src/kinds/p2p/PairPlan.hpp). Outside the kinds (src/driver, src/cli) no code names
one of its data members (`.rounds`, `->retestWorst` ...) or the class itself, and
src/kinds/Kind.hpp includes nothing of a family; comments and string literals are not
code. Each use prints as
    FILE:LINE: names MEMBER of CLASS (src/kinds/FAMILY/FILE): reach it through a PlanPart hook

usage: check_plan_part.py
Exit 0 when nothing outside the families names a part's field, 1 otherwise.
"""
import os
import re
import sys
from pathlib import Path

ROOT = Path(os.environ.get("FABSCOPE_SOURCE_DIR") or Path(__file__).resolve().parents[2])
KINDS = ROOT / "src" / "kinds"
OUTSIDE = [ROOT / "src" / "driver", ROOT / "src" / "cli"]

PART_CLASS = re.compile(r"class\s+(\w+)\s+(?:final\s+)?:\s*public\s+PlanPart\s*\{")
# A data member: "  Type name;" or "  Type name = value;" (no parenthesis: not a function).
MEMBER = re.compile(r"^\s+(?!return\b|using\b)[\w:<>,\s*&]+?\s(\w+)\s*(?:=[^();]*)?;\s*(?://.*)?$")


def code_of(text):
    """The text with comments and string literals blanked out, lines kept."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def parts():
    """[(class, file, [data members])] of every PlanPart in a kind family."""
    found = []
    for path in sorted(KINDS.glob("*/*.hpp")):
        text = path.read_text()
        for m in PART_CLASS.finditer(text):
            body = code_of(text[m.end():])
            depth, end = 1, 0
            for end, ch in enumerate(body):
                depth += {"{": 1, "}": -1}.get(ch, 0)
                if depth == 0:
                    break
            members = []
            nested = 0
            for line in body[:end].splitlines():
                if nested == 0:
                    hit = MEMBER.match(line)
                    if hit:
                        members.append(hit.group(1))
                nested += line.count("{") - line.count("}")
            found.append((m.group(1), path.relative_to(ROOT), members))
    return found


def problems():
    found = parts()
    out = []
    if not found:
        out.append("src/kinds: no class deriving PlanPart found (the check has nothing to guard)")
    for cls, where, members in found:
        if not members:
            out.append(f"{where}: {cls} has no data member this check can read")
    for folder in OUTSIDE:
        for path in sorted(folder.rglob("*")):
            if path.suffix not in (".cpp", ".hpp"):
                continue
            lines = code_of(path.read_text()).splitlines()
            for number, line in enumerate(lines, 1):
                for cls, where, members in found:
                    names = [cls, "pairPlanOf"] if cls == "PairPlan" else [cls]
                    for name in names:
                        if re.search(rf"\b{name}\b", line):
                            out.append(f"{path.relative_to(ROOT)}:{number}: names {name} ({where}): "
                                       "reach it through a PlanPart hook")
                    for member in members:
                        if re.search(rf"(\.|->)\s*{member}\b(?!\s*\()", line):
                            out.append(f"{path.relative_to(ROOT)}:{number}: names {member} of {cls} ({where}): "
                                       "reach it through a PlanPart hook")
    kind = KINDS / "Kind.hpp"
    for number, line in enumerate(kind.read_text().splitlines(), 1):
        hit = re.match(r'\s*#\s*include\s*"kinds/(\w+)/', line)
        if hit:
            out.append(f"src/kinds/Kind.hpp:{number}: includes the kind family {hit.group(1)}: the interface of "
                       "every kind depends on no family")
    return out, found


def main():
    out, found = problems()
    for line in out:
        print(line)
    fields = sum(len(m) for _, _, m in found)
    print(f"plan parts: {len(found)} ({fields} fields); {len(out)} uses outside their family")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
