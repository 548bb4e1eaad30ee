"""Overview: the page a site opens on. Headline numbers against the previous period, the main chart, breakdown
panels whose rows add filters, and a live-visitors badge that refreshes itself."""

from __future__ import annotations

from typing import Any

import dash
from dash import ALL, MATCH, Input, Output, State, callback, ctx, dcc, html
from dash.exceptions import PreventUpdate

from dashboard import ids, session
from dashboard.components import overview as ui
from dashboard.components.common import card, chart, failure_mark, loading, page_header
from dashboard.components.frame import analytics_frame, page_gate
from dashboard.loads import charted, shown
from dashboard.state import ViewState

dash.register_page(
    __name__,
    path="/overview",
    title="Overview · sitelens",
    name="Overview",
    nav_label="Overview",
    nav_scope="site",
    order=0.5,  # right after Sites: the first page of a site
)

LIVE_MINUTES = 5
LIVE_REFRESH_MS = 30_000
PANEL_LIMIT = 10


def _panel(name: str, tabs: tuple[tuple[str, str], ...]) -> Any:
    """One breakdown panel: its tabs and the rows of the chosen tab."""
    picker = dcc.Tabs(
        id={"type": ids.OVERVIEW_TABS_TYPE, "panel": name},
        value=tabs[0][0],
        children=[dcc.Tab(label=label, value=value, className="panel-tab") for value, label in tabs],
        className="panel-tabs",
    )
    body = loading(None, {"type": ids.OVERVIEW_PANEL_TYPE, "panel": name})
    return card([picker, body], title=name, class_name="overview-panel")


def layout(auth: dict | None = None, share: dict | None = None, browser_zone: str | None = None, **query: Any) -> Any:
    """The overview of the URL's site, range and filters."""
    view, gate = page_gate(auth, browser_zone, "/overview", query)
    if gate is not None or view is None:
        return gate
    bucket = view.bucket if view.bucket in ui.BUCKETS else ui.default_bucket(view.days)
    metric_picker = dcc.Dropdown(
        id=ids.OVERVIEW_METRIC,
        options=[{"label": label, "value": key} for key, label, _, _ in ui.HEADLINES],
        value="users",
        clearable=False,
        searchable=False,
        className="overview-metric",
    )
    return html.Div(
        [
            page_header(
                "Overview",
                "Users, sessions and where they came from, against the previous period.",
                actions=html.Div(
                    [
                        html.Span(id=ids.OVERVIEW_LIVE),
                        dcc.Interval(id=ids.OVERVIEW_LIVE_TICK, interval=LIVE_REFRESH_MS),
                    ],
                    className="live-badge",
                ),
            ),
            analytics_frame(view, overview=False),
            loading(ui.headline_tiles(), ids.OVERVIEW_TILES),
            dcc.Store(id=ids.OVERVIEW_SHOWN),
            card(
                chart(
                    height=ui.SERIES_HEIGHT,
                    id=ids.OVERVIEW_CHART,
                    className="overview-chart",
                    style={"width": "100%"},
                ),
                title="Over time",
                actions=html.Div([metric_picker, ui.bucket_picker(bucket)], className="overview-chart-controls"),
            ),
            html.Div(
                [_panel(name, tabs) for name, tabs in ui.PANELS.items()]
                + [card(loading(None, ids.OVERVIEW_GOALS), title="Goals", class_name="overview-panel")],
                className="overview-panels",
            ),
        ],
        className="page page-overview",
    )


