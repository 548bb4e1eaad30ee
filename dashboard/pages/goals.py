"""Goals: conversions, sessions and conversion rate per goal, with create, edit, clone and delete."""

from __future__ import annotations

from typing import Any

import dash
from dash import ALL, Input, Output, State, callback, clientside_callback, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard import ids, prefill, session
from dashboard.components import frame, goal_editor
from dashboard.components import goals as goal_ui
from dashboard.components.common import (
    CLICKED_ID_JS,
    alert,
    attrs,
    card,
    csv_button,
    csv_download,
    empty_state,
    error_view,
    loading,
    page_header,
    value_of,
)
from dashboard.components.frame import analytics_frame, page_gate
from dashboard.components.pager import SMALL_LINKS, link_pager
from dashboard.loads import downloaded
from dashboard.state import ViewState

dash.register_page(
    __name__, path="/goals", title="Goals · sitelens", name="Goals", nav_label="Goals", nav_scope="site", order=1
)

PAGE_SIZE = 20


def sessions_href(view: ViewState, goal_id: int) -> str:
    """The goal-sessions page of ``goal_id`` in the same view (dates, zone, filters)."""
    return dash.get_relative_path("/goal-sessions") + view.to_search(goal=goal_id, page=1, sort=None, order=None)


def delete_dialog() -> html.Div:
    """Asks before a goal is deleted."""
    return html.Div(
        html.Div(
            [
                html.Div(html.H2("Delete goal?", className="modal-title"), className="modal-head"),
                html.Div(
                    [
                        html.P(id=ids.GOALS_DELETE_TEXT),
                        html.P("Its definition is removed; the events themselves stay.", className="muted"),
                    ],
                    className="modal-body",
                ),
                html.Div(
                    [
                        html.Button(
                            "Keep it",
                            id=ids.GOALS_DELETE_NO,
                            n_clicks=0,
                            className="button button-secondary",
                            **attrs({"data-dismiss": "1"}),
                        ),
                        html.Button(
                            "Delete goal", id=ids.GOALS_DELETE_YES, n_clicks=0, className="button button-danger"
                        ),
                    ],
                    className="modal-foot",
                ),
                dcc.Store(id=ids.GOALS_DELETE_TARGET),
            ],
            className="modal modal-small",
            role="alertdialog",
        ),
        id=ids.GOALS_DELETE_CONFIRM,
        className="modal-backdrop",
        hidden=True,
    )


def layout(auth: dict | None = None, share: dict | None = None, browser_zone: str | None = None, **query: Any) -> Any:
    """The goals of the site in the URL's view."""
    view, gate = page_gate(auth, browser_zone, "/goals", query)
    if gate is not None or view is None:
        return gate
    missing = session.site_gate(auth, view)
    if missing is not None:
        return missing
    sort_value = view.sort if view.sort is not None and view.sort in goal_ui.SORT_OPTIONS else "createdAt"
    order_value = view.order or "desc"
    # With the goals (and the overview) of this view already cached, the page is drawn complete right here;
    # otherwise the ids.GOALS_LOAD store makes a callback load them while the loading state shows.
    cached = _cached_goals(auth, view)
    body, data = (None, None) if cached is None else _page_body(view, cached)
    toolbar = html.Div(
        [
            dcc.Input(
                id=ids.GOALS_SEARCH,
                type="search",
                placeholder="Find a goal…",
                debounce=0.3,
                className="input goals-search",
                autoComplete="off",
            ),
            html.Span("Sort by", className="muted"),
            dcc.Dropdown(
                id=ids.GOALS_SORT,
                options=[{"label": label, "value": key} for key, label in goal_ui.SORT_OPTIONS.items()],
                value=sort_value,
                clearable=False,
                searchable=False,
                className="sort-picker",
            ),
            dcc.RadioItems(
                id=ids.GOALS_ORDER,
                options=[{"label": "↓ Desc", "value": "desc"}, {"label": "↑ Asc", "value": "asc"}],
                value=order_value,
                className="segmented",
                inline=True,
            ),
        ],
        className="toolbar",
    )
    return html.Div(
        [
            page_header(
                "Goals",
                "Sessions that reached each goal in the chosen range.",
                actions=[
                    csv_button(ids.GOALS_CSV, ids.GOALS_CSV_DOWNLOAD, status_id=ids.GOALS_CSV_STATUS),
                    html.Button("+ New goal", id=ids.GOALS_NEW, n_clicks=0, className="button button-primary"),
                ],
            ),
            # A first view loads the goals before the strip, so the strip's queries do not slow the table down.
            analytics_frame(view, overview_body=prefill.overview(auth, view), overview_after_body=cached is None),
            html.Div(id=ids.GOALS_STATUS, className="status"),
            card(loading(body, ids.GOALS_BODY), title="Goals", actions=toolbar),
            goal_editor.goal_form(),
            delete_dialog(),
            dcc.Store(id=ids.GOALS_REFRESH, data=0),
            dcc.Store(id=ids.GOALS_DATA, data=data),
            dcc.Store(id=ids.GOALS_ACTION),
            *([dcc.Store(id=ids.GOALS_LOAD, data=view.to_dict())] if cached is None else []),
        ],
        className="page",
    )


