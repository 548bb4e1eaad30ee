"""Errors: JavaScript errors grouped by message, a trend per group, the chosen group's chart and its occurrences.

The URL carries the view (dates, zone, filters), the groups ``page`` and the chosen group (``error``), so a copied
address opens the same group. The chart's bucket is kept in the URL too, without re-rendering the page.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import dash
from dash import ALL, Input, Output, State, callback, clientside_callback, ctx, dcc, html
from dash.exceptions import PreventUpdate

from dashboard import ids, prefill, session
from dashboard.components import js_errors as comp
from dashboard.components.common import (
    alert,
    card,
    chart,
    csv_button,
    csv_download,
    empty_state,
    error_view,
    failure_mark,
    loading,
    page_header,
)
from dashboard.components.frame import analytics_frame, page_gate
from dashboard.components.pager import button_pager, link_pager, total_pages
from dashboard.loads import charted, downloaded
from dashboard.state import ViewState

if TYPE_CHECKING:
    from api_client import ErrorNamePage

dash.register_page(
    __name__,
    path="/errors",
    title="Errors · sitelens",
    name="Errors",
    nav_label="Errors",
    nav_scope="site",
    order=40,
)

GROUPS_PER_PAGE = 10
OCCURRENCES_PER_PAGE = 20
CSV_PAGE_SIZE = 100
CSV_MAX_PAGES = 50  # at most 5,000 rows per download
TREND_WORKERS = 4


def layout(auth: dict | None = None, share: dict | None = None, browser_zone: str | None = None, **query: Any) -> Any:
    """The frame, the error groups and (when a group is chosen) its chart and occurrences."""
    view, gate = page_gate(auth, browser_zone, "/errors", query)
    if gate is not None or view is None:
        return gate
    missing = session.site_gate(auth, view)
    if missing is not None:
        return missing
    # Groups already in the response cache are drawn right here (their sparklines load next); otherwise the
    # ids.ERRORS_GROUPS_LOAD store makes a callback load them.
    groups_body, messages = _cached_groups(auth, view)
    return html.Div(
        [
            page_header(
                "Errors",
                "JavaScript errors grouped by message. Choose a group to see when it happens and where.",
                actions=csv_button(
                    ids.ERRORS_GROUPS_CSV,
                    ids.ERRORS_GROUPS_CSV_DOWNLOAD,
                    "Download groups",
                    status_id=ids.ERRORS_GROUPS_CSV_STATUS,
                ),
            ),
            # A first view loads the groups before the strip, so the strip's queries do not slow the list down.
            analytics_frame(view, overview_body=prefill.overview(auth, view), overview_after_body=groups_body is None),
            dcc.Store(id=ids.ERRORS_GROUP_MESSAGES, data=messages),
            # The group a click chose (the view with its ``error``): only the detail redraws, not the page.
            dcc.Store(id=ids.ERRORS_CHOSEN),
            # The group chart's library loads while the browser is idle (assets/sitelens.js), not at the first click.
            html.Div(className="preload-charts", hidden=True),
            card(loading(groups_body, ids.ERRORS_GROUPS), title="Error groups"),
            *([dcc.Store(id=ids.ERRORS_GROUPS_LOAD, data=view.to_dict())] if groups_body is None else []),
            # Without a chosen group the detail is a fixed hint: no callback needed to show it.
            html.Div(_no_group_chosen() if not view.error else None, id=ids.ERRORS_DETAIL),
            *([dcc.Store(id=ids.ERRORS_DETAIL_LOAD, data=view.to_dict())] if view.error else []),
        ],
        className="page errors-page",
    )


def _no_group_chosen() -> Any:
    return card(
        html.P(
            "Choose an error group above to see it over time and every occurrence with its stack trace.",
            className="muted",
        ),
        title="Error detail",
    )


def _cached_groups(auth: dict | None, view: ViewState) -> tuple[Any, list[str] | None]:
    """The groups list of the view drawn from cached answers, and its messages; ``(None, None)`` when not cached.

    The sparklines always follow in their own callback (from the cache when they are there): ten small charts are
    some 300 elements, and the list shows sooner without them.
    """
    api = session.api_for(auth)
    site = session.peek(api, "site", view.site_id)
    groups = session.peek(api, "error_names_page", view.site_id, view.query(), page=view.page, limit=GROUPS_PER_PAGE)
    if site is None or groups is None:
        return None, None
    return _groups_body(site, view, groups)


def _groups_body(site: Any, view: ViewState, result: ErrorNamePage) -> tuple[Any, list[str]]:
    """The groups list of one ``ErrorNamePage`` (with "Page n of m", the number of groups and the tracking notice) and
    its messages by row.

    The rows show no sparkline yet: an ``ids.ERRORS_TRENDS_LOAD`` store beside the list makes ``load_trends`` fetch
    them, so the list never waits for one time series per group.
    """
    notice = _tracking_notice(site, view)
    href = lambda page: dash.get_relative_path("/errors") + view.to_search(page=page)  # noqa: E731
    groups, total, pages = result.data, result.meta.total, result.meta.total_pages
    if not groups:
        if view.page > 1:
            body: Any = [
                empty_state("No more error groups", "This page is past the last group."),
                link_pager(view.page, pages, href, total=total, noun="error group"),
            ]
        else:
            body = empty_state(
                "No errors in this range",
                "No JavaScript errors were recorded for these dates and filters. Widen the range or remove a filter.",
            )
        return [notice, body], []
    listing = comp.error_groups_list(
        groups,
        [None] * len(groups),
        time_zone=view.time_zone,
        selected=view.error,
        row_id=lambda index: {"type": ids.ERRORS_GROUP_TYPE, "index": index},
        trend_id=lambda index: {"type": ids.ERRORS_TREND_TYPE, "index": index},
    )
    pager = link_pager(view.page, pages, href, total=total, noun="error group")
    messages = [group.value for group in groups]
    return [notice, listing, pager, dcc.Store(id=ids.ERRORS_TRENDS_LOAD, data=messages)], messages


def _trends(api: Any, view: ViewState, messages: list[str], bucket: str) -> list[Any]:
    """One bucketed series per group, fetched side by side (each is a separate query on the server)."""
    app = session.current_state().server

    def fetch(message: str) -> Any:
        with app.app_context():
            return session.cached_call(api, "error_time_series", view.site_id, message, view.query(), bucket=bucket)

    with ThreadPoolExecutor(max_workers=TREND_WORKERS) as pool:
        return list(pool.map(fetch, messages))


def _tracking_notice(site: Any, view: ViewState) -> Any:
    """The site does not capture errors: say so, and where to turn it on."""
    if site.track_errors:
        return None
    where = (
        dcc.Link("Turn it on in site settings.", href=dash.get_relative_path("/settings") + f"?site={site.site_id}")
        if site.is_owner
        else "An admin or owner can turn it on in site settings."
    )
    return html.Div(
        alert(["Error tracking is off for this site, so new errors are not recorded. ", where], "info"),
        className="errors-tracking-off",
    )


@callback(
    Output(ids.ERRORS_GROUPS, "children"),
    Output(ids.ERRORS_GROUP_MESSAGES, "data"),
    Output({"type": ids.OVERVIEW_AFTER_TYPE, "index": ALL}, "data"),
    Input(ids.ERRORS_GROUPS_LOAD, "data"),
    State(ids.AUTH, "data"),
)
def load_groups(view_data: dict | None, auth: dict | None) -> tuple:
    """One page of error groups, when the layout had no cached answer to draw them from; their sparklines and the
    overview strip (when the layout left it waiting) follow."""
    view = ViewState.from_dict(view_data)
    if view.site_id is None:
        raise PreventUpdate
    from api_client import APIError

    after = [view_data] * len(ctx.outputs_list[2])
    api = session.api_for(auth)
    try:
        site = session.cached_call(api, "site", view.site_id)
        groups = session.cached_call(
            api, "error_names_page", view.site_id, view.query(), page=view.page, limit=GROUPS_PER_PAGE
        )
    except APIError as exc:
        return error_view(exc), [], after
    return (*_groups_body(site, view, groups), after)


@callback(
    Output({"type": ids.ERRORS_TREND_TYPE, "index": ALL}, "children"),
    Input(ids.ERRORS_TRENDS_LOAD, "data"),
    State(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
)
def load_trends(messages: list | None, view_data: dict | None, auth: dict | None) -> list:
    """The sparkline of every listed group, once the list is on screen (one time series per group)."""
    view = ViewState.from_dict(view_data)
    cells = ctx.outputs_list
    if view.site_id is None or not messages or len(messages) != len(cells):
        raise PreventUpdate
    from api_client import APIError

    bucket = comp.trend_bucket(view.start_date, view.end_date)
    try:
        trends = _trends(session.api_for(auth), view, list(messages), bucket)
    except APIError as exc:
        return [failure_mark(exc) for _ in cells]  # the list and its numbers stay; each trend says it is missing
    return [comp.group_sparkline(trend, view.time_zone, ends=view.range_ends) for trend in trends]


# A click on a group opens it without redrawing the page: the URL gets its ``error`` (pushState, outside Dash's
# router, so the list and its sparklines stay), the row is marked, and the detail slot scrolls into view while the
# detail loads. Back in the browser goes through the router as usual.
clientside_callback(
    """
    function(clicks, messages, view) {
        var context = window.dash_clientside.callback_context;
        var pressed = (context.triggered || []).filter(function (t) { return t.value; });
        if (!pressed.length || !messages || !view) { return window.dash_clientside.no_update; }
        var propId = pressed[0].prop_id;
        var index = JSON.parse(propId.slice(0, propId.lastIndexOf("."))).index;
        if (typeof index !== "number" || index < 0 || index >= messages.length) {
            return window.dash_clientside.no_update;
        }
        var url = new URL(window.location.href);
        url.searchParams.set("error", messages[index]);
        url.searchParams.delete("bucket");
        window.history.pushState(window.history.state, "", url.toString());
        document.querySelectorAll(".error-group-selected").forEach(function (row) {
            row.classList.remove("error-group-selected");
        });
        var row = document.querySelector(".error-group[data-index='" + index + "']");
        if (row) { row.classList.add("error-group-selected"); }
        var slot = document.getElementById("errors-detail");
        if (slot) { slot.scrollIntoView({block: "start"}); }
        return Object.assign({}, view, {error: messages[index], bucket: null, at: Date.now()});
    }
    """,
    Output(ids.ERRORS_CHOSEN, "data"),
    Input({"type": ids.ERRORS_GROUP_TYPE, "index": ALL}, "n_clicks"),
    State(ids.ERRORS_GROUP_MESSAGES, "data"),
    State(ids.VIEW, "data"),
    prevent_initial_call=True,
)


def _find_group(api: Any, view: ViewState, message: str) -> Any | None:
    """The chosen group's row (class, totals): on the page shown, else among the first few hundred groups."""
    # The same call as the list's, so the page's own answer comes from the cache.
    shown = session.cached_call(
        api, "error_names_page", view.site_id, view.query(), page=view.page, limit=GROUPS_PER_PAGE
    )
    for group in shown.data:
        if group.value == message:
            return group
    for page in range(1, 4):
        rows = session.cached_call(api, "error_names", view.site_id, view.query(), page=page, limit=CSV_PAGE_SIZE)
        for group in rows:
            if group.value == message:
                return group
        if len(rows) < CSV_PAGE_SIZE:
            break
    return None


