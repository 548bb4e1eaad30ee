"""The ``sessions`` table: one row of facts per (site, session), kept up to date as events are stored.

Session-level reads (the overview and its time series) read whole sessions from here instead of grouping every
event of the window again; only sessions that cross the window's edges are computed from their events
(``api_backend/query/overview.py``). So every fact is one a session's events determine, and each is kept in a form
two partial rows of the same session can be combined into (a later batch may bring more events of a session):

- ``first_seen`` / ``last_seen``: min / max event time; ``pageviews`` / ``events``: counts;
- ``user_value`` / ``user_key``: the session's user (``filters.session_user``: last identified id, else last
  visitor id) and the key it won with; ``users``: the distinct per-event users (identified id, else visitor id);
  ``user_number`` / ``user_text``: ``user_value`` as a number when it has a visitor id's form, else as it is
  (``Dialect.user_number``), and ``users_count``, the length of ``users`` (kept, because reading the lists to measure
  them made the daily series 245 -> 320 ms at 10M events): reads count distinct users from them;
- ``entry_page`` / ``exit_page`` with the times of the first / last pageview; ``channel`` with its key
  (``filters.session_channel``);
- for each parameter of ``FIRST_SET_PARAMETERS``: its first non-empty value (``<name>``) and that event's time
  (``<name>_at``), exactly what a session-level filter compares (``filters.session_value``);
- ``pathnames``: the distinct paths of its pageviews (the pages it counts in by pathname, the path goals it
  reached);
- ``goal_mask``: a bit per goal of the site the session completed (``store/goal_bits.py``): the fold's registry of
  goals sets them, a ``bit_or`` like the lists;
- ``session_key``: 64 bits of the id's MD5 (stable across engine versions, unlike ``hash``), the narrow column a
  batch finds its stored sessions by; the id itself is compared only where the key matches.
- ``quarter_hours``: the session's pageviews in each UTC quarter-hour in which it has events, as ``(q, pageviews)``
  pairs ordered by ``q`` (``facts.quarter_hour``), so the time series buckets a session that crosses a bucket
  boundary without reading its events (``query/overview.py``). NULL where unknown, and then the series reads the
  events as before: for the sessions stored before the column was added (an upgrade adds it without reading every
  event), and for a session with events before 1970.
- ``prev_first_seen``: the ``first_seen`` of the session before it in its user's *chain*, the site's sessions with the
  same ``user_number`` / ``user_text`` ordered by ``(first_seen, session_id)``; for the first one a microsecond after
  its own ``first_seen`` (no session before it can start later), NULL while unknown. A user counts once in a set of
  sessions: the distinct users of the sessions starting after a time are those of its sessions whose previous one
  started before it, so the overview and its series count the users of their whole sessions with a filtered count,
  and look up only the few users of the other sessions (``query/chains.py``). A fold makes unknown every session it
  adds, moves (an earlier start, another user) or may have moved the neighbour of: the sessions of those chains from
  the earliest start involved on. ``build_chain_pass`` then looks up the unknown ones, all at once, once enough have
  gathered (``store/duckdb.py``); until then reads take their users as they take the edge sessions'. (A first
  session is not marked ``-infinity``: those runs made DuckDB keep the column run-length encoded, which a filter read
  four times slower than the other times.)

A batch looks for its stored sessions among those opened recently, not among all of them: reading every stored key
made appending 5,000 events at a time to 27.8M sessions (100M events) cost 30.1 us per event, against 15.7 now. An id
ingestion gives a new session holds the time it was opened (``ingest/sessions.py``, ``session_opened``), and
ingestion stamps a session's events with their arrival, from then on, so its stored row has ``first_seen`` no
earlier than that time. A fold searches the rows from the earliest opening time of its batch's sessions, less
``OPENED_SLACK`` (a clock may step back). Where that cannot be relied on, it searches every row: a batch with an id
of another form (an earlier version's, a seeded one), or with a session listed in ``sessions_unbounded``, which
records every session whose events were found older than its id's time less the slack (checked in each fold, and
over the whole table once when a file gets the list). So the bound never hides a stored session.

The aggregates come from ``api_backend.query.facts`` (built on ``query.filters``), so the table and the event
queries cannot disagree.
DuckDB folds events into the table in the transaction that stores them, or, for small commits, gathers them in
``sessions_pending`` and folds them once enough have gathered or a read needs the table (``store/duckdb.py``): the
batch's sessions are matched on ``(site_id, session_id)``, the stored ones updated and the new ones inserted
(``build_sessions_upsert``). (No primary key: ``INSERT ... ON CONFLICT`` through its index measured 3-4 times
slower, see ``bench/analysis.md``.)
ClickHouse keeps it with a materialized view into an ``AggregatingMergeTree`` (``clickhouse_schema.py``), with
``pathnames`` but without ``session_key`` and ``goal_mask`` (only DuckDB's reads use them). Its reads take the rows
merged (``query.facts.sessions_relation``), which computes ``user_number``, ``user_text`` and ``users_count`` from
the merged row instead of storing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from api_backend.query.dialect import DUCKDB
from api_backend.query.facts import (
    FIRST_SET_PARAMETERS,
    first_where_columns,
    pathnames,
    quarter_hour,
    session_aggregates,
    session_key,
)
from api_backend.query.sql import Params, Query
from api_backend.store.goal_bits import Registry, fold_mask

__all__ = [
    "ADDED_COLUMNS",
    "OPENED_SLACK",
    "SESSIONS_DDL",
    "SESSION_KEY",
    "build_chain_pass",
    "build_sessions_fill",
    "build_sessions_upgrade",
    "build_sessions_upsert",
    "build_unbounded_list",
    "session_opened",
]

# Added columns computed from the row's own columns, with their types: added in place when they are all a table
# lacks (see ``build_sessions_upgrade``).
# ``goal_mask`` is 0 in every session when added: no goal has a bit then (``store/goal_bits.py``).
_DERIVED_COLUMNS = {"user_number": "UBIGINT", "user_text": "VARCHAR", "users_count": "INTEGER", "goal_mask": "BIGINT"}
# ``quarter_hours`` is added empty (NULL) to a table from before it, also in place: reads then take those sessions'
# events.
_QUARTER_HOURS = "STRUCT(q INTEGER, pageviews INTEGER)[]"
# ``prev_first_seen`` is added unknown (NULL) too: the next chain pass looks every session's up.
_IN_PLACE_COLUMNS = _DERIVED_COLUMNS | {"quarter_hours": _QUARTER_HOURS, "prev_first_seen": "TIMESTAMP"}
_FIRST_SET_COLUMNS = "".join(f",\n  {name} VARCHAR NOT NULL, {name}_at TIMESTAMP" for name in FIRST_SET_PARAMETERS)
_COLUMNS = f"""(
  site_id INTEGER NOT NULL,
  session_id VARCHAR NOT NULL,
  first_seen TIMESTAMP NOT NULL,
  last_seen TIMESTAMP NOT NULL,
  pageviews BIGINT NOT NULL,
  events BIGINT NOT NULL,
  user_value VARCHAR NOT NULL, user_key BIGINT NOT NULL,
  users VARCHAR[] NOT NULL,
  entry_page VARCHAR NOT NULL, entry_at TIMESTAMP,
  exit_page VARCHAR NOT NULL, exit_at TIMESTAMP,
  channel VARCHAR NOT NULL, channel_key BIGINT NOT NULL{_FIRST_SET_COLUMNS},
  session_key UBIGINT NOT NULL,
  pathnames VARCHAR[] NOT NULL,
  {", ".join(f"{name} {kind}" for name, kind in _DERIVED_COLUMNS.items())},
  quarter_hours {_QUARTER_HOURS},
  prev_first_seen TIMESTAMP
)"""
SESSIONS_DDL = f"CREATE TABLE IF NOT EXISTS sessions {_COLUMNS}"
# The stored form of ``session_key`` (a table from before the column gets it at open, ``build_sessions_upgrade``).
SESSION_KEY = session_key("session_id")
# The aggregate of ``pathnames`` over a batch of events.
PATHNAMES = pathnames(DUCKDB)
# How much older than its id's time a session's events may be and still be found by a fold's time bound.
OPENED_SLACK = timedelta(hours=1)
# The sessions a fold's time bound may not find (see the module docstring).
_UNBOUNDED_DDL = "CREATE TABLE sessions_unbounded (site_id INTEGER NOT NULL, session_id VARCHAR NOT NULL)"


def session_opened(session_id: str) -> str:
    """SQL: the time held by a session id of ``ingest.sessions.new_session_id``'s form (a UUID version 7 in 32 hex
    digits, its first 12 the milliseconds since the epoch), else NULL."""
    return (
        f"CASE WHEN length({session_id}) = 32 AND substr({session_id}, 13, 1) = '7' "
        f"THEN epoch_ms(TRY_CAST('0x' || substr({session_id}, 1, 12) AS BIGINT)) END"
    )


def _too_early(alias: str) -> str:
    """SQL: the session ``alias`` has events older than its id's time less the slack (``$slack``)."""
    return f"{alias}.first_seen < {session_opened(f'{alias}.session_id')} - $slack"


