"""Small helpers for self-contained HTML pages (no external assets)."""

from __future__ import annotations

import html
from typing import Iterable, List, Optional, Sequence

import pandas as pd

STYLE = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#1d2733;
max-width:1400px}
h1{font-size:24px;margin-bottom:4px} h2{font-size:19px;border-bottom:2px solid #dde3ea;
padding-bottom:4px;margin-top:34px} h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;font-size:12.5px;margin:8px 0}
th,td{border:1px solid #d5dce4;padding:3px 7px;text-align:right;vertical-align:top}
th{background:#eef2f6} td.l,th.l{text-align:left}
tr:nth-child(even) td{background:#f8fafc}
.warn{background:#fff4e0;border-left:5px solid #f0a020;padding:8px 12px;margin:10px 0}
.bad{background:#fde8e8 !important;color:#a01010;font-weight:600}
.good{background:#e6f5e9 !important;color:#136c2e}
.muted{color:#6b7785;font-size:12px}
.grid{display:flex;flex-wrap:wrap;gap:14px}
.fig{border:1px solid #e3e8ee;padding:6px;background:#fff}
.fig img{display:block;max-width:100%}
nav a{margin-right:12px;font-size:13px}
.verdict{padding:10px 14px;margin:12px 0;font-size:15px;border-left:6px solid}
.verdict.pass{background:#e6f5e9;border-color:#2b8a3e;color:#136c2e}
.verdict.fail{background:#fde8e8;border-color:#c92a2a;color:#a01010}
.verdict.cannot-tell{background:#fff4e0;border-color:#d9822b;color:#8a4b08}
.verdict ul{margin:6px 0 0 0;font-size:13px}
ul.compact{font-size:12.5px;margin:4px 0}
code{background:#f0f3f6;padding:1px 4px}
"""


def esc(value) -> str:
    return html.escape("" if value is None else str(value))


def page(title: str, body: Iterable[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def section(anchor: str, title: str, parts: Sequence[str], intro: str = "") -> str:
    head = f"<h2 id=\"{esc(anchor)}\">{esc(title)}</h2>"
    if intro:
        head += f"<p class=\"muted\">{esc(intro)}</p>"
    return head + "\n".join(parts)


def nav(entries: Sequence[tuple]) -> str:
    return "<nav>" + "".join(f"<a href=\"#{esc(a)}\">{esc(t)}</a>" for a, t in entries) + "</nav>"


def warning(text: str) -> str:
    return f"<div class=\"warn\">{esc(text)}</div>"


def figure(png_b64: str, caption: str = "") -> str:
    cap = f"<div class=\"muted\">{esc(caption)}</div>" if caption else ""
    return (f"<div class=\"fig\"><img alt=\"{esc(caption)}\" "
            f"src=\"data:image/png;base64,{png_b64}\">{cap}</div>")


def grid(items: List[str]) -> str:
    return "<div class=\"grid\">" + "".join(items) + "</div>"


def table(df: pd.DataFrame, left: Sequence[str] = (), classes: Optional[pd.DataFrame] = None,
          max_rows: int = 500) -> str:
    """DataFrame -> <table>; `classes` is a same-shaped frame of CSS classes per cell."""
    cols = list(df.columns)
    out = ["<table><tr>" + "".join(
        f"<th class=\"{'l' if c in left else ''}\">{esc(c)}</th>" for c in cols) + "</tr>"]
    for i, (_, row) in enumerate(df.iterrows()):
        if i >= max_rows:
            out.append(f"<tr><td class=\"l\" colspan=\"{len(cols)}\">... {len(df) - max_rows} "
                       "more rows not shown</td></tr>")
            break
        cells = []
        for c in cols:
            css = []
            if c in left:
                css.append("l")
            if classes is not None and c in classes.columns:
                extra = classes.iloc[i][c]
                if extra:
                    css.append(str(extra))
            cls = f" class=\"{' '.join(css)}\"" if css else ""
            cells.append(f"<td{cls}>{esc(row[c])}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def key_value_table(pairs: Sequence[tuple]) -> str:
    return table(pd.DataFrame(pairs, columns=["field", "value"]), left=["field", "value"])


MAX_FIGURES_PER_SECTION = 24


def capped_section(anchor, title, figs, intro):
    """A section of figures, the first MAX_FIGURES_PER_SECTION of them shown."""
    note = []
    if len(figs) > MAX_FIGURES_PER_SECTION:
        note = [f"<p class=\"muted\">{len(figs) - MAX_FIGURES_PER_SECTION} more figures not "
                "shown.</p>"]
        figs = figs[:MAX_FIGURES_PER_SECTION]
    return section(anchor, title, [grid(figs)] + note, intro=intro)
