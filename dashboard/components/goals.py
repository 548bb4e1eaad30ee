"""Goals and goal sessions: the goals table with its rate bars and its pager, and the converted-sessions table.

Pure builders: goals and sessions come in as ``api_client`` models (or mappings with the same fields), components
and DataFrames go out. The create/edit/clone form is in ``goal_editor``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote

import pandas as pd
from dash import dcc, html

from dashboard import ids
from dashboard.components.common import (
    app_href,
    channel_label,
    data_table,
    empty_state,
    format_duration,
    format_number,
    format_percent,
    value_of,
)
from dashboard.components.pager import SMALL_LINKS, link_pager, total_pages
from dashboard.components.sessions import local_time
from dashboard.countries import country_label, country_name

__all__ = [
    "GOAL_TYPE_LABELS",
    "SESSION_COLUMNS",
    "SORT_OPTIONS",
    "goal_target",
    "goals_frame",
    "goals_table",
    "referrer_host",
    "sessions_body",
    "sessions_frame",
]

GOAL_TYPE_LABELS = {
    "path": "Page visit",
    "event": "Custom event",
    "outbound": "Outbound link",
    "button_click": "Button click",
    "form_submit": "Form submit",
    "copy": "Copy",
}
SORT_OPTIONS = {"createdAt": "Newest", "name": "Name", "goalType": "Type", "goalId": "Id"}
SESSION_COLUMNS = (
    ("session_start", "Started"),
    ("session_end", "Ended"),
    ("duration", "Duration"),
    ("pageviews", "Pageviews"),
    ("entry_page", "Entry page"),
    ("exit_page", "Exit page"),
    ("channel", "Channel"),
    ("referrer", "Referrer"),
    ("country", "Country"),
    ("platform", "Browser · OS · device"),
)


def goal_target(goal: Any) -> str:
    """What a goal matches, in words: ``/pricing``, ``signup where plan = pro``, ``any outbound link``."""
    config = value_of(goal, "config") or {}
    kind = value_of(goal, "goal_type")
    if kind == "path":
        return value_of(config, "path_pattern") or "–"
    if kind == "event":
        name = value_of(config, "event_name") or "–"
        key, value = value_of(config, "event_property_key"), value_of(config, "event_property_value")
        if key and value is not None:
            shown = ("true" if value else "false") if isinstance(value, bool) else value
            return f"{name} where {key} = {shown}"
        return name
    pattern = value_of(config, "value_pattern")
    noun = GOAL_TYPE_LABELS.get(kind, kind or "event").lower()
    return f"{noun} matching {pattern}" if pattern else f"any {noun}"


def goals_table(
    goals: Sequence[Any],
    sessions_href: Callable[[int], str],
    *,
    read_only: bool = False,
) -> html.Table:
    """One row per goal: name (opens its sessions), type, target, conversions, rate and a rate bar; the sessions
    every rate is out of (the same for all goals) are said once, in the table's caption.

    The bar's width is the conversion rate itself (0..100% of the cell), so rows compare at a glance. A rate out
    of no sessions is "–", not 0.0%. Without ``read_only`` each row has edit, clone and delete buttons.
    """
    head = ["Goal", "Type", "Matches", "Conversions", "Conversion rate"]
    if not read_only:
        head.append("")
    numeric = {"Conversions", "Conversion rate"}
    header = html.Thead(html.Tr([html.Th(h, className="num" if h in numeric else None) for h in head]))
    sessions = max((int(value_of(goal, "total_sessions") or 0) for goal in goals), default=0)
    caption = html.Caption(
        f"Conversions out of {format_number(sessions)} session{'' if sessions == 1 else 's'} in this range",
        className="table-caption muted",
        id=ids.GOALS_SESSIONS_TOTAL,
    )
    rows = []
    for goal in goals:
        goal_id = value_of(goal, "goal_id")
        rate = float(value_of(goal, "conversion_rate") or 0.0)
        percent = max(0.0, min(rate * 100, 100.0))
        shown_rate = format_percent(rate * 100) if int(value_of(goal, "total_sessions") or 0) else "–"
        cells = [
            html.Td(
                dcc.Link(
                    value_of(goal, "name") or f"Goal {goal_id}", href=sessions_href(goal_id), className="goal-name"
                ),
            ),
            html.Td(
                html.Span(
                    GOAL_TYPE_LABELS.get(value_of(goal, "goal_type"), value_of(goal, "goal_type")), className="badge"
                )
            ),
            html.Td(html.Code(goal_target(goal), className="goal-target")),
            html.Td(format_number(value_of(goal, "total_conversions")), className="num"),
            html.Td(
                html.Div(
                    [
                        html.Span(shown_rate, className="rate-value"),
                        html.Div(
                            html.Div(className="rate-bar-fill", style={"width": f"{percent:.2f}%"}),
                            className="rate-bar",
                            title=f"{format_percent(rate * 100, 2)} of sessions converted",
                        ),
                    ],
                    className="rate",
                ),
                className="num rate-cell",
            ),
        ]
        if not read_only:
            cells.append(
                html.Td(
                    html.Div(
                        [
                            html.Button(
                                label,
                                id={"type": ids.GOALS_ACTION_TYPE, "action": action, "goal": goal_id},
                                n_clicks=0,
                                className=f"button button-small {style}",
                            )
                            for action, label, style in (
                                ("edit", "Edit", "button-ghost"),
                                ("clone", "Clone", "button-ghost"),
                                ("delete", "Delete", "button-ghost button-ghost-danger"),
                            )
                        ],
                        className="row-actions",
                    )
                )
            )
        rows.append(html.Tr(cells, id=f"goal-row-{goal_id}"))
    return html.Table([caption, header, html.Tbody(rows)], className="table goals-table", id=ids.GOALS_TABLE)


def goals_frame(goals: Sequence[Any]) -> pd.DataFrame:
    """The goals as a flat table for CSV: conversion rate as a fraction and as a percentage."""
    records = [
        {
            "goal_id": value_of(g, "goal_id"),
            "name": value_of(g, "name") or "",
            "goal_type": value_of(g, "goal_type"),
            "matches": goal_target(g),
            "conversions": value_of(g, "total_conversions"),
            "sessions": value_of(g, "total_sessions"),
            "conversion_rate": value_of(g, "conversion_rate"),
            "conversion_rate_percent": round(float(value_of(g, "conversion_rate") or 0) * 100, 2),
        }
        for g in goals
    ]
    columns = [
        "goal_id",
        "name",
        "goal_type",
        "matches",
        "conversions",
        "sessions",
        "conversion_rate",
        "conversion_rate_percent",
    ]
    return pd.DataFrame.from_records(records, columns=columns)


# --- goal sessions ----------------------------------------------------------------------------------------------------
def referrer_host(referrer: str | None) -> str:
    """``https://www.google.com/search?q=x`` -> ``www.google.com``; text that is not a URL stays as it is."""
    if not referrer:
        return ""
    from urllib.parse import urlsplit

    host = urlsplit(referrer).hostname
    return host or referrer