def _page_args(view: ViewState) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments of the ``goals`` call for one page of the view (the layout and the callback must agree)."""
    sort = view.sort if view.sort in goal_ui.SORT_OPTIONS else "createdAt"
    return (view.site_id, view.query()), {
        "page": view.page,
        "limit": PAGE_SIZE,
        "sort": sort,
        "order": view.order or "desc",
    }


def _cached_goals(auth: dict | None, view: ViewState) -> Any | None:
    """The view's page of goals when the response cache already holds it."""
    args, kwargs = _page_args(view)
    return session.peek(session.api_for(auth), "goals", *args, **kwargs)


def _page_body(view: ViewState, result: Any) -> tuple[Any, list[dict]]:
    """The table (or empty state) of one page of goals, and the goals as the form callbacks read them."""
    if not result.data:
        if result.meta.total:
            body: Any = empty_state("No goals on this page", "Go back to the first page.")
        else:
            body = empty_state(
                "No goals yet",
                "A goal counts the sessions that reach a page (such as /pricing) or send a custom event (such as "
                "signup). Use “New goal” to create the first one.",
            )
        return body, []
    table = goal_ui.goals_table(result.data, lambda goal_id: sessions_href(view, goal_id))
    pages = link_pager(
        result.meta.page,
        result.meta.total_pages,
        lambda page: dash.get_relative_path("/goals") + view.to_search(page=page),
        link_class=SMALL_LINKS,
    )
    count = result.meta.total
    summary = html.Div(f"{count} goal" + ("" if count == 1 else "s"), className="muted table-count")
    return [html.Div(table, className="table-scroll"), html.Div([summary, pages], className="table-foot")], [
        g.model_dump(mode="json") for g in result.data
    ]


def _goals_body(view: ViewState, search: str | None, auth: dict | None) -> tuple:
    """One page of goals with their numbers for the view (or every goal matching the search)."""
    if view.site_id is None:
        raise PreventUpdate
    from api_client import APIError

    api = session.api_for(auth)
    term = (search or "").strip().lower()
    if term:
        try:
            goals = session.all_goals(api, view)
        except APIError as exc:
            return error_view(exc), []
        found = [g for g in goals if term in (g.name or "").lower() or term in goal_ui.goal_target(g).lower()]
        if not found:
            return empty_state(f"No goal matches “{(search or '').strip()}”", "Try part of a name, path or event."), []
        table = goal_ui.goals_table(found, lambda goal_id: sessions_href(view, goal_id))
        summary = html.Div(f"{len(found)} of {len(goals)} goals match", className="muted table-count")
        return [html.Div(table, className="table-scroll"), html.Div(summary, className="table-foot")], [
            g.model_dump(mode="json") for g in found
        ]
    args, kwargs = _page_args(view)
    try:
        result = session.cached_call(api, "goals", *args, **kwargs)
    except APIError as exc:
        return error_view(exc), []
    return _page_body(view, result)


@callback(
    Output(ids.GOALS_BODY, "children"),
    Output(ids.GOALS_DATA, "data"),
    Output({"type": ids.OVERVIEW_AFTER_TYPE, "index": ALL}, "data"),
    Input(ids.GOALS_LOAD, "data"),
    State(ids.AUTH, "data"),
)
def load_goals(view_data: dict | None, auth: dict | None) -> tuple:
    """The goals of the view, when the layout had no cached answer to draw them from; then the overview strip's
    turn (when the layout left it waiting for the goals)."""
    body, data = _goals_body(ViewState.from_dict(view_data), None, auth)
    return body, data, [view_data] * len(ctx.outputs_list[2])


