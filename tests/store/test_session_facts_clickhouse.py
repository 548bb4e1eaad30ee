"""The ClickHouse ``sessions`` table (an AggregatingMergeTree fed by a materialized view): after batches in any
order, a schema upgrade over existing events, a crash between insert and log position, and deletes, its finished
rows are those DuckDB's table holds for the same events. The distinct users each store counts (as numbers and other
strings) against a count in Python. And the reads that take whole sessions from the merged table on ClickHouse
against the event grouping and DuckDB."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from api_backend.query import facts as facts_module
from api_backend.query.dialect import CLICKHOUSE, DUCKDB, Dialect
from api_backend.query.facts import FACTS_MIN_EVENTS, FIRST_SET_PARAMETERS, MERGED_MIN_EVENTS, MERGED_SHARE
from api_backend.query.filters import SESSION_PARAMETERS
from api_backend.query.goals import (
    GoalSpec,
    build_goal_breakdown_events_query,
    build_goal_breakdown_query,
    build_goal_sessions_events_query,
    build_goal_sessions_query,
    build_goals_events_query,
    build_goals_query,
)
from api_backend.query.metric import build_metric_events_query, build_metric_query
from api_backend.query.overview import (
    build_overview_events_query,
    build_overview_query,
    build_overview_series_events_query,
    build_overview_series_query,
)
from api_backend.query.scope import Scope, window_version_query
from api_backend.query.sessions import build_session_page_events_query, build_session_page_query
from api_backend.query.sql import Query
from api_backend.query.window import Window
from api_backend.read.results import ResultCache
from api_backend.settings import load_settings
from api_backend.store.clickhouse_schema import (
    MIGRATIONS,
    SCHEMA_TABLE,
    pathnames_sql,
    session_states_sql,
    sessions_final_sql,
    sessions_sql,
)
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import rows_to_table
from api_backend.store.open import open_event_store
from api_backend.store.writer import BatchWriter
from tests.store.test_session_facts import (
    BUCKETS,
    GOALS,
    MEMBERS,
    START,
    VISITORS,
    append_shuffled,
    assert_same,
    random_events,
    random_scope,
)
from tests.support.clickhouse import SECRET, UNSEALED, chdb_url, crash_before_position, drop_database, fresh_database

COLUMNS = (
    "site_id, session_id, first_seen, last_seen, pageviews, events, user_value, users, entry_page, exit_page, channel, "
    + ", ".join(FIRST_SET_PARAMETERS)
    + ", pathnames"
)


def finished(store: Any, version: int = len(MIGRATIONS)) -> list[tuple[Any, ...]]:
    """Rows of the finished sessions, lists sorted, in key order (ClickHouse: from a table of the schema
    ``version``)."""
    sql = f"SELECT {COLUMNS} FROM ({sessions_final_sql(version=version)}) ORDER BY site_id, session_id"
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
    # What a database of schema version 1 looks like: events, no sessions and no copies of the error or goal rows.
    for view, table in (
        ("sessions_mv", "sessions"),
        ("error_events_mv", "error_events"),
        ("goal_events_mv", "goal_events"),
    ):
        store.client.command(f"DROP VIEW {view} SYNC")
        store.client.command(f"DROP TABLE {table} SYNC")
    store.client.command(f"DELETE FROM {SCHEMA_TABLE} WHERE version >= 2", settings={"mutations_sync": 2})
    store.close()

    upgraded, _ = open_event_store(chdb_settings)
    assert upgraded.schema_version == len(MIGRATIONS) == 11
    assert finished(upgraded) == duckdb_facts(rows)
    more = [dict(row, session_id="new-" + row["session_id"]) for row in random_events(random.Random(13), 20)]
    upgraded.append(rows_to_table(more))  # and the view keeps it from then on
    assert finished(upgraded) == duckdb_facts(rows + more)
    upgraded.close()


def test_chfacts010_upgrading_to_version_4_gives_the_stored_sessions_their_paths(chdb_settings):
    store, _ = open_event_store(chdb_settings)
    rows = random_events(random.Random(16), 200)
    store.append(rows_to_table(rows))
    # What a database of schema version 3 looks like: the sessions table and its view as version 2 made them.
    store.client.command("DROP VIEW sessions_mv SYNC")
    store.client.command("DROP TABLE sessions SYNC")
    for statement in sessions_sql():
        store.client.command(statement)
    store.client.command(f"DELETE FROM {SCHEMA_TABLE} WHERE version >= 4", settings={"mutations_sync": 2})
    columns = "SELECT name FROM system.columns WHERE database = currentDatabase() AND table = 'sessions'"
    assert ("pathnames",) not in store.query(columns)
    store.close()

    upgraded, _ = open_event_store(chdb_settings)
    assert upgraded.schema_version == 11
    assert finished(upgraded) == duckdb_facts(rows)
    assert any(row[-1] for row in finished(upgraded))  # sessions with pageviews list their paths
    more = [dict(row, session_id="new-" + row["session_id"]) for row in random_events(random.Random(17), 20)]
    upgraded.append(rows_to_table(more))  # the view replaced by the upgrade writes them
    assert finished(upgraded) == duckdb_facts(rows + more)
    upgraded.close()


@pytest.mark.parametrize("done", [0, 3, 5])
def test_chfacts019_upgrading_to_version_7_turns_the_states_into_pairs(chdb_settings, done):
    """From version 6, or from a migration to 7 that stopped after its first ``done`` statements (the columns
    dropped and added, the table emptied)."""
    store, _ = open_event_store(chdb_settings)
    rows = random_events(random.Random(18), 200)
    store.append(rows_to_table(rows))
    # What a database of schema version 6 looks like: the sessions table and its view as versions 2 and 4 made them.
    store.client.command("DROP VIEW sessions_mv SYNC")
    store.client.command("DROP TABLE sessions SYNC")
    for statement in [*sessions_sql(), *pathnames_sql()]:
        store.client.command(statement)
    store.client.command(f"DELETE FROM {SCHEMA_TABLE} WHERE version >= 7", settings={"mutations_sync": 2})
    types = "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'sessions'"
    assert dict(store.query(types))["entry_page"] == "AggregateFunction(argMin, String, DateTime64(3, 'UTC'))"
    before = finished(store, version=6)
    for statement in MIGRATIONS[6][:done]:
        store.client.command(statement)
    store.close()

    upgraded, _ = open_event_store(chdb_settings)
    assert upgraded.schema_version == 11
    assert dict(upgraded.query(types))["entry_page"].startswith("SimpleAggregateFunction(min, Tuple(")
    assert finished(upgraded) == before == duckdb_facts(rows)
    more = [dict(row, session_id="new-" + row["session_id"]) for row in random_events(random.Random(19), 20)]
    upgraded.append(rows_to_table(more))  # the view replaced by the upgrade writes pairs
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


@pytest.fixture(scope="module")
def both_stores(chdb_client: Any, chdb_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The same 1500 random sessions in a ClickHouse store and in DuckDB. The ClickHouse store gets them in batches
    of random size and order, so its ``sessions`` parts hold partial rows of many sessions that reads must merge.
    Its background merges of that table are stopped: they would combine those rows at a time of their own."""
    name = fresh_database(chdb_client)
    data_dir = tmp_path_factory.mktemp("chfacts") / "data"
    settings = load_settings({}, data_dir=str(data_dir), secret_key=SECRET, events_url=chdb_url(chdb_path, name))
    store, _ = open_event_store(settings)
    chdb_client.command(f"SYSTEM STOP MERGES `{name}`.sessions")
    rng = random.Random(20261128)
    rows = random_events(rng, 1500)
    append_shuffled(store, rows, rng)
    duck = DuckDBEventStore(":memory:")
    duck.append(rows_to_table(rows))
    yield store, duck
    store.close()
    drop_database(chdb_client, name)


