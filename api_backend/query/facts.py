"""Per-session facts: what the ``sessions`` table holds (``store/sessions.py``) and how reads use it.

A session whose every event lies inside the window is described by its row in ``sessions`` exactly as grouping its
in-window events would describe it, so reads take those *whole* sessions from the table. A session that crosses an
edge of the window counts only its in-window events: those *edge* sessions (few: the ones active at the window's
start or end) are grouped from their events as before, and the two parts are added up.

Filters keep their meaning: a session-level filter compares the stored value of a whole session (the same
first-non-empty value, entry/exit page, channel or user the event grouping computes) and is applied to edge
sessions over their in-window events; an any-event filter (``pathname``, ``prop:...``) selects the whole sessions
that have (or have not) a matching event in the window. Only row filters (error routes) need the event route.

The table is keyed by ``(site_id, session_id)`` while the event grouping keys by ``session_id`` alone: the two agree
because a session id belongs to one site (ingestion draws it at random, 128 bits).

DuckDB's table is read by every session-level route. ClickHouse's holds a session's rows in parts merged later: it
is read merged (``sessions_relation``), by the routes needing only the columns both tables keep, and only where that
costs less than grouping the window's events: a large window, or one of a million events or more and a table mostly
merged (``facts_where_cheaper``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from api_backend.formats import naive_utc
from api_backend.query.dialect import NO_CUTOFF, Dialect, SealedRead
from api_backend.query.filters import (
    EFFECTIVE_USER,
    POSITIVE_OF,
    Filter,
    channel_key,
    compare,
    row_expression,
    row_inputs,
    session_condition,
    set_hint,
    user_key,
)
from api_backend.query.scope import Scope, site_condition, window_condition
from api_backend.query.sql import Narrowing, Params, Query
from api_backend.query.window import Window

__all__ = [
    "FACTS_MIN_EVENTS",
    "FIRST_SET_PARAMETERS",
    "FirstWhere",
    "MAX_SPANS",
    "MERGED_SHARE",
    "NO_CUTOFF",
    "QUARTER_HOUR_US",
    "SEALED_MIN_EVENTS",
    "Span",
    "USER_ROWS_MIN_EVENTS",
    "crossing_spans",
    "edge_sessions",
    "ending_sessions",
    "fact_column",
    "facts_answer",
    "facts_where_cheaper",
    "first_where_columns",
    "inside_window",
    "joined_spans",
    "merge_spans",
    "newest_ends",
    "pathnames",
    "qualifying_from_table",
    "qualifying_sessions",
    "quarter_hour",
    "quarter_hour_start",
    "session_aggregates",
    "session_key",
    "selects_by_events",
    "seal_left_open",
    "sessions_relation",
    "spans_condition",
    "stored_span",
    "whole_sessions",
    "within_spans",
]

# Session-level filter parameters answered by "first non-empty value" (channel, entry/exit page and user have
# columns of their own).
FIRST_SET_PARAMETERS: tuple[str, ...] = (
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
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_term",
    "utm_content",
)
# The column holding a whole session's value of each session-level parameter.
_COLUMN = {name: name for name in FIRST_SET_PARAMETERS} | {
    "channel": "channel",
    "entry_page": "entry_page",
    "exit_page": "exit_page",
    "user_id": "user_value",
}

_PAGEVIEW = "type = 'pageview'"


def pathnames(d: Dialect) -> str:
    """Aggregate: the distinct paths of a session's pageviews (the ``sessions`` column ``pathnames``; empty without
    pageviews)."""
    return d.distinct_strings("pathname", _PAGEVIEW)


@dataclass(frozen=True)
class FirstWhere:
    """A ``sessions`` column holding the ``value`` of a session's earliest event where ``condition`` holds ('' when
    it holds on none), and ``at``, the column holding that event's time. Both expressions read the event columns
    ``inputs`` alone; ``hint`` is a cheaper condition on them holding wherever ``condition`` does."""

    column: str
    at: str
    value: str
    condition: str
    inputs: tuple[str, ...]
    hint: str


def first_where_columns(d: Dialect, p: Params) -> list[FirstWhere]:
    """The columns of ``sessions`` a session's earliest event where a condition holds gives: the entry page and each
    ``FIRST_SET_PARAMETERS``' first non-empty value."""
    columns = [FirstWhere("entry_page", "entry_at", "pathname", _PAGEVIEW, ("pathname", "type"), _PAGEVIEW)]
    for name in FIRST_SET_PARAMETERS:
        expr = row_expression(name, d, p)
        columns.append(FirstWhere(name, f"{name}_at", expr, f"{expr} <> ''", row_inputs(name), set_hint(name)))
    return columns


