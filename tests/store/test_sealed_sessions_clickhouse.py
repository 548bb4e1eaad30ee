"""The ClickHouse store's sealed sessions (``sealed_sessions``, schema version 8): a seal writes each session that
stopped before its cutoff finished, once; reads take those rows as they are and merge only the sessions the seal left
open (an event after its log position, or one at or after its cutoff), and give the numbers of the event grouping
and of DuckDB on random windows, zones, buckets, goals and filters. Direct writes undo the seal until a full one;
a seal that never got recorded leaves nothing behind; deleting a site deletes its sealed rows."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from api_backend.ingest.sessions import SESSION_TIMEOUT, STAMP_LEAD
from api_backend.query import facts as facts_module
from api_backend.query.dialect import CLICKHOUSE, DUCKDB
from api_backend.query.facts import NO_CUTOFF
from api_backend.query.filters import SESSION_PARAMETERS
from api_backend.query.goals import build_goal_breakdown_events_query, build_goal_breakdown_query
from api_backend.query.metric import build_metric_events_query, build_metric_query
from api_backend.query.overview import build_overview_events_query, build_overview_query
from api_backend.query.scope import Scope
from api_backend.query.sql import Query
from api_backend.query.window import Window
from api_backend.read.results import ResultCache
from api_backend.services import SEAL_IDLE, open_services
from api_backend.settings import load_settings
from api_backend.store import clickhouse as clickhouse_module
from api_backend.store.clickhouse import ClickHouseEventStore, Seal
from api_backend.store.clickhouse_schema import MIGRATIONS, SCHEMA_TABLE
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import rows_to_table
from api_backend.store.open import open_event_store
from api_backend.store.sealing import SessionsSealSchedule
from tests.store.test_session_facts import (
    BUCKETS,
    GOALS,
    START,
    assert_same,
    random_events,
    random_scope,
    random_window,
)
from tests.store.test_session_facts_clickhouse import _shared_reads, finished
from tests.support import wait_until
from tests.support.clickhouse import SECRET, chdb_url, drop_database, fresh_database

# The data spans 35 days from START; the seal's cutoff and the later log record split it.
CUTOFF = START + timedelta(days=24)
LATER = START + timedelta(days=26)


def _sealed_rows(store: ClickHouseEventStore, generation: int | None = None) -> list[tuple[Any, ...]]:
    """The sealed rows of ``generation`` (the current one by default) in ``finished``'s columns and order."""
    if generation is None:
        seal = store.current_seal()
        assert seal is not None
        generation = seal.generation
    columns = (
        "site_id, session_id, first_seen, last_seen, pageviews, events, user_value, users, entry_page, exit_page, "
        "channel, browser, browser_version, operating_system, operating_system_version, device_type, language, "
        "country, region, city, dimensions, hostname, referrer, utm_source, utm_medium, utm_campaign, utm_term, "
        "utm_content, pathnames"
    )
    rows = store.query(
        f"SELECT {columns} FROM sealed_sessions WHERE generation = {{g:UInt32}} ORDER BY site_id, session_id",
        {"g": generation},
    )
    return [tuple(sorted(v) if isinstance(v, list) else v for v in row) for row in rows]


def _narrowed(store: ClickHouseEventStore, query: Query) -> tuple[list[dict[str, Any]], Query]:
    """The rows of ``query`` through its narrowing, as the event reader runs it, and the query the narrowing made."""
    assert query.narrowing is not None
    made: list[Query] = []

    def then(rows: list[dict[str, Any]]) -> tuple[str, Any]:
        made.append(query.narrowing.then(rows))  # type: ignore[union-attr]
        return CLICKHOUSE.bind(made[0])

    return store.query_dicts_then(*CLICKHOUSE.bind(query.narrowing.first), then), made[0]


