"""Sessions: the page of sessions in a window, one session's description and timeline, an identified user.

Listing is two queries: ``build_session_page_query`` ranks the qualifying sessions on the cheap (their last
in-window event only, from the ``sessions`` table where the engine keeps it) and counts them;
``build_session_rows_query`` then describes just the sessions of that page (at most 100), so the costly
per-session aggregates never run over the whole window.

A session's fields are the goal-session fields of ``api-spec.md`` plus ``events`` (every event of the
session in the window), the per-type counts, and ``converted``: whether any of its events completes any
of the site's goals (the goal conditions of ``api_backend.query.goals``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from api_backend.query.dialect import Dialect
from api_backend.query.facts import (
    Span,
    edge_sessions,
    facts_answer,
    facts_where_cheaper,
    joined_spans,
    newest_ends,
    stored_span,
    whole_sessions,
    within_spans,
)
from api_backend.query.filters import IDENTIFIED, session_description
from api_backend.query.goals import GoalSpec, goal_condition
from api_backend.query.scope import Scope, opening, qualified_rows, session_groups, window_condition
from api_backend.query.sql import Params, Query

__all__ = [
    "TIMELINE_COLUMNS",
    "build_goal_session_rows_query",
    "build_session_page_events_query",
    "build_session_page_query",
    "build_session_rows_query",
    "build_timeline_query",
    "build_user_query",
    "page_spans",
    "session_columns",
]

_TYPE_COUNTS = (("custom_event", "custom_events"), ("error", "errors"), ("outbound", "outbound"))
TIMELINE_COLUMNS = ("timestamp", "type", "hostname", "pathname", "querystring", "page_title", "event_name", "props")


def _count_where(condition: str) -> str:
    return f"sum(CASE WHEN {condition} THEN 1 ELSE 0 END)"


def _converted(goals: Sequence[GoalSpec], d: Dialect, p: Params) -> str:
    """1 when any event of the group completes any of ``goals`` (0 without goals)."""
    if not goals:
        return "0"
    any_goal = " OR ".join(goal_condition(g.goal_type, g.config, d, p) for g in goals)
    return f"max(CASE WHEN {any_goal} THEN 1 ELSE 0 END)"


def session_columns(goals: Sequence[GoalSpec], d: Dialect, p: Params) -> str:
    """The aggregate columns describing one session from its rows (after ``SELECT session_id, ``)."""
    pageview = "type = 'pageview'"
    columns = [
        *session_description(d, p),
        f"{_count_where(pageview)} AS pageviews",
        *(f"{_count_where(f'type = {t!r}')} AS {name}" for t, name in _TYPE_COUNTS),
        "count(*) AS events",
        f"{_converted(goals, d, p)} AS converted",
        # 1 when one of its events carries an identified id: its ``user_id`` is then one with a profile.
        f"max(CASE WHEN {IDENTIFIED} THEN 1 ELSE 0 END) AS identified",
        "min(timestamp) AS session_start",
        "max(timestamp) AS session_end",
    ]
    return ",\n    ".join(columns)


def _page_of(sessions: str, limit: int, offset: int, d: Dialect, p: Params, *, materialized: bool = True) -> str:
    """CTEs + SELECT of one page of ``sessions`` (``session_id, session_end, session_start``), newest end first, with
    the total.

    The page is a top-N (no ranking of every session) and the count reads the same sessions: computed once
    (``materialized``), or read again where that is cheaper than storing them. Read again, the page is taken among
    the sessions ending no earlier than the newest ``offset + limit`` ends, found from the ends alone, so only
    their ids are read. Always at least one row (``session_id`` NULL past the end), so the total is known on every
    page.
    """
    ctes, candidates = d.cte("ss", sessions, materialized=materialized), "ss"
    # Where the table is merged at read time its read takes every id anyway (``FINAL`` merges by them): the cut
    # would add a third read of it (the sessions list at 100M events on chdb 1.86 -> 1.49 s without it).
    if not materialized and not d.merged_sessions:
        cut, candidates = newest_ends("ss", offset + limit, p)
        ctes += f",\n{cut}"
    return f"""{ctes},
page AS (SELECT session_id AS page_session, session_end AS page_end, session_start AS page_start FROM {candidates}
         ORDER BY session_end DESC, session_id LIMIT {p.add(limit)} OFFSET {p.add(offset)})
