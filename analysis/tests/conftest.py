import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS_DIR = os.path.dirname(HERE)
for path in (ANALYSIS_DIR, HERE):
    if path not in sys.path:
        sys.path.insert(0, path)

from synthetic import write_standard_run  # noqa: E402


@pytest.fixture(scope="session")
def files(tmp_path_factory):
    """Synthetic result files shared by all tests (written once per session)."""
    d = tmp_path_factory.mktemp("fabscope")
    paths = {
        "standard": d / "standard.h5",          # slow pair 2<->5, slow rank 3, ...
        "same": d / "same.h5",                  # same fabric, other random seed
        "slower": d / "slower.h5",              # latency 30% worse everywhere
        "clean": d / "clean.h5",                # nothing planted: should be accepted
        "incomplete": d / "incomplete.h5",
        "small": d / "small.h5",                # 4 ranks: topology differs
    }
    write_standard_run(paths["standard"])
    write_standard_run(paths["same"], seed=9)
    write_standard_run(paths["slower"], seed=8, latency_scale=1.3, slow_pair=None,
                       with_hosts=False)
    write_standard_run(paths["clean"], seed=11, slow_pair=None, slow_rank=None,
                       slow_sender=False, with_empty=False, mtu_mismatch=False)
    write_standard_run(paths["incomplete"], complete=False)
    write_standard_run(paths["small"], nranks=4, slow_pair=(0, 3), slow_rank=None)
    return {k: str(v) for k, v in paths.items()}


# Property tests (test_prop_*.py): a fixed, small set of examples in the default suite
# (derandomized: the same draws every run, so a failure reproduces), many more with
# ./tests/run --full (FABSCOPE_FULL_TESTS=1).
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("fabscope", max_examples=25, deadline=None, derandomize=True,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fabscope-full", max_examples=400, deadline=None, derandomize=True,
                          print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("fabscope-full" if os.environ.get("FABSCOPE_FULL_TESTS") == "1" else "fabscope")