@callback(
    Output(ids.OVERVIEW_TILES, "children"),
    Output(ids.OVERVIEW_SHOWN, "data"),
    Input(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
)
def load_tiles(view_data: dict | None, auth: dict | None) -> tuple[Any, dict | None]:
    """The headline numbers of the range and of the previous period (one call).

    The chart, panels and goals start loading once these are on screen (``OVERVIEW_SHOWN``, set whether the
    numbers came or their failure did): the numbers a person reads first do not share the server with the
    heavier breakdowns, which follow at once.
    """
    view = ViewState.from_dict(view_data)
    if view.site_id is None:
        raise PreventUpdate
    tiles = shown(
        lambda: session.cached_call(session.api_for(auth), "overview_compared", view.site_id, view.query()),
        lambda both: ui.headline_tiles(both.current, both.previous),
    )
    return tiles, view_data


@callback(
    Output(ids.OVERVIEW_CHART, "figure"),
    Input(ids.OVERVIEW_SHOWN, "data"),
    Input(ids.OVERVIEW_METRIC, "value"),
    State(ids.AUTH, "data"),
)
def load_chart(view_data: dict | None, metric: str | None, auth: dict | None) -> Any:
    """The chosen metric per bucket, this period and the previous one."""
    view = ViewState.from_dict(view_data)
    if view.site_id is None:
        raise PreventUpdate
    bucket = view.bucket if view.bucket in ui.BUCKETS else ui.default_bucket(view.days)
    return charted(
        lambda: session.cached_call(
            session.api_for(auth), "overview_time_series_compared", view.site_id, view.query(), bucket=bucket
        ),
        lambda series: ui.series_figure(
            series.current, series.previous, metric or "users", bucket, time_zone=view.time_zone, ends=view.range_ends
        ),
    )


@callback(
    Output(ids.FRAME_HREF, "data", allow_duplicate=True),
    Input(ids.OVERVIEW_BUCKET, "value"),
    State(ids.VIEW, "data"),
    prevent_initial_call=True,
)
def pick_bucket(bucket: str | None, view_data: dict | None) -> str:
    """A bucket chosen goes into the URL like the other controls."""
    view = ViewState.from_dict(view_data)
    if bucket is None or bucket == view.bucket:
        raise PreventUpdate
    return dash.get_relative_path("/overview") + view.to_search(bucket=bucket)


@callback(
    Output({"type": ids.OVERVIEW_PANEL_TYPE, "panel": MATCH}, "children"),
    Input({"type": ids.OVERVIEW_TABS_TYPE, "panel": MATCH}, "value"),
    Input(ids.OVERVIEW_SHOWN, "data"),
    State(ids.AUTH, "data"),
)
def load_panel(parameter: str, view_data: dict | None, auth: dict | None) -> Any:
    """The top values of the panel's chosen tab (one metric call)."""
    view = ViewState.from_dict(view_data)
    if view.site_id is None or not parameter:
        raise PreventUpdate

    def draw(page: Any) -> Any:
        rows = ui.panel_rows(parameter, page.rows)
        if parameter == "country" and page.rows:
            # plotly.js would fetch the world's outline from a CDN; the dashboard serves it from its assets.
            return [ui.country_map(page.rows, dash.get_asset_url("topojson/")), rows]
        return rows

    return shown(
        lambda: session.cached_call(
            session.api_for(auth), "metric", view.site_id, parameter, view.query(), limit=PANEL_LIMIT
        ),
        draw,
    )


@callback(Output(ids.OVERVIEW_GOALS, "children"), Input(ids.OVERVIEW_SHOWN, "data"), State(ids.AUTH, "data"))
def load_goals(view_data: dict | None, auth: dict | None) -> Any:
    """Conversions and conversion rate of every goal over the view."""
    view = ViewState.from_dict(view_data)
    if view.site_id is None:
        raise PreventUpdate
    return shown(lambda: session.all_goals(session.api_for(auth), view), ui.goal_rows)


@callback(
    Output(ids.FRAME_HREF, "data", allow_duplicate=True),
    Input({"type": ids.OVERVIEW_ROW_TYPE, "parameter": ALL, "value": ALL}, "n_clicks"),
    State(ids.VIEW, "data"),
    prevent_initial_call=True,
)
def add_row_filter(clicks: list[int | None], view_data: dict | None) -> str:
    """Clicking a panel row adds "parameter equals value" to the URL's filters."""
    trigger = ctx.triggered_id
    if not isinstance(trigger, dict) or not any(c for c in clicks if c) or not ctx.triggered[0].get("value"):
        raise PreventUpdate  # rows drawn anew fire with no click
    view = ViewState.from_dict(view_data)
    wanted = {"parameter": trigger["parameter"], "type": "equals", "value": [trigger["value"]]}
    if wanted in [dict(f) for f in view.filters]:
        raise PreventUpdate
    return dash.get_relative_path("/overview") + view.to_search(filters=[*view.filters, wanted], page=1)


@callback(
    Output(ids.OVERVIEW_LIVE, "children"),
    Input(ids.OVERVIEW_LIVE_TICK, "n_intervals"),
    State(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
)
def refresh_live(_: int | None, view_data: dict | None, auth: dict | None) -> Any:
    """Visitors of the last minutes, asked again on every tick (never cached: it is live)."""
    view = ViewState.from_dict(view_data)
    if view.site_id is None:
        raise PreventUpdate
    from api_client import APIError

    try:
        live = session.api_for(auth).live(view.site_id, LIVE_MINUTES)
    except APIError as exc:
        return failure_mark(exc, "live count unavailable")
    return ui.live_badge(live)
