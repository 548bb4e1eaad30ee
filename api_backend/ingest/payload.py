"""Validation of tracker payloads: the body ``@rybbit/node`` 1.0.0 and ``@rybbit/js`` send to ``/api/track``.

``parse_event(body)`` checks one event against the per-type rules of peer-write section 4.1 and returns a
``TrackEvent``; anything wrong raises ``InvalidRequestError`` with one ``details`` entry per bad field (the
field named as sent, ``properties.message`` for a key inside ``properties``). Unknown fields are ignored so
newer trackers keep working. Differences from the peer, on purpose:

- ``api_key`` has no 35-character limit (sitelens keys are longer); it may also arrive as a Bearer header.
- ``properties`` may be a JSON-encoded string (what the trackers send) or a JSON object.
- ``null`` for an optional field means "absent".

``parse_identify(body)`` checks the body of ``/api/identify`` the same way. The batch path's cheap checker for plain
events (``fast_event`` and the body decoding it relies on) lives in ``api_backend.ingest.fastpath``.
"""

from __future__ import annotations

import ipaddress
import json
import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from api_backend.domain.sites import SITE_KEY_MESSAGE, is_site_key
from api_backend.errors import FieldError, InvalidRequestError
from api_backend.store.events import EVENT_TYPES

__all__ = [
    "EVENT_NAME_LIMIT",
    "STRING_LIMITS",
    "VITALS",
    "PayloadErrors",
    "encodable",
    "props_text",
    "TrackEvent",
    "parse_event",
    "parse_identify",
]

VITALS = ("lcp", "cls", "inp", "fcp", "ttfb")

# Optional string fields and their length limits (peer-write 4.1): the one table the checkers, the fast path and
# the documented request schema read.
STRING_LIMITS: dict[str, int] = {
    "hostname": 253,
    "pathname": 2048,
    "querystring": 2048,
    "language": 35,
    "page_title": 512,
    "referrer": 2048,
    "user_id": 255,
    "user_agent": 512,
    "api_key": 512,
}
_PROPS_LIMIT = 2048
_ERROR_PROPS_LIMIT = 4096
EVENT_NAME_LIMIT = 256
# Types whose ``properties`` must be valid JSON; for the rest invalid JSON is stored as no properties.
_JSON_REQUIRED = {"custom_event", "outbound", "error", "button_click", "copy", "form_submit", "input_change"}
_PROPS_REQUIRED = {"outbound", "error", "copy", "form_submit", "input_change"}


@dataclass(frozen=True, slots=True)
class TrackEvent:
    """One validated tracker event (strings already length-checked; ``props`` is JSON object text)."""

    site_key: str
    type: str
    hostname: str = ""
    pathname: str = ""
    querystring: str = ""
    screen_width: int = 0
    screen_height: int = 0
    language: str = ""
    page_title: str = ""
    referrer: str = ""
    user_id: str = ""
    event_name: str = ""
    props: str = "{}"
    lcp: float | None = None
    cls: float | None = None
    inp: float | None = None
    fcp: float | None = None
    ttfb: float | None = None
    ip_address: str = ""
    user_agent: str = ""
    api_key: str = ""


class PayloadErrors:
    """Collects every bad field of one payload, so one 400 names them all."""

    def __init__(self) -> None:
        self.items: list[FieldError] = []

    def add(self, field: str, message: str) -> None:
        """Note that ``field`` is bad, and why."""
        self.items.append(FieldError(field, message))

    def raise_if_any(self) -> None:
        """Refuse the payload with a 400 naming every bad field, if any was noted."""
        if self.items:
            first = self.items[0]
            raise InvalidRequestError(f"Invalid event: {first.field} {first.message}.", self.items)


