"""A cache of read query results, valid exactly while the events of the query's window are unchanged.

Session-level reads (goals, metric, overview, funnels) group every event of the window by session: at 10M
events that is most of a second whatever the query's shape, and a dashboard asks the same questions again
and again. A result here is keyed on the query (SQL text and bound values) and on the number of events of
its sites in its window, counted before each lookup (a filtered ``count(*)``, a few milliseconds at 10M
events). Events are only ever appended (a site's deletion removes the site with them), so the same count
means the same rows: an acknowledged write into the window changes the count and the next read computes
afresh, while traffic outside the window (today's events for a window that ended, other sites) leaves the
entry usable. The count is taken before the query runs, so an entry can only hold more rows than its key
says, never fewer: a read never misses an event acknowledged before it.

Where a write reaches its tables one after another (ClickHouse: the views write the sessions, error and goal rows
after the events), a read during it may see part of it. The key then still counts the events of the window, so such
an answer is kept only when the store's ``write_stamp`` was the same after the count and after the read: no write
was under way meanwhile. The answer is then the one every later read with the same count computes, since a read's
numbers depend only on the window's events (``query/facts.py``: whole sessions from the table are exactly their
events), and events outside the window, of other sites or later, leave it valid.

Entries live ``TTL_SECONDS`` at most; at most ``MAX_ENTRIES`` are kept (least recently used leave first) and
results longer than ``MAX_ROWS`` rows are not kept. Concurrent requests for the same missing entry share one
computation.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from api_backend.query.dialect import Dialect
from api_backend.query.scope import window_version_query
from api_backend.query.sql import Query
from api_backend.query.window import Window

__all__ = ["MAX_ENTRIES", "MAX_ROWS", "TTL_SECONDS", "ResultCache", "SharedResults"]

TTL_SECONDS = 300.0
MAX_ENTRIES = 256
MAX_ROWS = 2_000

Runner = Callable[[Query], list[dict[str, Any]]]
Rows = list[dict[str, Any]]
T = TypeVar("T")


def _key(query: Query, version: Hashable) -> tuple[Any, ...]:
    return query.sql, tuple(sorted((k, repr(v)) for k, v in query.params.items())), version


class SharedResults(Generic[T]):
    """Values computed once per key and shared: concurrent callers of a missing key wait for one computation.

    Entries live ``ttl`` seconds at most and at most ``max_entries`` are kept (least recently used leave first).
    A computation that fails is not kept (the next caller tries again), nor is a value ``keep`` refuses.
    """

    def __init__(self, ttl: float, max_entries: int, keep: Callable[[T], bool] = lambda _: True) -> None:
        self._ttl = ttl
        self._max_entries = max_entries
        self._keep = keep
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[float, Future[T]]] = OrderedDict()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def get(self, key: Hashable, compute: Callable[[], T], keep: Callable[[T], bool] | None = None) -> T:
        """The value of ``key``: kept, being computed by another caller, or computed now by ``compute``; ``keep``, when
        given, must also accept the value computed now for it to be kept."""
        now = time.monotonic()
        with self._lock:
            for stale in [k for k, (at, _) in self._entries.items() if now - at > self._ttl]:
                del self._entries[stale]
            entry = self._entries.get(key)
            owner = entry is None
            if entry is None:
                future: Future[T] = Future()
                self._insert(key, now, future)
            else:
                future = entry[1]
                self._entries.move_to_end(key)
        if not owner:
            return future.result()
        try:
            value = compute()
        except BaseException as exc:
            self._forget(key, future)
            future.set_exception(exc)
            raise
        if not self._keep(value) or (keep is not None and not keep(value)):
            self._forget(key, future)
        future.set_result(value)
        return value

    def peek(self, key: Hashable) -> T | None:
        """The value kept for ``key``, if one is computed and not stale; None otherwise (nothing is computed)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or time.monotonic() - entry[0] > self._ttl:
                return None
            future = entry[1]
            if not future.done() or future.exception() is not None:
                return None
            self._entries.move_to_end(key)
        return future.result()

    def put(self, key: Hashable, value: T) -> None:
        """Keep ``value`` for ``key`` (unless ``keep`` refuses it), as if computed now."""
        if not self._keep(value):
            return
        future: Future[T] = Future()
        future.set_result(value)
        with self._lock:
            self._insert(key, time.monotonic(), future)

    def _insert(self, key: Hashable, at: float, future: Future[T]) -> None:
        """Keep ``future`` for ``key`` as the newest entry, the oldest leaving past ``max_entries`` (lock held)."""
        self._entries[key] = (at, future)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def _forget(self, key: Hashable, future: Future[T]) -> None:
        with self._lock:
            if self._entries.get(key, (0.0, None))[1] is future:
                del self._entries[key]


