"""Channel ranking: a goal's conversion rate per acquisition channel, as a table and a chart with 95% intervals.

Pure builders: an ``api_client.Breakdown`` (or rows with the same fields) in, a DataFrame and components out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from dash import dcc, html

from dashboard import ids
from dashboard.components.common import (
    channel_label,
    chart,
    data_table,
    empty_state,
    format_number,
    format_percent,
    value_of,
)

__all__ = [
    "ACCENT",
    "MUTED",
    "channel_chart",
    "channel_frame",
    "channel_summary",
    "channel_table",
    "goal_options",
    "no_goals",
    "ranking_content",
]

ACCENT = "#3b5bdb"
MUTED = "#9db0ee"  # the accent, lighter: a rate from too few sessions
COLUMNS = [
    "channel",
    "sessions",
    "conversions",
    "conversion_rate_percent",
    "ci_low_percent",
    "ci_high_percent",
    "small_sample",
]


def channel_frame(rows: Sequence[Any]) -> pd.DataFrame:
    """One row per channel sorted by conversion rate (then sessions), rates and interval bounds in percent."""
    records = [
        {
            "channel": channel_label(value_of(r, "value")),
            "sessions": int(value_of(r, "sessions") or 0),
            "conversions": int(value_of(r, "conversions") or 0),
            "conversion_rate_percent": round(float(value_of(r, "conversion_rate") or 0) * 100, 2),
            "ci_low_percent": round(float(value_of(r, "ci_low") or 0) * 100, 2),
            "ci_high_percent": round(float(value_of(r, "ci_high") or 0) * 100, 2),
            "small_sample": bool(value_of(r, "small_sample")),
        }
        for r in rows
    ]
    df = pd.DataFrame.from_records(records, columns=COLUMNS)
    if len(df):
        df = df.sort_values(
            ["conversion_rate_percent", "sessions", "channel"], ascending=[False, False, True], kind="stable"
        ).reset_index(drop=True)
    return df


def channel_chart(df: pd.DataFrame, goal_name: str = "") -> dcc.Graph:
    """Horizontal bars of conversion rate by channel, best at the top, with the 95% interval as error bars.

    Channels with too few sessions for a stable rate are drawn lighter and hatched, and say so in their hover text.
    """
    plot = df.iloc[::-1]  # plotly draws the first category at the bottom
    colours = [MUTED if small else ACCENT for small in plot["small_sample"]]
    hover = [
        f"<b>{row.channel}</b><br>{format_percent(row.conversion_rate_percent)} converted "
        f"({format_number(row.conversions)} of {format_number(row.sessions)} sessions)<br>"
        f"95% interval {format_percent(row.ci_low_percent)} – {format_percent(row.ci_high_percent)}"
        + ("<br><i>too few sessions for a stable rate</i>" if row.small_sample else "")
        for row in plot.itertuples()
    ]
    figure = go.Figure(
        go.Bar(
            x=plot["conversion_rate_percent"],
            y=plot["channel"],
            orientation="h",
            marker={
                "color": colours,
                "pattern": {
                    "shape": ["/" if small else "" for small in plot["small_sample"]],
                    "fgcolor": "#ffffff",
                    "size": 6,
                    "solidity": 0.25,
                },
            },
            error_x={
                "type": "data",
                "symmetric": False,
                "array": (plot["ci_high_percent"] - plot["conversion_rate_percent"]).clip(lower=0).tolist(),
                "arrayminus": (plot["conversion_rate_percent"] - plot["ci_low_percent"]).clip(lower=0).tolist(),
                "color": "#1c2430",
                "thickness": 1.5,
                "width": 5,
            },
            hovertext=hover,
            hoverinfo="text",
            text=[format_percent(v) for v in plot["conversion_rate_percent"]],
            textposition="none",
        )
    )
    figure.update_layout(
        margin={"l": 8, "r": 16, "t": 8, "b": 40},
        height=max(180, 44 * len(plot) + 60),
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        font={"family": "-apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, sans-serif", "size": 13},
        xaxis={
            "title": {"text": f"Conversion rate{' for ' + goal_name if goal_name else ''} (%)"},
            "ticksuffix": "%",
            "rangemode": "tozero",
            "gridcolor": "#eef0f3",
            "zeroline": False,
        },
        yaxis={"automargin": True, "ticks": "", "showgrid": False},
        showlegend=False,
        bargap=0.35,
    )
    return chart(figure, id=ids.CHANNELS_CHART, className="chart")


def channel_table(df: pd.DataFrame) -> Any:
    """The ranking as a table; small samples are marked in their own column and dimmed."""
    shown = pd.DataFrame(
        {
            "rank": range(1, len(df) + 1),
            "channel": df["channel"],
            "sessions": df["sessions"],
            "conversions": df["conversions"],
            "rate": [format_percent(v) for v in df["conversion_rate_percent"]],
            "interval": [
                f"{format_percent(lo)} – {format_percent(hi)}"
                for lo, hi in zip(df["ci_low_percent"], df["ci_high_percent"], strict=True)
            ],
            "note": ["few sessions: rate unstable" if s else "" for s in df["small_sample"]],
        }
    )
    return data_table(
        shown,
        ids.CHANNELS_TABLE,
        columns=[
            ("rank", "#"),
            ("channel", "Channel"),
            # Counts with thousands separators, as everywhere else; the cells stay numbers, so they sort as numbers.
            {"id": "sessions", "name": "Sessions", "type": "numeric", "format": {"specifier": ",d"}},
            {"id": "conversions", "name": "Conversions", "type": "numeric", "format": {"specifier": ",d"}},
            {"id": "rate", "name": "Conversion rate", "type": "numeric"},
            {"id": "interval", "name": "95% interval", "type": "numeric"},
            ("note", ""),
        ],
        style_data_conditional=[
            {"if": {"filter_query": '{note} != ""'}, "color": "var(--text-muted)"},
            {"if": {"column_id": "note"}, "fontSize": "12px", "color": "var(--warn)"},
        ],
    )


def channel_summary(total_sessions: int, total_conversions: int) -> html.Div:
    """The totals the ranking is based on."""
    rate = total_conversions / total_sessions * 100 if total_sessions else 0.0
    return html.Div(
        [
            html.Span([html.Strong(format_number(total_sessions)), " sessions"]),
            html.Span([html.Strong(format_number(total_conversions)), " conversions"]),
            html.Span([html.Strong(format_percent(rate)), " overall"]),
        ],
        className="summary-line",
    )


def default_goal(goals: Sequence[Any], wanted: int | None = None) -> Any:
    """The goal a ranking opens on: the one asked for, else the goal with the most conversions (the first on a tie),
    so the first view is never an empty ranking while another goal has data."""
    chosen = next((g for g in goals if value_of(g, "goal_id") == wanted), None)
    if chosen is not None:
        return chosen
    return max(goals, key=lambda g: int(value_of(g, "total_conversions") or 0))


def goal_options(goals: Sequence[Any]) -> list[dict[str, Any]]:
    """Goal picker options: the goal's name (or "Goal <id>")."""
    return [
        {"label": value_of(g, "name") or f"Goal {value_of(g, 'goal_id')}", "value": value_of(g, "goal_id")}
        for g in goals
    ]


def no_goals(goals_href: str | None) -> html.Div:
    """What the ranking shows on a site without goals."""
    action = dcc.Link("Go to goals", href=goals_href, className="button button-primary") if goals_href else None
    return empty_state("No goals yet", "The ranking compares channels on a goal. Create a goal first.", action)


def ranking_content(ranking: Any, goal_name: str) -> Any:
    """Totals, chart, table and a note on reading them; an empty state when the range has no sessions."""
    df = channel_frame(value_of(ranking, "rows") or [])
    if df.empty:
        return empty_state("No sessions in this range", "Try a longer date range, or remove filters.")
    return [
        channel_summary(value_of(ranking, "total_sessions") or 0, value_of(ranking, "total_conversions") or 0),
        channel_chart(df, goal_name),
        channel_table(df),
        html.P(
            "Bars show the conversion rate; the whiskers its 95% interval (Wilson). Light, hatched bars and dimmed "
            "rows have fewer than 30 sessions: their rate can move a lot with a few more sessions.",
            className="muted footnote",
        ),
    ]
