"""Noise models: what a healthy fabric's times look like, by named, seeded parts.

A model is a set of figures (NoiseModel's fields); a named model is a preset, and
presets combine with '+' (later ones set only the figures they name) and take
`key=value` overrides: ``realistic+bimodal``, ``realistic,hiccup_rate=1e-3``.
Spreads are lognormal sigmas of a time factor (0.05 is about 5 %).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Dict

from .topology import SynthError


@dataclass(frozen=True)
class NoiseModel:
    # persistent per component (drawn from the fabric seed): the same fabric in every run
    host_spread: float = 0.0      # per host (latency) / per NIC side (bandwidth)
    pair_spread: float = 0.0      # per ordered pair of ranks
    # per run (drawn from the run seed)
    scale: float = 1.0            # every time x this: a uniformly slower (or faster) fabric
    run_spread: float = 0.0       # one factor for the whole run
    bimodal_step: float = 0.0     # a run is at level 1 or 1 + step, even odds
    # per sample
    sample_spread: float = 0.02
    hiccup_rate: float = 0.0      # samples with a 0.5-2 ms pause added (~1e-4 realistic)
    hiccup_ms: tuple = (0.5, 2.0)
    # under load (the parallel pass of a pattern, a congested condition): ECMP collisions
    ecmp_share: float = 0.0       # share of cross-leaf pairs whose flows collide
    ecmp_factor: float = 1.0      # their time factor under load
    # a congested condition (neighbour traffic of the congestors): cross-leaf pairs share the
    # uplinks with it (this time factor), pairs inside a leaf its square root
    background_factor: float = 1.3
    # shared CPUs: the kernel scheduler's slices in the times, and /validity says so
    slice_rate: float = 0.0       # samples that wait one slice
    slice_ms: tuple = (1.0, 4.0)

    def describe(self) -> Dict[str, object]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


PRESETS: Dict[str, Dict[str, object]] = {
    # sample jitter only: every pair alike
    "ideal": {},
    # what a healthy production fabric looks like (host, pair and sample spread, rare
    # millisecond hiccups, ECMP collisions that slow 20 % of cross-leaf pairs 2x under load)
    "realistic": dict(host_spread=0.05, pair_spread=0.05, run_spread=0.03, sample_spread=0.05,
                      hiccup_rate=1e-4, ecmp_share=0.2, ecmp_factor=2.0),
    # realistic without the load-only collisions (a non-blocking fabric, adaptive routing)
    "realistic-quiet": dict(host_spread=0.05, pair_spread=0.05, run_spread=0.03,
                            sample_spread=0.05, hiccup_rate=1e-4),
    # adds: the run lands on one of two levels 10 % apart (placement, clocks, firmware state)
    "bimodal": dict(bimodal_step=0.10),
    # adds: ranks share CPUs, 1 % of samples wait a 1-4 ms scheduler slice
    "shared-cpu": dict(slice_rate=0.01),
    # adds: rare hiccups ten times as often
    "hiccups": dict(hiccup_rate=1e-3),
}


def _value(key: str, text: str, spec: str):
    kinds = {f.name: f.type for f in fields(NoiseModel)}
    if key not in kinds:
        raise SynthError(f"noise {spec!r}: unknown figure {key!r} (expected one of "
                         f"{', '.join(sorted(kinds))})")
    try:
        if "tuple" in str(kinds[key]):
            low, high = (float(x) for x in text.split("-", 1))
            return (low, high)
        return float(text)
    except ValueError:
        what = "LOW-HIGH in ms" if "tuple" in str(kinds[key]) else "a number"
        raise SynthError(f"noise {spec!r}: {key}={text!r} is not {what}") from None


def noise_model(spec: str) -> NoiseModel:
    """'realistic', 'realistic+bimodal', 'ideal,sample_spread=0.1' -> NoiseModel."""
    model = NoiseModel()
    parts = [p.strip() for p in spec.replace(",", "+").split("+") if p.strip()]
    if not parts:
        raise SynthError(f"noise {spec!r}: expected a model name ({', '.join(PRESETS)})")
    for part in parts:
        if "=" in part:
            key, text = (x.strip() for x in part.split("=", 1))
            model = replace(model, **{key: _value(key, text, spec)})
        elif part in PRESETS:
            model = replace(model, **PRESETS[part])
        else:
            raise SynthError(f"noise {spec!r}: unknown model {part!r} (expected one of "
                             f"{', '.join(PRESETS)}, or FIGURE=VALUE)")
    return model
