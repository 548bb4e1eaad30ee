"""The ClickHouse event store: a ClickHouse server over HTTP, or the embedded engine (chdb), through clickhouse-connect.

The ``events`` table holds the same columns as DuckDB's (``EVENT_COLUMNS``) plus ``log_seq``. ClickHouse has no
transactions, so the rows of a batch and the event-log position cannot be written together. Instead:

1. every row inserted by ``append(table, log_seq=N)`` carries ``log_seq = N`` (0 for rows not from the event log);
2. only after the insert returns is ``N`` recorded in ``event_log_position``;
3. on open, rows whose ``log_seq`` is above the recorded position (their insert finished, or half-finished, but the
   position never got written) are deleted, and the writer's replay then copies those log records again.

A crash between 1 and 2 therefore neither loses (the log still holds the records) nor duplicates (their first copy
is gone before the replay) an event. The ``sessions`` table (fed by a materialized view as rows are inserted) got
those rows too: recovery rebuilds the sessions whose ``max_log_seq`` is above the position from the events kept.
``error_events`` and ``goal_events`` (the error rows and the goals' rows, copied by other views) keep each row's
``log_seq``: recovery deletes their rows above the position as it does the events'.
An insert that spans partitions may land partly; the same rule covers it. The
rows of one database must be written by one sitelens process (the one holding the event log); readers may be many.

Inserts are sent with ``insert_deduplicate=0``: a replicated table would otherwise drop a replayed block as a
duplicate of the block deleted in step 3. Parts are synced to disk (``fsync_after_insert``) so the position never
outlives the rows it vouches for after a power loss.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from api_backend.formats import naive_utc
from api_backend.query.dialect import CLICKHOUSE, NO_CUTOFF
from api_backend.query.goals import GoalSpec, goal_definition, goal_mask
from api_backend.query.sql import Params
from api_backend.store.clickhouse_schema import (
    MIGRATIONS,
    SCHEMA_TABLE,
    goal_masks_sql,
    sealed_rows_sql,
    sessions_fill_sql,
    users_build_sql,
)
from api_backend.store.events import (
    EVENT_COLUMNS,
    EVENT_SCHEMA,
    BoundQuery,
    QueryRejectedError,
    QueryTooLargeError,
)
from api_backend.store.goal_bits import Registry, plan_bits, registry_goal

__all__ = [
    "INSERT_SETTINGS",
    "JOIN_SWAP_SETTING",
    "NO_CUTOFF",
    "QUERY_SETTINGS",
    "ClickHouseEventStore",
    "Seal",
    "memory_settings",
    "seal_settings",
]

log = logging.getLogger(__name__)

# Settings every read runs with, so results do not depend on the server's profile. The read layer may add to it.
QUERY_SETTINGS: dict[str, Any] = {
    # Outer joins fill non-matching columns with NULL (standard SQL, as DuckDB), not with the type's default value.
    "join_use_nulls": 1,
    # Empty aggregates are NULL like in standard SQL (sum of nothing is NULL); count() and uniqExact() stay 0.
    "aggregate_functions_null_for_empty": 1,
    # A column name wins over a SELECT alias of the same name in WHERE/GROUP BY (ClickHouse prefers the alias).
    "prefer_column_name_to_alias": 1,
    # CAST(NULL-able AS T) keeps NULLs instead of failing or turning them into defaults.
    "cast_keep_nullable": 1,
    # Times without a zone (parameters, literals, toDate) are UTC whatever the server's or host's time zone.
    "session_timezone": "UTC",
    # A bare UNION means UNION DISTINCT, as in standard SQL (ClickHouse refuses it by default).
    "union_default_mode": "DISTINCT",
    # COUNT(DISTINCT x) is exact even on a server whose profile picks an approximate function.
    "count_distinct_implementation": "uniqExact",
    # JOIN means ALL JOIN (every match), whatever the server's default strictness.
    "join_default_strictness": "ALL",
    # GROUP BY 1 / ORDER BY 1 refer to SELECT positions, as in DuckDB.
    "enable_positional_arguments": 1,
}


def memory_settings(limit: int) -> dict[str, Any]:
    """Read settings bounding one query to ``limit`` bytes.

    Past half of it the query spills its groupings and sorts to disk; past all of it, it stops
    (``QueryTooLargeError``, a 503).
    """
    return {
        "max_memory_usage": limit,
        "max_bytes_before_external_group_by": limit // 2,
        "max_bytes_before_external_sort": limit // 2,
    }


# A seal under a memory limit gives each of its memory-hungry steps this share of it: the grouping of the goal masks
# and the join of the masks to the rows spill past it.
SEAL_BUDGET_SHARE = 8
# What the join of a full seal's goal masks to its rows holds in memory, per session of the ``sessions`` table, as an
# upper bound: 25.9M sessions (18.4M of them completing a goal) took the process from 0.4 to 4.4 GB at 100M events.
SEAL_JOIN_BYTES_PER_SESSION = 128
# Rows (and bytes) a seal's insert gathers before it writes a part: the default million rows of wide session rows
# held about 0.7 GB at 100M events; a quarter of that leaves about three times the parts for the background merges
# to join (84 against 25 at 100M).
_SEAL_INSERT_BLOCK = {"min_insert_block_size_rows": 262_144, "min_insert_block_size_bytes": 64 * 1024 * 1024}
_MAX_JOIN_BUCKETS = 64
# A generation's users are built again (``sealed_users``) once the rows sealed since the last build pass this share of
# its rows: a read looks the users of those rows up one by one.
USERS_BUILD_SHARE = 0.01


def seal_settings(limit: int | None, sessions: int) -> dict[str, Any]:
    """Settings of the statements writing a seal's rows, under a memory ``limit`` (none: the engine's own), for a
    seal joining the masks of up to ``sessions`` sessions (0 for a seal writing a few).

    A seal runs in the server's process on the embedded engine, where nothing else bounds it: a full seal with goal
    bits peaked at 4.4 GB at 100M events. Under a limit its insert writes smaller parts, the masks' grouping spills,
    and a join that would not fit the budget is a grace hash join, in as many buckets as it needs (at 100M events,
    eight: a 1.9 GB peak, but 165 s against 63-73 s). Past the limit the seal fails, and the next one starts again
    (``_recover_seals``); reads keep the seal before.
    """
    if not limit:
        return {}
    budget = limit // SEAL_BUDGET_SHARE
    settings: dict[str, Any] = {
        "max_memory_usage": limit,
        "max_bytes_before_external_group_by": budget,
        "max_bytes_before_external_sort": budget,
        **_SEAL_INSERT_BLOCK,
    }
    buckets = 1
    while buckets < _MAX_JOIN_BUCKETS and sessions * SEAL_JOIN_BYTES_PER_SESSION > budget * buckets:
        buckets *= 2
    if buckets > 1:
        settings |= {"join_algorithm": "grace_hash", "grace_hash_join_initial_buckets": buckets}
    return settings


# Settings of every insert into ``events``.
INSERT_SETTINGS: dict[str, Any] = {
    # A replayed block must be stored even when identical to one deleted by recovery (replicated tables dedupe).
    "insert_deduplicate": 0,
    # The insert returns once the rows are in a part, never from an asynchronous buffer.
    "async_insert": 0,
    # On a cluster (``events`` is Distributed) the insert returns once every shard has its rows.
    "distributed_foreground_insert": 1,
}

# Computes a CTE the read layer marks ``MATERIALIZED`` once, not at each of its references (a grouping of every event
# of the window the metric routes read three times). Set where the server knows it; elsewhere the keyword is taken
# out of the SQL, and the engine inlines the CTE as before.
MATERIALIZED_CTE_SETTING = "enable_materialized_cte"
# Keeps a join's right side as the side it builds in memory, where the engine may pick either by its estimates of the
# two sides' rows. A seal builds from the goal masks, the smaller side. Left to pick, the full seal of one 100M-event
# copy passed the embedded engine's 4GB in its join at each of two tries; with the side kept it sealed in 186 s.
JOIN_SWAP_SETTING = "query_plan_join_swap_table"
_MATERIALIZED_CTE = re.compile(r"\bAS MATERIALIZED \(")

# Server error codes meaning the engine refused a value bound into the query (CANNOT_COMPILE_REGEXP).
_REJECTED_VALUE_CODES = frozenset({427})
_MEMORY_LIMIT_EXCEEDED = 241

# The rows of a range of time, in the form the engine skips the other days by (``Dialect.time_bound``).
_RANGE = " AND ".join(
    (
        CLICKHOUSE.time_bound("timestamp", ">=", "{start:DateTime64(3, 'UTC')}"),
        CLICKHOUSE.time_bound("timestamp", "<", "{end:DateTime64(3, 'UTC')}"),
    )
)

# Deletes return only once a read can no longer see the rows.
_DELETE_SETTINGS: dict[str, Any] = {"lightweight_deletes_sync": 2, "mutations_sync": 2}
# ``OPTIMIZE`` returns once every replica has merged.
_MERGE_SETTINGS: dict[str, Any] = {"alter_sync": 2}

# A full seal writing goal bits groups the masks of the sessions of at most about this many events per statement: each
# statement reads all of ``sessions`` (an eighth of it took 24 s at 100M events, the whole 45 s), while one statement
# holds the 128-bit keys and masks of the sessions completing a goal (18.4M at 100M events: the process peaked at
# 4.6 GB against 2.5 GB sealing without bits, before ``seal_settings`` bounded it; ``bench/analysis.md``).
SEAL_SLICE_EVENTS = 150_000_000

# The sessions a seal left open, by the indexes of ``sessions`` (one condition each: an ``OR`` of the two would use
# neither), given the seal's ``log`` position and ``open_cutoff``.
_OPEN_KEYS = (
    "SELECT site_id, session_id FROM sessions WHERE max_log_seq > {log:UInt64} UNION ALL "
    "SELECT site_id, session_id FROM sessions WHERE last_seen >= {open_cutoff:DateTime64(3, 'UTC')}"
)


@dataclass(frozen=True)
class Seal:
    """One seal of the ``sessions`` table (a row of ``session_seals``).

    Every session with no event after ``log_seq`` and none at or after ``cutoff`` has its finished row in
    ``sealed_sessions``, in ``generation``; the others are open, and reads take them from ``sessions``. A seal with
    ``cutoff`` at ``NO_CUTOFF`` holds none: direct writes (not from the event log) made the sealed rows unreliable, and
    the next seal writes a generation afresh.
    """

    seal: int
    generation: int
    log_seq: int
    cutoff: datetime


_COLUMN_NAMES = [name for name, _ in EVENT_COLUMNS]
_INSERT_SCHEMA = EVENT_SCHEMA.append(pa.field("log_seq", pa.uint64(), nullable=False))


def _naive_utc(rows: Sequence[Sequence[Any]]) -> Sequence[Sequence[Any]]:
    """Times as naive UTC datetimes, as DuckDB returns them. UTC columns come naive already; a column typed with
    another zone comes aware and is turned back into UTC (the embedded engine drops the zone of ``DateTime('tz')``
    values, which then read as UTC, so converting is also what keeps a server and chdb answering alike)."""
    if not rows:
        return rows
    aware = [i for i, value in enumerate(rows[0]) if isinstance(value, datetime) and value.tzinfo is not None]
    if not aware:
        return rows
    fixed = []
    for row in rows:
        row = list(row)
        for i in aware:
            if row[i] is not None:
                row[i] = naive_utc(row[i])
        fixed.append(row)
    return fixed


def _registry(rows: Sequence[Sequence[Any]]) -> dict[int, list[tuple[int, str]]]:
    """Rows ``(site_id, bit, definition)`` as the ``(bit, definition)`` pairs of each site, in the rows' order."""
    registry: dict[int, list[tuple[int, str]]] = {}
    for site, bit, text in rows:
        registry.setdefault(int(site), []).append((int(bit), str(text)))
    return registry


