"""Organization usage: events per day and type over all of an organization's sites."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import APIRouter

from api_backend.auth import OrgMember, ServicesDep
from api_backend.query.scope import Scope
from api_backend.query.usage import USAGE_COLUMNS, build_usage_query
from api_backend.query.window import Window, local_midnight_utc, to_local
from api_backend.routes.read_params import WindowQuery

router = APIRouter(tags=["organizations"])

DEFAULT_DAYS = 30


@router.get("/org-event-count/{organization_id}")
def org_event_count(access: OrgMember, services: ServicesDep, params: WindowQuery) -> dict[str, Any]:
    """One row per day of the window in time_zone (default: today and the 29 days before), zero-filled."""
    window = params.window()
    zone = window.zone
    if window.is_all_time:
        now = datetime.now(UTC).replace(tzinfo=None)
        today = to_local(now, zone).date()
        start = local_midnight_utc(today - timedelta(days=DEFAULT_DAYS - 1), zone)
        window = Window(start, now, window.time_zone, include_end=True, mode="date")
    site_ids = tuple(s.site_id for s in services.metadata.sites_of(access.organization.id))
    rows = []
    if site_ids and (window.end is None or window.start is None or window.start <= window.end):
        query = build_usage_query(site_ids, window, services.reader.dialect)
        rows = services.reader.rows(query, Scope(site_ids, window))
    by_day = {r["day"]: r for r in rows}
    # A parsed window has both bounds or neither, and "neither" became the default days above.
    assert window.start is not None and window.end is not None
    first = to_local(window.start, zone).date()
    last_instant = window.end if window.include_end else window.end - timedelta(microseconds=1)
    last = to_local(last_instant, zone).date()
    data = []
    day = first
    while day <= last:
        row = by_day.get(day)
        item: dict[str, Any] = {"event_date": day.isoformat()}
        for column in USAGE_COLUMNS:
            item[column] = int(row[column]) if row else 0
        item["event_count"] = int(row["event_count"]) if row else 0
        data.append(item)
        day += timedelta(days=1)
    return {"data": data}
