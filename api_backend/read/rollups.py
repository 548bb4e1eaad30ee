"""A short-lived cache of the goals list per session value, so filtered goals lists reuse one scan.

The channel recipe of ``api-spec.md`` asks for the goals list once per channel (``filters=[channel equals X]``):
each of those calls would scan every event of the window. One grouping per (site, window, goals, parameter)
gives sessions and conversions per session value; every filtered call on that parameter is then the sum of
the values passing its filters (``build_matching_values_query``), a query over a few values instead of the
events.

Like the read result cache (``results.py``, whose ``SharedResults`` holds the entries), entries live
``TTL_SECONDS`` at most and are keyed on the number of events in the window, counted before each lookup (a
filtered ``count(*)``, a few milliseconds at 10M events): a committed write that adds rows to the window
changes the count (a site deletion empties the cache), so a read after an acknowledged write never sees an
entry computed before that write, while traffic outside the window (today's events, other sites) leaves the
entry usable. Only windows that ended in the past are cached. Concurrent requests for the same missing entry
share one computation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from api_backend.query.dialect import Dialect
from api_backend.query.goals import GoalSpec, build_goals_rollup_query, build_matching_values_query
from api_backend.query.scope import Scope, window_version_query
from api_backend.query.sql import Query
from api_backend.read.results import SharedResults

__all__ = ["ROLLUP_PARAMETERS", "GoalsRollupCache", "goals_counts_from_rollup"]

# Session-level parameters with few distinct values per site, for which a per-value rollup is small.
ROLLUP_PARAMETERS = frozenset(
    {
        "channel",
        "device_type",
        "browser",
        "browser_version",
        "operating_system",
        "operating_system_version",
        "language",
        "country",
        "hostname",
        "utm_source",
        "utm_medium",
        "utm_campaign",
    }
)
MAX_VALUES = 5_000  # more session values than this: not worth keeping, answer with the plain query
TTL_SECONDS = 60.0
MAX_ENTRIES = 32

Runner = Callable[[Query], list[dict[str, Any]]]
Rollup = tuple[tuple[str, int, tuple[int, ...]], ...]  # (value, sessions, conversions per goal)


def rollup_parameter(scope: Scope, now: datetime | None = None) -> str | None:
    """The one parameter every filter of ``scope`` tests, when a rollup can answer it; else ``None``.

    Only windows that ended in the past qualify: live traffic keeps adding rows to a window running up to
    now (or into the future, or all time), so a rollup of it would rarely be asked for twice unchanged.
    """
    w = scope.window
    now = now or datetime.now(UTC).replace(tzinfo=None)
    if w.end is None or w.include_end or w.end > now:
        return None
    if not scope.filters or scope.row_filters:
        return None
    parameters = {f.parameter for f in scope.filters}
    if len(parameters) != 1:
        return None
    (parameter,) = parameters
    return parameter if parameter in ROLLUP_PARAMETERS else None


def _goal_key(goal: GoalSpec) -> tuple[str, str]:
    return goal.goal_type, repr(sorted(goal.config.items(), key=lambda item: item[0]))


class GoalsRollupCache:
    """Per-value goal rollups of (sites, window, goals, parameter), valid while the event table is unchanged."""

    def __init__(self, ttl: float = TTL_SECONDS, max_entries: int = MAX_ENTRIES) -> None:
        self._rollups: SharedResults[Rollup | None] = SharedResults(ttl, max_entries)

    def __len__(self) -> int:
        return len(self._rollups)

    def clear(self) -> None:
        """Forget every entry (a site was deleted: its id may be given to a new site, whose counts could match)."""
        self._rollups.clear()

    def rollup(
        self, scope: Scope, goals: Sequence[GoalSpec], parameter: str, version: int, run: Runner, d: Dialect
    ) -> Rollup | None:
        """The rollup for this key (computed at most once while fresh); ``None`` when it has too many values."""
        w = scope.window
        key = (
            scope.site_ids,
            w.start,
            w.end,
            w.include_start,
            w.include_end,
            tuple(_goal_key(g) for g in goals),
            parameter,
            version,
        )

        def compute() -> Rollup | None:
            rows = run(build_goals_rollup_query(scope, goals, parameter, MAX_VALUES + 1, d))
            if len(rows) > MAX_VALUES:
                return None
            return tuple(
                (r["value"], int(r["sessions"]), tuple(int(r[f"g{i}"]) for i in range(len(goals)))) for r in rows
            )

        return self._rollups.get(key, compute)


def goals_counts_from_rollup(
    cache: GoalsRollupCache, scope: Scope, goals: Sequence[GoalSpec], run: Runner, d: Dialect
) -> Mapping[str, int] | None:
    """The goals list row (``sessions``, ``g0``, ...) answered from a rollup, or ``None`` when one cannot answer."""
    parameter = rollup_parameter(scope)
    if parameter is None or not goals:
        return None
    version = int(run(window_version_query(scope.site_ids, scope.window, d))[0]["n"])
    rollup = cache.rollup(scope, goals, parameter, version, run, d)
    if rollup is None:
        return None
    values = [value for value, _, _ in rollup]
    matching = {r["value"] for r in run(build_matching_values_query(values, scope.filters, d))} if values else set()
    row = {"sessions": 0, **{f"g{i}": 0 for i in range(len(goals))}}
    for value, sessions, conversions in rollup:
        if value in matching:
            row["sessions"] += sessions
            for i, count in enumerate(conversions):
                row[f"g{i}"] += count
    return row
