"""Persistence over a serial retest: a pair is slow alone only if it stays slow.

A serial retest measures a suspect pair alone for a few dozen iterations, about a
millisecond. Another tenant's burst or a PFC pause on a link the pair crosses can last
as long (0.2-1.5 ms in the validation world): the pair then reads slow alone for as long
as the burst lasts, and the retest would confirm a fault that is not there. A fault
persists: every block of consecutive iterations (resampling.block_length) of the
retest is slow. So a retested pair's level is its fastest block's median; the control
pairs keep their plain median (the reference the bar is built on), which makes the
comparison conservative for a suspect pair, never kinder to it.

A burst can also outlast a whole visit (20 latency iterations are 0.36 ms in the
validation world). The runner therefore visits each retested pair twice, apart
(sample flag bit 15): each visit gets its own fastest block, and the retest rule
(retest.judge_retest_visits) wants both slow.
"""

from __future__ import annotations

import pandas as pd

from ..resampling import block_length


def retest_levels(frame: pd.DataFrame) -> pd.Series:
    """(rank, peer, control, visit) -> log level: the fastest block's median for a
    retested pair's visit, the median for a control pair. `frame`: rank, peer, iter, v
    (log time), control, and visit (1 or 2; all 1 when absent: a file from before the
    second visit)."""
    if "visit" not in frame.columns:
        frame = frame.assign(visit=1)
    keys = ["rank", "peer", "control", "visit"]
    out = frame.groupby(keys)["v"].median()
    suspects = frame[~frame["control"].astype(bool)]
    if suspects.empty:
        return out
    for key, rows in suspects.groupby(keys):
        ordered = rows.sort_values("iter")["v"].to_numpy()
        length = block_length(len(ordered))
        blocks = [ordered[i:i + length] for i in range(0, len(ordered), length)]
        # a last block shorter than half a block says less than the others: folded into
        # the one before (popped first: an index on the left is taken after the right side)
        if len(blocks) > 1 and len(blocks[-1]) * 2 < length:
            last = blocks.pop()
            blocks[-1] = list(blocks[-1]) + list(last)
        out.loc[key] = min(float(pd.Series(b).median()) for b in blocks)
    return out
