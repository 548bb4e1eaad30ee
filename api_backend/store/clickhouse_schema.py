"""The ClickHouse schema of the event store: column types, table DDL (single node or cluster) and its migrations.

Choices, each because of how sitelens reads:

- ``PARTITION BY toYYYYMM(timestamp)``: a month is a unit an operator can drop or move; every query has a time
  window, so whole months are skipped without reading their indexes.
- ``ORDER BY (site_id, toDate(timestamp), session_id, timestamp)``: every query is one site and a range of days, so
  the primary index narrows reads to that site's days (reads write the days' bounds beside the times', which the
  engine does not turn into days itself: ``Dialect.time_bound``); within a day a session's rows lie together, which
  makes the per-session aggregates (bounces, durations, entry and exit pages) read contiguous data and compresses
  ``session_id`` and ``user_id`` to almost nothing. A session that crosses midnight is split in two runs, which
  costs nothing in correctness.
- ``DateTime64(3, 'UTC')``, since schema version 5 with ``T64`` + ``LZ4`` (before it ``Delta`` + ``ZSTD``): every
  read with a window reads the times of all its rows, and on chdb the 100M times of the bench file read in about a
  third of the time at about the same size (``bench/analysis.md``).
- ``LowCardinality(String)`` for the columns with a bounded set of values (browsers, countries, channels, paths of
  one site...): dictionary-encoded, so they are small and group fast. Free text (referrer, query string, ids) stays
  ``String``; the JSON columns get ``ZSTD(3)`` because they repeat the same keys on every row.
- Strings are never NULL ('' means unknown), as in DuckDB; only the five web-vitals columns are ``Nullable``.
- ``log_seq`` is the event-log record an inserted row came from (see ``store/clickhouse.py``).
- ``sessions`` (schema version 2) holds the per-session facts of ``store/sessions.py`` the way ClickHouse users keep
  such a table: an ``AggregatingMergeTree`` ordered by ``(site_id, session_id)`` that a materialized view on
  ``events`` feeds with each inserted block's partial states; merges (and a read's ``GROUP BY`` with the ``-Merge``
  functions) combine the parts of one session. ``max_log_seq`` tells recovery which sessions hold rows it deletes.
  Schema version 4 adds ``pathnames``, each session's distinct pageview paths, so the metric by pathname reads the
  table as DuckDB's does; the other columns DuckDB keeps (goal bits, a numeric key) stay DuckDB's. Schema version 7
  keeps each value a session takes from one of its events (its user, entry and exit pages, channel, first non-empty
  values) as a ``(key, value)`` tuple merged by ``min`` or ``max`` instead of an ``argMin`` / ``argMax`` state: a read
  takes the tuples as they are, where it had to finish each state (``_pick_pairs``).
- ``error_events`` (schema version 3) holds a copy of the ``type = 'error'`` rows, written by a materialized view on
  ``events`` with each insert: the same columns, partitioning and order. Errors are about 1% of the events and lie
  in every granule of ``events``, so the error routes read them from here (at 100M events the error series reads
  1.4M rows instead of the window's timestamps, ``bench/analysis.md``). Rows keep their ``log_seq``, so recovery
  and deletes treat both tables alike.
- ``sealed_sessions`` (schema version 8) holds the finished row of each session that stopped more than the
  session timeout ago, written once by a seal (``ClickHouseEventStore.seal_sessions``): plain columns, the picked
  values as ``LowCardinality`` where the events keep them so, the user also as a number or a string, ordered by
  ``(site_id, first_seen)`` with a min-max index on ``last_seen``. Reads take sessions from it without merging any
  row, and only the few sessions still open (with an event after the seal's log position, or active after its
  cutoff) from ``sessions``, found by the min-max indexes version 8 adds there (``query.facts.sessions_relation``).
  Each full seal writes a new ``generation`` (a partition of its own, dropped once a later one is complete);
  ``session_seals`` records each seal.
- ``goal_events`` (schema version 6) holds, the same way, a copy of the rows of the types the goals other than path
  goals match (``GOAL_EVENT_TYPES``: custom events, clicks, copies, form submits, outbound links; about a fifth of
  the events), ordered by ``(site_id, toDate(timestamp), type, event_name, session_id, timestamp)``: a goal's
  matching events of a day lie together, so a goal reads a few granules per day where ``events`` has them in every
  granule (at 100M events the sessions with a ``signup`` event 1.9 -> 0.16 s, ``bench/analysis.md``).
- Schema version 9 keeps goal bits in the sealed rows (``goal_mask``): a seal sets in each session's row the bits of
  its site's goals its events complete, so the goals list counts whole sessions per mask without reading an event.
  ``goal_definitions`` holds what each site asked for (the definitions of its goals, each with its bit, newest
  ``asked`` first); ``sealed_goal_bits`` the definitions each generation's masks were written with
  (``ClickHouseEventStore.store_goal_bits``).
- Schema version 10 keeps the sealed rows' lists of paths as ``LowCardinality`` strings, which the breakdowns by
  pathname group by their dictionary numbers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pyarrow as pa

from api_backend.query.dialect import CLICKHOUSE
from api_backend.query.facts import FIRST_SET_PARAMETERS, pathnames
from api_backend.query.filters import EFFECTIVE_USER, channel_key, row_expression, user_key
from api_backend.query.goals import GOAL_EVENT_TYPES
from api_backend.query.sql import Params
from api_backend.query.user_rows import USER_FORMS
from api_backend.store.events import EVENT_COLUMNS

__all__ = [
    "MIGRATIONS",
    "SCHEMA_TABLE",
    "cluster_schema_sql",
    "cluster_upgrade_sql",
    "column_type",
    "error_rows_sql",
    "events_columns_sql",
    "goal_bits_sql",
    "goal_rows_sql",
    "pairs_sql",
    "pathnames_sql",
    "sealed_rows_sql",
    "sealed_sql",
    "sealed_users_sql",
    "session_states_sql",
    "sessions_fill_sql",
    "sessions_final_sql",
    "single_node_sql",
    "timestamp_codec_sql",
    "users_build_sql",
]

SCHEMA_TABLE = "sitelens_schema"

LOW_CARDINALITY = frozenset(
    {
        "hostname", "pathname", "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "page_title",
        "channel", "browser", "browser_version", "operating_system", "operating_system_version", "language",
        "country", "region", "city", "device_type", "type", "event_name",
    }
)  # fmt: skip

PARTITION_BY = "toYYYYMM(timestamp)"
ORDER_BY = "(site_id, toDate(timestamp), session_id, timestamp)"
GOAL_ROWS_ORDER_BY = "(site_id, toDate(timestamp), type, event_name, session_id, timestamp)"
# Parts are synced before an insert returns: the log position written after it must never outlive the rows.
TABLE_SETTINGS = "fsync_after_insert = 1, fsync_part_directory = 1"


def column_type(name: str, typ: pa.DataType) -> str:
    """The ClickHouse type (with codec) of one ``EVENT_COLUMNS`` column, as schema version 1 creates it."""
    if name == "timestamp":
        return "DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1))"
    if typ == pa.int32():
        return "Int32"
    if typ == pa.float64():
        return "Nullable(Float64)"
    if name in ("props", "url_parameters"):
        return "String CODEC(ZSTD(3))"
    return "LowCardinality(String)" if name in LOW_CARDINALITY else "String"


def events_columns_sql() -> str:
    """The column list of the ``events`` table, ``log_seq`` last."""
    columns = [f"`{name}` {column_type(name, typ)}" for name, typ in EVENT_COLUMNS]
    columns.append("`log_seq` UInt64 DEFAULT 0")
    return ",\n    ".join(columns)


def _events_table(name: str, engine: str, on_cluster: str = "", order_by: str = ORDER_BY) -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {name}{on_cluster} (\n    {events_columns_sql()}\n)\n"
        f"ENGINE = {engine}\nPARTITION BY {PARTITION_BY}\nORDER BY {order_by}\nSETTINGS {TABLE_SETTINGS}"
    )


def _position_table(name: str, engine: str, on_cluster: str = "") -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {name}{on_cluster} (id UInt8, applied_seq UInt64)\n"
        f"ENGINE = {engine}\nORDER BY id\nSETTINGS {TABLE_SETTINGS}"
    )


_TIME = "DateTime64(3, 'UTC')"
_PAGEVIEW = "type = 'pageview'"
# The times a pair taken by ``min`` (``max``) holds where a block has no row for it: later (earlier) than any event's,
# so it loses every merge with a block that has one, and its value is '' as DuckDB's is for no row.
_NO_ROW_KEY = {
    "min": "toDateTime64('2299-12-31 23:59:59.999', 3, 'UTC')",
    "max": "toDateTime64('1900-01-01 00:00:00', 3, 'UTC')",
}
# The sessions schema versions: 2 creates the table, 4 adds ``pathnames``, 7 keeps each picked value as a pair.
SESSIONS_VERSION = 7


def _literal(value: object) -> str:
    """A ClickHouse string literal (DDL cannot take bound parameters)."""
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def _inline(sql: str, p: Params) -> str:
    return re.sub(r"\$(p\d+)\b", lambda m: _literal(p.values[m.group(1)]), sql)


def _picks() -> list[tuple[str, str, str, str, str, str | None]]:
    """``(column, min or max, key type, key, value, condition or None)`` of each value a session takes from one of its
    events: the value of the event with the least (greatest) key among those where the condition holds. They are the
    ClickHouse spelling of the ``arg_min`` / ``arg_max`` aggregates of ``query.facts.session_aggregates``."""
    d = CLICKHOUSE
    picks: list[tuple[str, str, str, str, str, str | None]] = [
        ("user_value", "max", "Int64", user_key(d), f"toString({EFFECTIVE_USER})", None),
        ("entry_page", "min", _TIME, "timestamp", "toString(pathname)", _PAGEVIEW),
        ("exit_page", "max", _TIME, "timestamp", "toString(pathname)", _PAGEVIEW),
        ("channel", "min", "Int64", channel_key(d), "toString(channel)", None),
    ]
    for name in FIRST_SET_PARAMETERS:
        p = Params()
        expr = _inline(row_expression(name, d, p), p)
        picks.append((name, "min", _TIME, "timestamp", f"toString({expr})", f"{expr} != ''"))
    return picks


def _pick_states() -> list[tuple[str, str, str, str]]:
    """The picked values as schema versions 2 to 6 keep them: ``argMin`` / ``argMax`` states, finished by their
    ``-Merge`` functions."""
    states = []
    for name, pick, key_type, key, value, condition in _picks():
        function = "argMin" if pick == "min" else "argMax"
        state = f"{function}State{'If' if condition else ''}({value}, {key}{', ' + condition if condition else ''})"
        states.append((name, f"AggregateFunction({function}, String, {key_type})", state, f"{function}Merge({name})"))
    return states


def _pick_pairs() -> list[tuple[str, str, str, str]]:
    """The picked values as schema version 7 keeps them: a ``(key, value)`` tuple merged by ``min`` or ``max``.

    A tuple compares by its key first, so merging two partial rows keeps the pair of the least (greatest) key, as
    merging the states did. The tuple columns are read as they are: finishing the states took most of the time a read
    of the merged table spends on the sessions' users (``bench/analysis.md``).
    """
    pairs = []
    for name, pick, key_type, key, value, condition in _picks():
        key = f"toInt64({key})" if key_type == "Int64" else key
        arg = "argMin" if pick == "min" else "argMax"
        # A block's pair is built once per session from the plain aggregates, not compared row by row as a tuple:
        # ``min`` over tuples made each insert a fifth slower.
        if condition:
            state = (
                f"if(countIf({condition}) = 0, tuple({_NO_ROW_KEY[pick]}, ''), "
                f"tuple({pick}If({key}, {condition}), {arg}If({value}, {key}, {condition})))"
            )
        else:
            state = f"tuple({pick}({key}), {arg}({value}, {key}))"
        column_type = f"SimpleAggregateFunction({pick}, Tuple({key_type}, String))"
        pairs.append((name, column_type, state, f"tupleElement({pick}({name}), 2)"))
    return pairs


# The column schema version 4 adds: each session's distinct pageview paths, the lists DuckDB's table keeps
# (``facts.pathnames``), merged by union.
_PATHNAMES = (
    "pathnames",
    "SimpleAggregateFunction(groupUniqArrayArray, Array(String))",
    pathnames(CLICKHOUSE),
    "groupUniqArrayArray(pathnames)",
)


def _session_columns(version: int = SESSIONS_VERSION) -> list[tuple[str, str, str, str]]:
    """``(column, type, state over a block of events, finalising aggregate)`` of every ``sessions`` column of the
    schema ``version``, in the table's order: 2, the table as created; 4, with ``pathnames`` last, where ``ADD
    COLUMN`` puts it; 7, with the picked values dropped and added again as pairs, after it."""
    columns = [
        ("first_seen", f"SimpleAggregateFunction(min, {_TIME})", "min(timestamp)", "min(first_seen)"),
        ("last_seen", f"SimpleAggregateFunction(max, {_TIME})", "max(timestamp)", "max(last_seen)"),
        ("pageviews", "SimpleAggregateFunction(sum, UInt64)", f"countIf({_PAGEVIEW})", "sum(pageviews)"),
        ("events", "SimpleAggregateFunction(sum, UInt64)", "count()", "sum(events)"),
        ("max_log_seq", "SimpleAggregateFunction(max, UInt64)", "max(log_seq)", "max(max_log_seq)"),
    ]
    users = (
        "users",
        "SimpleAggregateFunction(groupUniqArrayArray, Array(String))",
        f"groupUniqArray(toString({EFFECTIVE_USER}))",
        "groupUniqArrayArray(users)",
    )
    if version >= 7:
        return [*columns, users, _PATHNAMES, *_pick_pairs()]
    states = _pick_states()
    columns = [*columns, states[0], users, *states[1:]]
    return [*columns, _PATHNAMES] if version >= 4 else columns


def session_states_sql(
    source: str = "events", where: str = "", settings: str = "", version: int = SESSIONS_VERSION
) -> str:
    """``SELECT`` of the ``sessions`` columns' partial states over the rows of ``source`` (the view's query), in the
    table's column order, for the schema ``version``.

    ``settings`` (``name = value, ...``) join its one ``SETTINGS`` clause.
    """
    states = ",\n    ".join(f"{state} AS {name}" for name, _, state, _ in _session_columns(version))
    tail = f" WHERE {where}" if where else ""
    # The states are named after event columns they read: the column, not the alias, is meant inside them.
    return (
        f"SELECT site_id, session_id,\n    {states}\nFROM {source}{tail}\nGROUP BY site_id, session_id\n"
        f"SETTINGS prefer_column_name_to_alias = 1{', ' + settings if settings else ''}"
    )


def sessions_fill_sql(
    target: str, source: str, where: str = "", settings: str = "", version: int = SESSIONS_VERSION
) -> str:
    """``INSERT`` into the ``sessions`` table ``target`` (of the schema ``version``) of the states over the rows of
    ``source`` (``WHERE where``), naming the columns it writes, so the table's order of them does not matter."""
    names = ", ".join(f"`{name}`" for name, *_ in _session_columns(version))
    states = session_states_sql(source, where, settings, version)
    return f"INSERT INTO {target} (`site_id`, `session_id`, {names}) {states}"


