"""Validation of tracker payloads: the body ``@rybbit/node`` 1.0.0 and ``@rybbit/js`` send to ``/api/track``.

``parse_event(body)`` checks one event against the per-type rules of peer-write section 4.1 and returns a
``TrackEvent``; anything wrong raises ``InvalidRequestError`` with one ``details`` entry per bad field (the
field named as sent, ``properties.message`` for a key inside ``properties``). Unknown fields are ignored so
newer trackers keep working. Differences from the peer, on purpose:

- ``api_key`` has no 35-character limit (sitelens keys are longer); it may also arrive as a Bearer header.
- ``properties`` may be a JSON-encoded string (what the trackers send) or a JSON object.
- ``null`` for an optional field means "absent".
"""

from __future__ import annotations

import ipaddress
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import orjson

from api_backend.errors import FieldError, InvalidRequestError
from api_backend.store.events import EVENT_TYPES

__all__ = [
    "EVENT_FIELDS",
    "VITALS",
    "TrackEvent",
    "event_tuple",
    "fast_event",
    "holds_float",
    "load_json",
    "normal_ip",
    "parse_event",
    "parse_identify",
]

VITALS = ("lcp", "cls", "inp", "fcp", "ttfb")

# Optional string fields and their length limits (peer-write 4.1).
_STRING_LIMITS = {
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
_EVENT_NAME_LIMIT = 256
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


class _Errors:
    """Collects every bad field of one payload, so one 400 names them all."""

    def __init__(self) -> None:
        self.items: list[FieldError] = []

    def add(self, field: str, message: str) -> None:
        self.items.append(FieldError(field, message))

    def raise_if_any(self) -> None:
        if self.items:
            first = self.items[0]
            raise InvalidRequestError(f"Invalid event: {first.field} {first.message}.", self.items)


def _encodable(text: str) -> bool:
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


def _site_key(value: Any, errors: _Errors) -> str:
    if isinstance(value, bool) or value is None:
        errors.add("site_id", "is required (the numeric siteId or the string id)")
        return ""
    if isinstance(value, int):
        if value < 1:
            errors.add("site_id", "must be a positive number")
        return str(value)
    if isinstance(value, str) and value.strip() and len(value) <= 64 and _encodable(value):
        return value.strip()
    errors.add("site_id", "must be a non-empty string or a positive number")
    return ""


def _properties(kind: str, value: Any, errors: _Errors) -> dict[str, Any] | None:
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


def _check_typed_props(kind: str, props: dict[str, Any] | None, errors: _Errors) -> None:
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
    errors = _Errors()
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
    for field, limit in _STRING_LIMITS.items():
        value = body.get(field)
        if value is None:
            continue
        if not isinstance(value, str):
            errors.add(field, "must be a string")
        elif len(value) > limit:
            errors.add(field, f"must be at most {limit} characters")
        elif not _encodable(value):
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
    if name is not None and (not isinstance(name, str) or not _encodable(name)):
        errors.add("event_name", "must be a string of valid Unicode text")
        name = None
    if name is not None and len(name) > _EVENT_NAME_LIMIT:
        errors.add("event_name", f"must be at most {_EVENT_NAME_LIMIT} characters")
    elif kind in ("custom_event", "error") and not name:
        errors.add("event_name", f"is required for {kind} events")
    elif name:
        values["event_name"] = name

    if kind is not None:
        text = _props_text(kind, body.get("properties"), errors)
        if text is not None:
            values["props"] = text
    errors.raise_if_any()
    return TrackEvent(site_key=site_key, type=kind, **values)


def _props_text(kind: str, value: Any, errors: _Errors) -> str | None:
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
    if not _encodable(text):
        errors.add("properties", "must be valid Unicode text")
        return None
    return text


def parse_identify(body: Any) -> tuple[str, str, dict[str, Any]]:
    """Validate ``{site_id, user_id, traits?}`` of ``/api/identify``; return ``(site_key, user_id, traits)``."""
    errors = _Errors()
    if not isinstance(body, dict):
        raise InvalidRequestError("The body must be a JSON object.", [FieldError("body", "must be a JSON object")])
    site_key = _site_key(body.get("site_id"), errors)
    user_id = body.get("user_id")
    if not isinstance(user_id, str) or not user_id.strip() or not _encodable(user_id):
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
    return site_key, user_id.strip(), traits


# The batch fast path ---------------------------------------------------------------------------------------

# ``TrackEvent`` fields in order: the shape of the tuples ``fast_event`` returns (a tuple is several times
# cheaper to build than the frozen dataclass, which matters at a thousand events per request).
EVENT_FIELDS: tuple[str, ...] = tuple(TrackEvent.__slots__)
_TYPES = frozenset(EVENT_TYPES)
# Types whose ``properties`` have no per-type shape: their stored text depends only on the type's JSON rule.
_UNTYPED_PROPS = frozenset({"pageview", "custom_event", "performance", "button_click"})
_NAME_REQUIRED = frozenset({"custom_event", "error"})
_MAX_INT32 = 2**31 - 1
# Ints up to 2**53 convert to float exactly; larger ones go through ``parse_event`` (which decides overflow).
_MAX_EXACT_INT = 2**53
_NO_PROPS = object()
_NO_VITALS = (None,) * len(VITALS)


def event_tuple(event: TrackEvent) -> tuple[Any, ...]:
    """A ``TrackEvent`` as the field tuple ``fast_event`` returns."""
    return tuple(getattr(event, name) for name in EVENT_FIELDS)


@lru_cache(maxsize=65536)
def normal_ip(text: str) -> str | None:
    """``ip_address`` as ``parse_event`` stores it (the canonical form), or ``None`` when it is not an address."""
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        return None


@lru_cache(maxsize=2048)  # up to 4 KiB of text per entry, key and value
def _cached_props(kind: str, value: str) -> Any:
    """Stored props text of a ``properties`` string (``_NO_PROPS`` when the event has an error there)."""
    errors = _Errors()
    text = _props_text(kind, value, errors)
    return _NO_PROPS if errors.items else (text if text is not None else "{}")


def fast_event(body: Any) -> tuple[Any, ...] | None:
    """The ``parse_event`` result of a plain, valid event as a field tuple (see ``EVENT_FIELDS``), else ``None``.

    It accepts only what it can decide cheaply and exactly as ``parse_event`` would; anything else (a bad field,
    a float screen size, an object ``properties``, a type whose properties have a per-type shape, non-ASCII
    site ids) gives ``None`` and the caller runs ``parse_event``, which returns the same event or the error.
    """
    if type(body) is not dict:
        return None
    get = body.get
    site = get("site_id")
    if type(site) is int:
        if site < 1:
            return None
        site_key = str(site)
    elif type(site) is str and len(site) <= 64 and site.isascii():
        site_key = site.strip()
        if not site_key:
            return None
    else:
        return None
    kind = get("type")
    if type(kind) is not str or kind not in _TYPES or kind not in _UNTYPED_PROPS:
        return None

    # Unrolled (no loop, no list): this runs for every event of every batch.
    hostname = get("hostname")
    if hostname is None:
        hostname = ""
    elif type(hostname) is not str or len(hostname) > 253 or not (hostname.isascii() or _encodable(hostname)):
        return None
    pathname = get("pathname")
    if pathname is None:
        pathname = ""
    elif type(pathname) is not str or len(pathname) > 2048 or not (pathname.isascii() or _encodable(pathname)):
        return None
    querystring = get("querystring")
    if querystring is None:
        querystring = ""
    elif (
        type(querystring) is not str
        or len(querystring) > 2048
        or not (querystring.isascii() or _encodable(querystring))
    ):
        return None
    language = get("language")
    if language is None:
        language = ""
    elif type(language) is not str or len(language) > 35 or not (language.isascii() or _encodable(language)):
        return None
    page_title = get("page_title")
    if page_title is None:
        page_title = ""
    elif type(page_title) is not str or len(page_title) > 512 or not (page_title.isascii() or _encodable(page_title)):
        return None
    referrer = get("referrer")
    if referrer is None:
        referrer = ""
    elif type(referrer) is not str or len(referrer) > 2048 or not (referrer.isascii() or _encodable(referrer)):
        return None
    user_id = get("user_id")
    if user_id is None:
        user_id = ""
    elif type(user_id) is not str or len(user_id) > 255 or not (user_id.isascii() or _encodable(user_id)):
        return None
    user_agent = get("user_agent")
    if user_agent is None:
        user_agent = ""
    elif type(user_agent) is not str or len(user_agent) > 512 or not (user_agent.isascii() or _encodable(user_agent)):
        return None
    api_key = get("api_key")
    if api_key is None:
        api_key = ""
    elif type(api_key) is not str or len(api_key) > 512 or not (api_key.isascii() or _encodable(api_key)):
        return None

    width = get("screenWidth")
    if width is None:
        width = 0
    elif type(width) is not int or not 0 <= width <= _MAX_INT32:
        return None
    height = get("screenHeight")
    if height is None:
        height = 0
    elif type(height) is not int or not 0 <= height <= _MAX_INT32:
        return None

    ip = get("ip_address")
    if ip is None:
        ip = ""
    elif type(ip) is not str or (ip := normal_ip(ip)) is None:
        return None

    vitals = (get("lcp"), get("cls"), get("inp"), get("fcp"), get("ttfb"))
    if vitals != _NO_VITALS:
        checked = []
        for value in vitals:
            if value is not None:
                if type(value) is float:
                    if not (math.isfinite(value) and value >= 0):
                        return None
                elif type(value) is not int or not 0 <= value <= _MAX_EXACT_INT:
                    return None
                value = float(value) if kind == "performance" else None
            checked.append(value)
        vitals = tuple(checked)

    name = get("event_name")
    if name is None or name == "":
        if kind in _NAME_REQUIRED:
            return None
        name = ""
    elif type(name) is not str or len(name) > _EVENT_NAME_LIMIT or not (name.isascii() or _encodable(name)):
        return None

    props = get("properties")
    if props is None or props == "":
        props = "{}"
    elif type(props) is str:
        props = _cached_props(kind, props)
        if props is _NO_PROPS:
            return None
    else:
        return None
    return (
        site_key,
        kind,
        hostname,
        pathname,
        querystring,
        width,
        height,
        language,
        page_title,
        referrer,
        user_id.strip(),
        name,
        props,
        *vitals,
        ip,
        user_agent,
        api_key,
    )


def load_json(raw: bytes) -> tuple[Any, bool]:
    """Decode a request body: ``(value, True)`` from orjson, or ``(value, False)`` from ``json.loads``.

    orjson refuses some bodies the json module accepts (lone surrogates, ``NaN``, UTF-16): those are decoded by
    ``json.loads``. The only difference in what both accept: orjson reads integers beyond 64 bits as floats.
    That can change an event's outcome only through ``site_id`` or an object ``properties``, so callers decode
    again with ``json.loads`` before reporting an error or storing object properties of an orjson value that
    holds a float (``holds_float``).
    Raises ``ValueError`` or ``RecursionError`` for a body that is not JSON.
    """
    try:
        return orjson.loads(raw), True
    except orjson.JSONDecodeError:
        return json.loads(raw), False


def holds_float(value: Any) -> bool:
    """Whether a decoded JSON value holds a float anywhere: only then can orjson's reading differ from json's."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is float:
            return True
        if kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return False
