"""The one write path for events: durable first, then copied into the event store in large transactions.

Two background threads, in order:

1. *intake* takes whatever rows were submitted since its last round (group commit), turns them into one
   Arrow table and makes them durable: with an ``EventLog`` it appends the table to the log and syncs it
   (a fraction of a millisecond), then resolves the submitters' futures. Without a log, or for a very large
   submission (seeding), durability is the store's own commit, so the futures wait for stage 2.
2. *apply* copies the durable tables into the event store, many at once: a store transaction costs
   milliseconds whatever its size, so it runs at most every ``apply_interval`` seconds unless someone is
   waiting (a reader, a submitter without a log, shutdown). The transaction also records the newest log
   record it holds, and fully applied log segments are deleted. When the store falls ``max_queued_rows``
   behind, intake waits for it, so memory stays bounded and acknowledgements slow down instead.

A future therefore resolves only once its rows survive a crash: either in the synced log, from which the
next start copies everything the store lacks, or in the store itself. Readers call ``wait_visible`` (the
``VisibleEventStore`` wrapper does it for every read) so a read that follows an acknowledged write sees it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeAlias

import pyarrow as pa

from api_backend.query.goals import GoalSpec
from api_backend.store.eventlog import EventLog, LogUnavailableError
from api_backend.store.events import BoundQuery, EventStore, rows_to_table

__all__ = ["BatchWriter", "VisibleEventStore", "WriterClosedError"]

log = logging.getLogger(__name__)

Rows: TypeAlias = pa.Table | Sequence[Mapping[str, Any]]


class WriterClosedError(RuntimeError):
    """The writer no longer accepts events (the server is shutting down)."""


@dataclass
class _Durable:
    """A table waiting for the store: logged as record ``seq``, or with ``waiters`` until the store has it."""

    table: pa.Table
    seq: int | None
    waiters: list[tuple[Future[int], int]] = field(default_factory=list)


def _check_required(table: pa.Table) -> None:
    """Refuse NULLs in NOT NULL columns here, so a bad submission fails alone instead of failing its batch."""
    for name in table.schema.names:
        if not table.schema.field(name).nullable and table.column(name).null_count:
            raise ValueError(f"events need a value for {name!r}")


class BatchWriter:
    """Collects rows from many threads, makes them durable in groups, and applies them to an ``EventStore``."""

    def __init__(
        self,
        store: EventStore,
        *,
        log: EventLog | None = None,
        linger: float = 0.005,
        apply_interval: float = 0.1,
        max_rows: int = 100_000,
        log_max_rows: int = 20_000,
        max_queued_rows: int = 1_000_000,
    ) -> None:
        self._store = store
        self._log = log
        self._linger = linger
        self._apply_interval = apply_interval
        self._max_rows = max_rows
        self._log_max_rows = log_max_rows
        self._max_queued_rows = max_queued_rows
        self._lock = threading.Lock()
        self._intake = threading.Condition(self._lock)  # intake thread waits here for submissions
        self._outflow = threading.Condition(self._lock)  # apply thread and readers wait here
        self._pending: list[tuple[Rows, Future[int]]] = []
        self._pending_rows = 0
        self._closed = False
        self._queue: list[_Durable] = []
        self._queue_rows = 0
        self._queue_since = 0.0
        self._queued_total = 0  # durable tables handed to the apply stage, ever
        self._applied_total = 0  # of those, how many the store holds (or that failed for good)
        self._readers_waiting = 0
        self._intake_done = False
        if log is not None:
            self._replay(log)
        self._threads = [
            threading.Thread(target=self._run_intake, name="sitelens-event-intake", daemon=True),
            threading.Thread(target=self._run_apply, name="sitelens-event-apply", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- submitting ---------------------------------------------------------------------------------------------

    def submit(self, rows: Rows) -> Future[int]:
        """Queue rows (event dicts or an ``EVENT_SCHEMA`` table); the future resolves once they are durable."""
        future: Future[int] = Future()
        count = rows.num_rows if isinstance(rows, pa.Table) else len(rows)
        with self._lock:
            if self._closed:
                raise WriterClosedError("the event writer is closed")
            self._pending.append((rows, future))
            self._pending_rows += count
            self._intake.notify()
        return future

    def write(self, rows: Rows) -> int:
        """Queue rows and block until they are durable."""
        return self.submit(rows).result()

    async def write_async(self, rows: Rows) -> int:
        """Queue rows and wait (without blocking the event loop) until they are durable."""
        return await asyncio.wrap_future(self.submit(rows))

    def wait_visible(self, timeout: float | None = 30.0) -> None:
        """Block until the store holds every row acknowledged so far (``TimeoutError`` after ``timeout``)."""
        with self._lock:
            target = self._queued_total
            if self._applied_total >= target:
                return
            self._readers_waiting += 1
            self._outflow.notify_all()
            try:
                if not self._outflow.wait_for(lambda: self._applied_total >= target, timeout):
                    raise TimeoutError("acknowledged events are not readable yet: the event store refuses them")
            finally:
                self._readers_waiting -= 1

    def fault(self) -> str | None:
        """Why events cannot be made durable now (the event log refuses appends), or ``None``.

        After a failure this checks the disk again, so it clears once space returns even if no event arrives.
        """
        return self._log.probe() if self._log is not None else None

    def backlog_rows(self) -> int:
        """Rows submitted or durable but not yet in the store (how far the store lags behind the log)."""
        with self._lock:
            return self._pending_rows + self._queue_rows

    def close(self) -> None:
        """Make what is queued durable, apply it to the store, then stop both threads."""
        with self._lock:
            self._closed = True
            self._intake.notify_all()
            self._outflow.notify_all()
        for thread in self._threads:
            thread.join()
        if self._log is not None:
            self._log.close()

    # -- stage 1: durable -----------------------------------------------------------------------------------------

    def _take(self) -> list[tuple[Rows, Future[int]]] | None:
        with self._lock:
            while not self._pending and not self._closed:
                self._intake.wait()
            if not self._pending:
                return None
            if self._linger and self._pending_rows < self._max_rows and not self._closed:
                self._intake.wait_for(lambda: self._pending_rows >= self._max_rows or self._closed, self._linger)
            batch, self._pending, self._pending_rows = self._pending, [], 0
            return batch

    def _run_intake(self) -> None:
        while (batch := self._take()) is not None:
            self._make_durable(batch)
        with self._lock:
            self._intake_done = True
            self._outflow.notify_all()

    def _make_durable(self, batch: list[tuple[Rows, Future[int]]]) -> None:
        """Log one group (or hand it to the store); a submission that cannot be converted fails alone."""
        parts: list[tuple[pa.Table, Future[int]]] = []
        for rows, future in batch:
            try:
                table = rows if isinstance(rows, pa.Table) else rows_to_table(rows)
                _check_required(table)
                parts.append((table, future))
            except Exception as exc:
                log.exception("a submission of events could not be converted to the event schema")
                future.set_exception(exc)
        if not parts:
            return
        try:
            table = parts[0][0] if len(parts) == 1 else pa.concat_tables([t for t, _ in parts])
        except Exception:  # tables of different schemas: give each its own turn
            for part in parts:
                self._make_durable([part])
            return
        if self._log is None or table.num_rows > self._log_max_rows:
            self._enqueue(_Durable(table, None, [(future, t.num_rows) for t, future in parts]))
            return
        try:
            seq = self._log.append(table)
        except LogUnavailableError as exc:  # disk full or failing: expected to pass, so one line, no traceback
            log.error("event batch of %d rows refused: %s", table.num_rows, exc)
            for _, future in parts:
                future.set_exception(exc)
            return
        except Exception as exc:  # not durable, so not acknowledged: every waiting request hears about it
            log.exception("event batch of %d rows could not be logged", table.num_rows)
            for _, future in parts:
                future.set_exception(exc)
            return
        self._enqueue(_Durable(table, seq))  # before the acknowledgement, so a reader that heard it waits for it
        for part, future in parts:
            future.set_result(part.num_rows)

    def _enqueue(self, item: _Durable) -> None:
        with self._lock:
            # Backpressure: when the store falls behind, intake waits for it (and so do new acknowledgements)
            # instead of holding an ever longer queue in memory.
            self._outflow.wait_for(lambda: self._queue_rows < self._max_queued_rows or self._closed)
            if not self._queue:
                self._queue_since = time.monotonic()
            self._queue.append(item)
            self._queue_rows += item.table.num_rows
            self._queued_total += 1
            self._outflow.notify_all()

    # -- stage 2: applied -----------------------------------------------------------------------------------------

    def _urgent(self) -> bool:
        return (
            self._intake_done
            or self._readers_waiting > 0
            or self._queue_rows >= self._max_rows
            or any(item.waiters for item in self._queue)
        )

    def _next_to_apply(self) -> list[_Durable] | None:
        with self._lock:
            while True:
                if self._queue:
                    left = self._queue_since + self._apply_interval - time.monotonic()
                    if left <= 0 or self._urgent():
                        items, self._queue, self._queue_rows = self._queue, [], 0
                        return items
                    self._outflow.wait(left)
                elif self._intake_done:
                    return None
                else:
                    self._outflow.wait()

    def _run_apply(self) -> None:
        while (items := self._next_to_apply()) is not None:
            self._apply(items)
            with self._lock:
                self._applied_total += len(items)
                self._outflow.notify_all()

    def _apply(self, items: list[_Durable]) -> None:
        """Copy ``items`` into the store in one transaction; logged rows are retried until the store takes them."""
        delay = 0.2
        while items:
            seqs = [item.seq for item in items if item.seq is not None]
            try:
                tables = [item.table for item in items]
                table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
                if seqs:
                    self._store.append(table, log_seq=max(seqs))
                else:
                    self._store.append(table)
            except Exception as exc:
                log.exception("event store refused %d rows", sum(item.table.num_rows for item in items))
                # Unlogged rows were never acknowledged: their submitters hear about the failure now.
                for item in items:
                    for future, _ in item.waiters:
                        future.set_exception(exc)
                items = [item for item in items if item.seq is not None]
                if items and self._intake_done:
                    log.error("%d logged event batches stay in the event log for the next start", len(items))
                    return
                if items:
                    time.sleep(delay)
                    delay = min(delay * 2, 5.0)
                continue
            for item in items:
                for future, count in item.waiters:
                    future.set_result(count)
            if seqs and self._log is not None:
                self._log.discard_through(max(seqs))
            return

    def _replay(self, event_log: EventLog) -> None:
        """Copy every logged batch the store does not hold yet (the process stopped before applying it)."""
        applied = self._store.applied_log_seq()
        event_log.start_after(applied)
        chunk: list[pa.Table] = []
        rows = 0
        last = applied
        for seq, table in event_log.replay(after=applied):
            chunk.append(table)
            rows += table.num_rows
            last = seq
            if rows >= self._max_rows:
                self._store.append(pa.concat_tables(chunk), log_seq=last)
                chunk, rows = [], 0
        if chunk:
            self._store.append(pa.concat_tables(chunk), log_seq=last)
        if last > applied:
            log.info("copied event log records %d..%d into the event store", applied + 1, last)
        event_log.discard_through(last)


class VisibleEventStore:
    """An ``EventStore`` whose reads see every event the writer has acknowledged."""

    def __init__(self, store: EventStore, writer: BatchWriter) -> None:
        self._store = store
        self._writer = writer
        self.dialect = store.dialect

    def append(self, table: pa.Table, *, log_seq: int | None = None) -> int:
        """Insert directly into the store (bulk loads and tests; events from trackers go through the writer)."""
        return self._store.append(table, log_seq=log_seq)

    def applied_log_seq(self) -> int:
        """The newest event-log record the store holds."""
        return self._store.applied_log_seq()

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read query once every acknowledged event is in the store."""
        self._writer.wait_visible()
        return self._store.query(sql, params)

    def query_dicts(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        """Like ``query`` but each row is a dict keyed by column name."""
        self._writer.wait_visible()
        return self._store.query_dicts(sql, params)

    def query_dicts_then(
        self, sql: str, params: Mapping[str, Any], then: Callable[[list[dict[str, Any]]], BoundQuery]
    ) -> list[dict[str, Any]]:
        """Like ``query_dicts``, the second query made of the first one's rows (``EventStore.query_dicts_then``)."""
        self._writer.wait_visible()
        return self._store.query_dicts_then(sql, params, then)

    def delete_site(self, site_id: int) -> int:
        """Remove every event of a site, including those acknowledged a moment ago."""
        self._writer.wait_visible()
        return self._store.delete_site(site_id)

    def latest_sessions(self, since: datetime) -> list[tuple[int, str, str, datetime]]:
        """The newest session of each visitor seen since ``since``."""
        self._writer.wait_visible()
        return self._store.latest_sessions(since)

    def stored_goal_bits(self, site_id: int, goals: Sequence[GoalSpec]) -> list[int] | None:
        """The goals' bits of the stored sessions' masks, when the store keeps them (no wait: a read checks them)."""
        return self._store.stored_goal_bits(site_id, goals)

    def store_goal_bits(self, site_id: int, goals: Sequence[GoalSpec]) -> None:
        """Keep the bits of the site's goals in its sessions, the acknowledged events' ones included."""
        self._writer.wait_visible()
        self._store.store_goal_bits(site_id, goals)

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """The store's ``bulk_load``, left once the store holds every row acknowledged in it: rows acknowledged from
        the event log (a small last submission) may not be in the store yet when the load's writes return."""
        with self._store.bulk_load():
            yield
            self._writer.wait_visible()

    def write_stamp(self) -> int | None:
        """The store's ``write_stamp`` (no wait: it is read around a read)."""
        return self._store.write_stamp()

    def count(self, site_id: int | None = None) -> int:
        """Number of stored events (of one site, or all), acknowledged ones included."""
        self._writer.wait_visible()
        return self._store.count(site_id)

    def close(self) -> None:
        """Close the underlying store (after the writer has stopped)."""
        self._store.close()