# A read's builder, the builder of its form grouping the events, and their arguments before the dialect.
Read = tuple[Callable[..., Query], Callable[..., Query], tuple[Any, ...]]


def _shared_reads(scope: Scope, parameter: str, bucket: str, goal: GoalSpec) -> list[Read]:
    reads: list[Read] = [
        (build_overview_query, build_overview_events_query, (scope,)),
        (build_metric_query, build_metric_events_query, (scope, parameter, 100, 0)),
        (build_metric_query, build_metric_events_query, (scope, "pathname", 100, 0)),
        (build_overview_series_query, build_overview_series_events_query, (scope, bucket)),
        (build_session_page_query, build_session_page_events_query, (scope, 25, 0)),
        (build_session_page_query, build_session_page_events_query, (scope, 10, 30)),
        (build_goal_breakdown_query, build_goal_breakdown_events_query, (scope, goal, parameter)),
        (build_goal_breakdown_query, build_goal_breakdown_events_query, (scope, goal, "pathname")),
        (build_goal_sessions_query, build_goal_sessions_events_query, (scope, goal, 25, 0)),
        (build_goal_sessions_query, build_goal_sessions_events_query, (scope, goal, 10, 20)),
    ]
    # The goals list of several goals, none, and more than one mask holds.
    for goals in (GOALS, [goal, *GOALS[:1]], [], GOALS * 11):
        reads.append((build_goals_query, build_goals_events_query, (scope, goals)))
    return reads


