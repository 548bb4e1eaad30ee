"""Overview: sessions, pageviews, users, pages per session, bounce rate and session duration, and over time."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from api_backend.auth import ServicesDep, SiteReader
from api_backend.formats import iso_utc
from api_backend.query.buckets import bucket_instants, bucket_starts, parse_bucket
from api_backend.query.overview import build_overview_query, build_overview_series_query
from api_backend.routes.read_params import ReadQuery

router = APIRouter(tags=["analytics"])

AVERAGES = ("pages_per_session", "bounce_rate", "session_duration")


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


@router.get("/sites/{site_id}/overview")
def overview(access: SiteReader, services: ServicesDep, params: ReadQuery) -> dict[str, Any]:
    """The window's headline numbers; averages are ``null`` when there is no session."""
    scope = params.scope(access.site.site_id)
    row = services.reader.rows(build_overview_query(scope, services.reader.dialect), scope)[0]
    data: dict[str, Any] = {k: int(row[k]) for k in ("sessions", "pageviews", "users")}
    data.update({k: _float_or_none(row[k]) for k in AVERAGES})
    return {"data": data}


@router.get("/sites/{site_id}/overview/time-series")
@router.get("/sites/{site_id}/overview-bucketed")
def overview_series(
    access: SiteReader,
    services: ServicesDep,
    params: ReadQuery,
    bucket: Annotated[str | None, Query(description="minute ... year (default hour)")] = None,
) -> dict[str, Any]:
    """Per bucket: sessions (by start) with their averages, pageviews and users (by event time), zero-filled."""
    size = parse_bucket(bucket)
    scope = params.scope(access.site.site_id)
    starts = bucket_starts(scope.window, size)
    query = build_overview_series_query(scope, size, services.reader.dialect)
    rows = {r["bucket"]: r for r in services.reader.rows(query, scope)}
    if scope.window.is_all_time and rows:
        starts = bucket_starts(scope.window, size, min(rows), max(rows))
    data = []
    for start, instant in zip(starts, bucket_instants(scope.window, starts), strict=True):
        row = rows.get(start)
        item: dict[str, Any] = {"time": iso_utc(instant)}
        for key in ("sessions", "pageviews", "users"):
            item[key] = int(row[key]) if row else 0
        for key in AVERAGES:
            item[key] = _float_or_none(row[key]) if row else None
        data.append(item)
    return {"data": data}
