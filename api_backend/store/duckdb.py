"""The default event store: one DuckDB file owned by this process.

Writes arrive only through ``append`` (called by the batch writer's thread or by seeding); each read
takes its own cursor and reads its whole result, as DuckDB 2.x requires when threads share a connection.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from api_backend.query.goals import GoalSpec, goal_definition
from api_backend.query.sql import Query
from api_backend.store.events import (
    EVENT_COLUMNS,
    EVENT_SCHEMA,
    BoundQuery,
    QueryRejectedError,
    QueryTooLargeError,
)
from api_backend.store.goal_bits import (
    GOAL_BITS_DDL,
    build_bit_clear,
    build_bit_fill,
    build_bit_ready,
    build_bit_register,
    build_bits_dropped,
    fill_slices,
    plan_bits,
)
from api_backend.store.sessions import (
    ADDED_COLUMNS,
    SESSIONS_DDL,
    build_chain_pass,
    build_sessions_fill,
    build_sessions_upgrade,
    build_sessions_upsert,
    build_unbounded_list,
)

__all__ = ["DuckDBEventStore"]

log = logging.getLogger(__name__)

_SQL_TYPES = {
    pa.string(): "VARCHAR NOT NULL DEFAULT ''",
    pa.int32(): "INTEGER NOT NULL DEFAULT 0",
    pa.float64(): "DOUBLE",
}


def _column_sql(name: str, typ: pa.DataType) -> str:
    if name == "timestamp":
        return '"timestamp" TIMESTAMP NOT NULL'
    return f'"{name}" {_SQL_TYPES[typ]}'


# A DuckDB file is three 4 KiB headers followed by its blocks. A file shorter than the blocks it stores data in was
# cut short (a copy or a disk that ran out); DuckDB opens it anyway and fails only when a query reaches a lost block.
# The header's block count is no measure: DuckDB shortens the file when blocks at its end are freed (a dropped table,
# a deleted site) and the header still counts them among the free ones. So the check takes the highest block any
# table's data lies in (``pragma_storage_info``: 0.13 s for a 10M-event file) and the number of blocks in use.
_HEADER_BYTES = 3 * 4096


def _dicts(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every row of the statement ``cur`` ran, as a dict keyed by column name."""
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _refuse_cut_short(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """Close ``con`` and raise ``duckdb.IOException`` when the file at ``path`` lacks blocks its data lies in."""
    row = con.execute(
        "SELECT block_size, used_blocks FROM pragma_database_size() WHERE database_name = current_database()"
    ).fetchone()
    if row is None:
        return
    block_size, blocks = int(row[0]), int(row[1])
    tables = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'"
    ).fetchall()
    for (table,) in tables:
        (highest,) = con.execute("SELECT max(block_id) FROM pragma_storage_info(?)", [table]).fetchone() or (None,)
        if highest is not None:
            blocks = max(blocks, int(highest) + 1)
    expected = _HEADER_BYTES + block_size * blocks
    actual = Path(path).stat().st_size
    if actual < expected:
        con.close()
        raise duckdb.IOException(f"the file holds {actual:,} bytes, but its data needs {expected:,}: it was cut short")


