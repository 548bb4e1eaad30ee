"""The DuckDB event file: a file cut short is refused at open, a file DuckDB itself shortened is not, and the
write-ahead log does not grow without bound."""

from __future__ import annotations

import random
from datetime import datetime

import duckdb
import pytest

from api_backend.store import duckdb as duckdb_module
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import rows_to_table
from tests.store.test_session_facts import random_events


def _stored(path) -> None:
    store = DuckDBEventStore(path)
    store.append(rows_to_table(random_events(random.Random(1), 200)))
    store.close()


def test_duckdbfile001_a_file_shortened_by_freed_blocks_opens_with_its_events(tmp_path):
    path = tmp_path / "events.duckdb"
    _stored(path)
    events = DuckDBEventStore(path).count()
    con = duckdb.connect(str(path))  # blocks at the end of the file freed: DuckDB shortens the file at checkpoint
    con.execute("CREATE TABLE scratch AS SELECT range AS i, md5(range::VARCHAR) AS s FROM range(2000000)")
    con.close()
    grown = path.stat().st_size
    con = duckdb.connect(str(path))
    con.execute("DROP TABLE scratch")
    con.close()
    assert path.stat().st_size < grown / 4
    (total, used) = (
        duckdb.connect(str(path)).execute("SELECT total_blocks, used_blocks FROM pragma_database_size()").fetchone()
    )
    assert total > used  # the header still counts the freed blocks

    reopened = DuckDBEventStore(path)
    assert reopened.count() == events
    reopened.close()


def test_duckdbfile002_a_file_missing_blocks_in_use_is_refused_at_open(tmp_path):
    path = tmp_path / "events.duckdb"
    _stored(path)
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE bulk AS SELECT range AS i, md5(range::VARCHAR) AS s FROM range(2000000)")
    con.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])

    with pytest.raises(duckdb.IOException, match="cut short"):
        DuckDBEventStore(path)


def test_duckdbfile003_a_write_ahead_log_past_the_limit_is_moved_into_the_file(tmp_path, monkeypatch):
    """The store checkpoints itself, also while a read holds a snapshot, and the events stay readable."""
    monkeypatch.setattr(duckdb_module, "CHECKPOINT_WAL_BYTES", 64 * 1024)
    path = tmp_path / "events.duckdb"
    wal = tmp_path / "events.duckdb.wal"
    store = DuckDBEventStore(path)
    rows = [{"site_id": 1, "session_id": f"s{i % 40}", "timestamp": datetime(2026, 1, 1, 0, i % 60), "type": "pageview",
             "pathname": f"/page/{i}"} for i in range(3000)]  # fmt: skip
    store.append(rows_to_table(rows[:1000]))
    assert not wal.exists() or wal.stat().st_size <= 64 * 1024
    with store._reading("SELECT count(*) FROM sessions") as cur:
        before = cur.execute("SELECT count(*) FROM events").fetchall()
        store.append(rows_to_table(rows[1000:2000]))
        assert cur.execute("SELECT count(*) FROM events").fetchall() == before == [(1000,)]
    store.append(rows_to_table(rows[2000:]))
    assert not wal.exists() or wal.stat().st_size <= 64 * 1024
    assert store.query("SELECT sum(events) FROM sessions") == [(3000,)]
    store.close()
    reopened = DuckDBEventStore(path)
    assert reopened.count() == 3000
    reopened.close()
