"""The ClickHouse copy of the goals' rows (``goal_events``, filled by a materialized view): after batches, a schema
upgrade over existing events, a crash between insert and log position, and deletes, it holds exactly the rows of
``events`` whose type a goal other than a path goal matches; and the goal queries read the same answers from it as
from ``events``."""

from __future__ import annotations

import dataclasses
import json
import random
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest

from api_backend.domain.goals import GOAL_TYPES
from api_backend.query.dialect import CLICKHOUSE, Dialect
from api_backend.query.filters import Filter
from api_backend.query.goals import (
    GOAL_EVENT_TYPES,
    GoalSpec,
    build_goal_breakdown_query,
    build_goal_sessions_query,
    build_goals_query,
    goal_condition,
)
from api_backend.query.metric import build_metric_query
from api_backend.query.overview import build_overview_query
from api_backend.query.scope import Scope
from api_backend.query.sessions import build_session_page_query
from api_backend.query.sql import Params, Query
from api_backend.query.window import Window
from api_backend.store.clickhouse_schema import SCHEMA_TABLE
from api_backend.store.events import EVENT_COLUMNS, rows_to_table
from api_backend.store.open import open_event_store
from api_backend.store.writer import BatchWriter
from tests.store.test_error_rows_clickhouse import assert_deletes_take_the_copy
from tests.store.test_session_facts import random_events
from tests.support.clickhouse import UNSEALED, crash_before_position

COLUMNS = ", ".join([name for name, _ in EVENT_COLUMNS] + ["log_seq"])
IN_GOAL_TYPES = f"type IN ({', '.join(repr(t) for t in GOAL_EVENT_TYPES)})"
OTHER_TYPES = ("outbound", "button_click", "form_submit", "copy", "input_change")
GOALS = [
    GoalSpec(1, "path", {"pathPattern": "/blog/*"}),
    GoalSpec(2, "event", {"eventName": "signup"}),
    GoalSpec(3, "event", {"eventName": "purchase", "eventPropertyKey": "plan", "eventPropertyValue": "pro"}),
    GoalSpec(4, "outbound", {"valuePattern": "https://docs.*"}),
    GoalSpec(5, "button_click", {"valuePattern": "Buy*"}),
    GoalSpec(6, "form_submit", {"valuePattern": "newsletter"}),
    GoalSpec(7, "copy", {}),
]


def goal_rows(rng: random.Random, sessions: int) -> list[dict[str, Any]]:
    """``random_events`` with purchases among the custom events and a share of the pageviews turned into clicks,
    copies, form submits, outbound links and input changes (the last a type no goal matches)."""
    rows = random_events(rng, sessions)
    for row in rows:
        if row["type"] == "custom_event" and not row["event_name"] and rng.random() < 0.6:
            row["event_name"] = "purchase"
        elif row["type"] == "pageview" and rng.random() < 0.4:
            row["type"] = rng.choice(OTHER_TYPES)
            text = rng.choice(["Buy now", "Buy", "Sign in", ""])
            row["props"] = json.dumps(
                {
                    "url": rng.choice(["https://docs.example.org/a", "https://other.example/", ""]),
                    "text": text,
                    "formName": rng.choice(["newsletter", "contact", ""]),
                }
            )
    return rows


def stored(store: Any, table: str, where: str = "") -> list[tuple[Any, ...]]:
    return store.query(f"SELECT {COLUMNS} FROM {table} {where} ORDER BY {COLUMNS}")


def assert_copy_is_exact(store: Any) -> None:
    copy = stored(store, "goal_events")
    assert copy == stored(store, "events", f"WHERE {IN_GOAL_TYPES}")
    assert copy, "the events hold goal rows"


def test_chgoal001_every_goal_but_a_path_goal_matches_only_copied_rows(chdb_store):
    """Each goal type other than ``path``, matching all of its events, matches rows of one type, which is copied."""
    chdb_store.append(rows_to_table(goal_rows(random.Random(30), 200)))
    assert {t for (t,) in chdb_store.query("SELECT DISTINCT type FROM events")} > set(GOAL_EVENT_TYPES)
    for goal_type in GOAL_TYPES:
        if goal_type == "path":
            continue
        config = {"eventName": "signup"} if goal_type == "event" else {}
        p = Params()
        sql, params = CLICKHOUSE.bind(
            p.query(f"SELECT DISTINCT type FROM events WHERE {goal_condition(goal_type, config, CLICKHOUSE, p)}")
        )
        matched = chdb_store.query(sql, params)
        assert len(matched) == 1 and matched[0][0] in GOAL_EVENT_TYPES, (goal_type, matched)


