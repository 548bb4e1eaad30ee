"""Goal bits kept in the ``sessions`` table: the goals list read from them equals the event grouping on randomized
data, windows and filters, through goals registered, changed and dropped while events keep arriving in any order."""

from __future__ import annotations

import random
import threading
from datetime import datetime
from typing import Any

import pytest

from api_backend.query.dialect import DUCKDB
from api_backend.query.goals import (
    MASK_BITS,
    GoalSpec,
    build_goal_breakdown_events_query,
    build_goal_breakdown_stored_query,
    build_goal_sessions_events_query,
    build_goal_sessions_stored_query,
    build_goals_query,
    build_goals_stored_query,
    goal_definition,
)
from api_backend.query.paging import Page
from api_backend.query.scope import Scope
from api_backend.query.window import Window
from api_backend.store import duckdb as duckdb_module
from api_backend.store import goal_bits as goal_bits_module
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import rows_to_table
from api_backend.store.goal_bits import FILL_SLICE_EVENTS, build_bit_register, fill_slices, plan_bits
from tests.store.test_session_facts import START, append_shuffled, assert_same, random_events, random_scope, run

GOALS = [
    GoalSpec(1, "path", {"pathPattern": "/pricing"}),
    GoalSpec(2, "path", {"pathPattern": "/blog/*"}),
    GoalSpec(3, "path", {"pathPattern": "/blog**"}),
    GoalSpec(4, "event", {"eventName": "signup"}),
    GoalSpec(5, "event", {"eventName": "signup", "eventPropertyKey": "plan", "eventPropertyValue": "pro"}),
]
# What the goals become later: one edited (another pattern), one deleted, one added, one the same as another.
LATER_GOALS = [
    GoalSpec(1, "path", {"pathPattern": "/pricing"}),
    GoalSpec(2, "path", {"pathPattern": "/*/a"}),
    GoalSpec(4, "event", {"eventName": "signup"}),
    GoalSpec(5, "event", {"eventName": "signup", "eventPropertyKey": "plan", "eventPropertyValue": "pro"}),
    GoalSpec(6, "path", {"pathPattern": "/docs"}),
    GoalSpec(7, "path", {"pathPattern": "/docs"}),
]


def stored_counts(store: DuckDBEventStore, scope: Scope, goals: list[GoalSpec]) -> dict[str, Any]:
    bits = store.stored_goal_bits(scope.site_ids[0], goals)
    assert bits is not None
    query = build_goals_stored_query(scope, goals, bits, DUCKDB)
    assert "goal_mask" in query.sql and "FROM sessions" in query.sql
    (row,) = run(store, query)
    assert row.pop("stale_result") is False
    return row


def event_counts(store: DuckDBEventStore, scope: Scope, goals: list[GoalSpec]) -> dict[str, Any]:
    query = build_goals_query(scope, goals, DUCKDB)
    assert "goal_mask" not in query.sql
    (row,) = run(store, query)
    return row


@pytest.fixture(scope="module")
def registered() -> DuckDBEventStore:
    """Goals registered after part of the events, changed after more, and more events after that."""
    rng = random.Random(20261127)
    rows = random_events(rng, 1500)
    rng.shuffle(rows)
    store = DuckDBEventStore(":memory:")
    first, second = len(rows) // 3, 2 * len(rows) // 3
    with pytest.MonkeyPatch.context() as patch:  # fold often, so stored sessions are continued by later batches
        patch.setattr(duckdb_module, "FOLD_ROWS", 100)
        append_shuffled(store, rows[:first], rng)
        for site in (1, 2, 3):
            store.store_goal_bits(site, GOALS)
        append_shuffled(store, rows[first:second], rng)
        for site in (1, 2, 3):
            store.store_goal_bits(site, LATER_GOALS)
        append_shuffled(store, rows[second:], rng)
    return store


def test_goalbits001_changed_goals_take_free_bits_and_given_up_bits_are_reused(registered):
    bits = registered.stored_goal_bits(1, LATER_GOALS)
    # /blog/* gave up bit 1 and /blog** bit 2; /*/a took bit 1 and /docs bit 2 (both goals share it).
    assert bits == [0, 1, 3, 4, 2, 2]
    assert registered.stored_goal_bits(1, GOALS) is None  # /blog/* has no bit any more
    assert registered.query("SELECT count(*) FROM goal_bits") == [(15,)]


