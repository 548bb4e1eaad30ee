"""An identified user: first and last seen, totals, and all their sessions (paged), each opening its timeline."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import dash
from dash import html

from dashboard import ids, session
from dashboard.components import sessions as sessions_ui
from dashboard.components.common import card, empty_state, error_view, page_header
from dashboard.components.frame import page_gate

dash.register_page(__name__, path_template="/users/<user_id>", title="User · sitelens", name="User")

PAGE_SIZE = 25


def layout(
    user_id: str | None = None,
    auth: dict | None = None,
    share: dict | None = None,
    browser_zone: str | None = None,
    **query: Any,
) -> Any:
    """The profile of ``user_id`` on the URL's site, all time (one call)."""
    user_id = unquote(user_id or "")
    view, gate = page_gate(auth, browser_zone, f"/users/{user_id}", query)
    if gate is not None or view is None:
        return gate
    from api_client import APIError, NotFoundError

    try:
        profile = session.cached_call(
            session.api_for(auth), "user", view.site_id, user_id, page=view.page, limit=PAGE_SIZE
        )
    except NotFoundError:
        body: Any = empty_state(
            "No identified user by that id on this site",
            "Only visitors named by the tracker's identify call have a profile; anonymous visitors have sessions only.",
        )
    except APIError as exc:
        body = error_view(exc)
    else:
        search = view.to_search(page=1)
        here = dash.get_relative_path(f"/users/{user_id}")
        href = lambda number: here + view.to_search(page=number)  # noqa: E731
        body = [
            card(sessions_ui.user_profile(profile, view.time_zone), title="User"),
            card(
                sessions_ui.session_list(
                    profile.sessions, profile.total_count, view, search, href, PAGE_SIZE, ids.USER_SESSIONS_TABLE
                ),
                title="Sessions",
            ),
        ]
    return html.Div(
        [page_header("User", user_id), html.Div(body, id=ids.USER_BODY, className="stack")], className="page"
    )
