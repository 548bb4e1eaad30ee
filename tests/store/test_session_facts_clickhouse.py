"""The ClickHouse ``sessions`` table (an AggregatingMergeTree fed by a materialized view): after batches in any
order, a schema upgrade over existing events, a crash between insert and log position, and deletes, its finished
rows are those DuckDB's table holds for the same events."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from api_backend.query.facts import FIRST_SET_PARAMETERS
from api_backend.store.clickhouse_schema import SCHEMA_TABLE, sessions_final_sql
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import rows_to_table
from api_backend.store.open import open_event_store
from api_backend.store.writer import BatchWriter
from tests.store.test_session_facts import random_events
from tests.support.clickhouse import crash_before_position

COLUMNS = (
    "site_id, session_id, first_seen, last_seen, pageviews, events, user_value, users, entry_page, exit_page, channel, "
    + ", ".join(FIRST_SET_PARAMETERS)
)


def finished(store: Any) -> list[tuple[Any, ...]]:
    """Rows of the finished sessions, lists sorted, in key order."""
    sql = f"SELECT {COLUMNS} FROM ({sessions_final_sql()}) ORDER BY site_id, session_id"
    if isinstance(store, DuckDBEventStore):
        sql = f"SELECT {COLUMNS} FROM sessions ORDER BY site_id, session_id"
    rows = store.query(sql)
    return [tuple(sorted(v) if isinstance(v, list) else v for v in row) for row in rows]


def duckdb_facts(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    duck = DuckDBEventStore(":memory:")
    if rows:
        duck.append(rows_to_table(rows))
    return finished(duck)


def test_chfacts001_batches_in_any_order_give_duckdbs_sessions(chdb_store):
    rng = random.Random(11)
    rows = random_events(rng, 400)
    shuffled = rows[:]
    rng.shuffle(shuffled)
    for at in range(0, len(shuffled), 250):
        chdb_store.append(rows_to_table(shuffled[at : at + 250]))
    assert chdb_store.query("SELECT count() > 400 FROM sessions") == [(True,)]  # parts not merged yet: reads merge them
    assert finished(chdb_store) == duckdb_facts(rows)


def test_chfacts002_upgrading_a_database_fills_the_table_from_its_events(chdb_settings):
    store, _ = open_event_store(chdb_settings)
    rows = random_events(random.Random(12), 200)
    store.append(rows_to_table(rows))
    # What a database of schema version 1 looks like: events, no sessions and no copy of the error rows.
    for view, table in (("sessions_mv", "sessions"), ("error_events_mv", "error_events")):
        store.client.command(f"DROP VIEW {view} SYNC")
        store.client.command(f"DROP TABLE {table} SYNC")
    store.client.command(f"DELETE FROM {SCHEMA_TABLE} WHERE version >= 2", settings={"mutations_sync": 2})
    store.close()

    upgraded, _ = open_event_store(chdb_settings)
    assert upgraded.schema_version == 3
    assert finished(upgraded) == duckdb_facts(rows)
    more = [dict(row, session_id="new-" + row["session_id"]) for row in random_events(random.Random(13), 20)]
    upgraded.append(rows_to_table(more))  # and the view keeps it from then on
    assert finished(upgraded) == duckdb_facts(rows + more)
    upgraded.close()


def test_chfacts003_a_crash_between_insert_and_position_leaves_each_event_counted_once(chdb_settings, tmp_path):
    rows = random_events(random.Random(14), 150)
    parts = [rows[:200], rows[200:400], rows[400:]]
    # ClickHouse took the last two records (and the view their sessions) but the process died before the position.
    event_log = crash_before_position(chdb_settings, tmp_path / "log", parts)

    store, _ = open_event_store(chdb_settings)  # recovery deletes the orphan rows and rebuilds their sessions
    assert finished(store) == duckdb_facts(parts[0])
    BatchWriter(store, log=event_log).close()  # the replay copies their records once
    assert finished(store) == duckdb_facts(rows)
    store.close()


def test_chfacts004_deletes_take_the_sessions_with_them(chdb_store):
    rows = random_events(random.Random(15), 200)
    chdb_store.append(rows_to_table(rows))
    chdb_store.delete_site(2)
    kept = [r for r in rows if r["site_id"] != 2]
    assert finished(chdb_store) == duckdb_facts(kept)
    start, end = datetime(2026, 3, 10), datetime(2026, 3, 20)
    chdb_store.delete_range(1, start, end)
    kept = [r for r in kept if not (r["site_id"] == 1 and start <= r["timestamp"] < end)]
    assert finished(chdb_store) == duckdb_facts(kept)
