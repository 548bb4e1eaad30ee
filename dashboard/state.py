"""The view a person is looking at, read from and written to the URL query string.

Dates, time zone, filters and page parameters live in the URL so that copying it shares the exact view.
``parse_view(search)`` never raises: a bad value falls back to its default, so a hand-edited URL still opens a page.

Query keys: ``site``, ``start_date``, ``end_date`` (``YYYY-MM-DD``, inclusive), ``time_zone`` (IANA),
``filters`` (the API's JSON array of ``{parameter, type, value: [...]}``), ``goal``, ``error``, ``bucket``, ``page``,
``org``, ``sort``, ``order``, ``tab`` (a part of a page, e.g. of the shared view).
"""

from __future__ import annotations

import functools
import json
import zoneinfo
from dataclasses import asdict, dataclass, field, replace
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeGuard
from urllib.parse import parse_qsl, urlencode
from zoneinfo import ZoneInfo

from api_client.query import FILTER_PARAMETERS, FILTER_TYPES
from dashboard.countries import find_country

if TYPE_CHECKING:
    from api_client import Query
    from dashboard.components.common import RangeEnds

__all__ = [
    "DEFAULT_DAYS",
    "FILTER_PARAMETERS",
    "FILTER_TYPES",
    "PRESETS",
    "ViewState",
    "is_valid_zone",
    "parse_view",
    "preset_range",
    "shift_range",
    "today_in",
]

DEFAULT_DAYS = 30
# Preset id -> number of days ending today (inclusive); "today" is one day.
PRESETS = {"today": 1, "7d": 7, "30d": 30, "90d": 90}
_BUCKETS = ("minute", "five_minutes", "ten_minutes", "fifteen_minutes", "hour", "day", "week", "month", "year")
_INT_KEYS = ("site", "goal", "page")


@functools.cache
def _zone_names() -> frozenset[str]:
    # The names the API accepts: canonical IANA zones ("localtime" and the posix/ and right/ copies are not).
    return frozenset(zoneinfo.available_timezones() - {"localtime"})


def is_valid_zone(name: object) -> TypeGuard[str]:
    """True when ``name`` is an IANA time zone the API accepts."""
    return isinstance(name, str) and name in _zone_names()