def build_unbounded_list() -> list[Query]:
    """Create ``sessions_unbounded`` listing the stored sessions a fold's time bound may not find (once per file)."""
    return [
        Query(_UNBOUNDED_DDL),
        Query(
            f"INSERT INTO sessions_unbounded SELECT site_id, session_id FROM sessions AS s WHERE {_too_early('s')}",
            {"slack": OPENED_SLACK},
        ),
    ]


def _user_forms(row: str) -> dict[str, str]:
    """``user_number``, ``user_text`` and ``users_count`` of the row ``row`` (from its ``user_value`` and ``users``)."""
    return {
        "user_number": DUCKDB.user_number(f"{row}.user_value"),
        "user_text": DUCKDB.user_text(f"{row}.user_value"),
        "users_count": f"len({row}.users)",
    }


def _added_forms(row: str) -> dict[str, str]:
    """The added columns of the row ``row`` as an upgrade fills them (``goal_mask`` 0: no goal has a bit yet;
    ``quarter_hours`` unknown)."""
    return _user_forms(row) | {
        "goal_mask": "0",
        "quarter_hours": f"CAST(NULL AS {_QUARTER_HOURS})",
        "prev_first_seen": "CAST(NULL AS TIMESTAMP)",
    }


def _grouped(source: str, p: Params, registry: Registry | None = None) -> str:
    """The sessions of ``source`` in the table's columns, with the bits of ``registry``'s goals they complete, then
    ``first_later``: whether ``_first_later_update`` must still give the session its ``first_where_columns``.

    Those columns (the entry page and the first non-empty values, 36 of the row's 50 aggregates) are not aggregated
    one by one. One ``arg_min`` keeps the event columns they read from the session's earliest event, which answers
    each column whose condition holds there, with the session's first time; and a ``bit_or`` of each column's hint,
    a cheap test implied by its condition, answers the columns whose condition holds on no event. A session where a
    hint holds on some event but the condition does not on its first one (a first event without a referrer and a
    later one with it, say) is flagged for the update, which aggregates its events. On events tied at the session's
    first time both ways pick any of them.

    ``quarter_hours`` is counted from two lists of the session's quarter-hours, of its events and of its pageviews,
    instead of a second grouping by session and quarter-hour joined back. Grouping a million seeded events took
    2.4 s with every column aggregated and the second grouping, 1.3 s so (``bench/analysis.md``).
    """
    firsts = first_where_columns(DUCKDB, p)
    aggregates = session_aggregates(DUCKDB, p, firsts)
    inputs = list(dict.fromkeys(name for column in firsts for name in column.inputs))
    hints = " | ".join(f"CASE WHEN {column.hint} THEN {1 << i} ELSE 0 END" for i, column in enumerate(firsts))
    answered: dict[str, str] = {}
    for column in firsts:
        answered[column.column] = f"CASE WHEN {column.condition} THEN {column.value} ELSE '' END AS {column.column}"
        answered[column.at] = f"CASE WHEN {column.condition} THEN first_seen END AS {column.at}"
    kept = [(name, agg) for name, agg in aggregates if name not in answered]
    # The earliest event's columns are unpacked beside the aggregates, under their own names.
    assert not set(inputs) & ({name for name, _ in kept} | {"hinted", "quarters", "pageview_quarters"})
    select = ",\n  ".join(f"{agg} AS {name}" for name, agg in kept)
    mask = DUCKDB.bit_or(fold_mask(registry or {}, p))
    quarter = quarter_hour("timestamp")
    grouped = (
        f"SELECT site_id, session_id,\n  {select},\n"
        f"  arg_min(struct_pack({', '.join(inputs)}), timestamp) AS first_event,\n  bit_or({hints}) AS hinted,\n"
        f"  list(DISTINCT {quarter}) AS quarters,\n"
        f"  list({quarter}) FILTER (WHERE type = 'pageview') AS pageview_quarters,\n"
        f"  {SESSION_KEY} AS session_key,\n  {PATHNAMES} AS pathnames,\n"
        f"  {mask} AS goal_mask\nFROM {source} GROUP BY site_id, session_id"
    )
    later = " OR ".join(
        f"((hinted & {1 << i}) <> 0 AND NOT coalesce({column.condition}, false))" for i, column in enumerate(firsts)
    )
    rows = ", ".join(answered.get(name, name) for name, _ in aggregates)
    # The pageviews of each quarter-hour with events, counted in the session's list of its pageviews' quarter-hours.
    counted = "CAST(coalesce(len(list_filter(pageview_quarters, lambda y: y = x)), 0) AS INTEGER)"
    quarter_hours = f"list_transform(list_sort(quarters), lambda x: struct_pack(q := x, pageviews := {counted}))"
    answered_rows = (
        f"SELECT site_id, session_id, {rows}, session_key, pathnames, goal_mask, {later} AS first_later, "
        f"{quarter_hours} AS quarter_hours FROM (SELECT * EXCLUDE (first_event), first_event.* FROM ({grouped}))"
    )
    forms = ", ".join(f"{form} AS {name}" for name, form in _user_forms("g").items())
    # NULL for a session with events before 1970, whose quarter-hours ``quarter_hour`` does not number.
    return (
        f"SELECT g.* EXCLUDE (goal_mask, first_later, quarter_hours), {forms}, g.goal_mask, "
        "CASE WHEN g.first_seen >= TIMESTAMP '1970-01-01' THEN g.quarter_hours END AS quarter_hours, "
        f"CAST(NULL AS TIMESTAMP) AS prev_first_seen, g.first_later FROM ({answered_rows}) AS g"
    )


