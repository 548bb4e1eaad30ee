"""Funnels: build 2..20 steps (a page pattern or an event, with an optional property), see how many sessions reach
each one in order, and compare the view's segment with another one."""

from __future__ import annotations

from typing import Any

import dash
from dash import ALL, Input, Output, State, callback, dcc, html
from dash.exceptions import PreventUpdate

from dashboard import ids, session
from dashboard.components import funnels as funnel_ui
from dashboard.components.common import alert, card, loading, page_header
from dashboard.components.frame import analytics_frame, filter_label, page_gate
from dashboard.loads import shown
from dashboard.state import FILTER_PARAMETERS, ViewState

dash.register_page(
    __name__,
    path="/funnels",
    title="Funnels · sitelens",
    name="Funnels",
    nav_label="Funnels",
    nav_scope="site",
    order=2.5,
)

STARTING_STEPS = [{"type": "page", "value": "/"}, {"type": "page", "value": ""}]


# What the result card says before the first analysis, instead of an empty box.
NOT_YET = html.P(
    "Set the steps above, then choose Analyze. A session counts at a step when it reached it after the step before, "
    "within the chosen range.",
    className="empty-hint funnel-not-yet",
)


def _field(field: str) -> dict[str, Any]:
    return {"type": ids.FUNNEL_STEP_TYPE, "field": field, "index": ALL}


def layout(auth: dict | None = None, share: dict | None = None, browser_zone: str | None = None, **query: Any) -> Any:
    """The step builder and, once analysed, the funnel."""
    view, gate = page_gate(auth, browser_zone, "/funnels", query)
    if gate is not None or view is None:
        return gate
    segment = html.Div(
        [
            html.Span("Compare with sessions where", className="muted"),
            dcc.Dropdown(
                id=ids.FUNNEL_SEGMENT_PARAMETER,
                options=[{"label": p.replace("_", " "), "value": p} for p in FILTER_PARAMETERS],
                placeholder="(no comparison)",
                className="funnel-segment-parameter",
            ),
            html.Span("is", className="muted"),
            dcc.Input(id=ids.FUNNEL_SEGMENT_VALUE, placeholder="value", className="input"),
        ],
        className="funnel-segment",
    )
    actions = html.Div(
        [
            html.Button("Add step", id=ids.FUNNEL_ADD, n_clicks=0, className="button button-secondary"),
            html.Button("Remove last", id=ids.FUNNEL_REMOVE, n_clicks=0, className="button button-ghost"),
            html.Button("Analyze", id=ids.FUNNEL_ANALYZE, n_clicks=0, className="button button-primary"),
        ],
        className="funnel-actions",
    )
    return html.Div(
        [
            page_header("Funnels", "How many sessions reach each step, in order, and where they drop off."),
            analytics_frame(view, overview=False),
            card(
                [html.Div(funnel_ui.step_rows(STARTING_STEPS), id=ids.FUNNEL_STEPS), segment, actions],
                title="Steps",
            ),
            card(loading(NOT_YET, ids.FUNNEL_RESULT), title="Funnel"),
        ],
        className="page page-funnels",
    )


@callback(
    Output(ids.FUNNEL_STEPS, "children"),
    Input(ids.FUNNEL_ADD, "n_clicks"),
    Input(ids.FUNNEL_REMOVE, "n_clicks"),
    State(_field("kind"), "value"),
    State(_field("value"), "value"),
    State(_field("key"), "value"),
    State(_field("prop"), "value"),
    prevent_initial_call=True,
)
def edit_steps(add: int, remove: int, kinds: list, values: list, keys: list, props: list) -> list:
    """Add a step (up to 20) or remove the last one (down to 2), keeping what was typed."""
    steps = funnel_ui.steps_of(kinds, values, keys, props)
    if dash.ctx.triggered_id == ids.FUNNEL_ADD and len(steps) < funnel_ui.MAX_STEPS:
        steps.append({"type": "page", "value": ""})
    elif dash.ctx.triggered_id == ids.FUNNEL_REMOVE and len(steps) > funnel_ui.MIN_STEPS:
        steps.pop()
    else:
        raise PreventUpdate
    return funnel_ui.step_rows(steps)


@callback(
    Output(ids.FUNNEL_RESULT, "children"),
    Input(ids.FUNNEL_ANALYZE, "n_clicks"),
    State(_field("kind"), "value"),
    State(_field("value"), "value"),
    State(_field("key"), "value"),
    State(_field("prop"), "value"),
    State(ids.FUNNEL_SEGMENT_PARAMETER, "value"),
    State(ids.FUNNEL_SEGMENT_VALUE, "value"),
    State(ids.VIEW, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def analyze(
    clicks: int,
    kinds: list,
    values: list,
    keys: list,
    props: list,
    parameter: str | None,
    segment_value: str | None,
    view_data: dict | None,
    auth: dict | None,
) -> Any:
    """The funnel of the view's segment, and of the comparison segment when one is given (one call each)."""
    view = ViewState.from_dict(view_data)
    if not clicks or view.site_id is None:
        raise PreventUpdate
    steps = funnel_ui.steps_of(kinds, values, keys, props)
    if any(not s["value"] for s in steps):
        return alert("Every step needs a page pattern or an event name.", kind="warning")
    api = session.api_for(auth)
    base = "All sessions" if not view.filters else "This view"
    segments = [(base, view)]
    segment = (segment_value or "").strip()
    if parameter and segment:
        extra = {"parameter": parameter, "type": "equals", "value": [segment]}
        segments.append((filter_label(extra), view.replace(filters=[*view.filters, extra])))
    return shown(
        lambda: [(name, session.cached_call(api, "funnel", view.site_id, steps, v.query())) for name, v in segments],
        funnel_ui.funnel_result,
    )
