"""``metric``: sessions per value of one parameter (channels, pages, countries, UTM values, ...)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from api_backend.auth import ServicesDep, SiteReader
from api_backend.errors import InvalidRequestError
from api_backend.query.filters import parse_parameter
from api_backend.query.metric import build_metric_events_query, build_metric_query, needs_exact_rerun
from api_backend.query.paging import parse_page
from api_backend.query.scope import Scope
from api_backend.routes.read_params import ReadQuery

router = APIRouter(tags=["analytics"])


@router.get("/sites/{site_id}/metric")
def metric(
    access: SiteReader,
    services: ServicesDep,
    params: ReadQuery,
    parameter: Annotated[str | None, Query(description="any filter parameter, e.g. channel, utm_campaign")] = None,
    page: Annotated[str | None, Query(description="1-based page")] = None,
    limit: Annotated[str | None, Query(description="rows per page 1..1000 (default 100)")] = None,
) -> dict[str, Any]:
    """``{data: {data: [{value, count, percentage, sessions, pageviews?, bounce_rate?}], totalCount}}``.

    Sorted by count desc then value; pageviews and bounce_rate (percent) for session-level parameters.
    """
    if not parameter:
        raise InvalidRequestError.for_field("parameter", "is required")
    parameter = parse_parameter(parameter)
    paging = parse_page(page, limit, 100, 1000)
    scope = params.scope(access.site.site_id)
    if parameter == "event_name":
        # Listing event names: an event_name filter narrows the events counted, not the sessions.
        scope = Scope(scope.site_ids, scope.window, scope.filters, frozenset({"event_name"}))
    dialect = services.reader.dialect
    rows = services.reader.rows(build_metric_query(scope, parameter, paging.limit, paging.offset, dialect), scope)
    if needs_exact_rerun(rows):
        rows = services.reader.rows(
            build_metric_events_query(scope, parameter, paging.limit, paging.offset, dialect), scope
        )
    total_sessions = int(rows[0]["total_sessions"]) if rows else 0
    data = []
    for row in rows:
        if row["count"] is None:
            continue
        sessions = int(row["sessions"])
        item = {
            "value": row["value"],
            "count": int(row["count"]),
            "sessions": sessions,
            "percentage": sessions * 100 / total_sessions if total_sessions else 0.0,
        }
        if row["pageviews"] is not None:
            item["pageviews"] = int(row["pageviews"])
            item["bounce_rate"] = float(row["bounce_rate"])
        data.append(item)
    return {"data": {"data": data, "totalCount": int(rows[0]["total_values"]) if rows else 0}}
