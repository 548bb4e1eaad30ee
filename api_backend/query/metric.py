"""``metric``: sessions per value of one parameter (peer-read section 8), paginated.

``count`` is the number of qualifying sessions with that value, except for ``event_name`` where it is the
number of custom events (with ``sessions`` beside it). Session-level parameters give each session one
value (see ``filters``), so the counts of a parameter add up to the sessions with a non-empty value;
``channel`` keeps the direct row (value ``""``). Page-level parameters (``pathname, page_title,
querystring``) count a session under every page it viewed; ``prop:<key>`` under every value its custom
events carried.

Where the engine keeps per-session facts (``facts.py``), a session-level parameter reads the whole sessions' values
from the ``sessions`` table and groups only the sessions crossing the window's edges from events;
``build_metric_events_query`` groups every in-window event, and both give the same rows. ``pathname`` reads the
whole sessions' lists of distinct paths (``pathnames``, kept by both stores) the same way, so no (session, path)
pair is grouped. The other parameters count the distinct (session, value) pairs of the events; with DuckDB's table
they pair a 64-bit hash of the session id instead of the id (a fixed-width key: half the time and memory of the
string at 10M events), and the qualifying sessions and their total come from the table. That count is exact only
while no two of the window's sessions share a hash, so the query also returns ``key_collisions`` (sessions minus
distinct hashes over the qualifying sessions) and ``needs_exact_rerun`` tells the caller to run
``build_metric_events_query`` instead in that (rare) case.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from api_backend.query.dialect import Dialect
from api_backend.query.facts import (
    edge_sessions,
    fact_column,
    facts_answer,
    facts_where_cheaper,
    pathnames,
    qualifying_sessions,
    whole_sessions,
)
from api_backend.query.filters import PROP_PREFIX, SESSION_PARAMETERS, session_value
from api_backend.query.scope import Scope, opening, session_groups, window_condition
from api_backend.query.sql import Params, Query

__all__ = [
    "build_metric_events_query",
    "build_metric_query",
    "keeps_empty_value",
    "needs_exact_rerun",
    "session_values_sql",
]

_PAGE_PARAMETERS = {"pathname", "page_title", "querystring"}


def keeps_empty_value(parameter: str) -> bool:
    """Only ``channel`` reports its empty value (direct traffic); elsewhere '' means unknown and is left out."""
    return parameter == "channel"


def session_values_sql(parameter: str, d: Dialect, p: Params, key: str = "session_id", *, once: bool = True) -> str:
    """``SELECT <key> AS session_id, value FROM fe ...``: the (session, value) pairs of ``parameter``, each once.

    ``key`` is the session's key in the pairs: its id, or a compact stand-in for it. With ``once=False`` a pair may
    come once per event that has it (for a caller counting distinct sessions per value itself).
    """
    if parameter in SESSION_PARAMETERS:
        return f"SELECT session_id, {session_value(parameter, d, p)} AS value FROM fe GROUP BY session_id"
    distinct = "DISTINCT " if once else ""
    if parameter in _PAGE_PARAMETERS:
        return f"SELECT {distinct}{key} AS session_id, {parameter} AS value FROM fe WHERE type = 'pageview'"
    if parameter == "event_name":
        return f"SELECT {distinct}{key} AS session_id, event_name AS value FROM fe WHERE type = 'custom_event'"
    if parameter.startswith(PROP_PREFIX):
        value = d.json_string("props", parameter[len(PROP_PREFIX) :], p)
        return f"SELECT {distinct}{key} AS session_id, {value} AS value FROM fe WHERE type = 'custom_event'"
    raise ValueError(f"unknown parameter {parameter}")


def needs_exact_rerun(rows: list[dict[str, Any]]) -> bool:
    """Whether two qualifying sessions shared a hashed key, so the counts of ``rows`` may be short."""
    return bool(rows and rows[0].get("key_collisions"))


def _session_values(scope: Scope, parameter: str, d: Dialect, p: Params, *, facts: bool) -> str:
    """``SELECT ... value, pv``: one row per qualifying session with its value of ``parameter`` and its pageviews."""
    columns = f", {session_value(parameter, d, p)} AS value, count(*) FILTER (WHERE type = 'pageview') AS pv"
    if not facts:
        return session_groups(scope, columns, d, p)
    whole = whole_sessions(scope, f"{fact_column(parameter)} AS value, pageviews AS pv", d, p)
    edge = edge_sessions(scope, columns, d, p)
    return f"{whole} UNION ALL SELECT value, pv FROM ({edge}) AS edge"


def build_metric_query(scope: Scope, parameter: str, limit: int, offset: int, d: Dialect) -> Query:
    """Rows ``(total_values, total_sessions, value, count, sessions, pageviews, bounce_rate)``, one page.

    There is always one row, even past the last page, so the totals are known. ``pageviews`` and
    ``bounce_rate`` (sessions with exactly one pageview, in percent) exist for session-level parameters.
    """
    if not facts_answer(scope, d, shared_columns=parameter in SESSION_PARAMETERS or parameter == "pathname"):
        return _metric_query(scope, parameter, limit, offset, d, facts=False)
    return facts_where_cheaper(
        scope,
        lambda dd: _metric_query(scope, parameter, limit, offset, dd, facts=True),
        partial(_metric_query, scope, parameter, limit, offset, d, facts=False),
        d,
    )


def build_metric_events_query(scope: Scope, parameter: str, limit: int, offset: int, d: Dialect) -> Query:
    """``build_metric_query`` grouping every in-window event into sessions."""
    return _metric_query(scope, parameter, limit, offset, d, facts=False)


def _session_pathnames(scope: Scope, d: Dialect, p: Params) -> str:
    """``SELECT paths``: one row per qualifying session with the distinct paths of its in-window pageviews."""
    whole = whole_sessions(scope, "pathnames AS paths", d, p)
    edge = edge_sessions(scope, f", {d.path_list(pathnames(d))} AS paths", d, p)
    return f"{whole} UNION ALL SELECT paths FROM ({edge}) AS edge"


def _keyed_opening(scope: Scope, d: Dialect, p: Params) -> str:
    """``WITH ks (the qualifying sessions' count and key collisions, from the table), fe (their in-window events),``.

    Only the one-row counts are kept: keeping millions of session ids would hold them all in memory at once.
    """
    key = d.hash64("session_id")
    counts = (
        f"SELECT count(*) AS sessions, count(*) - count(DISTINCT {key}) AS collisions "
        f"FROM ({qualifying_sessions(scope, d, p)}) AS q"
    )
    rows = f"SELECT * FROM events WHERE {window_condition(scope.site_ids, scope.window, p, d)}"
    if scope.session_filters:
        rows += f" AND session_id IN ({qualifying_sessions(scope, d, p)})"
    return f"WITH {d.cte('ks', counts, materialized=True)},\n{d.cte('fe', rows, materialized=False)},\n"


def _metric_query(scope: Scope, parameter: str, limit: int, offset: int, d: Dialect, *, facts: bool) -> Query:
    p = Params()
    listed = facts and parameter == "pathname"
    keyed = facts and not listed and parameter not in SESSION_PARAMETERS
    if keyed:
        start = _keyed_opening(scope, d, p)
    else:
        start = opening(scope, d, p, rows_needed=not listed and parameter not in SESSION_PARAMETERS)
    key = d.hash64("session_id") if keyed else "session_id"
    keep = "" if keeps_empty_value(parameter) else "WHERE value <> ''"
    grouped = ""  # a CTE before ``agg``, where a form keeps one
    # What the totals read: the values kept (``agg``) and their number; the sessions' count is a subquery, unless a
    # form below counts them from its own pass.
    counted, total_values = "agg", "count(*)"
    total_sessions = "SELECT count(DISTINCT session_id) FROM fe"
    collisions = "0"
    if keyed:
        total_sessions = "SELECT sessions FROM ks"
        collisions = "SELECT collisions FROM ks"
    if parameter == "event_name":
        agg = (
            f"SELECT event_name AS value, count(*) AS count, count(DISTINCT {key}) AS sessions, "
            "NULL AS pageviews, NULL AS bounce_rate "
            "FROM fe WHERE type = 'custom_event' AND event_name <> '' GROUP BY event_name"
        )
    elif listed and d.merged_sessions and d.sealed is None:
        # Each read of a table merged at read time merges it again: each session adds a NULL value after its paths,
        # so the one grouping of the values also counts the sessions, in the NULL row. On merged chdb copies of the
        # bench files, 862 -> 753 ms at 10M events; at 100M the same (5.5 s), the lists' copies costing what the
        # second merge did. Sealed rows are read twice instead (below): their lists keep the paths as dictionary
        # numbers, which a copy with a NULL added would turn back into strings.
        every = (
            "SELECT value, count(*) AS count, count(*) AS sessions, NULL AS pageviews, NULL AS bounce_rate FROM "
            f"(SELECT {d.unnest_strings_and_null('paths')} AS value FROM ({_session_pathnames(scope, d, p)}) AS per) "
            "AS sv GROUP BY value"
        )
        grouped = d.cte("every", every, materialized=True) + ",\n"
        agg = "SELECT * FROM every WHERE value <> ''"
        counted = "every"
        total_values = "count(*) FILTER (WHERE value <> '')"
        total_sessions = "coalesce(sum(count) FILTER (WHERE value IS NULL), 0)"
    elif listed:
        # The sessions are counted apart from their lists, and without reading their ids: keeping 26M sessions'
        # lists (100M events) to read them twice spilled to disk (5.4 s).
        whole_count = f"SELECT count(*) FROM ({whole_sessions(scope, '1 AS one', d, p)}) AS w"
        total_sessions = f"({whole_count}) + (SELECT count(*) FROM ({edge_sessions(scope, '', d, p)}) AS e)"
        agg = (
            "SELECT value, count(*) AS count, count(*) AS sessions, NULL AS pageviews, NULL AS bounce_rate "
            f"FROM (SELECT {d.unnest_strings('paths')} AS value FROM ({_session_pathnames(scope, d, p)}) AS per) "
            f"AS sv {keep} "
            "GROUP BY value"
        )
    elif parameter in SESSION_PARAMETERS:
        # One value per session: its pageviews and bounce come along in the same (single) pass, which groups the
        # empty value too, so the totals count every session from its result. Counted by a subquery of the sessions
        # kept, ClickHouse computed them again: the metric by channel from the table (chdb copies of the bench
        # files), 5,464 -> 4,125 ms at 100M events, 719 -> 548 ms at 10M.
        every = (
            f"SELECT value, count(*) AS count, count(*) AS sessions, sum(pv) AS pageviews, "
            "avg(CASE WHEN pv = 1 THEN 100.0 ELSE 0.0 END) AS bounce_rate "
            f"FROM ({_session_values(scope, parameter, d, p, facts=facts)}) AS per GROUP BY value"
        )
        grouped = d.cte("every", every, materialized=True) + ",\n"
        agg = f"SELECT * FROM every {keep}"
        counted = "every"
        total_values = "count(*) FILTER (WHERE value <> '')" if keep else "count(*)"
        total_sessions = "coalesce(sum(count), 0)"
    else:
        # With distinct aggregates, each value's set of sessions is counted as it is built (one pass over the
        # events); otherwise the distinct (session, value) pairs are grouped first.
        pairs = session_values_sql(parameter, d, p, key, once=not d.distinct_aggregates)
        sessions = "count(DISTINCT session_id)" if d.distinct_aggregates else "count(*)"
        agg = (
            f"SELECT value, {sessions} AS count, {sessions} AS sessions, NULL AS pageviews, NULL AS bounce_rate "
            f"FROM ({pairs}) AS sv {keep} GROUP BY value"
        )
    lo, hi = p.add(offset), p.add(offset + limit)
    # The values are counted from the kept rows themselves, not by a subquery of them: ClickHouse computed a kept CTE
    # again for a subquery (on a chdb copy of the bench file, the metric by pathname of 100M events from the table
    # 9.7 -> 4.9 s, of 10M 1,079 -> 686 ms).
    sql = f"""{start}{grouped}{d.cte("agg", agg, materialized=True)},
ranked AS (SELECT *, row_number() OVER (ORDER BY count DESC, value) AS rn FROM agg),
totals AS (SELECT {total_values} AS total_values, ({total_sessions}) AS total_sessions, ({collisions}) AS key_collisions
           FROM {counted})
SELECT t.total_values, t.total_sessions, t.key_collisions, r.value, r.count, r.sessions, r.pageviews, r.bounce_rate
FROM totals AS t LEFT JOIN ranked AS r ON r.rn > {lo} AND r.rn <= {hi}
ORDER BY r.rn"""
    return p.query(sql)