@pytest.mark.parametrize("seed", range(40))
def test_goalbits002_the_goals_list_from_stored_bits_equals_the_event_grouping(registered, seed):
    rng = random.Random(6000 + seed)
    scope = random_scope(rng, seed)
    scope = Scope(scope.site_ids[:1], scope.window, scope.filters)
    goals = rng.sample(LATER_GOALS, rng.randrange(1, len(LATER_GOALS) + 1))
    assert stored_counts(registered, scope, goals) == event_counts(registered, scope, goals), (scope, goals)


def test_goalbits003_a_read_whose_bits_changed_meanwhile_says_its_result_is_stale():
    store = DuckDBEventStore(":memory:")
    store.append(rows_to_table(random_events(random.Random(3), 200)))
    store.store_goal_bits(1, GOALS)
    scope = Scope((1,), Window(None, None, "UTC"))
    bits = store.stored_goal_bits(1, GOALS)
    assert bits is not None
    query = build_goals_stored_query(scope, GOALS, bits, DUCKDB)
    assert run(store, query)[0]["stale_result"] is False
    store.store_goal_bits(1, LATER_GOALS)  # /blog/* gives up its bit, and /*/a takes it
    assert run(store, query)[0]["stale_result"] is True
    store.close()


def test_goalbits004_a_site_with_more_goals_than_bits_keeps_the_first_ones():
    store = DuckDBEventStore(":memory:")
    rows = random_events(random.Random(4), 200)
    store.append(rows_to_table(rows))
    goals = [GoalSpec(n, "path", {"pathPattern": f"/page-{n}"}) for n in range(MASK_BITS + 3)]
    goals[5] = GoalSpec(5, "path", {"pathPattern": "/blog/*"})
    store.store_goal_bits(1, goals)
    assert store.stored_goal_bits(1, goals[:MASK_BITS]) == list(range(MASK_BITS))
    assert store.stored_goal_bits(1, goals[MASK_BITS - 1 : MASK_BITS + 1]) is None
    scope = Scope((1,), Window(None, None, "UTC"))
    assert stored_counts(store, scope, goals[:10]) == event_counts(store, scope, goals[:10])
    store.close()


def test_goalbits005_bits_outlive_a_restart_and_a_table_without_masks_forgets_them(tmp_path):
    rng = random.Random(5)
    rows = random_events(rng, 400)
    path = tmp_path / "events.duckdb"
    store = DuckDBEventStore(path)
    store.append(rows_to_table(rows[:600]))
    store.store_goal_bits(1, GOALS)
    store.close()

    reopened = DuckDBEventStore(path)
    assert reopened.stored_goal_bits(1, GOALS) == [0, 1, 2, 3, 4]
    reopened.append(rows_to_table(rows[600:]))  # folded with the registered goals' bits
    scope = Scope((1,), Window(START, None, "UTC", mode="datetime"))
    assert stored_counts(reopened, scope, GOALS) == event_counts(reopened, scope, GOALS)
    # A version before the masks: the column is missing (and a stale list of bits must not be believed).
    reopened._con.execute("ALTER TABLE sessions DROP COLUMN goal_mask")
    reopened.close()

    upgraded = DuckDBEventStore(path)
    assert upgraded.stored_goal_bits(1, GOALS) is None
    assert upgraded.query("SELECT count(*) FROM goal_bits") == [(0,)]
    assert upgraded.query("SELECT count(*) FROM sessions WHERE goal_mask <> 0") == [(0,)]
    upgraded.store_goal_bits(1, GOALS)
    assert stored_counts(upgraded, scope, GOALS) == event_counts(upgraded, scope, GOALS)
    upgraded.close()


def test_goalbits006_deleting_a_site_forgets_its_bits_and_folds_stop_setting_them():
    store = DuckDBEventStore(":memory:")
    rows = random_events(random.Random(6), 300)
    store.append(rows_to_table(rows))
    store.store_goal_bits(1, GOALS)
    store.store_goal_bits(2, GOALS)
    store.delete_site(1)
    assert store.stored_goal_bits(1, GOALS) is None
    assert store.stored_goal_bits(2, GOALS) == [0, 1, 2, 3, 4]
    store.append(rows_to_table([r for r in rows if r["site_id"] == 1]))  # a new site given the id
    assert store.query("SELECT count(*) FROM sessions WHERE site_id = 1 AND goal_mask <> 0") == [(0,)]
    store.close()


