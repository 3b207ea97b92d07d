#!/usr/bin/env python3
"""Prints the slowest tests of one ./tests/run from its JUnit files (ctest's and pytest's).

    slowest.py [--count N] FILE.xml...

A file that is missing (its stage did not run) is named and skipped; a file that is
not JUnit XML is an error naming it.
"""
import argparse
import sys
import xml.etree.ElementTree as ET


def read_cases(path):
    """(seconds, name, outcome) of every test case in one JUnit file."""
    root = ET.parse(path).getroot()
    cases = []
    for case in root.iter("testcase"):
        name = case.get("name", "?")
        if case.get("classname") and not name.startswith(case.get("classname")):
            name = f"{case.get('classname')}::{name}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        cases.append((float(case.get("time") or 0.0), name, outcome))
    return cases


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=15)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    cases, missing = [], []
    for path in args.files:
        try:
            cases += read_cases(path)
        except FileNotFoundError:
            missing.append(path)
        except ET.ParseError as err:
            print(f"slowest.py: {path}: not JUnit XML ({err})", file=sys.stderr)
            return 2
    cases.sort(reverse=True)
    total = sum(c[0] for c in cases)
    print(f"the {min(args.count, len(cases))} slowest of {len(cases)} tests ({total:.0f} s in all):")
    for seconds, name, outcome in cases[:args.count]:
        print(f"{seconds:8.1f} s  {name}{'' if outcome == 'passed' else '  (' + outcome + ')'}")
    for path in missing:
        print(f"(no {path}: its stage did not run)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