@pytest.fixture(scope="module")
def sealed_stores(chdb_client: Any, chdb_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """1500 random sessions in a ClickHouse store and in DuckDB. ClickHouse gets the events before ``LATER`` as log
    record 1 and seals at ``CUTOFF``; then record 2 brings the rest, and a later event of a few sessions sealed
    already. So reads meet sealed sessions, sessions open by the cutoff, by the log, and sealed ones open again."""
    name = fresh_database(chdb_client)
    data_dir = tmp_path_factory.mktemp("sealed") / "data"
    settings = load_settings({}, data_dir=str(data_dir), secret_key=SECRET, events_url=chdb_url(chdb_path, name))
    store, _ = open_event_store(settings)
    rng = random.Random(20261201)
    rows = random_events(rng, 1500)
    early = [r for r in rows if r["timestamp"] < LATER]
    store.append(rows_to_table(early), log_seq=1)
    first = store.seal_sessions(CUTOFF)
    sealed_ids = sorted({r["session_id"] for r in early if r["timestamp"] < CUTOFF - timedelta(hours=2)})
    reopened = [
        {
            **next(r for r in early if r["session_id"] == sid),
            "timestamp": LATER + timedelta(hours=n),
            "type": "pageview",
        }
        for n, sid in enumerate(rng.sample(sealed_ids, 12))
    ]
    rows += reopened
    store.append(rows_to_table([r for r in rows if r["timestamp"] >= LATER]), log_seq=2)
    duck = DuckDBEventStore(":memory:")
    duck.append(rows_to_table(rows))
    yield store, duck, rows, first, {r["session_id"] for r in reopened}
    store.close()
    drop_database(chdb_client, name)


def test_seal001_a_first_seal_writes_every_session_stopped_before_its_cutoff_finished(sealed_stores):
    store, duck, rows, first, _ = sealed_stores
    assert first["full"] and first["generation"] == 1 and first["seal"] == 1
    early = [r for r in rows if r["timestamp"] < LATER]
    last = {}
    for r in early:
        key = (r["site_id"], r["session_id"])
        last[key] = max(last.get(key, r["timestamp"]), r["timestamp"])
    stopped = {key for key, at in last.items() if at < CUTOFF}
    assert first["sessions"] == len(stopped) > 500
    early_duck = DuckDBEventStore(":memory:")
    early_duck.append(rows_to_table(early))
    want = [row for row in finished(early_duck) if (row[0], row[1]) in stopped]
    assert _sealed_rows(store) == want
    assert store.current_seal() == Seal(1, 1, 1, CUTOFF)


@pytest.mark.parametrize("seed", range(30))
def test_seal002_reads_of_the_sealed_and_open_sessions_equal_the_events_and_duckdb(sealed_stores, seed, monkeypatch):
    """Every read taking whole sessions from the table reads the sealed rows where the narrowing finds a seal: the
    answers equal the event grouping's and DuckDB's on random windows, zones, buckets, goals and filters."""
    monkeypatch.setattr(facts_module, "SEALED_MIN_EVENTS", 0)  # these few events are read from the seal too
    monkeypatch.setattr(facts_module, "SEALED_OPEN_SHARE", float("inf"))  # however many are open
    store, duck, _, _, _ = sealed_stores
    rng = random.Random(9100 + seed)
    scope = random_scope(rng, seed)
    parameter = sorted(SESSION_PARAMETERS)[seed % len(SESSION_PARAMETERS)]
    bucket = rng.choice(BUCKETS)
    goal = GOALS[seed % len(GOALS)]
    context = (parameter, bucket, goal, scope)
    for builder, events_builder, args in _shared_reads(scope, parameter, bucket, goal):
        want = store.query_dicts(*CLICKHOUSE.bind(events_builder(*args, CLICKHOUSE)))
        assert_same(want, duck.query_dicts(*DUCKDB.bind(builder(*args, DUCKDB))), context)
        got, made = _narrowed(store, builder(*args, CLICKHOUSE))
        assert "FROM sealed_sessions" in made.sql, context
        assert_same(got, want, context)


def test_seal003_the_next_seal_writes_the_sessions_left_open_and_seals_the_reopened_ones_again(
    chdb_settings, monkeypatch
):
    """A later seal writes only the sessions the one before left open: those with events after its log position
    or at or after its cutoff, now stopped. A sealed session that got an event anyway loses its row and is sealed
    anew with all its events. Sessions still active stay open."""
    store, _ = open_event_store(chdb_settings)
    try:
        rows = random_events(random.Random(5), 400)
        early = [r for r in rows if r["timestamp"] < LATER]
        store.append(rows_to_table(early), log_seq=1)
        store.seal_sessions(CUTOFF)
        old = next(r for r in early if r["timestamp"] < CUTOFF - timedelta(hours=2))
        again = {**old, "timestamp": LATER + timedelta(hours=1)}
        later = [*(r for r in rows if r["timestamp"] >= LATER), again]
        store.append(rows_to_table(later), log_seq=2)
        end = START + timedelta(days=40)
        second = store.seal_sessions(end)
        assert not second["full"] and second["generation"] == 1 and second["seal"] == 2
        everything = DuckDBEventStore(":memory:")
        everything.append(rows_to_table([*rows, again]))
        assert _sealed_rows(store) == finished(everything)
        assert store.current_seal() == Seal(2, 1, 2, end)
        # A seal with nothing open writes nothing; a cutoff never goes back.
        third = store.seal_sessions(end - timedelta(days=30))
        assert third["sessions"] == 0 and store.current_seal() == Seal(3, 1, 2, end)
    finally:
        store.close()


def test_seal004_a_direct_write_undoes_the_seal_until_a_full_one_writes_a_new_generation(chdb_settings):
    """Rows of no log record are not found by the seal's position: a direct write records a seal holding no
    sessions, reads then merge the table, and the next seal writes every stopped session again, in a new generation
    whose partition replaces the old one's a seal later."""
    store, _ = open_event_store(chdb_settings)
    try:
        rows = random_events(random.Random(6), 300)
        store.append(rows_to_table(rows[:200]), log_seq=1)
        store.seal_sessions(START + timedelta(days=40))
        store.append(rows_to_table(rows[200:]))
        current = store.current_seal()
        assert current == Seal(2, 2, 1, NO_CUTOFF)
        scope = Scope((1,), Window(START, START + timedelta(days=40), "UTC", mode="datetime"), ())
        _, made = _narrowed(store, build_overview_query(scope, CLICKHOUSE))
        assert "sealed_sessions" not in made.sql
        full = store.seal_sessions(START + timedelta(days=40))
        assert full["full"] and full["generation"] == 2
        everything = DuckDBEventStore(":memory:")
        everything.append(rows_to_table(rows))
        assert _sealed_rows(store) == finished(everything)
        assert _sealed_rows(store, generation=1)  # kept while a read may still hold the seal before
        store.seal_sessions(START + timedelta(days=40))
        assert not _sealed_rows(store, generation=1)
    finally:
        store.close()


def test_seal005_a_seal_never_recorded_leaves_no_rows_after_a_restart(chdb_settings):
    store, _ = open_event_store(chdb_settings)
    rows = random_events(random.Random(7), 200)
    store.append(rows_to_table(rows), log_seq=1)
    real = store.client.command

    def stop_before_the_record(sql: str, *args: Any, **kwargs: Any) -> Any:
        if sql.startswith("INSERT INTO session_seals"):
            raise ConnectionError("the process stopped")
        return real(sql, *args, **kwargs)

    store.client.command = stop_before_the_record
    with pytest.raises(ConnectionError):
        store.seal_sessions(START + timedelta(days=40))
    store.client.command = real
    assert store.query("SELECT count() FROM sealed_sessions")[0][0] > 0
    store.close()
    reopened, _ = open_event_store(chdb_settings)
    try:
        assert reopened.query("SELECT count() FROM sealed_sessions") == [(0,)]
        assert reopened.current_seal() is None
        assert reopened.seal_sessions(START + timedelta(days=40))["full"]
    finally:
        reopened.close()


def test_seal006_deleting_a_site_deletes_its_sealed_sessions_and_a_range_undoes_the_seal(chdb_settings):
    store, _ = open_event_store(chdb_settings)
    try:
        rows = random_events(random.Random(8), 300)
        store.append(rows_to_table(rows), log_seq=1)
        store.seal_sessions(START + timedelta(days=40))
        sites = {site for (site,) in store.query("SELECT DISTINCT site_id FROM sealed_sessions")}
        assert 1 in sites and len(sites) > 1
        store.delete_site(1)
        assert {site for (site,) in store.query("SELECT DISTINCT site_id FROM sealed_sessions")} == sites - {1}
        store.delete_range(2, START, START + timedelta(days=1))
        seal = store.current_seal()
        assert seal is not None and seal.cutoff == NO_CUTOFF
    finally:
        store.close()


def test_seal007_the_overview_reads_a_seal_only_where_one_is_worth_reading(chdb_settings):
    """The narrowing takes the sealed rows for a window of many events with few sessions left open; not before the
    first seal, after one a direct write undid, for a small window, or with most of the window's sessions open."""
    store, _ = open_event_store(chdb_settings)
    try:
        scope = Scope((1,), Window(START, START + timedelta(days=40), "UTC", mode="datetime"), ())
        built = build_overview_query(scope, CLICKHOUSE)
        assert built.narrowing is not None

        def picks(events: int, seal: tuple[Any, ...], opened: tuple[int, datetime]) -> bool:
            row = {"events": events, "sessions": 0, "merged": 1.0, "seal": seal, "opened": opened, "users": 0}
            return "FROM sealed_sessions" in built.narrowing.then([row]).sql  # type: ignore[union-attr]

        many = facts_module.SEALED_MIN_EVENTS
        seal, none_open = (3, 10, CUTOFF), (0, NO_CUTOFF)
        assert picks(many, seal, none_open)
        assert picks(many, seal, (int(many * facts_module.SEALED_OPEN_SHARE), START))
        assert not picks(many, (0, 0, NO_CUTOFF), none_open)  # no seal yet
        assert not picks(many, (3, 10, NO_CUTOFF), none_open)  # undone by a direct write
        assert not picks(many - 1, seal, none_open)
        assert not picks(many, seal, (int(many * facts_module.SEALED_OPEN_SHARE) + 1, START))
        # On a store with no seal, the narrowing itself finds none.
        rows = random_events(random.Random(9), 50)
        store.append(rows_to_table(rows), log_seq=1)
        got, made = _narrowed(store, built)
        assert "sealed_sessions" not in made.sql
        assert_same(got, store.query_dicts(*CLICKHOUSE.bind(build_overview_events_query(scope, CLICKHOUSE))), scope)
    finally:
        store.close()


def test_seal008_the_schedule_seals_at_start_and_every_interval_and_outlives_a_failure(chdb_settings, caplog):
    store, _ = open_event_store(chdb_settings)
    clock = [START + timedelta(days=10)]
    schedule = SessionsSealSchedule(store, 0.05, timedelta(minutes=35), now=lambda: clock[0])
    try:
        store.append(rows_to_table(random_events(random.Random(10), 200)), log_seq=1)
        failing = {"left": 2}
        real = store.seal_sessions

        def seal(cutoff: datetime) -> dict[str, Any]:
            if failing["left"]:
                failing["left"] -= 1
                raise ConnectionError("the server went away")
            return real(cutoff)

        store.seal_sessions = seal  # type: ignore[method-assign]
        schedule.start()
        wait_until(lambda: (store.current_seal() or Seal(0, 0, 0, NO_CUTOFF)).seal >= 2)
        assert "sealing the ClickHouse sessions failed" in caplog.text
        current = store.current_seal()
        assert current is not None and current.cutoff == START + timedelta(days=10) - timedelta(minutes=35)
    finally:
        schedule.close()
        store.close()
    assert schedule._thread is None


def test_seal009_a_server_on_clickhouse_seals_by_its_settings(chdb_settings, tmp_path):
    with_seals = dataclasses.replace(chdb_settings, clickhouse_seal_seconds=30)
    services = open_services(with_seals)
    try:
        assert services.sealing is not None and services.sealing.interval == 30
        assert services.sealing.idle == SEAL_IDLE > SESSION_TIMEOUT + STAMP_LEAD
        wait_until(lambda: services.sealing is not None and services.sealing.store.current_seal() is not None)
    finally:
        services.close()
    services = open_services(chdb_settings)  # `off`
    try:
        assert services.sealing is None
    finally:
        services.close()
    duckdb_settings = load_settings({}, data_dir=str(tmp_path / "duck"), secret_key="k" * 20)
    services = open_services(duckdb_settings)
    try:
        assert duckdb_settings.clickhouse_seal_seconds == 60 and services.sealing is None
    finally:
        services.close()


def test_seal010_a_seal_that_failed_leaves_no_rows_twice_when_the_next_one_runs(chdb_settings):
    store, _ = open_event_store(chdb_settings)
    try:
        rows = random_events(random.Random(11), 200)
        store.append(rows_to_table(rows), log_seq=1)
        real = store.client.command

        def refuse_the_record(sql: str, *args: Any, **kwargs: Any) -> Any:
            if sql.startswith("INSERT INTO session_seals"):
                raise ConnectionError("the server went away")
            return real(sql, *args, **kwargs)

        store.client.command = refuse_the_record
        with pytest.raises(ConnectionError):
            store.seal_sessions(START + timedelta(days=40))
        store.client.command = real
        assert store.seal_sessions(START + timedelta(days=40))["sessions"] == 200
        everything = DuckDBEventStore(":memory:")
        everything.append(rows_to_table(rows))
        assert _sealed_rows(store) == finished(everything)
    finally:
        store.close()


def test_seal011_an_answer_read_from_a_seal_is_found_again_after_the_next_seal(chdb_settings, monkeypatch):
    """A seal binds its generation, position and cutoff into the read it answers, and the server seals every minute:
    the result cache keys the question as asked, so the next seal leaves the answer found; an event in its window
    is counted by the next read."""
    monkeypatch.setattr(facts_module, "SEALED_MIN_EVENTS", 1)
    monkeypatch.setattr(facts_module, "SEALED_OPEN_SHARE", 1.0)  # the sessions after the cutoff are many here
    store, _ = open_event_store(chdb_settings)
    try:
        rows = random_events(random.Random(11), 300)
        store.append(rows_to_table(rows), log_seq=1)
        store.seal_sessions(CUTOFF)
        scope = Scope((1,), Window(START, START + timedelta(days=40), "UTC", mode="datetime"), ())
        cache = ResultCache(CLICKHOUSE, stamp=store.write_stamp)
        sent: list[str] = []

        def ask() -> list[dict[str, Any]]:
            def run(query: Query) -> list[dict[str, Any]]:
                sent.append(query.sql)
                return store.query_dicts(*CLICKHOUSE.bind(query))

            return cache.run(build_overview_query(scope, CLICKHOUSE), scope.site_ids, scope.window, run)

        want = store.query_dicts(*CLICKHOUSE.bind(build_overview_events_query(scope, CLICKHOUSE)))
        first = ask()
        assert_same(first, want, scope)
        assert any("FROM sealed_sessions" in sql for sql in sent) and cache.computed == 1
        assert store.seal_sessions(CUTOFF + timedelta(days=2))["seal"] == 2
        assert ask() == first and cache.computed == 1
        late = dict(
            next(r for r in rows if r["site_id"] == 1),
            session_id="s-late",
            timestamp=START + timedelta(days=30),
            type="pageview",
        )
        store.append(rows_to_table([late]), log_seq=2)
        assert ask()[0]["sessions"] == first[0]["sessions"] + 1 and cache.computed == 2
    finally:
        store.close()


def _pathname_reads(scope: Scope) -> list[tuple[Query, Query, Query]]:
    """``(ClickHouse, its event grouping, DuckDB)`` of the two reads grouping the sealed rows' lists of paths."""
    goal = GOALS[0]
    return [
        (build(*args, CLICKHOUSE), events(*args, CLICKHOUSE), build(*args, DUCKDB))
        for build, events, args in (
            (build_metric_query, build_metric_events_query, (scope, "pathname", 100, 0)),
            (build_goal_breakdown_query, build_goal_breakdown_events_query, (scope, goal, "pathname")),
        )
    ]


def test_seal012_a_store_at_version_9_keeps_its_sealed_paths_as_dictionary_numbers_after_the_upgrade(
    chdb_settings, monkeypatch
):
    """Version 10 types the sealed rows' lists of paths ``Array(LowCardinality(String))``, converting the rows
    sealed before in place. The breakdowns by pathname then group those lists as they are, without the NULL that
    would turn them back into strings (the sessions are counted by a second read), and equal the event grouping and
    DuckDB, with sessions left open and edge sessions in the window."""
    monkeypatch.setattr(facts_module, "SEALED_MIN_EVENTS", 0)
    monkeypatch.setattr(facts_module, "SEALED_OPEN_SHARE", float("inf"))
    store, _ = open_event_store(chdb_settings)
    rows = random_events(random.Random(47), 400)
    early = [r for r in rows if r["timestamp"] < LATER]
    store.append(rows_to_table(early), log_seq=1)
    store.seal_sessions(CUTOFF)
    store.append(rows_to_table([r for r in rows if r["timestamp"] >= LATER]), log_seq=2)
    # What a database of schema version 9 looks like, sealed.
    store.client.command(
        "ALTER TABLE sealed_sessions MODIFY COLUMN pathnames Array(String)", settings={"mutations_sync": 2}
    )
    store.client.command(f"DELETE FROM {SCHEMA_TABLE} WHERE version >= 10", settings={"mutations_sync": 2})
    before = _sealed_rows(store)
    store.close()
    upgraded, _ = open_event_store(chdb_settings)
    try:
        assert upgraded.schema_version == len(MIGRATIONS) == 11
        assert upgraded.query(
            "SELECT type FROM system.columns WHERE database = currentDatabase() AND table = 'sealed_sessions' "
            "AND name = 'pathnames'"
        ) == [("Array(LowCardinality(String))",)]
        assert _sealed_rows(upgraded) == before and len(before) > 100
        duck = DuckDBEventStore(":memory:")
        duck.append(rows_to_table(rows))
        # Windows holding sealed sessions, the sessions open after the cutoff, and edge sessions at both ends.
        for days in ((0, 40), (3, 30), (20, 27)):
            start, end = START + timedelta(days=days[0], hours=5), START + timedelta(days=days[1])
            scope = Scope((1,), Window(start, end, "UTC", mode="datetime"), ())
            for built, events, duckdb_query in _pathname_reads(scope):
                want = upgraded.query_dicts(*CLICKHOUSE.bind(events))
                assert want and want[0]["total_sessions"] > 0, days
                assert_same(duck.query_dicts(*DUCKDB.bind(duckdb_query)), want, days)
                got, made = _narrowed(upgraded, built)
                assert "FROM sealed_sessions" in made.sql and "arrayPushBack" not in made.sql, days
                assert_same(got, want, days)
    finally:
        upgraded.close()


def _session_users(rows: list[dict[str, Any]]) -> dict[tuple[int, str], str]:
    """Each session's user, as the table picks it: its last identified id, else its last visitor id."""
    users: dict[tuple[int, str], tuple[tuple[bool, datetime], str]] = {}
    for r in rows:
        identified = r["identified_user_id"] != ""
        key = (identified, r["timestamp"])
        session = (r["site_id"], r["session_id"])
        if session not in users or key > users[session][0]:
            users[session] = (key, r["identified_user_id"] if identified else r["user_id"])
    return {session: user for session, (_, user) in users.items()}


def _overview_agrees(
    store: ClickHouseEventStore, duck: DuckDBEventStore, scope: Scope, *, user_rows: bool, context: Any
) -> dict[str, Any]:
    """The overview of ``scope`` read from the seal, with its users counted from ``sealed_users`` or not as
    ``user_rows`` says, equals the event grouping's and DuckDB's; returns it."""
    want = store.query_dicts(*CLICKHOUSE.bind(build_overview_events_query(scope, CLICKHOUSE)))
    assert_same(duck.query_dicts(*DUCKDB.bind(build_overview_query(scope, DUCKDB))), want, context)
    got, made = _narrowed(store, build_overview_query(scope, CLICKHOUSE))
    assert "FROM sealed_sessions" in made.sql, context
    assert ("FROM sealed_users WHERE seal" in made.sql) == user_rows, context
    assert_same(got, want, context)
    return got[0]


def _sealed_then_later(store: ClickHouseEventStore, rows: list[dict[str, Any]]) -> None:
    """The events before ``LATER`` as log record 1, a seal at ``CUTOFF``, then the rest as record 2."""
    store.append(rows_to_table([r for r in rows if r["timestamp"] < LATER]), log_seq=1)
    store.seal_sessions(CUTOFF)
    store.append(rows_to_table([r for r in rows if r["timestamp"] >= LATER]), log_seq=2)


def _read_seals_and_builds_at_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads of these few events take the seal and the users' build however many sessions are open."""
    monkeypatch.setattr(facts_module, "SEALED_MIN_EVENTS", 0)
    monkeypatch.setattr(facts_module, "SEALED_OPEN_SHARE", float("inf"))
    monkeypatch.setattr(facts_module, "USER_ROWS_MIN_EVENTS", 0)


@pytest.mark.parametrize("seed", range(20))
def test_seal013_the_overview_counts_the_sealed_sessions_users_from_their_rows_per_user(
    sealed_stores, seed, monkeypatch
):
    """On one site without a filter, the users of the whole sealed sessions are the rows of ``sealed_users`` with a
    session in the window, plus the users of the edge sessions, the open ones and the sealed ones open again, looked
    up: the same numbers as the event grouping and DuckDB on random windows and zones."""
    _read_seals_and_builds_at_any_size(monkeypatch)
    store, duck, _, _, _ = sealed_stores
    rng = random.Random(9400 + seed)
    scope = Scope((rng.choice((1, 2, 3)),), random_window(rng), ())
    _overview_agrees(store, duck, scope, user_rows=True, context=scope)


def test_seal014_sealed_sessions_open_again_under_another_user_count_as_they_are_now(chdb_settings, monkeypatch):
    """Sealed sessions that get events (a clock set back) under another user: until the next seal their old user's
    times are still in the build of ``sealed_users``, and the reads count the user the session has now. The seal that
    drops their rows drops the generation's builds and builds again; a full seal builds its new generation's users,
    and the seal after drops the old generation's."""
    _read_seals_and_builds_at_any_size(monkeypatch)
    store, _ = open_event_store(chdb_settings)
    try:
        rows = random_events(random.Random(53), 400)
        early = [r for r in rows if r["timestamp"] < LATER]
        store.append(rows_to_table(early), log_seq=1)
        store.seal_sessions(CUTOFF)
        assert store.query("SELECT seal, generation FROM sealed_user_builds") == [(1, 1)]
        # Sealed sessions of site 1 whose user has no other session: counting their old user would count one more.
        users = _session_users(early)
        sessions_of: dict[tuple[int, str], int] = {}
        for (site, _), user in users.items():
            sessions_of[(site, user)] = sessions_of.get((site, user), 0) + 1
        stopped = {r["session_id"] for r in early if r["timestamp"] >= CUTOFF - timedelta(hours=2)}
        alone = sorted(
            sid
            for (site, sid), user in users.items()
            if site == 1 and sessions_of[(site, user)] == 1 and sid not in stopped
        )
        assert len(alone) >= 5
        moved = [
            {
                **next(r for r in early if r["session_id"] == sid),
                "timestamp": LATER + timedelta(hours=n),
                "type": "pageview",
                "identified_user_id": f"member-moved-{n}",
            }
            for n, sid in enumerate(alone[:5])
        ]
        rows += moved
        store.append(rows_to_table([r for r in rows if r["timestamp"] >= LATER]), log_seq=2)
        duck = DuckDBEventStore(":memory:")
        duck.append(rows_to_table(rows))
        whole = Scope((1,), Window(START, START + timedelta(days=40), "UTC", mode="datetime"), ())
        # A window holding the moved sessions' sealed times but not their new events: their old user, as before.
        before = Scope((1,), Window(START, LATER, "UTC", mode="datetime"), ())
        scopes = [whole, before, *(Scope((1,), random_window(random.Random(n)), ()) for n in range(8))]
        counted = _overview_agrees(store, duck, whole, user_rows=True, context="whole")
        assert counted["users"] == len({u for (site, _), u in _session_users(rows).items() if site == 1})
        for scope in scopes[1:]:
            _overview_agrees(store, duck, scope, user_rows=True, context=scope)
        # The next seal drops the moved sessions' sealed rows and seals them again, with a build of their users now.
        end = START + timedelta(days=40)
        store.seal_sessions(end)
        assert store.query("SELECT seal, generation FROM sealed_user_builds") == [(2, 1)]
        for scope in scopes:
            _overview_agrees(store, duck, scope, user_rows=True, context=scope)
        # A direct write undoes the seal; the full seal after writes generation 2 and builds its users.
        extra = {**rows[0], "timestamp": START + timedelta(days=30), "session_id": "direct-write"}
        store.append(rows_to_table([extra]))
        duck.append(rows_to_table([extra]))
        assert store.seal_sessions(end)["generation"] == 2
        assert store.query("SELECT seal, generation FROM sealed_user_builds ORDER BY seal") == [(2, 1), (4, 2)]
        for scope in scopes:
            _overview_agrees(store, duck, scope, user_rows=True, context=scope)
        store.seal_sessions(end)
        assert store.query("SELECT seal, generation FROM sealed_user_builds") == [(4, 2)]
        assert store.query("SELECT DISTINCT seal FROM sealed_users") == [(4,)]
        # One row per user of the sealed sessions.
        built = store.query("SELECT site_id, user_form, user_number, user_text FROM sealed_users")
        sealed_users = store.query(
            "SELECT DISTINCT site_id, if(isNull(user_number), 2, 1), ifNull(user_number, 0), ifNull(user_text, '') "
            "FROM sealed_sessions WHERE isNotNull(user_number) OR isNotNull(user_text)"
        )
        assert sorted(built) == sorted(sealed_users) and len(built) > 100
    finally:
        store.close()


def test_seal015_the_sessions_sealed_after_a_build_are_counted_from_their_rows_until_the_next(
    chdb_settings, monkeypatch
):
    """Sessions sealed after the newest build are read from their sealed rows and their users looked up; once they
    pass ``USERS_BUILD_SHARE`` of the generation's rows, a seal builds again."""
    _read_seals_and_builds_at_any_size(monkeypatch)
    monkeypatch.setattr(clickhouse_module, "USERS_BUILD_SHARE", float("inf"))
    store, _ = open_event_store(chdb_settings)
    try:
        rows = random_events(random.Random(56), 400)
        _sealed_then_later(store, rows)
        store.seal_sessions(START + timedelta(days=30))
        (later,) = store.query("SELECT count() FROM sealed_sessions WHERE seal = 2")[0]
        assert later > 50 and store.query("SELECT seal FROM sealed_user_builds") == [(1,)]
        duck = DuckDBEventStore(":memory:")
        duck.append(rows_to_table(rows))
        scopes = [Scope((1 + n % 3,), random_window(random.Random(800 + n)), ()) for n in range(10)]
        for scope in scopes:
            _overview_agrees(store, duck, scope, user_rows=True, context=scope)
        monkeypatch.setattr(clickhouse_module, "USERS_BUILD_SHARE", 0.01)
        store.seal_sessions(START + timedelta(days=40))
        assert store.query("SELECT seal FROM sealed_user_builds ORDER BY seal") == [(1,), (3,)]
        for scope in scopes:
            _overview_agrees(store, duck, scope, user_rows=True, context=scope)
    finally:
        store.close()


def test_seal016_a_store_at_version_10_builds_its_users_at_the_next_seal(chdb_settings, monkeypatch):
    """Version 11 creates ``sealed_users`` and the record of its builds, empty: the overview groups the users until
    the next seal builds them, then counts them from the build, with the same numbers."""
    _read_seals_and_builds_at_any_size(monkeypatch)
    store, _ = open_event_store(chdb_settings)
    rows = random_events(random.Random(54), 300)
    store.append(rows_to_table(rows), log_seq=1)
    store.seal_sessions(CUTOFF)
    # What a database of schema version 10 looks like, sealed.
    for table in ("sealed_users", "sealed_user_builds"):
        store.client.command(f"DROP TABLE {table} SYNC")
    store.client.command(f"DELETE FROM {SCHEMA_TABLE} WHERE version >= 11", settings={"mutations_sync": 2})
    store.close()
    upgraded, _ = open_event_store(chdb_settings)
    try:
        assert upgraded.schema_version == len(MIGRATIONS) == 11
        assert upgraded.query("SELECT count() FROM sealed_users") == [(0,)]
        duck = DuckDBEventStore(":memory:")
        duck.append(rows_to_table(rows))
        scopes = [Scope((1 + n % 3,), random_window(random.Random(700 + n)), ()) for n in range(6)]
        for scope in scopes:
            _overview_agrees(upgraded, duck, scope, user_rows=False, context=scope)
        upgraded.seal_sessions(CUTOFF)
        assert upgraded.query("SELECT seal, generation FROM sealed_user_builds") == [(2, 1)]
        for scope in scopes:
            _overview_agrees(upgraded, duck, scope, user_rows=True, context=scope)
    finally:
        upgraded.close()


def test_seal017_deleting_a_site_deletes_its_users_and_a_build_never_recorded_is_not_read(chdb_settings, monkeypatch):
    _read_seals_and_builds_at_any_size(monkeypatch)
    store, _ = open_event_store(chdb_settings)
    try:
        rows = random_events(random.Random(55), 300)
        store.append(rows_to_table(rows[:200]), log_seq=1)
        store.seal_sessions(CUTOFF)
        store.delete_site(1)
        assert {site for (site,) in store.query("SELECT DISTINCT site_id FROM sealed_users")} == {2, 3}
        # A direct write, then a full seal whose build stops before its record.
        store.append(rows_to_table(rows[200:]))
        real = store.client.insert

        def stop_before_the_record(table: str, *args: Any, **kwargs: Any) -> Any:
            if table == "sealed_user_builds":
                raise ConnectionError("the process stopped")
            return real(table, *args, **kwargs)

        store.client.insert = stop_before_the_record
        with pytest.raises(ConnectionError):
            store.seal_sessions(START + timedelta(days=40))
        store.client.insert = real
        assert store.query("SELECT DISTINCT seal FROM sealed_users ORDER BY seal") == [(1,), (3,)]
        assert store.query("SELECT seal, generation FROM sealed_user_builds") == [(1, 1)]
        duck = DuckDBEventStore(":memory:")
        duck.append(rows_to_table([r for r in rows if r["site_id"] != 1 or r in rows[200:]]))
        scope = Scope((2,), Window(START, START + timedelta(days=40), "UTC", mode="datetime"), ())
        # Generation 2 has no recorded build: its users are grouped.
        _overview_agrees(store, duck, scope, user_rows=False, context=scope)
        # The next seal builds them and drops the partition the failed build left, and generation 1's build.
        store.seal_sessions(START + timedelta(days=40))
        assert store.query("SELECT seal, generation FROM sealed_user_builds") == [(4, 2)]
        assert store.query("SELECT DISTINCT seal FROM sealed_users") == [(4,)]
        _overview_agrees(store, duck, scope, user_rows=True, context=scope)
    finally:
        store.close()


def test_seal018_the_users_come_from_a_build_for_large_windows_only(chdb_settings):
    """The narrowing binds the read to the generation's newest build for a window of ``USER_ROWS_MIN_EVENTS`` or more
    (below it the grouping of the users costs less), and never where the generation has none."""
    store, _ = open_event_store(chdb_settings)
    try:
        scope = Scope((1,), Window(START, START + timedelta(days=40), "UTC", mode="datetime"), ())
        built = build_overview_query(scope, CLICKHOUSE)
        assert built.narrowing is not None
        seal = (3, 2, START + timedelta(days=30))

        def from_build(events: int, users: int) -> bool:
            row = {"events": events, "sessions": 0, "merged": 1.0, "seal": seal, "opened": (0, NO_CUTOFF)}
            made = built.narrowing.then([{**row, "users": users}])  # type: ignore[union-attr]
            assert "FROM sealed_sessions" in made.sql
            return "FROM sealed_users WHERE seal" in made.sql

        limit = facts_module.USER_ROWS_MIN_EVENTS
        assert from_build(limit, 7) and from_build(10 * limit, 7)
        assert not from_build(limit - 1, 7) and not from_build(limit, 0)
    finally:
        store.close()


def test_seal019_a_window_ending_before_the_open_sessions_reads_the_sealed_rows_alone(chdb_settings, monkeypatch):
    """A window that ends before the first event of every session the seal left open (``open_from``) holds only
    sealed sessions first seen before it: its reads take those rows alone, without the open sessions' rows or the set
    of their ids. Windows ending a day before ``open_from``, a second before it and a millisecond either side of
    that, at it and long after it give the event grouping's and DuckDB's numbers, and the open rows are read exactly
    where the window ends less than a second before ``open_from`` or later."""
    _read_seals_and_builds_at_any_size(monkeypatch)
    store, _ = open_event_store(chdb_settings)
    try:
        rows = random_events(random.Random(19), 500)
        _sealed_then_later(store, rows)
        duck = DuckDBEventStore(":memory:")
        duck.append(rows_to_table(rows))
        # The sessions left open: those with an event at or after the cutoff. On a site where one crosses the
        # cutoff, the first event among them comes before it.
        spans: dict[tuple[int, str], list[datetime]] = {}
        for r in rows:
            spans.setdefault((r["site_id"], r["session_id"]), []).append(r["timestamp"])
        site = next(s for (s, _), times in sorted(spans.items()) if min(times) < CUTOFF <= max(times))
        open_from = min(min(times) for (s, _), times in spans.items() if s == site and max(times) >= CUTOFF)
        ms, second, day = timedelta(milliseconds=1), timedelta(seconds=1), timedelta(days=1)
        ends = {
            open_from - day: False,
            open_from - second - ms: False,
            open_from - second: False,
            open_from - second + ms: True,
            open_from: True,
            LATER + 3 * day: True,
        }
        for n, (end, reads_open) in enumerate(ends.items()):
            # Windows of the last three days before the end, in UTC and in a zone whose days start on a half hour,
            # and of all the data before it on each side of the bound.
            windows = [(end - 3 * day, "Asia/Kolkata" if n % 2 else "UTC")]
            if n in (2, 3):
                windows.append((START, "UTC"))
            for start, zone in windows:
                scope = Scope((site,), Window(start, end, zone, mode="datetime"), ())
                context = (site, start, end, zone)
                overview = _overview_agrees(store, duck, scope, user_rows=True, context=context)
                assert overview["sessions"] > 0, context
                for builder, events_builder, args in _shared_reads(scope, "channel", "day", GOALS[0]):
                    want = store.query_dicts(*CLICKHOUSE.bind(events_builder(*args, CLICKHOUSE)))
                    assert_same(want, duck.query_dicts(*DUCKDB.bind(builder(*args, DUCKDB))), context)
                    got, made = _narrowed(store, builder(*args, CLICKHOUSE))
                    assert "FROM sealed_sessions" in made.sql, context
                    assert ("FROM sessions AS stored FINAL" in made.sql) == reads_open, (context, builder)
                    assert_same(got, want, context)
        duck.close()
    finally:
        store.close()
