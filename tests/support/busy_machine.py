#!/usr/bin/env python3
"""Says whether a run measured a busy machine, from the run's own result file.

    busy_machine.py FILE.h5...

Exit 0 and one line naming the finding when any file records the validity finding
busy_host (other work held the CPUs the run needed, measured at its start); exit 1
when none does; exit 2 when a file cannot be read. A timing check that fails on a
run whose own file says the machine was busy cannot tell whether the product is at
fault: the test then skips with that line as its reason instead of failing falsely.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from fabscope_analysis.reader import open_result  # noqa: E402


def busy_finding(path):
    with open_result(path, warn_incomplete=False) as result:
        rows = result.validity()
    for row in rows.to_dict("records"):
        if row["what"] == "busy_host":
            return f"busy_host on {row['host']}: {row['value']} (limit {row['limit']}): {row['effect']}"
    return None


def main(paths):
    for path in paths:
        try:
            finding = busy_finding(path)
        except Exception as err:  # a missing or unreadable file: the caller's own check says more
            print(f"busy_machine.py: {path}: cannot read its validity table ({err})", file=sys.stderr)
            return 2
        if finding:
            print(f"{os.path.basename(path)}: {finding}")
            return 0
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) if len(sys.argv) > 1 else 2)
