"""Organization usage building blocks: the daily stacked bar chart of the nine event categories and the totals.

Pure functions of data: the API's daily rows in, a pandas frame, a plotly figure or Dash components out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from dash import html

__all__ = ["USAGE_CATEGORIES", "usage_figure", "usage_frame", "usage_totals", "usage_totals_grid"]

# (row field, label, colour) for the nine categories the API counts per day, in the order the API lists them.
# Colours: one calm hue per category, the accent for page views (the bulk of most sites' traffic).
USAGE_CATEGORIES: list[tuple[str, str, str]] = [
    ("pageview_count", "Page views", "#3b5bdb"),
    ("custom_event_count", "Custom events", "#0ea5e9"),
    ("performance_count", "Performance", "#14b8a6"),
    ("outbound_count", "Outbound clicks", "#a855f7"),
    ("error_count", "Errors", "#ef4444"),
    ("button_click_count", "Button clicks", "#f59e0b"),
    ("copy_count", "Copies", "#84cc16"),
    ("form_submit_count", "Form submits", "#ec4899"),
    ("input_change_count", "Input changes", "#64748b"),
]
_FIELDS = [field for field, _, _ in USAGE_CATEGORIES]


def usage_frame(rows: Sequence[Any]) -> pd.DataFrame:
    """One row per day: ``event_date`` (a date), the nine counts and ``event_count`` as the API reported it."""
    records = [
        {
            "event_date": pd.Timestamp(str(row.event_date)).date(),
            **{field: int(getattr(row, field) or 0) for field in _FIELDS},
            "event_count": int(row.event_count or 0),
        }
        for row in rows
    ]
    frame = pd.DataFrame(records, columns=["event_date", *_FIELDS, "event_count"])
    return frame.sort_values("event_date", kind="stable").reset_index(drop=True)


def usage_totals(frame: pd.DataFrame) -> dict[str, int]:
    """Totals per category over the range, plus ``event_count`` (the overall total)."""
    return {field: int(frame[field].sum()) for field in [*_FIELDS, "event_count"]}


def usage_figure(frame: pd.DataFrame) -> go.Figure:
    """Stacked daily bars of the nine categories; a day's hover lists every category."""
    figure = go.Figure()
    dates = [day.isoformat() for day in frame["event_date"]]
    for field, label, colour in USAGE_CATEGORIES:
        figure.add_trace(
            go.Bar(
                x=dates,
                y=frame[field].tolist(),
                name=label,
                marker_color=colour,
                hovertemplate=f"{label}: %{{y:,}}<extra></extra>",
            )
        )
    figure.update_layout(
        barmode="stack",
        height=340,
        margin={"l": 56, "r": 16, "t": 8, "b": 40},
        plot_bgcolor="rgba(0,0,0,0)",
        paper_bgcolor="rgba(0,0,0,0)",
        hovermode="x unified",
        bargap=0.2,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0, "traceorder": "normal"},
        xaxis={"type": "date", "gridcolor": "#eef0f3", "tickformat": "%b %d"},
        yaxis={"title": {"text": "events per day"}, "gridcolor": "#eef0f3", "rangemode": "tozero", "tickformat": ",d"},
        font={"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 12, "color": "#374151"},
    )
    return figure


def usage_totals_grid(totals: dict[str, int], *, item_id: Any = None) -> html.Div:
    """The overall total first, then one tile per category with its count and share of all events.

    ``item_id(field)``, when given, sets an id on each number so tests and people can find it.
    """
    overall = totals.get("event_count", 0)

    def tile(field: str, label: str, colour: str | None) -> html.Div:
        value = totals.get(field, 0)
        share = "" if field == "event_count" or overall == 0 else f"{value * 100 / overall:.1f}% of all"
        return html.Div(
            [
                html.Div(
                    [html.Span(className="usage-swatch", style={"background": colour}) if colour else None, label],
                    className="usage-tile-label",
                ),
                html.Div(f"{value:,}", id=item_id(field) if item_id else None, className="usage-tile-value num"),
                html.Div(share, className="usage-tile-share muted"),
            ],
            className="usage-tile" + (" usage-tile-total" if field == "event_count" else ""),
        )

    tiles = [tile("event_count", "All events", None)]
    tiles += [tile(field, label, colour) for field, label, colour in USAGE_CATEGORIES]
    return html.Div(tiles, className="usage-totals")
