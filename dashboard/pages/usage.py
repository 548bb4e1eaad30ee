"""Usage: an organization's events per day over all its sites, by the nine event categories, with totals.

The organization is the URL's ``org`` (the person's first organization when absent); dates and zone come from the
frame. Segment filters do not apply to usage, so the frame's filter builder is hidden on this page.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, State, callback, dcc, html
from dash.exceptions import PreventUpdate

from dashboard import ids, session
from dashboard.components import usage as comp
from dashboard.components.common import (
    card,
    chart,
    csv_button,
    csv_download,
    empty_state,
    error_view,
    loading,
    page_header,
)
from dashboard.components.frame import analytics_frame, page_gate
from dashboard.loads import downloaded, shown
from dashboard.state import ViewState

dash.register_page(
    __name__,
    path="/usage",
    title="Usage · sitelens",
    name="Usage",
    nav_label="Usage",
    nav_scope="org",
    order=80,
)


def _usage_query(view: ViewState) -> Any:
    """The window of the view without segment filters (usage counts every event of the organization)."""
    return view.replace(filters=[]).query()


def layout(auth: dict | None = None, share: dict | None = None, browser_zone: str | None = None, **query: Any) -> Any:
    """Organization picker, date controls, totals and the stacked daily chart."""
    view, gate = page_gate(auth, browser_zone, "/usage", query, need_site=False)
    if gate is not None or view is None:
        return gate
    missing = session.site_gate(auth, view)
    if missing is not None:
        return missing
    from api_client import APIError

    try:
        orgs = session.cached_call(session.api_for(auth), "organizations")
    except APIError as exc:
        return html.Div([page_header("Usage"), error_view(exc)], className="page")
    if not orgs:
        return html.Div(
            [
                page_header("Usage"),
                empty_state("You are not in any organization yet", "Ask an owner to add you to their organization."),
            ],
            className="page",
        )
    known = {org.id for org in orgs}
    if view.org not in known:
        view = view.replace(org=orgs[0].id)
    picker = dcc.Dropdown(
        id=ids.USAGE_ORG,
        options=[{"label": org.name, "value": org.id} for org in orgs],
        value=view.org,
        clearable=False,
        searchable=len(orgs) > 8,
        className="usage-org",
    )
    return html.Div(
        [
            page_header(
                "Usage",
                "Events recorded per day across every site of the organization.",
                actions=[picker, csv_button(ids.USAGE_CSV, ids.USAGE_CSV_DOWNLOAD, status_id=ids.USAGE_CSV_STATUS)],
            ),
            analytics_frame(view, overview=False),
            loading(None, ids.USAGE_BODY),
        ],
        className="page usage-page",
    )


@callback(
    Output(ids.USAGE_BODY, "children"),
    Input(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
)
def load_usage(view_data: dict | None, auth: dict | None) -> Any:
    """Totals per category and overall, then the stacked daily bars (one cached call)."""
    view = ViewState.from_dict(view_data)
    if not view.org:
        raise PreventUpdate
    return shown(
        lambda: session.cached_call(session.api_for(auth), "org_usage", view.org, _usage_query(view)), _usage_body
    )


def _usage_body(rows: Any) -> list[Any]:
    """The totals card and the daily chart of the usage rows."""
    frame = comp.usage_frame(rows)
    totals = comp.usage_totals(frame)
    tiles = comp.usage_totals_grid(totals, item_id=lambda field: f"{ids.USAGE_TOTAL_PREFIX}-{field}")
    if totals["event_count"] == 0:
        graph: Any = empty_state(
            "No events in this range",
            "Nothing was recorded for this organization's sites on these dates. Pick a wider range, or check that "
            "the tracking script is installed.",
        )
    else:
        graph = chart(comp.usage_figure(frame), id=ids.USAGE_CHART)
    days = len(frame)
    return [
        card(html.Div(tiles, id=ids.USAGE_TOTALS), title=f"Totals over {days} day{'' if days == 1 else 's'}"),
        card(graph, title="Events per day"),
    ]


@callback(
    Output(ids.NAVIGATE, "href", allow_duplicate=True),
    Input(ids.USAGE_ORG, "value"),
    State(ids.VIEW, "data"),
    prevent_initial_call=True,
)
def pick_org(org_id: str | None, view_data: dict | None) -> str:
    """Choosing another organization shows its usage (the choice goes into the URL)."""
    view = ViewState.from_dict(view_data)
    if not org_id or org_id == view.org:
        raise PreventUpdate
    return dash.get_relative_path("/usage") + view.to_search(org=org_id)


@callback(
    Output(ids.USAGE_CSV_DOWNLOAD, "data"),
    Output(ids.USAGE_CSV_STATUS, "children"),
    Input(ids.USAGE_CSV, "n_clicks"),
    State(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def download_usage(clicks: int, view_data: dict | None, auth: dict | None) -> tuple[Any, Any]:
    """The daily rows of the view as CSV (one row per day, nine categories and the total)."""
    view = ViewState.from_dict(view_data)
    if not clicks or not view.org:
        raise PreventUpdate
    name = f"usage-{view.org}-{view.start_date}-{view.end_date}"
    return downloaded(
        lambda: session.cached_call(session.api_for(auth), "org_usage", view.org, _usage_query(view)),
        lambda rows: csv_download(comp.usage_frame(rows), name),
    )
