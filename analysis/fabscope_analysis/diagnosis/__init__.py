"""diagnose: is the fabric fit, and if not, which component to fix (docs/analysis.md)."""
