"""JavaScript errors: messages by occurrences, one message's occurrences, and its time series.

Each route answers on both spellings the peer has used (``error-names`` and ``errors/names``, ...).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from api_backend.auth import ServicesDep, SiteReader
from api_backend.errors import InvalidRequestError
from api_backend.formats import iso_utc
from api_backend.query.buckets import bucket_instants, bucket_starts, parse_bucket
from api_backend.query.js_errors import build_error_events_query, build_error_names_query, build_error_series_query
from api_backend.query.paging import parse_page
from api_backend.routes.read_params import ReadQuery

router = APIRouter(tags=["errors"])

PageQuery = Annotated[str | None, Query(description="1-based page")]
MessageQuery = Annotated[str | None, Query(alias="errorMessage", description="the exact error message")]


def _required_message(message: str | None) -> str:
    if not message:
        raise InvalidRequestError.for_field("errorMessage", "errorMessage parameter is required")
    return message


@router.get("/sites/{site_id}/error-names")
@router.get("/sites/{site_id}/errors/names")
def error_names(
    access: SiteReader,
    services: ServicesDep,
    params: ReadQuery,
    page: PageQuery = None,
    limit: Annotated[str | None, Query(description="rows per page 1..100 (default 10)")] = None,
) -> dict[str, Any]:
    """Error messages sorted by occurrences; ``percentage`` = occurrences x 100 / all error occurrences."""
    paging = parse_page(page, limit, 10, 100)
    scope = params.scope(access.site.site_id)
    rows = services.reader.rows(
        build_error_names_query(scope, paging.limit, paging.offset, services.reader.dialect), scope
    )
    data = []
    for row in rows:
        if row["rn"] is None:
            continue
        count, total = int(row["count"]), int(row["occurrences"])
        data.append(
            {
                "value": row["value"],
                "errorName": row["errorName"],
                "count": count,
                "sessionCount": int(row["sessionCount"]),
                "percentage": count * 100 / total if total else 0.0,
            }
        )
    return {"data": data, "totalCount": int(rows[0]["total_count"]) if rows else 0}


@router.get("/sites/{site_id}/error-events")
@router.get("/sites/{site_id}/errors/events")
def error_events(
    access: SiteReader,
    services: ServicesDep,
    params: ReadQuery,
    error_message: MessageQuery = None,
    page: PageQuery = None,
    limit: Annotated[str | None, Query(description="rows per page 1..100 (default 20)")] = None,
) -> dict[str, Any]:
    """The occurrences of one error message, newest first."""
    message = _required_message(error_message)
    paging = parse_page(page, limit, 20, 100)
    scope = params.scope(access.site.site_id)
    query = build_error_events_query(scope, message, paging.limit, paging.offset, services.reader.dialect)
    rows = services.reader.rows(query, scope)
    data = []
    for row in rows:
        if row["rn"] is None:
            continue
        item = {k: v for k, v in row.items() if k not in ("rn", "total_count")}
        item["timestamp"] = iso_utc(row["timestamp"])
        data.append(item)
    return {"data": data, "totalCount": int(rows[0]["total_count"]) if rows else 0}


@router.get("/sites/{site_id}/error-bucketed")
@router.get("/sites/{site_id}/errors/time-series")
def error_series(
    access: SiteReader,
    services: ServicesDep,
    params: ReadQuery,
    error_message: MessageQuery = None,
    bucket: Annotated[str | None, Query(description="minute ... year (default hour)")] = None,
) -> dict[str, Any]:
    """Occurrences of one message per bucket (aligned in time_zone), zero-filled over the window."""
    message = _required_message(error_message)
    size = parse_bucket(bucket)
    scope = params.scope(access.site.site_id)
    starts = bucket_starts(scope.window, size)  # validates the bucket count before querying
    rows = services.reader.rows(build_error_series_query(scope, message, size, services.reader.dialect), scope)
    counts = {r["bucket"]: int(r["error_count"]) for r in rows}
    if scope.window.is_all_time and counts:
        starts = bucket_starts(scope.window, size, min(counts), max(counts))
    return {
        "success": True,
        "data": [
            {"time": iso_utc(instant), "error_count": counts.get(s, 0)}
            for s, instant in zip(starts, bucket_instants(scope.window, starts), strict=True)
        ],
    }