def _first_later_update(table: str, source: str) -> Query:
    """Give the sessions of ``table`` (``_grouped`` of the events of ``source``) flagged ``first_later`` their
    ``first_where_columns``, each aggregated from their events."""
    p = Params()
    firsts = first_where_columns(DUCKDB, p)
    aggregates = dict(session_aggregates(DUCKDB, p, firsts))
    names = [name for column in firsts for name in (column.column, column.at)]
    select = ", ".join(f"{aggregates[name]} AS {name}" for name in names)
    sets = ", ".join(f"{name} = l.{name}" for name in names)
    return p.query(
        f"UPDATE {table} SET {sets} FROM (SELECT site_id, session_id, {select} FROM {source} "
        f"WHERE (site_id, session_id) IN (SELECT site_id, session_id FROM {table} WHERE first_later) "
        f"GROUP BY site_id, session_id) AS l WHERE {table}.site_id = l.site_id AND {table}.session_id = l.session_id"
    )


def _earlier(value: str, at: str) -> list[str]:
    """SET items keeping the value whose time is earlier (the stored one on a tie; NULL time means no value)."""
    take = f"(b.{at} < sessions.{at} OR sessions.{at} IS NULL)"
    return [
        f"{value} = CASE WHEN {take} THEN b.{value} ELSE sessions.{value} END",
        f"{at} = CASE WHEN {take} THEN b.{at} ELSE sessions.{at} END",
    ]