SELECT t.total_count, page.page_session AS session_id, page.page_end AS session_end, page.page_start AS session_start
FROM (SELECT count(*) AS total_count FROM ss) AS t LEFT JOIN page ON true
ORDER BY page.page_end DESC, page.page_session"""


def build_session_page_query(scope: Scope, limit: int, offset: int, d: Dialect) -> Query:
    """Rows ``(total_count, session_id, session_end, session_start)``: one page of the window's sessions, newest end
    first (the ends and starts of their in-window events).

    Where the engine keeps per-session facts (``facts.py``), a whole session's end is its stored ``last_seen`` and
    only the sessions crossing the window's edges are grouped from events. On a table merged at read time, where
    that costs less (``facts.facts_where_cheaper``): on a merged chdb copy of the bench files, 330 -> 236 ms at 10M
    events and 6.9 -> 1.8 s at 100M.
    """
    if not facts_answer(scope, d, shared_columns=True):
        return build_session_page_events_query(scope, limit, offset, d)

    def facts(d: Dialect) -> Query:
        p = Params()
        # The edge sessions are grouped once; the whole ones are read twice rather than stored (24M ids at 100M
        # events): the count reads none of their ids, and the top-N keeps only the page's.
        spans = ", max(timestamp) AS session_end, min(timestamp) AS session_start"
        edge = d.cte("edge", edge_sessions(scope, spans, d, p), materialized=True)
        whole = whole_sessions(scope, "session_id, last_seen AS session_end, first_seen AS session_start", d, p)
        ends = f"{whole} UNION ALL SELECT session_id, session_end, session_start FROM edge"
        return p.query(f"WITH {edge},\n" + _page_of(ends, limit, offset, d, p, materialized=False))

    return facts_where_cheaper(scope, facts, lambda: build_session_page_events_query(scope, limit, offset, d), d)


def build_session_page_events_query(scope: Scope, limit: int, offset: int, d: Dialect) -> Query:
    """``build_session_page_query`` grouping every in-window event into sessions."""
    p = Params()
    start = opening(scope, d, p, rows_needed=False)
    ends = session_groups(scope, ", max(timestamp) AS session_end, min(timestamp) AS session_start", d, p)
    return p.query(start + _page_of(ends, limit, offset, d, p))


def page_spans(rows: Sequence[Mapping[str, Any]]) -> list[Span]:
    """The spans of a page's rows (its sessions, none NULL): each session's ``session_start`` to its ``session_end``,
    overlapping ones joined (``facts.joined_spans``).

    A page of the newest sessions comes to one span of the window's last hours. A user's sessions may lie days
    apart: one span from the first to the last would read every block between them (a user's three sessions at
    100M events on DuckDB: most of the events of the month).
    """
    return joined_spans((r["session_start"], r["session_end"]) for r in rows)


def build_session_rows_query(
    scope: Scope,
    session_ids: Sequence[str],
    goals: Sequence[GoalSpec],
    d: Dialect,
    *,
    spans: Sequence[Span] | None = None,
) -> Query:
    """One described row per session of ``session_ids`` (over its in-window rows), newest end first.

    ``spans``, a page's ``page_spans``: the sessions' in-window rows lie within them, so only the blocks of those
    hours are read (a page of the newest sessions reads the window's last hours). Without them, where the engine
    keeps per-session facts, the rows are bounded by the sessions' stored spans (``facts.stored_span``).
    """
    return _described(scope, session_ids, lambda p: session_columns(goals, d, p), d, spans)


def _goal_session_columns(d: Dialect, p: Params) -> str:
    """The aggregate columns describing one converted session from its rows (after ``SELECT session_id, ``): the
    goal-session fields of ``api-spec.md``."""
    columns = [
        *session_description(d, p),
        "count(*) FILTER (WHERE type = 'pageview') AS pageviews",
        "count(*) FILTER (WHERE type = 'custom_event') AS events",
        "count(*) FILTER (WHERE type = 'error') AS errors",
        "count(*) FILTER (WHERE type = 'outbound') AS outbound",
        "min(timestamp) AS session_start",
        "max(timestamp) AS session_end",
    ]
    return ",\n    ".join(columns)


def build_goal_session_rows_query(scope: Scope, session_ids: Sequence[str], spans: Sequence[Span], d: Dialect) -> Query:
    """One described row per session of ``session_ids`` (a page of ``goals.build_goal_sessions_query``, whose
    ``page_spans`` are ``spans``) over its in-window rows, newest end first: the goal-session fields of ``api-spec.md``.
    """
    return _described(scope, session_ids, lambda p: _goal_session_columns(d, p), d, spans)


def _described(
    scope: Scope, session_ids: Sequence[str], columns: Callable[[Params], str], d: Dialect, spans: Sequence[Span] | None
) -> Query:
    """``columns`` of each session of ``session_ids`` over its in-window rows (bounded as ``build_session_rows_query``
    says), newest end first."""
    p = Params()
    start = opening(scope, d, p, rows_needed=False)
    values = [p.add(s) for s in session_ids]
    ids = ", ".join(values) or "NULL"
    described = columns(p)
    rows = qualified_rows(scope, p, d)
    if spans is not None:
        rows += f" AND ({within_spans(spans, d, p)})"
    elif d.session_facts:
        rows += f" AND {stored_span(scope.site_ids, values, p)}"
    body = f"SELECT session_id,\n    {described}\n  {rows} AND session_id IN ({ids})\n  GROUP BY session_id"
    # ``opening`` ends with ``WITH `` (or the scope CTEs and a comma); the CTE below keeps both forms valid.
    sql = f"{start}described AS ({body})\nSELECT * FROM described ORDER BY session_end DESC, session_id"
    return p.query(sql)


def build_timeline_query(site_id: int, session_id: str, limit: int, d: Dialect) -> Query:
    """The session's events in order (at most ``limit``), each with the columns of ``TIMELINE_COLUMNS``.

    Where the engine keeps per-session facts, only the events between the session's stored first and last are read.
    """
    p = Params()
    value = p.add(session_id)
    where = f"site_id = {p.add(site_id)} AND session_id = {value}"
    if d.session_facts:
        where += f" AND {stored_span((site_id,), [value], p)}"
    sql = (
        f"SELECT {', '.join(TIMELINE_COLUMNS)} FROM events WHERE {where} ORDER BY timestamp, type LIMIT {p.add(limit)}"
    )
    return p.query(sql)


def _user_sessions(scope: Scope, user_id: str, p: Params, d: Dialect) -> str:
    """Ids of the sessions in the window where ``user_id`` was identified."""
    where = window_condition(scope.site_ids, scope.window, p, d)
    return f"SELECT DISTINCT session_id FROM events WHERE {where} AND identified_user_id = {p.add(user_id)}"


def build_user_query(scope: Scope, user_id: str, limit: int, offset: int, d: Dialect) -> Query:
    """An identified user's totals and one page of their sessions, newest first, in one pass over the events.

    A user's sessions are those with an event carrying the identified id; their anonymous events before the
    identification count too (they are the same visit). Every row holds the totals over every event of those
    sessions in the window (``sessions``, ``pageviews``, ``events``, ``first_seen``, ``last_seen``; ``sessions`` is 0
    for an unknown user) and one session of the page (``total_count, session_id, session_end, session_start``, as
    ``build_session_page_query``; NULL past the end). The user's sessions are grouped once for both: asked apart,
    the totals and the page each looked the sessions up and read their events (a user's page at 100M events on
    DuckDB: 2.1-2.6 s, 1.0 and 0.9 s of it those two reads).
    """
    p = Params()
    where = window_condition(scope.site_ids, scope.window, p, d)
    pageviews = _count_where("type = 'pageview'")
    sessions = d.cte(
        "us",
        f"SELECT session_id, max(timestamp) AS session_end, min(timestamp) AS session_start, "
        f"{pageviews} AS pageviews, count(*) AS events FROM events WHERE {where} "
        f"AND session_id IN ({_user_sessions(scope, user_id, p, d)}) GROUP BY session_id",
        materialized=True,
    )
    totals = (
        "SELECT count(*) AS sessions, coalesce(sum(pageviews), 0) AS pageviews, coalesce(sum(events), 0) AS events, "
        "min(session_start) AS first_seen, max(session_end) AS last_seen FROM us"
    )
    sql = f"""WITH {sessions},
page AS (SELECT session_id AS page_session, session_end AS page_end, session_start AS page_start FROM us
         ORDER BY session_end DESC, session_id LIMIT {p.add(limit)} OFFSET {p.add(offset)})
SELECT t.*, t.sessions AS total_count, page.page_session AS session_id, page.page_end AS session_end,
  page.page_start AS session_start
FROM ({totals}) AS t LEFT JOIN page ON true
ORDER BY page.page_end DESC, page.page_session"""
    return p.query(sql)
