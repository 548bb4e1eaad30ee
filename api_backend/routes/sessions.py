"""Sessions: every session of the window (paged), one session with its timeline, and an identified user."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from api_backend.auth import ServicesDep, SiteReader
from api_backend.errors import NotFoundError
from api_backend.formats import iso_utc
from api_backend.query.goals import GoalSpec
from api_backend.query.paging import parse_page
from api_backend.query.scope import Scope
from api_backend.query.sessions import (
    build_session_page_query,
    build_session_rows_query,
    build_timeline_query,
    build_user_query,
    page_spans,
)
from api_backend.query.window import Window
from api_backend.routes.read_params import ReadQuery, WindowQuery
from api_backend.services import Services

router = APIRouter(tags=["sessions"])

TIMELINE_LIMIT = 1000
_INTEGERS = ("pageviews", "custom_events", "errors", "outbound", "events", "screen_width", "screen_height")
PageQuery = Annotated[str | None, Query(description="1-based page")]
LimitQuery = Annotated[str | None, Query(description="page size 1..100 (default 25)")]
SessionPath = Annotated[str, Path(description="the session id", max_length=128)]
UserPath = Annotated[str, Path(description="the identified user id (the tracker's user_id)", max_length=255)]


def _goal_specs(services: Services, site_id: int) -> list[GoalSpec]:
    return [GoalSpec(g.goal_id, g.goal_type, g.config or {}) for g in services.metadata.all_goals(site_id)]


def session_json(row: dict[str, Any]) -> dict[str, Any]:
    """A described session row as the Session object (api-spec fields plus counts, ``converted`` and
    ``identified``: whether its ``user_id`` is an identified id, one ``users/:userId`` answers for)."""
    start, end = row["session_start"], row["session_end"]
    data = dict(row)
    data["session_start"], data["session_end"] = iso_utc(start), iso_utc(end)
    data["session_duration"] = int((end - start).total_seconds())
    for key in _INTEGERS:
        data[key] = int(data[key])
    data["converted"] = bool(data["converted"])
    data["identified"] = bool(data["identified"])
    return data


def _described_page(
    services: Services, scope: Scope, page_rows: list[dict[str, Any]], goals: list[GoalSpec], version: int
) -> tuple[list[dict[str, Any]], int]:
    """The sessions of a page query's rows, described, in the page's order; and the total count. ``version`` is the
    result cache's count of the window taken before the page's query (``EventReader.window_version``)."""
    total = int(page_rows[0]["total_count"]) if page_rows else 0
    listed = [r for r in page_rows if r["session_id"] is not None]
    if not listed:
        return [], total
    ids = [r["session_id"] for r in listed]
    query = build_session_rows_query(scope, ids, goals, services.reader.dialect, spans=page_spans(listed))
    rows = services.reader.rows(query, scope, version=version)
    return [session_json(r) for r in rows], total


@router.get("/sites/{site_id}/sessions")
def list_sessions(
    access: SiteReader, services: ServicesDep, params: ReadQuery, page: PageQuery = None, limit: LimitQuery = None
) -> dict[str, Any]:
    """Every session with an event in the window (filters apply), newest ``session_end`` first.

    ``{data: [Session], totalCount}``; a Session also holds ``events`` (its in-window events), per-type counts,
    ``converted`` (whether one of its events completes any of the site's goals) and ``identified`` (whether its
    ``user_id`` is an identified id, which has a profile, rather than a visitor id).
    """
    paging = parse_page(page, limit, 25, 100)
    scope = params.scope(access.site.site_id)
    query = build_session_page_query(scope, paging.limit, paging.offset, services.reader.dialect)
    version = services.reader.window_version(scope)
    page_rows = services.reader.rows(query, scope, version=version)
    data, total = _described_page(services, scope, page_rows, _goal_specs(services, access.site.site_id), version)
    return {"data": data, "totalCount": total}


def _props(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def timeline_json(rows: list[dict[str, Any]], session_end: datetime) -> list[dict[str, Any]]:
    """Timeline items; a pageview's ``time_on_page`` (seconds) runs to the next pageview, else to ``session_end``."""
    pageviews = [i for i, r in enumerate(rows) if r["type"] == "pageview"]
    next_view = {i: rows[j]["timestamp"] for i, j in zip(pageviews, pageviews[1:], strict=False)}
    items = []
    for i, row in enumerate(rows):
        props = _props(row["props"])
        item: dict[str, Any] = {
            "timestamp": iso_utc(row["timestamp"]),
            "type": row["type"],
            "hostname": row["hostname"],
            "pathname": row["pathname"],
            "querystring": row["querystring"],
            "page_title": row["page_title"],
        }
        if row["type"] == "pageview":
            until = next_view.get(i, session_end)
            item["time_on_page"] = max(0.0, (until - row["timestamp"]).total_seconds())
        elif row["type"] == "custom_event":
            item["event_name"], item["properties"] = row["event_name"], props
        elif row["type"] == "error":
            item["error_name"] = row["event_name"]
            item["message"], item["stack"] = str(props.get("message", "")), str(props.get("stack", ""))
        elif row["type"] == "outbound":
            item["url"] = str(props.get("url", ""))
        else:
            item["event_name"], item["properties"] = row["event_name"], props
        items.append(item)
    return items