# Events wait in ``sessions_pending`` until this many have gathered, then are folded into ``sessions`` at once:
# folding costs about 45 ms whatever the batch's size plus about 6 us per event, so folding every small commit
# (a tenth of a second of single events) would cost a large share of a core; 5,000 events fold in about 90 ms, short
# enough for a read that has to fold them first.
FOLD_ROWS = 5_000
# DuckDB's automatic checkpoint did not run under the server's commits: the write-ahead log grew to 824 MB in 40 s of
# ingestion while the database file stayed empty, so a restart would replay all of it. The store checkpoints itself
# after a commit that leaves the log larger than this.
CHECKPOINT_WAL_BYTES = 256 * 2**20
# The sessions whose previous session in their user's chain is unknown (``store/sessions.py``) are looked up together
# once folds have brought this many events since the last lookup: the lookup reads the users of every stored session
# (0.4-0.8 s at 26M sessions, so 2-4 us per event folded), while reads take the users of the unknown ones one by one,
# as they take the edge sessions'. Those stay below the sessions of this many events. A bulk load (``bulk_load``)
# looks them up once at its end instead: in a seeding of 100M events the lookups every 200,000 events took 62 s in
# all (0.1 s each at first, 0.9 s near the end), the one lookup of every session 14-18 s.
CHAIN_ROWS = 200_000
# The rows ``error_events`` copies.
_ERROR_ROWS = "type = 'error'"
# A ``sessions`` table from an earlier version is copied this many sessions at a time (``build_sessions_upgrade``).
UPGRADE_SLICE_SESSIONS = 1_000_000
# A read that names the ``sessions`` table folds the pending events first, so it sees every stored event.
_READS_SESSIONS = re.compile(r"\b(?:FROM|JOIN)\s+sessions\b", re.IGNORECASE)


