"""An independent validation world for fabscope's verdicts, on SimGrid.

A fabric of components (validation/fabric.py), faults planted in components
(faults.py), flows timed by SimGrid's flow-level network model (simulate.py, its processes
stepped by one SimGrid actor: scheduler.py), written
as the file `fabscope run` writes (resultfile.py). It shares no code with the analysis'
diagnosis or its synthetic generator (fabscope_analysis.diagnosis, .synth): a structure
check (tests/structure/check_validation_independent.py) fails if it imports them. It
reads only the file-format contract (fabscope_analysis.reader's schema declarations).

    python3 -m validation run --hosts 16 --gpus 8 --fault nic-rx-slow:0.5 --seed 7 --out x.h5
    python3 validation/sweep.py --help        (a benchmark, not a suite stage)
    python3 validation/compare_worlds.py --help   (this world against another commit's)

docs/validation-world.md says what it models and what it does not.
"""

import os
import sys

_ANALYSIS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "analysis")
if os.path.isdir(_ANALYSIS) and _ANALYSIS not in sys.path:
    sys.path.insert(0, _ANALYSIS)