def today_in(time_zone: str, now: datetime | None = None) -> date:
    """Today's date in ``time_zone`` (UTC when the zone is unknown)."""
    zone = ZoneInfo(time_zone) if is_valid_zone(time_zone) else ZoneInfo("UTC")
    moment = now or datetime.now(tz=ZoneInfo("UTC"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=ZoneInfo("UTC"))
    return moment.astimezone(zone).date()


def preset_range(preset: str, today: date) -> tuple[date, date]:
    """The inclusive date range of a preset (``today``, ``7d``, ``30d``, ``90d``) ending ``today``."""
    days = PRESETS.get(preset, DEFAULT_DAYS)
    return today - timedelta(days=days - 1), today


def shift_range(start: date, end: date, steps: int) -> tuple[date, date]:
    """Move an inclusive range by ``steps`` whole lengths of itself (negative = back in time)."""
    length = (end - start).days + 1
    delta = timedelta(days=length * steps)
    return start + delta, end + delta


def _parse_date(raw: str | None) -> date | None:
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        return None


def _parse_int(raw: str | None) -> int | None:
    if raw is None or not raw.isascii() or not raw.strip().lstrip("-").isdigit():
        return None
    return int(raw)


def _clean_filter(raw: Any) -> dict[str, Any] | None:
    """A filter as the API wants it, or None when ``raw`` is not one."""
    if not isinstance(raw, dict):
        return None
    parameter, kind, value = raw.get("parameter"), raw.get("type"), raw.get("value", [])
    if not isinstance(parameter, str) or not (parameter in FILTER_PARAMETERS or parameter.startswith("prop:")):
        return None
    if kind not in FILTER_TYPES:
        return None
    if not isinstance(value, list):
        value = [value]
    # The API takes strings and numbers; booleans travel as the words it compares them with.
    values = [
        ("true" if v else "false") if isinstance(v, bool) else v if isinstance(v, (str, int, float)) else str(v)
        for v in value
        if v is not None
    ]
    if not values and kind not in ("is_null", "is_not_null"):
        return None
    if parameter == "country" and kind in ("equals", "not_equals"):
        # An address written by hand may name the country ("Germany"); the API compares codes.
        values = [(find_country(v).code or v) if isinstance(v, str) and v else v for v in values]
    return {"parameter": parameter, "type": kind, "value": values}


def _parse_filters(raw: str | None) -> tuple[dict[str, Any], ...]:
    if not raw:
        return ()
    try:
        decoded = json.loads(raw)
    except ValueError:
        return ()
    if not isinstance(decoded, list):
        return ()
    return tuple(f for f in (_clean_filter(item) for item in decoded) if f is not None)


@dataclass(frozen=True)
class ViewState:
    """What a page shows: site, inclusive date range in a zone, filters, and page parameters."""

    site_id: int | None = None
    start_date: date | None = None
    end_date: date | None = None
    time_zone: str = "UTC"
    filters: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    goal: int | None = None
    error: str | None = None
    bucket: str | None = None
    page: int = 1
    org: str | None = None
    sort: str | None = None
    order: str | None = None
    tab: str | None = None

    @property
    def days(self) -> int:
        """Length of the range in days."""
        if self.start_date is None or self.end_date is None:
            return 0
        return (self.end_date - self.start_date).days + 1

    @property
    def ends_now(self) -> bool:
        """Whether the range runs up to now (it ends today, or has no end): its last bucket is still filling."""
        return self.end_date is None or self.end_date >= today_in(self.time_zone)

    @property
    def range_ends(self) -> RangeEnds:
        """The range's first and last days and whether it runs up to now: what tells a chart its partial buckets."""
        from dashboard.components.common import RangeEnds

        return RangeEnds(self.start_date, self.end_date, self.ends_now)

    def query(self) -> Query:
        """The ``api_client.Query`` for this view (window, zone and filters)."""
        from api_client import Filter, Query

        return Query(
            start_date=self.start_date,
            end_date=self.end_date,
            time_zone=self.time_zone,
            filters=[Filter(parameter=f["parameter"], type=f["type"], value=list(f["value"])) for f in self.filters],
        )

    def replace(self, **changes: Any) -> ViewState:
        """A copy with ``changes`` applied (filters may be given as a list)."""
        if "filters" in changes:
            changes["filters"] = tuple(f for f in (_clean_filter(x) for x in changes["filters"] or ()) if f)
        return replace(self, **changes)

    def params(self) -> dict[str, str]:
        """The query-string pairs of this view, omitting what is unset or default."""
        out: dict[str, str] = {}
        if self.site_id is not None:
            out["site"] = str(self.site_id)
        if self.start_date is not None and self.end_date is not None:
            out["start_date"] = self.start_date.isoformat()
            out["end_date"] = self.end_date.isoformat()
        if self.time_zone:
            out["time_zone"] = self.time_zone
        if self.filters:
            out["filters"] = json.dumps(list(self.filters), separators=(",", ":"))
        for key in ("goal", "error", "bucket", "org", "sort", "order", "tab"):
            value = getattr(self, key)
            if value is not None and value != "":
                out[key] = str(value)
        if self.page != 1:
            out["page"] = str(self.page)
        return out

    def to_search(self, **changes: Any) -> str:
        """The ``?...`` query string of this view with ``changes`` applied (``"?"``-prefixed, or ``""``)."""
        view = self.replace(**changes) if changes else self
        encoded = urlencode(view.params())
        return f"?{encoded}" if encoded else ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form for a ``dcc.Store`` (read back with ``ViewState.from_dict``)."""
        data = asdict(self)
        data["start_date"] = self.start_date.isoformat() if self.start_date else None
        data["end_date"] = self.end_date.isoformat() if self.end_date else None
        data["filters"] = [dict(f) for f in self.filters]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ViewState:
        """Inverse of ``to_dict``; tolerant of missing keys."""
        data = dict(data or {})
        return cls(
            site_id=data.get("site_id"),
            start_date=_parse_date(data.get("start_date")),
            end_date=_parse_date(data.get("end_date")),
            time_zone=data.get("time_zone") or "UTC",
            filters=tuple(f for f in (_clean_filter(x) for x in data.get("filters") or ()) if f),
            goal=data.get("goal"),
            error=data.get("error"),
            bucket=data.get("bucket"),
            page=data.get("page") or 1,
            org=data.get("org"),
            sort=data.get("sort"),
            order=data.get("order"),
            tab=data.get("tab"),
        )


def parse_view(
    search: str | dict[str, Any] | None,
    *,
    default_zone: str | None = None,
    now: datetime | None = None,
) -> ViewState:
    """Read a ``ViewState`` from a query string (``"?a=b"``) or from Dash's ``layout(**query)`` keywords.

    Missing or invalid dates become the last ``DEFAULT_DAYS`` days ending today in the view's zone; a missing or unknown
    zone becomes ``default_zone`` (the browser's zone) or UTC.
    """
    if isinstance(search, dict):
        raw = {k: v for k, v in search.items() if isinstance(v, str)}
    else:
        raw = dict(parse_qsl((search or "").lstrip("?"), keep_blank_values=False))
    zone = raw.get("time_zone")
    if not is_valid_zone(zone):
        zone = default_zone if is_valid_zone(default_zone) else "UTC"
    start, end = _parse_date(raw.get("start_date")), _parse_date(raw.get("end_date"))
    if start is None or end is None or end < start:
        start, end = preset_range("30d", today_in(zone, now))
    page = _parse_int(raw.get("page"))
    bucket = raw.get("bucket")
    order = raw.get("order")
    tab = raw.get("tab")
    return ViewState(
        site_id=_parse_int(raw.get("site")),
        start_date=start,
        end_date=end,
        time_zone=zone,
        filters=_parse_filters(raw.get("filters")),
        goal=_parse_int(raw.get("goal")),
        error=raw.get("error") or None,
        bucket=bucket if bucket in _BUCKETS else None,
        page=page if page and page >= 1 else 1,
        org=raw.get("org") or None,
        sort=raw.get("sort") or None,
        order=order if order in ("asc", "desc") else None,
        tab=tab if tab and tab.replace("_", "").isalnum() and len(tab) <= 32 else None,
    )