def _later(value: str, at: str, *derived: str) -> list[str]:
    """SET items keeping the value whose time is later, and with it the columns ``derived`` from it."""
    take = f"(b.{at} > sessions.{at} OR sessions.{at} IS NULL)"
    return [f"{name} = CASE WHEN {take} THEN b.{name} ELSE sessions.{name} END" for name in (value, *derived, at)]


def _merged_quarters(stored: str, batch: str) -> str:
    """SQL: the ``quarter_hours`` of two partial rows of a session, each quarter-hour once with the pageviews of
    both; unknown (NULL) when either is."""
    summed = (
        f"list_transform({stored}, lambda x: struct_pack(q := x.q, pageviews := x.pageviews + coalesce(list_sum("
        f"list_transform(list_filter({batch}, lambda y: y.q = x.q), lambda y: y.pageviews)), 0)))"
    )
    new = f"list_filter({batch}, lambda y: NOT list_contains(list_transform({stored}, lambda x: x.q), y.q))"
    return f"CASE WHEN {stored} IS NULL OR {batch} IS NULL THEN NULL ELSE list_sort(list_concat({summed}, {new})) END"


def build_sessions_upsert(source: str, registry: Registry | None = None) -> list[Query]:
    """Statements folding the events of the relation ``source`` into ``sessions`` (DuckDB), run in one transaction.

    A session's ``goal_mask`` gains the bits of the goals of ``registry`` (``store/goal_bits.py``) its events complete.

    The batch's sessions are grouped once (``session_batch``); a join on ``session_key`` alone finds the candidate
    rows among those with ``first_seen`` from the batch's time bound on (``sitelens_fold_since``, NULL to search
    every row; see the module docstring), their ids are read by ``rowid`` and compared, and that gives the ``rowid``
    of the sessions already stored (``session_match``); only those rows are updated, and the others inserted. (A
    ``MERGE`` reads every column it may update from every stored row, and a join on the id reads every stored id: at
    2.6M sessions the three steps take about 45 ms for 5,000 sessions, the join on the id 84 ms, and the gap grows
    with the table.) A session whose events the batch finds too old for its id leaves the fold without a bound, so
    it searches every row, and is listed in ``sessions_unbounded`` for the folds after it.
    """
    p = Params()
    updates = [
        "first_seen = least(sessions.first_seen, b.first_seen)",
        "last_seen = greatest(sessions.last_seen, b.last_seen)",
        "pageviews = sessions.pageviews + b.pageviews",
        "events = sessions.events + b.events",
        *_later("user_value", "user_key", "user_number", "user_text"),
        "users = list_distinct(list_concat(sessions.users, b.users))",
        "users_count = len(list_distinct(list_concat(sessions.users, b.users)))",
        "pathnames = list_distinct(list_concat(sessions.pathnames, b.pathnames))",
        "goal_mask = sessions.goal_mask | b.goal_mask",
        f"quarter_hours = {_merged_quarters('sessions.quarter_hours', 'b.quarter_hours')}",
        *_earlier("entry_page", "entry_at"),
        *_later("exit_page", "exit_at"),
        *_earlier("channel", "channel_key"),
    ]
    for name in FIRST_SET_PARAMETERS:
        updates.extend(_earlier(name, f"{name}_at"))
    same = "m.site_id = b.site_id AND m.session_id = b.session_id"
    listed = "SELECT 1 FROM sessions_unbounded AS u WHERE u.site_id = b.site_id AND u.session_id = b.session_id"
    slack = {"slack": OPENED_SLACK}
    return [
        p.query(f"CREATE OR REPLACE TEMP TABLE session_batch AS {_grouped(source, p, registry)}"),
        _first_later_update("session_batch", source),
        Query(
            "SET VARIABLE sitelens_fold_since = (SELECT CASE WHEN bool_or(opened IS NULL OR listed OR first_seen < "
            f"opened - $slack) THEN NULL ELSE min(opened) - $slack END FROM (SELECT b.first_seen, "
            f"{session_opened('b.session_id')} AS opened, EXISTS ({listed}) AS listed FROM session_batch AS b) AS o)",
            slack,
        ),
        # Only a fold without a bound can hold a session found too early (the condition is constant otherwise).
        Query(
            "INSERT INTO sessions_unbounded SELECT b.site_id, b.session_id FROM session_batch AS b "
            f"WHERE getvariable('sitelens_fold_since') IS NULL AND {_too_early('b')} AND NOT EXISTS ({listed})",
            slack,
        ),
        # Candidates by the narrow key, then the ids of just those rows (fetched by rowid), then the true matches.
        Query(
            "CREATE OR REPLACE TEMP TABLE session_candidates AS SELECT s.rowid AS rid, b.site_id, b.session_id "
            "FROM sessions AS s JOIN session_batch AS b ON s.session_key = b.session_key AND s.site_id = b.site_id "
            "WHERE s.first_seen >= coalesce(getvariable('sitelens_fold_since'), TIMESTAMP '-infinity')"
        ),
        Query(
            "CREATE OR REPLACE TEMP TABLE session_candidate_ids AS SELECT rowid AS rid, session_id FROM sessions "
            "WHERE rowid IN (SELECT rid FROM session_candidates)"
        ),
        Query(
            "CREATE OR REPLACE TEMP TABLE session_match AS SELECT c.rid, c.site_id, c.session_id "
            "FROM session_candidates AS c JOIN session_candidate_ids AS i "
            "ON i.rid = c.rid AND i.session_id = c.session_id"
        ),
        # Before the stored rows change: the chains the batch adds sessions to or moves them in (``_moved``).
        Query(f"CREATE OR REPLACE TEMP TABLE session_moved AS {_moved(same)}"),
        Query(
            "UPDATE sessions SET\n  " + ",\n  ".join(updates) + "\n"
            f"FROM session_match AS m JOIN session_batch AS b ON {same} WHERE sessions.rowid = m.rid"
        ),
        # ``session_batch`` has the table's columns in its order, so a new session is inserted as it is.
        Query(
            "INSERT INTO sessions SELECT * EXCLUDE (first_later) FROM session_batch AS b "
            f"WHERE NOT EXISTS (SELECT 1 FROM session_match AS m WHERE {same})"
        ),
        *_unchained(),
    ]


