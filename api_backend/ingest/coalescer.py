"""Gathers the rows of concurrent requests into one submission to the ``BatchWriter``.

Turning rows into an Arrow table costs about the same for one row as for a thousand, and the writer
converts each submission separately. So while one group is being committed, new rows wait here and go
to the writer together as the next group: one conversion and one commit for everything that arrived in
the meantime. A future resolves only after the commit that holds its rows, as with the writer itself.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import pyarrow as pa

from api_backend.store.events import rows_to_table
from api_backend.store.writer import BatchWriter

__all__ = ["RowCoalescer"]


class RowCoalescer:
    """Keeps at most one group in flight at the writer; everything else queues for the next group."""

    def __init__(self, writer: BatchWriter) -> None:
        self._writer = writer
        self._lock = threading.Lock()
        self._pending: list[tuple[Sequence[Mapping[str, Any]], Future[int]]] = []
        self._busy = False

    def submit(self, rows: Sequence[Mapping[str, Any]]) -> Future[int]:
        """Queue rows; the future resolves with their count once committed (or with the commit's error)."""
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
    def _convert(
        group: list[tuple[Sequence[Mapping[str, Any]], Future[int]]],
    ) -> tuple[list[tuple[Sequence[Mapping[str, Any]], Future[int]]], pa.Table | None]:
        """One Arrow table for the group; if that fails, fail only the requests whose rows cannot convert."""
        try:
            return group, rows_to_table([row for part, _ in group for row in part])
        except Exception:
            pass
        good, tables = [], []
        for part, future in group:
            try:
                tables.append(rows_to_table(part))
            except Exception as exc:
                future.set_exception(exc)
                continue
            good.append((part, future))
        return good, pa.concat_tables(tables) if tables else None

    def _finish(self, done: Future[int], group: list[tuple[Sequence[Mapping[str, Any]], Future[int]]]) -> None:
        error = done.exception()
        for part, future in group:
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(len(part))
        self._send_next()
