"""Goals and goal sessions: the goals table with its rate bars, the goal form, and the sessions table.

Pure builders: goals and sessions come in as ``api_client`` models (or mappings with the same fields), components
and DataFrames go out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd
from dash import dcc, html

from dashboard import ids
from dashboard.components.common import (
    channel_label,
    data_table,
    empty_state,
    format_duration,
    format_number,
    format_percent,
)

__all__ = [
    "FORM_FIELDS",
    "GOAL_TYPE_LABELS",
    "SESSION_COLUMNS",
    "SORT_OPTIONS",
    "field_errors",
    "form_values",
    "goal_config",
    "goal_form",
    "goal_target",
    "goals_frame",
    "goals_table",
    "pager",
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
VALUE_PATTERN_TYPES = ("outbound", "button_click", "form_submit", "copy")
SORT_OPTIONS = {"createdAt": "Newest", "name": "Name", "goalType": "Type", "goalId": "Id"}
# Form field -> the API's field names in error details.
FORM_FIELDS = {
    "name": ("name",),
    "goal_type": ("goalType",),
    "path_pattern": ("config.pathPattern",),
    "event_name": ("config.eventName",),
    "event_property_key": ("config.eventPropertyKey",),
    "event_property_value": ("config.eventPropertyValue",),
    "value_pattern": ("config.valuePattern",),
}
SESSION_COLUMNS = (
    ("session_start", "Started"),
    ("duration", "Duration"),
    ("pageviews", "Pageviews"),
    ("entry_page", "Entry page"),
    ("exit_page", "Exit page"),
    ("channel", "Channel"),
    ("referrer", "Referrer"),
    ("country", "Country"),
    ("platform", "Browser · OS · device"),
)


def _get(item: Any, key: str, default: Any = None) -> Any:
    if isinstance(item, Mapping):
        return item.get(key, default)
    return getattr(item, key, default)


def goal_target(goal: Any) -> str:
    """What a goal matches, in words: ``/pricing``, ``signup where plan = pro``, ``any outbound link``."""
    config = _get(goal, "config") or {}
    kind = _get(goal, "goal_type")
    if kind == "path":
        return _get(config, "path_pattern") or "–"
    if kind == "event":
        name = _get(config, "event_name") or "–"
        key, value = _get(config, "event_property_key"), _get(config, "event_property_value")
        if key and value is not None:
            shown = ("true" if value else "false") if isinstance(value, bool) else value
            return f"{name} where {key} = {shown}"
        return name
    pattern = _get(config, "value_pattern")
    noun = GOAL_TYPE_LABELS.get(kind, kind or "event").lower()
    return f"{noun} matching {pattern}" if pattern else f"any {noun}"


def goals_table(
    goals: Sequence[Any],
    sessions_href: Callable[[int], str],
    *,
    read_only: bool = False,
) -> html.Table:
    """One row per goal: name (opens its sessions), type, target, conversions, sessions, rate and a rate bar.

    The bar's width is the conversion rate itself (0..100% of the cell), so rows compare at a glance. Without
    ``read_only`` each row has edit, clone and delete buttons.
    """
    head = ["Goal", "Type", "Matches", "Conversions", "Sessions", "Conversion rate"]
    if not read_only:
        head.append("")
    numeric = {"Conversions", "Sessions", "Conversion rate"}
    header = html.Thead(html.Tr([html.Th(h, className="num" if h in numeric else None) for h in head]))
    rows = []
    for goal in goals:
        goal_id = _get(goal, "goal_id")
        rate = float(_get(goal, "conversion_rate") or 0.0)
        percent = max(0.0, min(rate * 100, 100.0))
        cells = [
            html.Td(
                dcc.Link(_get(goal, "name") or f"Goal {goal_id}", href=sessions_href(goal_id), className="goal-name"),
            ),
            html.Td(
                html.Span(GOAL_TYPE_LABELS.get(_get(goal, "goal_type"), _get(goal, "goal_type")), className="badge")
            ),
            html.Td(html.Code(goal_target(goal), className="goal-target")),
            html.Td(format_number(_get(goal, "total_conversions")), className="num"),
            html.Td(format_number(_get(goal, "total_sessions")), className="num"),
            html.Td(
                html.Div(
                    [
                        html.Span(format_percent(rate * 100), className="rate-value"),
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
    return html.Table([header, html.Tbody(rows)], className="table goals-table", id=ids.GOALS_TABLE)


def goals_frame(goals: Sequence[Any]) -> pd.DataFrame:
    """The goals as a flat table for CSV: conversion rate as a fraction and as a percentage."""
    records = [
        {
            "goal_id": _get(g, "goal_id"),
            "name": _get(g, "name") or "",
            "goal_type": _get(g, "goal_type"),
            "matches": goal_target(g),
            "conversions": _get(g, "total_conversions"),
            "sessions": _get(g, "total_sessions"),
            "conversion_rate": _get(g, "conversion_rate"),
            "conversion_rate_percent": round(float(_get(g, "conversion_rate") or 0) * 100, 2),
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


def pager(page: int, total_pages: int | None, href: Callable[[int], str], *, has_next: bool | None = None) -> html.Div:
    """Previous/next links and "page x of y"; with an unknown total, ``has_next`` decides the next link."""
    more = has_next if total_pages is None else page < total_pages
    label = f"Page {page}" + (f" of {max(total_pages, 1)}" if total_pages is not None else "")
    return html.Div(
        [
            dcc.Link("‹ Previous", href=href(page - 1), className="button button-secondary button-small")
            if page > 1
            else html.Span("‹ Previous", className="button button-secondary button-small disabled"),
            html.Span(label, className="pager-label"),
            dcc.Link("Next ›", href=href(page + 1), className="button button-secondary button-small")
            if more
            else html.Span("Next ›", className="button button-secondary button-small disabled"),
        ],
        className="pager",
    )


# --- the form ---------------------------------------------------------------------------------------------------------
def _field(label: str, control: Any, field: str, help_text: Any = None) -> html.Div:
    children = [html.Label(label, className="field-label"), control]
    if help_text is not None:
        children.append(html.Div(help_text, className="field-help"))
    children.append(html.Div(id={"type": ids.GOALS_FORM_ERROR_TYPE, "field": field}, className="field-error"))
    return html.Div(children, className="field")


PATH_HELP = html.Div(
    [
        "Matched against the whole path, case-sensitive. ",
        html.Code("*"),
        " matches one path segment (no ",
        html.Code("/"),
        "), ",
        html.Code("**"),
        " matches anything. Examples: ",
        html.Code("/pricing"),
        ", ",
        html.Code("/blog/*"),
        " (a post, not deeper), ",
        html.Code("/docs/**"),
        " (every docs page).",
    ]
)


def goal_form() -> html.Div:
    """The create/edit/clone panel (a modal), hidden until opened; values are set by callbacks."""
    return html.Div(
        html.Div(
            [
                html.Div(
                    [
                        html.H2("New goal", id=ids.GOALS_FORM_TITLE, className="modal-title"),
                        html.Button("×", id=ids.GOALS_FORM_CANCEL, n_clicks=0, className="modal-close", title="Close"),
                    ],
                    className="modal-head",
                ),
                dcc.Store(id=ids.GOALS_FORM_GOAL_ID),
                html.Div(
                    [
                        _field("Name", dcc.Input(id=ids.GOALS_FORM_NAME, type="text", className="input"), "name"),
                        _field(
                            "Goal type",
                            dcc.RadioItems(
                                id=ids.GOALS_FORM_TYPE,
                                options=[{"label": label, "value": key} for key, label in GOAL_TYPE_LABELS.items()],
                                value="path",
                                className="segmented segmented-wrap",
                                inline=True,
                            ),
                            "goal_type",
                        ),
                        html.Div(
                            _field(
                                "Path pattern",
                                html.Div(
                                    [
                                        dcc.Input(
                                            id=ids.GOALS_FORM_PATH,
                                            type="text",
                                            placeholder="/pricing",
                                            list=ids.GOALS_PATH_SUGGESTIONS,
                                            autoComplete="off",
                                            className="input mono",
                                        ),
                                        html.Datalist(id=ids.GOALS_PATH_SUGGESTIONS),
                                    ]
                                ),
                                "path_pattern",
                                PATH_HELP,
                            ),
                            id=ids.GOALS_FORM_PATH_FIELDS,
                        ),
                        html.Div(
                            [
                                _field(
                                    "Event name",
                                    html.Div(
                                        [
                                            dcc.Input(
                                                id=ids.GOALS_FORM_EVENT,
                                                type="text",
                                                placeholder="signup",
                                                list=ids.GOALS_EVENT_SUGGESTIONS,
                                                autoComplete="off",
                                                className="input",
                                            ),
                                            html.Datalist(id=ids.GOALS_EVENT_SUGGESTIONS),
                                        ]
                                    ),
                                    "event_name",
                                    "The exact name the site sends with the custom event.",
                                ),
                                html.Div(
                                    [
                                        _field(
                                            "Property (optional)",
                                            dcc.Input(
                                                id=ids.GOALS_FORM_PROPERTY_KEY,
                                                type="text",
                                                placeholder="plan",
                                                className="input",
                                            ),
                                            "event_property_key",
                                        ),
                                        _field(
                                            "Value",
                                            dcc.Input(
                                                id=ids.GOALS_FORM_PROPERTY_VALUE,
                                                type="text",
                                                placeholder="pro",
                                                className="input",
                                            ),
                                            "event_property_value",
                                        ),
                                    ],
                                    className="field-row",
                                ),
                                html.Div(
                                    "Only events whose property has this value count. Numbers compare as numbers, "
                                    "true/false as booleans.",
                                    className="field-help",
                                ),
                            ],
                            id=ids.GOALS_FORM_EVENT_FIELDS,
                            hidden=True,
                        ),
                        html.Div(
                            _field(
                                "Value pattern (optional)",
                                dcc.Input(id=ids.GOALS_FORM_VALUE_PATTERN, type="text", className="input mono"),
                                "value_pattern",
                                "Leave empty to count every such interaction; * and ** work as in path patterns.",
                            ),
                            id=ids.GOALS_FORM_VALUE_FIELDS,
                            hidden=True,
                        ),
                        html.Div(id=ids.GOALS_FORM_MESSAGE),
                    ],
                    className="modal-body",
                ),
                html.Div(
                    [
                        html.Button(
                            "Cancel",
                            id=ids.GOALS_FORM_CANCEL_2,
                            n_clicks=0,
                            className="button button-secondary",
                            **{"data-dismiss": "1"},
                        ),
                        html.Button("Save goal", id=ids.GOALS_FORM_SAVE, n_clicks=0, className="button button-primary"),
                    ],
                    className="modal-foot",
                ),
            ],
            className="modal",
            role="dialog",
        ),
        id=ids.GOALS_FORM,
        className="modal-backdrop",
        hidden=True,
    )


def form_values(goal: Any | None, mode: str) -> dict[str, Any]:
    """What the form shows for ``mode`` ``create`` (empty), ``edit`` (the goal) or ``clone`` (a copy of it)."""
    if goal is None or mode == "create":
        return {
            "title": "New goal",
            "goal_id": None,
            "name": "",
            "goal_type": "path",
            "path_pattern": "",
            "event_name": "",
            "event_property_key": "",
            "event_property_value": "",
            "value_pattern": "",
        }
    config = _get(goal, "config") or {}
    value = _get(config, "event_property_value")
    name = _get(goal, "name") or ""
    return {
        "title": "Edit goal" if mode == "edit" else "Clone goal",
        "goal_id": _get(goal, "goal_id") if mode == "edit" else None,
        "name": name if mode == "edit" else (f"{name} (copy)" if name else ""),
        "goal_type": _get(goal, "goal_type") or "path",
        "path_pattern": _get(config, "path_pattern") or "",
        "event_name": _get(config, "event_name") or "",
        "event_property_key": _get(config, "event_property_key") or "",
        "event_property_value": ""
        if value is None
        else (str(value).lower() if isinstance(value, bool) else str(value)),
        "value_pattern": _get(config, "value_pattern") or "",
    }


def _typed(raw: str) -> str | int | float | bool:
    """A property value as typed: numbers and true/false become JSON numbers and booleans (the API compares so)."""
    text = raw.strip()
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return raw
    return number if number == number and abs(number) != float("inf") else raw


def goal_config(goal_type: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The API's camelCase config for the form's values (only the fields of ``goal_type``; blanks left out)."""

    def text(key: str) -> str:
        return (values.get(key) or "").strip()

    if goal_type == "path":
        return {"pathPattern": text("path_pattern")}
    if goal_type == "event":
        config: dict[str, Any] = {"eventName": text("event_name")}
        key, value = text("event_property_key"), values.get("event_property_value") or ""
        if key or value.strip():
            config["eventPropertyKey"] = key
            config["eventPropertyValue"] = _typed(value) if value.strip() else ""
        return config
    return {"valuePattern": text("value_pattern")} if text("value_pattern") else {}


