"""Pure layout factories of the overview page: headline tiles, the main chart, breakdown panels, the live badge.

Every number shown comes from the API (``Overview``, ``OverviewBucket``, ``MetricRow``, ``LiveVisitors``); nothing
here computes a figure beyond formatting it and the change between two figures the API gave.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import plotly.graph_objects as go
from dash import dcc, html

from dashboard import ids
from dashboard.components.common import (
    RangeEnds,
    bucket_ticks,
    channel_label,
    chart,
    comparison_gap,
    format_change,
    format_duration,
    format_number,
    format_percent,
    in_zone,
    value_of,
)
from dashboard.countries import country_label, region_label

__all__ = [
    "BUCKETS",
    "HEADLINES",
    "PANELS",
    "default_bucket",
    "headline_tiles",
    "live_badge",
    "panel_rows",
    "series_figure",
]

# (key of Overview, label, formatter, a rise is good)
HEADLINES = (
    ("users", "Users", format_number, True),
    ("sessions", "Sessions", format_number, True),
    ("pageviews", "Pageviews", format_number, True),
    ("pages_per_session", "Pages per session", lambda v: format_number(v, 2), True),
    ("bounce_rate", "Bounce rate", format_percent, False),
    ("session_duration", "Session duration", format_duration, True),
)
BUCKETS = ("hour", "day", "week", "month")
SERIES_HEIGHT = 280  # px, the chart over time
# Panel -> its tabs as (tab value = metric parameter, tab label).
PANELS: dict[str, tuple[tuple[str, str], ...]] = {
    "Pages": (("pathname", "Top pages"), ("entry_page", "Entry pages"), ("exit_page", "Exit pages")),
    "Sources": (
        ("channel", "Channels"),
        ("referrer", "Referrers"),
        ("utm_source", "UTM source"),
        ("utm_medium", "UTM medium"),
        ("utm_campaign", "UTM campaign"),
    ),
    "Locations": (("country", "Countries"), ("region", "Regions"), ("city", "Cities")),
    "Devices": (
        ("device_type", "Device type"),
        ("browser", "Browser"),
        ("operating_system", "OS"),
        ("dimensions", "Screen size"),
    ),
}


def default_bucket(days: int) -> str:
    """The bucket that gives a readable number of points for a range of ``days``."""
    if days <= 2:
        return "hour"
    if days <= 90:
        return "day"
    if days <= 365:
        return "week"
    return "month"


def change_text(key: str, now: Any, before: Any, visits: Any, previous_visits: Any) -> tuple[str, str]:
    """(text, direction) of one tile's change; words instead of a percentage when the earlier period is thin.

    ``visits`` / ``previous_visits`` are the sessions of the two periods (``previous_visits`` None while loading).
    The rule is ``comparison_gap``'s, the one of every page's overview strip.
    """
    if previous_visits is None:
        return "", "none"  # still loading: say nothing rather than something wrong
    gap = comparison_gap(visits, previous_visits)
    if gap is not None:
        return gap, "none"
    return format_change(now, before, points=key == "bounce_rate")


def headline_tiles(current: Any = None, previous: Any = None) -> html.Div:
    """The six headline numbers of the range, each with its change against the previous period."""
    visits = value_of(current, "sessions")
    previous_visits = value_of(previous, "sessions") if previous is not None else None
    tiles = []
    for key, label, fmt, rise_is_good in HEADLINES:
        now, before = value_of(current, key), value_of(previous, key)
        text, direction = change_text(key, now, before, visits, previous_visits)
        tone = "neutral"
        if direction in ("up", "down"):
            tone = "good" if (direction == "up") == rise_is_good else "bad"
        tiles.append(
            html.Div(
                [
                    html.Div(label, className="stat-label"),
                    html.Div(fmt(now) if current is not None else "…", className="stat-value", id=f"overview-{key}"),
                    html.Div(
                        text,
                        className=f"stat-change stat-{direction} stat-{tone}",
                        id=f"overview-{key}-change",
                        title="Change against the previous period of the same length",
                    ),
                ],
                className="stat",
            )
        )
    # "overview-loaded" marks numbers from the API (the benchmark waits for it), not the placeholders.
    loaded = " overview-loaded" if current is not None else ""
    return html.Div(tiles, className=f"stats overview-stats{loaded}")


def series_figure(
    current: Sequence[Any],
    previous: Sequence[Any],
    metric: str,
    bucket: str,
    *,
    time_zone: str | None = None,
    ends: RangeEnds | None = None,
) -> go.Figure:
    """The chosen metric per bucket, with the previous period drawn dotted on the same x positions.

    Buckets are placed at their start on the wall clock of ``time_zone``, the zone they were counted in (the API
    gives the instant: local midnight in Tokyo is 15:00 UTC the day before, which the chart would show as that day).
    A bucket the range holds only part of (``ends``, see ``RangeEnds.notes``: the last one of a range ending now, a
    week or month cut by the range's first or last day) is joined to its neighbour by a dotted line and its value
    reads with its note ("so far", "from Nov 3"), rather than as a fall at an end of the range. The previous period's
    dates read with the notes of its own cut buckets (``RangeEnds.before``).
    """

    def wall_clock(b: Any) -> datetime:
        return in_zone(value_of(b, "time"), time_zone).replace(tzinfo=None)

    times = [wall_clock(b) for b in current]
    values = [value_of(b, metric) for b in current]
    label = next((lbl for key, lbl, _, _ in HEADLINES if key == metric), metric)
    fig = go.Figure()
    if previous:
        before = [wall_clock(b) for b in previous]
        before_notes = (ends or RangeEnds()).before().notes(before, bucket)
        fig.add_trace(
            go.Scatter(
                x=times[: len(previous)],
                y=[value_of(b, metric) for b in previous][: len(times)],
                customdata=[
                    (f"{start:%Y-%m-%d %H:%M}" if bucket == "hour" else f"{start:%Y-%m-%d}")
                    + (f" ({note})" if note else "")
                    for start, note in zip(before, before_notes, strict=True)
                ],
                name="Previous period",
                mode="lines",
                line={"dash": "dot", "color": "#9aa4b2", "width": 2},
                hovertemplate="%{customdata}: %{y}<extra>previous</extra>",
            )
        )
    notes = (ends or RangeEnds()).notes(times, bucket)
    # With fewer than two buckets there is no line to dot: a value is drawn as it is.
    cut = {index for index in (0, len(times) - 1) if len(times) >= 2 and notes[index]}
    # The buckets between the cut ones at either end, drawn as one solid line.
    whole = slice(1 if 0 in cut else 0, len(times) - 1 if len(times) - 1 in cut else len(times))
    mode = "lines+markers" if len(times) < 40 else "lines"
    line = {"color": "#4f6bed", "width": 2}
    fill = {"fill": "tozeroy", "fillcolor": "rgba(79,107,237,0.08)"}
    fig.add_trace(go.Scatter(x=times[whole], y=values[whole], name=label, mode=mode, line=line, **fill))
    for index, neighbours in ((len(times) - 1, slice(-2, None)), (0, slice(0, 2))):
        if index not in cut:
            continue
        if not (index == 0 and len(times) == 2 and 1 in cut):  # two cut buckets share one dotted segment
            fig.add_trace(
                go.Scatter(
                    x=times[neighbours],
                    y=values[neighbours],
                    mode="lines",
                    line=line | {"dash": "dot"},
                    showlegend=False,
                    hoverinfo="skip",
                    **fill,
                )
            )
        fig.add_trace(
            go.Scatter(
                x=times[index : index + 1],
                y=values[index : index + 1],
                name=f"{label} {notes[index]}",
                mode="markers",
                marker={"color": line["color"]},
                showlegend=False,
                hovertemplate=f"%{{y}} {notes[index]}<extra></extra>",
                # A filled trace adds no margin around its points to the axis (a markers-only one would), so the
                # bucket stays at the chart's edge as the others draw it.
                fill="tozeroy",
                fillcolor="rgba(0,0,0,0)",
            )
        )
    fig.update_layout(
        # Week and month ticks label the last bucket, on the right edge: room for half its label.
        margin={"l": 40, "r": 36 if bucket in ("week", "month") else 10, "t": 10, "b": 30},
        height=SERIES_HEIGHT,
        showlegend=bool(previous),
        legend={"orientation": "h", "y": -0.2},
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        hovermode="x unified",
        yaxis={"rangemode": "tozero", "gridcolor": "rgba(128,128,128,0.2)"},
        xaxis={
            "showgrid": False,
            "hoverformat": "%Y-%m-%d %H:%M" if bucket == "hour" else "%Y-%m-%d",
            **bucket_ticks(times, bucket),
        },
    )
    return fig


def country_map(rows: Sequence[Any], topojson_url: str) -> dcc.Graph:
    """A world map of sessions per country, drawn from geometry served with the dashboard (no CDN)."""
    import pycountry

    codes, names, counts = [], [], []
    for row in rows:
        found = pycountry.countries.get(alpha_2=str(value_of(row, "value") or "").upper())
        if found is None:
            continue
        codes.append(found.alpha_3)
        names.append(country_label(found.alpha_2))
        counts.append(value_of(row, "count"))
    fig = go.Figure(
        go.Choropleth(
            locations=codes,
            z=counts,
            text=names,
            locationmode="ISO-3",
            colorscale=[[0, "#dbe4ff"], [1, "#3b5bdb"]],
            showscale=False,
            hovertemplate="%{text}: %{z} sessions<extra></extra>",
            marker_line_color="#ffffff",
        )
    )
    fig.update_geos(showframe=False, showcoastlines=False, projection_type="natural earth", bgcolor="rgba(0,0,0,0)")
    fig.update_layout(height=220, margin={"l": 0, "r": 0, "t": 0, "b": 0}, paper_bgcolor="rgba(0,0,0,0)")
    return chart(fig, id=ids.OVERVIEW_MAP, config={"topojsonURL": topojson_url}, className="overview-map")


def row_label(parameter: str, value: Any) -> str:
    """How a panel shows a value: countries and regions by flag and name, direct traffic and empty values in words."""
    if parameter == "channel":
        return channel_label(value)
    if parameter == "country" and value:
        return country_label(value)
    if parameter == "region" and value:
        return region_label(value)
    return str(value) if value not in (None, "") else "(none)"


def panel_rows(parameter: str, rows: Sequence[Any], *, clickable: bool = True) -> html.Div:
    """A panel's rows (value, sessions, share) as buttons: clicking one adds it as a filter (read-only: plain rows)."""
    if not rows:
        return html.Div("No data for this range.", className="panel-empty")
    items: list[Any] = []
    for row in rows:
        value, count, share = value_of(row, "value"), value_of(row, "count"), value_of(row, "percentage")
        cells = [
            html.Span(className="panel-bar", style={"width": f"{max(min(float(share or 0), 100.0), 0.0):.1f}%"}),
            html.Span(row_label(parameter, value), className="panel-value"),
            html.Span(format_number(count), className="panel-count"),
            html.Span(format_percent(share), className="panel-share"),
        ]
        if not clickable:
            items.append(html.Div(cells, className="panel-row"))
            continue
        items.append(
            html.Button(
                cells,
                id={"type": ids.OVERVIEW_ROW_TYPE, "parameter": parameter, "value": str(value)},
                n_clicks=0,
                className="panel-row",
                title="Show only sessions with this value",
            )
        )
    header = html.Div(
        [html.Span("", className="panel-value"), html.Span("Sessions", className="panel-count"), html.Span("")],
        className="panel-row panel-head",
    )
    return html.Div([header, *items], className="panel-rows", id=f"overview-rows-{parameter}")


def goal_rows(goals: Sequence[Any]) -> html.Div:
    """The Goals panel: conversions and conversion rate per goal, as the API counts them."""
    if not goals:
        return html.Div("No goals yet.", className="panel-empty")
    rows = [
        html.Div(
            [
                html.Span(value_of(g, "name") or f"Goal {value_of(g, 'goal_id')}", className="panel-value"),
                html.Span(format_number(value_of(g, "total_conversions")), className="panel-count"),
                html.Span(format_percent(_rate(value_of(g, "conversion_rate"))), className="panel-share"),
            ],
            className="panel-row",
        )
        for g in goals
    ]
    head = html.Div(
        [html.Span("Goal", className="panel-value"), html.Span("Conv.", className="panel-count"), html.Span("Rate")],
        className="panel-row panel-head",
    )
    return html.Div([head, *rows], className="panel-rows", id="overview-rows-goals")


def _rate(value: Any) -> Any:
    # Goal rates travel as fractions (0..1); the panel shows percent.
    return value * 100 if isinstance(value, (int, float)) else value


def live_badge(live: Any) -> html.Span:
    """ "N visitors now" for the last minutes, from ``LiveVisitors``."""
    visitors = value_of(live, "visitors")
    minutes = value_of(live, "minutes")
    text = f"{format_number(visitors)} {'visitor' if visitors == 1 else 'visitors'} in the last {minutes} min"
    return html.Span([html.Span(className="live-dot"), text], className="live-badge-text")


def bucket_picker(value: str) -> dcc.RadioItems:
    """Hour / day / week / month."""
    return dcc.RadioItems(
        id=ids.OVERVIEW_BUCKET,
        options=[{"label": b.capitalize(), "value": b} for b in BUCKETS],
        value=value,
        inline=True,
        className="segmented",
    )
