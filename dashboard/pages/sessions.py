"""Sessions: every session of the window (filters apply), the most recently active first, paged; a row opens its
timeline."""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, State, callback, html
from dash.exceptions import PreventUpdate

from dashboard import ids, session
from dashboard.components import sessions as sessions_ui
from dashboard.components.common import card, loading, page_header
from dashboard.components.frame import analytics_frame, page_gate
from dashboard.loads import shown
from dashboard.state import ViewState

dash.register_page(
    __name__,
    path="/sessions",
    title="Sessions · sitelens",
    name="Sessions",
    nav_label="Sessions",
    nav_scope="site",
    order=0.7,
)

PAGE_SIZE = 25


def layout(auth: dict | None = None, share: dict | None = None, browser_zone: str | None = None, **query: Any) -> Any:
    """One page of the window's sessions."""
    view, gate = page_gate(auth, browser_zone, "/sessions", query)
    if gate is not None or view is None:
        return gate
    return html.Div(
        [
            page_header(
                "Sessions",
                "Every session of the range, the most recently active first. Open one to see what happened in it.",
            ),
            analytics_frame(view, overview=False),
            card(loading(None, ids.SESSIONS_BODY), title="Sessions"),
        ],
        className="page",
    )


@callback(Output(ids.SESSIONS_BODY, "children"), Input(ids.VIEW, "data"), State(ids.AUTH, "data"))
def load_sessions(view_data: dict | None, auth: dict | None) -> Any:
    """One page of sessions (one call)."""
    view = ViewState.from_dict(view_data)
    if view.site_id is None:
        raise PreventUpdate
    search = view.to_search(page=1)
    href = lambda number: dash.get_relative_path("/sessions") + view.to_search(page=number)  # noqa: E731
    return shown(
        lambda: session.cached_call(
            session.api_for(auth), "sessions", view.site_id, view.query(), page=view.page, limit=PAGE_SIZE
        ),
        lambda page: sessions_ui.session_list(page.rows, page.total_count, view, search, href, PAGE_SIZE),
    )
