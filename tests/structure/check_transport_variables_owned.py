#!/usr/bin/python3
"""A transport's own environment variables are read by that transport alone.

The verbs transport reads FABSCOPE_VERBS_* (src/transport/VerbsOptions.cpp); a kind
that needs what those settings mean (the fault kind's verbs retry budget) asks the
transport (transport::verbs::verbsOptionsFromEnvironment) rather than parsing them a
second time, where the two parsers could differ in defaults or ranges. Outside
src/transport no source of src/ holds such a variable's bare name as a string literal
(what getenv or a lookup takes).
Each use prints as
    FILE:LINE: reads VARIABLE, which transport/OWNER reads: ask the transport

usage: check_transport_variables_owned.py
Exit 0 when only the transports name their variables, 1 otherwise.
"""
import os
import re
import sys
from pathlib import Path

ROOT = Path(os.environ.get("FABSCOPE_SOURCE_DIR") or Path(__file__).resolve().parents[2])
SRC = ROOT / "src"
# Prefix of a transport's own variables -> the file of the transport that reads them.
OWNED = {"FABSCOPE_VERBS_": "VerbsOptions.cpp"}
# The variable's bare name as a literal (what a lookup takes); a text that names it
# for the reader ("FABSCOPE_VERBS_TIMEOUT=" + value) is not a read.
LITERAL = re.compile(r'"(' + "|".join(OWNED) + r')\w*"')


def main():
    for prefix, owner in OWNED.items():
        if not (SRC / "transport" / owner).is_file():
            print(f"check_transport_variables_owned: src/transport/{owner}, the reader of {prefix}*, is gone: "
                  "update OWNED in this check")
            return 1
    problems = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in (".cpp", ".hpp", ".cu") or (SRC / "transport") in path.parents:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            code = line.split("//", 1)[0]
            for match in LITERAL.finditer(code):
                prefix = match.group(1)
                problems.append(f"{path.relative_to(ROOT)}:{number}: reads {match.group(0)[1:-1]}, which "
                                f"transport/{OWNED[prefix]} reads: ask the transport")
    for p in problems:
        print(p)
    print(f"check_transport_variables_owned: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
