"""The ClickHouse copy of the error rows (``error_events``, filled by a materialized view): after batches, a schema
upgrade over existing events, a crash between insert and log position, and deletes, it holds exactly the
``type = 'error'`` rows of ``events``; and the error queries read the same answers from it as from ``events``."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from api_backend.query.dialect import CLICKHOUSE, Dialect
from api_backend.query.filters import Filter
from api_backend.query.js_errors import build_error_events_query, build_error_names_query, build_error_series_query
from api_backend.query.scope import Scope
from api_backend.query.sql import Query
from api_backend.query.window import Window
from api_backend.store.clickhouse_schema import SCHEMA_TABLE, sessions_sql
from api_backend.store.events import EVENT_COLUMNS, rows_to_table
from api_backend.store.open import open_event_store
from api_backend.store.writer import BatchWriter
from tests.store.test_session_facts import random_events
from tests.support.clickhouse import crash_before_position

COLUMNS = ", ".join([name for name, _ in EVENT_COLUMNS] + ["log_seq"])
MESSAGES = ["", "x is undefined", "Network error", "Script error."]


def error_rows(rng: random.Random, sessions: int) -> list[dict[str, Any]]:
    """``random_events`` whose errors carry a class name and one of a few messages (some empty)."""
    rows = random_events(rng, sessions)
    for row in rows:
        if row["type"] == "error":
            row["event_name"] = rng.choice(["", "TypeError", "Error"])
            row["props"] = f'{{"message": "{rng.choice(MESSAGES)}", "lineno": {rng.randrange(1, 90)}}}'
    return rows


def stored(store: Any, table: str, where: str = "") -> list[tuple[Any, ...]]:
    return store.query(f"SELECT {COLUMNS} FROM {table} {where} ORDER BY {COLUMNS}")


def assert_copy_is_exact(store: Any) -> None:
    copy = stored(store, "error_events")
    assert copy == stored(store, "events", "WHERE type = 'error'")
    assert copy, "the events hold errors"


def test_cherr001_every_insert_copies_its_error_rows(chdb_store):
    rows = error_rows(random.Random(21), 300)
    for seq, at in enumerate(range(0, len(rows), 200), start=1):
        chdb_store.append(rows_to_table(rows[at : at + 200]), log_seq=seq)
    assert_copy_is_exact(chdb_store)
    assert chdb_store.query("SELECT count() FROM error_events") == [(sum(r["type"] == "error" for r in rows),)]


def test_cherr002_upgrading_a_database_fills_the_copy_from_its_events(chdb_settings):
    store, _ = open_event_store(chdb_settings)
    store.append(rows_to_table(error_rows(random.Random(22), 150)))
    # What a database of schema version 2 looks like: events and sessions as version 2 made them, no copies of the
    # error or goal rows.
    for view, table in (
        ("error_events_mv", "error_events"),
        ("goal_events_mv", "goal_events"),
        ("sessions_mv", "sessions"),
    ):
        store.client.command(f"DROP VIEW {view} SYNC")
        store.client.command(f"DROP TABLE {table} SYNC")
    for statement in sessions_sql():
        store.client.command(statement)
    store.client.command(f"DELETE FROM {SCHEMA_TABLE} WHERE version >= 3", settings={"mutations_sync": 2})
    store.close()

    upgraded, _ = open_event_store(chdb_settings)
    assert upgraded.schema_version == 11
    assert_copy_is_exact(upgraded)
    more = [dict(row, session_id="new-" + row["session_id"]) for row in error_rows(random.Random(23), 30)]
    upgraded.append(rows_to_table(more))  # and the view keeps it from then on
    assert_copy_is_exact(upgraded)
    upgraded.close()


def test_cherr003_a_crash_between_insert_and_position_leaves_each_error_once(
    chdb_settings, chdb_client, chdb_database, tmp_path
):
    rows = error_rows(random.Random(24), 150)
    parts = [rows[:200], rows[200:400], rows[400:]]
    # ClickHouse took the last two records (and the view their error rows) but the process died before the position.
    event_log = crash_before_position(chdb_settings, tmp_path / "log", parts)
    copied = chdb_client.query(f"SELECT count() FROM `{chdb_database}`.error_events").result_rows
    assert copied == [(sum(r["type"] == "error" for r in rows),)]

    store, _ = open_event_store(chdb_settings)  # recovery deletes the orphan rows from both tables
    assert_copy_is_exact(store)
    assert store.query("SELECT count() FROM error_events") == [(sum(r["type"] == "error" for r in parts[0]),)]
    BatchWriter(store, log=event_log).close()  # the replay copies their records once
    assert_copy_is_exact(store)
    assert store.query("SELECT count() FROM error_events") == [(sum(r["type"] == "error" for r in rows),)]
    store.close()


def test_cherr004_an_orphan_error_row_alone_is_removed_too(chdb_settings):
    """A start that died after deleting the orphan events but before their error rows finishes the job."""
    store, _ = open_event_store(chdb_settings)
    store.append(rows_to_table(error_rows(random.Random(25), 40)), log_seq=3)
    orphan = rows_to_table([r for r in error_rows(random.Random(26), 40) if r["type"] == "error"])
    store.client.insert_arrow(
        "error_events", orphan.append_column("log_seq", pa.array([9] * orphan.num_rows, pa.uint64()))
    )
    store.close()

    store, _ = open_event_store(chdb_settings)
    assert_copy_is_exact(store)
    store.close()


def assert_deletes_take_the_copy(store: Any, copy: str, assert_exact: Callable[[Any], None]) -> None:
    """Deleting site 2, then ten days of site 1, leaves ``copy`` exact and without their rows."""
    store.delete_site(2)
    assert_exact(store)
    assert store.query(f"SELECT count() FROM {copy} WHERE site_id = 2") == [(0,)]
    start, end = datetime(2026, 3, 10), datetime(2026, 3, 20)
    store.delete_range(1, start, end)
    assert_exact(store)
    assert store.query(
        f"SELECT count() FROM {copy} WHERE site_id = 1 AND timestamp >= {{s:DateTime64(3)}} "
        "AND timestamp < {e:DateTime64(3)}",
        {"s": start, "e": end},
    ) == [(0,)]


def test_cherr005_deletes_take_the_error_rows_with_them(chdb_store):
    chdb_store.append(rows_to_table(error_rows(random.Random(27), 300)))
    assert_deletes_take_the_copy(chdb_store, "error_events", assert_copy_is_exact)


FILTERS = [
    (),
    (Filter("pathname", "starts_with", ("/blog",)),),  # on the error rows themselves
    (Filter("device_type", "equals", ("mobile",)),),
    (Filter("country", "equals", ("DE", "FR")),),  # selects sessions on all their events
    (Filter("channel", "not_equals", ("Direct",)), Filter("browser", "equals", ("Chrome",))),
]


def error_queries(scope: Scope, message: str, bucket: str, d: Dialect) -> dict[str, Query]:
    return {
        "names": build_error_names_query(scope, 10, 0, d),
        "events": build_error_events_query(scope, message, 20, 0, d),
        "series": build_error_series_query(scope, message, bucket, d),
    }


def assert_copy_answers_alike(store: Any, d: Dialect, rng: random.Random) -> None:
    """On 12 random windows and filters, the error queries of ``d`` read the same from the copy as from ``events``."""
    from_events = dataclasses.replace(d, error_rows="events")
    answered = 0
    for case in range(12):
        start = datetime(2026, 3, 1) + timedelta(hours=rng.randrange(0, 24 * 20), minutes=rng.randrange(60))
        window = Window(start, start + timedelta(days=rng.randrange(1, 15)), rng.choice(["UTC", "Asia/Kolkata"]))
        scope = Scope((rng.choice([1, 2]),), window, FILTERS[case % len(FILTERS)])
        message, bucket = rng.choice(MESSAGES[1:]), rng.choice(["hour", "day"])
        plain = error_queries(scope, message, bucket, from_events)
        for name, query in error_queries(scope, message, bucket, d).items():
            sql, params = d.bind(query)
            assert "FROM error_events" in sql and "FROM error_events" not in plain[name].sql
            answer = store.query(sql, params)
            assert answer == store.query(*from_events.bind(plain[name])), (name, case, scope)
            answered += bool(answer)
    assert answered > 20  # most windows hold errors


def test_cherr006_error_queries_read_the_same_answers_from_the_copy(chdb_store):
    rng = random.Random(28)
    chdb_store.append(rows_to_table(error_rows(rng, 600)))
    assert_copy_answers_alike(chdb_store, CLICKHOUSE, rng)
