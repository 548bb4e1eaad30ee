"""JavaScript-error queries: messages ranked by occurrences, the occurrences of one message, and its time series.

These are tracked errors (``type = 'error'`` events), not the API's exception classes (``api_backend.errors``).
Error rows are ``type = 'error'`` events with a non-empty class name (``event_name``) and ``props.message``.
Page and device filters apply to the error rows themselves; the other filters select sessions.
"""

from __future__ import annotations

from api_backend.query.dialect import Dialect
from api_backend.query.facts import qualifying_from_table
from api_backend.query.filters import EFFECTIVE_USER, ERROR_ROW_PARAMETERS
from api_backend.query.scope import Scope, scope_ctes
from api_backend.query.sql import Params, Query, paged_select
from api_backend.query.zones import local_time

__all__ = ["build_error_events_query", "build_error_names_query", "build_error_series_query", "error_scope"]


def error_scope(scope: Scope) -> Scope:
    """The same scope with page and device filters applied to the error rows."""
    return Scope(scope.site_ids, scope.window, scope.filters, ERROR_ROW_PARAMETERS)


def _error_ctes(scope: Scope, d: Dialect, p: Params) -> str:
    """``scope_ctes`` of ``error_scope(scope)``, its rows taken from where the store keeps error rows."""
    return scope_ctes(error_scope(scope), d, p, rows=d.error_rows, qualifying=qualifying_from_table)


def _prop(d: Dialect, p: Params, key: str) -> str:
    return d.json_string("props", key, p)


def build_error_names_query(scope: Scope, limit: int, offset: int, d: Dialect) -> Query:
    """Rows ``(total_count, value, errorName, count, sessionCount, occurrences, rn)``, most frequent first.

    ``occurrences`` is every matching error in the window (the percentage denominator).
    """
    p = Params()
    ctes = _error_ctes(scope, d, p)
    counted = "FROM er WHERE msg <> '' AND event_name <> ''"
    per_message = 'msg AS value, min(event_name) AS "errorName", count(*) AS count'
    total = "sum(count(*)) OVER () AS occurrences"
    if d.distinct_aggregates:
        # Each message's set of sessions is counted as it is built.
        pairs_cte = ""
        groups = f'SELECT {per_message}, count(DISTINCT session_id) AS "sessionCount", {total} {counted} GROUP BY msg'
    else:
        # The distinct (message, session) pairs are grouped first, from the error rows kept once: at 100M events
        # (1.35M errors in the window) the route took 313 ms with DuckDB's distinct aggregate per message, 231 ms so.
        pairs = f"SELECT msg, count(*) AS sessions FROM (SELECT DISTINCT msg, session_id {counted}) AS d GROUP BY msg"
        pairs_cte = f"sp AS ({pairs}),\n"
        groups = (
            f'SELECT c.value, c."errorName", c.count, sp.sessions AS "sessionCount", c.occurrences '
            f"FROM (SELECT {per_message}, {total} {counted} GROUP BY msg) AS c JOIN sp ON sp.msg = c.value"
        )
    errors = f"SELECT session_id, event_name, {_prop(d, p, 'message')} AS msg FROM fe WHERE type = 'error'"
    sql = f"""{ctes},
{d.cte("er", errors, materialized=None if d.distinct_aggregates else True)},
{pairs_cte}{d.cte("g", groups, materialized=True)},
{paged_select("g", "count DESC, value", limit, offset, p)}"""
    return p.query(sql)


# An occurrence's columns before those read from ``props``, in the order the route returns them, and the
# expressions of those that are not the event's own column of that name.
_OCCURRENCE_COLUMNS = (
    "timestamp", "session_id", "user_id", "pathname", "hostname", "page_title", "referrer", "browser",
    "browser_version", "operating_system", "operating_system_version", "device_type", "country", "region", "city",
    '"errorName"',
)  # fmt: skip
_OCCURRENCE_SOURCES = {"user_id": EFFECTIVE_USER, '"errorName"': "event_name"}


def build_error_events_query(scope: Scope, message: str, limit: int, offset: int, d: Dialect) -> Query:
    """The occurrences of ``message``, newest first, with ``total_count`` (one row even past the end).

    The page is taken first (a top-N on the time, not a ranking of every occurrence) and only its rows have
    their stack, file and position read from ``props``: a frequent message has hundreds of thousands.
    """
    p = Params()
    ctes = _error_ctes(scope, d, p)

    def number(*keys: str) -> str:
        casts = [d.to_bigint(d.to_double(_prop(d, p, k))) for k in keys]
        return f"coalesce({', '.join(casts)})"

    sources = _OCCURRENCE_SOURCES
    columns = ", ".join(f"{sources[c]} AS {c}" if c in sources else c for c in _OCCURRENCE_COLUMNS)
    occurrences = f"""
  SELECT {columns}, props
  FROM fe WHERE type = 'error' AND {_prop(d, p, "message")} = {p.add(message)}"""
    skipped = p.add(offset)
    sql = f"""{ctes},
{d.cte("ev", occurrences, materialized=True)},
page AS (SELECT * FROM ev ORDER BY timestamp DESC, session_id LIMIT {p.add(limit)} OFFSET {skipped}),
ranked AS (
  SELECT {", ".join(_OCCURRENCE_COLUMNS)},
    {_prop(d, p, "message")} AS message,
    {_prop(d, p, "stack")} AS stack,
    coalesce(nullif({_prop(d, p, "fileName")}, ''), {_prop(d, p, "filename")}) AS "fileName",
    {number("lineNumber", "lineno")} AS "lineNumber",
    {number("columnNumber", "colno")} AS "columnNumber",
    {skipped} + row_number() OVER (ORDER BY timestamp DESC, session_id) AS rn
  FROM page),
total AS (SELECT count(*) AS total_count FROM ev)
SELECT t.total_count, r.* FROM total AS t LEFT JOIN ranked AS r ON true
ORDER BY r.rn"""
    return p.query(sql)


def build_error_series_query(scope: Scope, message: str, bucket: str, d: Dialect) -> Query:
    """Rows ``(bucket_start_local, error_count)`` ordered by time (no gap fill; the caller fills)."""
    p = Params()
    ctes = _error_ctes(scope, d, p)
    local = local_time("timestamp", scope.window, d, p)
    sql = f"""{ctes}
SELECT {d.bucket(local, bucket)} AS bucket, count(*) AS error_count
FROM fe WHERE type = 'error' AND {_prop(d, p, "message")} = {p.add(message)}
GROUP BY 1 ORDER BY 1"""
    return p.query(sql)
