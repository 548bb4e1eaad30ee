"""The event table and the ``EventStore`` interface every event engine implements.

One wide table holds every tracked event. Strings are never NULL (empty string means "unknown"),
so filters and group-bys behave the same on every engine. ``props`` and ``url_parameters`` hold
JSON text; the five UTM keys also get their own columns because filters and channel queries use
them constantly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

if TYPE_CHECKING:
    from api_backend.query.goals import GoalSpec

__all__ = [
    "EVENT_COLUMNS",
    "EVENT_SCHEMA",
    "EVENT_TYPES",
    "BoundQuery",
    "EventQueryError",
    "EventStore",
    "QueryRejectedError",
    "QueryTooLargeError",
    "event_record",
    "records_to_table",
    "rows_to_table",
]

EVENT_TYPES: tuple[str, ...] = (
    "pageview",
    "custom_event",
    "performance",
    "outbound",
    "error",
    "button_click",
    "copy",
    "form_submit",
    "input_change",
)

# SQL text and its parameters in the engine's own form (``Dialect.bind``).
BoundQuery = tuple[str, Mapping[str, Any]]

_STRING = pa.string()
_INT = pa.int32()
_FLOAT = pa.float64()

# (column, arrow type). Order is the table's column order.
EVENT_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("site_id", _INT),
    ("timestamp", pa.timestamp("ms")),
    ("session_id", _STRING),
    ("user_id", _STRING),
    ("identified_user_id", _STRING),
    ("hostname", _STRING),
    ("pathname", _STRING),
    ("querystring", _STRING),
    ("url_parameters", _STRING),
    ("utm_source", _STRING),
    ("utm_medium", _STRING),
    ("utm_campaign", _STRING),
    ("utm_term", _STRING),
    ("utm_content", _STRING),
    ("page_title", _STRING),
    ("referrer", _STRING),
    ("channel", _STRING),
    ("browser", _STRING),
    ("browser_version", _STRING),
    ("operating_system", _STRING),
    ("operating_system_version", _STRING),
    ("language", _STRING),
    ("country", _STRING),
    ("region", _STRING),
    ("city", _STRING),
    ("screen_width", _INT),
    ("screen_height", _INT),
    ("device_type", _STRING),
    ("type", _STRING),
    ("event_name", _STRING),
    ("props", _STRING),
    ("lcp", _FLOAT),
    ("cls", _FLOAT),
    ("inp", _FLOAT),
    ("fcp", _FLOAT),
    ("ttfb", _FLOAT),
)

EVENT_SCHEMA = pa.schema([pa.field(name, typ, nullable=typ == _FLOAT) for name, typ in EVENT_COLUMNS])
# A record (``event_record``) as Arrow reads it: a struct whose fields are the table's columns.
_RECORD = pa.struct(list(EVENT_SCHEMA))

_DEFAULTS: dict[str, Any] = {
    name: ("" if typ == _STRING else 0 if typ == _INT else None) for name, typ in EVENT_COLUMNS
}
_DEFAULTS["props"] = "{}"
_DEFAULTS["url_parameters"] = "{}"


def event_record(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """An event dict as a record: its values in ``EVENT_SCHEMA`` order, missing keys taking their defaults."""
    return tuple(default if (value := row.get(name)) is None else value for name, default in _DEFAULTS.items())


def records_to_table(records: Sequence[tuple[Any, ...]]) -> pa.Table:
    """Turn records (value tuples in ``EVENT_SCHEMA`` order, as ``event_record`` makes) into an Arrow table.

    Arrow reads the records as one array of structs, whose fields are the table's columns: one conversion call
    for the whole group. A call per column (the records transposed with ``zip``) took 108 us for 12 events where
    this takes 48, and each call gives the GIL up and waits to take it back from the busy event loop.
    """
    if not records:
        return EVENT_SCHEMA.empty_table()
    return pa.Table.from_struct_array(pa.array(records, type=_RECORD))


def rows_to_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Turn event dicts (missing keys take their defaults) into an Arrow table of ``EVENT_SCHEMA``."""
    return records_to_table([event_record(row) for row in rows])


class EventQueryError(Exception):
    """A read query the event engine could not answer; stores raise the subclasses below for their engine's errors."""


class QueryRejectedError(EventQueryError):
    """The engine refused a value bound into the query (a pattern its regex engine cannot compile)."""


class QueryTooLargeError(EventQueryError):
    """The query needed more memory than the engine may use (its memory limit), so it was stopped unanswered."""


class EventStore(Protocol):
    """What sitelens needs from an event engine (DuckDB, ClickHouse)."""

    dialect: str  # the name of its query dialect (``api_backend.query.dialect.dialect_named``)

    def append(self, table: pa.Table, *, log_seq: int | None = None) -> int:
        """Insert the rows of ``table`` (``EVENT_SCHEMA``) in one committed transaction; return the row count.

        With ``log_seq`` the same transaction records that the event log is applied up to that record.
        """
        ...

    def applied_log_seq(self) -> int:
        """The newest event-log record whose rows the store holds (0 when none)."""
        ...

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read query with bound parameters on a cursor of its own and return every row.

        An engine error caused by a bound value is raised as ``QueryRejectedError``.
        """
        ...

    def query_dicts(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        """Like ``query`` but each row is a dict keyed by column name."""
        ...

    def query_dicts_then(
        self, sql: str, params: Mapping[str, Any], then: Callable[[list[dict[str, Any]]], BoundQuery]
    ) -> list[dict[str, Any]]:
        """Run ``sql``, then the query ``then`` makes of its rows as dicts, and return that one's rows as dicts.

        The two see one snapshot of the events where the engine has snapshots (DuckDB); elsewhere each sees the
        events of its own moment.
        """
        ...

    def count(self, site_id: int | None = None) -> int:
        """Number of stored events (of one site, or all)."""
        ...

    def write_stamp(self) -> int | None:
        """A number that changes whenever a write begins, or None while one is under way or the store may be showing
        half of one (an insert that failed part-way, not yet undone).

        A read that found the same number before and after it saw no write half done: where a write reaches its
        tables one after another (ClickHouse's views), only such a read is kept by the result cache
        (``read/results.py``). A store whose writes are transactions (DuckDB) always answers 0.
        """
        ...

    def delete_site(self, site_id: int) -> int:
        """Remove every event of a site; return how many rows went."""
        ...

    def latest_sessions(self, since: datetime) -> list[tuple[int, str, str, datetime]]:
        """``(site_id, user_id, session_id, last_timestamp)`` of each visitor active since ``since``."""
        ...

    def stored_goal_bits(self, site_id: int, goals: Sequence[GoalSpec]) -> list[int] | None:
        """Each goal's bit of the stored sessions' ``goal_mask`` when the store keeps one for every goal, else None
        (``store/goal_bits.py``; the ClickHouse store keeps them in its sealed rows, ``store/clickhouse.py``)."""
        ...

    def store_goal_bits(self, site_id: int, goals: Sequence[GoalSpec]) -> None:
        """Keep the bits of the site's ``goals`` (all of them) in its sessions, where the store can; may take long."""
        ...

    def bulk_load(self) -> AbstractContextManager[None]:
        """A context for appending many events by one job (``sitelens seed``): upkeep the store does every so many
        appends for its readers may wait for the end of it."""
        ...

    def close(self) -> None:
        """Flush and release the engine."""
        ...
