"""Matplotlib figures rendered to base64 PNG for embedding in HTML."""

from __future__ import annotations

import base64
import io
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np


class _Matplotlib:
    """matplotlib (pyplot, ticker) imported on first use, with the Agg backend: the other
    commands import this module through the report and compare pages, and loading
    matplotlib costs most of a second they do not need."""

    def __init__(self, part: str):
        self.part = part

    def __getattr__(self, name: str):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot
        import matplotlib.ticker
        return getattr(getattr(matplotlib, self.part), name)


plt = _Matplotlib("pyplot")
ticker = _Matplotlib("ticker")

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]
QUIET_COLOR = "#1f77b4"


def _to_png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def cdf(series: Sequence[Tuple[str, np.ndarray]], xlabel: str, title: str,
        low_is_bad: bool = False) -> str:
    """Empirical CDF (left) and the bad tail on a log y axis (right).

    For latency the bad tail is 1 - F (slow samples); for bandwidth (low_is_bad) it is F.
    """
    fig, (ax, tail) = plt.subplots(1, 2, figsize=(6.2, 2.8))
    lo, hi = np.inf, 0.0
    for i, (label, values) in enumerate(series):
        v = np.sort(np.asarray(values, dtype=np.float64))
        v = v[np.isfinite(v)]
        if not len(v):
            continue
        lo, hi = min(lo, v[0]), max(hi, v[-1])
        y = np.arange(1, len(v) + 1) / len(v)
        color = PALETTE[i % len(PALETTE)]
        ax.step(v, y, where="post", label=f"{label} (n={len(v)})", color=color)
        if low_is_bad:
            tail.step(v, y, where="post", color=color)
        else:
            tail.step(v, 1.0 - (np.arange(len(v)) / len(v)), where="post", color=color)
    log_x = lo > 0 and hi / lo > 20
    for a in (ax, tail):
        if log_x:
            a.set_xscale("log")
        a.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}"))
        a.xaxis.set_minor_formatter(ticker.NullFormatter())
        a.set_xlabel(xlabel)
        a.grid(True, which="major", alpha=0.3)
    ax.set_ylabel("fraction of samples <= x")
    ax.set_title(title, fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    tail.set_yscale("log")
    tail.yaxis.set_minor_locator(ticker.NullLocator())
    tail.set_ylabel("fraction <= x (slow tail)" if low_is_bad else "fraction > x (tail)")
    tail.set_title("slow tail", fontsize=10)
    fig.tight_layout()
    return _to_png(fig)


def worst_ranks(per_condition: Dict[str, "object"], low_is_bad: bool, limit: int) -> List[int]:
    """The `limit` ranks with the worst p99 in any condition (highest, or lowest where a
    low value is bad), in rank order."""
    worst: Dict[int, float] = {}
    for t in per_condition.values():
        for r, v in zip(t["rank"], t["p99"]):
            v = float(v)
            if np.isnan(v):
                continue
            worst[int(r)] = max(worst.get(int(r), -np.inf), -v if low_is_bad else v)
    return sorted(sorted(worst, key=lambda r: worst[r], reverse=True)[:limit])


# Above this many measuring ranks the per-rank bars show the worst ranks only: a bar
# and a tick label per rank of 1,024 took 40 s to draw and could not be read.
MAX_RANK_BARS = 48


def rank_tails(per_condition: Dict[str, "object"], unit: str, title: str,
               stragglers: Sequence[int], low_is_bad: bool = False) -> str:
    """Grouped bars: p99 per rank, one bar per condition; stragglers hatched. With more
    than MAX_RANK_BARS ranks, the MAX_RANK_BARS worst (by their worst condition's p99:
    the highest, or the lowest where a low value is bad), in rank order, and the title
    says so."""
    conditions = list(per_condition)
    ranks = sorted({int(r) for t in per_condition.values() for r in t["rank"]})
    if len(ranks) > MAX_RANK_BARS:
        shown = worst_ranks(per_condition, low_is_bad, MAX_RANK_BARS)
        title = f"{title}: the {len(shown)} worst of {len(ranks)} ranks"
        ranks = shown
    width = 0.8 / max(len(conditions), 1)
    fig, ax = plt.subplots(figsize=(min(12.0, max(5.0, 0.35 * len(ranks) * len(conditions) + 2)), 3.1))
    x = np.arange(len(ranks))
    for i, cond in enumerate(conditions):
        t = per_condition[cond].set_index("rank")
        vals = [float(t["p99"].get(r, np.nan)) for r in ranks]
        color = QUIET_COLOR if cond == "quiet" else PALETTE[(i + 1) % len(PALETTE)]
        bars = ax.bar(x + i * width - 0.4 + width / 2, vals, width, label=cond, color=color)
        for r, bar in zip(ranks, bars):
            if r in stragglers:
                bar.set_hatch("//")
                bar.set_edgecolor("black")
    ax.set_xticks(x)
    ax.set_xticklabels([str(r) for r in ranks], fontsize=8 if len(ranks) <= 32 else 6)
    ax.set_xlabel("measuring rank (hatched: straggler)")
    ax.set_ylabel(f"p99 ({unit})")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return _to_png(fig)


def heatmap(matrix: np.ndarray, labels: List[str], unit: str, title: str,
            higher_is_better: bool) -> str:
    n = matrix.shape[0]
    size = min(9.0, max(4.0, 0.45 * n + 2.5))
    fig, ax = plt.subplots(figsize=(size + 1.2, size))
    cmap = plt.get_cmap("viridis" if higher_is_better else "viridis_r").copy()
    cmap.set_bad("#dddddd")
    img = ax.imshow(np.ma.masked_invalid(matrix), cmap=cmap, interpolation="nearest")
    fig.colorbar(img, ax=ax, label=unit, fraction=0.046, pad=0.04)
    if n <= 24:
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
        ax.set_xticklabels(labels, rotation=90, fontsize=7)
        ax.set_yticklabels(labels, fontsize=7)
        finite = matrix[np.isfinite(matrix)]
        if n <= 12 and len(finite):
            mid = (np.min(finite) + np.max(finite)) / 2.0
            for i in range(n):
                for j in range(n):
                    if np.isfinite(matrix[i, j]):
                        ax.text(j, i, f"{matrix[i, j]:.3g}", ha="center", va="center",
                                fontsize=6.5,
                                color="white" if (matrix[i, j] < mid) == higher_is_better
                                else "black")
    ax.set_xlabel("peer")
    ax.set_ylabel("measuring rank")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return _to_png(fig)


def sender_bars(senders: List[str], gbps: Sequence[float], title: str, jain: float) -> str:
    fig, ax = plt.subplots(figsize=(max(4.5, 0.5 * len(senders) + 2), 3.0))
    vals = np.asarray(gbps, dtype=np.float64)
    fair = np.nanmean(vals) if len(vals) else np.nan
    colors = [PALETTE[1] if v < 0.8 * fair else PALETTE[0] for v in vals]
    ax.bar(range(len(senders)), vals, color=colors)
    ax.axhline(fair, color="black", linestyle="--", linewidth=1, label="mean (fair share)")
    ax.set_xticks(range(len(senders)))
    ax.set_xticklabels(senders, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("GB/s")
    ax.set_title(f"{title}  Jain index {jain:.3f}", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return _to_png(fig)


def request_timeline(rows: List[Tuple[int, float, float, int]], events: List[Tuple[float, int, str]],
                     title: str) -> str:
    """rows: (rank, start_ms, end_ms, peer) segments; events: (t_ms, rank, kind) markers."""
    ranks = sorted({r for r, *_ in rows} | {r for _, r, _ in events})
    ypos = {r: i for i, r in enumerate(ranks)}
    peers = sorted({p for *_, p in rows})
    fig, ax = plt.subplots(figsize=(9.5, max(2.4, 0.45 * len(ranks) + 1.4)))
    for rank, start, end, peer in rows:
        ax.plot([start, end], [ypos[rank], ypos[rank]], linewidth=6, solid_capstyle="butt",
                color=PALETTE[peers.index(peer) % len(PALETTE)], alpha=0.85)
    _event_markers(ax, events, ypos)
    ax.set_yticks(range(len(ranks)))
    ax.set_yticklabels([f"rank {r}" for r in ranks], fontsize=8)
    ax.set_xlabel("time since test start (ms), colour = peer")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return _to_png(fig)


EVENT_STYLE = {"fault": ("X", "#d62728"), "error": ("x", "#a01010"),
               "deadline": ("v", "#ff7f0e"), "detected": ("o", "#ff7f0e"),
               "rerouted": ("s", "#9467bd"), "recovered": ("^", "#2ca02c"),
               "restored": ("P", "#1f77b4"), "rejoined": ("D", "#17becf"),
               "baseline": ("*", "#2ca02c"), "not_recovered": ("x", "#d62728"),
               "aborted": ("p", "#8c564b"), "abort_stuck": ("x", "#8c564b")}


def _event_markers(ax, events, ypos):
    seen = set()
    for t, rank, kind in events:
        marker, color = EVENT_STYLE.get(kind, ("d", "#555555"))
        ax.scatter([t], [ypos.get(rank, 0)], marker=marker, color=color, s=70, zorder=5,
                   edgecolors="black", linewidths=0.5,
                   label=kind if kind not in seen else None)
        seen.add(kind)
    if seen:
        ax.legend(fontsize=8, loc="upper right")


def fault_timeline(spans: List[Tuple[float, float, str, str]],
                   events: List[Tuple[float, int, str]], unit: str) -> str:
    """spans: (start, end, label, status) per test instance; events: (t, rank, kind)."""
    ranks = sorted({r for _, r, _ in events})
    ypos = {r: i + 1 for i, r in enumerate(ranks)}
    fig, ax = plt.subplots(figsize=(10.5, max(2.6, 0.4 * len(ranks) + 1.8)))
    for start, end, label, status in spans:
        color = "#e6f5e9" if status == "passed" else "#fde8e8"
        ax.axvspan(start, end, color=color, alpha=0.9, zorder=0)
        ax.text((start + end) / 2, 0, label, ha="center", va="center", fontsize=6.5,
                rotation=0, clip_on=True)
    _event_markers(ax, events, ypos)
    ax.set_yticks([0] + [ypos[r] for r in ranks])
    ax.set_yticklabels(["tests"] + [f"rank {r}" for r in ranks], fontsize=8)
    ax.set_ylim(-0.7, len(ranks) + 0.7)
    ax.set_xlabel(f"time since run start ({unit}); shaded: test instances (red = not passed)")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return _to_png(fig)


def bar_compare(labels: List[str], values: Dict[str, List[float]], ylabel: str, title: str,
                log_y: bool = False) -> Optional[str]:
    if not labels:
        return None
    fig, ax = plt.subplots(figsize=(max(5, 0.6 * len(labels) + 2), 3.2))
    n = len(values)
    width = 0.8 / max(n, 1)
    for i, (name, vals) in enumerate(values.items()):
        ax.bar(np.arange(len(labels)) + i * width - 0.4 + width / 2, vals, width, label=name,
               color=PALETTE[i % len(PALETTE)])
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)
    if log_y:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return _to_png(fig)