def session_aggregates(d: Dialect, p: Params, firsts: Sequence[FirstWhere] | None = None) -> list[tuple[str, str]]:
    """``(column, aggregate over a session's events)`` for every ``sessions`` column after ``site_id, session_id``.

    The same aggregates as ``filters.session_value`` / ``session_user`` / ``session_channel``, plus the key each
    value won with, so two partial rows of a session combine into the row of all its events. ``firsts`` is
    ``first_where_columns`` when the caller has it (with its values bound in ``p``).
    """
    user_sort = user_key(d)
    channel_sort = channel_key(d)
    first: dict[str, str] = {}
    for column in first_where_columns(d, p) if firsts is None else firsts:
        first[column.column] = f"coalesce({d.arg_min(column.value, 'timestamp', column.condition)}, '')"
        first[column.at] = f"min(timestamp) FILTER (WHERE {column.condition})"
    columns = [
        ("first_seen", "min(timestamp)"),
        ("last_seen", "max(timestamp)"),
        ("pageviews", f"count(*) FILTER (WHERE {_PAGEVIEW})"),
        ("events", "count(*)"),
        ("user_value", d.arg_max(EFFECTIVE_USER, user_sort)),
        ("user_key", f"max({user_sort})"),
        ("users", f"list(DISTINCT {EFFECTIVE_USER})"),
        ("entry_page", first.pop("entry_page")),
        ("entry_at", first.pop("entry_at")),
        ("exit_page", f"coalesce({d.arg_max('pathname', 'timestamp', _PAGEVIEW)}, '')"),
        ("exit_at", f"max(timestamp) FILTER (WHERE {_PAGEVIEW})"),
        ("channel", d.arg_min("channel", channel_sort)),
        ("channel_key", f"min({channel_sort})"),
    ]
    return columns + list(first.items())


def fact_column(parameter: str) -> str:
    """The ``sessions`` column holding a whole session's value of the session-level ``parameter``."""
    return _COLUMN[parameter]


def facts_answer(scope: Scope, d: Dialect, shared_columns: bool = False) -> bool:
    """Whether the engine keeps a ``sessions`` table reads use and every filter of ``scope`` can be applied to it.

    ``shared_columns``: for a read needing only the columns every store's table keeps (``sessions_relation``).
    """
    if not (d.session_facts or (shared_columns and d.shared_facts)) or scope.row_filters:
        return False
    return all(f.parameter in _COLUMN for f in scope.session_filters if f.is_session_level)


# The columns of a ``sessions`` row holding a value picked from one of the session's events as a ``(key, value)``
# pair (ClickHouse, ``store/clickhouse_schema.py``).
_PICKED = ("user_value", "entry_page", "exit_page", "channel", *FIRST_SET_PARAMETERS)


# The columns the merged relation gives a read (``sessions_relation``), as DuckDB's table names them.
_RELATION = (
    "site_id", "session_id", "first_seen", "last_seen", "pageviews", "pathnames", "users", "users_count", *_PICKED,
    "user_number", "user_text",
)  # fmt: skip


