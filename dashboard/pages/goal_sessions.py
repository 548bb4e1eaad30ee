"""Goal sessions: the sessions that converted on one goal, newest first, paged."""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, State, callback, dcc, html
from dash.exceptions import PreventUpdate

from dashboard import ids, session
from dashboard.components import goals as goal_ui
from dashboard.components.common import (
    card,
    csv_button,
    csv_download,
    error_view,
    loading,
    page_header,
    redirect,
)
from dashboard.components.frame import analytics_frame, page_gate
from dashboard.loads import downloaded
from dashboard.state import ViewState

dash.register_page(__name__, path="/goal-sessions", title="Goal sessions · sitelens", name="Goal sessions")

PAGE_SIZE = 25


def layout(auth: dict | None = None, share: dict | None = None, browser_zone: str | None = None, **query: Any) -> Any:
    """The converted sessions of the URL's goal."""
    view, gate = page_gate(auth, browser_zone, "/goal-sessions", query)
    if gate is not None or view is None:
        return gate
    missing = session.site_gate(auth, view)
    if missing is not None:
        return missing
    if view.goal is None:
        return redirect(dash.get_relative_path("/goals") + view.to_search(), "Choose a goal")
    back = dcc.Link(
        "‹ All goals",
        href=dash.get_relative_path("/goals") + view.to_search(goal=None, page=1),
        className="button button-secondary",
    )
    return html.Div(
        [
            page_header(
                "Sessions that converted",
                actions=[
                    back,
                    csv_button(
                        ids.GOAL_SESSIONS_CSV, ids.GOAL_SESSIONS_CSV_DOWNLOAD, status_id=ids.GOAL_SESSIONS_CSV_STATUS
                    ),
                ],
            ),
            analytics_frame(view),
            card(loading(None, ids.GOAL_SESSIONS_BODY), title="Sessions", title_id=ids.GOAL_SESSIONS_TITLE),
        ],
        className="page",
    )


@callback(
    Output(ids.GOAL_SESSIONS_BODY, "children"),
    Output(ids.GOAL_SESSIONS_TITLE, "children"),
    Input(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
)
def load_sessions(view_data: dict | None, auth: dict | None) -> tuple:
    """One page of the goal's converted sessions."""
    view = ViewState.from_dict(view_data)
    if view.site_id is None or view.goal is None:
        raise PreventUpdate
    from api_client import APIError

    api = session.api_for(auth)
    try:
        goal = session.find_goal(api, view, view.goal)
        sessions = session.cached_call(
            api, "goal_sessions", view.site_id, view.goal, view.query(), page=view.page, limit=PAGE_SIZE
        )
    except APIError as exc:
        return error_view(exc), "Sessions"
    title = "Sessions"
    if goal is not None:
        title = f"Sessions that reached “{goal.name or f'Goal {goal.goal_id}'}” · {goal_ui.goal_target(goal)}"
    href = lambda page: dash.get_relative_path("/goal-sessions") + view.to_search(page=page)  # noqa: E731
    total = goal.total_conversions if goal is not None else None
    return goal_ui.sessions_body(sessions, view, href, PAGE_SIZE, total), title


@callback(
    Output(ids.GOAL_SESSIONS_CSV_DOWNLOAD, "data"),
    Output(ids.GOAL_SESSIONS_CSV_STATUS, "children"),
    Input(ids.GOAL_SESSIONS_CSV, "n_clicks"),
    State(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def download_sessions(clicks: int, view_data: dict | None, auth: dict | None) -> tuple[Any, Any]:
    """Every converted session of the view as CSV (times in the view's zone)."""
    if not clicks:
        raise PreventUpdate
    view = ViewState.from_dict(view_data)
    name = f"goal{view.goal}-sessions-site{view.site_id}-{view.start_date}-{view.end_date}"
    return downloaded(
        lambda: session.all_goal_sessions(session.api_for(auth), view),
        lambda rows: csv_download(goal_ui.sessions_frame(rows, view.time_zone), name),
    )
