"""The ``sessions`` table: kept exact as events arrive in any order, after an upgrade and after a replay, and the
overview read from it gives the numbers of the event grouping on randomized data, windows, zones and filters."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
from datetime import datetime, timedelta
from typing import Any

import pytest

from api_backend.ingest.sessions import new_session_id
from api_backend.query.dialect import CLICKHOUSE, DUCKDB, Dialect
from api_backend.query.facts import (
    FACTS_MIN_EVENTS,
    MAX_SPANS,
    first_where_columns,
    joined_spans,
    merge_spans,
    session_aggregates,
)
from api_backend.query.filters import SESSION_PARAMETERS, parse_filters
from api_backend.query.goals import (
    GoalSpec,
    build_goal_breakdown_events_query,
    build_goal_breakdown_query,
    build_goal_sessions_events_query,
    build_goal_sessions_query,
)
from api_backend.query.metric import build_metric_events_query, build_metric_query, needs_exact_rerun
from api_backend.query.overview import (
    build_overview_events_query,
    build_overview_query,
    build_overview_series_events_query,
    build_overview_series_query,
)
from api_backend.query.scope import Scope
from api_backend.query.sessions import (
    build_session_page_events_query,
    build_session_page_query,
    build_session_rows_query,
    build_timeline_query,
    page_spans,
)
from api_backend.query.sql import Params, Query
from api_backend.query.window import Window
from api_backend.query.zones import constant_offset, quarter_hours_align
from api_backend.store import duckdb as duckdb_module
from api_backend.store import sessions as sessions_module
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.eventlog import EventLog
from api_backend.store.events import rows_to_table
from api_backend.store.sessions import OPENED_SLACK, build_sessions_upsert
from api_backend.store.writer import BatchWriter
from tests.support.clickhouse import UNSEALED

SITES = (1, 2, 3)
START = datetime(2026, 3, 1)  # the data spans the EU and US daylight-saving changes of March 2026
DAYS = 35
ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe")
BUCKETS = ("day", "hour", "week", "fifteen_minutes", "month")
FILTERS: tuple[list[dict[str, Any]] | None, ...] = (
    None,
    [{"parameter": "channel", "type": "equals", "value": ["Direct", "Email"]}],
    [{"parameter": "country", "type": "not_equals", "value": ["DE"]}],
    [{"parameter": "browser", "type": "is_null"}],
    [{"parameter": "referrer", "type": "contains", "value": ["goo"]}],
    [{"parameter": "entry_page", "type": "equals", "value": ["/"]}],
    [{"parameter": "exit_page", "type": "starts_with", "value": ["/blog"]}],
    [{"parameter": "user_id", "type": "equals", "value": ["member-1", "visitor-3"]}],
    [{"parameter": "dimensions", "type": "equals", "value": ["1920x1080"]}],
    [{"parameter": "pathname", "type": "starts_with", "value": ["/blog"]}],
    [{"parameter": "pathname", "type": "not_equals", "value": ["/pricing"]}],
    [{"parameter": "prop:plan", "type": "equals", "value": ["pro"]}],
    [
        {"parameter": "device_type", "type": "equals", "value": ["desktop"]},
        {"parameter": "event_name", "type": "equals", "value": ["signup"]},
    ],
)


# Visitor ids mostly in their real form (16 lowercase hex digits, which reads count as numbers), with strings that
# only look like one: upper case, 15, 17 or 18 digits (the first 16 of the last two are a visitor id's). One
# identified id is also a visitor id (the same user wherever it comes from); two others have the visitor id's form.
VISITORS = (
    *(f"visitor-{n}" for n in range(8)),
    *(f"{n * 0x9E3779B97F4A7C15 % 2**64:016x}" for n in range(24)),
    "0123456789abcdef",
    "0123456789ABCDEF",
    "0123456789abcde",
    "0123456789abcdef0",
    "0123456789abcdef00",
    "ffffffffffffffff",
)
MEMBERS = (*(f"member-{n}" for n in range(5)), "0123456789abcdef", "00000000000000ff", "7fffffffffffffff")


# Every kind of path pattern (the table's path lists answer them) and event goals, over ``random_events``' pages and
# events.
GOALS = (
    GoalSpec(1, "path", {"pathPattern": "/pricing"}),
    GoalSpec(2, "path", {"pathPattern": "/blog/*"}),
    GoalSpec(5, "path", {"pathPattern": "/blog**"}),
    GoalSpec(6, "path", {"pathPattern": "/*/a"}),
    GoalSpec(3, "event", {"eventName": "signup"}),
    GoalSpec(4, "event", {"eventName": "signup", "eventPropertyKey": "plan", "eventPropertyValue": "pro"}),
)


def random_events(rng: random.Random, sessions: int) -> list[dict[str, Any]]:
    """Sessions of 1-8 events with gaps up to 50 minutes, so some cross midnight, zone changes and window edges.

    Within a session times are distinct (the event grouping's arg_min/arg_max pick any row on a tie).
    """
    rows = []
    for n in range(sessions):
        at = START + timedelta(seconds=rng.randrange(DAYS * 86400), milliseconds=rng.randrange(1000))
        site = rng.choice(SITES)
        visitor = rng.choice(VISITORS)
        member = rng.choice(["", "", rng.choice(MEMBERS)])
        country, browser = rng.choice(["", "DE", "FR", "US"]), rng.choice(["", "Chrome", "Firefox"])
        for i in range(rng.randrange(1, 9)):
            kind = rng.choice(["pageview", "pageview", "pageview", "custom_event", "error"])
            rows.append(
                {
                    "site_id": site,
                    "timestamp": at,
                    "session_id": f"s{n}",
                    "user_id": visitor,
                    "identified_user_id": member if i >= 2 else "",
                    "type": kind,
                    "pathname": rng.choice(["/", "/pricing", "/blog/a", "/blog/b", "/docs"]),
                    "hostname": rng.choice(["", "example.com"]),
                    "channel": rng.choice(["", "Direct", "Organic Search", "Email", "Internal"]),
                    "referrer": rng.choice(["", "https://www.google.com/x", "bing.com", "?"]),
                    "country": country if i else rng.choice(["", country]),
                    "browser": browser,
                    "device_type": rng.choice(["", "desktop", "mobile"]),
                    "utm_source": rng.choice(["", "", "news"]),
                    "screen_width": rng.choice([0, 1920]),
                    "screen_height": rng.choice([0, 1080]),
                    "event_name": "signup" if kind == "custom_event" and rng.random() < 0.5 else "",
                    "props": json.dumps({"plan": rng.choice(["pro", "free"])}) if kind == "custom_event" else "{}",
                }
            )
            at += timedelta(minutes=rng.randrange(0, 50), seconds=rng.randrange(1, 60))
    return rows


def append_shuffled(store: DuckDBEventStore, rows: list[dict[str, Any]], rng: random.Random) -> None:
    """Append ``rows`` in random order and random batch sizes, so sessions span batches in any order."""
    rows = rows[:]
    rng.shuffle(rows)
    at = 0
    while at < len(rows):
        size = rng.randrange(1, 200)
        store.append(rows_to_table(rows[at : at + size]))
        at += size


def random_window(rng: random.Random) -> Window:
    zone = rng.choice(ZONES)
    if rng.random() < 0.1:
        return Window(None, None, zone)
    start = START + timedelta(seconds=rng.randrange(-86400, DAYS * 86400))
    end = start + timedelta(seconds=rng.randrange(3600, 20 * 86400))
    if rng.random() < 0.1:
        start = None  # type: ignore[assignment]
    return Window(start, end, zone, include_start=rng.random() < 0.7, include_end=rng.random() < 0.3, mode="datetime")


def random_scope(rng: random.Random, seed: int) -> Scope:
    """A random window on one site (or two), with the filter ``seed`` picks: every filter on several windows."""
    window = random_window(rng)
    chosen = FILTERS[seed % len(FILTERS)]
    filters = parse_filters(json.dumps(chosen) if chosen else None)
    sites = (rng.choice(SITES),) if rng.random() < 0.8 else SITES[:2]
    return Scope(sites, window, filters)


def run(store: DuckDBEventStore, query: Query) -> list[dict[str, Any]]:
    return store.query_dicts(query.sql, query.params)


def run_narrowed(store: DuckDBEventStore, query: Query) -> tuple[list[dict[str, Any]], Query]:
    """The rows of ``query`` by its narrowing, as the event reader runs it, and the query the narrowing made."""
    assert query.narrowing is not None
    made: list[Query] = []

    def then(rows: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        made.append(query.narrowing.then(rows))
        return made[0].sql, made[0].params

    first = query.narrowing.first
    return store.query_dicts_then(first.sql, first.params, then), made[0]


def assert_same(facts: list[dict[str, Any]], events: list[dict[str, Any]], context: Any) -> None:
    """Counts equal; averages equal up to the order in which floats were added."""
    assert len(facts) == len(events), context
    for got, want in zip(facts, events, strict=True):
        assert got.keys() == want.keys()
        for key, value in want.items():
            if isinstance(value, float):
                assert got[key] == pytest.approx(value, rel=1e-12), (key, context)
            else:
                assert got[key] == value, (key, context)


def session_rows(store: DuckDBEventStore) -> list[tuple[Any, ...]]:
    """Every row of the table, its chains looked up; its lists of strings sorted (kept in any order), the
    quarter-hours as stored (in order of their quarter-hour)."""
    store.chain_sessions()
    rows = store.query("SELECT * FROM sessions ORDER BY site_id, session_id")
    return [tuple(_comparable(v) for v in row) for row in rows]


def _comparable(value: Any) -> Any:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return sorted(value)
    return value


def assert_upgraded(store: DuckDBEventStore, rows: list[dict[str, Any]], stored_before: set[str]) -> None:
    """The table is the one all of ``rows`` give in one batch, but for the quarter-hours (the column before the
    last): unknown for the sessions stored before the upgrade, known for the others."""
    got, want = session_rows(store), rebuilt(rows)
    assert [(*row[:-2], row[-1]) for row in got] == [(*row[:-2], row[-1]) for row in want]
    for have, full in zip(got, want, strict=True):
        assert have[-2] == (None if have[1] in stored_before else full[-2]), have[1]
    assert any(row[-2] is not None for row in got)


def rebuilt(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The sessions table of a store given all of ``rows`` in one batch."""
    fresh = DuckDBEventStore(":memory:")
    fresh.append(rows_to_table(rows))
    return session_rows(fresh)


@pytest.fixture(scope="module")
def seeded() -> tuple[DuckDBEventStore, list[dict[str, Any]]]:
    rng = random.Random(20261126)
    rows = random_events(rng, 1500)
    store = DuckDBEventStore(":memory:")
    with pytest.MonkeyPatch.context() as patch:  # fold often, so stored sessions are continued by later batches
        patch.setattr(duckdb_module, "FOLD_ROWS", 100)
        patch.setattr(duckdb_module, "CHAIN_ROWS", 300)  # and look chains up often, so later folds move them
        append_shuffled(store, rows, rng)
    return store, rows


def test_facts001_the_table_holds_what_one_grouping_of_all_events_gives(seeded):
    store, rows = seeded
    assert session_rows(store) == rebuilt(rows)
    assert store.query("SELECT count(*), sum(events) FROM sessions")[0] == (1500, len(rows))


def first_where_rows(store: DuckDBEventStore) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The table's ``first_where_columns`` and what each column's own aggregate gives over all the stored events."""
    p = Params()
    firsts = first_where_columns(DUCKDB, p)
    aggregates = dict(session_aggregates(DUCKDB, p, firsts))
    names = [name for column in firsts for name in (column.column, column.at)]
    select = ", ".join(f"{aggregates[name]} AS {name}" for name in names)
    order = "ORDER BY site_id, session_id"
    grouped = f"SELECT site_id, session_id, {select} FROM events GROUP BY site_id, session_id {order}"
    want = store.query(grouped, p.values)
    return store.query(f"SELECT site_id, session_id, {', '.join(names)} FROM sessions {order}"), want


def test_facts041_first_values_equal_each_columns_own_aggregate_where_they_first_hold_later(seeded):
    """The entry page and the first non-empty values come from a session's first event where it answers them and
    from each column's own aggregate where their condition first holds on a later event; either way they are what
    each column's own aggregate gives over all the session's events."""
    store, _ = seeded
    got, want = first_where_rows(store)
    assert got == want
    # The data has sessions of each kind: answered by the first event, holding first on a later one, on none.
    for at in ("entry_at", "country_at", "device_type_at", "referrer_at", "utm_source_at"):
        kinds = store.query(
            f"SELECT count(*) FILTER (WHERE {at} = first_seen), count(*) FILTER (WHERE {at} > first_seen), "
            f"count(*) FILTER (WHERE {at} IS NULL) FROM sessions"
        )[0]
        assert all(kinds), (at, kinds)


# What each event of ``test_facts042`` picks its columns from: set or empty, and referrers whose host is empty or
# holds only ``www.``.
FIRST_WHERE_CHOICES: dict[str, tuple[Any, ...]] = {
    "type": ("pageview", "custom_event", "error"),
    "pathname": ("/", "/pricing", "/blog/a"),
    "browser": ("", "Chrome"),
    "browser_version": ("", "120.0"),
    "operating_system": ("", "Linux"),
    "operating_system_version": ("", "6.1"),
    "device_type": ("", "mobile"),
    "language": ("", "de-DE"),
    "country": ("", "DE"),
    "region": ("", "DE-BE"),
    "city": ("", "Berlin"),
    "screen_width": (0, 1920),
    "screen_height": (0, 1080),
    "hostname": ("", "example.com"),
    "referrer": ("", "", "?", "https://www./x", "https://WWW.Example.org/a", "android-app://com.example/"),
    "utm_source": ("", "news"),
    "utm_medium": ("", "email"),
    "utm_campaign": ("", "launch"),
    "utm_term": ("", "analytics"),
    "utm_content": ("", "banner"),
}


def test_facts042_every_first_where_column_is_exact_whichever_event_first_sets_its_inputs(monkeypatch):
    """Each column the earliest event answers, on events setting or leaving empty each of its inputs at random
    (events in random batches, folded often): the table holds what each column's own aggregate gives; each column
    has sessions answered by their first event, by a later one and by none; and each hint holds wherever its
    condition does."""
    rng = random.Random(42)
    rows = []
    for n in range(400):
        at = START + timedelta(seconds=rng.randrange(DAYS * 86400))
        for _ in range(rng.randrange(1, 7)):
            row = {name: rng.choice(choices) for name, choices in FIRST_WHERE_CHOICES.items()}
            rows.append({"site_id": 1, "timestamp": at, "session_id": f"s{n}", "user_id": "visitor-1", **row})
            at += timedelta(seconds=rng.randrange(1, 600))
    store = DuckDBEventStore(":memory:")
    monkeypatch.setattr(duckdb_module, "FOLD_ROWS", 50)
    append_shuffled(store, rows, rng)
    got, want = first_where_rows(store)
    assert got == want
    p = Params()
    for column in first_where_columns(DUCKDB, p):
        first, later, none, unhinted = store.query(
            f"SELECT count(*) FILTER (WHERE {column.at} = first_seen), "
            f"count(*) FILTER (WHERE {column.at} > first_seen), count(*) FILTER (WHERE {column.at} IS NULL), "
            f"(SELECT count(*) FROM events WHERE {column.condition} AND NOT ({column.hint})) FROM sessions",
            {k: v for k, v in p.values.items() if f"${k}" in column.condition},
        )[0]
        assert first and later and none and not unhinted, (column.column, first, later, none, unhinted)


@pytest.mark.parametrize("seed", range(40))
def test_facts002_overview_from_the_table_equals_the_event_grouping(seeded, seed):
    store, _ = seeded
    rng = random.Random(seed)
    scope = random_scope(rng, seed)
    context = scope
    facts, events = build_overview_query(scope, DUCKDB), build_overview_events_query(scope, DUCKDB)
    assert "FROM sessions" in facts.sql and "FROM sessions" not in events.sql
    assert_same(run(store, facts), run(store, events), context)
    bucket = rng.choice(BUCKETS)
    series = build_overview_series_query(scope, bucket, DUCKDB)
    assert "FROM sessions" in series.sql
    assert_same(run(store, series), run(store, build_overview_series_events_query(scope, bucket, DUCKDB)), context)


@pytest.mark.parametrize("seed", range(40))
def test_facts008_metric_of_a_session_parameter_from_the_table_equals_the_event_grouping(seeded, seed):
    store, _ = seeded
    rng = random.Random(1000 + seed)
    scope = random_scope(rng, seed)
    parameter = sorted(SESSION_PARAMETERS)[seed % len(SESSION_PARAMETERS)]
    limit, offset = rng.choice([(100, 0), (3, 0), (2, 2)])
    context = (parameter, scope, limit, offset)
    facts = build_metric_query(scope, parameter, limit, offset, DUCKDB)
    events = build_metric_events_query(scope, parameter, limit, offset, DUCKDB)
    assert "FROM sessions" in facts.sql and "FROM sessions" not in events.sql
    assert_same(run(store, facts), run(store, events), context)


@pytest.mark.parametrize("seed", range(24))
def test_facts009_metric_of_pages_events_and_properties_from_lists_or_hashed_keys_equals_the_events(seeded, seed):
    store, _ = seeded
    rng = random.Random(2000 + seed)
    scope = random_scope(rng, seed)
    parameter = ("pathname", "page_title", "event_name", "prop:plan")[seed % 4]
    limit, offset = rng.choice([(100, 0), (2, 0), (2, 1)])
    context = (parameter, scope, limit, offset)
    facts = build_metric_query(scope, parameter, limit, offset, DUCKDB)
    events = build_metric_events_query(scope, parameter, limit, offset, DUCKDB)
    assert "FROM sessions" in facts.sql and "FROM sessions" not in events.sql
    # Paths come from the sessions' lists, the other values from pairs keyed by the hashed id.
    assert (
        (DUCKDB.unnest_strings("paths") in facts.sql) == (parameter == "pathname") != ("hash(session_id)" in facts.sql)
    )
    got = run(store, facts)
    assert not needs_exact_rerun(got)
    assert_same(got, run(store, events), context)


# DuckDB read the way an engine without a sessions table is read. (``Dialect`` is a dataclass, so a subclass setting
# ``session_facts`` as a class attribute would not change an instance's field.)
NO_FACTS = dataclasses.replace(DUCKDB, session_facts=False)


class _ShortKeys(Dialect):
    """DuckDB with a session key that is far from one-to-one: the ids' lengths."""

    def hash64(self, expr: str) -> str:
        return f"length({expr})"


def test_facts010_sessions_sharing_a_hashed_key_are_detected_so_the_exact_query_runs(seeded):
    store, _ = seeded
    scope = Scope((1,), Window(None, None, "UTC"))
    short = run(store, build_metric_query(scope, "event_name", 10, 0, _ShortKeys()))
    exact = run(store, build_metric_events_query(scope, "event_name", 10, 0, DUCKDB))
    assert needs_exact_rerun(short) and short[0]["key_collisions"] > 0
    assert [r["sessions"] for r in short] != [r["sessions"] for r in exact]  # the short keys do undercount
    assert not needs_exact_rerun(exact) and exact[0]["key_collisions"] == 0


def test_facts011_engines_without_the_table_and_row_filters_group_events():
    """ClickHouse's table keeps only the columns both stores share: page titles, event and property values group
    events there, a session-level parameter's values, the paths, pages of sessions, a goal's sessions and its
    breakdown by a session-level parameter come from the table (``test_session_facts_clickhouse.py``)."""
    window = Window(START, START + timedelta(days=7), "UTC", mode="datetime")
    for parameter in ("page_title", "event_name", "prop:plan"):
        built = build_metric_query(Scope((1,), window), parameter, 10, 0, CLICKHOUSE)
        assert built == build_metric_events_query(Scope((1,), window), parameter, 10, 0, CLICKHOUSE)
        assert built.narrowing is None and not built.reads_sessions
    for parameter in ("channel", "pathname"):
        shared = build_metric_query(Scope((1,), window), parameter, 10, 0, CLICKHOUSE)
        assert shared.narrowing is not None
        picked = shared.narrowing.then([{"events": FACTS_MIN_EVENTS, "sessions": 0, "merged": 0.0, **UNSEALED}])
        assert "FROM sessions" in picked.sql
    # A goal's breakdown by another parameter of events groups the events there; its breakdown by a session-level
    # parameter or the path, its sessions and the pages of sessions pick between the table and the grouping as the
    # overview does.
    whole_week, goal = Scope((1,), window), GoalSpec(1, "path", {"pathPattern": "/pricing"})
    by_title = build_goal_breakdown_query(whole_week, goal, "page_title", CLICKHOUSE)
    assert by_title == build_goal_breakdown_events_query(whole_week, goal, "page_title", CLICKHOUSE)
    for shared in (
        build_goal_breakdown_query(whole_week, goal, "channel", CLICKHOUSE),
        build_goal_breakdown_query(whole_week, goal, "pathname", CLICKHOUSE),
        build_goal_sessions_query(whole_week, goal, 25, 0, CLICKHOUSE),
        build_session_page_query(whole_week, 25, 0, CLICKHOUSE),
    ):
        assert shared.narrowing is not None
        picked = shared.narrowing.then([{"events": FACTS_MIN_EVENTS, "sessions": 0, "merged": 0.0, **UNSEALED}])
        assert "FROM sessions AS stored FINAL" in picked.sql
    rows = parse_filters(json.dumps([{"parameter": "event_name", "type": "equals", "value": ["signup"]}]))
    scope = Scope((1,), window, rows, frozenset({"event_name"}))
    assert build_metric_query(scope, "event_name", 10, 0, DUCKDB) == build_metric_events_query(
        scope, "event_name", 10, 0, DUCKDB
    )
    # Row filters group the events on either store.
    for d in (DUCKDB, CLICKHOUSE):
        assert build_session_page_query(scope, 25, 0, d) == build_session_page_events_query(scope, 25, 0, d)
        assert build_goal_sessions_query(scope, goal, 25, 0, d) == build_goal_sessions_events_query(
            scope, goal, 25, 0, d
        )
        assert build_goal_breakdown_query(scope, goal, "channel", d) == build_goal_breakdown_events_query(
            scope, goal, "channel", d
        )


@pytest.mark.parametrize("seed", range(20))
def test_facts014_a_page_of_sessions_from_the_table_equals_the_event_grouping(seeded, seed):
    store, _ = seeded
    rng = random.Random(3000 + seed)
    scope = random_scope(rng, seed)
    limit, offset = rng.choice([(25, 0), (10, 10), (100, 0), (5, 400)])
    facts = build_session_page_query(scope, limit, offset, DUCKDB)
    events = build_session_page_events_query(scope, limit, offset, DUCKDB)
    assert "FROM sessions" in facts.sql and "FROM sessions" not in events.sql
    page = run(store, facts)
    assert_same(page, run(store, events), (scope, limit, offset))
    # Describing the page's sessions: the scan bounded by their first stored event gives the same rows.
    ids = [r["session_id"] for r in page if r["session_id"] is not None]
    bounded = build_session_rows_query(scope, ids, [], DUCKDB)
    assert "first_seen" in bounded.sql
    unbounded = build_session_rows_query(scope, ids, [], NO_FACTS)
    assert "FROM sessions" not in unbounded.sql
    assert_same(run(store, bounded), run(store, unbounded), (scope, ids))
    # The same bounded by the page's spans, each session's start to its end, as the sessions list reads it.
    if ids:
        listed = [r for r in page if r["session_id"] is not None]
        spans = page_spans(listed)
        assert spans == joined_spans((r["session_start"], r["session_end"]) for r in listed)
        by_spans = build_session_rows_query(scope, ids, [], DUCKDB, spans=spans)
        assert "FROM sessions" not in by_spans.sql
        assert_same(run(store, by_spans), run(store, unbounded), (scope, ids, spans))


def test_facts039_a_pages_spans_are_its_sessions_own_joined_where_they_overlap():
    """A page's sessions are read within their own spans: sessions days apart keep a span each, overlapping ones
    share one, and past ``MAX_SPANS`` the nearest are joined, so every session stays inside a span."""
    day = datetime(2026, 3, 1)

    def row(start_hours: float, hours: float) -> dict[str, Any]:
        start = day + timedelta(hours=start_hours)
        return {"session_start": start, "session_end": start + timedelta(hours=hours)}

    apart = [row(0, 1), row(24 * 9, 2), row(24 * 20, 0.5)]
    assert page_spans(apart) == [(r["session_start"], r["session_end"]) for r in apart]
    assert page_spans([row(0, 2), row(1, 2), row(24, 1)]) == [
        (day, day + timedelta(hours=3)),
        (day + timedelta(hours=24), day + timedelta(hours=25)),
    ]
    many = [row(5 * i, 1) for i in range(MAX_SPANS + 8)]
    spans = page_spans(many)
    assert len(spans) == MAX_SPANS
    assert all(any(lo <= r["session_start"] and r["session_end"] <= hi for lo, hi in spans) for r in many)


def test_facts027_one_session_read_between_its_stored_first_and_last_event_equals_the_unbounded_read(seeded):
    """The session page's description and timeline read only the events between the session's stored first and last
    event: on every tenth stored session (and an unknown id, which has no bound) they equal the unbounded reads."""
    store, _ = seeded
    stored = store.query("SELECT site_id, session_id FROM sessions ORDER BY site_id, session_id")
    chosen = [*stored[::10], (1, "no-such-session")]
    for site_id, session_id in chosen:
        scope = Scope((site_id,), Window(None, None))
        bounded = build_session_rows_query(scope, [session_id], [], DUCKDB)
        assert "session_key IN" in bounded.sql and "max(last_seen)" in bounded.sql
        unbounded = build_session_rows_query(scope, [session_id], [], NO_FACTS)
        assert_same(run(store, bounded), run(store, unbounded), session_id)
        timeline = build_timeline_query(site_id, session_id, 1001, DUCKDB)
        assert "min(first_seen)" in timeline.sql
        everything = build_timeline_query(site_id, session_id, 1001, NO_FACTS)
        assert "FROM sessions" not in everything.sql + unbounded.sql
        assert run(store, timeline) == run(store, everything), session_id
    assert len(chosen) > 100


@pytest.mark.parametrize("seed", range(20))
def test_facts015_goal_sessions_from_the_table_equal_the_event_grouping(seeded, seed):
    store, _ = seeded
    rng = random.Random(4000 + seed)
    scope = random_scope(rng, seed)
    goal = GOALS[seed % len(GOALS)]
    limit, offset = rng.choice([(25, 0), (10, 10), (100, 0), (5, 300)])
    facts = build_goal_sessions_query(scope, goal, limit, offset, DUCKDB)
    events = build_goal_sessions_events_query(scope, goal, limit, offset, DUCKDB)
    assert "FROM sessions" in facts.sql and "FROM sessions" not in events.sql
    assert_same(run(store, facts), run(store, events), (scope, goal, limit, offset))


@pytest.mark.parametrize("seed", range(20))
def test_facts016_goal_breakdown_by_a_session_parameter_or_the_path_from_the_table_equals_the_event_grouping(
    seeded, seed
):
    store, _ = seeded
    rng = random.Random(5000 + seed)
    scope = random_scope(rng, seed)
    goal = rng.choice([GoalSpec(1, "path", {"pathPattern": "/blog/*"}), GoalSpec(3, "event", {"eventName": "signup"})])
    parameters = [*sorted(SESSION_PARAMETERS), "pathname"]
    parameter = parameters[seed % len(parameters)] if seed % 3 else "pathname"
    facts = build_goal_breakdown_query(scope, goal, parameter, DUCKDB)
    events = build_goal_breakdown_events_query(scope, goal, parameter, DUCKDB)
    assert "FROM sessions" in facts.sql and "FROM sessions" not in events.sql
    assert_same(run(store, facts), run(store, events), (scope, goal, parameter))


def test_facts003_windows_cutting_sessions_count_only_their_in_window_events():
    store = DuckDBEventStore(":memory:")
    at = datetime(2026, 3, 10, 23, 50)
    rows = [
        {
            "site_id": 1,
            "timestamp": at + timedelta(minutes=m),
            "session_id": "night",
            "user_id": "v",
            "type": "pageview",
        }
        for m in (0, 5, 15, 20)  # 23:50 to 00:10, across midnight
    ]
    store.append(rows_to_table(rows[:2]))
    store.append(rows_to_table(rows[2:]))
    window = Window(datetime(2026, 3, 11), datetime(2026, 3, 12), mode="date")
    row = run(store, build_overview_query(Scope((1,), window), DUCKDB))[0]
    assert (row["sessions"], row["pageviews"], row["session_duration"]) == (1, 2, 300.0)
    series = run(store, build_overview_series_query(Scope((1,), Window(None, None)), "day", DUCKDB))
    assert [(r["bucket"].day, r["sessions"], r["pageviews"]) for r in series] == [(10, 1, 2), (11, 0, 2)]


@pytest.mark.parametrize("seed", range(30))
def test_facts028_the_series_narrowed_to_the_crossing_sessions_spans_equals_the_event_grouping(seeded, seed):
    """Where the zone keeps one offset over the window, the series first asks when the sessions crossing a bucket
    or an edge were active and looks for their events in those spans only: the same rows as grouping the events."""
    store, _ = seeded
    rng = random.Random(3000 + seed)
    scope = random_scope(rng, seed)
    if scope.window.start is not None and seed % 3:  # from 1 or 30 March: most such windows keep one offset
        start = rng.choice([datetime(2026, 3, 1), datetime(2026, 3, 30)])
        length = timedelta(seconds=rng.randrange(3600, 8 * 86400))
        window = dataclasses.replace(scope.window, start=start, end=start + length, time_zone=rng.choice(ZONES))
        scope = dataclasses.replace(scope, window=window)
    bucket = rng.choice(BUCKETS)
    context = (scope, bucket)
    query = build_overview_series_query(scope, bucket, DUCKDB)
    expected = run(store, build_overview_series_events_query(scope, bucket, DUCKDB))
    assert_same(run(store, query), expected, context)
    if query.narrowing is None:
        assert constant_offset(scope.window) is None, context
        return
    rows, _ = run_narrowed(store, query)
    assert_same(rows, expected, context)


def test_facts029_the_narrowing_looks_for_events_in_the_spans_on_many_windows(seeded):
    """Over windows of a day to a week, daily buckets, most series are narrowed to spans, and never wrongly."""
    store, _ = seeded
    narrowed = 0
    for n in range(12):
        start = datetime(2026, 3, 1) + timedelta(hours=7 * n)
        scope = Scope((1,), Window(start, start + timedelta(days=1 + n % 7), "UTC", mode="datetime"))
        query = build_overview_series_query(scope, "day", DUCKDB)
        rows, made = run_narrowed(store, query)
        assert_same(rows, run(store, build_overview_series_events_query(scope, "day", DUCKDB)), scope)
        narrowed += made.sql != query.sql
    assert narrowed >= 9


def test_facts030_the_narrowed_series_sees_the_events_its_spans_were_found_in():
    """Both queries of the narrowed series read one snapshot: a session committed between them changes neither."""
    store = DuckDBEventStore(":memory:")

    def pageviews(session: str, user: str, at: datetime, minutes: tuple[int, ...]) -> list[dict[str, Any]]:
        return [
            {
                "site_id": 1,
                "timestamp": at + timedelta(minutes=m),
                "session_id": session,
                "user_id": user,
                "type": "pageview",
            }
            for m in minutes
        ]

    store.append(rows_to_table(pageviews("a", "v", datetime(2026, 3, 10, 23, 50), (0, 20))))
    late = pageviews("b", "w", datetime(2026, 3, 12, 23, 55), (0, 10))
    scope = Scope((1,), Window(datetime(2026, 3, 10), datetime(2026, 3, 14), mode="datetime"))
    query = build_overview_series_query(scope, "day", DUCKDB)
    before = run(store, query)
    first = query.narrowing.first

    def then(found: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        store.append(rows_to_table(late))  # commits between the two queries
        made = query.narrowing.then(found)
        assert made.sql != query.sql
        return made.sql, made.params

    assert store.query_dicts_then(first.sql, first.params, then) == before
    assert [(r["bucket"].day, r["sessions"], r["pageviews"]) for r in before] == [(10, 1, 1), (11, 0, 1)]
    after = run(store, query)
    assert [(r["bucket"].day, r["sessions"], r["pageviews"]) for r in after][2:] == [(12, 1, 1), (13, 0, 1)]


def test_facts031_merged_spans_hold_every_span_within_the_limit():
    day = datetime(2026, 3, 1)
    window = Window(day, day + timedelta(days=40), mode="datetime")

    def span(start_hours: float, hours: float) -> dict[str, Any]:
        return {"lo": day + timedelta(hours=start_hours), "hi": day + timedelta(hours=start_hours + hours)}

    assert merge_spans([], window) == []
    assert merge_spans([{"lo": None, "hi": None}], window) == []
    # Overlapping and touching spans join, in order of time.
    assert merge_spans([span(30, 2), span(1, 2), span(2, 1), span(3, 4)], window) == [
        (day + timedelta(hours=1), day + timedelta(hours=7)),
        (day + timedelta(hours=30), day + timedelta(hours=32)),
    ]
    # Beyond the limit, the narrowest gaps close first; every span stays inside one of the result.
    rng = random.Random(31)
    spans = [span(24 * n + rng.random(), rng.random()) for n in range(36)]
    merged = merge_spans(spans, Window(day, day + timedelta(days=100), mode="datetime"), limit=8)
    assert merged is not None and len(merged) == 8
    assert all(a[1] < b[0] for a, b in itertools.pairwise(merged))
    assert all(any(lo <= s["lo"] and s["hi"] <= hi for lo, hi in merged) for s in spans)
    gaps = sorted((spans[i + 1]["lo"] - spans[i]["hi"] for i in range(35)), reverse=True)
    assert sorted(b[0] - a[1] for a, b in itertools.pairwise(merged)) == sorted(gaps[:7])
    # Spans covering more than half the window skip too little to be worth it; an open window compares with them.
    assert merge_spans([span(0, 24 * 21)], window) is None
    assert merge_spans([span(0, 24 * 19)], window) == [(day, day + timedelta(hours=24 * 19))]
    assert merge_spans([span(0, 1)], Window(None, None)) is None
    assert merge_spans([span(0, 1), span(10, 1)], Window(None, None)) is not None


def test_facts032_the_series_buckets_crossing_sessions_of_one_user_by_their_quarter_hours():
    """A whole session of one user crossing a bucket boundary gives its pageviews and user per bucket from its
    ``quarter_hours``, where every bucket starts on a UTC quarter-hour; sessions whose quarter-hours are unknown (stored
    before the column) and the others are bucketed from their events. The same rows as grouping the events."""
    rng = random.Random(32)
    rows = random_events(rng, 600)
    store = DuckDBEventStore(":memory:")
    append_shuffled(store, rows, rng)
    unknown = store.query("SELECT count(*) FROM sessions WHERE quarter_hours IS NULL")[0][0]
    assert unknown == 0
    crossing = "users_count = 1 AND CAST(first_seen AS DATE) <> CAST(last_seen AS DATE)"
    assert store.query(f"SELECT count(*) FROM sessions WHERE {crossing}")[0][0] >= 20  # bucketed by quarter-hours
    start = datetime(2026, 3, 2)
    windows = [
        Window(start, start + timedelta(days=20), "UTC", mode="datetime"),
        Window(start, start + timedelta(days=6), "Asia/Kolkata", mode="datetime"),
        Window(start, start + timedelta(days=30), "America/New_York", mode="datetime"),  # a change of offset
        Window(start, start + timedelta(days=30), "Australia/Lord_Howe", mode="datetime"),  # half-hour offsets
        Window(start, start + timedelta(days=10), "Asia/Kathmandu", mode="datetime"),  # +05:45
    ]
    for nulled in (False, True):
        if nulled:  # as after an upgrade: every other session's quarter-hours unknown
            store._con.execute("UPDATE sessions SET quarter_hours = NULL WHERE hash(session_id) % 2 = 0")
        for window in windows:
            for bucket in ("day", "hour", "fifteen_minutes", "week", "ten_minutes"):
                scope = Scope((1, 2), window)
                query = build_overview_series_query(scope, bucket, DUCKDB)
                assert ("quarter_hours" in query.sql) == (bucket != "ten_minutes"), (window, bucket)
                expected = run(store, build_overview_series_events_query(scope, bucket, DUCKDB))
                assert_same(run(store, query), expected, (window, bucket, nulled))
                if query.narrowing is not None:
                    assert_same(run_narrowed(store, query)[0], expected, (window, bucket, nulled))
    unbounded = build_overview_series_query(Scope((1,), Window(None, None, "UTC")), "day", DUCKDB)
    assert "quarter_hours" not in unbounded.sql  # no offsets looked up: the events, as before
    assert "quarter_hours" not in build_overview_series_query(Scope((1,), windows[0]), "day", CLICKHOUSE).sql


def test_facts034_a_table_from_before_the_quarter_hours_gets_them_empty_and_the_series_stays_exact(
    tmp_path, monkeypatch
):
    """The column is added at open without reading the events (no copy, no fill); the sessions stored before keep
    it unknown, also when later batches continue them, and the series reads their events."""
    monkeypatch.setattr(duckdb_module, "FOLD_ROWS", 100)  # the first batch is folded at once
    rows = random_events(random.Random(34), 400)
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    store.append(rows_to_table(rows[:1200]))
    for later in ("prev_first_seen", "quarter_hours"):  # a table from before both
        store._con.execute(f"ALTER TABLE sessions DROP COLUMN {later}")
    store.close()
    present = set(sessions_module._column_names()) - {"quarter_hours", "prev_first_seen"}
    statements = [q.sql for q in sessions_module.build_sessions_upgrade(present, [])]
    assert [sql.split(" ")[5] for sql in statements] == ["quarter_hours", "prev_first_seen"]
    assert all(sql.startswith("ALTER TABLE sessions ADD COLUMN") for sql in statements)

    reopened = DuckDBEventStore(tmp_path / "events.duckdb")
    reopened.append(rows_to_table(rows[1200:]))
    assert_upgraded(reopened, rows, {row["session_id"] for row in rows[:1200]})
    for zone in ("UTC", "Asia/Kolkata"):
        scope = Scope((1, 2, 3), Window(datetime(2026, 3, 1), datetime(2026, 4, 5), zone, mode="datetime"))
        query = build_overview_series_query(scope, "day", DUCKDB)
        assert "quarter_hours" in query.sql
        expected = run(reopened, build_overview_series_events_query(scope, "day", DUCKDB))
        assert_same(run(reopened, query), expected, zone)
        assert_same(run_narrowed(reopened, query)[0], expected, zone)
    reopened.close()


def test_facts035_a_session_with_events_before_1970_keeps_its_quarter_hours_unknown():
    rows = [
        {"site_id": 1, "session_id": sid, "user_id": "v", "type": "pageview", "pathname": "/", "timestamp": at}
        for sid, start in (("old", datetime(1969, 12, 31, 23, 50)), ("new", datetime(1970, 1, 1, 23, 50)))
        for at in (start, start + timedelta(minutes=20))
    ]
    store = DuckDBEventStore(":memory:")
    store.append(rows_to_table(rows))
    assert store.query("SELECT session_id, quarter_hours IS NULL FROM sessions ORDER BY 1") == [
        ("new", False),
        ("old", True),
    ]
    scope = Scope((1,), Window(datetime(1969, 12, 31), datetime(1970, 1, 3), "UTC", mode="datetime"))
    series = run(store, build_overview_series_query(scope, "day", DUCKDB))
    assert series == run(store, build_overview_series_events_query(scope, "day", DUCKDB))
    assert [(r["bucket"].day, r["sessions"], r["pageviews"], r["users"]) for r in series] == [
        (31, 1, 1, 1),
        (1, 1, 2, 1),
        (2, 0, 1, 1),
    ]


def test_facts033_quarter_hours_align_where_every_offset_and_change_falls_on_a_quarter_hour():
    def window(zone: str, start: datetime) -> Window:
        return Window(start, start + timedelta(days=40), zone, mode="datetime")

    assert quarter_hours_align(window("Asia/Kathmandu", datetime(2026, 1, 1)))
    assert quarter_hours_align(window("Europe/Berlin", datetime(2026, 3, 1)))  # the change at 01:00 UTC
    assert quarter_hours_align(window("Australia/Lord_Howe", datetime(2026, 3, 20)))  # +11 -> +10:30
    assert not quarter_hours_align(window("Europe/Amsterdam", datetime(1930, 1, 1)))  # +00:19:32
    assert not quarter_hours_align(Window(None, datetime(2026, 1, 1), "UTC"))


def test_facts026_users_as_numbers_are_counted_once_on_either_side_of_the_quarters():
    """The overview counts the numbers in each quarter of their range apart: values at both ends of each quarter,
    each user in two sessions, and an identified user that is also a visitor id, give one user each."""
    store = DuckDBEventStore(":memory:")
    users = [
        ("0000000000000000", ""),
        ("3fffffffffffffff", ""),
        ("4000000000000000", ""),
        ("7fffffffffffffff", ""),
        ("8000000000000000", ""),
        ("bfffffffffffffff", ""),
        ("c000000000000000", ""),
        ("ffffffffffffffff", ""),
        ("visitor-a", "8000000000000000"),  # the identified id wins, and it is a visitor id counted above
        ("visitor-b", "member-1"),
        ("visitor-c", "member-1"),
        ("7FFFFFFFFFFFFFFF", ""),  # upper case: a string, not the number
    ]
    rows = []
    for n, (visitor, member) in enumerate(users):
        for repeat in range(2):
            at = datetime(2026, 3, 10, 8) + timedelta(hours=n, minutes=40 * repeat)
            rows.append(
                {
                    "site_id": 1,
                    "timestamp": at,
                    "session_id": f"s{n}-{repeat}",
                    "user_id": visitor,
                    "identified_user_id": member,
                    "type": "pageview",
                }
            )
    store.append(rows_to_table(rows))
    store.chain_sessions()
    window = Window(datetime(2026, 3, 10), datetime(2026, 3, 11), mode="date")
    # Over two sites the users are grouped in quarters; over one they are counted along their chains.
    for sites, form in (((1, 2), [f"unum >= {k * 2**62}" for k in (1, 2, 3)]), ((1,), ["prev_first_seen"])):
        scope = Scope(sites, window)
        facts = build_overview_query(scope, DUCKDB)
        assert all(part in facts.sql for part in form), sites
        row = run(store, facts)[0]
        # The eight numbers (8000... twice over), member-1, 7FFF...
        assert (row["sessions"], row["users"]) == (24, 10)
        assert_same(run(store, facts), run(store, build_overview_events_query(scope, DUCKDB)), scope)


def test_facts036_each_session_keeps_the_start_of_the_one_before_it_in_its_users_chain(seeded):
    """After batches in any order, folded and looked up often, every session holds the start of its user's previous
    session on its site (a microsecond after its own for the first), as the stored users and starts give it."""
    store, _ = seeded
    store.chain_sessions()
    rows = store.query("SELECT site_id, user_number, user_text, first_seen, session_id, prev_first_seen FROM sessions")
    chains: dict[tuple[Any, ...], list[tuple[datetime, str]]] = {}
    for site, number, text, first, session, _ in rows:
        chains.setdefault((site, number, text), []).append((first, session))
    expected = {}
    for sessions in chains.values():
        sessions.sort()
        for before, (first, session) in zip([None, *sessions], sessions, strict=False):
            expected[session] = first + timedelta(microseconds=1) if before is None else before[0]
    assert max(len(c) for c in chains.values()) > 20  # long chains, sessions of one user overlapping in time
    assert {session: prev for *_, session, prev in rows} == expected


def test_facts037_the_overview_and_its_series_count_users_along_their_chains_as_the_event_grouping_does(seeded):
    """On every kind of window, zone and bucket, with every chain known and with some unknown (folded since the last
    lookup): the users of the whole sessions from their chains, the few others looked up, equal the event
    grouping's, over the window and per bucket."""
    store, _ = seeded
    store.chain_sessions()
    rng = random.Random(37)
    windows = [random_window(rng) for _ in range(60)]
    windows += [Window(START + timedelta(days=3), START + timedelta(days=9), "UTC", mode="date"), Window(None, None)]
    for state in ("known", "some unknown"):
        if state == "some unknown":
            store._con.execute("UPDATE sessions SET prev_first_seen = NULL WHERE hash(session_id) % 3 = 0")
        for window in windows:
            scope = Scope((rng.choice(SITES),), window)
            facts = build_overview_query(scope, DUCKDB)
            assert "prev_first_seen" in facts.sql
            assert_same(run(store, facts), run(store, build_overview_events_query(scope, DUCKDB)), (state, window))
            bucket = rng.choice(BUCKETS)
            series = build_overview_series_query(scope, bucket, DUCKDB)
            # Along chains where one offset holds all window long (so a bucket is one span of time).
            assert ("prev_first_seen" in series.sql) == (constant_offset(window) is not None), window
            expected = run(store, build_overview_series_events_query(scope, bucket, DUCKDB))
            assert_same(run(store, series), expected, (state, window, bucket))
            if series.narrowing is not None:
                assert_same(run_narrowed(store, series)[0], expected, (state, window, bucket))
    store.chain_sessions()


def test_facts004_row_filters_and_engines_without_the_table_use_the_event_grouping():
    window = Window(datetime(2026, 3, 1), datetime(2026, 3, 2))
    filters = parse_filters('[{"parameter": "country", "type": "equals", "value": ["DE"]}]')
    assert "FROM sessions" in build_overview_query(Scope((1,), window, filters), DUCKDB).sql
    row_filtered = Scope((1,), window, filters, row_parameters=frozenset({"country"}))
    assert build_overview_query(row_filtered, DUCKDB) == build_overview_events_query(row_filtered, DUCKDB)
    on_clickhouse = build_overview_query(row_filtered, CLICKHOUSE)
    assert on_clickhouse == build_overview_events_query(row_filtered, CLICKHOUSE) and on_clickhouse.narrowing is None
    # Row filters group the events for the series too; without them, ClickHouse's picks between its table and the
    # grouping (``test_session_facts_clickhouse.py``).
    series = build_overview_series_query(row_filtered, "day", CLICKHOUSE)
    assert series == build_overview_series_events_query(row_filtered, "day", CLICKHOUSE) and series.narrowing is None
    assert build_overview_series_query(Scope((1,), window), "day", CLICKHOUSE).narrowing is not None


def test_facts005_a_database_without_the_table_gets_it_filled_at_open(tmp_path):
    rng = random.Random(5)
    rows = random_events(rng, 300)
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    store.append(rows_to_table(rows))
    store._con.execute("DROP TABLE sessions")  # what a database from before the table looks like
    store._con.execute("DROP TABLE sessions_pending")
    store.close()

    reopened = DuckDBEventStore(tmp_path / "events.duckdb")
    assert session_rows(reopened) == rebuilt(rows)
    more = random_events(random.Random(6), 20)
    for row in more:
        row["session_id"] = "later-" + row["session_id"]
    reopened.append(rows_to_table(more))
    assert session_rows(reopened) == rebuilt(rows + more)
    reopened.close()


def test_facts012_a_table_from_before_the_session_key_gets_it_and_batches_still_find_their_sessions(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(duckdb_module, "FOLD_ROWS", 100)  # the first batch is folded at once
    monkeypatch.setattr(duckdb_module, "UPGRADE_SLICE_SESSIONS", 40)
    rng = random.Random(12)
    rows = random_events(rng, 300)
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    store.append(rows_to_table(rows[:900]))
    # The table as it was first shipped.
    for column in sessions_module.ADDED_COLUMNS:
        store._con.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
    store.close()

    reopened = DuckDBEventStore(tmp_path / "events.duckdb")
    reopened.append(rows_to_table(rows[900:]))  # continues sessions stored before the key existed
    assert_upgraded(reopened, rows, {row["session_id"] for row in rows[:900]})
    keys = reopened.query("SELECT count(*), count(DISTINCT session_key) FROM sessions WHERE session_key IS NOT NULL")
    assert keys == [(300, 300)]
    reopened.close()


@pytest.mark.parametrize("slice_sessions", [7, 1_000_000])
def test_facts020_a_table_from_before_pathnames_gets_them_from_stored_and_pending_events(
    tmp_path, monkeypatch, slice_sessions
):
    monkeypatch.setattr(duckdb_module, "FOLD_ROWS", 100)
    monkeypatch.setattr(duckdb_module, "UPGRADE_SLICE_SESSIONS", slice_sessions)  # copied in slices or at once
    rows = random_events(random.Random(20), 300)
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    store.append(rows_to_table(rows[:600]))  # folded at once
    store.append(rows_to_table(rows[600:650]))  # pending at the upgrade, some of them continuing stored sessions
    assert store._pending_rows == 50
    store._con.execute("ALTER TABLE sessions DROP COLUMN pathnames")
    store.close()

    reopened = DuckDBEventStore(tmp_path / "events.duckdb")
    assert reopened.query("SELECT count(*) FROM sessions WHERE len(pathnames) > 0")[0][0] > 0
    reopened.append(rows_to_table(rows[650:]))
    assert session_rows(reopened) == rebuilt(rows)  # the pending paths were listed once
    reopened.close()


def test_facts025_a_table_from_before_the_users_split_gets_it_at_open(tmp_path, monkeypatch):
    """The user's number or other string and the count of users, filled in place for stored sessions and kept after."""
    monkeypatch.setattr(duckdb_module, "FOLD_ROWS", 100)
    monkeypatch.setattr(duckdb_module, "UPGRADE_SLICE_SESSIONS", 40)
    # goal_mask, quarter_hours and prev_first_seen came later still (the last two start unknown: not written)
    derived = ("user_number", "user_text", "users_count", "goal_mask", "quarter_hours", "prev_first_seen")
    present = set(sessions_module._column_names()) - set(derived)
    in_place = [q.sql for q in sessions_module.build_sessions_upgrade(present, [])]
    assert not any("sessions_upgraded" in sql for sql in in_place)  # not copied: only the new columns are written
    copied = [q.sql for q in sessions_module.build_sessions_upgrade(present - {"user_number"} | {"users_count"}, [])]
    assert any("sessions_upgraded" in sql for sql in copied)  # a column missing from the middle: the table is copied
    rows = random_events(random.Random(25), 300)
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    store.append(rows_to_table(rows[:900]))
    for column in derived:
        store._con.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
    store.close()

    reopened = DuckDBEventStore(tmp_path / "events.duckdb")
    reopened.append(rows_to_table(rows[900:]))
    assert_upgraded(reopened, rows, {row["session_id"] for row in rows[:900]})
    forms = reopened.query("SELECT user_value, user_number, user_text, users_count, len(users) FROM sessions")
    for value, number, text, count, listed in forms:
        is_visitor_form = len(value) == 16 and set(value) <= set("0123456789abcdef")
        assert (number, text) == ((int(value, 16), None) if is_visitor_form else (None, value))
        assert count == listed
    assert {text for _, _, text, _, _ in forms} >= {"0123456789ABCDEF", "0123456789abcde", "member-1"}
    assert {number for _, number, _, _, _ in forms} >= {0x0123456789ABCDEF, 2**64 - 1}
    reopened.close()


def with_opened_ids(rows: list[dict[str, Any]], rng: random.Random, kinds: tuple[str, ...]) -> set[str]:
    """Give each session of ``rows`` an id holding an opening time of one of ``kinds``; return the ids of those
    whose events lie more than the slack before that time (the ones a fold's time bound must not be trusted for).

    ``tracker``: opened at its first event, as ingestion opens sessions; ``stepped``: opened up to the slack after
    it (a clock stepped back); ``long``: opened days before it; ``early``: events older than the id's time less the
    slack (another writer); ``legacy``: an id without a time.
    """
    first: dict[str, datetime] = {}
    for row in rows:
        first[row["session_id"]] = min(first.get(row["session_id"], row["timestamp"]), row["timestamp"])
    ids, early = {}, set()
    for old, at in sorted(first.items()):
        kind = rng.choice(kinds)
        if kind == "legacy":
            ids[old] = f"legacy-{old}"
            continue
        shift = {
            "tracker": timedelta(0),
            "stepped": rng.random() * (OPENED_SLACK - timedelta(seconds=1)),
            "long": -timedelta(days=rng.randrange(1, 20)),
            "early": OPENED_SLACK + timedelta(seconds=rng.randrange(1, 4 * 3600)),
        }[kind]
        ids[old] = new_session_id(at + shift)
        if kind == "early":
            early.add(ids[old])
    for row in rows:
        row["session_id"] = ids[row["session_id"]]
    return early


@pytest.mark.parametrize(
    "kinds",
    [("tracker", "stepped", "long"), ("tracker", "tracker", "stepped", "long", "early", "legacy")],
    ids=["bounded", "mixed"],
)
def test_facts022_batches_find_their_stored_sessions_from_the_time_in_their_ids(monkeypatch, kinds):
    """Sessions continued by later batches in any order stay one row each, whatever their ids say, and the sessions
    whose events predate their ids' time are listed for a full search."""
    monkeypatch.setattr(duckdb_module, "FOLD_ROWS", 100)
    rng = random.Random(len(kinds))
    rows = random_events(rng, 600)
    early = with_opened_ids(rows, rng, kinds)
    store = DuckDBEventStore(":memory:")
    append_shuffled(store, rows, rng)
    assert session_rows(store) == rebuilt(rows)
    assert {r[0] for r in store.query("SELECT session_id FROM sessions_unbounded")} == early
    assert store.query("SELECT count(*) FROM sessions_unbounded") == [(len(early),)]  # each listed once


def fold_since(store: DuckDBEventStore, rows: list[dict[str, Any]]) -> datetime | None:
    """Fold ``rows`` as a batch on the store's connection; return the time from which it searched (None: all)."""
    cur = store._con.cursor()
    cur.register("incoming_batch", rows_to_table(rows))
    for query in build_sessions_upsert("incoming_batch"):
        cur.execute(query.sql, query.params).fetchall()
    (since,) = cur.execute("SELECT getvariable('sitelens_fold_since')").fetchone() or (None,)
    cur.close()
    return since


def test_facts023_a_fold_searches_from_its_earliest_opening_time_unless_an_id_cannot_be_trusted():
    store = DuckDBEventStore(":memory:")
    t1, t2 = datetime(2026, 3, 1, 9, 0, 0, 250000), datetime(2026, 3, 2, 18, 30)
    a, b = new_session_id(t1), new_session_id(t2)
    event = {"site_id": 1, "type": "pageview", "user_id": "v"}
    assert fold_since(store, [{**event, "session_id": a, "timestamp": t1}]) == t1 - OPENED_SLACK
    continued = [{**event, "session_id": b, "timestamp": t2}, {**event, "session_id": a, "timestamp": t2}]
    assert fold_since(store, continued) == t1 - OPENED_SLACK
    assert fold_since(store, [{**event, "session_id": "s1", "timestamp": t2}]) is None  # no time in the id
    c = new_session_id(t2)
    assert fold_since(store, [{**event, "session_id": c, "timestamp": t2 - 2 * OPENED_SLACK}]) is None  # too early
    assert fold_since(store, [{**event, "session_id": c, "timestamp": t2}]) is None  # listed for good
    assert fold_since(store, [{**event, "session_id": b, "timestamp": t2}]) == t2 - OPENED_SLACK
    assert store.query("SELECT session_id FROM sessions_unbounded") == [(c,)]
    assert store.query("SELECT session_id, events FROM sessions ORDER BY 1") == sorted(
        [(a, 2), (b, 2), ("s1", 1), (c, 2)]
    )


def test_facts024_a_file_from_before_the_list_or_a_table_filled_again_gets_the_list_at_open(tmp_path):
    t = datetime(2026, 3, 1, 12, 0)
    early, fine = new_session_id(t), new_session_id(t)
    event = {"site_id": 1, "type": "pageview", "user_id": "v"}
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    store.append(rows_to_table([{**event, "session_id": early, "timestamp": t - 3 * OPENED_SLACK}]))
    store.append(rows_to_table([{**event, "session_id": fine, "timestamp": t}]))
    store.query("SELECT count(*) FROM sessions")  # folds what is pending
    store._con.execute("DROP TABLE sessions_unbounded")  # what a file from before the list looks like
    store.close()

    reopened = DuckDBEventStore(tmp_path / "events.duckdb")
    assert reopened.query("SELECT session_id FROM sessions_unbounded") == [(early,)]
    later = [{**event, "session_id": sid, "timestamp": t + timedelta(minutes=5)} for sid in (early, fine)]
    reopened.append(rows_to_table(later * 3000))  # folded at once: continues both sessions
    assert reopened.query("SELECT session_id, events FROM sessions ORDER BY 1") == sorted([(early, 3001), (fine, 3001)])
    # A table filled again from the events gets its list made again with it.
    reopened._con.execute("DROP TABLE sessions")
    reopened._con.execute("DELETE FROM sessions_unbounded")
    reopened.close()
    refilled = DuckDBEventStore(tmp_path / "events.duckdb")
    assert refilled.query("SELECT session_id FROM sessions_unbounded") == [(early,)]
    refilled.append(rows_to_table(later * 3000))
    assert refilled.query("SELECT session_id, events FROM sessions ORDER BY 1") == sorted([(early, 6001), (fine, 6001)])
    refilled.close()


def test_facts013_sessions_sharing_a_key_are_told_apart_by_their_ids(monkeypatch):
    """The key only narrows the search: ids with the same key stay separate sessions, each continued rightly."""
    monkeypatch.setattr(sessions_module, "SESSION_KEY", "CAST(7 AS UBIGINT)")  # every session gets one key
    rows = random_events(random.Random(13), 40)
    store = DuckDBEventStore(":memory:")
    append_shuffled(store, rows, random.Random(14))
    assert store.query("SELECT DISTINCT session_key FROM sessions") == [(7,)]
    store.chain_sessions()
    got = store.query("SELECT * EXCLUDE (session_key) FROM sessions ORDER BY site_id, session_id")
    key_at = [name for name, *_ in store.query("DESCRIBE sessions")].index("session_key")
    without_key = [r[:key_at] + r[key_at + 1 :] for r in rebuilt(rows)]
    assert [tuple(_comparable(v) for v in r) for r in got] == without_key


def crash_before_applying(tmp_path: Any, rows: list[dict[str, Any]]) -> None:
    """``events.duckdb`` and ``log`` under ``tmp_path`` as a process leaves them that died after logging ``rows`` in
    three records but storing only the first (records 2 and 3 were logged and acknowledged, not applied)."""
    parts = [rows[:300], rows[300:500], rows[500:]]
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    log = EventLog(tmp_path / "log")
    log.append(rows_to_table(parts[0]))
    store.append(rows_to_table(parts[0]), log_seq=1)
    log.append(rows_to_table(parts[1]))
    log.append(rows_to_table(parts[2]))
    log.close()
    store.close()


def test_facts006_a_restart_after_a_crash_between_log_and_store_counts_each_event_once(tmp_path):
    rng = random.Random(7)
    rows = random_events(rng, 200)
    rng.shuffle(rows)
    crash_before_applying(tmp_path, rows)

    for _ in range(2):  # the first start replays records 2 and 3, the second start replays nothing
        store = DuckDBEventStore(tmp_path / "events.duckdb")
        BatchWriter(store, log=EventLog(tmp_path / "log")).close()
        assert store.applied_log_seq() == 3
        assert session_rows(store) == rebuilt(rows)
        store.close()


def test_facts007_deleting_a_site_deletes_its_sessions():
    store = DuckDBEventStore(":memory:")
    rows = random_events(random.Random(8), 100)
    store.append(rows_to_table(rows))
    store._con.execute("INSERT INTO sessions_unbounded VALUES (1, 's1'), (2, 's2')")
    store.delete_site(1)
    assert store.query("SELECT count(*) FROM sessions_pending WHERE site_id = 1") == [(0,)]  # not folded later
    assert store.query("SELECT site_id FROM sessions_unbounded") == [(2,)]
    assert store.query("SELECT count(*) FROM sessions WHERE site_id = 1") == [(0,)]
    assert session_rows(store) == rebuilt([r for r in rows if r["site_id"] != 1])


@pytest.mark.parametrize("fold_rows", [1, 37, 1_000_000])
def test_facts017_the_table_is_the_same_whenever_pending_events_are_folded(monkeypatch, fold_rows):
    """Batches fold at once (at least ``FOLD_ROWS``), wait in ``sessions_pending``, or fold when a read comes."""
    monkeypatch.setattr(duckdb_module, "FOLD_ROWS", fold_rows)
    rng = random.Random(fold_rows)
    rows = random_events(rng, 300)
    rng.shuffle(rows)
    store = DuckDBEventStore(":memory:")
    at = 0
    while at < len(rows):
        size = min(rng.randrange(1, 120), len(rows) - at)
        store.append(rows_to_table(rows[at : at + size]))
        at += size
        if rng.random() < 0.2:  # a read in between folds what is pending
            (stored,) = store.query("SELECT count(*) FROM sessions_pending")[0]
            assert store.query("SELECT sum(events) FROM sessions") == [(at,)]
            assert store.query("SELECT count(*) FROM sessions_pending") == [(0,)]
            assert stored <= max(fold_rows - 1, size)
    assert session_rows(store) == rebuilt(rows)


def test_facts021_a_fold_that_fails_stores_nothing_and_the_next_append_folds_everything(monkeypatch):
    """The events, the pending ones and the log position are committed with the fold or not at all."""
    monkeypatch.setattr(duckdb_module, "FOLD_ROWS", 100)
    rows = random_events(random.Random(21), 60)
    store = DuckDBEventStore(":memory:")
    store.append(rows_to_table(rows[:80]), log_seq=1)  # waits in sessions_pending
    fold = store._fold_pending
    store._fold_pending = [*fold[:-2], Query("SELECT error('the disk is full')"), *fold[-2:]]
    with pytest.raises(duckdb_module.duckdb.Error, match="the disk is full"):
        store.append(rows_to_table(rows[80:150]), log_seq=2)  # 150 pending: the fold runs, and fails
    assert store.query("SELECT count(*) FROM events") == [(80,)]
    assert store.query("SELECT count(*) FROM sessions_pending") == [(80,)]
    assert store.applied_log_seq() == 1
    store._fold_pending = fold
    assert session_rows(store) == rebuilt(rows[:80])  # the read folds what is pending, once
    store.append(rows_to_table(rows[80:]), log_seq=2)
    assert store.applied_log_seq() == 2
    assert session_rows(store) == rebuilt(rows)


def test_facts038_a_chain_lookup_that_fails_after_a_commit_refuses_nothing_and_reads_stay_exact(monkeypatch, caplog):
    """The lookup runs after the events it follows are committed: its failure is logged, the append still returns
    (a writer retrying it would store the events twice), the chains stay unknown and the overview stays exact; the
    next lookup gives them."""
    monkeypatch.setattr(duckdb_module, "FOLD_ROWS", 100)
    monkeypatch.setattr(duckdb_module, "CHAIN_ROWS", 100)
    rows = random_events(random.Random(38), 300)
    store = DuckDBEventStore(":memory:")
    monkeypatch.setattr(duckdb_module, "build_chain_pass", lambda: [Query("SELECT error('out of memory')")])
    with caplog.at_level("WARNING"):
        assert store.append(rows_to_table(rows), log_seq=1) == len(rows)
    assert "chains" in caplog.text and "out of memory" in caplog.text
    assert store.applied_log_seq() == 1 and store.query("SELECT count(*) FROM events") == [(len(rows),)]
    assert store.query("SELECT count(*) FROM sessions WHERE prev_first_seen IS NULL") == [(300,)]
    scope = Scope((1,), Window(START, START + timedelta(days=DAYS), "UTC", mode="date"))
    facts = build_overview_query(scope, DUCKDB)
    assert "prev_first_seen" in facts.sql
    assert_same(run(store, facts), run(store, build_overview_events_query(scope, DUCKDB)), scope)
    monkeypatch.undo()
    assert session_rows(store) == rebuilt(rows)  # looked up


def test_facts040_a_bulk_load_looks_the_chains_up_once_at_its_end(monkeypatch):
    """Inside ``bulk_load`` no lookup runs however many events are folded, and reads stay exact meanwhile; its end
    runs the one lookup held back, also when the load ends with an error. Outside it the lookups run as before."""
    monkeypatch.setattr(duckdb_module, "FOLD_ROWS", 100)
    monkeypatch.setattr(duckdb_module, "CHAIN_ROWS", 100)
    rows = random_events(random.Random(40), 200)
    assert len(rows) > 700
    store = DuckDBEventStore(":memory:")
    lookups = []
    look_up = store._look_up_chains
    monkeypatch.setattr(store, "_look_up_chains", lambda: lookups.append(1) or look_up())
    unknown = "SELECT count(*) FROM sessions WHERE prev_first_seen IS NULL"
    scope = Scope((1,), Window(START, START + timedelta(days=DAYS), "UTC", mode="date"))
    with store.bulk_load():
        for part in range(0, 400, 100):
            store.append(rows_to_table(rows[part : part + 100]))
        assert lookups == []
        assert store.query(unknown)[0][0] == store.query("SELECT count(*) FROM sessions")[0][0] > 0
        facts, events = build_overview_query(scope, DUCKDB), build_overview_events_query(scope, DUCKDB)
        assert_same(run(store, facts), run(store, events), scope)
    assert lookups == [1] and store.query(unknown) == [(0,)]

    with pytest.raises(RuntimeError, match="part-way"), store.bulk_load():
        store.append(rows_to_table(rows[400:550]))
        raise RuntimeError("the load stops part-way")
    assert lookups == [1, 1] and store.query(unknown) == [(0,)]
    store.append(rows_to_table(rows[550:]))  # outside a load, a lookup every ``CHAIN_ROWS`` again
    assert lookups == [1, 1, 1] and store.query(unknown) == [(0,)]
    assert session_rows(store) == rebuilt(rows)


def test_facts018_pending_events_outlive_a_restart_and_are_folded_once(tmp_path):
    rows = random_events(random.Random(18), 100)
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    store.append(rows_to_table(rows[:200]))
    store.close()
    reopened = DuckDBEventStore(tmp_path / "events.duckdb")
    assert reopened.query("SELECT count(*) FROM sessions_pending") == [(200,)]
    reopened.append(rows_to_table(rows[200:]))
    assert session_rows(reopened) == rebuilt(rows)
    reopened.close()
    again = DuckDBEventStore(tmp_path / "events.duckdb")
    assert again.query("SELECT count(*) FROM sessions_pending") == [(0,)]
    assert session_rows(again) == rebuilt(rows)
    again.close()


def test_facts019_a_read_of_the_table_sees_the_events_it_describes_while_batches_arrive():
    """A batch committed while a read runs stays out of both tables for that read (one snapshot, nothing pending)."""
    rows = random_events(random.Random(19), 100)
    store = DuckDBEventStore(":memory:")
    store.append(rows_to_table(rows[:250]))
    sql = "SELECT sum(events) FROM sessions"
    with store._reading(sql) as cur:
        store.append(rows_to_table(rows[250:]))  # commits between the read's fold and its query
        assert cur.execute(sql).fetchall() == [(250,)]
        assert cur.execute("SELECT count(*) FROM events").fetchall() == [(250,)]
    assert store.query(sql) == [(len(rows),)]