@pytest.mark.parametrize("seed", range(40))
def test_chfacts006_overview_and_session_values_from_the_merged_table_equal_the_events_on_both_stores(
    both_stores, seed
):
    """The overview, the metric of a session-level parameter, the metric by pathname, the time series, pages of
    sessions, a goal's breakdown by a session-level parameter or the path and its sessions, and the goals list read
    whole sessions from the merged table on ClickHouse too, for windows large enough or a table mostly merged: on random
    windows, zones, buckets, goals and filters both of the answers the narrowing picks from equal DuckDB's, and so
    does the one it picks."""
    chdb, duck = both_stores
    assert chdb.query("SELECT count() FROM sessions") > [(1500,)]  # partial rows in several parts
    rng = random.Random(7000 + seed)
    scope = random_scope(rng, seed)
    parameter = sorted(SESSION_PARAMETERS)[seed % len(SESSION_PARAMETERS)]
    bucket = rng.choice(BUCKETS)
    goal = GOALS[seed % len(GOALS)]
    context = (parameter, bucket, goal, scope)
    for builder, events_builder, args in _shared_reads(scope, parameter, bucket, goal):
        built, events, duckdb_query = (
            builder(*args, CLICKHOUSE),
            events_builder(*args, CLICKHOUSE),
            builder(*args, DUCKDB),
        )
        narrowing = built.narrowing
        assert built.reads_sessions and narrowing is not None
        facts = narrowing.then([{"events": FACTS_MIN_EVENTS, "sessions": 0, "merged": 0.0, **UNSEALED}])
        assert "FROM sessions AS stored FINAL" in facts.sql and "FROM sessions" not in events.sql
        assert narrowing.then([{"events": FACTS_MIN_EVENTS - 1, "sessions": 0, "merged": 0.0, **UNSEALED}]) == events
        want = _answers(duck, DUCKDB, duckdb_query)
        assert_same(_answers(chdb, CLICKHOUSE, facts), want, context)
        then = narrowing.then
        picked = chdb.query_dicts_then(
            *CLICKHOUSE.bind(narrowing.first), lambda rows, then=then: CLICKHOUSE.bind(then(rows))
        )
        assert_same(picked, want, context)