def encodable(text: str) -> bool:
    """False for strings holding lone surrogates (valid in JSON escapes, impossible to store as UTF-8)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _site_key(value: Any, errors: PayloadErrors) -> str:
    if isinstance(value, bool) or value is None:
        errors.add("site_id", "is required (the numeric siteId or the string id)")
        return ""
    if isinstance(value, int):
        if value < 1:
            errors.add("site_id", "must be a positive number")
        return str(value)
    if isinstance(value, str) and is_site_key(value.strip()):
        return value.strip()
    if isinstance(value, str) and value.strip():
        errors.add("site_id", SITE_KEY_MESSAGE)
        return ""
    errors.add("site_id", "must be a non-empty string or a positive number")
    return ""


def _properties(kind: str, value: Any, errors: PayloadErrors) -> dict[str, Any] | None:
    """Decode ``properties`` (string or object) and check its size; ``None`` when absent or ignorable."""
    limit = _ERROR_PROPS_LIMIT if kind == "error" else _PROPS_LIMIT
    if value is None or value == "":
        if kind in _PROPS_REQUIRED:
            errors.add("properties", f"is required for {kind} events")
        return None
    if isinstance(value, dict):
        try:
            text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            errors.add("properties", "must contain only JSON values")
            return None
        decoded: Any = value
    elif isinstance(value, str):
        text = value
        if len(text) > limit:
            errors.add("properties", f"must be at most {limit} characters when JSON-encoded")
            return None
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):
            decoded = None
            if kind in _JSON_REQUIRED:
                errors.add("properties", "must be a JSON-encoded object")
                return None
    else:
        errors.add("properties", "must be a JSON-encoded string or an object")
        return None
    if len(text) > limit:
        errors.add("properties", f"must be at most {limit} characters when JSON-encoded")
        return None
    if not isinstance(decoded, dict):
        if kind in _JSON_REQUIRED and decoded is not None:
            errors.add("properties", "must be a JSON object")
        return None
    return decoded


def _check_typed_props(kind: str, props: dict[str, Any] | None, errors: PayloadErrors) -> None:
    """The per-type shape of ``properties`` (outbound, error, copy, form_submit, input_change)."""
    if props is None:
        return

    def string(key: str, required: bool, non_empty: bool = False) -> None:
        value = props.get(key)
        if value is None:
            if required:
                errors.add(f"properties.{key}", "is required")
            return
        if not isinstance(value, str):
            errors.add(f"properties.{key}", "must be a string")
        elif non_empty and not value:
            errors.add(f"properties.{key}", "must not be empty")

    def number(key: str, required: bool, minimum: float | None = None) -> None:
        value = props.get(key)
        if value is None:
            if required:
                errors.add(f"properties.{key}", "is required")
            return
        if not _is_number(value):
            errors.add(f"properties.{key}", "must be a number")
        elif minimum is not None and value < minimum:
            errors.add(f"properties.{key}", f"must be at least {minimum:g}")

    if kind == "outbound":
        string("url", True, non_empty=True)
        url = props.get("url")
        if isinstance(url, str) and url:
            try:
                parts = urlsplit(url)
                absolute = bool(parts.scheme and parts.netloc)
            except ValueError:
                absolute = False
            if not absolute:
                errors.add("properties.url", "must be an absolute URL")
        string("text", False)
        string("target", False)
    elif kind == "error":
        string("message", True)
        # The peer only checks these when truthy: an empty stack or a 0 line number is fine.
        for key in ("stack", "fileName"):
            if props.get(key):
                string(key, False)
        for key in ("lineNumber", "columnNumber"):
            if props.get(key):
                number(key, False)
    elif kind == "copy":
        string("sourceElement", True)
        string("text", False)
        number("textLength", False, 0)
    elif kind == "form_submit":
        for key in ("formId", "formName", "formAction", "method"):
            string(key, True)
        number("fieldCount", True, 0)
    elif kind == "input_change":
        string("element", True)
        string("inputName", True)


def parse_event(body: Any) -> TrackEvent:
    """Validate one tracker event; raise ``InvalidRequestError`` naming every bad field."""
    errors = PayloadErrors()
    if not isinstance(body, dict):
        raise InvalidRequestError("An event must be a JSON object.", [FieldError("body", "must be a JSON object")])
    site_key = _site_key(body.get("site_id"), errors)
    kind = body.get("type")
    if kind is None:
        errors.add("type", "is required")
    elif kind not in EVENT_TYPES:
        errors.add("type", f"must be one of {', '.join(EVENT_TYPES)}")
        kind = None

    values: dict[str, Any] = {}
    for field, limit in STRING_LIMITS.items():
        value = body.get(field)
        if value is None:
            continue
        if not isinstance(value, str):
            errors.add(field, "must be a string")
        elif len(value) > limit:
            errors.add(field, f"must be at most {limit} characters")
        elif not encodable(value):
            errors.add(field, "must be valid Unicode text")
        else:
            values[field] = value
    values["user_id"] = values.get("user_id", "").strip()

    for field, column in (("screenWidth", "screen_width"), ("screenHeight", "screen_height")):
        value = body.get(field)
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            errors.add(field, "must be a whole number >= 0")
        elif value > 2**31 - 1:
            errors.add(field, "is too large")
        else:
            values[column] = value

    ip = body.get("ip_address")
    if ip is not None:
        try:
            values["ip_address"] = str(ipaddress.ip_address(ip.strip())) if isinstance(ip, str) else None
        except ValueError:
            values["ip_address"] = None
        if values["ip_address"] is None:
            errors.add("ip_address", "must be an IPv4 or IPv6 address")
            values.pop("ip_address")

    for field in VITALS:
        value = body.get(field)
        if value is None:
            continue
        if not _is_number(value) or value < 0:
            errors.add(field, "must be a number >= 0 or null")
        elif kind == "performance":
            values[field] = float(value)

    name = body.get("event_name")
    if name is not None and (not isinstance(name, str) or not encodable(name)):
        errors.add("event_name", "must be a string of valid Unicode text")
        name = None
    if name is not None and len(name) > EVENT_NAME_LIMIT:
        errors.add("event_name", f"must be at most {EVENT_NAME_LIMIT} characters")
    elif kind in ("custom_event", "error") and not name:
        errors.add("event_name", f"is required for {kind} events")
    elif name:
        values["event_name"] = name

    if kind is not None:
        text = props_text(kind, body.get("properties"), errors)
        if text is not None:
            values["props"] = text
    errors.raise_if_any()
    assert kind is not None  # a missing or unknown type was reported above
    return TrackEvent(site_key=site_key, type=kind, **values)


def props_text(kind: str, value: Any, errors: PayloadErrors) -> str | None:
    """The stored ``props`` text of an event's ``properties`` (``None``: store no properties or invalid)."""
    props = _properties(kind, value, errors)
    _check_typed_props(kind, props, errors)
    if not props:
        return None
    try:
        text = json.dumps(props, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (ValueError, RecursionError):  # NaN or Infinity parsed from the string form
        errors.add("properties", "must not contain NaN or Infinity")
        return None
    if not encodable(text):
        errors.add("properties", "must be valid Unicode text")
        return None
    return text


def parse_identify(body: Any) -> tuple[str, str, dict[str, Any]]:
    """Validate ``{site_id, user_id, traits?}`` of ``/api/identify``; return ``(site_key, user_id, traits)``."""
    errors = PayloadErrors()
    if not isinstance(body, dict):
        raise InvalidRequestError("The body must be a JSON object.", [FieldError("body", "must be a JSON object")])
    site_key = _site_key(body.get("site_id"), errors)
    user_id = body.get("user_id")
    if not isinstance(user_id, str) or not user_id.strip() or not encodable(user_id):
        errors.add("user_id", "is required (a non-empty string)")
    elif len(user_id.strip()) > 255:
        errors.add("user_id", "must be at most 255 characters")
    traits = body.get("traits")
    if traits is None:
        traits = {}
    elif not isinstance(traits, dict):
        errors.add("traits", "must be an object")
    else:
        try:
            too_long = len(json.dumps(traits, default=str)) > _PROPS_LIMIT
        except (ValueError, RecursionError):
            too_long = True
        if too_long:
            errors.add("traits", f"must be at most {_PROPS_LIMIT} characters when JSON-encoded")
    errors.raise_if_any()
    assert isinstance(user_id, str)  # anything else was reported above
    return site_key, user_id.strip(), traits
