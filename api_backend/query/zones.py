"""Wall-clock time in the request's zone without a per-row time-zone library call.

A zone's UTC offset is constant between transitions, so over a bounded window the local time of a
naive-UTC timestamp is ``timestamp + offset`` with the offset picked by a short ``CASE`` over the few
transition instants inside the window (computed here with ``zoneinfo``). That is plain arithmetic for the
engine, roughly ten times cheaper than converting every row through a zone database. Unbounded windows
fall back to the engine's zone conversion.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from api_backend.query.dialect import Dialect
from api_backend.query.sql import Params
from api_backend.query.window import Window

__all__ = [
    "constant_offset",
    "local_time",
    "offset_changes",
    "quarter_hours_align",
    "utc_offset_ms",
    "window_cover",
    "window_offsets",
]

_STEP = timedelta(hours=6)


def _offset_ms(zone: ZoneInfo, instant: datetime) -> int:
    offset = instant.replace(tzinfo=UTC).astimezone(zone).utcoffset() or timedelta(0)
    return int(offset.total_seconds() * 1000)


def _transition(zone: ZoneInfo, lo: datetime, hi: datetime) -> datetime:
    # The offset differs at lo and hi: find the first second carrying hi's offset.
    target = _offset_ms(zone, hi)
    while hi - lo > timedelta(seconds=1):
        mid = lo + (hi - lo) / 2
        mid = mid.replace(microsecond=0)
        if _offset_ms(zone, mid) == target:
            hi = mid
        else:
            lo = mid
    return hi


@lru_cache(maxsize=256)
def offset_changes(zone_name: str, start: datetime, end: datetime) -> tuple[int, tuple[tuple[datetime, int], ...]]:
    """The offset (ms) at ``start`` and each ``(instant, new offset ms)`` change up to ``end`` (naive UTC)."""
    zone = ZoneInfo(zone_name)
    first = _offset_ms(zone, start)
    changes: list[tuple[datetime, int]] = []
    current, offset = start, first
    while current < end:
        following = min(current + _STEP, end)
        new = _offset_ms(zone, following)
        if new != offset:
            at = _transition(zone, current, following)
            changes.append((at, new))
            offset = new
        current = following
    return first, tuple(changes)


def window_cover(window: Window) -> tuple[datetime, datetime] | None:
    """The naive-UTC range (whole days around a bounded window) whose offsets are looked up; ``None`` if unbounded."""
    if window.start is None or window.end is None:
        return None
    # Whole days, so repeated requests share the cached transitions.
    lo = min(window.start, window.end).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
    hi = max(window.start, window.end).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=2)
    return lo, hi


def window_offsets(window: Window) -> tuple[int, tuple[tuple[datetime, int], ...]] | None:
    """``offset_changes`` over ``window_cover``; ``None`` for an unbounded window."""
    cover = window_cover(window)
    return None if cover is None else offset_changes(window.time_zone, *cover)


def constant_offset(window: Window) -> timedelta | None:
    """The zone's UTC offset when it is the same all over the (bounded) window, else ``None``."""
    offsets = window_offsets(window)
    if offsets is None or offsets[1]:
        return None
    return timedelta(milliseconds=offsets[0])


def quarter_hours_align(window: Window) -> bool:
    """Whether the zone's local quarter-hours start on UTC ones all over the (bounded) window: every offset a whole
    number of quarter-hours, and every change of offset at the start of a UTC quarter-hour."""
    offsets = window_offsets(window)
    if offsets is None:
        return False
    first, changes = offsets
    quarter_ms = 15 * 60 * 1000
    if any(offset % quarter_ms for offset in (first, *(offset for _, offset in changes))):
        return False
    return all(at.minute % 15 == 0 and at.second == 0 and at.microsecond == 0 for at, _ in changes)


def local_time(expr: str, window: Window, d: Dialect, p: Params) -> str:
    """SQL for the wall-clock time in ``window.time_zone`` of the naive-UTC timestamp ``expr``."""
    offset = utc_offset_ms(expr, window, p)
    if offset is None:
        return d.local_time(expr, p.add(window.time_zone))
    if offset == "0":
        # UTC (or a zone at UTC+0 all window long): the stored time is the wall-clock time; shifting every row by
        # nothing would still cost about half of a daily count's time.
        return expr
    return d.shift_ms(expr, offset)


def utc_offset_ms(expr: str, window: Window, p: Params) -> str | None:
    """SQL for the zone's UTC offset in milliseconds at the naive-UTC timestamp ``expr``: ``0``, a bound value,
    or a ``CASE`` over the window's transitions; ``None`` for an unbounded window (no transitions looked up)."""
    offsets = window_offsets(window)
    if offsets is None:
        return None
    first, changes = offsets
    if not changes:
        return "0" if first == 0 else p.add(first)
    branches = []
    previous = first
    for instant, offset in changes:
        branches.append(f"WHEN {expr} < {p.add(instant)} THEN {p.add(previous)}")
        previous = offset
    return f"CASE {' '.join(branches)} ELSE {p.add(previous)} END"
