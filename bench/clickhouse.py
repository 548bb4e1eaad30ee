"""The ClickHouse engine (chdb, in-process) loaded with the same rows as the DuckDB event store.

The table mirrors ``EVENT_COLUMNS``: low-cardinality text as ``LowCardinality(String)``, timestamps as
``DateTime64(3, 'UTC')``, sorted by ``(site_id, timestamp)`` like an analytics table would be. Rows are copied from a
DuckDB file as Arrow record batches, so both engines hold exactly the same events.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from api_backend.store.events import EVENT_COLUMNS

__all__ = ["ClickHouseEngine", "ch_literal", "ch_time"]

_LOW_CARDINALITY = {
    "hostname", "pathname", "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "page_title",
    "channel", "browser", "browser_version", "operating_system", "operating_system_version", "language", "country",
    "region", "city", "device_type", "type", "event_name",
}  # fmt: skip


def _column_type(name: str, typ: pa.DataType) -> str:
    if name == "timestamp":
        return "DateTime64(3, 'UTC')"
    if typ == pa.int32():
        return "Int32"
    if typ == pa.float64():
        return "Nullable(Float64)"
    return "LowCardinality(String)" if name in _LOW_CARDINALITY else "String"


def ch_literal(value: Any) -> str:
    """A ClickHouse literal for a string or number (benchmark constants only, never user input)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def ch_time(value: datetime) -> str:
    """A ``DateTime64(3, 'UTC')`` literal of a naive-UTC instant."""
    return f"toDateTime64('{value.strftime('%Y-%m-%d %H:%M:%S.%f')[:-3]}', 3, 'UTC')"


class ClickHouseEngine:
    """A chdb session on its own data path (one per process) with an ``events`` MergeTree table."""

    def __init__(self, path: Path) -> None:
        from chdb import session

        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._session = session.Session(str(self.path))
        self.version = str(self.query("SELECT version() AS v")[0]["v"])

    def command(self, sql: str) -> None:
        """Run a statement that returns nothing."""
        self._session.query(sql)

    def query(self, sql: str) -> list[dict[str, Any]]:
        """Run ``sql`` and return every row as a dict (read fully, through Arrow)."""
        result = self._session.query(sql, "ArrowTable")
        return result.to_pylist()

    def load_from_duckdb(self, duckdb_path: Path, batch_rows: int = 500_000) -> tuple[int, float]:
        """(Re)create ``events`` and copy every row of the DuckDB file into it; return (rows, seconds)."""
        columns = ",\n  ".join(f"`{name}` {_column_type(name, typ)}" for name, typ in EVENT_COLUMNS)
        self.command("DROP TABLE IF EXISTS events")
        self.command(f"CREATE TABLE events (\n  {columns}\n) ENGINE = MergeTree ORDER BY (site_id, timestamp)")
        started = time.perf_counter()
        con = duckdb.connect(str(duckdb_path), read_only=True)
        rows = 0
        try:
            reader = con.sql("SELECT * FROM events").to_arrow_reader(batch_rows)
            for batch in reader:
                chunk = pa.Table.from_batches([batch])  # noqa: F841 (read by chdb's Python() table function)
                self.command("INSERT INTO events SELECT * FROM Python(chunk)")
                rows += batch.num_rows
        finally:
            con.close()
        self.command("OPTIMIZE TABLE events FINAL")
        return rows, time.perf_counter() - started

    def count(self) -> int:
        """Rows in ``events``."""
        return int(self.query("SELECT count() AS n FROM events")[0]["n"])

    def close(self) -> None:
        """Release the session."""
        self._session.close()