def sessions_final_sql(where: str = "", version: int = SESSIONS_VERSION) -> str:
    """One finished row per session (``GROUP BY`` merging the parts not merged yet), as DuckDB's table reads, from a
    table of the schema ``version``."""
    finals = ",\n    ".join(f"{final} AS {name}" for name, _, _, final in _session_columns(version))
    tail = f" WHERE {where}" if where else ""
    # The aggregates in their own form, not their -OrNull one: a pair of no row holds ''.
    return (
        f"SELECT site_id, session_id,\n    {finals}\nFROM sessions{tail}\nGROUP BY site_id, session_id\n"
        "SETTINGS aggregate_functions_null_for_empty = 0"
    )


def _sessions_table(name: str, engine: str, on_cluster: str = "") -> str:
    """The table as schema version 2 creates it (versions 4 and 7 change its columns)."""
    columns = ",\n    ".join(f"`{col}` {typ}" for col, typ, _, _ in _session_columns(2))
    return (
        f"CREATE TABLE IF NOT EXISTS {name}{on_cluster} (\n    `site_id` Int32,\n    `session_id` String,"
        f"\n    {columns}\n)\nENGINE = {engine}\nORDER BY (site_id, session_id)\nSETTINGS {TABLE_SETTINGS}"
    )


def _sessions_view(name: str, target: str, source: str, on_cluster: str = "", version: int = SESSIONS_VERSION) -> str:
    states = session_states_sql(source, version=version)
    return f"CREATE MATERIALIZED VIEW IF NOT EXISTS {name}{on_cluster} TO {target} AS\n{states}"