def sessions_relation(
    d: Dialect,
    p: Params,
    site_ids: tuple[int, ...],
    stored: Sequence[str] | None = None,
    part: str | None = None,
    seals: str = "",
    window: Window | None = None,
) -> str:
    """What reads name ``sessions``: the table, or where it holds partial rows (``Dialect.merged_sessions``) one row
    per session of ``site_ids``, with the columns reads use under the names DuckDB's table gives them.

    ClickHouse keeps each session that stopped long enough ago finished in ``sealed_sessions``; with a seal to read
    (``Dialect.sealed``) the relation takes those rows as they are, and merges only the rows of the sessions the seal
    left open, found in ``sessions`` by their indexes. A session counts once: sealed sessions first seen before
    ``open_from`` (which no open one is) are taken whole, later ones unless open, and open ones from ``sessions``.
    Without a seal it merges every row of the site's table with ``FINAL``. ``stored`` names the only columns a read
    takes: the engine then resolves those alone. ``part`` (with a seal only) keeps the ``"sealed"`` rows, with their
    ``goal_mask`` too, or the ``"open"`` ones; ``"reopened"`` keeps instead the sealed rows of sessions open since
    (which the relation takes from ``sessions``), as they were sealed. ``seals``: a condition on the sealed rows'
    ``seal`` they must meet. ``window``: that of a read taking only sessions first seen by its end (its whole and
    edge sessions); where no session of the seal's later parts can be one of those (``seal_left_open``), only the
    sealed rows first seen before ``open_from`` are read, and an ``"open"`` or ``"reopened"`` part is empty.
    """
    if not d.merged_sessions:
        return "sessions"
    sites = site_condition(site_ids, p)
    if d.sealed is None:
        return f"({_merged_sessions(d, stored, sites)}) AS sessions"
    sealed = d.sealed
    generation, open_from = p.add(sealed.generation), p.add(sealed.open_from)
    log_seq, cutoff = p.add(sealed.log_seq), p.add(sealed.cutoff)
    opened = (
        f"SELECT session_id FROM sessions WHERE {sites} AND max_log_seq > {log_seq} UNION ALL "
        f"SELECT session_id FROM sessions WHERE {sites} AND last_seen >= {cutoff}"
    )
    columns = ", ".join(stored or _RELATION)
    sealed_columns = f"{columns}, goal_mask" if part == "sealed" else columns
    sealed_by = f" AND {seals}" if seals else ""
    rows = (
        f"SELECT {sealed_columns} FROM sealed_sessions WHERE generation = {generation} AND {sites}{sealed_by} "
        "AND first_seen"
    )
    if window is not None and not _open_in_window(window, sealed):
        if part in ("open", "reopened"):
            return f"({rows} < {open_from} AND false) AS sessions"
        return f"({rows} < {open_from}) AS sessions"
    merged = _merged_sessions(d, stored, f"{sites} AND session_id IN ({opened})")
    parts = [
        f"{rows} < {open_from}",
        f"{rows} >= {open_from} AND session_id NOT IN ({opened})",
        f"SELECT {_open_columns(d, stored)} FROM ({merged}) AS open WHERE first_seen >= {open_from}",
    ]
    if part == "reopened":
        return f"({rows} >= {open_from} AND session_id IN ({opened})) AS sessions"
    chosen = parts[:2] if part == "sealed" else parts[2:] if part == "open" else parts
    return f"({' UNION ALL '.join(chosen)}) AS sessions"


def seal_left_open(scope: Scope, d: Dialect) -> bool:
    """Whether a read of ``scope``'s whole and edge sessions bound to the seal ``d.sealed`` can meet a session the
    seal left open, or a sealed one first seen from its ``open_from`` on (``sessions_relation``): not where the window
    ends before ``open_from``, as a window of past days does."""
    return d.sealed is None or _open_in_window(scope.window, d.sealed)


def _open_in_window(window: Window, sealed: SealedRead) -> bool:
    """``seal_left_open`` for ``window``. Each of a window's whole and edge sessions is first seen by its end, and
    every session first seen before ``open_from`` is among the sealed rows read whole; the second between the two
    keeps the engine's millisecond times clear of the edge. Finding those later parts empty costs a read of the
    open sessions' rows and a set of their ids: 20-45 ms at 10M events (``bench/analysis.md``)."""
    return window.end is None or window.end + timedelta(seconds=1) > sealed.open_from


def _open_columns(d: Dialect, stored: Sequence[str] | None) -> str:
    """The columns of the sessions a seal left open, typed as the sealed rows keep them (``Dialect.path_list``)."""
    return ", ".join(f"{d.path_list(c)} AS {c}" if c == "pathnames" else c for c in stored or _RELATION)


def _merged_sessions(d: Dialect, stored: Sequence[str] | None, where: str) -> str:
    """``SELECT`` of the rows of ``sessions`` where ``where`` holds (a condition on their site and session ids), merged
    into one per session with ``FINAL``; where the table is one part, or one large part and a few small ones, that
    costs about what reading the columns does (``bench/analysis.md``)."""
    if stored is not None:
        named = (f"tupleElement(stored.{c}, 2) AS {c}" if c in _PICKED else f"stored.{c} AS {c}" for c in stored)
        return f"SELECT {', '.join(named)} FROM sessions AS stored FINAL WHERE {where}"
    # Qualified, so each names the stored pair and not the alias its value takes.
    finals = ", ".join(f"tupleElement(stored.{name}, 2) AS {name}" for name in _PICKED)
    merged = (
        "SELECT stored.site_id AS site_id, stored.session_id AS session_id, stored.first_seen AS first_seen, "
        "stored.last_seen AS last_seen, stored.pageviews AS pageviews, stored.pathnames AS pathnames, "
        f"stored.users AS users, length(stored.users) AS users_count, {finals} FROM sessions AS stored FINAL "
        f"WHERE {where}"
    )
    users = f"{d.user_number('user_value')} AS user_number, {d.user_text('user_value')} AS user_text"
    return f"SELECT *, {users} FROM ({merged}) AS merged"


