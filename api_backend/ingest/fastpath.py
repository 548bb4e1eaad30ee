"""The batch fast path: a cheap checker for plain tracker events and the request-body decoder it relies on.

``fast_event(body)`` accepts only an event it can decide cheaply and exactly as ``payload.parse_event`` would
(pageview, custom_event, performance and button_click with plain fields) and returns it as a field tuple in
``EVENT_FIELDS`` order; anything else gives ``None`` and the caller runs ``parse_event``, which returns the same
event or the error. ``event_tuple`` turns a ``TrackEvent`` into that tuple. ``plain_batch(raw)`` does the same for
a whole batch body in one typed decode (msgspec): the tuples of its events when every one of them is plain and
valid, else ``None`` and the caller decodes the body and checks event by event. ``load_json`` decodes a request body
with orjson (falling back to the json module), and ``holds_float`` says when orjson's reading of a value may differ
from json's. ``normal_ip`` is the cached canonical form of an ``ip_address``.
"""

from __future__ import annotations

import ipaddress
import json
import math
from functools import lru_cache
from typing import Annotated, Any, Literal

import msgspec
import orjson

from api_backend.ingest.payload import (
    EVENT_NAME_LIMIT,
    STRING_LIMITS,
    VITALS,
    PayloadErrors,
    TrackEvent,
    encodable,
    props_text,
)
from api_backend.store.events import EVENT_TYPES

__all__ = [
    "EVENT_FIELDS",
    "event_tuple",
    "fast_event",
    "holds_float",
    "load_json",
    "normal_ip",
    "plain_batch",
]

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
# Module constants rather than dict lookups: they are read for every field of every event.
_HOSTNAME_MAX, _PATHNAME_MAX, _QUERYSTRING_MAX = (STRING_LIMITS[k] for k in ("hostname", "pathname", "querystring"))
_LANGUAGE_MAX, _PAGE_TITLE_MAX, _REFERRER_MAX = (STRING_LIMITS[k] for k in ("language", "page_title", "referrer"))
_USER_ID_MAX, _USER_AGENT_MAX, _API_KEY_MAX = (STRING_LIMITS[k] for k in ("user_id", "user_agent", "api_key"))
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
    errors = PayloadErrors()
    text = props_text(kind, value, errors)
    return _NO_PROPS if errors.items else (text if text is not None else "{}")


def _site_key(site: Any) -> str | None:
    """``site_id`` as the key sites are looked up by: a positive integer, or a short ASCII id; else ``None``."""
    if type(site) is int:
        return str(site) if site >= 1 else None
    if type(site) is str and len(site) <= 64 and site.isascii():
        return site.strip() or None
    return None


def _stored_vitals(values: tuple[Any, ...], kind: str) -> tuple[float | None, ...] | None:
    """The five vitals as stored, or ``None`` when ``parse_event`` must decide.

    Stored as floats on ``performance`` events and as none on the others; ``None`` for a value that is not a finite
    number >= 0, or an integer a float cannot hold exactly.
    """
    checked: list[float | None] = []
    for value in values:
        if value is not None:
            if type(value) is float:
                if not (math.isfinite(value) and value >= 0):
                    return None
            elif type(value) is not int or not 0 <= value <= _MAX_EXACT_INT:
                return None
            value = float(value) if kind == "performance" else None
        checked.append(value)
    return tuple(checked)


def fast_event(body: Any) -> tuple[Any, ...] | None:
    """The ``parse_event`` result of a plain, valid event as a field tuple (see ``EVENT_FIELDS``), else ``None``.

    It accepts only what it can decide cheaply and exactly as ``parse_event`` would; anything else (a bad field,
    a float screen size, an object ``properties``, a type whose properties have a per-type shape, non-ASCII
    site ids) gives ``None`` and the caller runs ``parse_event``, which returns the same event or the error.
    """
    if type(body) is not dict:
        return None
    get = body.get
    site_key = _site_key(get("site_id"))
    if site_key is None:
        return None
    kind = get("type")
    if type(kind) is not str or kind not in _TYPES or kind not in _UNTYPED_PROPS:
        return None

    # Unrolled (no loop, no list): this runs for every event of every batch.
    hostname = get("hostname")
    if hostname is None:
        hostname = ""
    elif type(hostname) is not str or len(hostname) > _HOSTNAME_MAX or not (hostname.isascii() or encodable(hostname)):
        return None
    pathname = get("pathname")
    if pathname is None:
        pathname = ""
    elif type(pathname) is not str or len(pathname) > _PATHNAME_MAX or not (pathname.isascii() or encodable(pathname)):
        return None
    querystring = get("querystring")
    if querystring is None:
        querystring = ""
    elif (
        type(querystring) is not str
        or len(querystring) > _QUERYSTRING_MAX
        or not (querystring.isascii() or encodable(querystring))
    ):
        return None
    language = get("language")
    if language is None:
        language = ""
    elif type(language) is not str or len(language) > _LANGUAGE_MAX or not (language.isascii() or encodable(language)):
        return None
    page_title = get("page_title")
    if page_title is None:
        page_title = ""
    elif (
        type(page_title) is not str
        or len(page_title) > _PAGE_TITLE_MAX
        or not (page_title.isascii() or encodable(page_title))
    ):
        return None
    referrer = get("referrer")
    if referrer is None:
        referrer = ""
    elif type(referrer) is not str or len(referrer) > _REFERRER_MAX or not (referrer.isascii() or encodable(referrer)):
        return None
    user_id = get("user_id")
    if user_id is None:
        user_id = ""
    elif type(user_id) is not str or len(user_id) > _USER_ID_MAX or not (user_id.isascii() or encodable(user_id)):
        return None
    user_agent = get("user_agent")
    if user_agent is None:
        user_agent = ""
    elif (
        type(user_agent) is not str
        or len(user_agent) > _USER_AGENT_MAX
        or not (user_agent.isascii() or encodable(user_agent))
    ):
        return None
    api_key = get("api_key")
    if api_key is None:
        api_key = ""
    elif type(api_key) is not str or len(api_key) > _API_KEY_MAX or not (api_key.isascii() or encodable(api_key)):
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

    vitals: tuple[Any, ...] = (get("lcp"), get("cls"), get("inp"), get("fcp"), get("ttfb"))
    if vitals != _NO_VITALS:
        stored = _stored_vitals(vitals, kind)
        if stored is None:
            return None
        vitals = stored

    name = get("event_name")
    if name is None or name == "":
        if kind in _NAME_REQUIRED:
            return None
        name = ""
    elif type(name) is not str or len(name) > EVENT_NAME_LIMIT or not (name.isascii() or encodable(name)):
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