def test_chgoal002_every_insert_copies_its_goal_rows(chdb_store):
    rows = goal_rows(random.Random(31), 300)
    for seq, at in enumerate(range(0, len(rows), 200), start=1):
        chdb_store.append(rows_to_table(rows[at : at + 200]), log_seq=seq)
    assert_copy_is_exact(chdb_store)
    expected = sum(r["type"] in GOAL_EVENT_TYPES for r in rows)
    assert chdb_store.query("SELECT count() FROM goal_events") == [(expected,)]
    copied_types = {t for (t,) in chdb_store.query("SELECT DISTINCT type FROM goal_events")}
    assert copied_types == set(GOAL_EVENT_TYPES)  # every type, and no input changes, pageviews or errors


def test_chgoal003_upgrading_a_database_fills_the_copy_from_its_events(chdb_settings):
    store, _ = open_event_store(chdb_settings)
    store.append(rows_to_table(goal_rows(random.Random(32), 150)))
    # What a database of schema version 5 looks like: no copy of the goals' rows.
    store.client.command("DROP VIEW goal_events_mv SYNC")
    store.client.command("DROP TABLE goal_events SYNC")
    store.client.command(f"DELETE FROM {SCHEMA_TABLE} WHERE version >= 6", settings={"mutations_sync": 2})
    store.close()

    upgraded, _ = open_event_store(chdb_settings)
    assert upgraded.schema_version == 11
    assert_copy_is_exact(upgraded)
    codec = "SELECT compression_codec FROM system.columns WHERE table = 'goal_events' AND name = 'timestamp'"
    assert upgraded.query(codec + " AND database = currentDatabase()") == [("CODEC(T64, LZ4)",)]
    more = [dict(row, session_id="new-" + row["session_id"]) for row in goal_rows(random.Random(33), 30)]
    upgraded.append(rows_to_table(more))  # and the view keeps it from then on
    assert_copy_is_exact(upgraded)
    upgraded.close()


def test_chgoal004_a_crash_between_insert_and_position_leaves_each_goal_row_once(
    chdb_settings, chdb_client, chdb_database, tmp_path
):
    rows = goal_rows(random.Random(34), 150)
    parts = [rows[:200], rows[200:400], rows[400:]]
    event_log = crash_before_position(chdb_settings, tmp_path / "log", parts)
    copied = chdb_client.query(f"SELECT count() FROM `{chdb_database}`.goal_events").result_rows
    assert copied == [(sum(r["type"] in GOAL_EVENT_TYPES for r in rows),)]

    store, _ = open_event_store(chdb_settings)  # recovery deletes the orphan rows from every table
    assert_copy_is_exact(store)
    assert store.query("SELECT count() FROM goal_events") == [(sum(r["type"] in GOAL_EVENT_TYPES for r in parts[0]),)]
    BatchWriter(store, log=event_log).close()  # the replay copies their records once
    assert_copy_is_exact(store)
    assert store.query("SELECT count() FROM goal_events") == [(sum(r["type"] in GOAL_EVENT_TYPES for r in rows),)]
    store.close()


def test_chgoal005_an_orphan_goal_row_alone_is_removed_too(chdb_settings):
    """A start that died after deleting the orphan events but before their goal rows finishes the job."""
    store, _ = open_event_store(chdb_settings)
    store.append(rows_to_table(goal_rows(random.Random(35), 40)), log_seq=3)
    orphan = rows_to_table([r for r in goal_rows(random.Random(36), 40) if r["type"] in GOAL_EVENT_TYPES])
    store.client.insert_arrow(
        "goal_events", orphan.append_column("log_seq", pa.array([9] * orphan.num_rows, pa.uint64()))
    )
    store.close()

    store, _ = open_event_store(chdb_settings)
    assert_copy_is_exact(store)
    store.close()


def test_chgoal006_deletes_take_the_goal_rows_with_them(chdb_store):
    chdb_store.append(rows_to_table(goal_rows(random.Random(37), 300)))
    assert_deletes_take_the_copy(chdb_store, "goal_events", assert_copy_is_exact)