def sessions_sql(database: str | None = None) -> list[str]:
    """Schema version 2: the ``sessions`` table and its view, filled once from the events already stored.

    The fill starts from an empty table, so a migration interrupted after it and run again does not count twice.
    """
    prefix = f"`{database}`." if database else ""
    return [
        _sessions_table(f"{prefix}sessions", "AggregatingMergeTree"),
        _sessions_view(f"{prefix}sessions_mv", f"{prefix}sessions", f"{prefix}events", version=2),
        f"TRUNCATE TABLE {prefix}sessions",
        f"INSERT INTO {prefix}sessions {session_states_sql(f'{prefix}events', version=2)}",
    ]


def _add_pathnames(table: str, on_cluster: str = "") -> str:
    name, typ, _, _ = _PATHNAMES
    return f"ALTER TABLE {table}{on_cluster} ADD COLUMN IF NOT EXISTS `{name}` {typ}"


def pathnames_sql(database: str | None = None) -> list[str]:
    """Schema version 4: ``sessions`` gains ``pathnames``, its view writes them, and the table is filled again.

    The view is replaced (a view's query is fixed when it is created) and the table refilled from every event, as
    version 2 filled it: its rows written before hold no paths. Run again after an interruption, each statement
    finds or rebuilds what it makes.
    """
    prefix = f"`{database}`." if database else ""
    return [
        _add_pathnames(f"{prefix}sessions"),
        f"DROP VIEW IF EXISTS {prefix}sessions_mv",
        _sessions_view(f"{prefix}sessions_mv", f"{prefix}sessions", f"{prefix}events", version=4),
        f"TRUNCATE TABLE {prefix}sessions",
        f"INSERT INTO {prefix}sessions {session_states_sql(f'{prefix}events', version=4)}",
    ]


