"""Summaries of repeated measurements: median, percentiles and spread."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["percentile", "summarize"]


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation between closest ranks; NaN without samples."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    if len(ordered) == 1:
        return float(ordered[0])
    rank = (len(ordered) - 1) * q / 100
    lo = math.floor(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return float(ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo))


def summarize(samples: Sequence[float]) -> dict[str, float]:
    """``{n, median, p95, p99, min, max}`` of ``samples`` (seconds in, seconds out)."""
    return {
        "n": len(samples),
        "median": percentile(samples, 50),
        "p95": percentile(samples, 95),
        "p99": percentile(samples, 99),
        "min": float(min(samples)) if samples else math.nan,
        "max": float(max(samples)) if samples else math.nan,
    }
