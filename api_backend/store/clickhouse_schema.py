"""The ClickHouse schema of the event store: column types, table DDL (single node or cluster) and its migrations.

Choices, each because of how sitelens reads:

- ``PARTITION BY toYYYYMM(timestamp)``: a month is a unit an operator can drop or move; every query has a time
  window, so whole months are skipped without reading their indexes.
- ``ORDER BY (site_id, toDate(timestamp), session_id, timestamp)``: every query is one site and a range of days, so
  the primary index narrows reads to that site's days; within a day a session's rows lie together, which makes the
  per-session aggregates (bounces, durations, entry and exit pages) read contiguous data and compresses
  ``session_id`` and ``user_id`` to almost nothing. A session that crosses midnight is split in two runs, which
  costs nothing in correctness.
- ``DateTime64(3, 'UTC')`` with ``Delta`` + ``ZSTD``: sorted millisecond times differ by small steps.
- ``LowCardinality(String)`` for the columns with a bounded set of values (browsers, countries, channels, paths of
  one site...): dictionary-encoded, so they are small and group fast. Free text (referrer, query string, ids) stays
  ``String``; the JSON columns get ``ZSTD(3)`` because they repeat the same keys on every row.
- Strings are never NULL ('' means unknown), as in DuckDB; only the five web-vitals columns are ``Nullable``.
- ``log_seq`` is the event-log record an inserted row came from (see ``store/clickhouse.py``).
"""

from __future__ import annotations

import pyarrow as pa

from api_backend.store.events import EVENT_COLUMNS

__all__ = ["MIGRATIONS", "SCHEMA_TABLE", "cluster_schema_sql", "column_type", "events_columns_sql", "single_node_sql"]

SCHEMA_TABLE = "sitelens_schema"

LOW_CARDINALITY = frozenset(
    {
        "hostname", "pathname", "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "page_title",
        "channel", "browser", "browser_version", "operating_system", "operating_system_version", "language",
        "country", "region", "city", "device_type", "type", "event_name",
    }
)  # fmt: skip

PARTITION_BY = "toYYYYMM(timestamp)"
ORDER_BY = "(site_id, toDate(timestamp), session_id, timestamp)"
# Parts are synced before an insert returns: the log position written after it must never outlive the rows.
TABLE_SETTINGS = "fsync_after_insert = 1, fsync_part_directory = 1"


def column_type(name: str, typ: pa.DataType) -> str:
    """The ClickHouse type (with codec) of one ``EVENT_COLUMNS`` column."""
    if name == "timestamp":
        return "DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1))"
    if typ == pa.int32():
        return "Int32"
    if typ == pa.float64():
        return "Nullable(Float64)"
    if name in ("props", "url_parameters"):
        return "String CODEC(ZSTD(3))"
    return "LowCardinality(String)" if name in LOW_CARDINALITY else "String"


def events_columns_sql() -> str:
    """The column list of the ``events`` table, ``log_seq`` last."""
    columns = [f"`{name}` {column_type(name, typ)}" for name, typ in EVENT_COLUMNS]
    columns.append("`log_seq` UInt64 DEFAULT 0")
    return ",\n    ".join(columns)


def _events_table(name: str, engine: str, on_cluster: str = "") -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {name}{on_cluster} (\n    {events_columns_sql()}\n)\n"
        f"ENGINE = {engine}\nPARTITION BY {PARTITION_BY}\nORDER BY {ORDER_BY}\nSETTINGS {TABLE_SETTINGS}"
    )


def _position_table(name: str, engine: str, on_cluster: str = "") -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {name}{on_cluster} (id UInt8, applied_seq UInt64)\n"
        f"ENGINE = {engine}\nORDER BY id\nSETTINGS {TABLE_SETTINGS}"
    )


def single_node_sql(database: str | None = None) -> list[str]:
    """The statements that create the event tables on one server (what the store runs at start-up).

    Table names are qualified with ``database`` when given, else they go to the connection's database.
    """
    prefix = f"`{database}`." if database else ""
    return [
        _events_table(f"{prefix}events", "MergeTree"),
        # One logical row; ReplacingMergeTree keeps the highest position when parts merge, reads take max().
        _position_table(f"{prefix}event_log_position", "ReplacingMergeTree(applied_seq)"),
    ]


def cluster_schema_sql(cluster: str, database: str) -> list[str]:
    """The statements a cluster operator runs: replicated local tables on every node and a Distributed table.

    ``events_local`` is a ``ReplicatedMergeTree`` on every shard; ``events`` is the ``Distributed`` table sitelens
    reads and writes, sharded by a hash of ``session_id`` so every row of a session lives on one shard and the
    per-session aggregates need no cross-shard merge.
    """
    on = f" ON CLUSTER `{cluster}`"
    replicated = "ReplicatedMergeTree('/clickhouse/tables/{shard}/" + database + "/{table}', '{replica}')"
    # The position and schema tables are tiny and written by one sitelens process: one copy on every node (no
    # {shard} in their path), so whichever node sitelens reaches reads the same position.
    replacing = "ReplicatedReplacingMergeTree('/clickhouse/tables/" + database + "/{table}', '{replica}', applied_seq)"
    return [
        f"CREATE DATABASE IF NOT EXISTS `{database}`{on}",
        _events_table(f"`{database}`.events_local", replicated, on),
        f"CREATE TABLE IF NOT EXISTS `{database}`.events{on} AS `{database}`.events_local\n"
        f"ENGINE = Distributed('{cluster}', '{database}', 'events_local', cityHash64(session_id))",
        _position_table(f"`{database}`.event_log_position", replacing, on),
        f"CREATE TABLE IF NOT EXISTS `{database}`.{SCHEMA_TABLE}{on} (version UInt32, applied_at DateTime64(3, 'UTC') "
        "DEFAULT now64(3))\nENGINE = ReplicatedMergeTree('/clickhouse/tables/" + database + "/{table}', "
        "'{replica}')\nORDER BY version",
        f"INSERT INTO `{database}`.{SCHEMA_TABLE} (version) VALUES ({len(MIGRATIONS)})",
    ]


# One entry per schema version: the statements that bring the previous version to it. Append, never edit.
MIGRATIONS: tuple[tuple[str, ...], ...] = (tuple(single_node_sql()),)