def _drop_picks(table: str, on_cluster: str = "") -> str:
    drops = ", ".join(f"DROP COLUMN IF EXISTS `{name}`" for name, *_ in _pick_pairs())
    return f"ALTER TABLE {table}{on_cluster} {drops}"


def _add_picks(table: str, on_cluster: str = "") -> str:
    adds = ", ".join(f"ADD COLUMN IF NOT EXISTS `{name}` {typ}" for name, typ, _, _ in _pick_pairs())
    return f"ALTER TABLE {table}{on_cluster} {adds}"


def pairs_sql(database: str | None = None) -> list[str]:
    """Schema version 7: ``sessions`` keeps each picked value (user, entry and exit pages, channel, first non-empty
    values) as a ``(key, value)`` pair instead of an aggregate state (``_pick_pairs``).

    A column cannot change from a state to a pair, so each is dropped and added again under its name; the view is
    replaced and the table filled again from every event, as version 4 did. Run again after an interruption, each
    statement finds or rebuilds what it makes (a pair column dropped again is filled again).
    """
    prefix = f"`{database}`." if database else ""
    return [
        f"DROP VIEW IF EXISTS {prefix}sessions_mv",
        _drop_picks(f"{prefix}sessions"),
        _add_picks(f"{prefix}sessions"),
        _sessions_view(f"{prefix}sessions_mv", f"{prefix}sessions", f"{prefix}events", version=7),
        f"TRUNCATE TABLE {prefix}sessions",
        sessions_fill_sql(f"{prefix}sessions", f"{prefix}events", version=7),
    ]


# Every column of ``events`` by name (not ``*``: a view's column list is fixed when it is created).
_ROW_COLUMNS = ", ".join(f"`{column}`" for column, _ in EVENT_COLUMNS) + ", `log_seq`"


_ERROR_ROWS = "type = 'error'"
_GOAL_ROWS = f"type IN ({', '.join(_literal(t) for t in GOAL_EVENT_TYPES)})"


def _copy_view(name: str, target: str, source: str, rows: str, on_cluster: str = "") -> str:
    """The view copying the ``rows`` (a condition) of each insert into ``source`` to ``target``."""
    return (
        f"CREATE MATERIALIZED VIEW IF NOT EXISTS {name}{on_cluster} TO {target} AS\n"
        f"SELECT {_ROW_COLUMNS} FROM {source} WHERE {rows}"
    )


def _copy_fill(target: str, source: str, rows: str, settings: str = "") -> str:
    """The ``INSERT`` copying the ``rows`` of ``source`` stored so far to ``target``."""
    tail = f"\nSETTINGS {settings}" if settings else ""
    return f"INSERT INTO {target} ({_ROW_COLUMNS}) SELECT {_ROW_COLUMNS} FROM {source} WHERE {rows}{tail}"


def error_rows_sql(database: str | None = None) -> list[str]:
    """Schema version 3: the ``error_events`` table and its view, filled once from the events already stored.

    As with ``sessions``, the fill starts from an empty table, so a migration run again does not copy twice.
    """
    prefix = f"`{database}`." if database else ""
    return [
        _events_table(f"{prefix}error_events", "MergeTree"),
        _copy_view(f"{prefix}error_events_mv", f"{prefix}error_events", f"{prefix}events", _ERROR_ROWS),
        f"TRUNCATE TABLE {prefix}error_events",
        _copy_fill(f"{prefix}error_events", f"{prefix}events", _ERROR_ROWS),
    ]


# The event times as schema version 5 stores them.
_TIMESTAMP = "`timestamp` DateTime64(3, 'UTC') CODEC(T64, LZ4)"


def _timestamp_codec(table: str, on_cluster: str = "") -> str:
    return f"ALTER TABLE {table}{on_cluster} MODIFY COLUMN {_TIMESTAMP}"


def timestamp_codec_sql(database: str | None = None) -> list[str]:
    """Schema version 5: ``events`` and ``error_events`` store their times with ``T64`` and ``LZ4``.

    Only the parts written from then on take the new encoding, as ClickHouse changes a column's codec without
    rewriting the stored parts: older rows take it when their parts merge, all at once with ``OPTIMIZE TABLE events
    FINAL``. Run again, the statements change nothing.
    """
    prefix = f"`{database}`." if database else ""
    return [_timestamp_codec(f"{prefix}events"), _timestamp_codec(f"{prefix}error_events")]


