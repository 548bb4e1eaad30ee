"""Time buckets aligned in the request's zone, and the gap fill of a time series.

The engine groups rows by the wall-clock start of their bucket in ``time_zone``; this module lists every
bucket of the window the same way (so empty buckets get zeros) and turns a wall-clock bucket start into
the ISO UTC instant the API returns. On the repeated hour of a DST change both UTC hours fall in one
local bucket, whose start is the first of the two instants.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from api_backend.errors import InvalidRequestError
from api_backend.query.window import Window, to_local, to_utc
from api_backend.query.zones import constant_offset, window_cover

__all__ = ["BUCKETS", "MAX_BUCKETS", "bucket_floor", "bucket_instants", "bucket_starts", "next_bucket", "parse_bucket"]

BUCKETS = ("minute", "five_minutes", "ten_minutes", "fifteen_minutes", "hour", "day", "week", "month", "year")
_MINUTES = {"minute": 1, "five_minutes": 5, "ten_minutes": 10, "fifteen_minutes": 15, "hour": 60}
MAX_BUCKETS = 10_000
_MAX_OFFSET = timedelta(hours=15)  # larger than any zone's distance from UTC


def parse_bucket(value: str | None, default: str = "hour") -> str:
    """A bucket name (empty means ``default``), else 400."""
    if not value:
        return default
    if value not in BUCKETS:
        raise InvalidRequestError.for_field("bucket", f"unknown bucket {value!r}; use one of {', '.join(BUCKETS)}")
    return value


def bucket_floor(local: datetime, bucket: str) -> datetime:
    """Start of the bucket holding the wall-clock time ``local`` (weeks start on Monday)."""
    if bucket in _MINUTES:
        if bucket == "hour":
            return local.replace(minute=0, second=0, microsecond=0)
        step = _MINUTES[bucket]
        return local.replace(minute=local.minute - local.minute % step, second=0, microsecond=0)
    day = local.replace(hour=0, minute=0, second=0, microsecond=0)
    if bucket == "day":
        return day
    if bucket == "week":
        return day - timedelta(days=day.weekday())
    if bucket == "month":
        return day.replace(day=1)
    return day.replace(month=1, day=1)


def next_bucket(start: datetime, bucket: str) -> datetime:
    """The wall-clock start of the bucket after the one starting at ``start``."""
    if bucket in _MINUTES:
        return start + timedelta(minutes=_MINUTES[bucket])
    if bucket == "day":
        return start + timedelta(days=1)
    if bucket == "week":
        return start + timedelta(days=7)
    if bucket == "month":
        return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    return start.replace(year=start.year + 1)


def bucket_starts(
    window: Window, bucket: str, first: datetime | None = None, last: datetime | None = None
) -> list[datetime]:
    """Every wall-clock bucket start of the window (all time: from ``first`` to ``last`` data bucket)."""
    zone = window.zone
    if window.start is not None and window.end is not None:
        if window.end < window.start or (window.end == window.start and not window.include_end):
            return []
        lo = bucket_floor(to_local(window.start, zone), bucket)
        end_local = to_local(window.end, zone)
        # The end bound is exclusive unless the window includes it (past minutes up to now).
        hi = bucket_floor(end_local if window.include_end else end_local - timedelta(microseconds=1), bucket)
    elif first is not None and last is not None:
        lo, hi = first, last
    else:
        return []
    starts: list[datetime] = []
    current = lo
    # Without an offset change in the window no wall-clock time is skipped: no per-bucket zone round trip.
    check_gaps = bucket in _MINUTES and constant_offset(window) is None
    while current <= hi:
        # A wall-clock start skipped by a DST jump (02:00 on a spring-forward day) is not a bucket.
        if not check_gaps or to_local(to_utc(current, zone), zone) == current:
            starts.append(current)
        if len(starts) > MAX_BUCKETS:
            raise InvalidRequestError.for_field(
                "bucket", f"the window has more than {MAX_BUCKETS} buckets of this size; choose a larger bucket"
            )
        current = next_bucket(current, bucket)
    return starts


def bucket_instants(window: Window, starts: list[datetime]) -> list[datetime]:
    """The naive-UTC instant of each wall-clock bucket start (the first of two on a repeated hour).

    Where the zone's offset is constant this is one subtraction per bucket instead of a zone lookup. A start
    far enough inside the range the offset was checked over (no zone is more than 14 hours from UTC) has its
    instant inside that range too; a week, month or year bucket may start before it and is converted.
    """
    offset, cover = constant_offset(window), window_cover(window)
    if offset is None or cover is None:
        return [to_utc(start, window.zone) for start in starts]
    lo, hi = cover[0] + _MAX_OFFSET, cover[1] - _MAX_OFFSET
    return [start - offset if lo <= start <= hi else to_utc(start, window.zone) for start in starts]
