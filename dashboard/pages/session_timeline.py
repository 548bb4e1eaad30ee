"""One session: its facts and every event in order (pages with time on page, events, errors with stacks)."""

from __future__ import annotations

from typing import Any

import dash
from dash import html

from dashboard import ids, session
from dashboard.components import sessions as sessions_ui
from dashboard.components.common import app_href, card, error_view, page_header
from dashboard.components.frame import page_gate

dash.register_page(
    __name__,
    path_template="/sessions/<session_id>",
    title="Session · sitelens",
    name="Session",
)


def layout(
    session_id: str | None = None,
    auth: dict | None = None,
    share: dict | None = None,
    browser_zone: str | None = None,
    **query: Any,
) -> Any:
    """The timeline of ``session_id`` on the URL's site (drawn in the layout: one call, nothing to wait for)."""
    from urllib.parse import unquote

    session_id = unquote(session_id or "")
    view, gate = page_gate(auth, browser_zone, f"/sessions/{session_id}", query)
    if gate is not None or view is None:
        return gate
    from api_client import APIError

    back = dash.dcc.Link(
        "‹ All sessions", href=app_href("/sessions") + view.to_search(page=1), className="button button-secondary"
    )
    try:
        detail = session.cached_call(session.api_for(auth), "session", view.site_id, session_id)
    except APIError as exc:
        body: Any = error_view(exc)
    else:
        user_id = detail.session.user_id
        site_id = view.site_id or 0  # the gate above only lets a view with a site through
        user = (
            dash.dcc.Link(
                f"All sessions of {user_id}", href=sessions_ui.user_href(site_id, user_id, view.to_search(page=1))
            )
            if user_id and detail.session.identified  # a visitor id has no profile to open
            else ""
        )
        body = [
            card([sessions_ui.session_summary(detail.session, view.time_zone), user], title="Session"),
            card(sessions_ui.timeline(detail, view.time_zone), title=f"Timeline ({view.time_zone})"),
        ]
    return html.Div(
        [page_header("Session", session_id, actions=back), html.Div(body, id=ids.SESSION_BODY, className="stack")],
        className="page",
    )
