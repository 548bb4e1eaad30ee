"""``filters``: a JSON array of ``{parameter, type, value: [...]}`` turned into SQL conditions.

A filter selects **sessions** (peer-read section 2.4): each session gets one value per session-level
parameter (computed over its in-window events), or is tested for "any in-window event matches" for the
event-level parameters. Error routes apply page and device parameters to the error rows instead.

Per-session values (one definition, shared with ``metric`` and the goal breakdown so that a
``channel equals X`` filter selects exactly the sessions that ``metric?parameter=channel`` counts under X):

- ``channel``: the channel of the earliest in-window event whose channel is not direct ('', ``Direct``,
  ``Internal``), else the first event's channel ('' = direct; ``"Direct"`` is accepted as a synonym in filters);
- ``entry_page`` / ``exit_page``: pathname of the first / last in-window pageview ('' if none);
- ``user_id``: the identified id if the session has one, else the (last) visitor id;
- every other session-level parameter: the first non-empty value of its column expression.

Values of one filter OR together (AND for the negative types ``not_equals, not_contains, not_regex``);
filters AND together. Values are always bound; column expressions come from a fixed whitelist.
``country`` with ``equals``/``not_equals`` takes country codes only (any case, '' for "unknown"): anything else
is a 400 naming the value, since it could never match.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import re2

from api_backend.domain.countries import COUNTRY_CODE_HINT, is_country_code
from api_backend.errors import InvalidRequestError
from api_backend.query.dialect import Dialect
from api_backend.query.sql import Params

__all__ = [
    "ANY_EVENT_PARAMETERS",
    "EFFECTIVE_USER",
    "ERROR_ROW_PARAMETERS",
    "FILTER_TYPES",
    "IDENTIFIED",
    "PARAMETERS",
    "Filter",
    "compare",
    "encodable",
    "parse_filters",
    "parse_parameter",
    "channel_key",
    "user_key",
    "row_expression",
    "row_inputs",
    "session_channel",
    "session_condition",
    "session_description",
    "session_user",
    "session_value",
    "set_hint",
    "validate_regex",
]

SESSION_PARAMETERS = frozenset(
    {
        "browser",
        "browser_version",
        "operating_system",
        "operating_system_version",
        "device_type",
        "language",
        "country",
        "region",
        "city",
        "dimensions",
        "hostname",
        "referrer",
        "channel",
        "utm_source",
        "utm_medium",
        "utm_campaign",
        "utm_term",
        "utm_content",
        "entry_page",
        "exit_page",
        "user_id",
    }
)
ANY_EVENT_PARAMETERS = frozenset({"pathname", "page_title", "querystring", "event_name"})
PARAMETERS = SESSION_PARAMETERS | ANY_EVENT_PARAMETERS
# Parameters that error routes apply to the error events themselves.
ERROR_ROW_PARAMETERS = frozenset(
    {
        "hostname",
        "browser",
        "browser_version",
        "operating_system",
        "operating_system_version",
        "language",
        "country",
        "region",
        "city",
        "device_type",
        "pathname",
        "page_title",
        "querystring",
        "dimensions",
    }
)
FILTER_TYPES = (
    "equals",
    "not_equals",
    "contains",
    "not_contains",
    "starts_with",
    "ends_with",
    "regex",
    "not_regex",
    "is_null",
    "is_not_null",
    "greater_than",
    "less_than",
    "greater_than_or_equal",
    "less_than_or_equal",
)
NUMERIC_TYPES = {"greater_than": ">", "less_than": "<", "greater_than_or_equal": ">=", "less_than_or_equal": "<="}
# For "any event" parameters a negative type means "no event matches the positive form".
POSITIVE_OF = {"not_equals": "equals", "not_contains": "contains", "not_regex": "regex", "is_null": "is_not_null"}

PROP_PREFIX = "prop:"
_PROP_KEY = re.compile(r'^[^"\\\x00-\x1f]{1,100}$')
MAX_REGEX = 500
MAX_FILTERS = 50
MAX_VALUES = 100

# A direct event's sort key is pushed past every real time (epoch microseconds are about 1.8e15), so one
# arg_min finds the earliest non-direct event when there is one, else the earliest event; one aggregate
# instead of two is about a third cheaper.
_LATE = "100000000000000000"
_DIRECT = "channel IN ('', 'Direct', 'Internal')"
IDENTIFIED = "identified_user_id <> ''"
# An event's user: its identified id if it has one, else its visitor id.
EFFECTIVE_USER = f"CASE WHEN {IDENTIFIED} THEN identified_user_id ELSE user_id END"


def channel_key(d: Dialect) -> str:
    """Sort key whose arg_min is the session's channel: its earliest non-direct event, else its earliest event."""
    return f"{d.epoch_us('timestamp')} + CASE WHEN {_DIRECT} THEN {_LATE} ELSE 0 END"