# Where the table is merged at read time (``Dialect.merged_sessions``), whole sessions come from it for a window of
# at least this many events, or for a smaller one once the table is mostly merged (below), in both cases only for a
# window holding at least twice as many events as the site has rows in the table.
FACTS_MIN_EVENTS = 50_000_000
# The table counts as mostly merged when its largest part holds at least this share of its rows: ``FINAL`` then
# merges only the few rows of the small parts into it. On the 10M bench file's copy, its six overlapping parts
# (largest share below a third) made the overview 705 -> 1,026 ms against grouping the events; one large part and
# three small ones 770 -> 360 ms; the same events fed in time order as ingestion feeds them (six parts, the largest
# 80.5%) 800 -> 592 ms (``bench/analysis.md``). A server merges the table daily to keep it so (``store/merging.py``).
MERGED_SHARE = 0.8
# A mostly merged table is read only for a window of at least this many events: below it grouping the window's events
# costs less, as the engine alone takes 50-100 ms to resolve a table form's SQL. On merged chdb stores of seeded events
# (31-day windows, medians of 5-7, ``bench/analysis.md``): at 100k events the grouping took 15-63 ms against the
# table's 56-175 ms on each route; at 300k 43-62 against 50-139 ms (the overview 55 against 50); at 1M the two were
# within 15% of each other but for the overview (121-148 against 79-92 ms); at 3M the table won (the overview 414
# against 164 ms).
MERGED_MIN_EVENTS = 1_000_000


def _merged_share() -> str:
    """SQL: the share of the ``sessions`` table's rows its largest active part holds (from the parts' metadata; 0
    where this server holds no part of it, as on a cluster, whose nodes hold ``sessions_local``)."""
    return (
        "(SELECT max(rows) / greatest(sum(rows), 1) FROM system.parts "
        "WHERE database = currentDatabase() AND table = 'sessions' AND active)"
    )


# Where sealed rows can answer (``sessions_relation``), they do for a window of at least this many events: below it the
# grouping of its events costs about as much as resolving the sealed form's SQL.
SEALED_MIN_EVENTS = 1_000_000
# ... and while the sessions the seal left open hold fewer rows of the site's table than this share of the window's
# events: beyond it (a seal far behind, one about to be written again) merging them costs more than it saves.
SEALED_OPEN_SHARE = 0.05
# A read of the sealed rows counts the window's users from its generation's build of ``sealed_users``
# (``query/user_rows.py``) for a window of at least this many events. Through the API on the bench files' copies, the
# overview took 1.5-1.75 s from the build against 2.3-2.7 s grouping the users at 100M events, but 440-520 ms against
# 350-420 ms at 10M, where the build's lookups cost more than the grouping; between the two it is not measured.
USER_ROWS_MIN_EVENTS = 30_000_000


