"""The rows a read query measures: one site (or several), one window, the sessions its filters select.

``scope_ctes`` opens every analytics query the same way, so all endpoints agree on what a session is:

    WITH qs AS (SELECT session_id FROM events WHERE <site+window> GROUP BY session_id HAVING <filters>),
         fe AS (SELECT * FROM events WHERE <site+window> AND session_id IN qs AND <row filters>)

The site and window predicate comes first so the engine prunes by ``(site_id, timestamp)`` before
anything else; ``qs`` exists only when some filter qualifies sessions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from api_backend.query.dialect import Dialect
from api_backend.query.filters import Filter, compare, row_expression, session_condition
from api_backend.query.sql import Params, Query
from api_backend.query.window import Window

__all__ = [
    "QualifyingFinder",
    "Scope",
    "opening",
    "qualified_rows",
    "scope_ctes",
    "session_groups",
    "site_condition",
    "window_condition",
    "window_version_query",
]


@dataclass(frozen=True)
class Scope:
    """What to measure: sites, window, filters, and which filter parameters apply to the rows themselves."""

    site_ids: tuple[int, ...]
    window: Window
    filters: tuple[Filter, ...] = ()
    row_parameters: frozenset[str] = frozenset()

    @property
    def session_filters(self) -> tuple[Filter, ...]:
        """Filters that select sessions."""
        return tuple(f for f in self.filters if f.parameter not in self.row_parameters)

    @property
    def row_filters(self) -> tuple[Filter, ...]:
        """Filters applied to the measured rows themselves."""
        return tuple(f for f in self.filters if f.parameter in self.row_parameters)


def site_condition(site_ids: tuple[int, ...], p: Params) -> str:
    """``site_id`` equal to the one of ``site_ids`` or in them, as bound parameters."""
    if len(site_ids) == 1:
        return f"site_id = {p.add(site_ids[0])}"
    return f"site_id IN ({', '.join(p.add(s) for s in site_ids)})"


def window_condition(site_ids: tuple[int, ...], window: Window, p: Params, d: Dialect) -> str:
    """``site_id`` and ``timestamp`` bounds, as bound parameters (``Dialect.time_bound``)."""
    parts = [site_condition(site_ids, p)]
    if window.start is not None:
        parts.append(d.time_bound("timestamp", ">=" if window.include_start else ">", p.add(window.start)))
    if window.end is not None:
        parts.append(d.time_bound("timestamp", "<=" if window.include_end else "<", p.add(window.end)))
    return " AND ".join(parts)


def window_version_query(site_ids: tuple[int, ...], window: Window, d: Dialect) -> Query:
    """``n``: the number of rows of ``site_ids`` in ``window`` (the key that changes with every write into it).

    That is the events, plus the rows of the store's copies (error rows, goal rows) where it writes those after the
    events (``Dialect.copies_apart``): counts from the tables' indexes, a few milliseconds. The result cache keeps
    an answer only when no write was under way while it was read (``read/results.py``), so the count has to change
    only with what changes an answer: a row entering the window.
    """
    p = Params()
    if not d.copies_apart:
        return p.query(d.counting(f"SELECT count(*) AS n FROM events WHERE {window_condition(site_ids, window, p, d)}"))
    counts = " + ".join(
        f"(SELECT count(*) FROM {table} WHERE {window_condition(site_ids, window, p, d)})"
        for table in dict.fromkeys(("events", d.error_rows, d.goal_rows))
    )
    return p.query(d.counting(f"SELECT {counts} AS n"))


# Finds ``qs`` from a table of sessions (``facts.qualifying_from_table``): the SELECT of the sessions a scope's session
# filters select, or None where that table cannot answer them.
QualifyingFinder = Callable[[Scope, Dialect, Params], str | None]


def scope_ctes(
    scope: Scope, d: Dialect, p: Params, rows: str = "events", *, qualifying: QualifyingFinder | None = None
) -> str:
    """``WITH [qs AS (...),] fe AS (...)``: ``fe`` holds the in-window rows of the qualifying sessions.

    ``rows`` is the table ``fe`` takes its rows from: ``events``, or a table holding a subset of them with the same
    columns (the error rows). Sessions still qualify on all their events. With ``qualifying`` they are found from the
    ``sessions`` table where it can answer (``_qualifying_cte``); a builder's form grouping every event leaves it
    out.
    """
    where = window_condition(scope.site_ids, scope.window, p, d)
    ctes = []
    fe_where = [where]
    if scope.session_filters:
        ctes.append(_qualifying_cte(scope, where, d, p, qualifying))
        fe_where.append("session_id IN (SELECT session_id FROM qs)")
    for f in scope.row_filters:
        fe_where.append(compare(row_expression(f.parameter, d, p), f.type, f.values, d, p))
    ctes.append(d.cte("fe", f"SELECT * FROM {rows} WHERE {' AND '.join(fe_where)}", materialized=False))
    return "WITH " + ",\n".join(ctes)


def _qualifying_cte(scope: Scope, where: str, d: Dialect, p: Params, qualifying: QualifyingFinder | None) -> str:
    """``qs``: the sessions the session filters of ``scope`` select; from ``qualifying`` where it finds them, else
    grouped from the window's events.

    From the sessions table, at 10M events on DuckDB, the error names filtered on a channel took 1.4-2.5 -> 0.2-0.6 s
    and the funnel 1.7-3.4 -> 0.6-1.0 s (their SQL on a slower machine, another job using a core): only the sessions
    crossing the window's edges are grouped from their events.
    """
    found = qualifying(Scope(scope.site_ids, scope.window, scope.session_filters), d, p) if qualifying else None
    if found is not None:
        return d.cte("qs", found, materialized=True)
    having = " AND ".join(session_condition(f, d, p) for f in scope.session_filters)
    return f"qs AS (SELECT session_id FROM events WHERE {where} GROUP BY session_id HAVING {having})"


def opening(
    scope: Scope, d: Dialect, p: Params, *, rows_needed: bool, qualifying: QualifyingFinder | None = None
) -> str:
    """``WITH `` plus, when the query reads ``fe`` (or row filters force it), the scope CTEs and a comma
    (``qualifying`` as in ``scope_ctes``)."""
    if rows_needed or scope.row_filters:
        return scope_ctes(scope, d, p, qualifying=qualifying) + ",\n"
    return "WITH "


def session_groups(scope: Scope, columns: str, d: Dialect, p: Params, having: str | None = None) -> str:
    """``SELECT session_id<columns> ... GROUP BY session_id``: one row per qualifying session, in one pass.

    The session filters become the ``HAVING`` of this same grouping (aggregates over the session's in-window
    events, exactly what ``qs`` computes), so no separate qualification scan is needed. With row filters
    the rows must be narrowed first, so this groups ``fe`` (from ``scope_ctes``) instead. ``having`` adds a
    further aggregate condition.
    """
    if scope.row_filters:
        tail = f" HAVING {having}" if having else ""
        return f"SELECT session_id{columns} FROM fe GROUP BY session_id{tail}"
    conditions = [session_condition(f, d, p) for f in scope.session_filters]
    if having:
        conditions.append(having)
    tail = f" HAVING {' AND '.join(conditions)}" if conditions else ""
    where = window_condition(scope.site_ids, scope.window, p, d)
    return f"SELECT session_id{columns} FROM events WHERE {where} GROUP BY session_id{tail}"


def qualified_rows(scope: Scope, p: Params, d: Dialect) -> str:
    """``FROM ... WHERE ...`` over the in-window rows, for sessions already known to qualify (add ``AND ...``)."""
    if scope.row_filters:
        return "FROM fe WHERE true"
    return f"FROM events WHERE {window_condition(scope.site_ids, scope.window, p, d)}"