class DuckDBEventStore:
    """``EventStore`` on an embedded DuckDB database file (or ``:memory:``).

    ``sessions`` (``store/sessions.py``) holds per-session facts of every stored event. A commit of fewer than
    ``FOLD_ROWS`` events also copies them into ``sessions_pending``, and the facts are folded in once that table
    holds ``FOLD_ROWS`` events, or before any query that reads ``sessions``: a read never sees the table behind
    the events, and both tables change in the transaction that stores the events or empties the pending ones.

    ``error_events`` holds a copy of the error rows (``type = 'error'``), written in the same transaction as the
    events, for the error routes (``Dialect.error_rows``): they read about 1% of the rows instead of testing the type
    of every event in the window.
    """

    dialect = "duckdb"

    def __init__(self, path: str | Path, *, threads: int | None = None, memory_limit: str | None = None) -> None:
        path = str(path)
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        config: dict[str, Any] = {}
        if threads:
            config["threads"] = threads
        if memory_limit:
            config["memory_limit"] = memory_limit
        self.path = path
        self._con = duckdb.connect(path, config=config)
        if path != ":memory:":
            _refuse_cut_short(self._con, path)
        self._write_lock = threading.Lock()
        self._registering = threading.Lock()  # one registration of goal bits at a time
        self._closed = False
        columns = ",\n  ".join(_column_sql(name, typ) for name, typ in EVENT_COLUMNS)
        self._con.execute(f"CREATE TABLE IF NOT EXISTS events (\n  {columns}\n)")
        # The newest event-log record whose rows this database holds (see ``store/eventlog.py``).
        self._con.execute("CREATE TABLE IF NOT EXISTS event_log_position (applied_seq BIGINT NOT NULL)")
        if self._con.execute("SELECT count(*) FROM event_log_position").fetchone() == (0,):
            self._con.execute("INSERT INTO event_log_position VALUES (0)")
        self._con.execute(f"CREATE TABLE IF NOT EXISTS sessions_pending (\n  {columns}\n)")
        if not self._has_table("error_events"):
            # A file from before the copy gets it filled from the events stored, in the transaction creating it.
            self._in_one_transaction(
                [
                    Query(f"CREATE TABLE error_events (\n  {columns}\n)"),
                    Query(f"INSERT INTO error_events SELECT * FROM events WHERE {_ERROR_ROWS}"),
                ]
            )
        masks_kept = "goal_mask" in self._session_columns()
        self._open_sessions()
        self._con.execute(GOAL_BITS_DDL)
        if not masks_kept:  # the masks were just added (all 0) or the table filled: no goal has a bit
            self._con.execute("DELETE FROM goal_bits")
        self._pending_rows = int((self._con.execute("SELECT count(*) FROM sessions_pending").fetchone() or (0,))[0])
        self._unchained_rows = 0  # events folded since the last chain lookup
        self._bulk_loads = 0  # bulk loads under way: the chain lookups wait for the last one's end
        (unknown,) = self._con.execute("SELECT count(*) FROM sessions WHERE prev_first_seen IS NULL").fetchone() or (0,)
        if unknown:  # a table that just got the column, or was filled, or the lookup due at a stop
            self._look_up_chains()
        # Per site, ``(bit, definition, ready)`` as in ``goal_bits``; each list is replaced, never changed in place.
        self._goal_bits: dict[int, list[tuple[int, str, bool]]] = {}
        for site_id, bit, text, ready in self._con.execute("SELECT * FROM goal_bits ORDER BY site_id, bit").fetchall():
            self._goal_bits.setdefault(int(site_id), []).append((int(bit), str(text), bool(ready)))
        self._build_folds()

    def _build_folds(self) -> None:
        """The fold statements, setting every bit ``goal_bits`` registers (built again whenever it changes)."""
        registry = {site: [(bit, text) for bit, text, _ in rows] for site, rows in self._goal_bits.items()}
        self._fold_incoming = build_sessions_upsert("incoming_batch", registry)
        self._fold_pending = [
            *build_sessions_upsert("sessions_pending", registry),
            Query("DELETE FROM sessions_pending"),
        ]

    def _open_sessions(self) -> None:
        """Create the per-session facts table and the list of sessions a fold must search for in full; a database from
        before either existed gets it filled once, here."""
        filled = not self._has_table("sessions")
        if filled:
            # The fill covers every stored event, so none is left pending.
            statements = [Query(SESSIONS_DDL), *build_sessions_fill(), Query("DELETE FROM sessions_pending")]
            self._in_one_transaction(statements)
        else:
            self._add_session_columns()
        if filled or not self._has_table("sessions_unbounded"):  # the list describes the table's rows
            self._in_one_transaction([Query("DROP TABLE IF EXISTS sessions_unbounded"), *build_unbounded_list()])

    def _has_table(self, name: str) -> bool:
        (count,) = self._con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main' AND table_name = ?",
            [name],
        ).fetchone() or (0,)
        return bool(count)

    def _session_columns(self) -> set[str]:
        """The columns of the ``sessions`` table (none when there is no table)."""
        return {
            name
            for (name,) in self._con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
                "AND schema_name = 'main' AND table_name = 'sessions'"
            ).fetchall()
        }

    def _add_session_columns(self) -> None:
        """A ``sessions`` table from an earlier version gets the columns added since, filled for every session."""
        present = self._session_columns()
        if set(ADDED_COLUMNS) <= present:
            return
        (count,) = self._con.execute("SELECT count(*) FROM sessions").fetchone() or (0,)
        slices = -(-int(count) // UPGRADE_SLICE_SESSIONS)
        bounds: list[datetime] = []
        if slices > 1:
            quantiles = [i / slices for i in range(1, slices)]
            row = self._con.execute("SELECT quantile_disc(first_seen, ?) FROM sessions", [quantiles]).fetchone()
            bounds = sorted(set(row[0])) if row and row[0] else []
        self._in_one_transaction(build_sessions_upgrade(present, bounds))

    def _in_one_transaction(self, statements: list[Query], *, incoming: pa.Table | None = None) -> None:
        """Run ``statements`` in one transaction: all of them take effect or none does.

        ``incoming`` is visible to them as the relation ``incoming_batch``.
        """
        cur = self._con.cursor()
        try:
            if incoming is not None:
                cur.register("incoming_batch", incoming)
            cur.execute("BEGIN TRANSACTION")
            try:
                for statement in statements:
                    cur.execute(statement.sql, statement.params)
                cur.execute("COMMIT")
            except BaseException:
                try:
                    cur.execute("ROLLBACK")
                except duckdb.Error:
                    pass  # a failed COMMIT has already ended the transaction
                raise
        finally:
            cur.close()

    def append(self, table: pa.Table, *, log_seq: int | None = None) -> int:
        """Insert ``table`` and keep ``sessions`` up to date in one transaction; DuckDB syncs its log on commit.

        With ``log_seq``, the same transaction records that the event log is applied up to that record.
        """
        if table.num_rows == 0 and log_seq is None:
            return 0
        if table.schema != EVENT_SCHEMA:
            table = table.select([name for name, _ in EVENT_COLUMNS]).cast(EVENT_SCHEMA)
        with self._write_lock:
            # A table under ``FOLD_ROWS`` rows (the server's commits of single events) is copied once and read from
            # the copy. Each scan of the registered Arrow table takes the GIL several times, and in a server whose
            # event loop holds it each wait may last the switch interval: at 4,000 single events/s the two scans of
            # such a commit took 17 ms each, the copy 18 ms and each read of it 5 ms. A larger table is read as it
            # is: copying it costs more than it saves (0.45 s per million rows, where the scans cost little).
            statements = []
            source = "incoming_batch"
            if table.num_rows < FOLD_ROWS:
                source = "incoming_rows"
                statements.append(Query(f"CREATE OR REPLACE TEMP TABLE {source} AS SELECT * FROM incoming_batch"))
            statements.append(Query(f"INSERT INTO events SELECT * FROM {source}"))
            if table.num_rows and pc.any(pc.equal(table.column("type"), "error")).as_py():
                statements.append(Query(f"INSERT INTO error_events SELECT * FROM {source} WHERE {_ERROR_ROWS}"))
            pending, folded = self._pending_rows, 0
            if table.num_rows >= FOLD_ROWS and not pending:
                statements += self._fold_incoming
                folded = table.num_rows
            elif table.num_rows:
                statements.append(Query(f"INSERT INTO sessions_pending SELECT * FROM {source}"))
                pending += table.num_rows
                if pending >= FOLD_ROWS:
                    statements += self._fold_pending
                    pending, folded = 0, pending
            if log_seq is not None:
                statements.append(Query("UPDATE event_log_position SET applied_seq = $seq", {"seq": log_seq}))
            self._in_one_transaction(statements, incoming=table)
            self._pending_rows = pending
            self._folded(folded)
            self._checkpoint_if_due()
        return table.num_rows

    def _fold_pending_rows(self) -> None:
        """Fold the pending events into ``sessions`` (under the write lock)."""
        self._in_one_transaction(self._fold_pending)
        self._folded(self._pending_rows)
        self._pending_rows = 0

    def _folded(self, rows: int) -> None:
        """Count ``rows`` events just folded; look the chains up once ``CHAIN_ROWS`` have been, outside a bulk load
        (under the write lock)."""
        self._unchained_rows += rows
        if self._unchained_rows >= CHAIN_ROWS and not self._bulk_loads:
            self._look_up_chains()

    def _look_up_chains(self) -> None:
        """Give every session whose previous session is unknown its value (``build_chain_pass``).

        It runs after the events it follows are committed, so a failure (the memory limit, a full disk) must not look
        like a refused write: it is logged, the chains stay unknown (reads stay exact, looking their users up), and
        the lookup runs again once as many events more have been folded.
        """
        self._unchained_rows = 0
        try:
            self._in_one_transaction(build_chain_pass())
        except duckdb.Error as exc:
            log.warning("looking up the sessions' chains in %s postponed: %s", self.path, exc)

    def chain_sessions(self) -> None:
        """Fold the pending events and look up every unknown previous session now, however few are unknown."""
        with self._write_lock:
            if self._pending_rows:
                self._fold_pending_rows()
            self._look_up_chains()

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """While many events are appended by one job (``sitelens seed``), look the chains up once, at the end.

        Each lookup reads the users of every stored session, so a load repeating it every ``CHAIN_ROWS`` events
        spends time growing with the square of its size. The lookup held back runs when the load ends, however it
        ends; chains left unknown by a crash in between are looked up when the store is next opened.
        """
        with self._write_lock:
            self._bulk_loads += 1
        try:
            yield
        finally:
            with self._write_lock:
                self._bulk_loads -= 1
                self._folded(0)  # the lookup the load held back, when it is due

    def _checkpoint_if_due(self) -> None:
        """Move the write-ahead log into the database file once it passes ``CHECKPOINT_WAL_BYTES``."""
        wal = Path(f"{self.path}.wal")
        try:
            due = self.path != ":memory:" and wal.stat().st_size > CHECKPOINT_WAL_BYTES
        except FileNotFoundError:
            return
        if due:
            try:
                self._con.execute("CHECKPOINT")
            except duckdb.Error as exc:  # the events are committed: a failed checkpoint must not look like a refusal
                log.warning("checkpoint of %s postponed to a later commit: %s", self.path, exc)

    def applied_log_seq(self) -> int:
        """The newest event-log record this database holds (0 when none)."""
        return int(self.query("SELECT max(applied_seq) FROM event_log_position")[0][0] or 0)

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[tuple[Any, ...]]:
        """Run ``sql`` with bound ``params`` on a fresh cursor and fetch every row."""
        with self._reading(sql) as cur:
            return cur.execute(sql, params).fetchall()

    def query_dicts(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        """Run ``sql`` and return rows as dicts keyed by column name."""
        with self._reading(sql) as cur:
            return _dicts(cur.execute(sql, params))

    def query_dicts_then(
        self, sql: str, params: Mapping[str, Any], then: Callable[[list[dict[str, Any]]], BoundQuery]
    ) -> list[dict[str, Any]]:
        """``query_dicts`` of ``sql``, then of the query ``then`` makes of its rows, in one transaction: the second
        sees the events the first saw."""
        with self._reading(sql, snapshot=True) as cur:
            second, second_params = then(_dicts(cur.execute(sql, params)))
            return _dicts(cur.execute(second, second_params))

    @contextmanager
    def _reading(self, sql: str, *, snapshot: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor for one read; engine errors become the store's own.

        A read of ``sessions`` (or any read given ``snapshot``) runs in a transaction whose snapshot is taken with
        no events pending (DuckDB takes it when the transaction first reads a table): otherwise a commit between the
        fold and the read could show it events the table does not describe yet.
        """
        cur = self._con.cursor()
        snapshot = snapshot or _READS_SESSIONS.search(sql) is not None
        try:
            if snapshot:
                with self._write_lock:
                    if self._pending_rows:
                        self._fold_pending_rows()
                    cur.execute("BEGIN TRANSACTION")
                    cur.execute("SELECT count(*) FROM sessions_pending").fetchall()
            yield cur
        except duckdb.InvalidInputException as exc:  # builders bind every value, so a bad input is a bound one
            raise QueryRejectedError(str(exc)) from exc
        except duckdb.OutOfMemoryException as exc:
            raise QueryTooLargeError(str(exc)) from exc
        finally:
            if snapshot:
                try:
                    cur.execute("ROLLBACK")  # it only read
                except duckdb.Error:
                    pass  # a failed statement has already ended the transaction
            cur.close()

    def delete_site(self, site_id: int) -> int:
        """Delete every event of ``site_id`` and its sessions, in one transaction."""
        with self._write_lock:
            (count,) = self._con.execute("SELECT count(*) FROM events WHERE site_id = ?", [site_id]).fetchone() or (0,)
            site = {"site": site_id}
            self._in_one_transaction(
                [
                    Query("DELETE FROM events WHERE site_id = $site", site),
                    Query("DELETE FROM error_events WHERE site_id = $site", site),
                    Query("DELETE FROM sessions WHERE site_id = $site", site),
                    Query("DELETE FROM sessions_pending WHERE site_id = $site", site),
                    Query("DELETE FROM sessions_unbounded WHERE site_id = $site", site),
                    Query("DELETE FROM goal_bits WHERE site_id = $site", site),
                ]
            )
            if self._goal_bits.pop(site_id, None):
                self._build_folds()
            (pending,) = self._con.execute("SELECT count(*) FROM sessions_pending").fetchone() or (0,)
            self._pending_rows = int(pending)
        return int(count)

    def stored_goal_bits(self, site_id: int, goals: Sequence[GoalSpec]) -> list[int] | None:
        """Each goal's bit of the sessions' ``goal_mask`` when every one of ``goals`` has a ready one, else None.

        Without the write lock (a fill may hold it): the site's list is replaced whole, never changed in place.
        """
        bits = {text: bit for bit, text, ready in self._goal_bits.get(site_id, ()) if ready}
        found = [bits.get(goal_definition(goal)) for goal in goals]
        return None if any(bit is None for bit in found) else [bit for bit in found if bit is not None]

    def store_goal_bits(self, site_id: int, goals: Sequence[GoalSpec]) -> None:
        """Give the goals of ``site_id`` (all of them, in the order they should get the bits) ready bits of
        ``goal_mask``: new definitions are registered, then filled one slice of the site's events at a time, each
        slice a transaction under the write lock (``store/goal_bits.py``)."""
        with self._registering:
            with self._write_lock:
                if self._closed:
                    return
                plan = plan_bits(self._goal_bits.get(site_id, ()), goals)
                if plan.dropped:
                    self._in_one_transaction([build_bits_dropped(site_id, plan.dropped)])
                    rows = [row for row in self._goal_bits.get(site_id, ()) if row[0] not in plan.dropped]
                    self._set_bits(site_id, rows)
            if not plan.added and not plan.unfilled:
                return
            (count, first, last), *_ = self.query(
                "SELECT count(*), min(timestamp), max(timestamp) FROM events WHERE site_id = ?", [site_id]
            )
            slices = fill_slices(int(count), first, last)

            def in_slices(statement: Callable[[datetime | None, datetime | None], Query]) -> bool:
                for since, until in slices:
                    with self._write_lock:
                        if self._closed:  # the server is stopping: the next registration does it again
                            return False
                        self._in_one_transaction([statement(since, until)])
                return True

            for bit, text in plan.added:
                if not in_slices(partial(build_bit_clear, site_id, bit)):
                    return
                with self._write_lock:
                    if self._closed:
                        return
                    self._in_one_transaction(build_bit_register(site_id, bit, text))
                    self._set_bits(site_id, [*self._goal_bits.get(site_id, ()), (bit, text, False)])
            for bit, text in [*plan.unfilled, *plan.added]:
                if not in_slices(partial(build_bit_fill, site_id, bit, text)):
                    return
                with self._write_lock:
                    if (bit, text, False) in self._goal_bits.get(site_id, ()):  # not dropped by a site's deletion
                        self._in_one_transaction([build_bit_ready(site_id, bit, text)])
                        rows = self._goal_bits[site_id]
                        self._set_bits(site_id, [(b, t, r or (b, t) == (bit, text)) for b, t, r in rows])

    def _set_bits(self, site_id: int, rows: list[tuple[int, str, bool]]) -> None:
        """Record the site's committed ``goal_bits`` rows and build the folds for them (under the write lock)."""
        self._goal_bits[site_id] = sorted(rows)
        self._build_folds()

    def latest_sessions(self, since: datetime) -> list[tuple[int, str, str, datetime]]:
        """The newest session of each visitor seen since ``since`` (recovers live sessions after a restart)."""
        return self.query(
            "SELECT site_id, user_id, arg_max(session_id, timestamp), max(timestamp) "
            "FROM events WHERE timestamp >= ? AND session_id <> '' GROUP BY site_id, user_id",
            [since],
        )

    def write_stamp(self) -> int | None:
        """0: every write is one transaction, which a read sees whole or not at all."""
        return 0

    def count(self, site_id: int | None = None) -> int:
        """Number of stored events (of one site, or all)."""
        if site_id is None:
            return int(self.query("SELECT count(*) FROM events")[0][0])
        return int(self.query("SELECT count(*) FROM events WHERE site_id = ?", [site_id])[0][0])

    def close(self) -> None:
        """Checkpoint and close the database."""
        with self._write_lock:
            try:
                self._con.execute("CHECKPOINT")
            except duckdb.Error:
                pass
            self._con.close()
            self._closed = True