def field_errors(details: Sequence[Mapping[str, str]]) -> tuple[dict[str, str], list[str]]:
    """Split the API's ``details`` into messages per form field and the ones that belong to no field."""
    by_api = {api: form for form, names in FORM_FIELDS.items() for api in names}
    fields: dict[str, str] = {}
    other: list[str] = []
    for item in details:
        name, message = item.get("field", ""), item.get("message", "")
        form = by_api.get(name)
        if form is None and name.startswith("config."):
            form = by_api.get(name.split(".")[0] + "." + name.split(".")[1])
        if form:
            fields.setdefault(form, message[:1].upper() + message[1:])
        else:
            other.append(f"{name}: {message}" if name else message)
    return fields, other


def referrer_host(referrer: str | None) -> str:
    """``https://www.google.com/search?q=x`` -> ``www.google.com``; text that is not a URL stays as it is."""
    if not referrer:
        return ""
    from urllib.parse import urlsplit

    host = urlsplit(referrer).hostname
    return host or referrer


# --- goal sessions ----------------------------------------------------------------------------------------------------
def _local(moment: datetime | None, zone: str) -> str:
    if moment is None:
        return ""
    try:
        tz = ZoneInfo(zone)
    except (KeyError, ValueError):
        tz = ZoneInfo("UTC")
    return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S")