# What ``prev_first_seen`` adds to a user's first session's own start.
FIRST_OF_USER = "INTERVAL 1 MICROSECOND"
# A stored session the batch moves in its chain: it starts earlier, or its user changes (``_later``'s test).
_MOVES = "b.first_seen < s.first_seen OR (b.user_key > s.user_key AND b.user_value <> s.user_value)"


def _moved(same: str) -> str:
    """SQL: ``(site_id, user_number, user_text, since)`` of the chains whose sessions from ``since`` on may have
    another previous session after the fold: a new session's chain from its start, and a moved stored session's old
    and new chains from the earlier of its two starts (its old successor loses it, its new one gains it)."""
    moved = (
        "FROM session_match AS m JOIN sessions AS s ON s.rowid = m.rid "
        f"JOIN session_batch AS b ON {same} WHERE ({_MOVES})"
    )
    since = "least(s.first_seen, b.first_seen)"
    return (
        f"SELECT s.site_id, s.user_number, s.user_text, {since} AS since {moved} UNION ALL "
        f"SELECT b.site_id, b.user_number, b.user_text, {since} {moved} AND b.user_key > s.user_key UNION ALL "
        "SELECT b.site_id, b.user_number, b.user_text, b.first_seen FROM session_batch AS b "
        f"WHERE NOT EXISTS (SELECT 1 FROM session_match AS m WHERE {same})"
    )


