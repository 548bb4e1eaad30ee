"""``EventReader``: runs built queries on the event store, through the result cache when asked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from api_backend.errors import InvalidRequestError, ServiceUnavailableError
from api_backend.query.dialect import Dialect, dialect_named
from api_backend.query.goals import GoalSpec, build_goals_query
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


class EventReader:
    """Reads events for the API: ``rows(build_x(..., reader.dialect), scope)``.

    ``store`` must make acknowledged events visible before it reads (``VisibleEventStore``), so a read that
    follows an acknowledged write sees it, cached or not.
    """

    def __init__(self, store: EventStore) -> None:
        self._store = store
        self.dialect: Dialect = dialect_named(store.dialect)
        self.results = ResultCache(self.dialect)
        self.rollups = GoalsRollupCache()

    def rows(self, query: Query, scope: Scope | None = None) -> Rows:
        """Every row of ``query`` as a dict; with ``scope`` (the sites and window it reads) through the result cache.

        The cache answers only while no event entered that window since the result was computed
        (``read/results.py``), so a read always includes every event acknowledged before it.
        """
        if scope is None:
            return self._run(query)
        return self.results.run(query, scope.site_ids, scope.window, self._run)

    def goals_counts(self, scope: Scope, goals: Sequence[GoalSpec]) -> Mapping[str, int]:
        """The goals list row (``sessions``, ``g0``, ...): from a per-value rollup when one fits, else queried."""
        row = goals_counts_from_rollup(self.rollups, scope, goals, self._run, self.dialect)
        if row is None:
            row = self.rows(build_goals_query(scope, goals, self.dialect), scope)[0]
        return row

    def forget(self) -> None:
        """Drop every cached result: after a site's deletion its id may be given to a new site with equal counts."""
        self.results.clear()
        self.rollups.clear()

    def _run(self, query: Query) -> Rows:
        sql, params = self.dialect.bind(query)
        try:
            return self._store.query_dicts(sql, params)
        except QueryRejectedError:
            # Filters are validated before any query runs, so this is a pattern the engine's RE2 still refuses.
            raise InvalidRequestError.for_field("filters", "the regular expression is not supported") from None
        except QueryTooLargeError:
            # The engine's memory limit stopped it (other reads may be holding memory too): nothing is wrong with
            # the request, it cannot be answered now.
            raise ServiceUnavailableError(TOO_LARGE) from None
