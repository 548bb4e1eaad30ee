"""The small SQL toolkit every query builder shares: bound parameters and the result type.

Builders never paste a value into SQL text: ``Params.add(value)`` returns a placeholder and keeps the
value, so a builder returns ``Query(sql, params)``; the event reader has the store's ``Dialect``
(``dialect.py``) put the placeholders in the engine's form before it runs the query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Narrowing", "Params", "Query", "paged_select"]


@dataclass(frozen=True)
class Query:
    """SQL text and the values bound to its placeholders.

    ``narrowing``, when set, is a faster way to the same rows: ``Narrowing.first`` runs before, in the same snapshot
    of the store, and ``Narrowing.then`` turns its rows into the query to answer with (one that reads fewer rows).
    ``sql`` and ``params`` stay the whole question, so they alone key a cached result; only where the store writes
    the ``sessions`` table after the events does the cache run a narrowing itself and key the query it picks
    (``read/results.py``). ``reads_sessions`` says that it reads the ``sessions`` table (``facts.whole_sessions`` /
    ``edge_sessions``), or may, through its narrowing.
    """

    sql: str
    params: dict[str, Any] = field(default_factory=dict)
    narrowing: Narrowing | None = field(default=None, compare=False)
    reads_sessions: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class Narrowing:
    """A first query whose rows ``then`` turns into the query to run (see ``Query.narrowing``)."""

    first: Query
    then: Callable[[list[dict[str, Any]]], Query]


class Params:
    """Collects bound values and hands out unique named placeholders (``$p0``, ``$p1``, ...)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        # Set by the builders of SQL reading the ``sessions`` table; the query made says so (``Query``).
        self.reads_sessions = False

    def add(self, value: Any) -> str:
        """Bind ``value``; return the placeholder to put in the SQL text."""
        name = f"p{len(self.values)}"
        self.values[name] = value
        return f"${name}"

    def query(self, sql: str) -> Query:
        """Pair ``sql`` with the values bound so far."""
        return Query(sql, dict(self.values), reads_sessions=self.reads_sessions)


def paged_select(source: str, order: str, limit: int, offset: int, p: Params) -> str:
    """CTEs + SELECT returning one page of ``source`` in ``order`` plus ``total_count`` on every row.

    The totals row is LEFT JOINed so a page past the end still returns one row (with ``rn`` NULL) and the
    caller always learns the total.
    """
    lo, hi = p.add(offset), p.add(offset + limit)
    return f"""ranked AS (SELECT *, row_number() OVER (ORDER BY {order}) AS rn FROM {source}),
total AS (SELECT count(*) AS total_count FROM {source})
SELECT t.total_count, r.* FROM total AS t LEFT JOIN ranked AS r ON r.rn > {lo} AND r.rn <= {hi}
ORDER BY r.rn"""