class ClickHouseEventStore:
    """``EventStore`` on one database of a ClickHouse server or of the embedded engine.

    ``client`` is a clickhouse-connect client whose default database is ``database`` (the read layer's SQL names
    ``events`` unqualified). Calls may come from several threads: the HTTP client pools connections, the chdb client
    serializes calls on its handle. Writes take a lock of their own so the log position only moves forward.
    """

    dialect = "clickhouse"

    def __init__(
        self,
        client: Any,
        database: str,
        *,
        on_close: Any = None,
        memory_limit: int | None = None,
        merge_client: Callable[[], Any] | None = None,
    ) -> None:
        self.client = client
        self.database = database
        self._merge_client = merge_client
        self._memory_limit = memory_limit
        self._query_settings = QUERY_SETTINGS | (memory_settings(memory_limit) if memory_limit else {})
        self._materialized_ctes = self._has_setting(MATERIALIZED_CTE_SETTING)
        if self._materialized_ctes:
            self._query_settings[MATERIALIZED_CTE_SETTING] = 1
        # Settings of a seal's joins of goal masks to sessions (``JOIN_SWAP_SETTING``), where the server knows them.
        self._seal_join_settings = {JOIN_SWAP_SETTING: "false"} if self._has_setting(JOIN_SWAP_SETTING) else {}
        self._on_close = on_close
        self._write_lock = threading.Lock()
        # What ``write_stamp`` tells: writes begun, whether one is under way, and whether one failed part-way (an
        # insert, undone by the next logged append's ``_recover``; a delete, left for the next start).
        self._stamp_lock = threading.Lock()
        self._writes_begun = 0
        self._writing = False
        self._insert_failed = False
        self._delete_failed = False
        # One seal at a time, and none while a direct write or a delete changes what it would write.
        self._seal_lock = threading.Lock()
        self._seal_failed = False
        # The goal bits of the readable generation, per site and definition, as ``stored_goal_bits`` last read them;
        # dropped at each seal's record (this process writes every seal of the database). ``_bits_epoch`` counts the
        # drops, so a read that began before one does not keep what it read.
        self._bits_lock = threading.Lock()
        self._bits: dict[int, dict[str, int]] | None = None
        self._bits_epoch = 0
        self.schema_version = self._migrate()
        self._delete_from = self._delete_target("events")
        self._delete_sessions = self._delete_target("sessions")
        # The active parts of this server's ``sessions`` table (``sessions_local`` on a cluster), as a condition.
        local = "sessions" if self._cluster_of("sessions") is None else "sessions_local"
        self._sessions_parts = f"active AND database = currentDatabase() AND table = '{local}'"
        # The tables copying some rows of ``events`` (``store/clickhouse_schema.py``), and where their deletes go.
        self._copies = {table: self._delete_target(table) for table in ("error_events", "goal_events")}
        self._delete_sealed = self._delete_target("sealed_sessions")
        self._sealed_local = (
            "sealed_sessions" if self._cluster_of("sealed_sessions") is None else "sealed_sessions_local"
        )
        self._delete_users = self._delete_target("sealed_users")
        self._users_local = "sealed_users" if self._cluster_of("sealed_users") is None else "sealed_users_local"
        self._recover()
        self._recover_seals()

    # -- schema and recovery --------------------------------------------------------------------------------------

    def _migrate(self) -> int:
        """Apply the schema migrations this database lacks; return the schema version."""
        self.client.command(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version UInt32, applied_at DateTime64(3, 'UTC') "
            "DEFAULT now64(3)) ENGINE = MergeTree ORDER BY version"
        )
        current = int(self.client.query(f"SELECT max(version) FROM {SCHEMA_TABLE}").result_rows[0][0] or 0)
        cluster = self._cluster_of("events")
        if cluster is not None and current < len(MIGRATIONS):
            # The migrations create plain tables on the node reached; a cluster needs them on every node.
            where = f"the ClickHouse database {self.database} on cluster {cluster}"
            command = f"sitelens clickhouse-schema --cluster {cluster} --database {self.database}"
            if current == 0:  # every schema sitelens prints records its version: this one was made by hand
                raise ValueError(f"{where} records no schema version in {SCHEMA_TABLE}; create it with `{command}`")
            raise ValueError(
                f"{where} is at schema version {current}, this sitelens needs {len(MIGRATIONS)}: with sitelens "
                f"stopped, run once the statements of `{command} --upgrade-from {current}`"
            )
        for version, statements in enumerate(MIGRATIONS, start=1):
            if version <= current:
                continue
            for statement in statements:
                self.client.command(statement)
            self.client.command(f"INSERT INTO {SCHEMA_TABLE} (version) VALUES ({version})")
            log.info("ClickHouse database %s migrated to schema version %d", self.database, version)
            current = version
        return current

    def _has_setting(self, name: str) -> bool:
        rows = self.client.query(
            "SELECT count() FROM system.settings WHERE name = {name:String}", parameters={"name": name}
        ).result_rows
        return bool(rows[0][0])

    def _cluster_of(self, table: str) -> str | None:
        """The cluster ``table`` is a ``Distributed`` table over, or None for a table of this server."""
        rows = self.client.query(
            "SELECT engine, engine_full FROM system.tables WHERE database = currentDatabase() AND name = {t:String}",
            parameters={"t": table},
        ).result_rows
        if rows and rows[0][0] == "Distributed":
            return str(rows[0][1]).split("(", 1)[1].split(",", 1)[0].strip(" '`")
        return None

    def merge_sessions(self) -> dict[str, int]:
        """Merge the ``sessions`` table's parts into one (``OPTIMIZE ... FINAL``; on a cluster, each node's).

        Reads that take whole sessions from the table merge a session's rows across parts with ``FINAL``, which
        costs least on a table in one part: at 100M events, reading it whole took 5.0 s in the eight parts a bulk copy
        settled into, 2.4 s in one (``bench/analysis.md``). The merge takes minutes at that size; reads and inserts
        go on meanwhile, since it runs on a client of its own where the store has one (``merge_client``: a second
        handle on the embedded engine, whose calls on one handle wait for each other; a server client that waits
        hours for the answer instead of the usual 300 s). Returns the active parts of the table on this server
        before and after.
        """
        count = f"SELECT count() FROM system.parts WHERE {self._sessions_parts}"
        before = int(self.client.query(count).result_rows[0][0])
        client = self.client if self._merge_client is None else self._merge_client()
        try:
            client.command(f"OPTIMIZE TABLE {self._delete_sessions} FINAL", settings=_MERGE_SETTINGS)
        finally:
            if client is not self.client:
                client.close()
        return {"parts_before": before, "parts_after": int(self.client.query(count).result_rows[0][0])}

    def sessions_merged_share(self) -> float | None:
        """The share of the ``sessions`` rows on this server that its largest active part holds (the measure
        ``query.facts.MERGED_SHARE`` is compared with); None where this server holds none (an empty table, a node of
        a cluster without a part of it)."""
        largest, total = self.client.query(
            f"SELECT max(rows), sum(rows) FROM system.parts WHERE {self._sessions_parts}"
        ).result_rows[0]
        return int(largest) / int(total) if total else None

    def _delete_target(self, table: str) -> str:
        """Where deletes of ``table`` go: itself, or on a cluster the replicated local tables behind it."""
        cluster = self._cluster_of(table)
        return table if cluster is None else f"{table}_local ON CLUSTER `{cluster}`"

    def _recover(self) -> None:
        """Delete rows whose insert finished but whose log position was never recorded (the log replays them)."""
        applied = self.applied_log_seq()
        params = {"applied": applied}
        # Every table is checked on every start, so a start interrupted between the deletes ends the job.
        for table, target in (*self._copies.items(), ("events", self._delete_from)):
            (orphans,) = self.client.query(
                f"SELECT count() FROM {table} WHERE log_seq > {{applied:UInt64}}", parameters=params
            ).result_rows[0]
            if orphans:
                log.warning(
                    "removing %d rows of %s inserted after event-log position %d; the log replays them",
                    orphans,
                    table,
                    applied,
                )
                self.client.command(
                    f"DELETE FROM {target} WHERE log_seq > {{applied:UInt64}}",
                    parameters=params,
                    settings=_DELETE_SETTINGS,
                )
        # Checked on every start, not only after deleting rows, so a start interrupted in between repairs them too.
        self._rebuild_sessions("max_log_seq > {applied:UInt64}", params)

    def _rebuild_sessions(self, condition: str, params: dict[str, Any]) -> None:
        """Recompute from ``events`` the sessions having a (not yet merged) row where ``condition`` holds.

        Aggregate states cannot lose rows, so the sessions' rows go and their states are written again from the
        events kept. A crash between the two leaves those sessions out of ``sessions`` until they are rebuilt.
        """
        keys = self.client.query(
            f"SELECT DISTINCT site_id, session_id FROM sessions WHERE {condition}", parameters=params
        ).result_rows
        if not keys:
            return
        log.warning("rebuilding %d sessions from their events", len(keys))
        for site_id in sorted({k[0] for k in keys}):
            ids = {"site": site_id, "ids": [k[1] for k in keys if k[0] == site_id]}
            where = "site_id = {site:Int32} AND has({ids:Array(String)}, session_id)"
            self.client.command(
                f"DELETE FROM {self._delete_sessions} WHERE {where}", parameters=ids, settings=_DELETE_SETTINGS
            )
            self.client.command(sessions_fill_sql("sessions", "events", where), parameters=ids)

    @contextmanager
    def _changing(self, kind: str) -> Iterator[None]:
        """Mark a write (``insert`` or ``delete``) under way for ``write_stamp``; one that fails part-way is noted."""
        with self._stamp_lock:
            self._writes_begun += 1
            self._writing = True
        try:
            yield
        except BaseException:
            with self._stamp_lock:
                if kind == "insert":
                    self._insert_failed = True
                else:
                    self._delete_failed = True
            raise
        finally:
            with self._stamp_lock:
                self._writing = False

    def write_stamp(self) -> int | None:
        """The writes begun so far; None while one is under way or one failed part-way and is not undone.

        ClickHouse has no transactions: an insert reaches ``events`` first and the tables its views write (sessions,
        error rows, goal rows) after, so a read during it may see the events without the rest. A read that finds
        the same stamp before and after it saw no such moment (``read/results.py`` keeps only those answers). The
        stamp counts this process's writes, the only ones a database has (see the module docstring).
        """
        with self._stamp_lock:
            if self._writing or self._insert_failed or self._delete_failed:
                return None
            return self._writes_begun

    # -- EventStore -----------------------------------------------------------------------------------------------

    def bulk_load(self) -> AbstractContextManager[None]:
        """Nothing to hold back: the views keep the sessions and goal rows as the events arrive."""
        return nullcontext()

    def append(self, table: pa.Table, *, log_seq: int | None = None) -> int:
        """Insert ``table`` (``EVENT_SCHEMA``) as one Arrow block, then record ``log_seq`` as applied.

        After an insert that failed part-way (its events in, its sessions rows or its position not), the rows above
        the recorded position are deleted first, as a start would: the writer sends a refused batch again, and it
        must not be stored twice.
        """
        if table.num_rows == 0 and log_seq is None:
            return 0
        if table.schema != EVENT_SCHEMA:
            table = table.select(_COLUMN_NAMES).cast(EVENT_SCHEMA)
        stamp = pa.repeat(pa.scalar(log_seq or 0, pa.uint64()), table.num_rows)
        batch = pa.Table.from_arrays([*table.columns, stamp], schema=_INSERT_SCHEMA)
        if log_seq is None and table.num_rows:
            # Rows of no log record are invisible to the seal's position: the sealed rows may no longer describe
            # their sessions, so none is read until the next seal has written them all again, and no seal runs
            # until the rows are in.
            with self._seal_lock:
                self._unseal()
                return self._insert(table, batch, log_seq)
        return self._insert(table, batch, log_seq)

    def _insert(self, table: pa.Table, batch: pa.Table, log_seq: int | None) -> int:
        """``append``'s insert of ``batch`` (``table`` with its ``log_seq`` column) and of the log position."""
        with self._write_lock:
            if self._insert_failed and log_seq is not None:
                with self._changing("insert"):
                    self._recover()
                with self._stamp_lock:
                    self._insert_failed = False
            with self._changing("insert"):
                if table.num_rows:
                    self.client.insert_arrow("events", batch, settings=INSERT_SETTINGS)
                if log_seq is not None:
                    self.client.command(
                        "INSERT INTO event_log_position (id, applied_seq) VALUES (1, {seq:UInt64})",
                        parameters={"seq": log_seq},
                    )
        return table.num_rows

    def applied_log_seq(self) -> int:
        """The newest event-log record whose rows this database holds (0 when none)."""
        return int(self.client.query("SELECT max(applied_seq) FROM event_log_position").result_rows[0][0] or 0)

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[tuple[Any, ...]]:
        """Run ``sql`` (``{name:Type}`` placeholders bound from the ``params`` dict) and return every row."""
        result = self._run(sql, params)
        return [tuple(row) for row in _naive_utc(result.result_rows)]

    def query_dicts(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        """Like ``query`` but each row is a dict keyed by column name."""
        result = self._run(sql, params)
        names = result.column_names
        return [dict(zip(names, row, strict=True)) for row in _naive_utc(result.result_rows)]

    def query_dicts_then(
        self, sql: str, params: Mapping[str, Any], then: Callable[[list[dict[str, Any]]], BoundQuery]
    ) -> list[dict[str, Any]]:
        """``query_dicts`` of ``sql``, then of the query ``then`` makes of its rows. ClickHouse reads share no
        snapshot: each sees the parts of its own moment."""
        return self.query_dicts(*then(self.query_dicts(sql, params)))

    def _run(self, sql: str, params: Sequence[Any] | Mapping[str, Any]) -> Any:
        from clickhouse_connect.driver.exceptions import DatabaseError

        if not self._materialized_ctes:
            sql = _MATERIALIZED_CTE.sub("AS (", sql)
        # query_tz: a time whose type carries no zone is UTC (as session_timezone makes it on the server), never the
        # zone of the host, which is what chdb reports as the server's.
        try:
            return self.client.query(
                sql, parameters=dict(params) if params else None, settings=self._query_settings, query_tz="UTC"
            )
        except DatabaseError as exc:
            if exc.code in _REJECTED_VALUE_CODES:
                raise QueryRejectedError(str(exc)) from exc
            if exc.code == _MEMORY_LIMIT_EXCEEDED:
                raise QueryTooLargeError(str(exc)) from exc
            raise

    def delete_site(self, site_id: int) -> int:
        """Delete every event of ``site_id``; reads that follow no longer see them."""
        params = {"site": site_id}
        # No seal runs meanwhile: one that read the site's sessions before would write them again after.
        with self._seal_lock, self._write_lock, self._changing("delete"):
            (count,) = self.client.query(
                "SELECT count() FROM events WHERE site_id = {site:Int32}", parameters=params
            ).result_rows[0]
            if count:
                self.client.command(
                    f"DELETE FROM {self._delete_from} WHERE site_id = {{site:Int32}}",
                    parameters=params,
                    settings=_DELETE_SETTINGS,
                )
            targets = (*self._copies.values(), self._delete_sessions, self._delete_sealed, self._delete_users)
            for target in (*targets, "goal_definitions", "sealed_goal_bits"):
                self.client.command(
                    f"DELETE FROM {target} WHERE site_id = {{site:Int32}}", parameters=params, settings=_DELETE_SETTINGS
                )
            self._forget_goal_bits()
        return int(count)

    def delete_range(self, site_id: int, start: datetime, end: datetime) -> None:
        """Delete the events of ``site_id`` in ``[start, end)`` (naive UTC); reads that follow no longer see them."""
        params = {"site": site_id, "start": start, "end": end}
        with self._seal_lock, self._write_lock, self._changing("delete"):
            self._unseal()  # the sessions it rebuilds may be sealed
            for target in (self._delete_from, *self._copies.values()):
                self.client.command(
                    f"DELETE FROM {target} WHERE site_id = {{site:Int32}} AND {_RANGE}",
                    parameters=params,
                    settings=_DELETE_SETTINGS,
                )
            # The sessions that had events in the range (a session's parts each cover part of its time).
            self._rebuild_sessions(
                "site_id = {site:Int32} AND first_seen < {end:DateTime64(3, 'UTC')} "
                "AND last_seen >= {start:DateTime64(3, 'UTC')}",
                params,
            )

    # -- sealed sessions -------------------------------------------------------------------------------------------

    def current_seal(self) -> Seal | None:
        """The newest seal, or None before the first."""
        rows = self.client.query(
            "SELECT seal, generation, log_seq, cutoff FROM session_seals ORDER BY seal DESC LIMIT 1"
        ).result_rows
        if not rows:
            return None
        seal, generation, log_seq, cutoff = rows[0]
        return Seal(int(seal), int(generation), int(log_seq), naive_utc(cutoff))

    def seal_sessions(self, cutoff: datetime) -> dict[str, Any]:
        """Write the finished rows of the open sessions with no event at or after ``cutoff`` (naive UTC) into
        ``sealed_sessions``, then record the seal.

        The caller picks ``cutoff`` far enough back that no session idle since can get another event (the session
        timeout and the stamps' lead): a sealed row is then final. The first seal, and the first after a direct
        write, write every such session into a new generation; later ones only the sessions left open by the seal
        before (an event after its log position, or one at or after its cutoff), found by the indexes of
        ``sessions``. A sealed session that got events anyway (a clock set back) is open again: its row goes, and it
        is sealed anew. A crash before the record leaves rows its start deletes (``_recover_seals``). Each row gets
        the goal bits of its site (``store_goal_bits``): a full seal those the sites last asked for, a later one
        those of its generation. Returns the seal's number, its generation, whether it was full, the sessions it
        wrote, and the sites whose goal bits it wrote.
        """
        with self._seal_lock:
            return self._seal(cutoff, again=False)

    def _seal(self, cutoff: datetime, *, again: bool) -> dict[str, Any]:
        """``seal_sessions`` with the seal lock held; ``again``: a full seal in a new generation while the current
        one stays readable until it is recorded (``store_goal_bits``)."""
        if self._seal_failed:
            self._recover_seals()
        current = self.current_seal()
        applied = self.applied_log_seq()
        if current is not None:
            cutoff = max(cutoff, current.cutoff)
        seal = (current.seal if current else 0) + 1
        full = current is None or current.cutoff == NO_CUTOFF or again
        # An unsealing already started the generation a full seal writes.
        generation = 1 if current is None else current.generation + (1 if again else 0)
        params: dict[str, Any] = {"cutoff": cutoff}
        keys = ""
        reopened = False
        if current is not None and not full:
            params |= {"log": current.log_seq, "open_cutoff": current.cutoff}
            keys = f"(site_id, session_id) IN ({_OPEN_KEYS})"
            reopened = self._drop_reopened(generation, keys, params)
        before = self._sealed_count(generation)
        where = "merged.last_seen < {cutoff:DateTime64(3, 'UTC')}"
        # Rows of a seal that fails before its record are deleted before the next writes its own.
        self._seal_failed = True
        if full:
            registry = self._asked_goal_bits()
            self._write_generation_bits(generation, registry)
        else:
            registry = self._generation_goal_bits(generation)
        statements = self._sealing_statements(registry, keys, full, params)
        joined = self.client.query("SELECT count() FROM sessions").result_rows[0][0] if full else 0
        settings = seal_settings(self._memory_limit, -(-int(joined) // len(statements)))
        for statement_keys, masks, mask_params in statements:
            self.client.command(
                sealed_rows_sql("sealed_sessions", generation, seal, where, keys=statement_keys, masks=masks),
                parameters=params | mask_params,
                settings=settings | (self._seal_join_settings if masks else {}),
            )
        self._record_seal(Seal(seal, generation, applied, cutoff))
        self._seal_failed = False
        if not full:
            # A read holding a seal from before the last full one may still read the generation before; after
            # a seal more, none does.
            self._drop_generations_before(generation)
        written = self._sealed_count(generation) - before
        self._build_users(generation, seal, due=full or reopened, wrote=written > 0)
        sites = sum(1 for pairs in registry.values() if pairs)
        return {"seal": seal, "generation": generation, "full": full, "sessions": written, "goal_sites": sites}

    def _sealing_statements(
        self, registry: Registry, keys: str, full: bool, params: Mapping[str, Any]
    ) -> list[tuple[str, str, dict[str, Any]]]:
        """``(keys, masks, parameters)`` of each statement a seal writes its rows with (``sealed_rows_sql``).

        Without goal bits to write, one statement. With them, each session's mask is grouped from its completing
        events and joined to its row (``goal_masks_sql``): a full seal in one statement, or beyond
        ``SEAL_SLICE_EVENTS`` events in slices of the sessions by a hash of their ids; a later seal reads the events
        of the sessions it writes, from the first of them on.
        """
        p = Params()
        masks = {
            site: goal_mask([(bit, registry_goal(text)) for bit, text in pairs], CLICKHOUSE, p)
            for site, pairs in registry.items()
            if pairs
        }
        if not masks:
            return [(keys, "", {})]
        if not full:
            (first,) = self.client.query(
                f"SELECT min(first_seen) FROM sessions WHERE {keys}", parameters=dict(params)
            ).result_rows[0]
            if first is None:
                return [(keys, "", {})]
            since = CLICKHOUSE.time_bound("timestamp", ">=", "{open_first:DateTime64(3, 'UTC')}")
            sql, values = CLICKHOUSE.bind(p.query(goal_masks_sql(masks, f"{keys} AND {since}")))
            return [(keys, sql, {**values, "open_first": naive_utc(first)})]
        (events,) = self.client.query("SELECT count() FROM events").result_rows[0]
        slices = max(1, -(-int(events) // SEAL_SLICE_EVENTS))
        statements = []
        for k in range(slices):
            part = f"cityHash64(session_id) % {slices} = {k}" if slices > 1 else "true"
            sql, values = CLICKHOUSE.bind(p.query(goal_masks_sql(masks, part)))
            statements.append((part if slices > 1 else keys, sql, dict(values)))
        return statements

    def _record_seal(self, seal: Seal) -> None:
        self._forget_goal_bits()
        self.client.command(
            "INSERT INTO session_seals (seal, generation, log_seq, cutoff) "
            "VALUES ({seal:UInt64}, {generation:UInt32}, {log:UInt64}, {cutoff:DateTime64(3, 'UTC')})",
            parameters={"seal": seal.seal, "generation": seal.generation, "log": seal.log_seq, "cutoff": seal.cutoff},
        )

    def _sealed_count(self, generation: int) -> int:
        rows = self.client.query(
            "SELECT count() FROM sealed_sessions WHERE generation = {g:UInt32}", parameters={"g": generation}
        ).result_rows
        return int(rows[0][0])

    def _drop_reopened(self, generation: int, keys: str, params: dict[str, Any]) -> bool:
        """Delete the sealed rows of ``generation`` of open sessions (``keys``): only a clock set back gives one.
        Their users' builds go first: they name the sessions' users as sealed. Returns whether any went."""
        where = f"generation = {{generation:UInt32}} AND {keys}"
        params = {**params, "generation": generation}
        (count,) = self.client.query(
            f"SELECT count() FROM sealed_sessions WHERE {where}", parameters=params
        ).result_rows[0]
        if count:
            log.warning("%d sealed sessions got events after they were sealed; sealing them again", count)
            self.client.command(
                "DELETE FROM sealed_user_builds WHERE generation = {generation:UInt32}",
                parameters=params,
                settings=_DELETE_SETTINGS,
            )
            self.client.command(
                f"DELETE FROM {self._delete_sealed} WHERE {where}", parameters=params, settings=_DELETE_SETTINGS
            )
        return bool(count)

    def _drop_generations_before(self, generation: int) -> None:
        """Drop the partitions of the generations older than ``generation`` (a read may still use that one), of the
        sealed rows and of their goal definitions."""
        for local, target in ((self._sealed_local, self._delete_sealed), ("sealed_goal_bits", "sealed_goal_bits")):
            rows = self.client.query(
                "SELECT DISTINCT partition FROM system.parts WHERE database = currentDatabase() "
                "AND table = {t:String} AND active",
                parameters={"t": local},
            ).result_rows
            for (partition,) in rows:
                if int(partition) < generation:
                    self.client.command(f"ALTER TABLE {target} DROP PARTITION {int(partition)}")
        self._drop_builds(generation)

    def _build_users(self, generation: int, seal: int, *, due: bool, wrote: bool) -> None:
        """Write ``generation``'s users of the rows sealed up to ``seal`` as its build of ``sealed_users``, where
        ``due`` (a full seal, one that dropped reopened rows), where the generation has none, or where the rows
        sealed since its last build pass ``USERS_BUILD_SHARE`` of its rows (counted only after a seal that ``wrote``
        rows: one writing none changes nothing). The build is recorded once written whole; reads use the newest
        recorded one (``query/user_rows.py``)."""
        built, last = self.client.query(
            "SELECT count(), max(seal) FROM sealed_user_builds WHERE generation = {g:UInt32}",
            parameters={"g": generation},
        ).result_rows[0]
        if built and not due:
            if not wrote:
                return
            total, since = self.client.query(
                "SELECT count(), countIf(seal > {s:UInt64}) FROM sealed_sessions WHERE generation = {g:UInt32}",
                parameters={"g": generation, "s": int(last)},
            ).result_rows[0]
            if since <= USERS_BUILD_SHARE * total:
                return
        self.client.command(f"ALTER TABLE {self._delete_users} DROP PARTITION {int(seal)}", settings=_MERGE_SETTINGS)
        self.client.command(
            users_build_sql("sealed_users", generation, seal), settings=seal_settings(self._memory_limit, 0)
        )
        self.client.insert("sealed_user_builds", [(seal, generation)], column_names=["seal", "generation"])
        # The generation before stays readable until the next seal (``_drop_generations_before``).
        self._drop_builds(generation - 1)

    def _drop_builds(self, generation: int) -> None:
        """Drop the builds of the generations older than ``generation``, those of it but its newest two (a read may
        still use the one before), and the partitions of builds never recorded."""
        recorded = self.client.query("SELECT seal, generation FROM sealed_user_builds").result_rows
        newest: dict[int, list[int]] = {}
        for seal, built_for in sorted(recorded, reverse=True):
            newest.setdefault(int(built_for), []).append(int(seal))
        keep = {seal for g, seals in newest.items() if g >= generation for seal in seals[:2]}
        gone = sorted({int(seal) for seal, _ in recorded} - keep)
        if gone:
            self.client.command(
                "DELETE FROM sealed_user_builds WHERE seal IN {gone:Array(UInt64)}",
                parameters={"gone": gone},
                settings=_DELETE_SETTINGS,
            )
        partitions = self.client.query(
            "SELECT DISTINCT partition FROM system.parts WHERE database = currentDatabase() "
            "AND table = {t:String} AND active",
            parameters={"t": self._users_local},
        ).result_rows
        for (partition,) in partitions:
            if int(partition) not in keep:
                self.client.command(f"ALTER TABLE {self._delete_users} DROP PARTITION {int(partition)}")

    def _unseal(self) -> None:
        """Record a seal holding no sessions (``NO_CUTOFF``), in a new generation (seal lock held)."""
        current = self.current_seal()
        if current is None or current.cutoff == NO_CUTOFF:
            return
        self._record_seal(Seal(current.seal + 1, current.generation + 1, current.log_seq, NO_CUTOFF))

    def _recover_seals(self) -> None:
        """Delete sealed rows of a seal that never got recorded (the process stopped during it)."""
        current = self.current_seal()
        newest = current.seal if current else 0
        params = {"seal": newest}
        (orphans,) = self.client.query(
            "SELECT count() FROM sealed_sessions WHERE seal > {seal:UInt64}", parameters=params
        ).result_rows[0]
        if orphans:
            log.warning("removing %d sealed sessions of a seal never recorded", orphans)
            self.client.command(
                f"DELETE FROM {self._delete_sealed} WHERE seal > {{seal:UInt64}}",
                parameters=params,
                settings=_DELETE_SETTINGS,
            )
        self._seal_failed = False

    def latest_sessions(self, since: datetime) -> list[tuple[int, str, str, datetime]]:
        """The newest session of each visitor seen since ``since`` (recovers live sessions after a restart)."""
        since_bound = CLICKHOUSE.time_bound("timestamp", ">=", "{since:DateTime64(3, 'UTC')}")
        return self.query(
            "SELECT site_id, user_id, argMax(session_id, timestamp), max(timestamp) FROM events "
            f"WHERE {since_bound} AND session_id != '' GROUP BY site_id, user_id",
            {"since": since},
        )

    def stored_goal_bits(self, site_id: int, goals: Sequence[GoalSpec]) -> list[int] | None:
        """Each goal's bit of the sealed rows' ``goal_mask`` when the current seal is readable and its generation
        was written with a bit for every one of ``goals``, else None. A read checks the generation it binds
        (``query.goals.build_goals_stored_query``): a newer one may give the bits to other definitions."""
        bits = self._readable_goal_bits().get(site_id, {})
        found = [bits.get(goal_definition(goal)) for goal in goals]
        return None if any(bit is None for bit in found) else [bit for bit in found if bit is not None]

    def _readable_goal_bits(self) -> dict[int, dict[str, int]]:
        """Per site, ``{definition: bit}`` of the current seal's generation (none where it is not readable): kept
        until the next seal's record, as every goal read asks (15 ms a query on chdb at 10M events)."""
        with self._bits_lock:
            if self._bits is not None:
                return self._bits
            epoch = self._bits_epoch
        rows = self.client.query(
            "SELECT site_id, bit, definition FROM sealed_goal_bits WHERE generation = "
            "(SELECT argMax(generation, seal) FROM session_seals) "
            "AND (SELECT argMax(cutoff, seal) FROM session_seals) > {none:DateTime64(3, 'UTC')}",
            parameters={"none": NO_CUTOFF},
        ).result_rows
        readable = {site: {text: bit for bit, text in pairs} for site, pairs in _registry(rows).items()}
        with self._bits_lock:
            if self._bits_epoch == epoch:
                self._bits = readable
        return readable

    def _forget_goal_bits(self) -> None:
        with self._bits_lock:
            self._bits = None
            self._bits_epoch += 1

    def store_goal_bits(self, site_id: int, goals: Sequence[GoalSpec]) -> None:
        """Record the definitions of the site's ``goals`` (all of them, in the order they should get bits) as what
        the site asks for, and where the current seal's generation lacks one of them, seal every finished session
        again into a new generation with them (the current one stays readable until that seal is recorded).

        A definition the site asked for before keeps its bit. Without a readable seal, the next full seal writes
        them. At 100M events with ten goals that seal took 61 s, against 46 s without bits (``bench/analysis.md``).
        """
        with self._seal_lock:
            asked = self._asked_goal_bits()
            previous = asked.get(site_id, ())
            plan = plan_bits([(bit, text, True) for bit, text in previous], goals)
            wanted = sorted([*((b, t) for b, t in previous if b not in plan.dropped), *plan.added])
            if wanted != sorted(previous):
                self._ask_goal_bits(site_id, wanted)
            current = self.current_seal()
            if current is None or current.cutoff == NO_CUTOFF:
                return  # the next seal is full and writes them
            written = {text for _, text in self._generation_goal_bits(current.generation).get(site_id, ())}
            if all(text in written for _, text in wanted):
                return
            self._seal(current.cutoff, again=True)

    def _asked_goal_bits(self) -> dict[int, list[tuple[int, str]]]:
        """Per site, the ``(bit, definition)`` pairs it asked for last (``goal_definitions``)."""
        return _registry(
            self.client.query(
                "SELECT site_id, bit, definition FROM goal_definitions WHERE (site_id, asked) IN "
                "(SELECT site_id, max(asked) FROM goal_definitions GROUP BY site_id) AND definition != '' "
                "ORDER BY site_id, bit"
            ).result_rows
        )

    def _ask_goal_bits(self, site_id: int, pairs: Sequence[tuple[int, str]]) -> None:
        """Record ``pairs`` as what ``site_id`` asks for (a row with no definition where it asks for none)."""
        (asked,) = self.client.query("SELECT max(asked) FROM goal_definitions").result_rows[0]
        number = int(asked or 0) + 1
        values = [(site_id, number, bit, text) for bit, text in pairs] or [(site_id, number, 0, "")]
        self.client.insert("goal_definitions", values, column_names=["site_id", "asked", "bit", "definition"])

    def _generation_goal_bits(self, generation: int) -> dict[int, list[tuple[int, str]]]:
        """Per site, the ``(bit, definition)`` pairs ``generation``'s masks were written with."""
        return _registry(
            self.client.query(
                "SELECT site_id, bit, definition FROM sealed_goal_bits WHERE generation = {g:UInt32} "
                "ORDER BY site_id, bit",
                parameters={"g": generation},
            ).result_rows
        )

    def _write_generation_bits(self, generation: int, registry: Registry) -> None:
        """Record ``registry`` as the definitions of ``generation`` (replacing those of a full seal of it that was
        never recorded)."""
        self.client.command(f"ALTER TABLE sealed_goal_bits DROP PARTITION {int(generation)}", settings=_MERGE_SETTINGS)
        values = [(generation, site, bit, text) for site, pairs in sorted(registry.items()) for bit, text in pairs]
        if values:
            self.client.insert("sealed_goal_bits", values, column_names=["generation", "site_id", "bit", "definition"])

    def count(self, site_id: int | None = None) -> int:
        """Number of stored events (of one site, or all)."""
        if site_id is None:
            return int(self.query("SELECT count() FROM events")[0][0])
        return int(self.query("SELECT count() FROM events WHERE site_id = {site:Int32}", {"site": site_id})[0][0])

    def close(self) -> None:
        """Release the client (inserts are already on disk: there is nothing to flush)."""
        with self._write_lock:
            self.client.close()
        if self._on_close is not None:
            self._on_close()
