"""Service-level objectives a serving verdict is judged against.

Command-line form (comma-separated key=value, units required on times):

    itl_p99=50ms,ttft_p99=2s,itl_p50=20ms,ttft_p50=800ms,itl_share=10%,ttft_share=10%,cif_p99=2

Criteria-file form (a top-level `slo:` mapping of the same keys), e.g.

    slo:
      itl_p99: 50ms
      ttft_p99: 2s
      itl_share: 10%

The share keys say how much of each latency budget the fabric may take; the fabric's
budget is target x share. cif_p99 is the largest congestion impact factor (congested /
quiet p99 of one operation) a serving class may show under any neighbour condition;
`cif_p99=off` shows the factors without judging them (where the neighbours' load is not
the fabric's, e.g. emulated hosts that share a machine's CPUs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import yaml

from ..criteria import LineLoader, line_of
from ..errors import CriteriaError

DEFAULT_ITL_SHARE = 0.10
DEFAULT_TTFT_SHARE = 0.10
DEFAULT_CIF_P99 = 2.0
TARGET_KEYS = ("itl_p50", "itl_p99", "ttft_p50", "ttft_p99")
SHARE_KEYS = ("itl_share", "ttft_share")
ALL_KEYS = TARGET_KEYS + SHARE_KEYS + ("cif_p99",)
_UNIT_MS = {"us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}
_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(us|µs|ms|s)\s*$")
_SHARE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(%?)\s*$")


class SloError(ValueError):
    """A malformed objective; the message names where and what was expected."""


@dataclass
class Slo:
    """Latency targets (ms, None when not given), the fabric's shares, the CIF limit."""
    targets_ms: Dict[str, float] = field(default_factory=dict)
    itl_share: float = DEFAULT_ITL_SHARE
    ttft_share: float = DEFAULT_TTFT_SHARE
    cif_p99: Optional[float] = DEFAULT_CIF_P99     # None: the congestion rule is off
    source: str = "command line"
    defaulted: List[str] = field(default_factory=lambda: list(SHARE_KEYS) + ["cif_p99"])

    def share(self, budget: str) -> float:
        return self.itl_share if budget == "itl" else self.ttft_share

    def fabric_budget_ms(self, key: str) -> float:
        """The part of target `key` (itl_p99, ...) the fabric may take."""
        return self.targets_ms[key] * self.share(key.split("_")[0])

    def describe(self) -> str:
        parts = [f"{k}={format_ms(v)}" for k, v in self.targets_ms.items()]
        parts += [f"itl_share={100 * self.itl_share:g}%", f"ttft_share={100 * self.ttft_share:g}%",
                  "cif_p99=off" if self.cif_p99 is None else f"cif_p99={self.cif_p99:g}"]
        text = ",".join(parts)
        if self.defaulted:
            text += f" (defaults: {', '.join(self.defaulted)})"
        return text

    def to_json(self) -> dict:
        return {"targets_ms": self.targets_ms, "itl_share": self.itl_share,
                "ttft_share": self.ttft_share, "cif_p99": self.cif_p99, "source": self.source,
                "defaulted": self.defaulted}


def format_ms(ms: float) -> str:
    if ms >= 1000 and ms % 1000 == 0:
        return f"{ms / 1000:g}s"
    if ms < 1:
        return f"{ms * 1000:g}us"
    return f"{ms:g}ms"


def parse_time_ms(text: str, what: str) -> float:
    match = _TIME.match(str(text))
    if not match:
        raise SloError(f"{what}: expected a time with its unit (50ms, 2s, 800us), got {text!r}")
    value = float(match.group(1)) * _UNIT_MS[match.group(2)]
    if value <= 0:
        raise SloError(f"{what}: a latency target must be above zero, got {text!r}")
    return value


def parse_share(text, what: str) -> float:
    match = _SHARE.match(str(text))
    if not match:
        raise SloError(f"{what}: expected a share (10% or 0.1), got {text!r}")
    value = float(match.group(1)) / (100.0 if match.group(2) else 1.0)
    if not 0 < value <= 1:
        raise SloError(f"{what}: a share must be above 0 and at most 100%, got {text!r}")
    return value


def parse_cif(text, what: str) -> Optional[float]:
    if text is False or str(text).strip().lower() == "off":   # YAML reads a bare off as False
        return None
    try:
        value = float(str(text).strip())
    except ValueError:
        raise SloError(f"{what}: expected a number (2 = twice the quiet p99) or off, got {text!r}") \
            from None
    if value < 1:
        raise SloError(f"{what}: a congestion impact factor limit below 1 cannot be met "
                       f"(congested is never faster than quiet by design), got {text!r}")
    return value


def _apply(slo: Slo, key: str, value, what: str) -> None:
    if key in TARGET_KEYS:
        slo.targets_ms[key] = parse_time_ms(value, what)
        return
    if key in SHARE_KEYS:
        setattr(slo, key, parse_share(value, what))
    elif key == "cif_p99":
        slo.cif_p99 = parse_cif(value, what)
    else:
        raise SloError(f"{what}: unknown objective {key!r} (known: {', '.join(ALL_KEYS)})")
    if key in slo.defaulted:
        slo.defaulted.remove(key)


def parse_slo_text(text: str, base: Optional[Slo] = None) -> Slo:
    """`itl_p99=50ms,ttft_p99=2s,...` over `base` (a criteria file's objectives)."""
    slo = base or Slo()
    slo.source = "command line" if base is None else f"{base.source} and the command line"
    for item in filter(None, (part.strip() for part in str(text).split(","))):
        if "=" not in item:
            raise SloError(f"--slo: expected key=value (e.g. itl_p99=50ms), got {item!r}")
        key, value = (s.strip() for s in item.split("=", 1))
        _apply(slo, key, value, f"--slo {key}")
    return slo


def load_slo_file(path: str) -> Slo:
    """The `slo:` section of a criteria file; errors name the file and line."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise CriteriaError(path, 0, f"cannot read criteria file ({exc.strerror})") from None
    loader = LineLoader(text)
    loader.name = path
    try:
        doc = loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise CriteriaError(path, mark.line + 1 if mark else 0,
                            f"not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    finally:
        loader.dispose()
    if not isinstance(doc, dict) or not isinstance(doc.get("slo"), dict):
        raise CriteriaError(path, line_of(doc, "slo", 1) if isinstance(doc, dict) else 1,
                            "expected a top-level 'slo:' mapping (itl_p99: 50ms, ttft_p99: 2s, "
                            "itl_share: 10%, ...)")
    section = doc["slo"]
    slo = Slo(source=path)
    for key, value in section.items():
        try:
            _apply(slo, str(key), value, f"slo.{key}")
        except SloError as exc:
            raise CriteriaError(path, line_of(section, key, 1), str(exc)) from None
    return slo

