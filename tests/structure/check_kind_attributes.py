#!/usr/bin/python3
"""Every /tests/NNNN attribute a kind family writes by name is declared in src/output/schema.yaml.

The declaration is `instance_attributes` of the schema: `every`, the `when` groups, and
`kinds:` (one list per kind, printed from each kind's own declaration,
Kind::declaredAttributes, and held to it by tests/unit/test_schema.cpp, so a name a
kind writes and does not declare fails here). A family's code names an attribute as the first string of
`emplace_back("name", value)` or of a brace pair `{"name", value}` whose value is not a
string literal (a pair of two literals is a scenario key's choices, not an attribute);
comments are not code. Each such name must be declared for one of the family's kinds
(the kinds its classes register: `std::string name() const override { return "X"; }`)
or for every instance. The written files are checked against the same declaration by
analysis/tests/test_schema.py (from tests/data/structure); this check also covers what
no CPU run writes (GPU and NCCL paths, optional attributes). Names built at run time
("inflation_mean_" + class) are left to that test. Each undeclared name prints as
    FILE:LINE: attribute "NAME" is not declared for kind(s) K of src/output/schema.yaml

usage: check_kind_attributes.py
Exit 0 when every name is declared, 1 otherwise.
"""
import os
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(os.environ.get("FABSCOPE_SOURCE_DIR") or Path(__file__).resolve().parents[2])
KINDS = ROOT / "src" / "kinds"
SCHEMA = ROOT / "src" / "output" / "schema.yaml"

KIND_NAME = re.compile(r'std::string name\(\) const override \{ return "([a-z0-9]+)"; \}')
NAMED = [re.compile(r'emplace_back\(\s*"([a-z][a-z_0-9]*)"\s*,'),
         re.compile(r'\{\s*"([a-z][a-z_0-9]*)"\s*,(?!\s*")')]
# Pairs of a name and a value that are not attributes: a fault drill's event kinds
# and the placeholders of its fault commands.
NOT_ATTRIBUTES = {"fault": {"down_for", "hang_for", "percent"}}


def code_of(text):
    """The text with comments blanked out, lines kept."""
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)


def declared():
    instance = yaml.safe_load(SCHEMA.read_text())["instance_attributes"]
    common = {a[0] for a in instance["every"]} | {a[0] for g in instance["when"].values() for a in g}
    per_kind = {kind: {a[0] for a in (attrs or [])} for kind, attrs in instance["kinds"].items()}
    return common, per_kind


def problems():
    common, per_kind = declared()
    out, named = [], 0
    families = [f for f in sorted(KINDS.iterdir()) if f.is_dir()]
    for family in families:
        sources = sorted(family.glob("*.cpp")) + sorted(family.glob("*.hpp"))
        kinds = sorted({k for p in sources for k in KIND_NAME.findall(p.read_text())})
        if not kinds:
            out.append(f"{family.relative_to(ROOT)}: registers no kind this check can read")
            continue
        missing = [k for k in kinds if k not in per_kind]
        if missing:
            out.append(f"{family.relative_to(ROOT)}: kind(s) {', '.join(missing)} have no entry under "
                       "instance_attributes: kinds: of src/output/schema.yaml")
        allowed = common | NOT_ATTRIBUTES.get(family.name, set())
        for k in kinds:
            allowed |= per_kind.get(k, set())
        for path in sources:
            for number, line in enumerate(code_of(path.read_text()).splitlines(), 1):
                for pattern in NAMED:
                    for name in pattern.findall(line):
                        named += 1
                        if name not in allowed:
                            out.append(f"{path.relative_to(ROOT)}:{number}: attribute \"{name}\" is not declared "
                                       f"for kind(s) {', '.join(kinds)} of src/output/schema.yaml")
    if named == 0:
        out.append("src/kinds: no attribute named anywhere (the check has nothing to guard)")
    return out, len(families), named


def main():
    out, families, named = problems()
    for line in out:
        print(line)
    print(f"kind attributes: {named} names in {families} families; {len(out)} undeclared")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