def facts_where_cheaper(
    scope: Scope,
    facts: Callable[[Dialect], Query],
    events: Callable[[], Query],
    d: Dialect,
    *,
    when_merged: bool = True,
) -> Query:
    """``facts(d)`` (whole sessions from the table), or on an engine that merges the table at read time the one of
    the facts (read from the sealed rows, or merged at read time) and ``events()`` (the event grouping; the same
    rows, built only there) that costs less for the window's size, the seal and the table's parts.

    The sealed rows (``sessions_relation``) need no merge and are ordered by time: they answer every window of
    ``SEALED_MIN_EVENTS`` or more while the sessions left open are few. Without them (no seal yet, or one a direct
    write undid), merging reads every row of the site's table (ClickHouse orders it by session id, not by time),
    while grouping reads only the window's events, fast while they fit in memory. On chdb copies of the bench files,
    in the six overlapping parts a bulk copy leaves, the grouping won at 10M events (the overview 705 against 1,026
    ms through the API) and the table at 100M (21.1 against 11.3 s): the grouping spills to disk there. Merged into
    one large part, the table wins at both sizes (10M: 770 -> 360 ms; 100M: 3.7 s). So the narrowing counts the
    window's events and the site's rows (both from the tables' indexes), reads how merged the table is (the parts'
    metadata) and the newest seal with the sessions it left open; without a seal to read it picks the table for a
    window over most of the site's data that is large, or that is not small (``MERGED_MIN_EVENTS``) and meets a
    mostly merged table. Every form gives the same rows: the result cache keys the answer on the query as asked and
    resolves the narrowing only to compute it (``read/results.py``). With ``when_merged=False`` the merged table is
    read for large windows only, for a read that takes more from it than whole sessions' facts (the time series).
    """
    if not d.merged_sessions:
        return facts(d)
    grouped = events()
    p = Params()
    sites = site_condition(scope.site_ids, p)
    seal = "(SELECT argMax(tuple(generation, log_seq, cutoff), seal) FROM session_seals)"
    # Without a seal to read every session is open: the engine then reads none of them (a constant false condition).
    readable = f"tupleElement(current_seal, 3) > {p.add(NO_CUTOFF)}"
    opened = (
        f"SELECT session_id FROM sessions WHERE {readable} AND {sites} AND max_log_seq > tupleElement(current_seal, 2) "
        f"UNION ALL SELECT session_id FROM sessions WHERE {readable} AND {sites} "
        "AND last_seen >= tupleElement(current_seal, 3)"
    )
    sizes = (
        f"WITH {seal} AS current_seal "
        f"SELECT (SELECT count(*) FROM events WHERE {window_condition(scope.site_ids, scope.window, p, d)}) AS events, "
        f"(SELECT count(*) FROM sessions WHERE {sites}) AS sessions, {_merged_share()} AS merged, "
        "current_seal AS seal, "
        f"(SELECT tuple(count(), min(first_seen)) FROM sessions WHERE {sites} AND session_id IN ({opened})) AS opened, "
        "(SELECT max(seal) FROM sealed_user_builds WHERE generation = tupleElement(current_seal, 1)) AS users"
    )

    def choose(rows: list[dict[str, Any]]) -> Query:
        window_events, site_rows, merged = rows[0]["events"], rows[0]["sessions"], rows[0]["merged"]
        sealed = _sealed_read(rows[0]["seal"], rows[0]["opened"], window_events, rows[0]["users"])
        if sealed is not None:
            return facts(replace(d, sealed=sealed))
        mostly_merged = window_events >= MERGED_MIN_EVENTS and (merged or 0) >= MERGED_SHARE
        worth = window_events >= FACTS_MIN_EVENTS or (when_merged and mostly_merged)
        return facts(d) if worth and 2 * site_rows <= window_events else grouped

    return replace(grouped, narrowing=Narrowing(p.query(d.counting(sizes)), choose), reads_sessions=True)


def _sealed_read(
    seal: Sequence[Any] | None, opened: Sequence[Any], window_events: int, users: int | None
) -> SealedRead | None:
    """What a read of the sealed rows is bound to, from the narrowing's newest seal ``(generation, log_seq, cutoff)``,
    ``(rows, first event)`` of the sessions it left open and the seal of its generation's newest build of users (0
    for none, or not to read for this window); None where they should not answer."""
    if not seal or not seal[0] or window_events < SEALED_MIN_EVENTS:
        return None
    generation, log_seq, cutoff = seal
    cutoff = naive_utc(cutoff)
    open_rows, first_open = opened
    if cutoff <= NO_CUTOFF or open_rows > SEALED_OPEN_SHARE * window_events:
        return None
    # Every sealed session stopped before the cutoff, so it bounds them all when none is open.
    open_from = min(cutoff, naive_utc(first_open)) if open_rows else cutoff
    users_seal = int(users or 0) if window_events >= USER_ROWS_MIN_EVENTS else 0
    return SealedRead(int(generation), int(log_seq), cutoff, open_from, users_seal)


def _after_start(column: str, window: Window, p: Params) -> str:
    if window.start is None:
        return "true"
    return f"{column} {'>=' if window.include_start else '>'} {p.add(window.start)}"


def _before_end(column: str, window: Window, p: Params) -> str:
    if window.end is None:
        return "true"
    return f"{column} {'<=' if window.include_end else '<'} {p.add(window.end)}"


def inside_window(first: str, last: str, window: Window, p: Params) -> str:
    """SQL: a session first seen at ``first`` and last at ``last`` has every event in ``window`` (a whole session)."""
    return f"{_after_start(first, window, p)} AND {_before_end(last, window, p)}"


def _any_event(f: Filter, scope: Scope, d: Dialect, p: Params) -> str:
    """``session_id [NOT] IN (...)``: whole sessions with (without) an in-window event matching ``f``.

    A filter on an event property matches custom events only, which the store's copy of the goals' rows holds too
    (``Dialect.goal_rows``).
    """
    negative = f.type in POSITIVE_OF
    condition = compare(row_expression(f.parameter, d, p), POSITIVE_OF.get(f.type, f.type), f.values, d, p)
    rows = "events"
    if f.prop_key is not None:
        condition = f"type = 'custom_event' AND {condition}"
        rows = d.goal_rows
    in_window = window_condition(scope.site_ids, scope.window, p, d)
    matching = f"SELECT session_id FROM {rows} WHERE {in_window} AND {condition}"
    return f"session_id {'NOT IN' if negative else 'IN'} ({matching})"


