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
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from api_backend.query.dialect import Dialect
from api_backend.query.scope import window_parts_version_query, window_version_query
from api_backend.query.sql import Query
from api_backend.query.window import Window
from api_backend.store.models import utcnow

__all__ = ["MAX_ENTRIES", "MAX_ROWS", "PRESENT_MARGIN", "TTL_SECONDS", "ResultCache", "SharedResults"]

TTL_SECONDS = 300.0
MAX_ENTRIES = 256
MAX_ROWS = 2_000

Runner = Callable[[Query], list[dict[str, Any]]]
Rows = list[dict[str, Any]]
T = TypeVar("T")


def _key(query: Query, version: Hashable) -> tuple[Any, ...]:
    return query.sql, tuple(sorted((k, repr(v)) for k, v in query.params.items())), version


# A window ending no longer ago than this counts as reaching the present: past minutes up to now end at the request's
# whole second, which the cache sees a few queries later (a date range ending today ends with the current minute).
PRESENT_MARGIN = timedelta(minutes=1)


def _reaches_now(window: Window, now: datetime) -> bool:
    """Whether ``window`` has no end or ends in the present: events still enter it, and a range ending today ends with
    the current minute (``query.window.parse_window``), so each minute asks it anew."""
    return window.end is None or window.end >= now - PRESENT_MARGIN


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

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value of ``key``: kept, being computed by another caller, or computed now by ``compute``."""
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
        if not self._keep(value):
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
    """Query results keyed on (query, events in its window); see the module docstring for why that is exact."""

    def __init__(
        self,
        dialect: Dialect,
        ttl: float = TTL_SECONDS,
        max_entries: int = MAX_ENTRIES,
        max_rows: int = MAX_ROWS,
        *,
        now: Callable[[], datetime] = utcnow,
    ) -> None:
        self._dialect = dialect
        self._now = now
        # A result whose first row says ``stale_result`` answered from facts that had changed: never kept.
        self._results: SharedResults[Rows] = SharedResults(
            ttl, max_entries, keep=lambda rows: len(rows) <= max_rows and not (rows and rows[0].get("stale_result"))
        )
        # Per query read from the table, the window's rows (``n`` of its parts' key) when an answer was last kept.
        self._counted: SharedResults[int] = SharedResults(ttl, max_entries)
        self._computed = 0
        self._computed_lock = threading.Lock()

    def __len__(self) -> int:
        """The entries kept (an answer may be kept under two keys, see ``run``)."""
        return len(self._results)

    @property
    def computed(self) -> int:
        """How many answers were computed rather than found."""
        return self._computed

    def _compute(self, query: Query, run: Runner) -> Rows:
        with self._computed_lock:
            self._computed += 1
        return run(query)

    def clear(self) -> None:
        """Forget every entry (a site was deleted: its id may be given to a new site, whose counts could match)."""
        self._results.clear()
        self._counted.clear()

    def run(self, query: Query, site_ids: tuple[int, ...], window: Window, run: Runner) -> Rows:
        """The rows of ``query`` (its window on ``site_ids``): from the cache when no event entered the window.

        Where the store writes the ``sessions`` table after the events (``Dialect.merged_sessions``), a query that
        may read it picks its form first (``facts.facts_where_cheaper``), and the form picked is what is keyed: only a
        read of the table needs a key counting the table too, which costs a read of it (at 100M events 14-28 ->
        360-500 ms), so the grouping of the events keeps the cheap key. A read of the table first tries the key of
        the table's parts (``scope.window_parts_version_query``), which changes with any write to the table. Then the
        costly key, whose answer it keeps under both; unless it could find none: when the window's rows changed since
        the last answer kept for the same question (a live window), or when the question is new and its window reaches
        the present (``_reaches_now``; the dashboard's ranges end today). The read then runs at once, and its answer is
        kept under the parts' key alone. (At 10M events on chdb the costly key took 80-170 ms of such a read.)
        """
        narrowing = query.narrowing
        if narrowing is not None and query.reads_sessions and self._dialect.merged_sessions:
            query = narrowing.then(run(narrowing.first))
        sessions = query.reads_sessions and self._dialect.merged_sessions
        parts_key = None
        if sessions:
            (parts,) = run(window_parts_version_query(site_ids, window, self._dialect))
            if parts["parts"] is not None:
                counted = int(parts["n"])
                parts_key, query_key = _key(query, ("parts", counted, parts["parts"])), _key(query, "counted")
                kept = self._results.peek(parts_key)
                if kept is not None:
                    return [dict(row) for row in kept]
                last = self._counted.peek(query_key)
                if last != counted and (last is not None or _reaches_now(window, self._now())):
                    # Rows entered the window since the last answer, or a new question's window reaches the present:
                    # the costly key finds no answer under it (at 100M events, skipping it skips a read of the site's
                    # whole table).
                    rows = self._results.get(parts_key, lambda: self._compute(query, run))
                    self._counted.put(query_key, counted)
                    return [dict(row) for row in rows]
        version = int(run(window_version_query(site_ids, window, self._dialect, sessions=sessions))[0]["n"])
        rows = self._results.get(_key(query, version), lambda: self._compute(query, run))
        if parts_key is not None:
            # Taken before the costly key, the parts' key is no newer than the answer: a write in between changed it.
            self._results.put(parts_key, rows)
            self._counted.put(query_key, counted)
        # Callers get their own dicts, so nothing they do to a result can change what the cache holds.
        return [dict(row) for row in rows]