def goal_rows_sql(database: str | None = None) -> list[str]:
    """Schema version 6: the ``goal_events`` table and its view, filled once from the events already stored.

    As with ``error_events``, the fill starts from an empty table, so a migration run again does not copy twice.
    """
    prefix = f"`{database}`." if database else ""
    return [
        _events_table(f"{prefix}goal_events", "MergeTree", order_by=GOAL_ROWS_ORDER_BY),
        _timestamp_codec(f"{prefix}goal_events"),  # the times as version 5 stores them
        _copy_view(f"{prefix}goal_events_mv", f"{prefix}goal_events", f"{prefix}events", _GOAL_ROWS),
        f"TRUNCATE TABLE {prefix}goal_events",
        _copy_fill(f"{prefix}goal_events", f"{prefix}events", _GOAL_ROWS),
    ]


# The sealed sessions' picked values kept as ``LowCardinality`` (those whose event column is: the rest are free text).
_SEALED_TEXT = frozenset({"user_value", "referrer"})
_SEALED_TIME = f"{_TIME} CODEC(T64, LZ4)"


def _sealed_columns() -> list[tuple[str, str]]:
    """``(column, type)`` of ``sealed_sessions`` after ``generation``, ``seal``, ``site_id`` and ``session_id``."""
    picks = [name for name, *_ in _picks()]
    return [
        ("first_seen", _SEALED_TIME),
        ("last_seen", _SEALED_TIME),
        ("pageviews", "UInt64"),
        ("events", "UInt64"),
        ("max_log_seq", "UInt64"),
        ("users", "Array(String)"),
        ("users_count", "UInt32"),
        ("pathnames", "Array(String)"),
        ("user_number", "Nullable(UInt64)"),
        ("user_text", "Nullable(String)"),
        *((name, "String" if name in _SEALED_TEXT else "LowCardinality(String)") for name in picks),
    ]


def _sealed_table(name: str, engine: str, on_cluster: str = "") -> str:
    columns = ",\n    ".join(f"`{col}` {typ}" for col, typ in _sealed_columns())
    return (
        f"CREATE TABLE IF NOT EXISTS {name}{on_cluster} (\n    `generation` UInt32,\n    `seal` UInt64,\n"
        f"    `site_id` Int32,\n    `session_id` String,\n    {columns},\n"
        "    INDEX last_seen_bounds last_seen TYPE minmax GRANULARITY 1\n)\n"
        f"ENGINE = {engine}\nPARTITION BY generation\nORDER BY (site_id, first_seen)\nSETTINGS {TABLE_SETTINGS}"
    )


def _seals_table(name: str, engine: str, on_cluster: str = "") -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {name}{on_cluster} (seal UInt64, generation UInt32, log_seq UInt64, "
        f"cutoff {_TIME}, sealed_at {_TIME} DEFAULT now64(3))\nENGINE = {engine}\nORDER BY seal\n"
        f"SETTINGS {TABLE_SETTINGS}"
    )


# Min-max indexes on ``sessions`` by which a read finds the sessions a seal left open
# (``query.facts.sessions_relation``).
_OPEN_INDEXES = (("open_after_log", "max_log_seq"), ("open_after_cutoff", "last_seen"))


def _open_indexes(table: str, on_cluster: str = "") -> list[str]:
    adds = [
        f"ALTER TABLE {table}{on_cluster} ADD INDEX IF NOT EXISTS {name} {column} TYPE minmax GRANULARITY 1"
        for name, column in _OPEN_INDEXES
    ]
    # Built for the stored parts too (a mutation: until it ends, their granules are read, not skipped).
    return [*adds, *(f"ALTER TABLE {table}{on_cluster} MATERIALIZE INDEX {name}" for name, _ in _OPEN_INDEXES)]


def sealed_sql(database: str | None = None) -> list[str]:
    """Schema version 8: ``sealed_sessions``, ``session_seals`` and the indexes finding open sessions in ``sessions``.

    Nothing is filled here: the server's first seal writes every session that stopped long enough ago.
    """
    prefix = f"`{database}`." if database else ""
    return [
        _sealed_table(f"{prefix}sealed_sessions", "MergeTree"),
        _seals_table(f"{prefix}session_seals", "MergeTree"),
        *_open_indexes(f"{prefix}sessions"),
    ]


def _goal_definitions_table(name: str, engine: str, on_cluster: str = "") -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {name}{on_cluster} (site_id Int32, asked UInt64, bit UInt8, definition String)\n"
        f"ENGINE = {engine}\nORDER BY (site_id, asked, bit)\nSETTINGS {TABLE_SETTINGS}"
    )


def _sealed_goal_bits_table(name: str, engine: str, on_cluster: str = "") -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {name}{on_cluster} (generation UInt32, site_id Int32, bit UInt8, "
        f"definition String)\nENGINE = {engine}\nPARTITION BY generation\nORDER BY (site_id, bit)\n"
        f"SETTINGS {TABLE_SETTINGS}"
    )


_GOAL_MASK = "ADD COLUMN IF NOT EXISTS `goal_mask` UInt64 DEFAULT 0"


def goal_bits_sql(database: str | None = None) -> list[str]:
    """Schema version 9: ``goal_mask`` on ``sealed_sessions``, ``goal_definitions`` and ``sealed_goal_bits``.

    The rows sealed before hold no bits (0): a site's goals are written into them by the seal its first read asks for.
    """
    prefix = f"`{database}`." if database else ""
    return [
        f"ALTER TABLE {prefix}sealed_sessions {_GOAL_MASK}",
        _goal_definitions_table(f"{prefix}goal_definitions", "MergeTree"),
        _sealed_goal_bits_table(f"{prefix}sealed_goal_bits", "MergeTree"),
    ]


# The sealed rows' lists of paths hold each path as a number into a dictionary of the part's paths: a metric by
# pathname groups their elements by those numbers instead of by the strings (``bench/analysis.md``).
_SEALED_PATHS = "MODIFY COLUMN `pathnames` Array(LowCardinality(String))"


def sealed_paths_sql(database: str | None = None) -> list[str]:
    """Schema version 10: ``sealed_sessions.pathnames`` as lists of ``LowCardinality`` strings. The rows already
    sealed are converted by a mutation in the background; reads convert the parts it has not reached yet."""
    prefix = f"`{database}`." if database else ""
    return [f"ALTER TABLE {prefix}sealed_sessions {_SEALED_PATHS}"]


