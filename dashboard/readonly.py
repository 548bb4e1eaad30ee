"""Read-only bodies of the overview and the sessions list, for the shared view (``/share/<siteId>#<key>``).

They read through ``session.cached_call`` with whatever client the caller holds (the link's key), draw the same
pieces as the signed-in pages, and leave out what would lead elsewhere: panel rows do not filter, and sessions do
not open timelines (those routes are for members).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dash import html

from dashboard import session
from dashboard.components import overview as overview_ui
from dashboard.components import sessions as sessions_ui
from dashboard.components.common import chart
from dashboard.state import ViewState

__all__ = ["overview_body", "sessions_body"]

PANEL_LIMIT = 10
SESSIONS_PAGE = 25
# The shared overview shows the first tab of each panel: one call each.
_SHARED_PANELS = (
    ("Top pages", "pathname"),
    ("Channels", "channel"),
    ("Countries", "country"),
    ("Devices", "device_type"),
)


def overview_body(api: Any, view: ViewState) -> list[Any]:
    """Headline tiles against the previous period, the visitors chart, and the top values of four panels."""
    both = session.cached_call(api, "overview_compared", view.site_id, view.query())
    bucket = view.bucket if view.bucket in overview_ui.BUCKETS else overview_ui.default_bucket(view.days)
    series = session.cached_call(api, "overview_time_series_compared", view.site_id, view.query(), bucket=bucket)
    panels = []
    for title, parameter in _SHARED_PANELS:
        page = session.cached_call(api, "metric", view.site_id, parameter, view.query(), limit=PANEL_LIMIT)
        panels.append(
            html.Section(
                [html.H3(title, className="card-title"), overview_ui.panel_rows(parameter, page.rows, clickable=False)],
                className="overview-panel card",
            )
        )
    return [
        html.Div(overview_ui.headline_tiles(both.current, both.previous), id="share-overview-tiles"),
        chart(
            overview_ui.series_figure(
                series.current, series.previous, "users", bucket, time_zone=view.time_zone, ends=view.range_ends
            ),
            className="overview-chart",
        ),
        html.Div(panels, className="overview-panels"),
    ]


def sessions_body(api: Any, view: ViewState, href: Callable[[int], str]) -> Any:
    """One page of the window's sessions, without links out of the shared view."""
    page = session.cached_call(api, "sessions", view.site_id, view.query(), page=view.page, limit=SESSIONS_PAGE)
    return sessions_ui.session_list(
        page.rows, page.total_count, view, "", href, SESSIONS_PAGE, "share-sessions-table", links=False
    )