def selects_by_events(scope: Scope) -> bool:
    """Whether a filter of ``scope`` selects whole sessions by their in-window events (``pathname``, ``prop:...``):
    then every read of ``whole_sessions`` looks those events up again, and a query reading it more than once is
    better off keeping it."""
    return any(not f.is_session_level for f in scope.session_filters)


def whole_sessions(scope: Scope, columns: str, d: Dialect, p: Params, part: str | None = None, seals: str = "") -> str:
    """``SELECT <columns> FROM sessions``: the qualifying sessions whose every event lies in the window (with a seal
    to read, those of one ``part`` of ``sessions_relation`` only if given, and sealed rows meeting ``seals``)."""
    p.reads_sessions = True
    w = scope.window
    where = [
        site_condition(scope.site_ids, p),
        _after_start("first_seen", w, p),
        _before_end("last_seen", w, p),
    ]
    for f in scope.session_filters:
        if f.is_session_level:
            where.append(compare(_COLUMN[f.parameter], f.type, f.values, d, p))
        else:
            where.append(_any_event(f, scope, d, p))
    relation = sessions_relation(d, p, scope.site_ids, part=part, seals=seals, window=w)
    return f"SELECT {columns} FROM {relation} WHERE {' AND '.join(where)}"


def _crossing(scope: Scope, p: Params) -> list[tuple[str, str]]:
    """``(edge, condition on sessions)``: the sessions crossing the start, then those crossing only the end."""
    w = scope.window
    if w.start is None and w.end is None:
        return []
    parts: list[tuple[str, str]] = []
    if w.start is not None:
        sites = site_condition(scope.site_ids, p)
        parts.append(
            ("start", f"{sites} AND NOT {_after_start('first_seen', w, p)} AND {_after_start('last_seen', w, p)}")
        )
    if w.end is not None:
        parts.append(("end", _crossing_end(scope, p)))
    return parts


def _crossing_end(scope: Scope, p: Params) -> str:
    """The condition on sessions of ``_crossing``'s sessions crossing only the end (a window with an end)."""
    w = scope.window
    start_side = f" AND {_after_start('first_seen', w, p)}" if w.start is not None else ""
    before = f"{_before_end('first_seen', w, p)} AND NOT {_before_end('last_seen', w, p)}"
    return f"{site_condition(scope.site_ids, p)}{start_side} AND {before}"


def ending_sessions(scope: Scope, columns: str, d: Dialect, p: Params) -> str | None:
    """``SELECT <columns> FROM sessions``: the sessions starting in the window and ending after it, as the table
    keeps them (whole); None for a window without an end."""
    if scope.window.end is None:
        return None
    relation = sessions_relation(d, p, scope.site_ids, window=scope.window)
    return f"SELECT {columns} FROM {relation} WHERE {_crossing_end(scope, p)}"


def edge_sessions(scope: Scope, columns: str, d: Dialect, p: Params) -> str:
    """``SELECT session_id<columns> ... GROUP BY session_id``: the edge sessions over their in-window events.

    The rows of sessions crossing the start lie before the last of their ends, those crossing the end after the
    first of their starts: bounds the engine prunes the events by, so only the rows near the edges are read.
    """
    p.reads_sessions = True
    conditions = [session_condition(f, d, p) for f in scope.session_filters]
    having = f" HAVING {' AND '.join(conditions)}" if conditions else ""
    crossing = _crossing(scope, p)
    if d.merged_sessions and crossing:
        rows = _merged_edge_rows(scope, crossing, d, p)
    else:
        parts = []
        for kind, where in crossing:
            bound = (
                f"timestamp <= (SELECT max(last_seen) FROM sessions WHERE {where})"
                if kind == "start"
                else f"timestamp >= (SELECT min(first_seen) FROM sessions WHERE {where})"
            )
            parts.append(
                f"SELECT * FROM events WHERE {window_condition(scope.site_ids, scope.window, p, d)} AND {bound} "
                f"AND session_id IN (SELECT session_id FROM sessions WHERE {where})"
            )
        rows = " UNION ALL ".join(parts) or "SELECT * FROM events WHERE false"
    return f"SELECT session_id{columns} FROM ({rows}) AS edge_rows GROUP BY session_id{having}"