# One row per user of a generation's sealed sessions, with the first and last times of each of them (and the user's
# first and last of all): the users of a window are then the rows with a pair inside it, counted without grouping 18M
# users again on every read (the overview at 100M events, ``query/user_rows.py``). A *build* writes every user of the
# rows sealed up to a seal at once, in a partition named by that seal, so each user has one row in it; reads take the
# rows sealed since from ``sealed_sessions``.
#
# Rows per mark of ``sealed_users``: a read looks up a few hundred users spread over the whole key, each reading the
# rows of its mark. At 100M events, 425 users took 230-400 ms with the default 8192 rows a mark, 110-140 ms with 1024.
_USERS_GRANULE = 1024


def _sealed_users_table(name: str, engine: str, on_cluster: str = "") -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {name}{on_cluster} (\n    `seal` UInt64,\n    `generation` UInt32,\n"
        "    `site_id` Int32,\n    `user_form` UInt8,\n    `user_number` UInt64,\n    `user_text` String,\n"
        f"    `user_first` {_TIME},\n    `user_last` {_TIME},\n    `firsts` Array({_TIME}),\n"
        f"    `lasts` Array({_TIME})\n)\n"
        f"ENGINE = {engine}\nPARTITION BY seal\nORDER BY (site_id, user_form, user_number, user_text)\n"
        f"SETTINGS {TABLE_SETTINGS}, index_granularity = {_USERS_GRANULE}"
    )


def _user_builds_table(name: str, engine: str, on_cluster: str = "") -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {name}{on_cluster} (seal UInt64, generation UInt32, "
        f"built_at {_TIME} DEFAULT now64(3))\nENGINE = {engine}\nORDER BY seal\nSETTINGS {TABLE_SETTINGS}"
    )


def sealed_users_sql(database: str | None = None) -> list[str]:
    """Schema version 11: ``sealed_users`` and ``sealed_user_builds``, the record of each build written whole.

    Nothing is filled here: the server's next seal builds the current generation's users.
    """
    prefix = f"`{database}`." if database else ""
    return [
        _sealed_users_table(f"{prefix}sealed_users", "MergeTree"),
        _user_builds_table(f"{prefix}sealed_user_builds", "MergeTree"),
    ]


def users_build_sql(target: str, generation: int, seal: int, source: str = "sealed_sessions") -> str:
    """``INSERT`` into ``target`` (``sealed_users``) of the build of one row per user of the rows of ``generation``
    in ``source`` sealed up to ``seal``; a session with neither a number nor another string as its user has none."""
    return (
        f"INSERT INTO {target} (seal, generation, site_id, user_form, user_number, user_text, user_first, user_last, "
        "firsts, lasts)\n"
        f"SELECT {int(seal)}, {int(generation)}, sealed.site_id AS site_id, {USER_FORMS.format(t='sealed')},\n"
        "    min(sealed.first_seen) AS user_first, max(sealed.last_seen) AS user_last,\n"
        "    groupArray(sealed.first_seen) AS firsts, groupArray(sealed.last_seen) AS lasts\n"
        f"FROM {source} AS sealed\nWHERE sealed.generation = {int(generation)} AND sealed.seal <= {int(seal)} "
        "AND (isNotNull(sealed.user_number) OR isNotNull(sealed.user_text))\n"
        "GROUP BY site_id, user_form, user_number, user_text"
    )


def sealed_rows_sql(
    target: str,
    generation: int,
    seal: int,
    where: str,
    *,
    keys: str = "",
    source: str = "sessions",
    masks: str = "",
) -> str:
    """``INSERT`` into ``target`` (``sealed_sessions``) of the finished rows of the sessions of ``source`` where
    ``where`` holds (a condition on the finished row), for ``generation`` and ``seal``; with ``keys``, only of the
    sessions whose rows it selects (a condition on ``site_id`` and ``session_id``).

    ``masks`` is a ``SELECT session_key, mask`` of the sessions completing a goal (``goal_masks_sql``): their rows get
    that ``goal_mask``, the others 0. The rows are merged with ``FINAL``, which streams them in the table's order: a
    grouping held every session of the first seal at once (40 s for the 10M-event bench file's copy, 4.5 s so).
    """
    picked = {name for name, *_ in _picks()}
    values = {
        **{name: f"tupleElement(merged.{name}, 2)" for name in picked},
        "users_count": "length(merged.users)",
        "user_number": CLICKHOUSE.user_number("tupleElement(merged.user_value, 2)"),
        "user_text": CLICKHOUSE.user_text("tupleElement(merged.user_value, 2)"),
    }
    names = [name for name, _ in _sealed_columns()]
    selected = ",\n    ".join(f"{values.get(name, f'merged.{name}')} AS `{name}`" for name in names)
    columns = ", ".join(f"`{name}`" for name in names)
    rows = f"SELECT * FROM {source} FINAL{' WHERE ' + keys if keys else ''}"
    joined = (
        f" LEFT JOIN ({masks}) AS masks ON masks.session_key = {_SESSION_KEY.format('merged.session_id')}"
        if masks
        else ""
    )
    mask = "coalesce(masks.mask, 0)" if masks else "0"
    return (
        f"INSERT INTO {target} (`generation`, `seal`, `site_id`, `session_id`, {columns}, `goal_mask`)\n"
        f"SELECT {generation}, {seal}, merged.site_id, merged.session_id,\n    {selected},\n    {mask} AS `goal_mask`\n"
        f"FROM ({rows}) AS merged{joined}\nWHERE {where}"
    )


# The key a seal joins each session's goal bits to its row by: 128 bits of the session id, so the grouping and the
# join hold 16 bytes a session, not its id (at 100M events the seal 82 -> 61 s, its process's peak 5.5 -> 4.6 GB).
_SESSION_KEY = "sipHash128({})"


