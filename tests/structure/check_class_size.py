#!/usr/bin/python3
"""No class in src/ has more than 20 member functions (the known ones over it only shrink).

A class that does everything (the runner once had 45 methods over three files
sharing one mutable struct) is split into objects that each own their state.

The count is a heuristic over the text, not a C++ parser. In every .hpp and .cpp
under src/, with comments and string literals blanked out, each `class NAME` or
`struct NAME` with a body (not `enum class`, not a forward declaration) is read
at its own brace level: a statement there (up to `;`, or a `{...}` block) is a
member function when it has a `(` and the text before its first `(` ends in a
name or an `operator`, holds no `=` and is not a `using`, `friend`,
`static_assert`, `typedef` or a nested type. Constructors and destructors count;
`= delete` and `= default` declarations do not (they add no code). A nested
class is counted on its own; a function-pointer data member would be miscounted
(src/ has none). Each class over the limit prints as
    FILE:LINE: class NAME has N member functions (more than 20): split it into objects that own their state

Five classes outside src/driver were over the limit when the check came
(KNOWN_OVER): each may not grow and leaves the list once at or under the limit.

usage: check_class_size.py [--list]   (--list: every class with its count, largest first)
Exit 0 when no class is over the limit, 1 otherwise.
"""
import os
import re
import sys
from pathlib import Path

ROOT = Path(os.environ.get("FABSCOPE_SOURCE_DIR") or Path(__file__).resolve().parents[2])
SRC = ROOT / "src"
LIMIT = 20
# Classes outside src/driver already over the limit when the check came, with
# their counts then (UcxTransport's raised once, as noted beside it): each may
# shrink, never grow; one at or under the limit must
# leave this list (the check says so), so the list only gets shorter.
KNOWN_OVER = {
    "UcxTransport": 36,  # src/transport/UcxTransport.hpp (33, then 3 for bounding a failed wait's cleanup by the test's deadline)
    "Loader": 25,  # src/scenario/ScenarioLoader.cpp
    "DrillClient": 24,  # src/kinds/fault/FaultDrillClient.cpp
    "VerbsTransport": 24,  # src/transport/VerbsTransport.hpp
    "Communicator": 22,  # src/runtime/Mpi.hpp
}

CLASS = re.compile(r"(?<![\w:])(enum\s+)?(class|struct)\s+(?:\[\[[^\]]*\]\]\s*)?(\w+)(?:\s+final)?\s*(?::[^;{()]*)?\{")
NOT_FUNCTION = re.compile(r"^\s*(using|friend|static_assert|typedef|enum|class|struct|union)\b")
FUNCTION_NAME = re.compile(r"(~?\w+|operator\s*\S+)\s*$")


def code_of(text):
    """The text with comments and string/char literals blanked out, offsets and lines kept."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    text = re.sub(r"/\*.*?\*/", blank, text, flags=re.S)
    text = re.sub(r"//[^\n]*", blank, text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', blank, text)
    return re.sub(r"'(?:\\.|[^'\\\n])'", blank, text)


def is_function(statement):
    """True when a class-level statement (its text up to `;` or its block) declares a member function."""
    head = re.sub(r"\b(public|private|protected)\s*:(?!:)", " ", statement)
    head = re.sub(r"\[\[[^\]]*\]\]", " ", head)
    head = re.sub(r"\btemplate\s*<[^()]*?>", " ", head).strip()
    if "(" not in head or NOT_FUNCTION.match(head):
        return False
    if re.search(r"=\s*(delete|default)\s*$", head):
        return False
    before = head[:head.index("(")]
    if "=" in before.replace("operator=", "").replace("operator==", ""):
        return False
    return bool(FUNCTION_NAME.search(before)) or before.rstrip().endswith("operator")


def count_functions(code, start):
    """Member functions in the class body that opens at `start` (just after its `{`)."""
    count, depth, statement, i = 0, 0, [], start
    while i < len(code):
        ch = code[i]
        if ch == "{":
            if depth == 0:
                head = "".join(statement)
                if is_function(head):
                    count += 1
                statement = [] if not NOT_FUNCTION.match(head.strip()) else statement
            depth += 1
        elif ch == "}":
            if depth == 0:
                return count
            depth -= 1
            if depth == 0 and not statement:
                statement = []
        elif depth == 0:
            if ch == ";":
                if is_function("".join(statement)):
                    count += 1
                statement = []
            else:
                statement.append(ch)
        i += 1
    return count


def classes():
    """[(file, line, name, member functions)] of every class and struct with a body in src/."""
    found = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in (".hpp", ".cpp", ".h"):
            continue
        code = code_of(path.read_text())
        for m in CLASS.finditer(code):
            if m.group(1):  # enum class
                continue
            line = code.count("\n", 0, m.start()) + 1
            found.append((path.relative_to(ROOT), line, m.group(3), count_functions(code, m.end())))
    return found


def main():
    found = classes()
    if "--list" in sys.argv[1:]:
        for where, line, name, n in sorted(found, key=lambda c: -c[3]):
            print(f"{n:4d}  {name}  {where}:{line}")
    over = [c for c in found if c[3] > KNOWN_OVER.get(c[2], LIMIT)]
    for where, line, name, n in over:
        known = f", {KNOWN_OVER[name]} when the check came" if name in KNOWN_OVER else ""
        print(f"{where}:{line}: class {name} has {n} member functions (more than {LIMIT}{known}): "
              "split it into objects that own their state")
    counts = {name: n for _, _, name, n in found}
    for name, n in KNOWN_OVER.items():
        if counts.get(name, 0) <= LIMIT:
            over.append(name)
            print(f"tests/structure/check_class_size.py: {name} now has {counts.get(name, 0)} member functions "
                  f"(at most {LIMIT}): take it off KNOWN_OVER")
    if not found:
        print("src/: no class found (the check has nothing to guard)")
        return 1
    largest = max(found, key=lambda c: c[3])
    print(f"classes: {len(found)}; largest {largest[2]} ({largest[3]} member functions); {len(over)} over {LIMIT}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