def _merged_edge_rows(scope: Scope, crossing: list[tuple[str, str]], d: Dialect, p: Params) -> str:
    """``edge_sessions``' rows where each read of the table merges it (``sessions_relation``): one read finds the
    ids of the sessions crossing either edge and the bounds on their rows, not two reads per edge. At 100M events on
    chdb, 1.8 -> 0.9 s.
    """
    either = " OR ".join(f"({where})" for _, where in crossing)
    ends = [
        f"max(last_seen) FILTER (WHERE {where})" if kind == "start" else f"min(first_seen) FILTER (WHERE {where})"
        for kind, where in crossing
    ]
    # One scalar subquery, written once and named, over the four columns it reads: the engine spent time resolving
    # each copy and each column. On a store of 600 sessions (the slower machine), the overview's table form 83 ->
    # 55 ms and a page of sessions 92 -> 59 ms, their SQL less than half as long (``bench/analysis.md``).
    stored = ("site_id", "session_id", "first_seen", "last_seen")
    relation = sessions_relation(d, p, scope.site_ids, stored, window=scope.window)
    found = f"(SELECT tuple(groupArray(session_id), {', '.join(ends)}) FROM {relation} WHERE {either})"
    near = " OR ".join(
        d.time_bound("timestamp", "<=" if kind == "start" else ">=", f"tupleElement(edge_found, {n})")
        for n, (kind, _) in enumerate(crossing, 2)
    )
    ids = "SELECT arrayJoin(ifNull(tupleElement(edge_found, 1), []))"
    in_window = window_condition(scope.site_ids, scope.window, p, d)
    return f"WITH {found} AS edge_found SELECT * FROM events WHERE {in_window} AND ({near}) AND session_id IN ({ids})"


# A span of time, both ends included.
Span = tuple[datetime, datetime]
# The most spans a query is narrowed to (``merge_spans``).
MAX_SPANS = 32


def crossing_spans(scope: Scope, split: str, group: str, p: Params) -> str:
    """``SELECT lo, hi``: spans of time holding every event of the edge sessions and of the whole sessions where
    ``split`` holds, one per value of ``group`` and one per edge (first to last event of the sessions in it).

    The scope's filters are left out: the spans must hold those sessions' events, and may hold others.
    """
    w = scope.window
    sites = site_condition(scope.site_ids, p)
    whole = f"{sites} AND {_after_start('first_seen', w, p)} AND {_before_end('last_seen', w, p)}"
    parts = [
        f"SELECT min(first_seen) AS lo, max(last_seen) AS hi FROM sessions WHERE {whole} AND {split} GROUP BY {group}"
    ]
    parts += [f"SELECT min(first_seen), max(last_seen) FROM sessions WHERE {where}" for _, where in _crossing(scope, p)]
    return " UNION ALL ".join(parts)


def merge_spans(rows: Sequence[Mapping[str, Any]], window: Window, limit: int = MAX_SPANS) -> list[Span] | None:
    """The spans of ``crossing_spans`` rows as at most ``limit`` disjoint spans holding them all, in order.

    Overlapping spans are joined; beyond ``limit`` the ones with the narrowest gaps between them are too. None when
    the joined spans cover more than half the window (of an open window: more than half the time from the first
    span to the last), where they would skip little.
    """
    spans = joined_spans(((row["lo"], row["hi"]) for row in rows if row["lo"] is not None), limit)
    if window.start is not None and window.end is not None:
        length = window.end - window.start
    else:
        length = spans[-1][1] - spans[0][0] if spans else timedelta(0)
    if sum((hi - lo for lo, hi in spans), start=timedelta(0)) * 2 > length:
        return None
    return spans


def joined_spans(spans: Iterable[Span], limit: int = MAX_SPANS) -> list[Span]:
    """``spans`` as at most ``limit`` disjoint spans holding them all, in order: overlapping spans are joined, and
    beyond ``limit`` the ones with the narrowest gaps between them too."""
    joined: list[list[datetime]] = []
    for lo, hi in sorted(spans):
        if joined and lo <= joined[-1][1]:
            joined[-1][1] = max(joined[-1][1], hi)
        else:
            joined.append([lo, hi])
    if len(joined) > limit:
        widest = sorted(range(1, len(joined)), key=lambda i: joined[i][0] - joined[i - 1][1])[len(joined) - limit :]
        cuts = [0, *sorted(widest), len(joined)]
        joined = [[joined[a][0], joined[b - 1][1]] for a, b in zip(cuts, cuts[1:], strict=False)]
    return [(lo, hi) for lo, hi in joined]


def span_condition(span: Span, d: Dialect, p: Params) -> str:
    """``timestamp`` within ``span``, both ends included, as bounds the engine skips blocks by (on ClickHouse the
    blocks of other days too: ``Dialect.time_bound``)."""
    first, last = span
    return f"{d.time_bound('timestamp', '>=', p.add(first))} AND {d.time_bound('timestamp', '<=', p.add(last))}"


