"""The ClickHouse ``sessions`` table (an AggregatingMergeTree fed by a materialized view): after batches in any
order, a schema upgrade over existing events, a crash between insert and log position, and deletes, its finished
rows are those DuckDB's table holds for the same events. And the distinct users each store counts (as numbers and
other strings) against a count in Python."""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

import pytest

from api_backend.query.dialect import CLICKHOUSE, DUCKDB, Dialect
from api_backend.query.facts import FIRST_SET_PARAMETERS
from api_backend.query.overview import (
    build_overview_events_query,
    build_overview_query,
    build_overview_series_events_query,
    build_overview_series_query,
)
from api_backend.query.scope import Scope
from api_backend.query.sql import Query
from api_backend.query.window import Window
from api_backend.store.clickhouse_schema import SCHEMA_TABLE, sessions_final_sql
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import rows_to_table
from api_backend.store.open import open_event_store
from api_backend.store.writer import BatchWriter
from tests.store.test_session_facts import MEMBERS, VISITORS, random_events
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


def users_by_hand(rows: list[dict[str, Any]], site: int, start: datetime, end: datetime) -> tuple[int, dict[str, int]]:
    """Distinct users of the window's sessions, and distinct users per UTC day of the window's events, in Python.

    A session's user is its last identified id, else its last visitor id; an event's user is its identified id, else
    its visitor id. The values are compared as they are: a visitor id and an identified id with the same text are
    one user, an upper-case id and its lower-case form are two.
    """
    sessions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    days: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        if row["site_id"] == site and start <= row["timestamp"] < end:
            sessions[row["session_id"]].append(row)
            days[row["timestamp"].date().isoformat()].add(row["identified_user_id"] or row["user_id"])
    users = set()
    for events in sessions.values():
        identified = [r for r in events if r["identified_user_id"]]
        last = max(identified or events, key=lambda r: r["timestamp"])
        users.add(last["identified_user_id"] or last["user_id"])
    return len(users), {day: len(values) for day, values in days.items()}


def _answers(store: Any, d: Dialect, query: Query) -> list[dict[str, Any]]:
    return store.query_dicts(*d.bind(query))


@pytest.mark.parametrize("seed", range(6))
def test_chfacts005_users_from_numbers_and_strings_equal_a_count_by_hand_on_both_stores(chdb_store, seed):
    # Every session's events carry one visitor id and maybe identified ids; the pools mix real visitor ids with
    # look-alikes (upper case, 15 and 17 digits) and identified ids that have a visitor id's form.
    rng = random.Random(500 + seed)
    rows = random_events(rng, 1000)
    assert {r["user_id"] for r in rows} & set(VISITORS) and {r["identified_user_id"] for r in rows} & set(MEMBERS)
    chdb_store.append(rows_to_table(rows))
    duck = DuckDBEventStore(":memory:")
    duck.append(rows_to_table(rows))
    site = rng.choice((1, 2, 3))
    start = datetime(2026, 3, 1) + timedelta(days=rng.randrange(0, 20), hours=rng.randrange(24))
    end = start + timedelta(days=rng.randrange(3, 15))
    scope = Scope((site,), Window(start, end, "UTC", mode="datetime"), ())
    users, per_day = users_by_hand(rows, site, start, end)
    assert users > 20
    overviews = [
        _answers(duck, DUCKDB, build_overview_query(scope, DUCKDB)),
        _answers(duck, DUCKDB, build_overview_events_query(scope, DUCKDB)),
        _answers(chdb_store, CLICKHOUSE, build_overview_query(scope, CLICKHOUSE)),
    ]
    assert [answer[0]["users"] for answer in overviews] == [users] * 3
    for store, d, query in (
        (duck, DUCKDB, build_overview_series_query(scope, "day", DUCKDB)),
        (duck, DUCKDB, build_overview_series_events_query(scope, "day", DUCKDB)),
        (chdb_store, CLICKHOUSE, build_overview_series_query(scope, "day", CLICKHOUSE)),
    ):
        got = {str(row["bucket"])[:10]: row["users"] for row in _answers(store, d, query) if row["users"]}
        assert got == per_day, (d.name, query.sql)