FILTERS = [
    (),
    (Filter("device_type", "equals", ("mobile",)),),
    (Filter("country", "equals", ("DE", "FR")),),  # selects sessions on all their events
    (Filter("pathname", "starts_with", ("/blog",)),),  # an event-level filter
    (Filter("channel", "not_equals", ("Direct",)), Filter("browser", "equals", ("Chrome",))),
]


def forms(query: Query) -> dict[str, Query]:
    """The query as it reads whole sessions from the table, and as it groups the window's events."""
    assert query.narrowing is not None
    return {
        "table": query.narrowing.then([{"events": 10**9, "sessions": 0, "merged": 1.0, **UNSEALED}]),
        "events": query.narrowing.then([{"events": 1, "sessions": 10**9, "merged": 0.0, **UNSEALED}]),
    }


def goal_queries(scope: Scope, goal: GoalSpec, d: Dialect) -> dict[str, Query]:
    queries = {
        "list": build_goals_query(scope, GOALS, d),
        "sessions": build_goal_sessions_query(scope, goal, 20, 0, d),
        "by channel": build_goal_breakdown_query(scope, goal, "channel", d),
        "by pathname": build_goal_breakdown_query(scope, goal, "pathname", d),
    }
    return {f"{name}, {form}": q for name, query in queries.items() for form, q in forms(query).items()}


@pytest.mark.parametrize("seed", [38, 39])
def test_chgoal007_goal_queries_read_the_same_answers_from_the_copy(chdb_store, seed):
    rng = random.Random(seed)
    chdb_store.append(rows_to_table(goal_rows(rng, 600)))
    from_events = dataclasses.replace(CLICKHOUSE, goal_rows="events")
    converted = 0
    for case in range(10):
        start = datetime(2026, 3, 1) + timedelta(hours=rng.randrange(0, 24 * 20), minutes=rng.randrange(60))
        window = Window(start, start + timedelta(days=rng.randrange(1, 15)), rng.choice(["UTC", "Asia/Kolkata"]))
        scope = Scope((rng.choice([1, 2]),), window, FILTERS[case % len(FILTERS)])
        goal = GOALS[1 + case % (len(GOALS) - 1)]  # every goal but the path goal
        plain = goal_queries(scope, goal, from_events)
        read_copy = 0
        for name, query in goal_queries(scope, goal, CLICKHOUSE).items():
            assert "goal_events" not in plain[name].sql
            read_copy += "FROM goal_events" in query.sql
            answer = chdb_store.query_dicts(*CLICKHOUSE.bind(query))
            assert answer == chdb_store.query_dicts(*from_events.bind(plain[name])), (name, case, scope, goal)
        assert read_copy >= 4  # the table forms at least
        listed = chdb_store.query_dicts(*CLICKHOUSE.bind(goal_queries(scope, goal, CLICKHOUSE)["list, table"]))
        converted += sum(listed[0][f"g{i}"] for i in range(1, len(GOALS)))
    assert converted > 50  # the windows hold conversions of the goals read from the copy


def test_chgoal008_sessions_filtered_on_an_event_property_are_found_in_the_copy(chdb_store):
    """The whole sessions with (or without) a custom event of a property value are looked up among the copied rows,
    with the same answers as from ``events``."""
    rng = random.Random(40)
    chdb_store.append(rows_to_table(goal_rows(rng, 600)))
    from_events = dataclasses.replace(CLICKHOUSE, goal_rows="events")
    answered = 0
    for case in range(8):
        start = datetime(2026, 3, 1) + timedelta(hours=rng.randrange(0, 24 * 20))
        window = Window(start, start + timedelta(days=rng.randrange(2, 15)), rng.choice(["UTC", "Asia/Kolkata"]))
        kind = ("equals", "not_equals", "contains", "is_null")[case % 4]
        values: tuple[str, ...] = () if kind == "is_null" else ("pro",)
        scope = Scope((1,), window, (Filter("prop:plan", kind, values),))
        for build, args in (
            (build_overview_query, (scope,)),
            (build_metric_query, (scope, "channel", 20, 0)),
            (build_session_page_query, (scope, 25, 0)),
        ):
            query, plain = forms(build(*args, CLICKHOUSE))["table"], forms(build(*args, from_events))["table"]
            assert "FROM goal_events" in query.sql and "goal_events" not in plain.sql
            answer = chdb_store.query_dicts(*CLICKHOUSE.bind(query))
            assert answer == chdb_store.query_dicts(*from_events.bind(plain)), (case, scope)
            answered += bool(answer)
    assert answered == 24