# Goal session times keep their seconds (the CSV download is built from the same frame).
_SECONDS = "%Y-%m-%d %H:%M:%S"


def sessions_frame(sessions: Sequence[Any], time_zone: str) -> pd.DataFrame:
    """Goal sessions as a table: times in ``time_zone``, duration in seconds and as text, '' channel = Direct."""
    records = [
        {
            "session_start": local_time(value_of(s, "session_start"), time_zone, _SECONDS),
            "session_end": local_time(value_of(s, "session_end"), time_zone, _SECONDS),
            "duration_seconds": int(round(value_of(s, "session_duration") or 0)),
            "duration": format_duration(value_of(s, "session_duration") or 0),
            "pageviews": value_of(s, "pageviews") or 0,
            "entry_page": value_of(s, "entry_page") or "",
            "exit_page": value_of(s, "exit_page") or "",
            "channel": channel_label(value_of(s, "channel")),
            "referrer": value_of(s, "referrer") or "",
            "country": value_of(s, "country") or "",
            "country_name": country_name(value_of(s, "country")),
            "browser": value_of(s, "browser") or "",
            "operating_system": value_of(s, "operating_system") or "",
            "device_type": value_of(s, "device_type") or "",
            "session_id": value_of(s, "session_id"),
            "user_id": value_of(s, "user_id") or "",
        }
        for s in sessions
    ]
    columns = [
        "session_start",
        "session_end",
        "duration_seconds",
        "duration",
        "pageviews",
        "entry_page",
        "exit_page",
        "channel",
        "referrer",
        "country",
        "country_name",
        "browser",
        "operating_system",
        "device_type",
        "session_id",
        "user_id",
    ]
    return pd.DataFrame.from_records(records, columns=columns)


def sessions_body(
    sessions: Sequence[Any], view: Any, href: Callable[[int], str], page_size: int, total: int | None = None
) -> Any:
    """The converted-sessions table of one page with its pager, or an empty state that says what to try.

    ``total`` (the goal's conversions in the view) gives "page x of y"; without it the pager only knows whether the
    page was full.
    """
    if not sessions:
        if view.page > 1:
            return empty_state("No more sessions", "This is past the last page.")
        return empty_state("No session reached this goal in the range", "Try a longer date range, or remove filters.")
    df = sessions_frame(sessions, view.time_zone)
    # On screen: minutes are enough, and a referrer reads best as its host (the CSV keeps both in full).
    df["session_start"] = df["session_start"].str.slice(0, 16)
    df["session_end"] = df["session_end"].str.slice(0, 16)
    # The start time opens the session's timeline (the same page the sessions list links to).
    search = view.to_search(goal=None, page=1)
    df["session_start"] = [
        f"[{started}]({app_href('/sessions/' + quote(str(sid), safe=''))}{search})"
        for started, sid in zip(df["session_start"], df["session_id"], strict=True)
    ]
    df["referrer"] = df["referrer"].map(referrer_host)
    df["country"] = df["country"].map(country_label)  # the CSV keeps the code and the name apart
    # One column for what the visitor used keeps the table within the page (the CSV has them apart).
    df["platform"] = [
        " · ".join(part for part in parts if part)
        for parts in zip(df["browser"], df["operating_system"], df["device_type"], strict=True)
    ]
    # The API lists sessions by their end, latest first: the end is shown, and its header says it is the order.
    titles = {"session_start": f"Started ({view.time_zone})", "session_end": f"Ended ({view.time_zone}) ↓"}
    columns = [(key, titles.get(key, label)) for key, label in SESSION_COLUMNS]
    table = data_table(
        df,
        ids.GOAL_SESSIONS_TABLE,
        columns=columns,
        markdown=("session_start",),
        nowrap=("session_start", "session_end", "duration", "pageviews", "country"),
    )
    pages = link_pager(
        view.page,
        total_pages(total, page_size) if total is not None else None,
        href,
        has_next=len(sessions) >= page_size,
        link_class=SMALL_LINKS,
    )
    order = "latest end first"
    label = f"{format_number(total)} sessions, {order}" if total is not None else order.capitalize()
    return [table, html.Div([html.Span(label, className="muted table-count"), pages], className="table-foot")]
