"""The small SQL toolkit every query builder shares: bound parameters, the result type and the dialect.

Builders never paste a value into SQL text: ``Params.add(value)`` returns a placeholder and keeps the
value, so a builder returns ``Query(sql, params)`` ready for ``EventStore.query``. The few functions
that differ between engines (regex match, JSON extraction, zone conversion, bucketing) live on a
``Dialect`` so a ClickHouse store can reuse the builders with another instance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["DUCKDB", "Dialect", "Params", "Query", "json_path", "paged_select"]


@dataclass(frozen=True)
class Query:
    """SQL text and the values bound to its placeholders."""

    sql: str
    params: dict[str, Any] = field(default_factory=dict)


class Params:
    """Collects bound values and hands out unique named placeholders (``$p0``, ``$p1``, ...)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def add(self, value: Any) -> str:
        """Bind ``value``; return the placeholder to put in the SQL text."""
        name = f"p{len(self.values)}"
        self.values[name] = value
        return f"${name}"

    def query(self, sql: str) -> Query:
        """Pair ``sql`` with the values bound so far."""
        return Query(sql, dict(self.values))


def json_path(key: str) -> str:
    """A JSON path selecting the top-level ``key`` (quoted, so dots and spaces stay part of the key)."""
    return '$."' + key + '"'


# Bucket name -> the DuckDB expression of the bucket start, given a local (wall-clock) timestamp expression.
_DUCKDB_BUCKETS = {
    "minute": "date_trunc('minute', {t})",
    "five_minutes": "time_bucket(INTERVAL '5 minutes', {t})",
    "ten_minutes": "time_bucket(INTERVAL '10 minutes', {t})",
    "fifteen_minutes": "time_bucket(INTERVAL '15 minutes', {t})",
    "hour": "date_trunc('hour', {t})",
    "day": "date_trunc('day', {t})",
    "week": "date_trunc('week', {t})",  # ISO weeks: Monday start
    "month": "date_trunc('month', {t})",
    "year": "date_trunc('year', {t})",
}


@dataclass(frozen=True)
class Dialect:
    """Engine-specific spellings. Timestamps are naive UTC; string columns are never NULL."""

    name: str

    def regex_search(self, expr: str, pattern: str) -> str:
        """True when the RE2 ``pattern`` matches anywhere in ``expr``."""
        return f"regexp_matches({expr}, {pattern})"

    def regex_full(self, expr: str, pattern: str) -> str:
        """True when the RE2 ``pattern`` matches the whole of ``expr``."""
        return f"regexp_full_match({expr}, {pattern})"

    def json_string(self, column: str, path: str) -> str:
        """The JSON value at ``path`` as text ('' when absent)."""
        return f"coalesce(json_extract_string({column}, {path}), '')"

    def to_double(self, expr: str) -> str:
        """``expr`` as a float, NULL when it is not a number."""
        return f"TRY_CAST({expr} AS DOUBLE)"

    def contains(self, expr: str, value: str) -> str:
        """True when ``value`` occurs in ``expr`` (case-sensitive, no wildcards)."""
        return f"contains({expr}, {value})"

    def starts_with(self, expr: str, value: str) -> str:
        """True when ``expr`` begins with ``value``."""
        return f"starts_with({expr}, {value})"

    def ends_with(self, expr: str, value: str) -> str:
        """True when ``expr`` ends with ``value``."""
        return f"ends_with({expr}, {value})"

    def length(self, expr: str) -> str:
        """Number of characters of ``expr``."""
        return f"length({expr})"

    def substring_after(self, expr: str, skip: int) -> str:
        """``expr`` without its first ``skip`` characters (``skip`` is a trusted integer)."""
        return f"substr({expr}, {int(skip) + 1})"

    def local_time(self, expr: str, zone: str) -> str:
        """The wall-clock time in ``zone`` (a placeholder) of the naive-UTC timestamp ``expr``."""
        return f"timezone({zone}, timezone('UTC', {expr}))"

    def shift_ms(self, expr: str, milliseconds: str) -> str:
        """The timestamp ``expr`` moved by ``milliseconds`` (an integer expression)."""
        return f"({expr} + to_milliseconds({milliseconds}))"

    def bucket(self, local_expr: str, bucket: str) -> str:
        """Start of the ``bucket`` holding the wall-clock timestamp ``local_expr``."""
        return _DUCKDB_BUCKETS[bucket].format(t=local_expr)

    def epoch_seconds(self, expr: str) -> str:
        """Seconds since the epoch (fractional) of a timestamp expression."""
        return f"(epoch_ms({expr}) / 1000.0)"


DUCKDB = Dialect("duckdb")


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
