"""Live: visitors, sessions and pageviews of the last few minutes, and their top pages."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from api_backend.auth import ServicesDep, SiteReader
from api_backend.query.live import build_live_pages_query, build_live_query
from api_backend.query.paging import parse_int
from api_backend.query.window import parse_window

router = APIRouter(tags=["analytics"])


@router.get("/sites/{site_id}/live")
def live(
    access: SiteReader,
    services: ServicesDep,
    minutes: Annotated[str | None, Query(description="the last 1..60 minutes (default 5)")] = None,
    limit: Annotated[str | None, Query(description="top pages 1..50 (default 10)")] = None,
) -> dict[str, Any]:
    """``{data: {minutes, visitors, sessions, pageviews, events, pages: [{pathname, visitors, pageviews}]}}``.

    The window is the last ``minutes`` up to now; never cached, since "now" moves with every request.
    """
    span = parse_int(minutes, "minutes", 5, 1, 60)
    top = parse_int(limit, "limit", 10, 1, 50)
    window = parse_window({"past_minutes_start": str(span), "past_minutes_end": "0"})
    site_id = access.site.site_id
    row = services.reader.rows(build_live_query(site_id, window, services.reader.dialect))[0]
    pages = services.reader.rows(build_live_pages_query(site_id, window, top, services.reader.dialect))
    data: dict[str, Any] = {"minutes": span}
    data.update({k: int(row[k] or 0) for k in ("visitors", "sessions", "pageviews", "events")})
    data["pages"] = [
        {"pathname": r["pathname"], "visitors": int(r["visitors"]), "pageviews": int(r["pageviews"])} for r in pages
    ]
    return {"data": data}
