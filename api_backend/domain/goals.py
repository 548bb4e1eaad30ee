"""Goal bodies (create and replace) and the Goal JSON object.

A goal is ``{name?, goalType, config}``. ``goalType`` is ``path`` or ``event`` (the API spec) or one of the
autocapture types ``outbound, button_click, form_submit, copy`` (as the peer). Config rules:

- ``path``: ``pathPattern`` required (``*`` = one or more characters except ``/``, ``**`` = anything); it is a path,
  so it starts with ``/`` (a full URL or a bare word is refused with a hint), and ``***`` or longer runs of stars,
  which the syntax does not define, are refused;
- ``event``: ``eventName`` required; ``eventPropertyKey`` and ``eventPropertyValue`` come together or not
  at all (the value is a string, number or boolean);
- autocapture: optional ``valuePattern`` (at most 512 characters; empty matches every event of the type);
- ``event`` and autocapture goals may also carry ``propertyFilters``: ``[{key, value}]`` all matched on one event.

Config keys of another goal type are dropped; unknown keys are refused, so a typo cannot create a goal
that silently never matches.
"""

from __future__ import annotations

import math
from typing import Any

from api_backend.errors import FieldError, InvalidRequestError
from api_backend.formats import iso_utc
from api_backend.query.filters import encodable
from api_backend.store.models import Goal

__all__ = ["GOAL_TYPES", "PATH_HINT", "goal_json", "path_pattern_problem", "validate_goal_body"]

GOAL_TYPES = ("path", "event", "outbound", "button_click", "form_submit", "copy")
CONFIG_KEYS = ("pathPattern", "eventName", "eventPropertyKey", "eventPropertyValue", "valuePattern", "propertyFilters")
MAX_NAME = 255
MAX_PATTERN = 512
MAX_KEY = 100
MAX_PROPERTY_FILTERS = 20


def _is_scalar(value: Any) -> bool:
    if isinstance(value, bool | str):
        return True
    return isinstance(value, int | float) and math.isfinite(value)


def _text(config: dict[str, Any], key: str, errors: list[FieldError], *, required: bool, limit: int) -> str | None:
    value = config.get(key)
    if value is None or (value == "" and not required):
        if required:
            errors.append(FieldError(f"config.{key}", "is required for this goal type"))
        return None
    if not isinstance(value, str):
        errors.append(FieldError(f"config.{key}", "must be a string"))
        return None
    if required and not value.strip():
        errors.append(FieldError(f"config.{key}", "must not be empty"))
        return None
    if len(value) > limit:
        errors.append(FieldError(f"config.{key}", f"must be at most {limit} characters"))
        return None
    return value


PATH_HINT = "paths start with /; use the path, not the URL (for example /pricing)"


