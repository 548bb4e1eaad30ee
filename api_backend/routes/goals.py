"""Goals: list with conversion metrics, create, replace, delete, a goal's sessions and its breakdown."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query

from api_backend.auth import ServicesDep, SiteMember, SiteReader
from api_backend.domain.goals import goal_json, validate_goal_body
from api_backend.errors import InvalidRequestError, NotFoundError
from api_backend.formats import iso_utc
from api_backend.query.filters import parse_parameter
from api_backend.query.goals import (
    BREAKDOWN_PAGE,
    TABLE_BREAKDOWN_PARAMETERS,
    GoalSpec,
    build_goal_breakdown_query,
    build_goal_breakdown_stored_query,
    build_goal_sessions_query,
    build_goal_sessions_stored_query,
)
from api_backend.query.paging import parse_page
from api_backend.query.sessions import build_goal_session_rows_query, page_spans
from api_backend.routes.read_params import ReadQuery
from api_backend.services import Services
from api_backend.store.models import Goal

router = APIRouter(tags=["goals"])

SORTS = ("goalId", "name", "goalType", "createdAt")
GOAL_EXAMPLE = {"name": "Signed up", "goalType": "path", "config": {"pathPattern": "/welcome"}}
Z95 = 1.959963984540054
# Fewer sessions than this and a breakdown row is flagged ``small_sample`` (api_client.client.SMALL_SAMPLE agrees).
SMALL_SAMPLE = 30


def _spec(goal: Goal) -> GoalSpec:
    return GoalSpec(goal.goal_id, goal.goal_type, goal.config or {})


def _site_specs(services: Services, site_id: int) -> Callable[[], list[GoalSpec]]:
    """Every goal of the site, read when called (the goals whose bits the event store keeps)."""
    return lambda: [_spec(g) for g in services.metadata.all_goals(site_id)]


def _site_goal(services: Services, site_id: int, goal_id: int) -> Goal:
    goal = services.metadata.goal(goal_id)
    if goal is None or goal.site_id != site_id:
        raise NotFoundError("Goal not found.")
    return goal


def wilson_interval(conversions: int, sessions: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (0..1); ``(0, 1)`` without sessions.

    No sessions say nothing about the rate, so the interval is the whole range rather than a certain 0. The SDK
    computes the same interval (``api_client.wilson_interval``) for servers without the breakdown route; it cannot
    import this one, so a test holds the two equal.
    """
    if sessions <= 0:
        return 0.0, 1.0
    rate = conversions / sessions
    denom = 1 + z * z / sessions
    centre = (rate + z * z / (2 * sessions)) / denom
    half = z * math.sqrt(rate * (1 - rate) / sessions + z * z / (4 * sessions * sessions)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@router.get("/sites/{site_id}/goals")
def list_goals(
    access: SiteReader,
    services: ServicesDep,
    params: ReadQuery,
    page: Annotated[str | None, Query(description="1-based page")] = None,
    limit: Annotated[str | None, Query(description="page size 1..100 (default 10)")] = None,
    page_size: Annotated[str | None, Query(description="alias of limit")] = None,
    sort: Annotated[str | None, Query(description="goalId | name | goalType | createdAt")] = None,
    order: Annotated[str | None, Query(description="asc | desc")] = None,
) -> dict[str, Any]:
    """One page of goals with sessions, conversions and conversion rate (0..1) in the window."""
    paging = parse_page(page, page_size or limit, 10, 100, "page_size" if page_size else "limit")
    if sort and sort not in SORTS:
        raise InvalidRequestError.for_field("sort", f"must be one of {', '.join(SORTS)}")
    if order and order not in ("asc", "desc"):
        raise InvalidRequestError.for_field("order", "must be asc or desc")
    scope = params.scope(access.site.site_id)
    site_id = access.site.site_id
    total = services.metadata.count_goals(site_id)
    goals = services.metadata.goals_page(site_id, sort or "createdAt", order != "asc", paging.limit, paging.offset)
    meta = {
        "total": total,
        "page": paging.page,
        "pageSize": paging.limit,
        "totalPages": math.ceil(total / paging.limit),
    }
    if not goals:
        return {"data": [], "meta": meta}
    # Filtered on one session-level parameter (the channel recipe), the reader sums a cached per-value rollup.
    row = services.reader.goals_counts(scope, [_spec(g) for g in goals], _site_specs(services, site_id))
    sessions = int(row["sessions"])
    conversions: dict[int, int] = {g.goal_id: int(row[f"g{i}"]) for i, g in enumerate(goals)}
    return {"data": [goal_json(g, conversions, sessions) for g in goals], "meta": meta}


@router.post("/sites/{site_id}/goals", status_code=201)
def create_goal(
    access: SiteMember, services: ServicesDep, body: Annotated[Any, Body(examples=[GOAL_EXAMPLE])]
) -> dict[str, Any]:
    """Create a goal (members may); 201 ``{success, goalId}``."""
    name, goal_type, config = validate_goal_body(body)
    goal = services.metadata.create_goal(access.site.site_id, name, goal_type, config)
    services.reader.store_goal_bits_soon(access.site.site_id, _site_specs(services, access.site.site_id))
    return {"success": True, "goalId": goal.goal_id}


@router.put("/sites/{site_id}/goals/{goal_id}")
def replace_goal(
    access: SiteMember,
    services: ServicesDep,
    goal_id: int,
    body: Annotated[Any, Body(examples=[GOAL_EXAMPLE])],
) -> dict[str, Any]:
    """Replace the whole goal (name, type and config); an unknown goal is 404 whatever the body."""
    _site_goal(services, access.site.site_id, goal_id)
    name, goal_type, config = validate_goal_body(body)
    services.metadata.replace_goal(goal_id, name, goal_type, config)
    services.reader.store_goal_bits_soon(access.site.site_id, _site_specs(services, access.site.site_id))
    return {"success": True, "goalId": goal_id}


@router.delete("/sites/{site_id}/goals/{goal_id}")
def delete_goal(access: SiteMember, services: ServicesDep, goal_id: int) -> dict[str, bool]:
    """Delete the goal for good."""
    _site_goal(services, access.site.site_id, goal_id)
    services.metadata.delete_goal(goal_id)
    services.reader.store_goal_bits_soon(access.site.site_id, _site_specs(services, access.site.site_id))
    return {"success": True}


def _session_json(row: dict[str, Any]) -> dict[str, Any]:
    start, end = row["session_start"], row["session_end"]
    data = {k: v for k, v in row.items() if k not in ("rn", "total_count")}
    data["session_start"], data["session_end"] = iso_utc(start), iso_utc(end)
    data["session_duration"] = int((end - start).total_seconds())
    for key in ("pageviews", "events", "errors", "outbound", "screen_width", "screen_height"):
        data[key] = int(data[key])
    return data


@router.get("/sites/{site_id}/goals/{goal_id}/sessions")
def goal_sessions(
    access: SiteReader,
    services: ServicesDep,
    params: ReadQuery,
    goal_id: int,
    page: Annotated[str | None, Query(description="1-based page")] = None,
    limit: Annotated[str | None, Query(description="page size 1..100 (default 25)")] = None,
) -> dict[str, Any]:
    """The sessions that completed the goal in the window, newest ``session_end`` first."""
    goal = _site_goal(services, access.site.site_id, goal_id)
    paging = parse_page(page, limit, 25, 100)
    scope = params.scope(access.site.site_id)
    spec, reader = _spec(goal), services.reader
    d = reader.dialect
    # The page, then its sessions described from their events alone: two queries under one count of the window.
    version = reader.window_version(scope)
    rows = reader.goal_rows(
        scope,
        [spec],
        lambda bits: build_goal_sessions_stored_query(scope, spec, bits[0], paging.limit, paging.offset, d),
        build_goal_sessions_query(scope, spec, paging.limit, paging.offset, d),
        _site_specs(services, access.site.site_id),
        version=version,
    )
    total = int(rows[0]["total_count"]) if rows else 0
    listed = [r for r in rows if r["rn"] is not None]
    if not listed:
        return {"data": [], "totalCount": total}
    query = build_goal_session_rows_query(scope, [r["session_id"] for r in listed], page_spans(listed), d)
    described = reader.rows(query, scope, version=version)
    by_id = {r["session_id"]: r for r in described}
    # In the page's order; a session whose events left meanwhile (its site deleted) is left out.
    data = [_session_json(by_id[r["session_id"]]) for r in listed if r["session_id"] in by_id]
    return {"data": data, "totalCount": total}


@router.get("/sites/{site_id}/goals/{goal_id}/breakdown")
def goal_breakdown(
    access: SiteReader,
    services: ServicesDep,
    params: ReadQuery,
    goal_id: int,
    parameter: Annotated[str | None, Query(description="any filter parameter, e.g. channel")] = None,
    page: Annotated[str | None, Query(description="1-based page of values (default 1)")] = None,
    limit: Annotated[
        str | None, Query(description=f"values per page, 1..{BREAKDOWN_PAGE} (default {BREAKDOWN_PAGE})")
    ] = None,
) -> dict[str, Any]:
    """Sessions, conversions, conversion rate and its 95% Wilson interval per value of ``parameter``, paged."""
    goal = _site_goal(services, access.site.site_id, goal_id)
    if not parameter:
        raise InvalidRequestError.for_field("parameter", "is required")
    parameter = parse_parameter(parameter)
    paging = parse_page(page, limit, BREAKDOWN_PAGE, BREAKDOWN_PAGE)
    scope = params.scope(access.site.site_id)
    spec, d = _spec(goal), services.reader.dialect
    rows = services.reader.goal_rows(
        scope,
        [spec],
        # The bits say which sessions converted; a parameter the sessions table holds reads the rest from it.
        (lambda bits: build_goal_breakdown_stored_query(scope, spec, parameter, bits[0], d, paging))
        if parameter in TABLE_BREAKDOWN_PARAMETERS
        else None,
        build_goal_breakdown_query(scope, spec, parameter, d, paging),
        _site_specs(services, access.site.site_id),
    )
    data = []
    for row in rows:
        if row["value"] is None:
            continue
        sessions, conversions = int(row["sessions"]), int(row["conversions"])
        low, high = wilson_interval(conversions, sessions)
        data.append(
            {
                "value": row["value"],
                "sessions": sessions,
                "conversions": conversions,
                "conversion_rate": conversions / sessions if sessions else 0.0,
                "ci_low": low,
                "ci_high": high,
                "small_sample": sessions < SMALL_SAMPLE,
            }
        )
    data.sort(key=lambda r: (-r["conversion_rate"], -r["sessions"], r["value"]))
    first = rows[0] if rows else {"total_sessions": 0, "total_conversions": 0, "total_values": 0}
    return {
        "data": data,
        "totalCount": int(first["total_values"]),
        "meta": {
            "goalId": goal.goal_id,
            "parameter": parameter,
            "total_sessions": int(first["total_sessions"]),
            "total_conversions": int(first["total_conversions"]),
        },
    }