@callback(
    Output(ids.ERRORS_DETAIL, "children"),
    Input(ids.ERRORS_DETAIL_LOAD, "data"),
    State(ids.AUTH, "data"),
)
def load_detail(view_data: dict | None, auth: dict | None) -> Any:
    """The group the URL chose, when the page opens with one."""
    return _detail(ViewState.from_dict(view_data), auth)


@callback(
    Output(ids.ERRORS_DETAIL, "children", allow_duplicate=True),
    Input(ids.ERRORS_CHOSEN, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def open_detail(chosen: dict | None, auth: dict | None) -> Any:
    """The group a click chose: only the detail redraws (the list and its sparklines stay)."""
    if not chosen or not chosen.get("error"):
        raise PreventUpdate
    return _detail(ViewState.from_dict(chosen), auth)


def _detail(view: ViewState, auth: dict | None) -> Any:
    """The chosen group: class and full message, the over-time chart with its bucket, and its first occurrences.

    One callback draws all of it (one round trip, one render); the view it was drawn for rides along in
    ``ids.ERRORS_DETAIL_VIEW`` for the bucket, pager and CSV callbacks.
    """
    if view.site_id is None:
        raise PreventUpdate
    if not view.error:
        return _no_group_chosen()
    from api_client import APIError

    api = session.api_for(auth)
    bucket = comp.chart_bucket(view.bucket, view.days)
    try:
        group = _find_group(api, view, view.error)
        series = session.cached_call(api, "error_time_series", view.site_id, view.error, view.query(), bucket=bucket)
        occurrences = _occurrences(api, view, group, 1) if group is not None else None
    except APIError as exc:
        return card(error_view(exc), title="Error detail")
    if group is None:
        return card(
            empty_state("This error did not happen in this range", "Widen the dates or choose another group."),
            title="Error detail",
        )
    return card(
        [
            dcc.Store(id=ids.ERRORS_DETAIL_VIEW, data=view.to_dict()),
            dcc.Store(id=ids.ERRORS_OCCURRENCES_PAGE, data=1),
            comp.error_detail_header(group),
            html.Div(
                [html.H3("Occurrences over time"), comp.bucket_selector(ids.ERRORS_BUCKET, bucket, view.days)],
                className="errors-chart-head",
            ),
            chart(
                comp.errors_time_figure(series, view.time_zone, bucket, ends=view.range_ends),
                id=ids.ERRORS_CHART,
                className="errors-chart",
            ),
            html.Div(
                [
                    html.H3("Occurrences"),
                    csv_button(
                        ids.ERRORS_OCCURRENCES_CSV,
                        ids.ERRORS_OCCURRENCES_CSV_DOWNLOAD,
                        "Download occurrences",
                        status_id=ids.ERRORS_OCCURRENCES_CSV_STATUS,
                    ),
                ],
                className="errors-occurrences-head",
            ),
            loading(occurrences, ids.ERRORS_OCCURRENCES),
        ],
        title="Error detail",
        class_name="errors-detail",
    )


def _occurrences(api: Any, view: ViewState, group: Any, page: int) -> list[Any]:
    """One page of the chosen group's occurrences, newest first, with its count and pager."""
    events = session.cached_call(
        api, "error_events", view.site_id, view.error, view.query(), page=page, limit=OCCURRENCES_PER_PAGE
    )
    pages = total_pages(int(group.count), OCCURRENCES_PER_PAGE)
    shown_from = (page - 1) * OCCURRENCES_PER_PAGE + 1
    label = f"{shown_from:,}–{shown_from + len(events) - 1:,} of {int(group.count):,}" if events else ""
    return [
        html.Div(label, className="muted occurrences-count"),
        comp.occurrences_list(events, view.time_zone)
        if events
        else empty_state("No occurrences on this page", "Go back a page."),
        button_pager(page, pages, prev_id=ids.ERRORS_OCCURRENCES_PREV, next_id=ids.ERRORS_OCCURRENCES_NEXT),
    ]


# A drawn detail comes into view (a click scrolls as it starts; the page grows once the detail is drawn).
clientside_callback(
    """
    function(view) {
        var slot = document.getElementById("errors-detail");
        if (view && view.error && slot) { slot.scrollIntoView({block: "start"}); }
        return window.dash_clientside.no_update;
    }
    """,
    Output(ids.ERRORS_DETAIL_VIEW, "id"),
    Input(ids.ERRORS_DETAIL_VIEW, "data"),
)


@callback(
    Output(ids.ERRORS_CHART, "figure"),
    Input(ids.ERRORS_BUCKET, "value"),
    State(ids.ERRORS_DETAIL_VIEW, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def change_bucket(bucket: str | None, view_data: dict | None, auth: dict | None) -> Any:
    """Redraw the chart with the chosen bucket (one cached call)."""
    view = ViewState.from_dict(view_data)
    if not bucket or view.site_id is None or not view.error or not comp.bucket_allowed(bucket, view.days):
        raise PreventUpdate
    return charted(
        lambda: session.cached_call(
            session.api_for(auth), "error_time_series", view.site_id, view.error, view.query(), bucket=bucket
        ),
        lambda series: comp.errors_time_figure(series, view.time_zone, bucket, ends=view.range_ends),
    )


# The bucket also goes into the address bar, so a copied URL opens the same chart; replaceState does not navigate.
clientside_callback(
    """
    function(bucket) {
        if (!bucket) { return window.dash_clientside.no_update; }
        var url = new URL(window.location.href);
        if (url.searchParams.get("bucket") === bucket) { return window.dash_clientside.no_update; }
        url.searchParams.set("bucket", bucket);
        window.history.replaceState(window.history.state, "", url.toString());
        return window.dash_clientside.no_update;
    }
    """,
    Output(ids.ERRORS_BUCKET, "id"),
    Input(ids.ERRORS_BUCKET, "value"),
    prevent_initial_call=True,
)


@callback(
    Output(ids.ERRORS_OCCURRENCES, "children"),
    Input(ids.ERRORS_OCCURRENCES_PAGE, "data"),
    State(ids.ERRORS_DETAIL_VIEW, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def load_occurrences(page: int | None, view_data: dict | None, auth: dict | None) -> Any:
    """Another page of the chosen group's occurrences (the first comes with the detail)."""
    view = ViewState.from_dict(view_data)
    if view.site_id is None or not view.error:
        raise PreventUpdate
    from api_client import APIError

    api = session.api_for(auth)
    try:
        group = _find_group(api, view, view.error)
        if group is None:
            raise PreventUpdate
        return _occurrences(api, view, group, max(int(page or 1), 1))
    except APIError as exc:
        return error_view(exc)


@callback(
    Output(ids.ERRORS_OCCURRENCES_PAGE, "data"),
    Input(ids.ERRORS_OCCURRENCES_PREV, "n_clicks"),
    Input(ids.ERRORS_OCCURRENCES_NEXT, "n_clicks"),
    State(ids.ERRORS_OCCURRENCES_PAGE, "data"),
    prevent_initial_call=True,
)
def turn_occurrences_page(_prev: int, _next: int, page: int | None) -> int:
    """Previous / next page of occurrences (the buttons are re-created on each page, so only real clicks count)."""
    if not ctx.triggered or not ctx.triggered[0].get("value"):
        raise PreventUpdate
    page = int(page or 1)
    return max(page - 1, 1) if ctx.triggered_id == ids.ERRORS_OCCURRENCES_PREV else page + 1


def _all_pages(fetch: Any) -> list[Any]:
    rows: list[Any] = []
    for page in range(1, CSV_MAX_PAGES + 1):
        batch = fetch(page)
        rows.extend(batch)
        if len(batch) < CSV_PAGE_SIZE:
            break
    return rows


@callback(
    Output(ids.ERRORS_GROUPS_CSV_DOWNLOAD, "data"),
    Output(ids.ERRORS_GROUPS_CSV_STATUS, "children"),
    Input(ids.ERRORS_GROUPS_CSV, "n_clicks"),
    State(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def download_groups(clicks: int, view_data: dict | None, auth: dict | None) -> tuple[Any, Any]:
    """Every error group of the view (dates, zone and filters applied) as CSV."""
    if not clicks:
        raise PreventUpdate
    view = ViewState.from_dict(view_data)
    api = session.api_for(auth)
    name = f"errors-site{view.site_id}-{view.start_date}-{view.end_date}"
    return downloaded(
        lambda: _all_pages(
            lambda page: session.cached_call(
                api, "error_names", view.site_id, view.query(), page=page, limit=CSV_PAGE_SIZE
            )
        ),
        lambda rows: csv_download(comp.error_groups_frame(rows), name),
    )


@callback(
    Output(ids.ERRORS_OCCURRENCES_CSV_DOWNLOAD, "data"),
    Output(ids.ERRORS_OCCURRENCES_CSV_STATUS, "children"),
    Input(ids.ERRORS_OCCURRENCES_CSV, "n_clicks"),
    State(ids.ERRORS_DETAIL_VIEW, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def download_occurrences(clicks: int, view_data: dict | None, auth: dict | None) -> tuple[Any, Any]:
    """Every occurrence of the chosen group as CSV, times in the view's zone and in UTC."""
    view = ViewState.from_dict(view_data)
    if not clicks or not view.error:
        raise PreventUpdate
    api = session.api_for(auth)
    name = f"error-occurrences-site{view.site_id}-{view.start_date}-{view.end_date}"
    return downloaded(
        lambda: _all_pages(
            lambda page: session.cached_call(
                api, "error_events", view.site_id, view.error, view.query(), page=page, limit=CSV_PAGE_SIZE
            )
        ),
        lambda rows: csv_download(comp.error_events_frame(rows, view.time_zone), name),
    )