@callback(
    Output(ids.GOALS_BODY, "children", allow_duplicate=True),
    Output(ids.GOALS_DATA, "data", allow_duplicate=True),
    Input(ids.GOALS_REFRESH, "data"),
    Input(ids.GOALS_SEARCH, "value"),
    State(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def reload_goals(_refresh: int, search: str | None, view_data: dict | None, auth: dict | None) -> tuple:
    """The goals again after a write, or those matching the search."""
    return _goals_body(ViewState.from_dict(view_data), search, auth)


@callback(
    Output(ids.FRAME_HREF, "data", allow_duplicate=True),
    Input(ids.GOALS_SORT, "value"),
    Input(ids.GOALS_ORDER, "value"),
    State(ids.VIEW, "data"),
    prevent_initial_call=True,
)
def change_sort(sort: str, order: str, view_data: dict | None) -> str:
    """Sorting is part of the URL, like the rest of the view."""
    view = ViewState.from_dict(view_data)
    if (sort or "createdAt") == (view.sort or "createdAt") and (order or "desc") == (view.order or "desc"):
        raise PreventUpdate
    return dash.get_relative_path("/goals") + view.to_search(sort=sort, order=order, page=1)


FORM_OUTPUTS = [
    Output(ids.GOALS_FORM, "hidden", allow_duplicate=True),
    Output(ids.GOALS_FORM_TITLE, "children"),
    Output(ids.GOALS_FORM_GOAL_ID, "data"),
    Output(ids.GOALS_FORM_NAME, "value"),
    Output(ids.GOALS_FORM_TYPE, "value"),
    Output(ids.GOALS_FORM_PATH, "value"),
    Output(ids.GOALS_FORM_EVENT, "value"),
    Output(ids.GOALS_FORM_PROPERTY_KEY, "value"),
    Output(ids.GOALS_FORM_PROPERTY_VALUE, "value"),
    Output(ids.GOALS_FORM_VALUE_PATTERN, "value"),
    Output(ids.GOALS_FORM_MESSAGE, "children", allow_duplicate=True),
    Output({"type": ids.GOALS_FORM_ERROR_TYPE, "field": ALL}, "children", allow_duplicate=True),
]


# A row's edit, clone or delete button really clicked (decided in the browser): which action, which goal.
clientside_callback(
    CLICKED_ID_JS,
    Output(ids.GOALS_ACTION, "data"),
    Input({"type": ids.GOALS_ACTION_TYPE, "action": ALL, "goal": ALL}, "n_clicks"),
    prevent_initial_call=True,
)


@callback(
    *FORM_OUTPUTS,
    Input(ids.GOALS_NEW, "n_clicks"),
    Input(ids.GOALS_ACTION, "data"),
    State(ids.GOALS_DATA, "data"),
    prevent_initial_call=True,
)
def open_form(new: int, action: dict | None, goals: list | None) -> tuple:
    """New, edit and clone open the form, filled accordingly."""
    if ctx.triggered_id == ids.GOALS_NEW:
        if not new:
            raise PreventUpdate
        values = goal_editor.form_values(None, "create")
    elif action and action.get("action") in ("edit", "clone"):
        goal = next((g for g in goals or [] if g.get("goal_id") == action.get("goal")), None)
        if goal is None:
            raise PreventUpdate
        values = goal_editor.form_values(goal, action["action"])
    else:
        raise PreventUpdate
    clear = [None] * len(ctx.outputs_list[-1])
    return (
        False,
        values["title"],
        values["goal_id"],
        values["name"],
        values["goal_type"],
        values["path_pattern"],
        values["event_name"],
        values["event_property_key"],
        values["event_property_value"],
        values["value_pattern"],
        None,
        clear,
    )


@callback(
    Output(ids.GOALS_PATH_SUGGESTIONS, "children"),
    Output(ids.GOALS_EVENT_SUGGESTIONS, "children"),
    Input(ids.GOALS_FORM, "hidden"),
    State(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def suggest_targets(hidden: bool, view_data: dict | None, auth: dict | None) -> tuple:
    """The site's most visited paths and its custom event names, offered while typing a goal's target."""
    view = ViewState.from_dict(view_data)
    if hidden or view.site_id is None:
        raise PreventUpdate
    from api_client import APIError

    api = session.api_for(auth)
    out = []
    for parameter in ("pathname", "event_name"):
        try:
            page = session.cached_call(api, "metric", view.site_id, parameter, view.query(), page=1, limit=100)
            out.append(frame.suggestion_options(page.rows, parameter))
        except APIError:
            out.append([])  # a convenience only
    return tuple(out)


@callback(
    Output(ids.GOALS_FORM_PATH_FIELDS, "hidden"),
    Output(ids.GOALS_FORM_EVENT_FIELDS, "hidden"),
    Output(ids.GOALS_FORM_VALUE_FIELDS, "hidden"),
    Input(ids.GOALS_FORM_TYPE, "value"),
    prevent_initial_call=True,  # the form is drawn with the path fields showing, as for its first type
)
def switch_type(goal_type: str) -> tuple[bool, bool, bool]:
    """Show the fields of the chosen goal type only."""
    return goal_type != "path", goal_type != "event", goal_type not in goal_editor.VALUE_PATTERN_TYPES


@callback(
    Output(ids.GOALS_FORM, "hidden", allow_duplicate=True),
    Input(ids.GOALS_FORM_CANCEL, "n_clicks"),
    Input(ids.GOALS_FORM_CANCEL_2, "n_clicks"),
    prevent_initial_call=True,
)
def close_form(close: int, cancel: int) -> bool:
    """Cancel closes the form without saving."""
    if not (close or cancel):
        raise PreventUpdate
    return True


@callback(
    Output(ids.GOALS_FORM_PATH_PREVIEW, "children"),
    Input(ids.GOALS_FORM_PATH, "value"),
    State(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def preview_path(pattern: str | None, view_data: dict | None, auth: dict | None) -> Any:
    """Which of the site's most visited paths the typed pattern matches, before the goal is saved."""
    view = ViewState.from_dict(view_data)
    if view.site_id is None or not (pattern or "").strip():
        return None
    from api_client import APIError

    try:
        page = session.cached_call(
            session.api_for(auth), "metric", view.site_id, "pathname", view.query(), page=1, limit=100
        )
    except APIError:
        return None  # a convenience only; saving still checks the pattern
    paths = [str(value) for row in page.rows if (value := value_of(row, "value"))]
    return goal_editor.path_preview(pattern, paths)


@callback(
    Output(ids.GOALS_FORM, "hidden", allow_duplicate=True),
    Output({"type": ids.GOALS_FORM_ERROR_TYPE, "field": ALL}, "children", allow_duplicate=True),
    Output(ids.GOALS_FORM_MESSAGE, "children", allow_duplicate=True),
    Output(ids.GOALS_REFRESH, "data", allow_duplicate=True),
    Output(ids.GOALS_STATUS, "children", allow_duplicate=True),
    Input(ids.GOALS_FORM_SAVE, "n_clicks"),
    State(ids.GOALS_FORM_GOAL_ID, "data"),
    State(ids.GOALS_FORM_NAME, "value"),
    State(ids.GOALS_FORM_TYPE, "value"),
    State(ids.GOALS_FORM_PATH, "value"),
    State(ids.GOALS_FORM_EVENT, "value"),
    State(ids.GOALS_FORM_PROPERTY_KEY, "value"),
    State(ids.GOALS_FORM_PROPERTY_VALUE, "value"),
    State(ids.GOALS_FORM_VALUE_PATTERN, "value"),
    State(ids.GOALS_REFRESH, "data"),
    State(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def save_goal(
    clicks: int,
    goal_id: int | None,
    name: str | None,
    goal_type: str,
    path_pattern: str | None,
    event_name: str | None,
    property_key: str | None,
    property_value: str | None,
    value_pattern: str | None,
    refresh: int,
    view_data: dict | None,
    auth: dict | None,
) -> tuple:
    """Create or replace the goal; the API's validation messages appear beside their fields."""
    if not clicks:
        raise PreventUpdate
    from api_client import APIError, ValidationError

    view = ViewState.from_dict(view_data)
    if view.site_id is None:
        raise PreventUpdate
    fields = [o["id"]["field"] for o in ctx.outputs_list[1]]
    config = goal_editor.goal_config(
        goal_type,
        {
            "path_pattern": path_pattern,
            "event_name": event_name,
            "event_property_key": property_key,
            "event_property_value": property_value,
            "value_pattern": value_pattern,
        },
    )
    api = session.api_for(auth)
    clean_name = (name or "").strip() or None
    try:
        if goal_id is None:
            api.create_goal(view.site_id, name=clean_name, goal_type=goal_type, config=config)
        else:
            api.update_goal(view.site_id, goal_id, name=clean_name, goal_type=goal_type, config=config)
    except ValidationError as exc:
        by_field, other = goal_editor.field_errors(exc.details or [{"field": "", "message": exc.message}])
        message = alert("; ".join(other)) if other else alert("Please correct the highlighted fields.")
        return no_update, [by_field.get(f) for f in fields], message, no_update, no_update
    except APIError as exc:
        return no_update, [None] * len(fields), error_view(exc), no_update, no_update
    session.invalidate(view.site_id)
    verb = "created" if goal_id is None else "saved"
    status = alert(f"Goal “{clean_name}” {verb}." if clean_name else f"Goal {verb}.", "success")
    return True, [None] * len(fields), None, (refresh or 0) + 1, status


@callback(
    Output(ids.GOALS_DELETE_CONFIRM, "hidden", allow_duplicate=True),
    Output(ids.GOALS_DELETE_TARGET, "data"),
    Output(ids.GOALS_DELETE_TEXT, "children"),
    Input(ids.GOALS_ACTION, "data"),
    State(ids.GOALS_DATA, "data"),
    prevent_initial_call=True,
)
def ask_delete(action: dict | None, goals: list | None) -> tuple:
    """Delete first asks for confirmation, naming the goal."""
    if not action or action.get("action") != "delete":
        raise PreventUpdate
    goal = next((g for g in goals or [] if g.get("goal_id") == action.get("goal")), None)
    if goal is None:
        raise PreventUpdate
    label = goal.get("name") or f"Goal {goal['goal_id']}"
    return False, goal["goal_id"], ["Delete ", html.Strong(label), "?"]


@callback(
    Output(ids.GOALS_DELETE_CONFIRM, "hidden", allow_duplicate=True),
    Output(ids.GOALS_REFRESH, "data", allow_duplicate=True),
    Output(ids.GOALS_STATUS, "children", allow_duplicate=True),
    Input(ids.GOALS_DELETE_YES, "n_clicks"),
    Input(ids.GOALS_DELETE_NO, "n_clicks"),
    State(ids.GOALS_DELETE_TARGET, "data"),
    State(ids.GOALS_REFRESH, "data"),
    State(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def confirm_delete(yes: int, no: int, goal_id: int | None, refresh: int, view_data: dict | None, auth: dict | None):
    """Delete the goal once confirmed."""
    if ctx.triggered_id == ids.GOALS_DELETE_NO:
        return True, no_update, no_update
    if not yes or goal_id is None:
        raise PreventUpdate
    from api_client import APIError

    view = ViewState.from_dict(view_data)
    if view.site_id is None:
        raise PreventUpdate
    try:
        session.api_for(auth).delete_goal(view.site_id, goal_id)
    except APIError as exc:
        return True, no_update, error_view(exc)
    session.invalidate(view.site_id)
    return True, (refresh or 0) + 1, alert("Goal deleted.", "success")


@callback(
    Output(ids.GOALS_CSV_DOWNLOAD, "data"),
    Output(ids.GOALS_CSV_STATUS, "children"),
    Input(ids.GOALS_CSV, "n_clicks"),
    State(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def download_goals(clicks: int, view_data: dict | None, auth: dict | None) -> tuple[Any, Any]:
    """Every goal (all pages) with its numbers for the view, as CSV."""
    if not clicks:
        raise PreventUpdate
    view = ViewState.from_dict(view_data)
    name = f"goals-site{view.site_id}-{view.start_date}-{view.end_date}"
    return downloaded(
        lambda: session.all_goals(session.api_for(auth), view),
        lambda goals: csv_download(goal_ui.goals_frame(goals), name),
    )