def _same_chain(a: str, b: str) -> str:
    """SQL: the rows ``a`` and ``b`` belong to one chain (site and user; a user is a number or a text, the other
    NULL)."""
    return (
        f"{a}.site_id = {b}.site_id AND {a}.user_number IS NOT DISTINCT FROM {b}.user_number "
        f"AND {a}.user_text IS NOT DISTINCT FROM {b}.user_text"
    )


def _unchained() -> list[Query]:
    """Statements making unknown the previous session of every session a fold may have moved or given a new
    neighbour: those of the chains in ``session_moved`` starting no earlier than the chain's ``since``.

    A new session is nearly always the latest of its chain, so this finds none; its time bound (the earliest
    ``since``) keeps it to the blocks of recent sessions.
    """
    return [
        Query("SET VARIABLE sitelens_chain_since = (SELECT min(since) FROM session_moved)"),
        Query(
            "UPDATE sessions SET prev_first_seen = NULL WHERE prev_first_seen IS NOT NULL "
            "AND first_seen >= coalesce(getvariable('sitelens_chain_since'), TIMESTAMP 'infinity') "
            f"AND EXISTS (SELECT 1 FROM session_moved AS mv WHERE {_same_chain('mv', 'sessions')} "
            "AND sessions.first_seen >= mv.since)"
        ),
    ]


