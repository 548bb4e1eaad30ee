"""The one write path for events: a background thread that commits batches (group commit).

Callers hand over rows and get a future that completes only after the transaction holding those
rows has committed, so an acknowledged event survives a crash. While one batch is being committed,
new rows pile up and go together in the next transaction: under load many requests share one
commit, and when idle an event is committed at once (after at most ``linger`` seconds).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import pyarrow as pa

from api_backend.store.events import EventStore, rows_to_table

__all__ = ["BatchWriter", "WriterClosedError"]

log = logging.getLogger(__name__)


class WriterClosedError(RuntimeError):
    """The writer no longer accepts events (the server is shutting down)."""


class BatchWriter:
    """Collects rows from many threads and commits them to an ``EventStore`` in batches."""

    def __init__(self, store: EventStore, *, linger: float = 0.005, max_rows: int = 100_000) -> None:
        self._store = store
        self._linger = linger
        self._max_rows = max_rows
        self._pending: list[tuple[pa.Table | Sequence[Mapping[str, Any]], Future[int]]] = []
        self._pending_rows = 0
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="sitelens-event-writer", daemon=True)
        self._thread.start()

    def submit(self, rows: pa.Table | Sequence[Mapping[str, Any]]) -> Future[int]:
        """Queue rows (event dicts or an ``EVENT_SCHEMA`` table); the future resolves once they are committed."""
        future: Future[int] = Future()
        count = rows.num_rows if isinstance(rows, pa.Table) else len(rows)
        with self._cond:
            if self._closed:
                raise WriterClosedError("the event writer is closed")
            self._pending.append((rows, future))
            self._pending_rows += count
            self._cond.notify()
        return future

    def write(self, rows: pa.Table | Sequence[Mapping[str, Any]]) -> int:
        """Queue rows and block until they are committed."""
        return self.submit(rows).result()

    async def write_async(self, rows: pa.Table | Sequence[Mapping[str, Any]]) -> int:
        """Queue rows and wait (without blocking the event loop) until they are committed."""
        return await asyncio.wrap_future(self.submit(rows))

    def _take(self) -> list[tuple[pa.Table | Sequence[Mapping[str, Any]], Future[int]]] | None:
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait()
            if not self._pending:
                return None
            if self._linger and self._pending_rows < self._max_rows and not self._closed:
                self._cond.wait_for(lambda: self._pending_rows >= self._max_rows or self._closed, self._linger)
            batch, self._pending, self._pending_rows = self._pending, [], 0
            return batch

    def _run(self) -> None:
        while (batch := self._take()) is not None:
            self._commit(batch)

    def _commit(self, batch: list[tuple[pa.Table | Sequence[Mapping[str, Any]], Future[int]]]) -> None:
        """Commit one batch; a submission that cannot be converted fails alone, a failed commit fails them all."""
        parts: list[tuple[pa.Table, Future[int]]] = []
        for rows, future in batch:
            try:
                parts.append((rows if isinstance(rows, pa.Table) else rows_to_table(rows), future))
            except Exception as exc:
                log.exception("a submission of events could not be converted to the event schema")
                future.set_exception(exc)
        if not parts:
            return
        try:
            tables = [table for table, _ in parts]
            self._store.append(tables[0] if len(tables) == 1 else pa.concat_tables(tables))
        except Exception as exc:  # every waiting request must hear about the failure
            log.exception("event batch of %d rows failed to commit", sum(t.num_rows for t, _ in parts))
            for _, future in parts:
                future.set_exception(exc)
            return
        for table, future in parts:
            future.set_result(table.num_rows)

    def close(self) -> None:
        """Commit what is queued, then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
