"""The time window of a read request: the common parameters turned into naive-UTC bounds.

Precedence (as the peer): a date range, then a datetime range, then past minutes, else all time.
Every malformed value is reported (all messages joined by "; ") as one 400 before anything runs.

- ``start_date``/``end_date`` (``YYYY-MM-DD``, in ``time_zone``, default UTC): from local midnight of the
  start date to local midnight after the end date (exclusive); when the end date is today in the zone,
  up to now: to the end of the current minute (exclusive). So the requests of one minute ask one question,
  which the result cache answers until an event enters the window.
  Days around a DST change are 23 or 25 hours long.
- ``start_datetime``/``end_datetime``: instants, start inclusive, end exclusive; no offset means UTC.
- ``past_minutes_start``/``past_minutes_end``: ``now - start < t <= now - end`` (second precision).

Bounds keep every request's work finite: dates and instants lie in 1970..2100 and a window spans at most
``MAX_WINDOW_DAYS`` days (past minutes included); anything else is a 400 naming the limit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from api_backend.errors import FieldError, InvalidRequestError

__all__ = ["MAX_WINDOW_DAYS", "Window", "local_midnight_utc", "parse_time_zone", "parse_window", "to_local", "to_utc"]

# The longest window a read may ask for: ten years and a few leap days. Per-day answers (organization usage)
# stay well under a megabyte and no scan is asked to cover more than the store could hold.
MAX_WINDOW_DAYS = 3660
MAX_PAST_MINUTES = MAX_WINDOW_DAYS * 24 * 60
_MINUTE = timedelta(minutes=1)
FIRST_YEAR, LAST_YEAR = 1970, 2100

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}(:?\d{2})?)?$", re.ASCII)
_NUMBER = re.compile(r"^\d{1,12}(\.\d{1,6})?$", re.ASCII)


@dataclass(frozen=True)
class Window:
    """Naive-UTC bounds (``None`` = unbounded) and the zone buckets and days are aligned in."""

    start: datetime | None
    end: datetime | None
    time_zone: str = "UTC"
    include_start: bool = True
    include_end: bool = False
    mode: str = "all"  # "date" | "datetime" | "past_minutes" | "all"

    @property
    def zone(self) -> ZoneInfo:
        """The zone days and buckets are aligned in."""
        return ZoneInfo(self.time_zone)

    @property
    def is_all_time(self) -> bool:
        """No bound at all (no time parameter was sent)."""
        return self.start is None and self.end is None


def to_utc(local: datetime, zone: ZoneInfo) -> datetime:
    """Naive UTC instant of a naive wall-clock time in ``zone`` (the first of two on a repeated hour)."""
    return local.replace(tzinfo=zone, fold=0).astimezone(UTC).replace(tzinfo=None)


def to_local(instant: datetime, zone: ZoneInfo) -> datetime:
    """Naive wall-clock time in ``zone`` of a naive-UTC instant."""
    return instant.replace(tzinfo=UTC).astimezone(zone).replace(tzinfo=None)


def local_midnight_utc(day: date, zone: ZoneInfo) -> datetime:
    """The UTC instant at which ``day`` starts in ``zone``."""
    return to_utc(datetime(day.year, day.month, day.day), zone)


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    # Canonical IANA names only: "localtime" and the posix/ and right/ copies mean nothing to a database.
    return frozenset(available_timezones() - {"localtime"})


def parse_time_zone(value: str | None) -> str:
    """The IANA zone name, or 400 ``Invalid time_zone``; empty means UTC."""
    if not value:
        return "UTC"
    if value not in _zone_names():
        raise InvalidRequestError("Invalid time_zone", [FieldError("time_zone", "Invalid time_zone")])
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, IsADirectoryError):
        raise InvalidRequestError("Invalid time_zone", [FieldError("time_zone", "Invalid time_zone")]) from None
    return value


def _date(name: str, value: str, errors: list[FieldError]) -> date | None:
    if not _DATE.match(value):
        errors.append(FieldError(name, f"Invalid {name} format. Use YYYY-MM-DD"))
        return None
    try:
        parsed = date.fromisoformat(value)
    except ValueError:
        errors.append(FieldError(name, f"Invalid {name} value"))
        return None
    if not FIRST_YEAR <= parsed.year <= LAST_YEAR:
        errors.append(FieldError(name, f"{name} must lie within {FIRST_YEAR}..{LAST_YEAR}"))
        return None
    return parsed


def _datetime(name: str, value: str, errors: list[FieldError]) -> datetime | None:
    if not _DATETIME.match(value):
        errors.append(FieldError(name, f"Invalid {name} format. Use YYYY-MM-DDThh:mm:ss with optional Z or +hh:mm"))
        return None
    text = value.replace(" ", "T", 1)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    elif re.search(r"[+-]\d{2}$", text):
        text += ":00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        errors.append(FieldError(name, f"Invalid {name} value"))
        return None
    # Checked before the shift to UTC, which overflows at the ends of the calendar.
    if not FIRST_YEAR <= parsed.year <= LAST_YEAR:
        errors.append(FieldError(name, f"{name} must lie within {FIRST_YEAR}..{LAST_YEAR}"))
        return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed


def _too_long(names: str) -> str:
    return f"the window from {names} is longer than {MAX_WINDOW_DAYS} days; choose a shorter range"


def parse_window(params: Mapping[str, str | None], now: datetime | None = None) -> Window:
    """Resolve the common time parameters (empty strings count as absent) into a ``Window``."""
    raw = {k: (v if v not in ("", None) else None) for k, v in params.items()}
    now = now or datetime.now(UTC).replace(tzinfo=None)
    errors: list[FieldError] = []

    zone_name = "UTC"
    try:
        zone_name = parse_time_zone(raw.get("time_zone"))
    except InvalidRequestError as exc:
        errors.extend(exc.details)
    zone = ZoneInfo(zone_name)

    start_date = _date("start_date", text, errors) if (text := raw.get("start_date")) else None
    end_date = _date("end_date", text, errors) if (text := raw.get("end_date")) else None
    if bool(raw.get("start_date")) != bool(raw.get("end_date")):
        errors.append(FieldError("start_date", "start_date and end_date must be provided together"))

    start_dt = _datetime("start_datetime", text, errors) if (text := raw.get("start_datetime")) else None
    end_dt = _datetime("end_datetime", text, errors) if (text := raw.get("end_datetime")) else None
    if bool(raw.get("start_datetime")) != bool(raw.get("end_datetime")):
        errors.append(FieldError("start_datetime", "start_datetime and end_datetime must be provided together"))
    elif start_dt is not None and end_dt is not None and start_dt >= end_dt:
        errors.append(FieldError("start_datetime", "start_datetime must be before end_datetime"))

    minutes: dict[str, float] = {}
    bad_minutes = False
    for name in ("past_minutes_start", "past_minutes_end"):
        value = raw.get(name)
        if value is None:
            continue
        if not _NUMBER.match(value.strip()):
            bad_minutes = True
        else:
            minutes[name] = float(value)
    if bad_minutes:
        errors.append(FieldError("past_minutes_start", "past_minutes values must be non-negative numbers"))
    elif any(m > MAX_PAST_MINUTES for m in minutes.values()):
        errors.append(
            FieldError(
                "past_minutes_start", f"past_minutes values must be at most {MAX_PAST_MINUTES} ({MAX_WINDOW_DAYS} days)"
            )
        )
    if bool(raw.get("past_minutes_start")) != bool(raw.get("past_minutes_end")):
        errors.append(
            FieldError("past_minutes_start", "past_minutes_start and past_minutes_end must be provided together")
        )
    elif len(minutes) == 2 and minutes["past_minutes_start"] <= minutes["past_minutes_end"]:
        errors.append(
            FieldError(
                "past_minutes_start",
                "past_minutes_start must be greater than past_minutes_end (start = older, end = newer)",
            )
        )

    if start_date is not None and end_date is not None and (end_date - start_date).days >= MAX_WINDOW_DAYS:
        errors.append(FieldError("start_date", _too_long("start_date and end_date")))
    elif start_dt is not None and end_dt is not None and end_dt - start_dt > timedelta(days=MAX_WINDOW_DAYS):
        errors.append(FieldError("start_datetime", _too_long("start_datetime and end_datetime")))

    if errors:
        raise InvalidRequestError("; ".join(e.message for e in errors), errors)

    if start_date is not None and end_date is not None:
        start = local_midnight_utc(start_date, zone)
        if end_date == to_local(now, zone).date():
            return Window(start, now.replace(second=0, microsecond=0) + _MINUTE, zone_name, mode="date")
        return Window(start, local_midnight_utc(end_date + timedelta(days=1), zone), zone_name, mode="date")
    if start_dt is not None and end_dt is not None:
        return Window(start_dt, end_dt, zone_name, mode="datetime")
    if len(minutes) == 2:
        base = now.replace(microsecond=0)
        return Window(
            base - timedelta(minutes=minutes["past_minutes_start"]),
            base - timedelta(minutes=minutes["past_minutes_end"]),
            zone_name,
            include_start=False,
            include_end=True,
            mode="past_minutes",
        )
    return Window(None, None, zone_name)