def user_key(d: Dialect) -> str:
    """Sort key whose arg_max is the session's user: its last identified event, else its last event."""
    return f"{d.epoch_us('timestamp')} + CASE WHEN {IDENTIFIED} THEN {_LATE} ELSE 0 END"


def session_channel(d: Dialect) -> str:
    """The session's channel (see the module docstring) in one aggregate."""
    return d.arg_min("channel", channel_key(d))


def session_user(d: Dialect) -> str:
    """The session's user: its last identified id if it has one, else its last visitor id, in one aggregate."""
    return d.arg_max(EFFECTIVE_USER, user_key(d))


# A session is described by the value of its last event where a visit does not change it, and by the first non-empty
# value for how it arrived.
_DESCRIBED_BY_LAST = (
    "country",
    "region",
    "city",
    "language",
    "device_type",
    "browser",
    "browser_version",
    "operating_system",
    "operating_system_version",
    "screen_width",
    "screen_height",
)
_DESCRIBED_BY_FIRST = ("referrer", "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")


def session_description(d: Dialect, p: Params) -> list[str]:
    """The aggregate columns (``... AS name``) describing a session from its rows, as a page of sessions and a page of
    a goal's sessions list it: its user, its visitor's values, how it arrived, its entry and exit pages."""

    def first_set(column: str) -> str:
        not_empty = f"{column} <> ''"
        return f"coalesce({d.arg_min(column, 'timestamp', not_empty)}, '') AS {column}"

    return [
        f"{session_user(d)} AS user_id",
        *(f"{d.arg_max(c, 'timestamp')} AS {c}" for c in _DESCRIBED_BY_LAST),
        *(first_set(c) for c in _DESCRIBED_BY_FIRST),
        f"{d.arg_min('hostname', 'timestamp')} AS hostname",
        f"{session_channel(d)} AS channel",
        f"{session_value('entry_page', d, p)} AS entry_page",
        f"{session_value('exit_page', d, p)} AS exit_page",
    ]


# Row-level expression of each parameter (over one event); entry/exit pages exist only per session.
_ROW_EXPR = {
    "browser": "browser",
    "operating_system": "operating_system",
    "device_type": "device_type",
    "language": "language",
    "country": "country",
    "region": "region",
    "city": "city",
    "hostname": "hostname",
    "channel": "channel",
    "utm_source": "utm_source",
    "utm_medium": "utm_medium",
    "utm_campaign": "utm_campaign",
    "utm_term": "utm_term",
    "utm_content": "utm_content",
    "pathname": "pathname",
    "page_title": "page_title",
    "querystring": "querystring",
    "event_name": "event_name",
    "browser_version": "CASE WHEN browser_version <> '' THEN browser || ' ' || browser_version ELSE '' END",
    "operating_system_version": (
        "CASE WHEN operating_system_version <> '' THEN operating_system || ' ' || operating_system_version ELSE '' END"
    ),
    "dimensions": (
        "CASE WHEN screen_width > 0 AND screen_height > 0 "
        "THEN CAST(screen_width AS VARCHAR) || 'x' || CAST(screen_height AS VARCHAR) ELSE '' END"
    ),
    "user_id": EFFECTIVE_USER,
}
# The referrer's host without a leading "www.", as the peer reports it.
_REFERRER_HOST = "^(?:[A-Za-z][A-Za-z0-9+.-]*://)?([^/?#:]*)"
_WWW = "^www\\."
_PAGEVIEW = "type = 'pageview'"


@dataclass(frozen=True)
class Filter:
    """One validated filter: ``values`` are strings (numbers for the numeric types)."""

    parameter: str
    type: str
    values: tuple[str | float, ...]

    @property
    def prop_key(self) -> str | None:
        """The property key of a ``prop:<key>`` filter, else ``None``."""
        return self.parameter[len(PROP_PREFIX) :] if self.parameter.startswith(PROP_PREFIX) else None

    @property
    def is_session_level(self) -> bool:
        """Compared against one value per session (else: any in-window event matches)."""
        return self.parameter in SESSION_PARAMETERS


def parse_parameter(name: object, field: str = "parameter", *, allow_prop: bool = True) -> str:
    """A known parameter name (or ``prop:<key>``), else 400."""
    if not isinstance(name, str) or not name:
        raise InvalidRequestError.for_field(field, "must be a parameter name")
    if name in PARAMETERS:
        return name
    if allow_prop and name.startswith(PROP_PREFIX) and _PROP_KEY.match(name[len(PROP_PREFIX) :]) and encodable(name):
        return name
    allowed = ", ".join(sorted(PARAMETERS)) + (", prop:<key>" if allow_prop else "")
    raise InvalidRequestError.for_field(field, f"unknown parameter {name!r}; use one of {allowed}")