class ResultCache:
    """Query results keyed on (query, events in its window); see the module docstring for why that is exact.

    ``stamp`` is the store's ``write_stamp``.
    """

    def __init__(
        self,
        dialect: Dialect,
        ttl: float = TTL_SECONDS,
        max_entries: int = MAX_ENTRIES,
        max_rows: int = MAX_ROWS,
        *,
        stamp: Callable[[], int | None] = lambda: 0,
    ) -> None:
        self._dialect = dialect
        self._stamp = stamp
        # A result whose first row says ``stale_result`` answered from facts that had changed: never kept.
        self._results: SharedResults[Rows] = SharedResults(
            ttl, max_entries, keep=lambda rows: len(rows) <= max_rows and not (rows and rows[0].get("stale_result"))
        )
        self._computed = 0
        self._computed_lock = threading.Lock()

    def __len__(self) -> int:
        """The entries kept."""
        return len(self._results)

    @property
    def computed(self) -> int:
        """How many answers were computed rather than found."""
        return self._computed

    def clear(self) -> None:
        """Forget every entry (a site was deleted: its id may be given to a new site, whose counts could match)."""
        self._results.clear()

    def version(self, site_ids: tuple[int, ...], window: Window, run: Runner) -> int:
        """The key's count now: the events of ``site_ids`` in ``window``."""
        return int(run(window_version_query(site_ids, window, self._dialect))[0]["n"])

    def run(
        self, query: Query, site_ids: tuple[int, ...], window: Window, run: Runner, *, version: int | None = None
    ) -> Rows:
        """The rows of ``query`` (its window on ``site_ids``): from the cache when no event entered the window.

        ``version``, the count ``version`` gave for the same sites and window earlier (for an answer made of more
        than one query of one window, such as a page and then its rows), spares counting again: the entry is then
        keyed on no more events than its rows hold, the safe side.

        Where the store writes the ``sessions`` table after the events (``Dialect.merged_sessions``), a query that
        may read it picks its form when it is computed (``facts.facts_where_cheaper``). Every form gives the same
        rows, so the answer is keyed on the query as asked: one found again costs the count alone, and one computed
        from a seal (``Dialect.sealed``) is found again after the next seal, which binds other values into the form.
        An answer computed while a write was under way is returned but not kept (see the module docstring). Where
        the store writes in transactions, the stamp never changes and every answer is kept.
        """
        if version is None:
            version = self.version(site_ids, window, run)
        # Read after the count, which waited for every acknowledged event to be stored: a write that ended before
        # it is seen whole by the read, and the key can then only undercount, never name an answer that misses rows.
        before = self._stamp()
        settled = True

        def compute() -> Rows:
            nonlocal settled
            with self._computed_lock:
                self._computed += 1
            chosen = query
            if query.narrowing is not None and query.reads_sessions and self._dialect.merged_sessions:
                chosen = query.narrowing.then(run(query.narrowing.first))
            rows = run(chosen)
            after = self._stamp()
            settled = before is not None and after == before
            return rows

        rows = self._results.get(_key(query, version), compute, keep=lambda _: settled)
        # Callers get their own dicts, so nothing they do to a result can change what the cache holds.
        return [dict(row) for row in rows]
