"""The Common Parameters of the read API as value objects: a time window plus segment filters.

``Query`` and ``Filter`` are frozen and hashable, so they can be used as cache keys, and ``Query.to_params()``
turns them into the exact query-string values the API expects (contract section 4). The server validates the
values (a bad date or filter comes back as ``ValidationError`` with the server's message); the client only
formats them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import Any

__all__ = ["FILTER_PARAMETERS", "FILTER_TYPES", "Filter", "Query"]

FILTER_TYPES: tuple[str, ...] = (
    "equals",
    "not_equals",
    "contains",
    "not_contains",
    "starts_with",
    "ends_with",
    "regex",
    "not_regex",
    "is_null",
    "is_not_null",
    "greater_than",
    "less_than",
    "greater_than_or_equal",
    "less_than_or_equal",
)
"""Every filter type the contract defines."""

FILTER_PARAMETERS: tuple[str, ...] = (
    "browser",
    "browser_version",
    "operating_system",
    "operating_system_version",
    "device_type",
    "language",
    "country",
    "region",
    "city",
    "dimensions",
    "hostname",
    "pathname",
    "page_title",
    "querystring",
    "referrer",
    "channel",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_term",
    "utm_content",
    "entry_page",
    "exit_page",
    "event_name",
    "user_id",
)
"""Every filter (and metric) parameter the contract defines; ``prop:<key>`` is accepted beyond these."""

FilterValue = str | int | float


@dataclass(frozen=True)
class Filter:
    """One segment condition: ``parameter`` compared by ``type`` with any of ``value`` (ORed; ANDed when negative)."""

    parameter: str
    type: str = "equals"
    value: Sequence[FilterValue] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.parameter, str) or not self.parameter:
            raise ValueError("Filter.parameter must be a non-empty string such as 'channel' or 'prop:plan'")
        if not isinstance(self.type, str) or not self.type:
            raise ValueError("Filter.type must be a non-empty string such as 'equals'")
        values = self.value
        # A lone string is one value, not a sequence of characters.
        if isinstance(values, str | int | float) and not isinstance(values, bool):
            values = (values,)
        items = tuple(values)
        for item in items:
            if isinstance(item, bool) or not isinstance(item, str | int | float):
                raise TypeError(f"Filter values must be strings or numbers, not {type(item).__name__}")
        object.__setattr__(self, "value", items)

    def to_dict(self) -> dict[str, Any]:
        """The filter as the API's JSON object ``{parameter, type, value: [...]}``."""
        return {"parameter": self.parameter, "type": self.type, "value": list(self.value)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Filter:
        """A filter from the API's JSON object (``type`` defaults to ``equals``)."""
        return cls(parameter=data["parameter"], type=data.get("type", "equals"), value=data.get("value", ()))


def _format_date(value: date | str | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return str(value).strip() or None


def _format_instant(value: datetime | str | None) -> str | None:
    """An instant as ISO UTC with ``Z`` (naive datetimes are taken as UTC, the API's convention)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        if moment.microsecond:
            return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, date):
        return f"{value.isoformat()}T00:00:00Z"
    return str(value).strip() or None


def _format_number(value: float | int | str | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, bool):
        raise TypeError("past_minutes values must be numbers")
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    return str(value)


def _as_filter(item: Filter | Mapping[str, Any]) -> Filter:
    if isinstance(item, Filter):
        return item
    if isinstance(item, Mapping):
        return Filter.from_dict(item)
    raise TypeError(f"filters must be Filter objects or dicts, not {type(item).__name__}")


@dataclass(frozen=True)
class Query:
    """The Common Parameters: one time window (dates in ``time_zone``, exact instants, or past minutes) and filters.

    Leave every window field empty for all time. ``filters`` accepts ``Filter`` objects or plain dicts.
    """

    start_date: date | str | None = None
    end_date: date | str | None = None
    time_zone: str = "UTC"
    start_datetime: datetime | str | None = None
    end_datetime: datetime | str | None = None
    past_minutes_start: float | int | str | None = None
    past_minutes_end: float | int | str | None = None
    filters: Sequence[Filter] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if isinstance(self.filters, Filter | Mapping):
            raise TypeError("filters must be a sequence of filters, e.g. [Filter('channel', 'equals', ['Direct'])]")
        object.__setattr__(self, "filters", tuple(_as_filter(item) for item in self.filters))
        if not isinstance(self.time_zone, str) or not self.time_zone.strip():
            object.__setattr__(self, "time_zone", "UTC")

    def to_params(self) -> dict[str, str]:
        """The query-string values: only the parameters that are set, plus ``time_zone`` (it aligns buckets)."""
        candidates = {
            "start_date": _format_date(self.start_date),
            "end_date": _format_date(self.end_date),
            "time_zone": self.time_zone.strip(),
            "start_datetime": _format_instant(self.start_datetime),
            "end_datetime": _format_instant(self.end_datetime),
            "past_minutes_start": _format_number(self.past_minutes_start),
            "past_minutes_end": _format_number(self.past_minutes_end),
        }
        params = {key: value for key, value in candidates.items() if value is not None}
        if self.filters:
            params["filters"] = json.dumps([f.to_dict() for f in self.filters], separators=(",", ":"))
        return params

    def with_filters(self, *filters: Filter | Mapping[str, Any]) -> Query:
        """A copy with ``filters`` added after the existing ones."""
        return replace(self, filters=(*self.filters, *(_as_filter(f) for f in filters)))

    def without_filters(self, parameters: Iterable[str] | None = None) -> Query:
        """A copy without filters on ``parameters`` (without any filter when ``None``)."""
        if parameters is None:
            return replace(self, filters=())
        drop = set(parameters)
        return replace(self, filters=tuple(f for f in self.filters if f.parameter not in drop))