def goal_masks_sql(masks: Mapping[int, str], where: str, source: str = "events") -> str:
    """``SELECT session_key, mask``: each session of ``source`` (its rows where ``where`` holds) whose events complete
    a goal of its site, by its ``_SESSION_KEY``, with the ``groupBitOr`` of their bits. ``masks`` holds per site a
    per-event mask expression (``query.goals.goal_mask``). Only the completing rows are grouped: a session without one
    gets 0 from its absence.
    """
    branches = " ".join(f"WHEN {site} THEN {mask}" for site, mask in sorted(masks.items()))
    per_event = f"CASE site_id {branches} ELSE 0 END"
    sites = ", ".join(str(site) for site in sorted(masks))
    return (
        f"SELECT {_SESSION_KEY.format('session_id')} AS session_key, groupBitOr(event_mask) AS mask FROM "
        f"(SELECT session_id, {per_event} AS event_mask FROM {source} WHERE site_id IN ({sites}) AND {where}) "
        "AS completing WHERE event_mask <> 0 GROUP BY session_key"
    )


def single_node_sql(database: str | None = None) -> list[str]:
    """The statements that create the event tables on one server (what the store runs at start-up).

    Table names are qualified with ``database`` when given, else they go to the connection's database.
    """
    prefix = f"`{database}`." if database else ""
    return [
        _events_table(f"{prefix}events", "MergeTree"),
        # One logical row; ReplacingMergeTree keeps the highest position when parts merge, reads take max().
        _position_table(f"{prefix}event_log_position", "ReplacingMergeTree(applied_seq)"),
    ]


def _cluster_versions(cluster: str, database: str) -> list[list[str]]:
    """The tables of each schema version on a cluster (index 0 is version 1), without filling them."""
    on = f" ON CLUSTER `{cluster}`"
    replicated = "ReplicatedMergeTree('/clickhouse/tables/{shard}/" + database + "/{table}', '{replica}')"
    # The position and schema tables are tiny and written by one sitelens process: one copy on every node (no
    # {shard} in their path), so whichever node sitelens reaches reads the same position.
    replacing = "ReplicatedReplacingMergeTree('/clickhouse/tables/" + database + "/{table}', '{replica}', applied_seq)"
    db = f"`{database}`"
    return [
        [
            f"CREATE DATABASE IF NOT EXISTS {db}{on}",
            _events_table(f"{db}.events_local", replicated, on),
            f"CREATE TABLE IF NOT EXISTS {db}.events{on} AS {db}.events_local\n"
            f"ENGINE = Distributed('{cluster}', '{database}', 'events_local', cityHash64(session_id))",
            _position_table(f"{db}.event_log_position", replacing, on),
            f"CREATE TABLE IF NOT EXISTS {db}.{SCHEMA_TABLE}{on} (version UInt32, applied_at DateTime64(3, 'UTC') "
            "DEFAULT now64(3))\nENGINE = ReplicatedMergeTree('/clickhouse/tables/" + database + "/{table}', "
            "'{replica}')\nORDER BY version",
        ],
        [
            _sessions_table(
                f"{db}.sessions_local",
                "ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/" + database + "/{table}', '{replica}')",
                on,
            ),
            f"CREATE TABLE IF NOT EXISTS {db}.sessions{on} AS {db}.sessions_local\n"
            f"ENGINE = Distributed('{cluster}', '{database}', 'sessions_local', cityHash64(session_id))",
            # On every node, the view folds the rows its shard receives into that shard's sessions.
            _sessions_view(f"{db}.sessions_mv", f"{db}.sessions_local", f"{db}.events_local", on, version=2),
        ],
        [
            _events_table(f"{db}.error_events_local", replicated, on),
            f"CREATE TABLE IF NOT EXISTS {db}.error_events{on} AS {db}.error_events_local\n"
            f"ENGINE = Distributed('{cluster}', '{database}', 'error_events_local', cityHash64(session_id))",
            # Like sessions_mv: each node copies the error rows its shard receives.
            _copy_view(f"{db}.error_events_mv", f"{db}.error_events_local", f"{db}.events_local", _ERROR_ROWS, on),
        ],
        [
            _add_pathnames(f"{db}.sessions_local", on),
            _add_pathnames(f"{db}.sessions", on),
            f"DROP VIEW IF EXISTS {db}.sessions_mv{on}",
            _sessions_view(f"{db}.sessions_mv", f"{db}.sessions_local", f"{db}.events_local", on, version=4),
        ],
        [_timestamp_codec(f"{db}.events_local", on), _timestamp_codec(f"{db}.error_events_local", on)],
        [
            _events_table(f"{db}.goal_events_local", replicated, on, order_by=GOAL_ROWS_ORDER_BY),
            _timestamp_codec(f"{db}.goal_events_local", on),
            f"CREATE TABLE IF NOT EXISTS {db}.goal_events{on} AS {db}.goal_events_local\n"
            f"ENGINE = Distributed('{cluster}', '{database}', 'goal_events_local', cityHash64(session_id))",
            _copy_view(f"{db}.goal_events_mv", f"{db}.goal_events_local", f"{db}.events_local", _GOAL_ROWS, on),
        ],
        [
            f"DROP VIEW IF EXISTS {db}.sessions_mv{on}",
            _drop_picks(f"{db}.sessions_local", on),
            _drop_picks(f"{db}.sessions", on),
            _add_picks(f"{db}.sessions_local", on),
            _add_picks(f"{db}.sessions", on),
            _sessions_view(f"{db}.sessions_mv", f"{db}.sessions_local", f"{db}.events_local", on, version=7),
        ],
        [
            # Sharded like the sessions, so a seal's rows lie on the shard of the session's events; the record of the
            # seals, like the log position, on every node.
            _sealed_table(f"{db}.sealed_sessions_local", replicated, on),
            f"CREATE TABLE IF NOT EXISTS {db}.sealed_sessions{on} AS {db}.sealed_sessions_local\n"
            f"ENGINE = Distributed('{cluster}', '{database}', 'sealed_sessions_local', cityHash64(session_id))",
            _seals_table(
                f"{db}.session_seals",
                "ReplicatedMergeTree('/clickhouse/tables/" + database + "/{table}', '{replica}')",
                on,
            ),
            *_open_indexes(f"{db}.sessions_local", on),
        ],
        [
            f"ALTER TABLE {db}.sealed_sessions_local{on} {_GOAL_MASK}",
            f"ALTER TABLE {db}.sealed_sessions{on} {_GOAL_MASK}",
            # Written by the one sitelens process, read by every node: a copy on each, like the seals.
            _goal_definitions_table(
                f"{db}.goal_definitions",
                "ReplicatedMergeTree('/clickhouse/tables/" + database + "/{table}', '{replica}')",
                on,
            ),
            _sealed_goal_bits_table(
                f"{db}.sealed_goal_bits",
                "ReplicatedMergeTree('/clickhouse/tables/" + database + "/{table}', '{replica}')",
                on,
            ),
        ],
        [
            f"ALTER TABLE {db}.sealed_sessions_local{on} {_SEALED_PATHS}",
            f"ALTER TABLE {db}.sealed_sessions{on} {_SEALED_PATHS}",
        ],
        [
            # Sharded by user, not by session: each user's row lies on one shard, which counts it once. The record of
            # the builds, like that of the seals, on every node.
            _sealed_users_table(
                f"{db}.sealed_users_local",
                "ReplicatedMergeTree('/clickhouse/tables/{shard}/" + database + "/{table}', '{replica}')",
                on,
            ),
            f"CREATE TABLE IF NOT EXISTS {db}.sealed_users{on} AS {db}.sealed_users_local\n"
            f"ENGINE = Distributed('{cluster}', '{database}', 'sealed_users_local', "
            "cityHash64(site_id, user_form, user_number, user_text))",
            _user_builds_table(
                f"{db}.sealed_user_builds",
                "ReplicatedMergeTree('/clickhouse/tables/" + database + "/{table}', '{replica}')",
                on,
            ),
        ],
    ]


