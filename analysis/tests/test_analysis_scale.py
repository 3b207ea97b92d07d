"""What keeps report and compare fast at 1,024 ranks and more must not
change what they say: the per-rank bars show the worst ranks, and the laid-out resampler
draws what the hierarchical block bootstrap draws."""
import numpy as np
import pandas as pd

from fabscope_analysis import plots
from fabscope_analysis.resampling import Laid, Unit, block_length


def test_the_worst_ranks_are_shown_in_rank_order():
    quiet = pd.DataFrame({"rank": range(100), "p99": np.arange(100, dtype=float)})
    loaded = pd.DataFrame({"rank": [3, 7], "p99": [1e6, np.nan]})
    shown = plots.worst_ranks({"quiet": quiet, "loaded": loaded}, low_is_bad=False, limit=5)
    assert shown == [3, 96, 97, 98, 99]
    # bandwidth: the lowest are the worst
    assert plots.worst_ranks({"quiet": quiet}, low_is_bad=True, limit=3) == [0, 1, 2]


def test_the_laid_out_resample_keeps_ranks_and_blocks():
    rng = np.random.default_rng(1)
    # one replicate, 3 ranks of different lengths; a rank's values encode (rank, iteration)
    lengths = [27, 27, 8]
    units = [[Unit(np.asarray([r * 1000 + i for i in range(n)], dtype=float), np.full(n, 8.0))
              for r, n in enumerate(lengths)]]
    laid = Laid([units])  # one run of one repeat
    all_steps = []
    for _ in range(50):
        times, nbytes = laid.draw(rng)
        assert len(times) == len(nbytes) > 0
        ranks = times // 1000
        # every drawn rank contributes its own length of samples, in blocks of consecutive iterations
        counts = {int(r): int((ranks == r).sum()) for r in np.unique(ranks)}
        for r, c in counts.items():
            assert c % lengths[r] == 0, (r, c)
        iters = times % 1000
        long_rank = (ranks[:-1] < 2) & (np.diff(ranks) == 0)  # ranks 0 and 1: 27 samples each
        all_steps.append(np.diff(iters)[long_rank])
    steps = np.concatenate(all_steps)
    block = block_length(27, single_run=True)
    # within a rank's stretch, a jump (a new block) comes at most every `block` samples
    assert block == 4 and len(steps) > 100 and (steps == 1).mean() >= 1 - 1.0 / block - 0.05, (steps == 1).mean()
