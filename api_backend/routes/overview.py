"""Overview: sessions, pageviews, users, pages per session, bounce rate and session duration, and over time."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Query

from api_backend.auth import ServicesDep, SiteReader
from api_backend.errors import InvalidRequestError
from api_backend.formats import iso_utc
from api_backend.query.buckets import bucket_instants, bucket_starts, parse_bucket
from api_backend.query.overview import build_overview_query, build_overview_series_query, previous_window
from api_backend.query.scope import Scope
from api_backend.routes.read_params import ReadQuery
from api_backend.services import Services

router = APIRouter(tags=["analytics"])

AVERAGES = ("pages_per_session", "bounce_rate", "session_duration")


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


CompareQuery = Annotated[
    str | None, Query(description="previous: also return the same-length period just before the window")
]


def _wants_previous(compare: str | None) -> bool:
    if compare in (None, ""):
        return False
    if compare != "previous":
        raise InvalidRequestError.for_field("compare", "must be previous")
    return True


def _headline(services: Services, scope: Scope) -> dict[str, Any]:
    row = services.reader.rows(build_overview_query(scope, services.reader.dialect), scope)[0]
    data: dict[str, Any] = {k: int(row[k]) for k in ("sessions", "pageviews", "users")}
    data.update({k: _float_or_none(row[k]) for k in AVERAGES})
    return data


@router.get("/sites/{site_id}/overview")
def overview(
    access: SiteReader, services: ServicesDep, params: ReadQuery, compare: CompareQuery = None
) -> dict[str, Any]:
    """The window's headline numbers; averages are ``null`` when there is no session.

    ``users`` is the unique visitors: distinct people (identified id, else visitor id). With
    ``compare=previous`` the body also holds ``previous``: the same numbers over the period just before.
    """
    scope = params.scope(access.site.site_id)
    body: dict[str, Any] = {"data": _headline(services, scope)}
    if _wants_previous(compare):
        body["previous"] = _headline(services, replace(scope, window=previous_window(scope.window)))
    return body


def _series(services: Services, scope: Scope, size: str) -> list[dict[str, Any]]:
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
    return data


@router.get("/sites/{site_id}/overview/time-series")
@router.get("/sites/{site_id}/overview-bucketed")
def overview_series(
    access: SiteReader,
    services: ServicesDep,
    params: ReadQuery,
    bucket: Annotated[str | None, Query(description="minute ... year (default hour)")] = None,
    compare: CompareQuery = None,
) -> dict[str, Any]:
    """Per bucket: sessions (by start) with their averages, pageviews and users (by event time), zero-filled.

    ``users`` is the bucket's unique visitors. With ``compare=previous`` the body also holds ``previous``: the
    series of the same-length period just before the window, bucketed alike (item ``i`` of both lists is the
    same position in its period, so a chart can draw ``previous`` against the current times).
    """
    size = parse_bucket(bucket)
    scope = params.scope(access.site.site_id)
    body: dict[str, Any] = {"data": _series(services, scope, size)}
    if _wants_previous(compare):
        body["previous"] = _series(services, replace(scope, window=previous_window(scope.window)), size)
    return body
