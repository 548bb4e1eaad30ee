"""Gathers the rows of concurrent requests into one submission to the ``BatchWriter``.

Turning rows into an Arrow table costs about the same for one row as for a thousand, and the writer
converts each submission separately. So while one group is being made durable (synced to the event log),
new rows wait here and go to the writer together as the next group: one conversion and one sync for
everything that arrived in the meantime. Single events arrive as records (value tuples in ``EVENT_SCHEMA``
order, which transpose into columns in C); batches as Arrow tables already (built column by column), which
join the group as they are. A future resolves only once its rows are durable, as with the writer itself.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any, TypeAlias

import pyarrow as pa

from api_backend.store.events import records_to_table
from api_backend.store.writer import BatchWriter

__all__ = ["RowCoalescer"]

# What a request hands over: records (single events) or a ready table (batches, built column by column).
Part: TypeAlias = "pa.Table | Sequence[tuple[Any, ...]]"


def _runs(parts: list[Part]) -> list[Part]:
    """Consecutive record lists merged into one (one conversion for all of them); tables kept as they are."""
    out: list[Part] = []
    rows: list[tuple[Any, ...]] = []
    for part in parts:
        if isinstance(part, pa.Table):
            if rows:
                out.append(rows)
                rows = []
            out.append(part)
        else:
            rows.extend(part)
    if rows:
        out.append(rows)
    return out


def _table(part: Part) -> pa.Table:
    return part if isinstance(part, pa.Table) else records_to_table(part)


def _concat(tables: list[pa.Table]) -> pa.Table:
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


class RowCoalescer:
    """Keeps at most one group in flight at the writer; everything else queues for the next group."""

    def __init__(self, writer: BatchWriter) -> None:
        self._writer = writer
        self._lock = threading.Lock()
        self._pending: list[tuple[Part, Future[int]]] = []
        self._busy = False

    def submit(self, rows: Part) -> Future[int]:
        """Queue rows (records or an ``EVENT_SCHEMA`` table); the future resolves with their count once durable.

        It fails with the writer's error, or with the conversion error of rows that cannot become a table.
        """
        future: Future[int] = Future()
        with self._lock:
            self._pending.append((rows, future))
            if self._busy:
                return future
            self._busy = True
        self._send_next()
        return future

    def _send_next(self) -> None:
        with self._lock:
            group, self._pending = self._pending, []
            if not group:
                self._busy = False
                return
        group, table = self._convert(group)
        if not group:
            self._send_next()
            return
        try:
            committed = self._writer.submit(table)
        except Exception as exc:  # writer closed: every waiting request must hear about it
            for _, future in group:
                future.set_exception(exc)
            self._send_next()
            return
        committed.add_done_callback(lambda done: self._finish(done, group))

    @staticmethod
    def _convert(group: list[tuple[Part, Future[int]]]) -> tuple[list[tuple[Part, Future[int]]], pa.Table | None]:
        """One Arrow table for the group; if that fails, fail only the requests whose rows cannot convert."""
        try:
            return group, _concat([_table(part) for part in _runs([part for part, _ in group])])
        except Exception:
            pass
        good, tables = [], []
        for part, future in group:
            try:
                tables.append(_table(part))
            except Exception as exc:
                future.set_exception(exc)
                continue
            good.append((part, future))
        return good, _concat(tables) if tables else None

    def _finish(self, done: Future[int], group: list[tuple[Part, Future[int]]]) -> None:
        error = done.exception()
        for part, future in group:
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(part.num_rows if isinstance(part, pa.Table) else len(part))
        self._send_next()