def test_goalbits007_plans_keep_registered_bits_and_take_the_lowest_free_ones():
    pricing, docs, blog = (GoalSpec(n, "path", {"pathPattern": p}) for n, p in enumerate(["/pricing", "/docs", "/b"]))
    first = plan_bits([], [pricing, docs, pricing])
    assert first.dropped == () and [bit for bit, _ in first.added] == [0, 1] and first.unfilled == ()
    registered = [(bit, text, True) for bit, text in first.added]
    again = plan_bits(registered, [docs, pricing])
    assert again.dropped == () and again.added == () and again.unfilled == ()
    changed = plan_bits(registered, [docs, blog])
    assert changed.dropped == (0,) and [bit for bit, _ in changed.added] == [0]
    cut_short = plan_bits([(0, first.added[0][1], False), (1, first.added[1][1], True)], [pricing, docs])
    assert cut_short.added == () and cut_short.unfilled == (first.added[0],)


def test_goalbits008_slices_cover_every_time_and_split_large_sites():
    first, last = datetime(2026, 1, 1), datetime(2026, 1, 11)
    assert fill_slices(10, first, last) == [(None, None)]
    assert fill_slices(0, None, None) == [(None, None)]
    slices = fill_slices(3 * FILL_SLICE_EVENTS - 1, first, last)
    assert len(slices) == 3 and slices[0][0] is None and slices[-1][1] is None
    assert [b for _, b in slices[:-1]] == [a for a, _ in slices[1:]]


def test_goalbits009_a_fill_cut_short_is_not_read_and_the_next_registration_finishes_it(tmp_path, monkeypatch):
    monkeypatch.setattr(goal_bits_module, "FILL_SLICE_EVENTS", 50)  # many slices
    rows = random_events(random.Random(9), 300)
    path = tmp_path / "events.duckdb"
    store = DuckDBEventStore(path)
    store.append(rows_to_table(rows[:500]))
    store.store_goal_bits(1, GOALS[:2])
    # Registered but not filled, as a stop between the registration and the fill leaves it.
    text = goal_definition(GOALS[2])
    store._in_one_transaction(build_bit_register(1, 2, text))
    store.close()

    reopened = DuckDBEventStore(path)
    assert reopened.stored_goal_bits(1, GOALS[:2]) == [0, 1]
    assert reopened.stored_goal_bits(1, GOALS[:3]) is None  # not ready: not read
    reopened.append(rows_to_table(rows[500:]))  # the folds set it already
    reopened.store_goal_bits(1, GOALS[:3])
    assert reopened.stored_goal_bits(1, GOALS[:3]) == [0, 1, 2]
    scope = Scope((1,), Window(None, None, "UTC"))
    assert stored_counts(reopened, scope, GOALS[:3]) == event_counts(reopened, scope, GOALS[:3])
    reopened.close()


def test_goalbits010_events_appended_while_bits_are_filled_are_counted_once_the_bits_are_ready(monkeypatch):
    monkeypatch.setattr(goal_bits_module, "FILL_SLICE_EVENTS", 40)  # a transaction per few events: appends interleave
    monkeypatch.setattr(duckdb_module, "FOLD_ROWS", 30)
    rng = random.Random(10)
    rows = random_events(rng, 600)
    rng.shuffle(rows)
    store = DuckDBEventStore(":memory:")
    store.append(rows_to_table(rows[:1000]))

    def fill() -> None:
        for site in (1, 2, 3):
            store.store_goal_bits(site, LATER_GOALS)

    filling = threading.Thread(target=fill)
    filling.start()
    at = 1000
    while at < len(rows):  # appended in small batches while the slices are filled, some after
        size = rng.randrange(1, 60)
        store.append(rows_to_table(rows[at : at + size]))
        at += size
    filling.join()
    for site in (1, 2, 3):
        for seed in range(5):
            scope = random_scope(random.Random(7000 + seed), seed)
            scope = Scope((site,), scope.window, scope.filters)
            assert stored_counts(store, scope, LATER_GOALS) == event_counts(store, scope, LATER_GOALS), scope
    store.close()


