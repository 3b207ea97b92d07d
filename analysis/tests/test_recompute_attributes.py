"""Every derived figure of a real result file, recomputed from its raw rows.

The reader is tests/support/recompute.py: plain h5py and numpy, nothing from
fabscope_analysis, the definitions of docs/file-format.md. For every instance of every
kind in the files FABSCOPE_REAL_H5 names (./tests/run: smoke.h5, serving.h5 and kinds.h5,
the last from analysis/tests/data/recompute-kinds.yaml), the headline statistics, the
`/tests/NNNN/summary` rows, the pair matrix, the counters' deltas, the batch figure, the
impact factors and each kind's own figures are recomputed from `/tests/NNNN/samples` (and
the kind's own tables) and must agree to float64 rounding: a factor of two, a unit or a
ceil/floor slip fails, where a `> 0` check would pass.

Every kind src/output/schema.yaml declares must be recomputed there from one of the
files, or be listed in NOT_RUN_HERE with the reason (the default suite only; with
./tests/run --full every kind): a new kind fails test_every_kind_is_recomputed until it is.
"""

import os
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import recompute  # noqa: E402  (tests/support: the MPI tests' checkers use it too)

SCHEMA = os.path.join(ROOT, "src", "output", "schema.yaml")
REAL = [p for p in os.environ.get("FABSCOPE_REAL_H5", "").split(os.pathsep) if p]

pytestmark = pytest.mark.skipif(
    not REAL, reason="FABSCOPE_REAL_H5 is not set (./tests/run sets it to result files "
                     "written by the real fabscope binary)")

# Kinds the default suite's 4-rank CPU runs cannot produce, and why. They are recomputed
# all the same when a file has them (./tests/run --full adds a fault drill's file).
NOT_RUN_HERE = {
    "fault": "a fault drill kills a rank on purpose: it needs launch/fabscope-mpirun, a UCX "
             "build and most of a minute (./tests/run --full runs it)",
}
if os.environ.get("FABSCOPE_FULL_TESTS") == "1":
    NOT_RUN_HERE = {}


def _all_instances():
    out = []
    for path in REAL:
        out.extend(recompute._instances(path))
    return out


def _schema_kinds():
    with open(SCHEMA) as f:
        return set(yaml.safe_load(f)["instance_attributes"]["kinds"])


def _params():
    return [pytest.param(p, id=os.path.basename(p)) for p in REAL] or [None]


@pytest.mark.parametrize("path", _params())
def test_derived_figures_recompute_from_samples(path):
    checked, found = recompute.mismatches(path)
    assert checked, f"{path}: no instance passed or failed: nothing recomputed"
    assert not found, f"{len(found)} figure(s) differ from the raw rows:\n" + "\n".join(found)


def test_every_kind_is_recomputed():
    kinds = _schema_kinds()
    unknown = set(NOT_RUN_HERE) - kinds
    assert not unknown, f"NOT_RUN_HERE names kinds the schema lacks: {sorted(unknown)}"
    no_check = kinds - set(recompute.KIND_CHECKS) - set(NOT_RUN_HERE)
    assert not no_check, (f"kinds of src/output/schema.yaml without a recomputation in "
                          f"tests/support/recompute.py: {sorted(no_check)}: add one to "
                          f"KIND_CHECKS, or to NOT_RUN_HERE with why")
    seen = {a["kind"] for _, a, _ in _all_instances() if a["status"] in ("passed", "failed")}
    missing = kinds - seen - set(NOT_RUN_HERE)
    assert not missing, (f"no measured instance of {sorted(missing)} in FABSCOPE_REAL_H5 "
                         f"({', '.join(map(os.path.basename, REAL))}): tests/run's real runs must "
                         f"cover every kind (analysis/tests/data/recompute-kinds.yaml), or the "
                         f"kind goes to NOT_RUN_HERE with the reason")