def test_chfacts008_the_table_is_read_for_windows_of_many_events_or_on_a_merged_table_over_most_of_the_sites_data():
    window = Window(START, START + timedelta(days=7), "UTC", mode="datetime")
    built = build_overview_query(Scope((1,), window), CLICKHOUSE)
    assert built.narrowing is not None and built == build_overview_events_query(Scope((1,), window), CLICKHOUSE)
    series = build_overview_series_query(Scope((1,), window), "day", CLICKHOUSE)
    assert series.narrowing is not None
    # The pages of sessions, a goal's sessions and its breakdown by a session-level parameter, and the goals list
    # follow the overview's rule.
    goal = GoalSpec(1, "event", {"eventName": "signup"})
    alike = (
        build_session_page_query(Scope((1,), window), 25, 0, CLICKHOUSE),
        build_goal_breakdown_query(Scope((1,), window), goal, "country", CLICKHOUSE),
        build_goal_sessions_query(Scope((1,), window), goal, 25, 0, CLICKHOUSE),
        build_goals_query(Scope((1,), window), [goal], CLICKHOUSE),
    )
    facts = "FROM sessions AS stored FINAL"
    for events, rows, merged, table in (
        (FACTS_MIN_EVENTS, FACTS_MIN_EVENTS // 2, 0.3, True),
        (FACTS_MIN_EVENTS - 1, 0, 0.3, False),  # few events: grouping them costs less than merging many parts
        (10 * FACTS_MIN_EVENTS, 5 * FACTS_MIN_EVENTS + 1, 1.0, False),  # a window over less than half the site's data
        # Fewer events, but the table mostly in one part: merging it costs little.
        (MERGED_MIN_EVENTS, MERGED_MIN_EVENTS // 2, MERGED_SHARE, True),
        (MERGED_MIN_EVENTS - 1, 0, 1.0, False),  # fewer still: grouping them costs less than resolving the read
        # No part of the table on this server (a cluster's node): the size alone decides.
        (MERGED_MIN_EVENTS, 0, None, False),
        (MERGED_MIN_EVENTS, MERGED_MIN_EVENTS // 2 + 1, 1.0, False),
    ):
        row = {"events": events, "sessions": rows, "merged": merged, **UNSEALED}
        assert (facts in built.narrowing.then([row]).sql) == table, row
        for query in alike:
            assert query.narrowing is not None and (facts in query.narrowing.then([row]).sql) == table, row
        # The time series reads more of the table than whole sessions' facts: only for windows of many events.
        assert series.narrowing is not None
        assert (facts in series.narrowing.then([row]).sql) == (table and events >= FACTS_MIN_EVENTS), row
    # DuckDB's table needs no merge: it is read for any window.
    assert build_overview_query(Scope((1,), window), DUCKDB).narrowing is None


def test_chfacts007_a_read_between_the_events_and_their_sessions_rows_answers_short_and_is_not_kept(chdb_store):
    """ClickHouse writes a batch's ``sessions`` rows after its events (the view runs once the insert is in): a read
    in between sees the events without their sessions and answers short. Such a read overlaps the write, so the
    store's write stamp changes across it and the result cache does not keep its answer: the next read, after the
    write, computes the full one."""
    rng = random.Random(31)
    rows = random_events(rng, 300)
    later_ids = {f"s{n}" for n in range(200, 300)}
    chdb_store.append(rows_to_table([r for r in rows if r["session_id"] not in later_ids]))
    scope = Scope((1,), Window(None, None), ())
    built, events = build_overview_query(scope, CLICKHOUSE), build_overview_events_query(scope, CLICKHOUSE)
    assert built.reads_sessions and not events.reads_sessions and built.narrowing is not None
    whole = built.narrowing.then([{"events": FACTS_MIN_EVENTS, "sessions": 0, "merged": 0.0, **UNSEALED}])
    cache = ResultCache(CLICKHOUSE, stamp=chdb_store.write_stamp)
    between: list[list[dict[str, Any]]] = []

    def run(query: Query) -> list[dict[str, Any]]:
        if query.sql == whole.sql and not between:
            # The later batch's events land now, their sessions rows a moment after this read.
            chdb_store.client.command("DROP VIEW sessions_mv")
            chdb_store.append(rows_to_table([r for r in rows if r["session_id"] in later_ids]))
            between.append(chdb_store.query_dicts(*CLICKHOUSE.bind(query)))
            ids = ", ".join(f"'{i}'" for i in sorted(later_ids))
            chdb_store.client.command(f"INSERT INTO sessions {session_states_sql(where=f'session_id IN ({ids})')}")
            return between[0]
        return chdb_store.query_dicts(*CLICKHOUSE.bind(query))

    def ask() -> list[dict[str, Any]]:
        return cache.run(replace(built, narrowing=None, sql=whole.sql, params=whole.params), (1,), scope.window, run)

    short = ask()
    assert short[0]["sessions"] < _answers(chdb_store, CLICKHOUSE, events)[0]["sessions"]
    assert len(cache) == 0
    assert_same(ask(), _answers(chdb_store, CLICKHOUSE, events), scope)
    assert len(cache) == 1 and cache.computed == 2


def test_chfacts009_either_form_is_keyed_on_the_windows_rows_and_found_for_the_price_of_its_counts(
    chdb_store, monkeypatch
):
    """The result cache keys the query as asked on the window's rows (events, error and goal rows) and runs the
    narrowing only to compute it: a read of the table costs no read of it to key. Found again, an answer costs the
    counts alone. The answers are the same either way."""
    rows = random_events(random.Random(41), 200)
    chdb_store.append(rows_to_table(rows))
    scope = Scope((1,), Window(START - timedelta(days=1), START + timedelta(days=40), "UTC", mode="datetime"), ())
    sent: list[str] = []

    def run(query: Query) -> list[dict[str, Any]]:
        assert query.narrowing is None, "the cache runs the narrowing itself"
        sent.append(query.sql)
        return chdb_store.query_dicts(*CLICKHOUSE.bind(query))

    want = _answers(chdb_store, CLICKHOUSE, build_overview_events_query(scope, CLICKHOUSE))
    monkeypatch.setattr(facts_module, "MERGED_MIN_EVENTS", 1)  # a merged table's form for these few events
    # One insert, one part: the table counts as merged. With the share out of reach, only the size could pick it.
    for share, reads_table in ((MERGED_SHARE, True), (1.5, False)):
        monkeypatch.setattr(facts_module, "MERGED_SHARE", share)
        sent.clear()
        cache = ResultCache(CLICKHOUSE, stamp=chdb_store.write_stamp)
        got = cache.run(build_overview_query(scope, CLICKHOUSE), scope.site_ids, scope.window, run)
        assert_same(got, want, share)
        key, narrowing, answer = sent
        assert "FROM session_seals" in narrowing and "system.parts" in narrowing
        assert key == window_version_query(scope.site_ids, scope.window, CLICKHOUSE).sql
        assert "sessions" not in key and "goal_events" in key and "error_events" in key
        assert ("FROM sessions AS stored FINAL" in answer) == reads_table
        sent.clear()
        assert cache.run(build_overview_query(scope, CLICKHOUSE), scope.site_ids, scope.window, run) == got
        assert sent == [key]


def test_chfacts017_a_kept_read_of_the_table_outlives_writes_elsewhere_and_a_write_into_its_window_is_seen(
    chdb_store, monkeypatch
):
    """A read of the table that no write overlapped is kept under its window's rows. Another site's sessions and
    events after the window change neither its numbers nor its key: it is found again. A session inside the window
    changes the count: the next read computes afresh and counts it."""
    monkeypatch.setattr(facts_module, "MERGED_SHARE", 0.0)  # the table's form at any size
    monkeypatch.setattr(facts_module, "MERGED_MIN_EVENTS", 0)
    rng = random.Random(43)
    rows = random_events(rng, 300)
    site_1, site_2 = [r for r in rows if r["site_id"] == 1], [r for r in rows if r["site_id"] == 2]
    chdb_store.append(rows_to_table(site_1))
    scope = Scope((1,), Window(START, START + timedelta(days=20), "UTC", mode="datetime"), ())
    cache = ResultCache(CLICKHOUSE, stamp=chdb_store.write_stamp)

    def read() -> list[dict[str, Any]]:
        run = lambda q: chdb_store.query_dicts(*CLICKHOUSE.bind(q))  # noqa: E731
        return cache.run(build_overview_query(scope, CLICKHOUSE), scope.site_ids, scope.window, run)

    first = read()
    assert read() == first and cache.computed == 1
    chdb_store.append(rows_to_table(site_2))
    # A session of site 1 running on past the window's end: its later events are outside it.
    after_end = dict(site_1[0], session_id=site_1[0]["session_id"], timestamp=START + timedelta(days=21))
    chdb_store.append(rows_to_table([after_end]))
    assert read() == first and cache.computed == 1
    # Still the answer: computed now, from the events, it is the same.
    assert_same(first, _answers(chdb_store, CLICKHOUSE, build_overview_events_query(scope, CLICKHOUSE)), scope)
    late = dict(site_1[0], session_id="late", timestamp=START + timedelta(days=3), type="pageview")
    chdb_store.append(rows_to_table([late]))
    after = read()
    assert cache.computed == 2
    assert after[0]["sessions"] == first[0]["sessions"] + 1
    assert_same(after, _answers(chdb_store, CLICKHOUSE, build_overview_events_query(scope, CLICKHOUSE)), scope)


def test_chfacts020_the_write_stamp_moves_with_every_write_and_is_none_after_one_that_failed_part_way(chdb_store):
    """Every insert and delete moves the stamp. An insert that failed part-way leaves it None (reads are not kept)
    until the next logged append, which deletes the rows above the recorded position before it inserts: the batch
    the writer sends again is stored once."""
    rows = random_events(random.Random(45), 120)
    first = chdb_store.write_stamp()
    assert first is not None
    chdb_store.append(rows_to_table(rows[:40]), log_seq=1)
    second = chdb_store.write_stamp()
    assert second is not None and second > first
    chdb_store.delete_range(1, START + timedelta(days=50), START + timedelta(days=51))
    assert (chdb_store.write_stamp() or 0) > second
    # The insert of record 2 reaches the table; recording its position fails (a server gone for a moment).
    batch = rows_to_table(rows[40:])
    real = chdb_store.client.command

    def refuse_position(sql: str, *args: Any, **kwargs: Any) -> Any:
        if "event_log_position" in sql:
            raise ConnectionError("the server went away")
        return real(sql, *args, **kwargs)

    chdb_store.client.command = refuse_position
    with pytest.raises(ConnectionError):
        chdb_store.append(batch, log_seq=2)
    chdb_store.client.command = real
    assert chdb_store.write_stamp() is None
    assert chdb_store.count() == len(rows)  # the rows went in; their position did not
    chdb_store.append(batch, log_seq=2)  # the writer's retry
    assert chdb_store.count() == len(rows) and chdb_store.applied_log_seq() == 2
    assert chdb_store.write_stamp() is not None
    assert finished(chdb_store) == duckdb_facts(rows)


def test_chfacts011_the_series_reads_the_table_through_the_cache_for_windows_of_many_events(chdb_store, monkeypatch):
    """The time series takes whole sessions from the merged table only for windows of many events (its own rule):
    through the result cache, with that size lowered, it reads the table and answers as the grouping and DuckDB do;
    with the size out of reach it groups the events, however merged the table."""
    rows = random_events(random.Random(42), 300)
    chdb_store.append(rows_to_table(rows))
    duck = DuckDBEventStore(":memory:")
    duck.append(rows_to_table(rows))
    scope = Scope((1,), Window(START, START + timedelta(days=20), "Europe/Berlin", mode="datetime"), ())
    want = _answers(duck, DUCKDB, build_overview_series_events_query(scope, "day", DUCKDB))
    assert sum(row["sessions"] for row in want) > 20
    sent: list[str] = []

    def run(query: Query) -> list[dict[str, Any]]:
        sent.append(query.sql)
        return chdb_store.query_dicts(*CLICKHOUSE.bind(query))

    for least, reads_table in ((1, True), (FACTS_MIN_EVENTS, False)):
        monkeypatch.setattr(facts_module, "FACTS_MIN_EVENTS", least)
        sent.clear()
        got = ResultCache(CLICKHOUSE).run(
            build_overview_series_query(scope, "day", CLICKHOUSE), (1,), scope.window, run
        )
        assert_same(got, want, least)
        assert ("FROM sessions AS stored FINAL" in sent[-1]) == reads_table
        if reads_table:  # the users of the sessions inside one bucket in one read of the table, from their lists
            assert "users_count" not in sent[-1].split("bu AS (")[1]


@pytest.mark.parametrize("parameter", ["pathname", "channel", "browser", "event_name"])
def test_chfacts012_the_metric_counts_its_values_from_the_kept_counts_not_by_a_subquery(parameter):
    """ClickHouse computes a kept CTE again for a subquery that reads it: the totals read the kept rows themselves (the
    values' counts, or for a session-level parameter every value's, the empty one included), in every form of the
    metric (the table's and the events')."""
    scope = Scope((1,), Window(START, START + timedelta(days=20), "UTC", mode="datetime"), ())
    built = build_metric_query(scope, parameter, 100, 0, CLICKHOUSE)
    forms = [built]
    if built.narrowing is not None:
        forms += [
            built.narrowing.then([{"events": least, "sessions": 0, "merged": 0.0, **UNSEALED}]) for least in (1, 10**9)
        ]
    for query in forms:
        assert "agg AS MATERIALIZED" in query.sql
        assert not re.search(r"\(SELECT count\(\*\) FROM (agg|per|every)\)", query.sql)
        # The values' grouping that also counts the sessions: by a session-level parameter, or by the paths of the
        # table's sessions, with a NULL row counting each session once.
        listed = "FROM sessions AS stored FINAL" in query.sql and parameter == "pathname"
        counted = "every" if parameter in SESSION_PARAMETERS or listed else "agg"
        assert re.search(rf"AS key_collisions\s+FROM {counted}\)", query.sql)
        # A read of the table merges it: the paths' form reads it once for the whole sessions, and once for the edge
        # sessions (one subquery, written once and named).
        assert not listed or query.sql.count("FROM sessions AS stored FINAL") == 2


@pytest.mark.parametrize("parameter", ["pathname", "event_name", "prop:plan", "channel"])
def test_chfacts013_the_goal_breakdown_counts_its_values_in_a_join_not_by_a_subquery(parameter):
    """A goal's breakdown keeps its values once and counts them without a subquery of a kept CTE (which ClickHouse
    computes again), in every form: the table's and the events'."""
    scope = Scope((1,), Window(START, START + timedelta(days=20), "UTC", mode="datetime"), ())
    built = build_goal_breakdown_query(scope, GoalSpec(1, "event", {"eventName": "signup"}), parameter, CLICKHOUSE)
    forms = [built]
    if built.narrowing is not None:
        forms += [
            built.narrowing.then([{"events": least, "sessions": 0, "merged": 0.0, **UNSEALED}]) for least in (1, 10**9)
        ]
    for query in forms:
        assert not re.search(r"\(SELECT count\(\*\) FROM (grouped|conv|every_value)\)", query.sql)
        assert re.search(r"(grouped|every_value) AS MATERIALIZED", query.sql)
