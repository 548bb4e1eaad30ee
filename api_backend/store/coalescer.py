"""Gathers the rows of concurrent requests into one submission to the ``BatchWriter``.

Turning rows into an Arrow table costs about the same for one row as for a thousand, and the writer
converts each submission separately. So while one group is being made durable (synced to the event log),
new rows wait here and go to the writer together as the next group: one conversion and one sync for
everything that arrived in the meantime. Single events arrive as records (value tuples in ``EVENT_SCHEMA``
order, which Arrow reads in one call as structs); batches as Arrow tables already (built column by column),
which join the group as they are. A future resolves only once its rows are durable, as with the writer itself.

Requests on an event loop await ``write``: the waiters of a group that live on one loop are resolved by one call
into it. A call into a loop from another thread (``call_soon_threadsafe``) writes to the loop's wake-up socket, and
the writer's thread then waits to take the GIL back from the busy loop: one such wait per group, not one per
request. A requester that stops waiting (its task cancelled) leaves its group and the ones after it unharmed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import Future, InvalidStateError
from typing import Any, TypeAlias

import pyarrow as pa

from api_backend.store.events import records_to_table
from api_backend.store.writer import BatchWriter

__all__ = ["RowCoalescer"]

# What a request hands over: records (single events) or a ready table (batches, built column by column).
Part: TypeAlias = "pa.Table | Sequence[tuple[Any, ...]]"
# Who waits for a part: a thread (``submit``) or a task on an event loop (``write``).
Waiter: TypeAlias = "Future[int] | asyncio.Future[int]"
# What a waiter gets: the number of its rows, or the error that kept them from being durable.
Outcome: TypeAlias = "int | BaseException"


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


def _rows_in(part: Part) -> int:
    return part.num_rows if isinstance(part, pa.Table) else len(part)


def _settle(outcomes: Sequence[tuple[Waiter, Outcome]]) -> None:
    """Give each waiter its outcome, from any thread: those on event loops with one call into each loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[Waiter, Outcome]]] = {}
    for waiter, outcome in outcomes:
        if isinstance(waiter, asyncio.Future):
            by_loop.setdefault(waiter.get_loop(), []).append((waiter, outcome))
        else:
            _set(waiter, outcome)
    for loop, settled in by_loop.items():
        try:
            loop.call_soon_threadsafe(_set_all, settled)
        except RuntimeError:  # the loop has closed: nobody there waits any more
            pass


def _set_all(outcomes: Sequence[tuple[Waiter, Outcome]]) -> None:
    for waiter, outcome in outcomes:
        _set(waiter, outcome)


def _set(waiter: Waiter, outcome: Outcome) -> None:
    """Resolve ``waiter`` unless its requester stopped waiting (cancelled it); an asyncio one on its loop's thread."""
    if waiter.done():
        return
    try:
        if isinstance(outcome, BaseException):
            waiter.set_exception(outcome)
        else:
            waiter.set_result(outcome)
    except (InvalidStateError, asyncio.InvalidStateError):  # cancelled from another thread just now
        pass


class RowCoalescer:
    """Keeps at most one group in flight at the writer; everything else queues for the next group."""

    def __init__(self, writer: BatchWriter) -> None:
        self._writer = writer
        self._lock = threading.Lock()
        self._pending: list[tuple[Part, Waiter]] = []
        self._busy = False

    def submit(self, rows: Part) -> Future[int]:
        """Queue rows (records or an ``EVENT_SCHEMA`` table); the future resolves with their count once durable.

        It fails with the writer's error, or with the conversion error of rows that cannot become a table.
        """
        future: Future[int] = Future()
        self._queue(rows, future)
        return future

    async def write(self, rows: Part) -> int:
        """``submit`` for a task on the running event loop: the count of ``rows`` once durable, or the error."""
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._queue(rows, waiter)
        return await waiter

    def _queue(self, rows: Part, waiter: Waiter) -> None:
        with self._lock:
            self._pending.append((rows, waiter))
            if self._busy:
                return
            self._busy = True
        self._send_next()

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
            _settle([(waiter, exc) for _, waiter in group])
            self._send_next()
            return
        committed.add_done_callback(lambda done: self._finish(done, group))

    @staticmethod
    def _convert(group: list[tuple[Part, Waiter]]) -> tuple[list[tuple[Part, Waiter]], pa.Table | None]:
        """One Arrow table for the group; if that fails, fail only the requests whose rows cannot convert."""
        try:
            return group, _concat([_table(part) for part in _runs([part for part, _ in group])])
        except Exception:
            pass
        good, tables, failed = [], [], []
        for part, waiter in group:
            try:
                tables.append(_table(part))
            except Exception as exc:
                failed.append((waiter, exc))
                continue
            good.append((part, waiter))
        _settle(failed)
        return good, _concat(tables) if tables else None

    def _finish(self, done: Future[int], group: list[tuple[Part, Waiter]]) -> None:
        try:
            error = done.exception()
            _settle([(waiter, _rows_in(part) if error is None else error) for part, waiter in group])
        finally:
            self._send_next()