def cluster_schema_sql(cluster: str, database: str) -> list[str]:
    """The statements a cluster operator runs: replicated local tables on every node and a Distributed table.

    ``events_local`` is a ``ReplicatedMergeTree`` on every shard; ``events`` is the ``Distributed`` table sitelens
    reads and writes, sharded by a hash of ``session_id`` so every row of a session lives on one shard and the
    per-session aggregates need no cross-shard merge.
    """
    tables = [statement for version in _cluster_versions(cluster, database) for statement in version]
    return [*tables, f"INSERT INTO `{database}`.{SCHEMA_TABLE} (version) VALUES ({len(MIGRATIONS)})"]


# A fill reads through the Distributed tables from one node: each shard groups its own sessions (a session's rows all
# lie on one shard, so the node need not merge them), and the insert returns once every shard holds its rows.
_CLUSTER_FILL_SETTINGS = "distributed_group_by_no_merge = 1, distributed_foreground_insert = 1"


def cluster_upgrade_sql(cluster: str, database: str, from_version: int) -> list[str]:
    """The statements that bring a cluster at schema version ``from_version`` to the newest, run with sitelens stopped.

    The tables of each later version are created ``ON CLUSTER`` as ``cluster_schema_sql`` creates them, then filled
    once from the events already stored (emptied first, so statements run again do not count twice). sitelens
    applies its migrations itself on one server; on a cluster it refuses to start until these have run.
    """
    if not 1 <= from_version < len(MIGRATIONS):
        raise ValueError(f"a cluster upgrade starts from schema version 1 to {len(MIGRATIONS) - 1}")
    on = f" ON CLUSTER `{cluster}`"
    db = f"`{database}`"
    fill_sessions = [
        f"TRUNCATE TABLE IF EXISTS {db}.sessions_local{on}",
        sessions_fill_sql(f"{db}.sessions", f"{db}.events", settings=_CLUSTER_FILL_SETTINGS),
    ]
    fills = {
        # Version 7 fills the table again, with the columns it changes: a fill at version 2 or 4 would be thrown away.
        2: [],
        3: [
            f"TRUNCATE TABLE IF EXISTS {db}.error_events_local{on}",
            _copy_fill(f"{db}.error_events", f"{db}.events", _ERROR_ROWS, _CLUSTER_FILL_SETTINGS),
        ],
        4: [],
        5: [],
        6: [
            f"TRUNCATE TABLE IF EXISTS {db}.goal_events_local{on}",
            _copy_fill(f"{db}.goal_events", f"{db}.events", _GOAL_ROWS, _CLUSTER_FILL_SETTINGS),
        ],
        7: fill_sessions,
        # Nothing to fill: sitelens's first seal writes the sealed sessions.
        8: [],
        # Nor here: the seal a site's first goals list asks for writes its bits.
        9: [],
        # Nor here: the sealed rows are converted in place.
        10: [],
        # Nor here: sitelens's next seal builds the users.
        11: [],
    }
    statements: list[str] = []
    for version, tables in enumerate(_cluster_versions(cluster, database), start=1):
        if version > from_version:
            statements += [*tables, *fills[version]]
    return [*statements, f"INSERT INTO {db}.{SCHEMA_TABLE} (version) VALUES ({len(MIGRATIONS)})"]


# One entry per schema version: the statements that bring the previous version to it. Append, never edit.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    tuple(single_node_sql()),
    tuple(sessions_sql()),
    tuple(error_rows_sql()),
    tuple(pathnames_sql()),
    tuple(timestamp_codec_sql()),
    tuple(goal_rows_sql()),
    tuple(pairs_sql()),
    tuple(sealed_sql()),
    tuple(goal_bits_sql()),
    tuple(sealed_paths_sql()),
    tuple(sealed_users_sql()),
)