def build_chain_pass() -> list[Query]:
    """Statements giving every session whose ``prev_first_seen`` is unknown its value (one transaction).

    The chains holding an unknown session are read whole, their sessions ordered and the unknown ones updated. The
    chains are found by their users alone, each form on its own (a number, or a string where the number is NULL),
    from a list of them: that scan of the users of every stored session is the one cost growing with the table
    (0.4-0.8 s at 26M sessions; matching site and both forms at once, with the users as a subquery, 0.7-1.8 s).
    A user of another site shares a value: its chain is ordered too, on its own, and left as it is.
    """
    parts = []
    for form, other in (("user_number", "user_text"), ("user_text", "user_number")):
        only = f"s.{other} IS NULL AND " if form == "user_text" else ""
        listed = f"SELECT unnest((SELECT list({form}) FROM chain_users WHERE {form} IS NOT NULL))"
        parts.append(
            "SELECT s.rowid AS rid, s.prev_first_seen IS NULL AS unknown, coalesce(lag(s.first_seen) "
            f"OVER (PARTITION BY s.site_id, s.{form} ORDER BY s.first_seen, s.session_id), "
            f"s.first_seen + {FIRST_OF_USER}) AS prev FROM sessions AS s WHERE {only}s.{form} IN ({listed})"
        )
    return [
        Query(
            "CREATE OR REPLACE TEMP TABLE chain_users AS "
            "SELECT DISTINCT user_number, user_text FROM sessions WHERE prev_first_seen IS NULL"
        ),
        Query(
            f"CREATE OR REPLACE TEMP TABLE chain_prev AS SELECT rid, prev FROM ({' UNION ALL '.join(parts)}) AS c "
            "WHERE unknown"
        ),
        Query("UPDATE sessions SET prev_first_seen = c.prev FROM chain_prev AS c WHERE sessions.rowid = c.rid"),
    ]


# Columns added after the table first shipped, in the table's order: a table from an earlier version may lack them
# (``build_sessions_upgrade`` adds them).
ADDED_COLUMNS = (
    "session_key", "pathnames", "user_number", "user_text", "users_count", "goal_mask", "quarter_hours",
    "prev_first_seen",
)  # fmt: skip