def path_pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` can never match a tracked path (tracked paths start with ``/`` and hold no host), or ``None``."""
    if "://" in pattern or pattern.lower().startswith(("http:", "https:", "www.")):
        return f"is a URL, not a path: {PATH_HINT}"
    if not pattern.startswith("/"):
        return f"must start with /: {PATH_HINT}"
    if "***" in pattern:
        return "uses ***, which is not a wildcard: * matches one path segment, ** any number of them"
    return None


def _property_filters(config: dict[str, Any], errors: list[FieldError]) -> list[dict[str, Any]] | None:
    raw = config.get("propertyFilters")
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) > MAX_PROPERTY_FILTERS:
        errors.append(
            FieldError("config.propertyFilters", f"must be a list of at most {MAX_PROPERTY_FILTERS} {{key, value}}")
        )
        return None
    result = []
    for i, item in enumerate(raw):
        where = f"config.propertyFilters[{i}]"
        if not isinstance(item, dict) or set(item) - {"key", "value"}:
            errors.append(FieldError(where, "must be an object {key, value}"))
            continue
        key, value = item.get("key"), item.get("value")
        if not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY or '"' in key or "\\" in key:
            errors.append(FieldError(f"{where}.key", f"must be a non-empty string of at most {MAX_KEY} characters"))
            continue
        if not _is_scalar(value):
            errors.append(FieldError(f"{where}.value", "must be a string, number or boolean"))
            continue
        result.append({"key": key, "value": value})
    return result


def _unstorable_text(value: Any, where: str) -> str | None:
    """The path of the first string (key or value) holding a lone surrogate, which no database can store."""
    if isinstance(value, str):
        return None if encodable(value) else where
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            if not encodable(str(key)):
                return where or "body"
            found = _unstorable_text(item, path)
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _unstorable_text(item, f"{where}[{i}]")
            if found:
                return found
    return None


def validate_goal_body(body: Any) -> tuple[str | None, str, dict[str, Any]]:
    """``(name, goal_type, config)`` of a valid body; otherwise 400 listing every bad field."""
    if not isinstance(body, dict):
        raise InvalidRequestError.for_field("body", "must be a JSON object {name, goalType, config}")
    bad_text = _unstorable_text(body, "")
    if bad_text:
        raise InvalidRequestError.for_field(bad_text, "must be valid UTF-8 text (no lone surrogates)")
    errors: list[FieldError] = []
    name = body.get("name")
    if name is not None and not isinstance(name, str):
        errors.append(FieldError("name", "must be a string"))
        name = None
    elif isinstance(name, str):
        name = name.strip() or None
        if name is not None and len(name) > MAX_NAME:
            errors.append(FieldError("name", f"must be at most {MAX_NAME} characters"))
    goal_type = body.get("goalType")
    if goal_type not in GOAL_TYPES:
        errors.append(FieldError("goalType", f"must be one of {', '.join(GOAL_TYPES)}"))
    config = body.get("config")
    if not isinstance(config, dict):
        errors.append(FieldError("config", "must be an object"))
        config = {}
    for key in config:
        if key not in CONFIG_KEYS:
            errors.append(FieldError(f"config.{key}", "is not a known field"))

    clean: dict[str, Any] = {}
    if goal_type == "path":
        pattern = _text(config, "pathPattern", errors, required=True, limit=MAX_PATTERN)
        problem = path_pattern_problem(pattern) if pattern is not None else None
        if problem:
            errors.append(FieldError("config.pathPattern", problem))
        clean["pathPattern"] = pattern
    elif goal_type == "event":
        clean["eventName"] = _text(config, "eventName", errors, required=True, limit=MAX_PATTERN)
        key, value = config.get("eventPropertyKey"), config.get("eventPropertyValue")
        key = None if key == "" else key
        value = None if value == "" else value
        if (key is None) != (value is None):
            errors.append(
                FieldError(
                    "config.eventPropertyKey",
                    "Both eventPropertyKey and eventPropertyValue must be provided together or omitted together",
                )
            )
        elif key is not None:
            if not isinstance(key, str) or len(key) > MAX_KEY or '"' in key or "\\" in key:
                errors.append(
                    FieldError("config.eventPropertyKey", f"must be a string of at most {MAX_KEY} characters")
                )
            elif not _is_scalar(value):
                errors.append(FieldError("config.eventPropertyValue", "must be a string, number or boolean"))
            else:
                clean["eventPropertyKey"], clean["eventPropertyValue"] = key, value
    elif goal_type in GOAL_TYPES:
        pattern = _text(config, "valuePattern", errors, required=False, limit=MAX_PATTERN)
        if pattern is not None:
            clean["valuePattern"] = pattern
    if goal_type in GOAL_TYPES and goal_type != "path":
        filters = _property_filters(config, errors)
        if filters:
            clean["propertyFilters"] = filters

    if errors:
        first = errors[0]
        raise InvalidRequestError(f"{first.field}: {first.message}", errors)
    assert isinstance(goal_type, str)  # an unknown goal type was reported above
    return name, goal_type, clean


def goal_json(goal: Goal, metrics: dict[int, int] | None = None, total_sessions: int | None = None) -> dict[str, Any]:
    """The Goal object; with metrics it carries total_conversions, total_sessions and conversion_rate (0..1)."""
    data: dict[str, Any] = {
        "goalId": goal.goal_id,
        "siteId": goal.site_id,
        "name": goal.name,
        "goalType": goal.goal_type,
        "config": goal.config,
        "createdAt": iso_utc(goal.created_at),
    }
    if total_sessions is not None:
        conversions = int((metrics or {}).get(goal.goal_id, 0))
        data["total_conversions"] = conversions
        data["total_sessions"] = int(total_sessions)
        data["conversion_rate"] = conversions / total_sessions if total_sessions else 0.0
    return data
