"""``EventReader``: runs built queries on the event store, through the result cache when asked."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from api_backend.errors import InvalidRequestError, ServiceUnavailableError
from api_backend.query.dialect import Dialect, dialect_named
from api_backend.query.facts import facts_answer
from api_backend.query.goals import GoalSpec, build_goals_query, build_goals_stored_query
from api_backend.query.scope import Scope
from api_backend.query.sql import Query
from api_backend.read.results import ResultCache
from api_backend.read.rollups import GoalsRollupCache, goals_counts_from_rollup
from api_backend.store.events import EventStore, QueryRejectedError, QueryTooLargeError

__all__ = ["TOO_LARGE", "EventReader"]

TOO_LARGE = (
    "This question needs more memory than the server may use for one read right now; "
    "try again later, or a shorter range."
)

Rows = list[dict[str, Any]]

log = logging.getLogger(__name__)

# After storing a site's goal bits failed (the engine's memory limit, a full disk), reads wait this long before
# asking again, so a failing registration does not rerun its work at every read.
RETRY_GOAL_BITS_SECONDS = 300.0


class EventReader:
    """Reads events for the API: ``rows(build_x(..., reader.dialect), scope)``.

    ``store`` must make acknowledged events visible before it reads (``VisibleEventStore``), so a read that
    follows an acknowledged write sees it, cached or not.
    """

    def __init__(self, store: EventStore) -> None:
        self._store = store
        self.dialect: Dialect = dialect_named(store.dialect)
        self.results = ResultCache(self.dialect, stamp=store.write_stamp)
        self.rollups = GoalsRollupCache()
        self._registering: set[int] = set()  # sites whose goal bits are being stored
        self._again: set[int] = set()  # sites whose goals changed while their bits were being stored
        self._failed_at: dict[int, float] = {}  # when storing a site's goal bits last failed (monotonic seconds)
        self._registering_lock = threading.Lock()

    def rows(self, query: Query, scope: Scope | None = None, *, version: int | None = None) -> Rows:
        """Every row of ``query`` as a dict; with ``scope`` (the sites and window it reads) through the result cache.

        The cache answers only while no event entered that window since the result was computed
        (``read/results.py``), so a read always includes every event acknowledged before it. ``version``, from
        ``window_version(scope)`` before the first of several queries of one answer, spares each a count.
        """
        if scope is None:
            return self._run(query)
        return self.results.run(query, scope.site_ids, scope.window, self._run, version=version)

    def window_version(self, scope: Scope) -> int:
        """The result cache's key for ``scope`` now (its events counted), for ``rows(..., version=...)``."""
        return self.results.version(scope.site_ids, scope.window, self._run)

    def goals_counts(
        self, scope: Scope, goals: Sequence[GoalSpec], site_goals: Callable[[], Sequence[GoalSpec]] | None = None
    ) -> Mapping[str, int]:
        """The goals list row (``sessions``, ``g0``, ...): from the sessions' stored goal bits where the store keeps
        them, else from a per-value rollup when one fits, else grouped from the events.

        The bits come first: a filtered list from them reads the window's whole sessions once (at 10M events on
        DuckDB, filtered on a channel, 1,230 -> 100 ms through the API on a slower machine), where a rollup groups
        every event.
        """
        rows = self._stored_goal_rows(
            scope, goals, lambda bits: build_goals_stored_query(scope, goals, bits, self.dialect), site_goals, None
        )
        if rows is not None:
            return rows[0]
        row = goals_counts_from_rollup(self.rollups, scope, goals, self._run, self.dialect)
        if row is not None:
            return row
        return self.rows(build_goals_query(scope, goals, self.dialect), scope)[0]

    def goal_rows(
        self,
        scope: Scope,
        goals: Sequence[GoalSpec],
        stored: Callable[[Sequence[int]], Query] | None,
        grouped: Query,
        site_goals: Callable[[], Sequence[GoalSpec]] | None = None,
        *,
        version: int | None = None,
    ) -> Rows:
        """The rows of a goal query: ``stored(bits)`` when the store keeps the bits of ``goals`` (``bits[i]`` is
        ``goals[i]``'s) and they still stood when it read them, else ``grouped``, which groups the events.

        ``stored`` is None where the question has no form reading bits. ``site_goals`` gives every goal of the site:
        when one of ``goals`` has no stored bit yet, the store is asked in the background to keep those
        (``store/goal_bits.py``), and this read groups the events. ``version`` as in ``rows``.
        """
        rows = None if stored is None else self._stored_goal_rows(scope, goals, stored, site_goals, version)
        return self.rows(grouped, scope, version=version) if rows is None else rows

    def _stored_goal_rows(
        self,
        scope: Scope,
        goals: Sequence[GoalSpec],
        stored: Callable[[Sequence[int]], Query],
        site_goals: Callable[[], Sequence[GoalSpec]] | None,
        version: int | None,
    ) -> Rows | None:
        """The rows of ``stored(bits)`` (``goal_rows``), or None where the bits cannot answer."""
        if len(scope.site_ids) != 1 or not facts_answer(scope, self.dialect, self.dialect.sealed_goal_masks):
            return None
        (site_id,) = scope.site_ids
        bits = self._store.stored_goal_bits(site_id, goals)
        if bits is None:
            if site_goals is not None:
                self.store_goal_bits_soon(site_id, site_goals)
            return None
        rows = self.rows(stored(bits), scope, version=version)
        # Every row carries the same flag; a goal changed since the bits were looked up when it is set. A form the
        # narrowing picked that reads no bits carries none.
        if rows and rows[0].get("stale_result"):
            return None
        for row in rows:
            row.pop("stale_result", None)
        return rows

    def store_goal_bits_soon(self, site_id: int, site_goals: Callable[[], Sequence[GoalSpec]]) -> None:
        """Have the store keep the bits of the site's goals, in a thread of its own (one per site at a time; one asked
        for while it runs runs after it, with the goals then; none within ``RETRY_GOAL_BITS_SECONDS`` of a failure)."""
        if not (self.dialect.session_facts or self.dialect.sealed_goal_masks):  # the store keeps no goal bits
            return
        with self._registering_lock:
            failed = self._failed_at.get(site_id)
            if failed and time.monotonic() - failed < RETRY_GOAL_BITS_SECONDS:
                return
            if site_id in self._registering:
                self._again.add(site_id)
                return
            self._registering.add(site_id)

        def register() -> None:
            while True:
                try:
                    self._store.store_goal_bits(site_id, site_goals())
                    self._failed_at.pop(site_id, None)
                except Exception:  # reads keep grouping the events; a read after the pause asks again
                    log.exception("storing the goal bits of site %d failed", site_id)
                    self._failed_at[site_id] = time.monotonic()
                with self._registering_lock:
                    if site_id not in self._again or site_id in self._failed_at:
                        self._registering.discard(site_id)
                        self._again.discard(site_id)
                        return
                    self._again.discard(site_id)

        threading.Thread(target=register, name=f"goal-bits-{site_id}", daemon=True).start()

    def storing_goal_bits(self) -> bool:
        """Whether a site's goal bits are being stored now."""
        with self._registering_lock:
            return bool(self._registering)

    def forget(self) -> None:
        """Drop every cached result: after a site's deletion its id may be given to a new site with equal counts."""
        self.results.clear()
        self.rollups.clear()

    def _run(self, query: Query) -> Rows:
        narrowing = query.narrowing
        try:
            if narrowing is None:
                return self._store.query_dicts(*self.dialect.bind(query))
            first, params = self.dialect.bind(narrowing.first)
            return self._store.query_dicts_then(first, params, lambda rows: self.dialect.bind(narrowing.then(rows)))
        except QueryRejectedError:
            # Filters are validated before any query runs, so this is a pattern the engine's RE2 still refuses.
            raise InvalidRequestError.for_field("filters", "the regular expression is not supported") from None
        except QueryTooLargeError:
            # The engine's memory limit stopped it (other reads may be holding memory too): nothing is wrong with
            # the request, it cannot be answered now.
            raise ServiceUnavailableError(TOO_LARGE) from None
