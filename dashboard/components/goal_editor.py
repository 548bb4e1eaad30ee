"""The goal editor: the create/edit/clone form, the values it shows, and what it sends to the API.

Pure builders: a goal comes in as an ``api_client`` model (or a mapping with the same fields); the form layout, its
values, the API's camelCase config and the API's error details sorted per form field go out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from dash import dcc, html

from dashboard import ids
from dashboard.components.common import attrs, value_of
from dashboard.components.goals import GOAL_TYPE_LABELS

__all__ = [
    "FORM_FIELDS",
    "VALUE_PATTERN_TYPES",
    "field_errors",
    "form_values",
    "goal_config",
    "goal_form",
    "path_matches",
    "path_preview",
]

VALUE_PATTERN_TYPES = ("outbound", "button_click", "form_submit", "copy")
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
                                        html.Div(id=ids.GOALS_FORM_PATH_PREVIEW, className="path-preview"),
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
                            **attrs({"data-dismiss": "1"}),
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
    config = value_of(goal, "config") or {}
    value = value_of(config, "event_property_value")
    name = value_of(goal, "name") or ""
    return {
        "title": "Edit goal" if mode == "edit" else "Clone goal",
        "goal_id": value_of(goal, "goal_id") if mode == "edit" else None,
        "name": name if mode == "edit" else (f"{name} (copy)" if name else ""),
        "goal_type": value_of(goal, "goal_type") or "path",
        "path_pattern": value_of(config, "path_pattern") or "",
        "event_name": value_of(config, "event_name") or "",
        "event_property_key": value_of(config, "event_property_key") or "",
        "event_property_value": ""
        if value is None
        else (str(value).lower() if isinstance(value, bool) else str(value)),
        "value_pattern": value_of(config, "value_pattern") or "",
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


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """The path pattern as the API matches it: ``**`` anything, ``*`` one or more characters but ``/``."""
    parts = []
    for piece in re.split(r"(\*\*|\*)", pattern):
        parts.append(".*" if piece == "**" else "[^/]+" if piece == "*" else re.escape(piece))
    return re.compile("".join(parts))


def path_matches(pattern: str, paths: Sequence[str]) -> list[str]:
    """The ``paths`` a path goal with ``pattern`` would count (whole path, case-sensitive)."""
    regex = _pattern_regex(pattern)
    return [path for path in paths if regex.fullmatch(path)]


def path_preview(pattern: str | None, paths: Sequence[str], *, shown: int = 5) -> Any:
    """What the form says under the path field: which of the site's recent paths the pattern matches."""
    pattern = (pattern or "").strip()
    if not pattern:
        return None
    if not paths:
        return html.Span("No page views in this range to check the pattern against.", className="muted")
    matched = path_matches(pattern, paths)
    of = f"of the {len(paths):,} most visited paths in this range"
    if not matched:
        return html.Span(f"Matches none {of}.", className="path-preview-none")
    listed = [html.Code(path) for path in matched[:shown]]
    more = [f" and {len(matched) - shown:,} more"] if len(matched) > shown else []
    joined: list[Any] = []
    for i, code in enumerate(listed):
        joined += ([", "] if i else []) + [code]
    return html.Span([f"Matches {len(matched):,} {of}: ", *joined, *more], className="path-preview-some")