MAX_REPEAT = 1000  # RE2's own limit on a counted repetition
# Errors are answered to the caller; RE2 would also print each one to stderr.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


def validate_regex(pattern: object, field: str) -> str:
    """A regex RE2 compiles (the engine of DuckDB and ClickHouse alike): non-empty, at most 500 characters.

    RE2 itself is the judge, so every construct the engines refuse (look-around, back-references,
    ``(?x)``, conditionals...) is a 400 naming ``field`` before any query is built.
    """
    if not isinstance(pattern, str) or not pattern:
        raise InvalidRequestError.for_field(field, "the regular expression must be a non-empty string")
    if len(pattern) > MAX_REGEX:
        raise InvalidRequestError.for_field(field, f"the regular expression is longer than {MAX_REGEX} characters")
    if not encodable(pattern):
        raise InvalidRequestError.for_field(field, "the regular expression is not valid UTF-8 text")
    try:
        re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise InvalidRequestError.for_field(field, f"invalid regular expression: {reason}") from None
    return pattern


def encodable(text: str) -> bool:
    """False for text holding lone surrogates (valid in JSON escapes, impossible to store or bind as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _value_text(value: object, field: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        if not encodable(value):
            raise InvalidRequestError.for_field(field, "must be valid UTF-8 text (no lone surrogates)")
        return value
    raise InvalidRequestError.for_field(field, "each value must be a string or a number")


def _parse_one(index: int, item: object) -> Filter:
    where = f"filters[{index}]"
    if not isinstance(item, dict):
        raise InvalidRequestError.for_field(where, "each filter must be an object {parameter, type, value}")
    parameter = parse_parameter(item.get("parameter"), f"{where}.parameter")
    ftype = item.get("type")
    if ftype not in FILTER_TYPES:
        raise InvalidRequestError.for_field(
            f"{where}.type", f"unknown filter type {ftype!r}; use one of {', '.join(FILTER_TYPES)}"
        )
    raw = item.get("value", [])
    if not isinstance(raw, list):
        raise InvalidRequestError.for_field(f"{where}.value", "must be an array of values")
    if len(raw) > MAX_VALUES:
        raise InvalidRequestError.for_field(f"{where}.value", f"at most {MAX_VALUES} values per filter")
    if ftype in ("is_null", "is_not_null"):
        return Filter(parameter, ftype, ())
    if not raw:
        raise InvalidRequestError.for_field(f"{where}.value", "needs at least one value")
    if ftype in NUMERIC_TYPES:
        numbers: list[float] = []
        for j, value in enumerate(raw):
            try:
                number = float(value) if not isinstance(value, bool) else math.nan
            except (TypeError, ValueError, OverflowError):  # OverflowError: an integer past float range
                number = math.nan
            if not math.isfinite(number):
                raise InvalidRequestError.for_field(f"{where}.value[{j}]", f"{ftype} needs numeric values")
            numbers.append(number)
        return Filter(parameter, ftype, tuple(numbers))
    values = [_value_text(v, f"{where}.value[{j}]") for j, v in enumerate(raw)]
    if ftype in ("regex", "not_regex"):
        for j, value in enumerate(values):
            validate_regex(value, f"{where}.value[{j}]")
    if parameter == "channel":
        # Direct traffic is stored as ''; "Direct" is the synonym people type.
        values = ["" if v == "Direct" else v for v in values]
    if parameter == "country" and ftype in ("equals", "not_equals"):
        values = [_country_code(v, f"{where}.value[{j}]") for j, v in enumerate(values)]
    return Filter(parameter, ftype, tuple(values))


def _country_code(value: str, field: str) -> str:
    # Events hold upper-case ISO codes ('' when unknown): a name such as "Germany" or a code no country has would
    # select no session at all, which reads as "no traffic" rather than as the typo it is.
    code = value.strip()
    code = code.upper() if code.isascii() else code  # "ß".upper() is "SS", which is no way to write South Sudan
    if code == "" or is_country_code(code):
        return code
    raise InvalidRequestError.for_field(
        field, f"the country filter compares 2-letter country codes; {value!r} is not one ({COUNTRY_CODE_HINT})"
    )


def parse_filters(text: str | None) -> tuple[Filter, ...]:
    """Validate the ``filters`` query value (a JSON array); empty or absent means no filter."""
    if text is None or not text.strip():
        return ()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise InvalidRequestError.for_field("filters", "is not valid JSON") from None
    if not isinstance(data, list):
        raise InvalidRequestError.for_field("filters", "must be a JSON array of {parameter, type, value}")
    if len(data) > MAX_FILTERS:
        raise InvalidRequestError.for_field("filters", f"at most {MAX_FILTERS} filters")
    return tuple(_parse_one(i, item) for i, item in enumerate(data))


# The event columns each computed row expression reads (the others read the column of their name), and a condition on
# them holding wherever the expression is non-empty, cheaper to test on every event than the expression.
_ROW_INPUTS = {
    "browser_version": ("browser", "browser_version"),
    "operating_system_version": ("operating_system", "operating_system_version"),
    "dimensions": ("screen_width", "screen_height"),
}
_SET_HINT = {
    "browser_version": "browser_version <> ''",
    "operating_system_version": "operating_system_version <> ''",
    "dimensions": "screen_width > 0 AND screen_height > 0",
    "referrer": "referrer <> ''",
}


def row_inputs(parameter: str) -> tuple[str, ...]:
    """The event columns ``row_expression`` of ``parameter`` reads (a parameter other than ``prop:<key>``)."""
    return _ROW_INPUTS.get(parameter, (parameter,))


def set_hint(parameter: str) -> str:
    """A condition on ``row_inputs`` holding on every event where ``row_expression`` of ``parameter`` is non-empty
    (and maybe on others), cheaper to test."""
    return _SET_HINT.get(parameter, f"{parameter} <> ''")


def row_expression(parameter: str, d: Dialect, p: Params) -> str:
    """The per-event SQL expression of ``parameter`` (``prop:<key>`` reads the event's property)."""
    if parameter.startswith(PROP_PREFIX):
        return d.json_string("props", parameter[len(PROP_PREFIX) :], p)
    if parameter == "referrer":
        host = d.regex_extract("referrer", p.add(_REFERRER_HOST))
        return f"lower({d.regex_replace(host, p.add(_WWW), p.add(''))})"
    if parameter not in _ROW_EXPR:
        raise ValueError(f"{parameter} has no per-event expression")
    return _ROW_EXPR[parameter]


def session_value(parameter: str, d: Dialect, p: Params) -> str:
    """The aggregate giving a session's one value of a session-level ``parameter`` (see module docstring)."""
    if parameter == "channel":
        return session_channel(d)
    if parameter == "entry_page":
        return f"coalesce({d.arg_min('pathname', 'timestamp', _PAGEVIEW)}, '')"
    if parameter == "exit_page":
        return f"coalesce({d.arg_max('pathname', 'timestamp', _PAGEVIEW)}, '')"
    if parameter == "user_id":
        return session_user(d)
    expr = row_expression(parameter, d, p)
    first_set = d.arg_min(expr, "timestamp", f"{expr} <> ''")
    return f"coalesce({first_set}, '')"


def _join(parts: Iterable[str], op: str) -> str:
    items = list(parts)
    return items[0] if len(items) == 1 else "(" + f" {op} ".join(items) + ")"


def compare(expr: str, ftype: str, values: tuple[str | float, ...], d: Dialect, p: Params) -> str:
    """``expr`` tested by one filter type; never NULL."""
    if ftype == "is_null":
        return f"({expr} IS NULL OR {expr} = '')"
    if ftype == "is_not_null":
        return f"({expr} IS NOT NULL AND {expr} <> '')"
    if ftype == "equals":
        return f"{expr} IN ({', '.join(p.add(v) for v in values)})"
    if ftype == "not_equals":
        return f"{expr} NOT IN ({', '.join(p.add(v) for v in values)})"
    if ftype in NUMERIC_TYPES:
        op = NUMERIC_TYPES[ftype]
        return _join((f"coalesce({d.to_double(expr)} {op} {p.add(v)}, false)" for v in values), "OR")
    positive = {"contains": d.contains, "starts_with": d.starts_with, "ends_with": d.ends_with}
    if ftype in positive:
        return _join((positive[ftype](expr, p.add(v)) for v in values), "OR")
    if ftype == "not_contains":
        return _join((f"NOT {d.contains(expr, p.add(v))}" for v in values), "AND")
    if ftype == "regex":
        return _join((d.regex_search(expr, p.add(v)) for v in values), "OR")
    if ftype == "not_regex":
        return _join((f"NOT {d.regex_search(expr, p.add(v))}" for v in values), "AND")
    raise ValueError(ftype)


def session_condition(f: Filter, d: Dialect, p: Params) -> str:
    """An aggregate condition (for ``HAVING`` over a session's in-window events) true when the session qualifies."""
    if f.is_session_level:
        return compare(session_value(f.parameter, d, p), f.type, f.values, d, p)
    expr = row_expression(f.parameter, d, p)
    scope = "type = 'custom_event' AND " if f.prop_key is not None else ""
    if f.type in POSITIVE_OF:
        return f"NOT coalesce({d.bool_or(scope + compare(expr, POSITIVE_OF[f.type], f.values, d, p))}, false)"
    return f"coalesce({d.bool_or(scope + compare(expr, f.type, f.values, d, p))}, false)"
