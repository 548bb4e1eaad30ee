"""The DuckDB copy of the error rows (``error_events``, written with the events): after batches of every size, the
upgrade of a file from before it, a replay after a crash, a failed commit and a site's deletion, it holds exactly the
``type = 'error'`` rows of ``events``; and the error queries read the same answers from it as from ``events``."""

from __future__ import annotations

import random
from datetime import datetime

import pytest

from api_backend.query.dialect import DUCKDB
from api_backend.query.scope import window_version_query
from api_backend.query.sql import Query
from api_backend.query.window import Window
from api_backend.store import duckdb as duckdb_module
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.eventlog import EventLog
from api_backend.store.events import EVENT_COLUMNS, rows_to_table
from api_backend.store.writer import BatchWriter
from tests.store.test_error_rows_clickhouse import assert_copy_answers_alike, error_rows
from tests.store.test_session_facts import crash_before_applying

COLUMNS = ", ".join(name for name, _ in EVENT_COLUMNS)


def assert_copy_is_exact(store: DuckDBEventStore) -> int:
    """The copy equals the error rows of ``events``; returns how many it holds."""
    copy = store.query(f"SELECT {COLUMNS} FROM error_events ORDER BY ALL")
    assert copy == store.query(f"SELECT {COLUMNS} FROM events WHERE type = 'error' ORDER BY ALL")
    return len(copy)


@pytest.mark.parametrize("batch", [1, 7, 200, 10_000])
def test_duckerr001_every_append_copies_its_error_rows(batch):
    rows = error_rows(random.Random(batch), 300)
    store = DuckDBEventStore(":memory:")
    for at in range(0, len(rows), batch):
        store.append(rows_to_table(rows[at : at + batch]))
    assert assert_copy_is_exact(store) == sum(r["type"] == "error" for r in rows) > 0
    store.close()


def test_duckerr002_a_file_from_before_the_copy_gets_it_filled_at_open(tmp_path):
    rows = error_rows(random.Random(2), 150)
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    store.append(rows_to_table(rows))
    store._con.execute("DROP TABLE error_events")  # what a file from before the copy looks like
    store.close()

    reopened = DuckDBEventStore(tmp_path / "events.duckdb")
    assert assert_copy_is_exact(reopened) == sum(r["type"] == "error" for r in rows)
    more = [dict(row, session_id="new-" + row["session_id"]) for row in error_rows(random.Random(3), 30)]
    reopened.append(rows_to_table(more))  # and appends keep it from then on
    assert assert_copy_is_exact(reopened) == sum(r["type"] == "error" for r in rows + more)
    reopened.close()


def test_duckerr003_a_restart_after_a_crash_between_log_and_store_copies_each_error_once(tmp_path):
    rows = error_rows(random.Random(4), 200)
    crash_before_applying(tmp_path, rows)

    for _ in range(2):  # the first start replays records 2 and 3, the second start replays nothing
        store = DuckDBEventStore(tmp_path / "events.duckdb")
        BatchWriter(store, log=EventLog(tmp_path / "log")).close()
        assert assert_copy_is_exact(store) == sum(r["type"] == "error" for r in rows)
        store.close()


def test_duckerr004_a_failed_commit_copies_nothing(monkeypatch):
    """The copy is written in the transaction that stores the events: both or neither."""
    monkeypatch.setattr(duckdb_module, "FOLD_ROWS", 100)
    rows = error_rows(random.Random(5), 60)
    store = DuckDBEventStore(":memory:")
    store.append(rows_to_table(rows[:80]), log_seq=1)
    fold = store._fold_pending
    store._fold_pending = [*fold[:-2], Query("SELECT error('the disk is full')"), *fold[-2:]]
    with pytest.raises(duckdb_module.duckdb.Error, match="the disk is full"):
        store.append(rows_to_table(rows[80:150]), log_seq=2)
    assert assert_copy_is_exact(store) == sum(r["type"] == "error" for r in rows[:80])
    store._fold_pending = fold
    store.append(rows_to_table(rows[80:]), log_seq=2)
    assert assert_copy_is_exact(store) == sum(r["type"] == "error" for r in rows)
    store.close()


def test_duckerr005_deleting_a_site_deletes_its_error_rows():
    rows = error_rows(random.Random(6), 300)
    store = DuckDBEventStore(":memory:")
    store.append(rows_to_table(rows))
    store.delete_site(2)
    assert assert_copy_is_exact(store) == sum(r["type"] == "error" and r["site_id"] != 2 for r in rows)
    assert store.query("SELECT count(*) FROM error_events WHERE site_id = 2") == [(0,)]
    store.close()


def test_duckerr006_error_queries_read_the_same_answers_from_the_copy():
    rng = random.Random(7)
    store = DuckDBEventStore(":memory:")
    store.append(rows_to_table(error_rows(rng, 600)))
    assert_copy_answers_alike(store, DUCKDB, rng)
    store.close()


def test_duckerr007_a_read_s_cache_key_counts_the_events_alone():
    """The copy changes in the transaction that changes the events, so the events' count keys both."""
    rows = error_rows(random.Random(8), 100)
    store = DuckDBEventStore(":memory:")
    store.append(rows_to_table(rows))
    window = Window(datetime(2026, 3, 1), datetime(2026, 4, 10), "UTC")
    key = window_version_query((1,), window, DUCKDB)
    assert "error_events" not in key.sql
    expected = sum(r["site_id"] == 1 and window.start <= r["timestamp"] < window.end for r in rows)
    assert store.query(key.sql, key.params) == [(expected,)] and expected > 0
    store.close()
