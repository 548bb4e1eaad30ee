"""Channel ranking: which acquisition channels convert best on a goal, with 95% intervals."""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, State, callback, dcc, html
from dash.exceptions import PreventUpdate

from dashboard import ids, session
from dashboard.components import channels as channel_ui
from dashboard.components.common import card, csv_button, csv_download, error_view, loading, page_header
from dashboard.components.frame import analytics_frame, page_gate
from dashboard.loads import downloaded
from dashboard.state import ViewState

dash.register_page(
    __name__,
    path="/channels",
    title="Channel ranking · sitelens",
    name="Channels",
    nav_label="Channels",
    nav_scope="site",
    order=3,
)


def ranking_body(api: Any, view: ViewState, goals_href: str) -> tuple[Any, list[dict], Any]:
    """(content, goal options, chosen goal id): the ranking of the URL's goal, or of the goal with most conversions."""
    goals = session.all_goals(api, view)
    if not goals:
        return channel_ui.no_goals(goals_href), [], None
    goal = channel_ui.default_goal(goals, view.goal)
    ranking = session.cached_call(api, "channel_ranking", view.site_id, goal.goal_id, view.query())
    return (
        channel_ui.ranking_content(ranking, goal.name or f"Goal {goal.goal_id}"),
        channel_ui.goal_options(goals),
        goal.goal_id,
    )


def layout(auth: dict | None = None, share: dict | None = None, browser_zone: str | None = None, **query: Any) -> Any:
    """The ranking of the URL's goal (or the first goal)."""
    view, gate = page_gate(auth, browser_zone, "/channels", query)
    if gate is not None or view is None:
        return gate
    missing = session.site_gate(auth, view)
    if missing is not None:
        return missing
    picker = dcc.Dropdown(
        id=ids.CHANNELS_GOAL,
        options=[],
        value=view.goal,
        clearable=False,
        placeholder="Choose a goal",
        className="goal-picker",
    )
    return html.Div(
        [
            page_header(
                "Channel ranking",
                "Conversion rate by acquisition channel, best first.",
                actions=[csv_button(ids.CHANNELS_CSV, ids.CHANNELS_CSV_DOWNLOAD, status_id=ids.CHANNELS_CSV_STATUS)],
            ),
            analytics_frame(view),
            card(loading(None, ids.CHANNELS_BODY), title="Goal", actions=picker),
            dcc.Store(id=ids.CHANNELS_SHOWN),
        ],
        className="page",
    )


@callback(
    Output(ids.CHANNELS_BODY, "children"),
    Output(ids.CHANNELS_GOAL, "options"),
    Output(ids.CHANNELS_GOAL, "value"),
    Output(ids.CHANNELS_SHOWN, "data"),
    Input(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
)
def load_ranking(view_data: dict | None, auth: dict | None) -> tuple:
    """The ranking for the view (one breakdown call)."""
    view = ViewState.from_dict(view_data)
    if view.site_id is None:
        raise PreventUpdate
    from api_client import APIError

    goals_href = dash.get_relative_path("/goals") + view.to_search(goal=None)
    try:
        body, options, goal_id = ranking_body(session.api_for(auth), view, goals_href)
    except APIError as exc:
        return error_view(exc), [], None, None
    return body, options, goal_id, goal_id


@callback(
    Output(ids.NAVIGATE, "href", allow_duplicate=True),
    Input(ids.CHANNELS_GOAL, "value"),
    State(ids.CHANNELS_SHOWN, "data"),
    State(ids.VIEW, "data"),
    State(ids.NAVIGATE, "pathname"),
    prevent_initial_call=True,
)
def pick_goal(goal_id: int | None, shown: int | None, view_data: dict | None, pathname: str | None) -> str:
    """Choosing another goal puts it in the URL (the goal already shown changes nothing)."""
    view = ViewState.from_dict(view_data)
    if goal_id is None or goal_id == shown:
        raise PreventUpdate
    return (pathname or dash.get_relative_path("/channels")) + view.to_search(goal=goal_id)


@callback(
    Output(ids.CHANNELS_CSV_DOWNLOAD, "data"),
    Output(ids.CHANNELS_CSV_STATUS, "children"),
    Input(ids.CHANNELS_CSV, "n_clicks"),
    State(ids.VIEW, "data"),
    State(ids.CHANNELS_GOAL, "value"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def download_ranking(clicks: int, view_data: dict | None, goal_id: int | None, auth: dict | None) -> tuple[Any, Any]:
    """The ranking shown, as CSV."""
    if not clicks or goal_id is None:
        raise PreventUpdate
    view = ViewState.from_dict(view_data)
    name = f"channels-goal{goal_id}-site{view.site_id}-{view.start_date}-{view.end_date}"
    return downloaded(
        lambda: session.cached_call(session.api_for(auth), "channel_ranking", view.site_id, goal_id, view.query()),
        lambda ranking: csv_download(channel_ui.channel_frame(ranking.rows), name),
    )
