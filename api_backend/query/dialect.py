"""Engine-specific SQL spellings: every function, hint and placeholder that differs between DuckDB and ClickHouse.

Query builders write portable SQL (``CASE``, ``coalesce``, ``count(*) FILTER (WHERE ...)``, window functions,
``IN (SELECT ...)``, ``||``) and ask the dialect for everything else, so one builder serves both engines. The
semantics both engines must share, and how each gets there:

- timestamps are naive UTC on DuckDB and ``DateTime64(3, 'UTC')`` on ClickHouse; a *local* time is the
  wall-clock time stored in the same type (so buckets and ``CAST(... AS DATE)`` work alike);
- string columns are never NULL ('' means unknown); JSON lookups give '' for a missing key or a JSON null and the
  JSON text of a number, boolean, array or object;
- empty aggregates are NULL (ClickHouse runs with ``aggregate_functions_null_for_empty``) and outer joins fill
  the missing side with NULL (``join_use_nulls``): the store sets both, see ``store/clickhouse.py``;
- regular expressions are RE2 on both engines; patterns are always bound values, never literals (ClickHouse
  reads backslashes in string literals as escapes, DuckDB does not).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

from api_backend.query.sql import Params, Query

__all__ = ["CLICKHOUSE", "DUCKDB", "NO_CUTOFF", "ClickHouseDialect", "Dialect", "SealedRead", "dialect_named"]

# Bucket name -> the DuckDB expression of the bucket start, given a local (wall-clock) timestamp expression.
_DUCKDB_BUCKETS = {
    "minute": "date_trunc('minute', {t})",
    "five_minutes": "time_bucket(INTERVAL '5 minutes', {t})",
    "ten_minutes": "time_bucket(INTERVAL '10 minutes', {t})",
    "fifteen_minutes": "time_bucket(INTERVAL '15 minutes', {t})",
    "hour": "date_trunc('hour', {t})",
    "day": "date_trunc('day', {t})",
    "week": "date_trunc('week', {t})",  # ISO weeks: Monday start
    "month": "date_trunc('month', {t})",
    "year": "date_trunc('year', {t})",
}
# The same on ClickHouse; day and longer buckets come back as Date, turned into a timestamp like DuckDB's.
_CLICKHOUSE_BUCKETS = {
    "minute": "toStartOfMinute({t})",
    "five_minutes": "toStartOfFiveMinutes({t})",
    "ten_minutes": "toStartOfTenMinutes({t})",
    "fifteen_minutes": "toStartOfFifteenMinutes({t})",
    "hour": "toStartOfHour({t})",
    "day": "toDateTime64(toDate({t}), 3, 'UTC')",
    "week": "toDateTime64(toMonday({t}), 3, 'UTC')",
    "month": "toDateTime64(toStartOfMonth({t}), 3, 'UTC')",
    "year": "toDateTime64(toStartOfYear({t}), 3, 'UTC')",
}


# The cutoff of a seal that holds no sessions: every session counts as open (``store/clickhouse.py``, ``Seal``).
NO_CUTOFF = datetime(1970, 1, 1)

FunnelForm = Literal["joins", "levels"]
# ClickHouse's funnel levels (``ClickHouseDialect.step_level``): 2^52 microseconds (142 years) added to every time
# keeps those from 1900 on positive, and a window of 2^62 is wider than the span between any two of them.
_LEVEL_TIME_OFFSET = 2**52
_LEVEL_WINDOW = 2**62


@dataclass(frozen=True)
class SealedRead:
    """What a read of a ClickHouse store's sealed sessions is bound to (``Dialect.sealed``): the seal's
    ``generation``, the position ``log_seq`` and the ``cutoff`` past which sessions are open, and ``open_from``, no
    later than the first event of any session open when the read began (``query.facts.sessions_relation``,
    ``store/clickhouse.py``'s ``Seal``)."""

    generation: int
    log_seq: int
    cutoff: datetime
    open_from: datetime
    # The seal of the generation's newest build of users (``sealed_users``, ``query/user_rows.py``), which holds the
    # users of the rows sealed up to it; 0 for none.
    users_seal: int = 0


@dataclass(frozen=True)
class Dialect:
    """DuckDB's spellings; ``ClickHouseDialect`` overrides what ClickHouse spells differently."""

    name: str = "duckdb"
    # Reads take whole sessions from the ``sessions`` table the store keeps (``query/facts.py``).
    session_facts: bool = True
    # Whether reads needing only the columns every store's table keeps take whole sessions from it too
    # (``facts.sessions_relation``): the overview's numbers, the values of a session-level parameter, the sessions
    # per pathname, a page of the sessions list, a goal's conversions per value of a session-level parameter.
    shared_facts: bool = True
    # Whether the ``sessions`` table holds partial rows of a session that a read merges (``facts.sessions_relation``).
    merged_sessions: bool = False
    # Whether the sealed rows keep the goal bits the goal reads take (``goals.build_goals_stored_query``), where the
    # ``sessions`` table keeps none (``session_facts`` false).
    sealed_goal_masks: bool = False
    # Where it does, the seal a read takes finished sessions from instead (``facts.SealedRead``), once a narrowing
    # found one to read; None reads merge every row.
    sealed: SealedRead | None = None
    # Distinct counts as ``count(DISTINCT x)`` aggregates (over all rows, or per group) rather than by grouping the
    # distinct values (or (session, value) pairs) first. DuckDB groups them: its distinct aggregates cannot spill
    # to disk (the time series' distinct users per bucket ran out of memory at 100M events).
    distinct_aggregates: bool = False
    # The table the error routes read their rows from: each store keeps a copy of the error rows, about 1% of the
    # events and found in every block of ``events``. At 100M events, on ClickHouse the error series 2.0 -> 0.4 s and
    # the error names 3.5 -> 0.6 s (``store/clickhouse_schema.py``); on DuckDB (``store/duckdb.py``) the error names
    # 944 -> 313 ms, a message's occurrences 1,434 -> 184 ms and its series 328 -> 99 ms.
    error_rows: str = "error_events"
    # The table the goals other than path goals and the filters on an event property read their matching events from
    # (``query/goals.py``, ``facts.whole_sessions``): ``events``, or a store's copy of the rows of the types those
    # goals match (``GOAL_EVENT_TYPES``, about a fifth of the events) ordered so a day's rows of one type and name lie
    # together. ClickHouse keeps one: at 100M events the sessions with a ``signup`` event 1.9 -> 0.16 s
    # (``store/clickhouse_schema.py``).
    goal_rows: str = "events"
    # Whether the copies (error rows, goal rows) are written after the events (by views) rather than in the
    # transaction storing them: then a read's cache key counts every table (``scope.window_version_query``).
    copies_apart: bool = False
    # Whether routes that group events count distinct users as numbers plus other strings (``user_number``) rather
    # than as strings. Not on DuckDB: testing each user's form there costs more than the grouping saves (the time
    # series of 10M events 693 -> 1,674 ms); its sessions table keeps both forms instead.
    split_users: bool = False
    # Whether tables have ``rowid``, a row's position, by which a query can read a few rows' other columns after
    # finding them by one column.
    row_ids: bool = True
    # Whether the ``sessions`` table keeps each session's pageviews per UTC quarter-hour (``quarter_hours``,
    # ``store/sessions.py``), from which the time series buckets a session crossing a bucket boundary without reading
    # its events (``query/overview.py``).
    quarter_hours: bool = True
    # How a funnel finds each session's steps (``query/funnels.py``): "joins" joins each step's rows to the sessions
    # of the step before; "levels" groups the matching rows once, with an aggregate of the engine that follows the
    # steps in order (``step_level``). DuckDB has no such aggregate, and grouping them once into per-session lists of
    # each step's times took it from 2.5 to 3.5 s at 100M events (10M: 187 -> 219 ms).
    funnel_form: FunnelForm = "joins"
    # Whether a read keeps a CTE of millions of rows it reads more than once (``MATERIALIZED``) rather than reading
    # the table again at each reference, and then finds a page's rows by their sessions' ids alone. Not on DuckDB,
    # which reads a page's candidates again by their ends alone (``facts.newest_ends``) instead of keeping 6.4M
    # converted sessions' ids at 100M events, and bounds the page's rows by its earliest start.
    keeps_large_ctes: bool = False
    # Whether the whole sessions a read takes carry the start of their user's previous session (``prev_first_seen``,
    # ``store/sessions.py``), along which the overview and its series count distinct users (``query/chains.py``).
    user_chains: bool = True

    # -- placeholders ---------------------------------------------------------------------------------------------

    def bind(self, query: Query) -> tuple[str, Mapping[str, Any]]:
        """The SQL text and parameters in the form the engine's client takes (DuckDB: ``$p0`` as built)."""
        return query.sql, query.params

    # -- text -----------------------------------------------------------------------------------------------------

    def regex_search(self, expr: str, pattern: str) -> str:
        """True when the RE2 ``pattern`` (a placeholder) matches anywhere in ``expr``."""
        return f"regexp_matches({expr}, {pattern})"

    def regex_extract(self, expr: str, pattern: str) -> str:
        """The first capture group of ``pattern`` in ``expr`` ('' when it does not match)."""
        return f"regexp_extract({expr}, {pattern}, 1)"

    def regex_replace(self, expr: str, pattern: str, replacement: str) -> str:
        """``expr`` with the first match of ``pattern`` replaced by ``replacement`` (both placeholders)."""
        return f"regexp_replace({expr}, {pattern}, {replacement})"

    def json_string(self, column: str, key: str, p: Params) -> str:
        """The top-level JSON value ``key`` of ``column`` as text ('' when absent or null)."""
        return f"coalesce(json_extract_string({column}, {p.add(_json_path(key))}), '')"

    def contains(self, expr: str, value: str) -> str:
        """True when ``value`` occurs in ``expr`` (case-sensitive, no wildcards)."""
        return f"contains({expr}, {value})"

    def starts_with(self, expr: str, value: str) -> str:
        """True when ``expr`` begins with ``value``."""
        return f"starts_with({expr}, {value})"

    def ends_with(self, expr: str, value: str) -> str:
        """True when ``expr`` ends with ``value``."""
        return f"ends_with({expr}, {value})"

    def length(self, expr: str) -> str:
        """Number of characters of ``expr``."""
        return f"length({expr})"

    def substring_after(self, expr: str, skip: int) -> str:
        """``expr`` without its first ``skip`` characters (``skip`` is a trusted integer)."""
        return f"substr({expr}, {int(skip) + 1})"

    # -- users ----------------------------------------------------------------------------------------------------

    def user_number(self, value: str) -> str:
        """The user ``value`` as the 64-bit number its digits write when it has a visitor id's form, else NULL.

        A visitor id (``ingest/visitor.py``) is 16 lowercase hex digits. With ``user_text`` this splits user values
        one to one into numbers and other strings: the two sets are disjoint by form, and only lowercase digits are
        read, so two strings never give one number. Distinct numbers plus distinct other strings is the count of
        distinct users, and a grouping of 8-byte numbers costs far less than one of strings: at 100M events the
        overview's 26M session users on DuckDB 2.2 -> 1.1 s (``store/sessions.py`` keeps both forms per session).
        The numbers are the engine's own: only their distinctness is used.
        """
        return f"CASE WHEN regexp_full_match({value}, '[0-9a-f]{{16}}') THEN CAST('0x' || {value} AS UBIGINT) END"

    def user_text(self, value: str) -> str:
        """The user ``value`` when it has not a visitor id's form (an identified id), else NULL."""
        return f"CASE WHEN NOT regexp_full_match({value}, '[0-9a-f]{{16}}') THEN {value} END"

    # -- numbers --------------------------------------------------------------------------------------------------

    def to_double(self, expr: str) -> str:
        """The text ``expr`` as a float, NULL when it is not a number."""
        return f"TRY_CAST({expr} AS DOUBLE)"

    def to_bigint(self, expr: str) -> str:
        """The float ``expr`` rounded to a 64-bit integer, NULL when NULL or out of range."""
        return f"TRY_CAST(round({expr}) AS BIGINT)"

    def bit_and(self, left: str, right: str) -> str:
        """Bitwise AND of two integers."""
        return f"({left} & {right})"

    # -- aggregates -----------------------------------------------------------------------------------------------

    def counting(self, sql: str) -> str:
        """``sql``, a query whose only aggregates are ``count(*)``, in the form the engine answers fastest."""
        return sql

    def time_bound(self, column: str, op: str, value: str) -> str:
        """``column op value`` (``op`` one of ``<``, ``<=``, ``>``, ``>=``) on the time of a table of events, in the
        form the engine skips the rest of the table by."""
        return f"{column} {op} {value}"

    def arg_min(self, value: str, key: str, where: str | None = None) -> str:
        """``value`` of the row with the smallest ``key`` (among the rows where ``where`` holds; NULL if none)."""
        return f"arg_min({value}, {key}){_filter(where)}"

    def arg_max(self, value: str, key: str, where: str | None = None) -> str:
        """``value`` of the row with the largest ``key`` (among the rows where ``where`` holds; NULL if none)."""
        return f"arg_max({value}, {key}){_filter(where)}"

    def bool_or(self, condition: str) -> str:
        """True when ``condition`` holds on some row of the group (NULL over no rows)."""
        return f"bool_or({condition})"

    def bit_or(self, expr: str) -> str:
        """Bitwise OR of an integer over the group."""
        return f"bit_or({expr})"

    # -- time -----------------------------------------------------------------------------------------------------

    def local_time(self, expr: str, zone: str) -> str:
        """The wall-clock time in ``zone`` (a placeholder) of the UTC timestamp ``expr``."""
        return f"timezone({zone}, timezone('UTC', {expr}))"

    def shift_ms(self, expr: str, milliseconds: str) -> str:
        """The timestamp ``expr`` moved by ``milliseconds`` (an integer expression).

        As microseconds since the epoch: adding an interval costs DuckDB more than twice as much. The local days of
        the first and last events of 25.8M sessions compared, 218 -> 92 ms; the daily series of 10M events in
        Asia/Kolkata, 333 -> 244 ms (in UTC, where nothing is shifted, 218 ms).
        """
        return f"make_timestamp(epoch_us({expr}) + CAST({milliseconds} AS BIGINT) * 1000)"

    def bucket(self, local_expr: str, bucket: str) -> str:
        """Start of the ``bucket`` holding the wall-clock timestamp ``local_expr`` (weeks start on Monday)."""
        return _DUCKDB_BUCKETS[bucket].format(t=local_expr)

    def same_bucket(self, a: str, b: str, bucket: str) -> str:
        """Whether the wall-clock timestamps ``a`` and ``b`` lie in one ``bucket``.

        Days compare as dates: the casts cost less than half of truncating both (25.8M sessions, 90 -> 53 ms).
        """
        if bucket == "day":
            return f"CAST({a} AS DATE) = CAST({b} AS DATE)"
        return f"{self.bucket(a, bucket)} = {self.bucket(b, bucket)}"

    def epoch_seconds(self, expr: str) -> str:
        """Seconds since the epoch (fractional) of a timestamp expression.

        From microseconds: ``epoch_us`` costs a sixth of ``epoch_ms`` (the overview's 25.9M session durations at
        100M events, 278 -> 40 ms), and for the stored millisecond times both quotients are the double nearest the
        same number, so the result is the same to the bit.
        """
        return f"(epoch_us({expr}) / 1000000.0)"

    def epoch_us(self, expr: str) -> str:
        """Microseconds since the epoch (an integer) of a timestamp expression."""
        return f"epoch_us({expr})"

    def hash64(self, expr: str) -> str:
        """A 64-bit hash of ``expr``: a compact key for grouping (callers check it stayed one-to-one)."""
        return f"hash({expr})"

    def session_number(self, session_id: str) -> str:
        """A 128-bit number standing for the session id ``session_id`` in groupings and joins of many rows.

        Two 64-bit hashes side by side, of the id and of its reverse, so the two read its characters in opposite
        orders. Two ids share a number with a chance of about 2^-128 per pair, the same as two random 128-bit session
        ids sharing an id, which every read already takes as impossible (``facts.py``): with 6.4M sessions, about
        10^-25. A fixed-width key instead of a string keeps the rows it is carried with narrow: the funnel's 11.9M
        matching rows at 100M events stopped spilling (3.3 -> 2.6 s). An engine grouping strings as fast keeps the id.
        """
        return f"((CAST(hash({session_id}) AS UHUGEINT) << 64) | CAST(hash(reverse({session_id})) AS UHUGEINT))"

    # -- structure ------------------------------------------------------------------------------------------------

    def cte(self, name: str, body: str, materialized: bool | None = None) -> str:
        """A CTE definition; ``materialized`` asks the engine to compute it once (True) or inline it (False)."""
        hint = "" if materialized is None else ("MATERIALIZED " if materialized else "NOT MATERIALIZED ")
        return f"{name} AS {hint}({body})"

    def few_rows(self, column: str, relation: str) -> str:
        """``SELECT`` of ``column`` of the small ``relation`` (a CTE), for a lookup of its values in a large one
        (``x IN (...)``). DuckDB reads a list of them: of a CTE's rows it knows no count, and took a filtered one
        for a fifth of a large table, building its hash table from the large side instead."""
        return f"SELECT unnest((SELECT list({column}) FROM {relation}))"

    def unnest_strings(self, array: str) -> str:
        """One row per element of the list of strings ``array`` (a placeholder or a column)."""
        return f"unnest(CAST({array} AS VARCHAR[]))"

    def path_list(self, array: str) -> str:
        """The list of paths ``array`` typed as the sealed rows keep theirs, so a ``UNION ALL`` with them keeps
        their type (``store/clickhouse_schema.py``, version 10)."""
        return array

    def unnest_strings_and_null(self, array: str) -> str:
        """``unnest_strings`` and one NULL row after the elements (for a grouping that also counts each list once)."""
        return f"unnest(list_append(CAST({array} AS VARCHAR[]), NULL))"

    def distinct_strings(self, expr: str, where: str) -> str:
        """Aggregate: the distinct values of the text ``expr`` over the rows where ``where`` holds, as a list in no
        particular order (empty when there are none)."""
        return f"coalesce(list(DISTINCT {expr}) FILTER (WHERE {where}), CAST([] AS VARCHAR[]))"

    def step_rows(self, conditions: Sequence[str]) -> str:
        """The numbers (from 0) of the ``conditions`` a row meets, as rows: a row meeting two of them comes twice
        (the "levels" funnel form, ``step_level``)."""
        raise NotImplementedError(f"{self.name} has no funnel levels")

    def step_level(self, timestamp: str, step: str, steps: int) -> str:
        """Aggregate: how many of the steps ``0 .. steps - 1`` a group's rows go through in order, each one at a row
        of that ``step`` strictly later than the one before (the time ``timestamp``); 0 without a row of step 0."""
        raise NotImplementedError(f"{self.name} has no funnel levels")

    def list_has(self, array: str, value: str) -> str:
        """True when the list ``array`` holds ``value``."""
        return f"list_contains({array}, {value})"

    def list_any(self, array: str, element: str, condition: str) -> str:
        """True when ``condition`` (naming each element of the list ``array`` as ``element``) holds for one."""
        return f"len(list_filter({array}, lambda {element}: {condition})) > 0"


def _filter(where: str | None) -> str:
    return f" FILTER (WHERE {where})" if where else ""


def _json_path(key: str) -> str:
    """A JSON path selecting the top-level ``key`` (quoted, so dots and spaces stay part of the key)."""
    return '$."' + key + '"'


_PLACEHOLDER = re.compile(r"\$(p\d+)\b")


def _clickhouse_type(value: Any) -> str:
    if isinstance(value, bool):
        return "Bool"
    if isinstance(value, int):
        return "Int64"
    if isinstance(value, float):
        return "Float64"
    if isinstance(value, datetime):
        return "DateTime64(3, 'UTC')"
    if isinstance(value, date):
        return "Date"
    if isinstance(value, list | tuple):
        return "Array(String)"
    if isinstance(value, str):
        return "String"
    raise TypeError(f"no ClickHouse parameter type for {type(value).__name__}")


@dataclass(frozen=True)
class ClickHouseDialect(Dialect):
    """ClickHouse's spellings (server-side ``{name:Type}`` parameters, camelCase functions)."""

    name: str = "clickhouse"
    # The store keeps ``sessions`` (an AggregatingMergeTree fed by a view) without DuckDB's goal bits, user forms and
    # keys: the reads that need them group the events (the goal reads take the bits of the sealed rows).
    session_facts: bool = False
    # The others (the overview and its series, a session-level parameter's values, the paths, the pages of sessions
    # and a goal's breakdown by a session-level parameter) read the table's rows merged with
    # ``FINAL``, which costs little where the older parts are merged and the newer ones hold newer sessions
    # (``facts.sessions_relation``).
    shared_facts: bool = True
    # An ``AggregatingMergeTree``: a session's rows in different parts hold partial states until merged.
    merged_sessions: bool = True
    # A seal writes each session's goal bits into its sealed row (``store/clickhouse.py``).
    sealed_goal_masks: bool = True
    # ``uniqExact``, whose states spill like any grouping. On chdb, the sessions per page of 10M events 4.8 -> 1.7 s
    # (60 -> 22 s at 100M, within the 4 GB limit), the overview's users 1.8 -> 1.1 s (``bench/analysis.md``).
    distinct_aggregates: bool = True
    goal_rows: str = "goal_events"
    # ``error_events`` and ``goal_events`` are filled by materialized views on each insert into ``events``.
    copies_apart: bool = True
    # On chdb the overview of 100M events 28.0 -> 23.1 s, its daily series 19.5 -> 16.5 s (10M: 959 -> 806 ms and
    # 870 -> 773 ms).
    split_users: bool = True
    row_ids: bool = False
    quarter_hours: bool = False
    # Its joins grouped each step's rows again: one grouping into per-session lists of each step's times took the
    # funnel from 606 to 220 ms at 10M events on merged chdb copies of the bench files, 6.3 -> 2.3 s at 100M. Levels
    # keep no lists: the statement 2,610 -> 2,505 ms at 100M, 269 -> 243 ms at 10M (``bench/analysis.md``).
    funnel_form: FunnelForm = "levels"
    keeps_large_ctes: bool = True
    # Its tables keep no chains: kept in the sealed rows they made a full seal 2.5 times as long, and the reads
    # paid only where they kept their looked-up users once, which chdb failed in some shapes (``bench/analysis.md``).
    user_chains: bool = False

    def bind(self, query: Query) -> tuple[str, Mapping[str, Any]]:
        """``$p0`` becomes ``{p0:Type}`` with the type of its bound value; naive datetimes are UTC."""
        params = query.params

        def typed(match: re.Match[str]) -> str:
            name = match.group(1)
            return "{" + name + ":" + _clickhouse_type(params[name]) + "}"

        return _PLACEHOLDER.sub(typed, query.sql), params

    def counting(self, sql: str) -> str:
        # A count is 0 over no rows either way. Its -OrNull form, which ``aggregate_functions_null_for_empty`` makes
        # of it, reads every row of the window, where ClickHouse answers a plain ``count()`` from the parts' metadata
        # and indexes: the result cache's window count at 100M events, 0.8 s -> 6 ms (``bench/analysis.md``).
        return f"{sql} SETTINGS aggregate_functions_null_for_empty = 0"

    def time_bound(self, column: str, op: str, value: str) -> str:
        # The tables of events are ordered by day (``toDate(timestamp)``, ``store/clickhouse_schema.py``), and the
        # engine derives no bound on that day from a bound on the time: a window read every row of each month it
        # touched. So the day's bound is written out too, as a hint to the index only (``indexHint``): the rows of
        # the days it keeps are not tested against it. On the 10M bench file's copy, the events of the sessions
        # crossing a 20-day window's edges: 10.1M -> 2.8M rows read (``bench/analysis.md``).
        day = ">=" if op.startswith(">") else "<="
        return f"({column} {op} {value} AND indexHint(toDate({column}) {day} toDate({value})))"

    def regex_search(self, expr: str, pattern: str) -> str:
        return f"match({expr}, {pattern})"

    def regex_extract(self, expr: str, pattern: str) -> str:
        return f"extract({expr}, {pattern})"

    def regex_replace(self, expr: str, pattern: str, replacement: str) -> str:
        return f"replaceRegexpOne({expr}, {pattern}, {replacement})"

    def json_string(self, column: str, key: str, p: Params) -> str:
        k = p.add(key)
        kind = f"JSONType({column}, {k})"
        return (
            f"multiIf({kind} = 'String', JSONExtractString({column}, {k}), "
            f"{kind} IN ('Null', 'None'), '', JSONExtractRaw({column}, {k}))"
        )

    def contains(self, expr: str, value: str) -> str:
        return f"(position({expr}, {value}) > 0)"

    def starts_with(self, expr: str, value: str) -> str:
        return f"startsWith({expr}, {value})"

    def ends_with(self, expr: str, value: str) -> str:
        return f"endsWith({expr}, {value})"

    def length(self, expr: str) -> str:
        return f"lengthUTF8({expr})"

    def substring_after(self, expr: str, skip: int) -> str:
        return f"substringUTF8({expr}, {int(skip) + 1})"

    def to_double(self, expr: str) -> str:
        return f"toFloat64OrNull({expr})"

    def to_bigint(self, expr: str) -> str:
        return f"accurateCastOrNull(round({expr}), 'Int64')"

    def bit_and(self, left: str, right: str) -> str:
        return f"bitAnd({left}, {right})"

    def arg_min(self, value: str, key: str, where: str | None = None) -> str:
        return f"argMin({value}, {key}){_filter(where)}"

    def arg_max(self, value: str, key: str, where: str | None = None) -> str:
        return f"argMax({value}, {key}){_filter(where)}"

    def bool_or(self, condition: str) -> str:
        return f"max(toBool({condition}))"

    def bit_or(self, expr: str) -> str:
        return f"groupBitOr({expr})"

    def local_time(self, expr: str, zone: str) -> str:
        # The zone's offset at each instant added to the UTC time: the wall-clock time, still typed as UTC.
        return f"addSeconds({expr}, timeZoneOffset(toTimeZone({expr}, {zone})))"

    def shift_ms(self, expr: str, milliseconds: str) -> str:
        return f"addMilliseconds({expr}, {milliseconds})"

    def bucket(self, local_expr: str, bucket: str) -> str:
        return _CLICKHOUSE_BUCKETS[bucket].format(t=local_expr)

    def user_number(self, value: str) -> str:
        # The 8 bytes the digits write, read as one number (little-endian: a number of its own, as distinct).
        return f"if(match({value}, '^[0-9a-f]{{16}}$'), reinterpretAsUInt64(unhex({value})), NULL)"

    def user_text(self, value: str) -> str:
        return f"if(match({value}, '^[0-9a-f]{{16}}$'), NULL, {value})"

    def epoch_seconds(self, expr: str) -> str:
        return f"(toUnixTimestamp64Milli({expr}) / 1000.0)"

    def epoch_us(self, expr: str) -> str:
        return f"toUnixTimestamp64Micro({expr})"

    def hash64(self, expr: str) -> str:
        return f"cityHash64({expr})"

    def session_number(self, session_id: str) -> str:
        # ClickHouse groups the id as fast as a 128-bit number: the overview's grouping of 10M events into sessions
        # took 711 ms by the id, 753 ms by two cityHash64 and 953 ms by sipHash128 (a 64-bit hash alone, 609 ms,
        # would need a check for shared keys). So it keeps the id.
        return session_id

    def cte(self, name: str, body: str, materialized: bool | None = None) -> str:
        # ClickHouse inlines a CTE at every reference, running it again each time, unless it is MATERIALIZED (with
        # ``enable_materialized_cte``, which the store sets where the server has it; see ``store/clickhouse.py``).
        return f"{name} AS {'MATERIALIZED ' if materialized else ''}({body})"

    def few_rows(self, column: str, relation: str) -> str:
        return f"SELECT {column} FROM {relation}"  # the right side of ``IN`` is the set it builds

    def unnest_strings(self, array: str) -> str:
        return f"arrayJoin({array})"

    def path_list(self, array: str) -> str:
        # Dictionary numbers, as the sealed rows keep them: a UNION ALL with lists of plain strings gives plain ones.
        return f"CAST({array} AS Array(LowCardinality(String)))"

    def unnest_strings_and_null(self, array: str) -> str:
        return f"arrayJoin(arrayPushBack(CAST({array} AS Array(Nullable(String))), NULL))"

    def distinct_strings(self, expr: str, where: str) -> str:
        return f"groupUniqArrayIf(toString({expr}), {where})"

    def step_rows(self, conditions: Sequence[str]) -> str:
        numbers = ", ".join(str(i) for i in range(len(conditions)))
        met = ", ".join(f"toBool({c})" for c in conditions)
        return f"arrayJoin(arrayFilter((step, met) -> met, [{numbers}], [{met}]))"

    def step_level(self, timestamp: str, step: str, steps: int) -> str:
        # ``windowFunnel`` in ``strict_increase`` mode takes a row of step k after a row of step k - 1 at a smaller
        # time, and every row of step 0 starts the chain again. On plain times two cases go wrong: a step-0 row at
        # the time of a step-1 row, looked at first, hides the earlier step-0 row the step-1 row follows; and a row
        # meeting steps 0 and 1 (the same page twice) starts the chain again before it counts as step 1 after an
        # earlier visit. So a row comes once per step it meets (``step_rows``), at a time made unique per step: its
        # microseconds times ``steps`` plus ``steps - 1 - step``. At one instant the higher steps sort first, so a
        # row counts as step k before a row of that instant moves step k - 1, and never after one of that instant.
        key = f"toUInt64(({self.epoch_us(timestamp)} + {_LEVEL_TIME_OFFSET}) * {steps} + ({steps - 1} - {step}))"
        flags = ", ".join(f"{step} = {i}" for i in range(steps))
        return f"windowFunnel({_LEVEL_WINDOW}, 'strict_increase')({key}, {flags})"

    def list_has(self, array: str, value: str) -> str:
        return f"has({array}, {value})"

    def list_any(self, array: str, element: str, condition: str) -> str:
        return f"arrayExists({element} -> {condition}, {array})"


DUCKDB = Dialect()
CLICKHOUSE = ClickHouseDialect()
_BY_NAME = {d.name: d for d in (DUCKDB, CLICKHOUSE)}


def dialect_named(name: str) -> Dialect:
    """The dialect of an event store (its ``dialect`` attribute)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"no query dialect for event store {name!r}") from None