def test_goalbits011_registering_clears_a_bit_a_slice_missed():
    """A late event may move a session's start into a slice already cleared: the registration clears what is left."""
    store = DuckDBEventStore(":memory:")
    store.append(rows_to_table(random_events(random.Random(11), 300)))
    store.store_goal_bits(1, GOALS[:1])  # /pricing on bit 0
    store.store_goal_bits(1, GOALS[1:2])  # /pricing given up (its bit stays set), /blog/* on bit 0
    assert store.stored_goal_bits(1, GOALS[1:2]) == [0]
    set_before = "SELECT count(*) FROM sessions WHERE site_id = 1 AND goal_mask & 1 <> 0"
    assert store.query(set_before)[0][0] > 0  # (a read of the table folds the pending events, setting the bit)
    store.store_goal_bits(1, [])  # /blog/* given up too: its bit stays set
    assert store.query(set_before)[0][0] > 0
    store._in_one_transaction(build_bit_register(1, 0, goal_definition(GOALS[2])))  # no slice cleared it
    assert store.query(set_before) == [(0,)]
    store.close()


# Parameters a goal breakdown reads from the stored sessions with their goal bits: session-level ones and the path.
BREAKDOWN_PARAMETERS = (
    "channel",
    "country",
    "browser",
    "entry_page",
    "exit_page",
    "referrer",
    "utm_source",
    "pathname",
)


def stored_rows(store: DuckDBEventStore, query_for_bit: Any, goal: GoalSpec, site: int) -> list[dict[str, Any]]:
    bits = store.stored_goal_bits(site, [goal])
    assert bits is not None
    query = query_for_bit(bits[0])
    assert "goal_mask" in query.sql
    rows = run(store, query)
    assert rows and all(row.pop("stale_result") is False for row in rows)
    return rows


@pytest.mark.parametrize("seed", range(30))
def test_goalbits012_a_goal_breakdown_and_sessions_from_stored_bits_equal_the_event_grouping(registered, seed):
    rng = random.Random(7000 + seed)
    scope = random_scope(rng, seed)
    scope = Scope(scope.site_ids[:1], scope.window, scope.filters)
    site, goal = scope.site_ids[0], rng.choice(LATER_GOALS)
    parameter = rng.choice(BREAKDOWN_PARAMETERS)
    page = Page(rng.randrange(1, 3), rng.choice((2, 5, 1000)))
    stored = stored_rows(
        registered, lambda bit: build_goal_breakdown_stored_query(scope, goal, parameter, bit, DUCKDB, page), goal, site
    )
    events = run(registered, build_goal_breakdown_events_query(scope, goal, parameter, DUCKDB, page))
    key = lambda row: (row["value"] is None, row["value"] or "")  # noqa: E731
    assert_same(sorted(stored, key=key), sorted(events, key=key), (scope, goal, parameter, page))

    limit, offset = rng.choice((3, 25)), rng.choice((0, 3, 40))
    stored = stored_rows(
        registered, lambda bit: build_goal_sessions_stored_query(scope, goal, bit, limit, offset, DUCKDB), goal, site
    )
    events = run(registered, build_goal_sessions_events_query(scope, goal, limit, offset, DUCKDB))
    assert stored == events, (scope, goal, limit, offset)


def test_goalbits013_a_breakdown_or_sessions_read_whose_bit_changed_meanwhile_says_its_result_is_stale():
    store = DuckDBEventStore(":memory:")
    store.append(rows_to_table(random_events(random.Random(13), 200)))
    store.store_goal_bits(1, GOALS)
    scope = Scope((1,), Window(None, None, "UTC"))
    blog = GOALS[1]
    [bit] = store.stored_goal_bits(1, [blog]) or []
    queries = [
        build_goal_breakdown_stored_query(scope, blog, "channel", bit, DUCKDB),
        build_goal_breakdown_stored_query(scope, blog, "pathname", bit, DUCKDB),
        build_goal_sessions_stored_query(scope, blog, bit, 25, 0, DUCKDB),
    ]
    for query in queries:
        rows = run(store, query)
        assert rows and all(row["stale_result"] is False for row in rows)
    store.store_goal_bits(1, LATER_GOALS)  # /blog/* gives up its bit, and /*/a takes it
    for query in queries:
        rows = run(store, query)
        assert rows and all(row["stale_result"] is True for row in rows)
    with pytest.raises(ValueError):  # a parameter the sessions table holds no value of has no stored form
        build_goal_breakdown_stored_query(scope, blog, "page_title", bit, DUCKDB)
    store.close()
