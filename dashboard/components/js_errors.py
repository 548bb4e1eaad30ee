"""Errors page building blocks: error groups with sparklines, the errors-over-time chart, occurrences with stacks.

Pure functions of data (api_client models in, Dash components or pandas frames out, no I/O), so the private-link
view can reuse them. Messages and stack traces are always passed as plain text children, which Dash renders as
text: a message containing ``<script>`` shows those characters and never becomes markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from dash import dcc, html

from dashboard.components.common import RangeEnds, as_instant, attrs, bucket_ticks, in_zone, zone_or_utc
from dashboard.countries import country_label, country_name

__all__ = [
    "BUCKET_MINUTES",
    "ERROR_BUCKETS",
    "MAX_CHART_BUCKETS",
    "bucket_allowed",
    "MESSAGE_PREVIEW_CHARS",
    "bucket_options",
    "bucket_selector",
    "chart_bucket",
    "error_detail_header",
    "error_events_frame",
    "error_group_row",
    "error_groups_frame",
    "error_groups_list",
    "errors_time_figure",
    "file_location",
    "occurrence_card",
    "occurrences_list",
    "sparkline",
    "trend_bucket",
]

# (API value, label) of every bucket the time-series route accepts, finest first.
ERROR_BUCKETS: list[tuple[str, str]] = [
    ("minute", "Minute"),
    ("five_minutes", "5 minutes"),
    ("ten_minutes", "10 minutes"),
    ("fifteen_minutes", "15 minutes"),
    ("hour", "Hour"),
    ("day", "Day"),
    ("week", "Week"),
    ("month", "Month"),
]
MESSAGE_PREVIEW_CHARS = 150
# Bucket sizes in minutes (months counted as 28 days: only the number of bars matters here).
BUCKET_MINUTES: dict[str, int] = {
    "minute": 1,
    "five_minutes": 5,
    "ten_minutes": 10,
    "fifteen_minutes": 15,
    "hour": 60,
    "day": 1440,
    "week": 7 * 1440,
    "month": 28 * 1440,
}
MAX_CHART_BUCKETS = 2000
ACCENT = "#3b5bdb"  # the dashboard accent (assets/sitelens.css --accent)


def _format_stamp(value: datetime | str, time_zone: str | None) -> str:
    moment = in_zone(value, time_zone)
    return moment.strftime("%Y-%m-%d %H:%M:%S ") + (moment.tzname() or "")


def _count(value: int) -> str:
    return f"{value:,}"


def trend_bucket(start: date | None, end: date | None) -> str:
    """A coarse bucket for the per-group sparklines: about 24 to 90 bars over the range."""
    if start is None or end is None:
        return "week"
    days = (end - start).days + 1
    if days <= 2:
        return "hour"
    if days <= 92:
        return "day"
    return "week"


def file_location(file_name: str | None, line: int | None, column: int | None) -> str:
    """``file:line:column`` of an occurrence, leaving out the parts the browser did not report."""
    parts = [file_name or "unknown file"]
    if line:
        parts.append(str(line))
        if column:
            parts.append(str(column))
    return ":".join(parts)


def sparkline(
    buckets: Sequence[Any], time_zone: str | None, *, label: str = "", ends: RangeEnds | None = None
) -> html.Div:
    """A tiny bar chart of occurrences per bucket, drawn with plain elements (cheap: one per group row).

    Each bar carries a tooltip with its local time and count; the tallest bar fills the height. The buckets are the
    range's ``trend_bucket``; one the range holds only part of (``ends``, see ``RangeEnds.notes``: the last of a
    range ending now, a week cut by the range) is paler and its tooltip reads with its note ("so far").
    """
    counts = [int(bucket.error_count) for bucket in buckets]
    peak = max(counts, default=0)
    ends = ends or RangeEnds()
    starts = [in_zone(bucket.time, time_zone) for bucket in buckets]
    notes = ends.notes([start.replace(tzinfo=None) for start in starts], trend_bucket(ends.first_day, ends.last_day))
    bars = []
    for start, count, note in zip(starts, counts, notes, strict=True):
        height = 0 if peak == 0 else max(6, round(count * 100 / peak)) if count else 0
        bars.append(
            html.Span(
                className="spark-bar"
                + (" spark-bar-empty" if count == 0 else "")
                + (" spark-bar-filling" if note else ""),
                style={"height": f"{height}%"},
                title=f"{start:%Y-%m-%d %H:%M}: {_count(count)}" + (f" {note}" if note else ""),
            )
        )
    return html.Div(bars, className="sparkline", role="img", **attrs({"aria-label": label or "trend"}))


def group_sparkline(
    trend: Sequence[Any], time_zone: str | None, error_name: str | None = None, *, ends: RangeEnds | None = None
) -> html.Div:
    """The small trend of one error group (what fills the row's trend cell)."""
    return sparkline(trend, time_zone, label=f"occurrences of {error_name or 'error'} over time", ends=ends)


def error_group_row(
    group: Any,
    index: int,
    *,
    trend: Sequence[Any] | None,
    time_zone: str | None,
    selected: bool,
    row_id: Any,
    trend_id: Any = None,
    ends: RangeEnds | None = None,
) -> html.Button:
    """One error group: class, message (cut to a preview, full text on hover), trend, occurrences, sessions, share.

    Without ``trend`` the trend cell stays empty; ``trend_id`` names it so a callback can fill it afterwards.
    """
    message = group.value or ""
    preview = message if len(message) <= MESSAGE_PREVIEW_CHARS else message[: MESSAGE_PREVIEW_CHARS - 1] + "…"
    share = float(group.percentage or 0)
    return html.Button(
        [
            html.Div(
                [
                    html.Span(group.error_name or "Error", className="error-class"),
                    html.Span(preview, className="error-message", title=message),
                ],
                className="error-group-main",
            ),
            html.Div(
                group_sparkline(trend, time_zone, group.error_name, ends=ends) if trend is not None else None,
                className="error-group-trend",
                **({"id": trend_id} if trend_id is not None else {}),
            ),
            html.Div(_count(int(group.count)), className="num error-group-count", title="occurrences"),
            html.Div(_count(int(group.session_count)), className="num error-group-sessions", title="sessions affected"),
            html.Div(
                [
                    html.Span(f"{share:.1f}%", className="num"),
                    html.Div(
                        html.Div(className="share-fill", style={"width": f"{min(share, 100):.1f}%"}),
                        className="share-track",
                    ),
                ],
                className="error-group-share",
            ),
        ],
        id=row_id,
        n_clicks=0,
        className="error-group" + (" error-group-selected" if selected else ""),
        **attrs({"data-index": str(index)}),
    )


def error_groups_list(
    groups: Sequence[Any],
    trends: Sequence[Sequence[Any] | None],
    *,
    time_zone: str | None,
    selected: str | None,
    row_id: Any,
    trend_id: Any = None,
    ends: RangeEnds | None = None,
) -> html.Div:
    """The list of error groups with a header line; ``row_id(i)`` gives the id of row ``i`` (``trend_id(i)`` that
    of its trend cell, when trends are filled in later)."""
    header = html.Div(
        [
            html.Div("Error", className="error-group-main"),
            html.Div("Trend", className="error-group-trend"),
            html.Div("Occurrences", className="num error-group-count"),
            html.Div("Sessions", className="num error-group-sessions"),
            html.Div("Share", className="error-group-share"),
        ],
        className="error-group error-group-head",
    )
    rows = [
        error_group_row(
            group,
            index,
            trend=trend,
            time_zone=time_zone,
            selected=group.value == selected,
            row_id=row_id(index),
            trend_id=trend_id(index) if trend_id is not None else None,
            ends=ends,
        )
        for index, (group, trend) in enumerate(zip(groups, trends, strict=True))
    ]
    return html.Div([header, *rows], className="error-groups")


def errors_time_figure(
    buckets: Sequence[Any], time_zone: str | None, bucket: str, *, ends: RangeEnds | None = None
) -> go.Figure:
    """Bar chart of occurrences per bucket, on the wall-clock time of ``time_zone``.

    A bucket the range holds only part of (``ends``, see ``RangeEnds.notes``: the last one of a range ending now, a
    week or month cut by the range's first or last day) is drawn paler and its count reads with its note ("so far").
    """
    zone = zone_or_utc(time_zone)
    times = [in_zone(item.time, time_zone).replace(tzinfo=None) for item in buckets]
    counts = [int(item.error_count) for item in buckets]
    label = dict(ERROR_BUCKETS).get(bucket, bucket).lower()
    notes = (ends or RangeEnds()).notes(times, bucket)
    figure = go.Figure(
        go.Bar(
            x=times,
            y=counts,
            marker_color=ACCENT,
            marker_opacity=[0.45 if note else 1.0 for note in notes],
            customdata=[f" {note}" if note else "" for note in notes],
            hovertemplate=f"%{{x}} ({zone.key})<br>%{{y:,}} occurrences%{{customdata}}<extra></extra>",
            name="occurrences",
        )
    )
    figure.update_layout(
        margin={"l": 48, "r": 16, "t": 8, "b": 36},
        height=260,
        plot_bgcolor="rgba(0,0,0,0)",
        paper_bgcolor="rgba(0,0,0,0)",
        bargap=0.15,
        showlegend=False,
        yaxis={
            # Whole numbers only: small counts would otherwise get fractional ticks shown as repeated integers.
            "dtick": 1 if max(counts, default=0) <= 5 else None,
            "title": {"text": f"occurrences per {label}"},
            "gridcolor": "#eef0f3",
            "rangemode": "tozero",
            "tickformat": ",d",
        },
        xaxis={"gridcolor": "#eef0f3", **bucket_ticks(times, bucket)},
        font={"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 12, "color": "#374151"},
    )
    return figure


def error_detail_header(group: Any) -> html.Div:
    """Class and full message of the chosen group, with its totals."""
    return html.Div(
        [
            html.Div(
                [
                    html.Span(group.error_name or "Error", className="error-class"),
                    html.Span(
                        f"{_count(int(group.count))} occurrence{'' if int(group.count) == 1 else 's'}",
                        className="muted",
                    ),
                    html.Span(
                        f"{_count(int(group.session_count))} session{'' if int(group.session_count) == 1 else 's'}",
                        className="muted",
                    ),
                ],
                className="error-detail-meta",
            ),
            html.Div(group.value or "", className="error-detail-message"),
        ],
        className="error-detail-header",
    )


def occurrence_card(event: Any, time_zone: str | None) -> html.Div:
    """One occurrence: when (in the chosen zone), where, on what, the source location and the stack as text."""
    page = (event.hostname or "") + (event.pathname or "")
    browser = " ".join(part for part in (event.browser, event.browser_version) if part)
    facts = [
        ("Page", page or "unknown"),
        ("Browser", browser or "unknown"),
        ("OS", event.operating_system or "unknown"),
        ("Device", event.device_type or "unknown"),
        ("Country", country_label(event.country) or "unknown"),
        ("Session", event.session_id or ""),
    ]
    stack = event.stack or ""
    return html.Div(
        [
            html.Div(
                [
                    html.Span(_format_stamp(event.timestamp, time_zone), className="occurrence-time"),
                    html.Code(
                        file_location(event.file_name, event.line_number, event.column_number),
                        className="occurrence-location",
                    ),
                ],
                className="occurrence-head",
            ),
            # One line of text, not a grid of name/value elements: a page of cards then costs the browser a few
            # hundred fewer components to mount, which is most of the time to open a group.
            html.Div(" · ".join(f"{name}: {value}" for name, value in facts), className="occurrence-facts"),
            html.Pre(stack, className="stack-trace")
            if stack
            else html.Div("No stack trace was reported.", className="muted stack-trace-missing"),
        ],
        className="occurrence",
    )


def occurrences_list(events: Sequence[Any], time_zone: str | None) -> html.Div:
    """Occurrences newest first, each as a card."""
    return html.Div([occurrence_card(event, time_zone) for event in events], className="occurrences")


def error_groups_frame(groups: Sequence[Any]) -> pd.DataFrame:
    """The groups as a table for CSV download."""
    return pd.DataFrame(
        [
            {
                "error_name": group.error_name,
                "message": group.value,
                "occurrences": int(group.count),
                "sessions": int(group.session_count),
                # Rounded as the page shows it (one decimal), not 39.77230995225854.
                "percentage": round(float(group.percentage or 0), 1),
            }
            for group in groups
        ],
        columns=["error_name", "message", "occurrences", "sessions", "percentage"],
    )


def error_events_frame(events: Sequence[Any], time_zone: str | None) -> pd.DataFrame:
    """The occurrences as a table for CSV download, with times in the chosen zone and in UTC."""
    columns = [
        "time",
        "time_utc",
        "session_id",
        "user_id",
        "hostname",
        "pathname",
        "browser",
        "browser_version",
        "operating_system",
        "device_type",
        "country",
        "country_name",
        "message",
        "file_name",
        "line_number",
        "column_number",
        "stack",
    ]
    return pd.DataFrame(
        [
            {
                "time": in_zone(event.timestamp, time_zone).isoformat(timespec="milliseconds"),
                "time_utc": as_instant(event.timestamp).astimezone(UTC).isoformat(timespec="milliseconds"),
                "session_id": event.session_id,
                "user_id": event.user_id,
                "hostname": event.hostname,
                "pathname": event.pathname,
                "browser": event.browser,
                "browser_version": event.browser_version,
                "operating_system": event.operating_system,
                "device_type": event.device_type,
                "country": event.country,
                "country_name": country_name(event.country),
                "message": event.message,
                "file_name": event.file_name,
                "line_number": event.line_number,
                "column_number": event.column_number,
                "stack": event.stack,
            }
            for event in events
        ],
        columns=columns,
    )


def bucket_allowed(bucket: str, days: int | None) -> bool:
    """Whether ``bucket`` draws a readable chart over ``days`` days (at most ``MAX_CHART_BUCKETS`` bars)."""
    minutes = BUCKET_MINUTES.get(bucket)
    if minutes is None:
        return False
    return days is None or days * 1440 / minutes <= MAX_CHART_BUCKETS


def chart_bucket(requested: str | None, days: int | None) -> str:
    """The chart's bucket: the requested one when it suits the range, else hours up to two days and days beyond."""
    if requested and bucket_allowed(requested, days):
        return requested
    return "hour" if days is not None and days <= 2 else "day"


def bucket_options(days: int | None = None) -> list[dict[str, Any]]:
    """Options for the bucket selector; buckets too fine for a range of ``days`` days are shown but disabled."""
    return [
        {"label": label, "value": value, "disabled": not bucket_allowed(value, days)} for value, label in ERROR_BUCKETS
    ]


def bucket_selector(component_id: Any, value: str, days: int | None = None) -> dcc.Dropdown:
    """The bucket selector of the errors-over-time chart."""
    return dcc.Dropdown(
        id=component_id,
        options=bucket_options(days),
        value=value,
        clearable=False,
        searchable=False,
        className="bucket-select",
    )
