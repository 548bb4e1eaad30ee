"""The private-link view: ``/share/<siteId>#<key>`` shows goals, goal sessions, channel ranking and errors, read-only.

The key travels in the URL fragment (never sent to any server, so never in a log); the frame copies it into the tab's
session store and every call sends it as ``X-Private-Key``. Nothing here writes: no forms, no settings. A revoked,
replaced or wrong key shows "This link is no longer valid"; an address without a key says the key is missing.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import ALL, Input, Output, State, callback, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard import ids, readonly, session
from dashboard.components import channels as channel_ui
from dashboard.components import goals as goal_ui
from dashboard.components.common import card, chart, empty_state, error_view, invalid_link, loading
from dashboard.components.frame import analytics_frame, overview_block, overview_strip, waiting_for_zone
from dashboard.components.pager import SMALL_LINKS, link_pager
from dashboard.state import ViewState, parse_view

dash.register_page(__name__, path_template="/share/<site_id>", title="Shared view · sitelens", name="Shared view")

TABS = {
    "overview": "Overview",
    "visits": "Sessions",
    "goals": "Goals",
    "channels": "Channel ranking",
    "errors": "Errors",
}
GOALS_PAGE = 20
SESSIONS_PAGE = 25
ERROR_GROUPS = 10
ERROR_EVENTS = 20


def share_href(view: ViewState, tab: str, **changes: Any) -> str:
    """A link inside the shared view (the key stays in the tab's store, and the frame restores the fragment)."""
    return dash.get_relative_path(f"/share/{view.site_id}") + view.to_search(tab=tab, **changes)


def tab_links(view: ViewState, active: str) -> html.Nav:
    """The parts of the shared view, keeping dates, zone and filters."""
    links = [
        dcc.Link(
            label,
            href=share_href(view, tab, goal=view.goal if tab == "channels" else None, error=None, page=1),
            className="share-tab active" if tab == active or (active == "sessions" and tab == "goals") else "share-tab",
            id=f"share-tab-{tab}",
        )
        for tab, label in TABS.items()
    ]
    return html.Nav(links, className="share-tabs")


def layout(
    site_id: str | None = None,
    auth: dict | None = None,
    share: dict | None = None,
    browser_zone: str | None = None,
    **query: Any,
) -> Any:
    """The shared view's frame; its content is loaded once the key is in the tab's store."""
    raw = {k: v for k, v in query.items() if isinstance(v, str)}
    if browser_zone is None and not raw.get("time_zone"):
        return waiting_for_zone()
    if not ((site_id or "").isascii() and (site_id or "").isdigit()):
        return html.Div(invalid_link(), className="page page-narrow")
    view = parse_view({**raw, "site": site_id}, default_zone=browser_zone)
    active = view.tab if view.tab in TABS or view.tab == "sessions" else "goals"
    return html.Div(
        [
            html.Div(
                html.Div(
                    [
                        html.H1("Shared view", id=ids.SHARE_TITLE, className="page-title"),
                        html.P("Read-only analytics shared through a private link.", className="page-subtitle"),
                    ],
                    className="page-header-text",
                ),
                className="page-header",
            ),
            html.Div(id=ids.SHARE_INVALID),
            html.Div(
                [
                    tab_links(view, active),
                    # The strip is read with the link's key, so it loads with the content once the key is known.
                    analytics_frame(view, overview=False),
                    overview_block(ids.SHARE_OVERVIEW_BODY),
                    card(loading(None, ids.SHARE_CONTENT)),
                ],
                id=ids.SHARE_BODY,
                className="stack",
                hidden=True,
            ),
            dcc.Store(id=ids.SHARE_TAB, data=active),
            dcc.Store(id=ids.SHARE_ERRORS_DATA),
        ],
        className="page",
    )


def _goals(api: Any, view: ViewState) -> Any:
    result = session.cached_call(
        api, "goals", view.site_id, view.query(), page=view.page, limit=GOALS_PAGE, sort="createdAt", order="desc"
    )
    if not result.data:
        return empty_state("No goals on this site", "The site's owner has not defined any goals yet.")
    table = goal_ui.goals_table(
        result.data, lambda goal_id: share_href(view, "sessions", goal=goal_id, page=1), read_only=True
    )
    pages = link_pager(
        result.meta.page, result.meta.total_pages, lambda p: share_href(view, "goals", page=p), link_class=SMALL_LINKS
    )
    return [
        html.H2("Goals", className="card-title section-title"),
        html.Div(table, className="table-scroll"),
        html.Div(
            [
                html.Span(
                    f"{result.meta.total} goal" + ("" if result.meta.total == 1 else "s"), className="muted table-count"
                ),
                pages,
            ],
            className="table-foot",
        ),
    ]


def _sessions(api: Any, view: ViewState) -> Any:
    if view.goal is None:
        return _goals(api, view)
    goal = session.find_goal(api, view, view.goal)
    rows = session.cached_call(
        api, "goal_sessions", view.site_id, view.goal, view.query(), page=view.page, limit=SESSIONS_PAGE
    )
    title = f"Sessions that reached “{goal.name or f'Goal {goal.goal_id}'}”" if goal else "Sessions that converted"
    back = dcc.Link(
        "‹ All goals", href=share_href(view, "goals", goal=None, page=1), className="button button-secondary"
    )
    return [
        html.Div([html.H2(title, className="card-title section-title"), back], className="card-head-inline"),
        html.Div(
            goal_ui.sessions_body(
                rows,
                view,
                lambda p: share_href(view, "sessions", page=p),
                SESSIONS_PAGE,
                goal.total_conversions if goal else None,
            )
        ),
    ]


def _channels(api: Any, view: ViewState) -> Any:
    goals = session.all_goals(api, view)
    if not goals:
        return channel_ui.no_goals(None)
    goal = channel_ui.default_goal(goals, view.goal)
    ranking = session.cached_call(api, "channel_ranking", view.site_id, goal.goal_id, view.query())
    picker = dcc.Dropdown(
        id=ids.SHARE_CHANNELS_GOAL,
        options=channel_ui.goal_options(goals),
        value=goal.goal_id,
        clearable=False,
        className="goal-picker",
    )
    head = html.Div(
        [html.H2("Channel ranking", className="card-title section-title"), picker], className="card-head-inline"
    )
    return [head, html.Div(channel_ui.ranking_content(ranking, goal.name or f"Goal {goal.goal_id}"))]


def _errors(api: Any, view: ViewState) -> tuple[Any, list[str]]:
    from dashboard.components import js_errors as error_ui

    groups = session.cached_call(api, "error_names", view.site_id, view.query(), page=1, limit=ERROR_GROUPS)
    if not groups:
        return empty_state("No errors in this range", "No JavaScript errors were recorded for these dates."), []
    trend_bucket = error_ui.trend_bucket(view.start_date, view.end_date)
    trends = [
        session.cached_call(api, "error_time_series", view.site_id, g.value, view.query(), bucket=trend_bucket)
        for g in groups
    ]
    content: list[Any] = [
        html.H2("Errors", className="card-title section-title"),
        error_ui.error_groups_list(
            groups,
            trends,
            time_zone=view.time_zone,
            selected=view.error,
            row_id=lambda i: {"type": ids.SHARE_ERROR_ROW_TYPE, "index": i},
            ends=view.range_ends,
        ),
    ]
    chosen = next((g for g in groups if g.value == view.error), None)
    if chosen is not None:
        bucket = view.bucket or "day"
        series = session.cached_call(api, "error_time_series", view.site_id, chosen.value, view.query(), bucket=bucket)
        events = session.cached_call(
            api, "error_events", view.site_id, chosen.value, view.query(), page=1, limit=ERROR_EVENTS
        )
        content += [
            error_ui.error_detail_header(chosen),
            chart(
                error_ui.errors_time_figure(series, view.time_zone, bucket, ends=view.range_ends),
                className="chart",
            ),
            error_ui.occurrences_list(events, view.time_zone),
        ]
    return content, [g.value for g in groups]


@callback(
    Output(ids.SHARE_CONTENT, "children"),
    Output(ids.SHARE_TITLE, "children"),
    Output(ids.SHARE_ERRORS_DATA, "data"),
    Output(ids.SHARE_BODY, "hidden"),
    Output(ids.SHARE_INVALID, "children"),
    Output(ids.SHARE_OVERVIEW_BODY, "children"),
    Input(ids.VIEW, "data"),
    Input(ids.SHARE, "data"),
    State(ids.SHARE_TAB, "data"),
    State(ids.NAVIGATE, "hash"),
)
def load_shared(view_data: dict | None, share: dict | None, tab: str | None, fragment: str | None) -> tuple:
    """The chosen part of the shared view, read with the link's key only (never a sign-in token)."""
    view = ViewState.from_dict(view_data)
    if view.site_id is None:
        raise PreventUpdate
    matches = bool(share and share.get("privateKey") and str(share.get("siteId")) == str(view.site_id))
    if not matches and fragment and len(fragment) > 1:
        raise PreventUpdate  # the frame is copying the key from the fragment; this runs again when it has
    from api_client import APIError

    # Without a key this still opens a public site; any other site answers 401, shown as an invalid link.
    api = session.shared_api(share, view.site_id)
    messages: list[str] = []
    try:
        # Uncached on purpose: a revoked or replaced key must stop working at once, not when the cache expires.
        site = api.site(view.site_id)
        if tab == "sessions":
            content = _sessions(api, view)
        elif tab == "overview":
            content = readonly.overview_body(api, view)
        elif tab == "visits":
            content = readonly.sessions_body(api, view, lambda p: share_href(view, "visits", page=p))
        elif tab == "channels":
            content = _channels(api, view)
        elif tab == "errors":
            content, messages = _errors(api, view)
        else:
            content = _goals(api, view)
        strip = None  # the overview tab has its own headline numbers
        if tab != "overview":
            both = session.cached_call(api, "overview_compared", view.site_id, view.query())
            strip = overview_strip(both.current, both.previous)
    except APIError as exc:
        shown = error_view(exc, shared=True)
        if getattr(shown, "id", None) == "share-invalid":
            # Nothing of the site stays on screen for a link that no longer opens it; an address without any key
            # was cut short, which is not the same as a revoked link.
            return None, "Shared view", [], True, invalid_link(missing_key=not matches), no_update
        return shown, "Shared view", [], False, None, no_update
    return content, site.name or site.domain, messages, False, None, strip


@callback(
    Output(ids.NAVIGATE, "href", allow_duplicate=True),
    Input(ids.SHARE_CHANNELS_GOAL, "value"),
    State(ids.VIEW, "data"),
    prevent_initial_call=True,
)
def pick_shared_goal(goal_id: int | None, view_data: dict | None) -> str:
    """Another goal in the shared channel ranking."""
    view = ViewState.from_dict(view_data)
    if goal_id is None or goal_id == view.goal:
        raise PreventUpdate
    return share_href(view, "channels", goal=goal_id)


@callback(
    Output(ids.NAVIGATE, "href", allow_duplicate=True),
    Input({"type": ids.SHARE_ERROR_ROW_TYPE, "index": ALL}, "n_clicks"),
    State(ids.SHARE_ERRORS_DATA, "data"),
    State(ids.VIEW, "data"),
    prevent_initial_call=True,
)
def open_error(_clicks: list, messages: list | None, view_data: dict | None) -> str:
    """An error group opens its chart and occurrences."""
    trigger = ctx.triggered_id
    if not isinstance(trigger, dict) or not ctx.triggered[0].get("value") or not messages:
        raise PreventUpdate
    index = trigger["index"]
    if index >= len(messages):
        raise PreventUpdate
    view = ViewState.from_dict(view_data)
    return share_href(view, "errors", error=messages[index])