def sessions_frame(sessions: Sequence[Any], time_zone: str) -> pd.DataFrame:
    """Goal sessions as a table: times in ``time_zone``, duration in seconds and as text, '' channel = Direct."""
    records = [
        {
            "session_start": _local(_get(s, "session_start"), time_zone),
            "session_end": _local(_get(s, "session_end"), time_zone),
            "duration_seconds": int(round(_get(s, "session_duration") or 0)),
            "duration": format_duration(_get(s, "session_duration") or 0),
            "pageviews": _get(s, "pageviews") or 0,
            "entry_page": _get(s, "entry_page") or "",
            "exit_page": _get(s, "exit_page") or "",
            "channel": channel_label(_get(s, "channel")),
            "referrer": _get(s, "referrer") or "",
            "country": _get(s, "country") or "",
            "browser": _get(s, "browser") or "",
            "operating_system": _get(s, "operating_system") or "",
            "device_type": _get(s, "device_type") or "",
            "session_id": _get(s, "session_id"),
            "user_id": _get(s, "user_id") or "",
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
    df["referrer"] = df["referrer"].map(referrer_host)
    # One column for what the visitor used keeps the table within the page (the CSV has them apart).
    df["platform"] = [
        " · ".join(part for part in parts if part)
        for parts in zip(df["browser"], df["operating_system"], df["device_type"], strict=True)
    ]
    columns = [
        (key, f"Started ({view.time_zone})" if key == "session_start" else label) for key, label in SESSION_COLUMNS
    ]
    table = data_table(
        df,
        ids.GOAL_SESSIONS_TABLE,
        columns=columns,
        nowrap=("session_start", "duration", "pageviews", "country"),
    )
    total_pages = max(1, -(-total // page_size)) if total is not None else None
    pages = pager(view.page, total_pages, href, has_next=len(sessions) >= page_size)
    label = f"{format_number(total)} sessions, newest first" if total is not None else "Newest first"
    return [table, html.Div([html.Span(label, className="muted table-count"), pages], className="table-foot")]