def within_spans(spans: Sequence[Span], d: Dialect, p: Params) -> str:
    """``timestamp`` within one of ``spans`` (``span_condition`` each; false with none). Unlike ``spans_condition``
    its bounds carry the dialect's day hints, which ClickHouse skips whole days by (``Dialect.time_bound``)."""
    return " OR ".join(f"({span_condition(span, d, p)})" for span in spans) or "false"


def spans_condition(column: str, spans: Sequence[Span], p: Params) -> str:
    """True when ``column`` lies in one of ``spans`` (false with none): bounds the engine skips blocks by."""
    ranges = [f"({column} >= {p.add(lo)} AND {column} <= {p.add(hi)})" for lo, hi in spans]
    return " OR ".join(ranges) or "false"


def qualifying_sessions(scope: Scope, d: Dialect, p: Params) -> str:
    """``SELECT session_id ...``: every session the scope counts, once (whole ones from the table, then edge ones)."""
    edge = edge_sessions(scope, "", d, p)
    return f"{whole_sessions(scope, 'session_id', d, p)} UNION ALL SELECT session_id FROM ({edge}) AS edge"


def qualifying_from_table(scope: Scope, d: Dialect, p: Params) -> str | None:
    """``qualifying_sessions`` where the sessions table can answer ``scope`` (``facts_answer``), else None: how the
    routes reading events find the sessions their session filters select (``scope.scope_ctes``)."""
    return qualifying_sessions(scope, d, p) if facts_answer(scope, d) else None


def newest_ends(sessions: str, count: int, p: Params) -> tuple[str, str]:
    """``(cut CTE, candidates)``: the sessions of ``sessions`` (a CTE with ``session_end``) that can be among the
    ``count`` newest ends, for a page read again rather than stored.

    ``cut`` holds the earliest of the ``count`` newest ends, found from the ends alone; ``candidates`` (``<sessions>
    WHERE ...``) keeps the sessions ending no earlier, ties included, so a top-N over them is the top-N over all and
    reads the other columns (the ids) of only those.
    """
    newest = f"SELECT session_end FROM {sessions} ORDER BY session_end DESC LIMIT {p.add(count)}"
    cut = f"cut AS (SELECT min(session_end) AS t FROM ({newest}) AS newest)"
    return cut, f"{sessions} WHERE session_end >= (SELECT t FROM cut)"


def session_key(session_id: str) -> str:
    """SQL: the ``sessions.session_key`` of the session id ``session_id`` (SQL), 64 bits of its MD5."""
    return f"md5_number_lower({session_id})"


# A UTC quarter-hour in microseconds. Every zone's offset is a whole number of quarter-hours (checked per window by
# ``zones.quarter_hours_align``), so the local quarter-hours, hours, days, weeks and months start on UTC ones.
QUARTER_HOUR_US = 900_000_000


def quarter_hour(timestamp: str) -> str:
    """SQL (DuckDB): the number of the UTC quarter-hour holding ``timestamp`` since the epoch (a time after 1970)."""
    return f"CAST(epoch_us({timestamp}) // {QUARTER_HOUR_US} AS INTEGER)"


def quarter_hour_start(number: str) -> str:
    """SQL (DuckDB): the start of the UTC quarter-hour ``number`` (``quarter_hour``) as a timestamp."""
    return f"make_timestamp(CAST({number} AS BIGINT) * {QUARTER_HOUR_US})"


def stored_span(site_ids: tuple[int, ...], session_ids: Sequence[str], p: Params) -> str:
    """``timestamp >= ... AND timestamp <= ...``: the events of the sessions ``session_ids`` (SQL values) lie between
    the first and the last event stored of any of them.

    A bound on the events read for a few sessions whose in-window span is not known (one session's page), so the
    engine skips the blocks outside it: that session's hours. The stored rows are found by their narrow
    ``session_key`` before their ids are compared. With none of them stored it bounds nothing.
    """
    ids = ", ".join(session_ids) or "NULL"
    keys = ", ".join(session_key(s) for s in session_ids) or "NULL"
    where = f"{site_condition(site_ids, p)} AND session_key IN ({keys}) AND session_id IN ({ids})"
    first = f"(SELECT min(first_seen) FROM sessions WHERE {where})"
    last = f"(SELECT max(last_seen) FROM sessions WHERE {where})"
    return (
        f"timestamp >= coalesce({first}, TIMESTAMP '0001-01-01') "
        f"AND timestamp <= coalesce({last}, TIMESTAMP '9999-12-31')"
    )