def build_sessions_upgrade(present: set[str], bounds: Sequence[datetime]) -> list[Query]:
    """Statements giving a ``sessions`` table that has the columns ``present`` the ones it lacks (one transaction).

    When it lacks only the last columns and those are computed from its own (``_DERIVED_COLUMNS``) or start unknown
    (``quarter_hours``), they are added (at the end, so the table keeps its order) and filled in place, by one
    ``UPDATE`` that writes just them: 13 s for the 25.9M sessions of 100M events, where the copy below took 79 s and
    left the old table's 3.8 GB free in the file.

    Otherwise the table is copied with the columns added rather than altered: DuckDB cannot make an added column
    NOT NULL while the update that filled it is outstanding. It is copied one slice of sessions at a time, cut at the
    ``first_seen`` times ``bounds`` (ascending), so the paths of only one slice are grouped at once: grouping them
    for 26M sessions (100M events) ran out of the 1 GB memory limit. A slice's events lie between its first
    ``first_seen`` and its last ``last_seen``, the range read for its paths. They come from every stored event,
    pending ones included: their later fold adds paths already listed, which ``list_distinct`` keeps once.
    """
    missing = [name for name in ADDED_COLUMNS if name not in present]
    last = ADDED_COLUMNS[len(ADDED_COLUMNS) - len(missing) :]
    if missing and set(missing) <= set(_IN_PLACE_COLUMNS) and tuple(missing) == last:
        forms = _added_forms("sessions")
        added = [Query(f"ALTER TABLE sessions ADD COLUMN {name} {_IN_PLACE_COLUMNS[name]}") for name in missing]
        fill = ", ".join(f"{name} = {forms[name]}" for name in missing if name in _DERIVED_COLUMNS)
        return [*added, Query(f"UPDATE sessions SET {fill}")] if fill else added
    columns = [f"sessions.{name}" for name in _column_names() if name not in ADDED_COLUMNS]
    fills = {"session_key": SESSION_KEY, "pathnames": "coalesce(stored.pathnames, CAST([] AS VARCHAR[]))"}
    fills |= _added_forms("sessions")
    columns += [f"sessions.{name}" if name in present else f"{fills[name]} AS {name}" for name in ADDED_COLUMNS]
    statements = [Query(f"CREATE TABLE sessions_upgraded {_COLUMNS}")]
    edges: list[datetime | None] = [None, *bounds, None]
    for lo, hi in zip(edges, edges[1:], strict=False):
        p = Params()
        conditions = []
        if lo:
            conditions.append(f"sessions.first_seen >= {p.add(lo)}")
        if hi:
            conditions.append(f"sessions.first_seen < {p.add(hi)}")
        slice_ = " AND ".join(conditions) or "true"
        join = ""
        if "pathnames" not in present:
            since = f" AND timestamp >= {p.add(lo)}" if lo else ""
            until = f"(SELECT max(last_seen) FROM sessions WHERE {slice_})"
            join = (
                " LEFT JOIN (SELECT site_id, session_id, list(DISTINCT pathname) AS pathnames FROM events "
                f"WHERE type = 'pageview'{since} AND timestamp <= {until} GROUP BY site_id, session_id) AS stored "
                "USING (site_id, session_id)"
            )
        statements.append(
            p.query(f"INSERT INTO sessions_upgraded SELECT {', '.join(columns)} FROM sessions{join} WHERE {slice_}")
        )
    statements += [Query("DROP TABLE sessions"), Query("ALTER TABLE sessions_upgraded RENAME TO sessions")]
    return statements


def _column_names() -> list[str]:
    return ["site_id", "session_id", *(name for name, _ in session_aggregates(DUCKDB, Params())), *ADDED_COLUMNS]


def build_sessions_fill() -> list[Query]:
    """Build ``sessions`` from every stored event (an empty table: a database from before the table existed)."""
    p = Params()
    return [
        p.query(f"CREATE OR REPLACE TEMP TABLE session_batch AS {_grouped('events', p)}"),
        _first_later_update("session_batch", "events"),
        Query("INSERT INTO sessions SELECT * EXCLUDE (first_later) FROM session_batch"),
        Query("DROP TABLE session_batch"),
    ]