def _text(limit: int) -> Any:
    return Annotated[str, msgspec.Meta(max_length=limit)] | None


_SCREEN = Annotated[int, msgspec.Meta(ge=0, le=_MAX_INT32)] | None
_VITAL = int | float | None
# The types ``fast_event`` takes: the decode stops at the first event of another type (an ``outbound``, say), so a
# mixed batch costs little before it goes the other way.
_PLAIN_TYPE = Literal.__getitem__(tuple(sorted(_TYPES & _UNTYPED_PROPS)))
# An event as ``fast_event`` reads it: the JSON types it accepts and the string limits of ``STRING_LIMITS`` (the
# same table ``parse_event`` checks), null or absent as the default; other keys are ignored.
_PlainEvent = msgspec.defstruct(
    "_PlainEvent",
    [
        ("site_id", int | str),
        ("type", _PLAIN_TYPE),
        *((name, _text(limit), None) for name, limit in STRING_LIMITS.items()),
        ("screenWidth", _SCREEN, None),
        ("screenHeight", _SCREEN, None),
        ("event_name", _text(EVENT_NAME_LIMIT), None),
        ("properties", str | None, None),
        ("ip_address", str | None, None),
        *((name, _VITAL, None) for name in VITALS),
    ],
)
_PlainBody = msgspec.defstruct("_PlainBody", [("events", list[_PlainEvent])])  # type: ignore[valid-type]


_PLAIN_DECODER: msgspec.json.Decoder[Any] = msgspec.json.Decoder(_PlainBody)


def plain_batch(raw: bytes) -> list[tuple[Any, ...]] | None:
    """The ``fast_event`` tuples of a batch body ``{"events": [...]}`` whose every event ``fast_event`` accepts.

    One typed decode checks the JSON types, the event types and the string lengths of every event at once; what is
    left (the site key, the address, vitals, the event name and properties) is checked here as ``fast_event``
    checks it. A body that is not such a batch, or any event that is not plain, gives ``None``: the caller then decodes
    the body and checks event by event, so the answer (rejections included) is the same either way. JSON decodes
    here as ``json.loads`` decodes it (the last of duplicate keys wins, integers keep every digit); strings with
    lone surrogates and non-standard tokens (``NaN``) do not decode, so their bodies take the other path.
    """
    try:
        events: list[Any] = _PLAIN_DECODER.decode(raw).events
    except (msgspec.MsgspecError, ValueError, RecursionError):  # not UTF-8, not JSON, not this shape
        return None
    out: list[tuple[Any, ...]] = []
    append = out.append
    for event in events:
        site_key = _site_key(event.site_id)
        if site_key is None:
            return None
        kind = event.type  # one of the plain types (``_PLAIN_TYPE``)
        ip = event.ip_address
        if ip is None:
            ip = ""
        elif (ip := normal_ip(ip)) is None:
            return None
        vitals: tuple[Any, ...] = (event.lcp, event.cls, event.inp, event.fcp, event.ttfb)
        if vitals != _NO_VITALS:
            stored = _stored_vitals(vitals, kind)
            if stored is None:
                return None
            vitals = stored
        name = event.event_name
        if not name:
            if kind in _NAME_REQUIRED:
                return None
            name = ""
        props = event.properties
        if not props:
            props = "{}"
        else:
            props = _cached_props(kind, props)
            if props is _NO_PROPS:
                return None
        user_id = event.user_id
        append(
            (
                site_key,
                kind,
                event.hostname or "",
                event.pathname or "",
                event.querystring or "",
                event.screenWidth or 0,
                event.screenHeight or 0,
                event.language or "",
                event.page_title or "",
                event.referrer or "",
                user_id.strip() if user_id else "",
                name,
                props,
                *vitals,
                ip,
                event.user_agent or "",
                event.api_key or "",
            )
        )
    return out