@router.get("/sites/{site_id}/sessions/{session_id}")
def get_session(access: SiteReader, services: ServicesDep, session_id: SessionPath) -> dict[str, Any]:
    """The whole session (not limited to a window): its fields and its events in order.

    ``{data: {session: Session, timeline: [...], truncated}}``; at most 1000 timeline items, ``truncated`` when
    the session holds more.
    """
    site_id = access.site.site_id
    scope = Scope((site_id,), Window(None, None))
    goals = _goal_specs(services, site_id)
    rows = services.reader.rows(build_session_rows_query(scope, [session_id], goals, services.reader.dialect), scope)
    if not rows:
        raise NotFoundError("Session not found.")
    session = session_json(rows[0])
    timeline_query = build_timeline_query(site_id, session_id, TIMELINE_LIMIT + 1, services.reader.dialect)
    events = services.reader.rows(timeline_query, scope)
    timeline = timeline_json(events[:TIMELINE_LIMIT], rows[0]["session_end"])
    return {"data": {"session": session, "timeline": timeline, "truncated": len(events) > TIMELINE_LIMIT}}


@router.get("/sites/{site_id}/users/{user_id}")
def get_user(
    access: SiteReader,
    services: ServicesDep,
    params: WindowQuery,
    user_id: UserPath,
    page: PageQuery = None,
    limit: LimitQuery = None,
) -> dict[str, Any]:
    """An identified user: first and last seen, totals over their sessions, and one page of those sessions.

    ``{data: {user_id, first_seen, last_seen, totals: {sessions, pageviews, events}, sessions: [Session]},
    totalCount}`` (``totalCount`` = the user's sessions, for paging).
    All time unless a window is given; 404 when the site has no session identified with ``user_id``.
    """
    paging = parse_page(page, limit, 25, 100)
    site_id = access.site.site_id
    scope = Scope((site_id,), params.window())
    reader = services.reader
    version = reader.window_version(scope)
    query = build_user_query(scope, user_id, paging.limit, paging.offset, reader.dialect)
    page_rows = reader.rows(query, scope, version=version)
    totals = page_rows[0]
    if not totals["sessions"]:
        raise NotFoundError("User not found.")
    sessions, total = _described_page(services, scope, page_rows, _goal_specs(services, site_id), version)
    return {
        "data": {
            "user_id": user_id,
            "first_seen": iso_utc(totals["first_seen"]),
            "last_seen": iso_utc(totals["last_seen"]),
            "totals": {k: int(totals[k]) for k in ("sessions", "pageviews", "events")},
            "sessions": sessions,
        },
        "totalCount": total,
    }
