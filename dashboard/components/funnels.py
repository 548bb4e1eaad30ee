"""Pure layout factories of the funnel builder: step rows, the funnel chart and its table (figures from the API)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from dash import dcc, html

from dashboard import ids
from dashboard.components.common import chart, format_number, format_percent, value_of

__all__ = ["MAX_STEPS", "MIN_STEPS", "funnel_result", "step_rows", "steps_of"]

MIN_STEPS, MAX_STEPS = 2, 20
KINDS = [{"label": "Page", "value": "page"}, {"label": "Event", "value": "event"}]


def _field(field: str, index: int) -> dict[str, Any]:
    return {"type": ids.FUNNEL_STEP_TYPE, "field": field, "index": index}


def step_rows(steps: Sequence[dict[str, Any]]) -> list[html.Div]:
    """One row per step: page or event, its pattern or name, and an optional property key and value."""
    rows = []
    for i, step in enumerate(steps):
        rows.append(
            html.Div(
                [
                    html.Span(f"{i + 1}", className="funnel-step-number"),
                    dcc.Dropdown(
                        id=_field("kind", i),
                        options=KINDS,
                        value=step.get("type", "page"),
                        clearable=False,
                        searchable=False,
                        className="funnel-step-kind",
                    ),
                    dcc.Input(
                        id=_field("value", i),
                        value=step.get("value", ""),
                        placeholder="/pricing or /blog/* (page), signup (event)",
                        className="input funnel-step-value",
                        debounce=False,
                    ),
                    dcc.Input(
                        id=_field("key", i),
                        value=step.get("eventPropertyKey", ""),
                        placeholder="property (optional)",
                        className="input funnel-step-prop",
                    ),
                    dcc.Input(
                        id=_field("prop", i),
                        value=step.get("eventPropertyValue", ""),
                        placeholder="value",
                        className="input funnel-step-prop",
                    ),
                ],
                className="funnel-step",
            )
        )
    return rows


def steps_of(kinds: Sequence[Any], values: Sequence[Any], keys: Sequence[Any], props: Sequence[Any]) -> list[dict]:
    """The API's step objects from the rows' values (a property only when both its key and value are given)."""
    steps = []
    for kind, value, key, prop in zip(kinds, values, keys, props, strict=False):
        step: dict[str, Any] = {"type": kind or "page", "value": (value or "").strip()}
        if (key or "").strip() and (prop or "").strip():
            step.update(eventPropertyKey=key.strip(), eventPropertyValue=prop.strip())
        steps.append(step)
    return steps


def _figure(series: Sequence[tuple[str, Sequence[Any]]]) -> go.Figure:
    fig = go.Figure()
    colors = ("#4f6bed", "#f08c00")
    for (name, steps), color in zip(series, colors, strict=False):
        fig.add_trace(
            go.Bar(
                x=[f"{value_of(s, 'step_number')}. {value_of(s, 'step_name')}" for s in steps],
                y=[value_of(s, "sessions") for s in steps],
                name=name,
                marker_color=color,
                text=[format_percent(value_of(s, "conversion_rate")) for s in steps],
                textposition="outside",
                cliponaxis=False,
            )
        )
    fig.update_layout(
        barmode="group",
        height=320,
        margin={"l": 40, "r": 10, "t": 30, "b": 40},
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        legend={"orientation": "h", "y": -0.2},
        yaxis={"title": "Sessions", "rangemode": "tozero", "gridcolor": "rgba(128,128,128,0.2)"},
    )
    return fig


def funnel_result(series: Sequence[tuple[str, Sequence[Any]]]) -> html.Div:
    """The chart of every segment and a table: sessions, conversion and drop-off per step (the API's rates)."""
    head = html.Tr([html.Th("Step"), *[html.Th(f"{name}: sessions · conversion · drop-off") for name, _ in series]])
    first = series[0][1]
    body = []
    for i, step in enumerate(first):
        cells = [html.Td(f"{value_of(step, 'step_number')}. {value_of(step, 'step_name')}")]
        for _, steps in series:
            s = steps[i] if i < len(steps) else None
            cells.append(
                html.Td(
                    f"{format_number(value_of(s, 'sessions'))} · {format_percent(value_of(s, 'conversion_rate'))}"
                    f" · {format_percent(value_of(s, 'dropoff_rate'))}"
                )
            )
        body.append(html.Tr(cells))
    return html.Div(
        [
            chart(_figure(series), id=ids.FUNNEL_CHART),
            html.Div(
                html.Table([html.Thead(head), html.Tbody(body)], className="funnel-table", id=ids.FUNNEL_TABLE),
                className="funnel-scroll",
            ),
        ]
    )
