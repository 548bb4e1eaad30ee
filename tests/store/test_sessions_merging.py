"""The daily merge of a ClickHouse store's ``sessions`` table (``api_backend/store/merging.py``), on the embedded
engine.

Each test stops ClickHouse's own merges of the table by their size limit (one byte), so its parts stay as the test
made them until the schedule merges them: ``OPTIMIZE ... FINAL`` ignores that limit, where ``SYSTEM STOP MERGES``
would refuse it too.
"""

from __future__ import annotations

import dataclasses
import logging
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api_backend.query.dialect import CLICKHOUSE
from api_backend.query.facts import FACTS_MIN_EVENTS
from api_backend.query.overview import build_overview_query
from api_backend.query.scope import Scope
from api_backend.query.window import Window
from api_backend.services import open_services
from api_backend.settings import load_settings
from api_backend.store.events import rows_to_table
from api_backend.store.merging import MERGE_BELOW, SessionsMergeSchedule
from tests.store.test_session_facts import random_events
from tests.store.test_session_facts_clickhouse import finished
from tests.support import wait_until
from tests.support.clickhouse import UNSEALED


class Clock:
    """A UTC clock a test sets."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def _hold_parts(store: Any) -> None:
    """No merge of the ``sessions`` table but the ones asked for (see the module)."""
    store.client.command(
        "ALTER TABLE sessions MODIFY SETTING max_bytes_to_merge_at_max_space_in_pool = 1, "
        "max_bytes_to_merge_at_min_space_in_pool = 1"
    )


def _append_in_parts(store: Any, rows: list[dict[str, Any]], parts: int) -> None:
    size = -(-len(rows) // parts)
    for at in range(0, len(rows), size):
        store.append(rows_to_table(rows[at : at + size]))


def _parts(store: Any) -> int:
    return store.query(
        "SELECT count() FROM system.parts WHERE active AND database = currentDatabase() AND table = 'sessions'"
    )[0][0]


def _overview(store: Any) -> list[dict[str, Any]]:
    """The overview of every event, read from the table whatever its parts."""
    built = build_overview_query(Scope((1,), Window(None, None), ()), CLICKHOUSE)
    assert built.narrowing is not None
    from_table = built.narrowing.then([{"events": FACTS_MIN_EVENTS, "sessions": 0, "merged": 0.0, **UNSEALED}])
    assert from_table.reads_sessions
    return store.query_dicts(*CLICKHOUSE.bind(from_table))


def test_merge001_a_table_in_parts_is_merged_into_one_with_the_same_sessions(chdb_store):
    _hold_parts(chdb_store)
    rows = random_events(random.Random(3), 300)
    random.Random(4).shuffle(rows)  # the rows of one session spread over the parts
    _append_in_parts(chdb_store, rows, 4)
    assert _parts(chdb_store) == 4
    share = chdb_store.sessions_merged_share()
    assert share is not None and share < MERGE_BELOW
    sessions, overview = finished(chdb_store), _overview(chdb_store)

    result = SessionsMergeSchedule(chdb_store, 3).merge_if_needed()

    assert result["merged"] and result["share"] == share
    assert result["parts_before"] == 4 and result["parts_after"] == 1 and result["seconds"] >= 0
    assert _parts(chdb_store) == 1 and chdb_store.sessions_merged_share() == 1.0
    assert chdb_store.query("SELECT count() FROM sessions") == [(300,)]
    assert finished(chdb_store) == sessions
    assert _overview(chdb_store) == overview
    # Merged, the table is left alone.
    assert SessionsMergeSchedule(chdb_store, 3).merge_if_needed() == {"share": 1.0, "merged": False}


def test_merge002_a_table_whose_largest_part_holds_most_rows_is_left_as_it_is(chdb_store):
    _hold_parts(chdb_store)
    schedule = SessionsMergeSchedule(chdb_store, 3)
    assert chdb_store.sessions_merged_share() is None  # no rows yet
    assert schedule.merge_if_needed() == {"share": None, "merged": False}
    rows = random_events(random.Random(5), 200)
    chdb_store.append(rows_to_table([row for row in rows if row["session_id"] != "s0"]))
    chdb_store.append(rows_to_table([row for row in rows if row["session_id"] == "s0"]))
    assert 199 / 200 >= MERGE_BELOW
    assert chdb_store.sessions_merged_share() == 199 / 200

    assert schedule.merge_if_needed() == {"share": 199 / 200, "merged": False}
    assert _parts(chdb_store) == 2


def test_merge003_the_check_merges_in_its_hour_once_a_day(chdb_store):
    _hold_parts(chdb_store)
    rows = random_events(random.Random(6), 120)
    _append_in_parts(chdb_store, rows[:60], 3)
    clock = Clock(datetime(2026, 5, 4, 2, 59, 59, tzinfo=UTC))
    schedule = SessionsMergeSchedule(chdb_store, 3, now=clock)

    assert schedule.check() is None and _parts(chdb_store) == 3  # before its hour
    clock.now += timedelta(seconds=1)
    assert schedule.check()["merged"] and _parts(chdb_store) == 1
    _append_in_parts(chdb_store, rows[60:], 3)
    clock.now += timedelta(minutes=59)
    assert schedule.check() is None and _parts(chdb_store) == 4  # that day's hour was checked
    clock.now += timedelta(hours=2)
    assert schedule.check() is None  # past its hour
    clock.now = datetime(2026, 5, 5, 3, 30, tzinfo=UTC)
    assert schedule.check()["parts_before"] == 4 and _parts(chdb_store) == 1
    with pytest.raises(ValueError, match="hour"):
        SessionsMergeSchedule(chdb_store, 24)


def test_merge004_the_schedules_thread_merges_and_outlives_a_failed_merge(chdb_store, caplog):
    _hold_parts(chdb_store)
    _append_in_parts(chdb_store, random_events(random.Random(7), 90), 3)
    clock = Clock(datetime(2026, 5, 4, 3, 0, tzinfo=UTC))
    schedule = SessionsMergeSchedule(chdb_store, 3, now=clock)
    schedule.start()
    try:
        wait_until(lambda: _parts(chdb_store) == 1, message="the thread did not merge the table")
    finally:
        schedule.close()
    assert schedule._thread is None

    # A merge the server refuses (here: merges stopped) is logged; the thread goes on to its next check.
    _append_in_parts(chdb_store, random_events(random.Random(8), 90), 3)
    chdb_store.client.command("SYSTEM STOP MERGES sessions")
    clock.now = datetime(2026, 5, 5, 3, 0, tzinfo=UTC)
    caplog.set_level(logging.ERROR, logger="api_backend.store.merging")
    schedule = SessionsMergeSchedule(chdb_store, 3, now=clock)
    schedule.start()
    try:
        wait_until(lambda: "daily merge of the ClickHouse sessions table failed" in caplog.text)
        thread = schedule._thread
        assert thread is not None and thread.is_alive()
    finally:
        schedule.close()
        chdb_store.client.command("SYSTEM START MERGES sessions")
    assert _parts(chdb_store) == 4


def test_merge005_a_server_on_clickhouse_runs_the_schedule_of_its_settings(chdb_settings, tmp_path):
    with_hour = dataclasses.replace(chdb_settings, clickhouse_merge_hour=5)
    services = open_services(with_hour)
    try:
        assert services.merging is not None and services.merging.hour == 5
        thread = services.merging._thread
        assert thread is not None and thread.is_alive()
    finally:
        services.close()
    assert not thread.is_alive()
    services = open_services(chdb_settings)  # `off`
    try:
        assert services.merging is None
    finally:
        services.close()
    duckdb_settings = load_settings({}, data_dir=str(tmp_path / "duck"), secret_key="k" * 20)
    services = open_services(duckdb_settings)  # DuckDB keeps no parts
    try:
        assert duckdb_settings.clickhouse_merge_hour == 3 and services.merging is None
    finally:
        services.close()
