"""Goal bits in the ClickHouse store's sealed rows (schema version 9): a seal writes in each session's row the bits
of its site's goals its events complete; the goals list counts whole sealed sessions per mask and groups only the
open and edge sessions from their events, with the numbers of the event grouping and of DuckDB on random windows
and filters. Goals changed later are sealed again into a new generation; a read bound to a generation written
with other bits answers from the events."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from api_backend.query import facts as facts_module
from api_backend.query.dialect import CLICKHOUSE, DUCKDB
from api_backend.query.filters import SESSION_PARAMETERS, parse_filters
from api_backend.query.goals import (
    GoalSpec,
    build_goal_breakdown_events_query,
    build_goal_breakdown_query,
    build_goal_breakdown_stored_query,
    build_goal_sessions_events_query,
    build_goal_sessions_query,
    build_goal_sessions_stored_query,
    build_goals_events_query,
    build_goals_query,
    build_goals_stored_query,
)
from api_backend.query.scope import Scope
from api_backend.query.sql import Query
from api_backend.read.reader import EventReader
from api_backend.settings import load_settings
from api_backend.store import clickhouse as clickhouse_module
from api_backend.store.clickhouse_schema import MIGRATIONS, SCHEMA_TABLE
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import rows_to_table
from api_backend.store.open import open_event_store
from tests.store.test_goal_bits import GOALS, LATER_GOALS
from tests.store.test_sealed_sessions_clickhouse import CUTOFF, LATER, _narrowed, _sealed_rows
from tests.store.test_session_facts import FILTERS, START, assert_same, random_events, random_window
from tests.support import wait_until
from tests.support.clickhouse import SECRET, chdb_url, drop_database, fresh_database

SECOND_CUTOFF = START + timedelta(days=30)


@pytest.fixture(scope="module")
def stores(chdb_client: Any, chdb_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """1200 random sessions in a ClickHouse store and in DuckDB, the goals asked for on sites 1 and 2 before the
    first seal (at ``CUTOFF``). A later log record brings the rest of the events and an event of a few sessions
    sealed already; a second seal (at ``SECOND_CUTOFF``) writes the sessions left open. So reads meet sessions sealed
    by either seal, sessions still open, and sealed ones open again."""
    name = fresh_database(chdb_client)
    data_dir = tmp_path_factory.mktemp("sealed-goals") / "data"
    settings = load_settings({}, data_dir=str(data_dir), secret_key=SECRET, events_url=chdb_url(chdb_path, name))
    store, _ = open_event_store(settings)
    rng = random.Random(20261206)
    rows = random_events(rng, 1200)
    early = [r for r in rows if r["timestamp"] < LATER]
    store.append(rows_to_table(early), log_seq=1)
    for site in (1, 2):
        store.store_goal_bits(site, GOALS)
    assert store.current_seal() is None  # asked for: the first seal writes them
    assert store.seal_sessions(CUTOFF)["goal_sites"] == 2
    sealed_ids = sorted({r["session_id"] for r in early if r["site_id"] == 1 and r["timestamp"] < CUTOFF})
    reopened = [
        {
            **next(r for r in early if r["session_id"] == sid),
            "timestamp": LATER + timedelta(hours=n),
            "type": "pageview",
            "pathname": "/pricing",
        }
        for n, sid in enumerate(rng.sample(sealed_ids, 8))
    ]
    rows += reopened
    store.append(rows_to_table([r for r in rows if r["timestamp"] >= LATER]), log_seq=2)
    second = store.seal_sessions(SECOND_CUTOFF)
    assert not second["full"] and second["sessions"] > 0 and second["goal_sites"] == 2
    duck = DuckDBEventStore(":memory:")
    duck.append(rows_to_table(rows))
    yield store, duck, rows
    store.close()
    drop_database(chdb_client, name)


def test_sealgoal001_each_sealed_row_holds_the_bits_of_the_goals_its_events_complete(stores):
    """The masks equal those DuckDB's store keeps for the same goals (``store/goal_bits.py``), session by session:
    sessions of both seals, and those sealed again after a late event."""
    store, duck, _ = stores
    bits = store.stored_goal_bits(1, GOALS)
    assert bits is not None and sorted(bits) == list(range(len(GOALS)))
    assert store.stored_goal_bits(2, GOALS) == bits
    assert store.stored_goal_bits(3, GOALS) is None  # site 3 asked for none
    assert store.stored_goal_bits(1, [*GOALS, GoalSpec(9, "path", {"pathPattern": "/docs"})]) is None
    for site in (1, 2):
        duck.store_goal_bits(site, GOALS)
        assert duck.stored_goal_bits(site, GOALS) == bits
    want = {
        (site, session): mask
        for site, session, mask in duck.query("SELECT site_id, session_id, goal_mask FROM sessions")
    }
    sealed = store.query("SELECT site_id, session_id, goal_mask, seal FROM sealed_sessions")
    assert {seal for *_, seal in sealed} == {1, 2}  # rows of both seals
    for site, session, mask, _ in sealed:
        assert mask == (want[(site, session)] if site in (1, 2) else 0), (site, session)
    assert sum(1 for _, _, mask, _ in sealed if mask) > 100


@pytest.mark.parametrize("seed", range(24))
def test_sealgoal002_the_goals_list_from_the_masks_equals_the_events_and_duckdb(stores, seed, monkeypatch):
    """The goals list of any of the goals, on random windows and filters, from the masks: the event grouping's numbers,
    which are DuckDB's."""
    monkeypatch.setattr(facts_module, "SEALED_MIN_EVENTS", 0)  # these few events are read from the seal too
    monkeypatch.setattr(facts_module, "SEALED_OPEN_SHARE", float("inf"))  # however many are open
    store, duck, _ = stores
    rng = random.Random(7700 + seed)
    chosen = FILTERS[seed % len(FILTERS)]
    scope = Scope((rng.choice((1, 2)),), random_window(rng), parse_filters(json.dumps(chosen) if chosen else None))
    goals = rng.sample(GOALS, rng.randrange(1, len(GOALS) + 1))
    bits = store.stored_goal_bits(scope.site_ids[0], goals)
    assert bits is not None
    want = store.query_dicts(*CLICKHOUSE.bind(build_goals_events_query(scope, goals, CLICKHOUSE)))
    assert_same(want, duck.query_dicts(*DUCKDB.bind(build_goals_query(scope, goals, DUCKDB))), scope)
    got, made = _narrowed(store, build_goals_stored_query(scope, goals, bits, CLICKHOUSE))
    assert "goal_mask" in made.sql, scope
    assert got[0].pop("stale_result") == 0
    assert_same(got, want, scope)


def test_sealgoal003_goals_changed_later_are_sealed_again_and_old_bits_read_stale(chdb_settings, monkeypatch):
    """A site asking for a definition its generation lacks gets a full seal into a new generation, where the
    definitions it kept keep their bits; a read built with the bits before, bound to the new generation, is flagged
    stale, and the reader answers it from the events."""
    monkeypatch.setattr(facts_module, "SEALED_MIN_EVENTS", 0)
    monkeypatch.setattr(facts_module, "SEALED_OPEN_SHARE", float("inf"))
    store, _ = open_event_store(chdb_settings)
    try:
        rows = random_events(random.Random(41), 500)
        store.append(rows_to_table(rows), log_seq=1)
        store.store_goal_bits(1, GOALS)
        store.seal_sessions(START + timedelta(days=40))
        before = store.stored_goal_bits(1, GOALS)
        assert before == [0, 1, 2, 3, 4]
        store.store_goal_bits(1, GOALS)  # nothing new: no seal
        seal = store.current_seal()
        assert seal is not None and (seal.seal, seal.generation) == (1, 1)
        store.store_goal_bits(1, LATER_GOALS)
        seal = store.current_seal()
        assert seal is not None and (seal.seal, seal.generation) == (2, 2)
        later = store.stored_goal_bits(1, LATER_GOALS)
        assert later is not None and later[0] == 0 and later[2:4] == [3, 4]  # kept definitions keep their bits
        assert store.stored_goal_bits(1, GOALS) is None  # /blog/* and /blog** gave their bits up
        scope = Scope((1,), random_window(random.Random(3)), ())
        stale, made = _narrowed(store, build_goals_stored_query(scope, GOALS, before, CLICKHOUSE))
        assert "goal_mask" in made.sql and stale[0]["stale_result"] == 1
        # So is a goal's page of sessions and its breakdown read with the bit /blog/* had.
        for query in (
            build_goal_sessions_stored_query(scope, GOALS[1], before[1], 25, 0, CLICKHOUSE),
            build_goal_breakdown_stored_query(scope, GOALS[1], "channel", before[1], CLICKHOUSE),
        ):
            rows, made = _narrowed(store, query)
            assert "goal_mask" in made.sql and {row["stale_result"] for row in rows} == {1}
        want = store.query_dicts(*CLICKHOUSE.bind(build_goals_events_query(scope, LATER_GOALS, CLICKHOUSE)))
        got, _ = _narrowed(store, build_goals_stored_query(scope, LATER_GOALS, later, CLICKHOUSE))
        assert got[0].pop("stale_result") == 0
        assert_same(got, want, scope)
        # The generation before stays until a seal more, as reads may hold it; its bits go with it.
        assert store.query("SELECT DISTINCT generation FROM sealed_goal_bits ORDER BY 1") == [(1,), (2,)]
        store.seal_sessions(START + timedelta(days=40))
        assert store.query("SELECT DISTINCT generation FROM sealed_goal_bits") == [(2,)]
        assert store.query("SELECT DISTINCT generation FROM sealed_sessions") == [(2,)]
    finally:
        store.close()


def test_sealgoal004_the_reader_asks_for_the_bits_and_then_counts_from_them(chdb_settings, monkeypatch):
    """A goals list on a sealed store whose generation lacks the site's goals answers from the events and asks the
    store in the background to seal them; once it has, the list reads the masks, with the same numbers."""
    monkeypatch.setattr(facts_module, "SEALED_MIN_EVENTS", 0)
    monkeypatch.setattr(facts_module, "SEALED_OPEN_SHARE", float("inf"))
    store, _ = open_event_store(chdb_settings)
    try:
        store.append(rows_to_table(random_events(random.Random(42), 400)), log_seq=1)
        store.seal_sessions(START + timedelta(days=40))
        reader = EventReader(store)
        scope = Scope((1,), random_window(random.Random(5)), ())
        sent: list[str] = []
        run = reader._run

        def watched(query: Query) -> list[dict[str, Any]]:
            sent.append(query.sql if query.narrowing is None else query.narrowing.then(run(query.narrowing.first)).sql)
            return run(query)

        monkeypatch.setattr(reader, "_run", watched)
        want = store.query_dicts(*CLICKHOUSE.bind(build_goals_events_query(scope, GOALS, CLICKHOUSE)))[0]
        assert dict(reader.goals_counts(scope, GOALS, lambda: GOALS)) == want
        assert not any("goal_mask" in sql for sql in sent)
        wait_until(lambda: not reader.storing_goal_bits(), message="the bits were not stored")
        assert store.stored_goal_bits(1, GOALS) is not None
        reader.forget()  # the answer before is cached
        assert dict(reader.goals_counts(scope, GOALS, lambda: GOALS)) == want
        assert "goal_mask" in sent[-1]
    finally:
        store.close()


def test_sealgoal005_a_store_at_version_8_is_upgraded_and_its_seal_written_again_for_goals(chdb_settings):
    """Rows sealed before version 9 hold no bits: their generation has none recorded, so the first request seals
    again with them."""
    store, _ = open_event_store(chdb_settings)
    store.append(rows_to_table(random_events(random.Random(43), 200)), log_seq=1)
    store.seal_sessions(START + timedelta(days=40))
    # What a database of schema version 8 looks like, sealed.
    for statement in (
        "ALTER TABLE sealed_sessions DROP COLUMN goal_mask",
        "DROP TABLE goal_definitions",
        "DROP TABLE sealed_goal_bits",
    ):
        store.client.command(statement)
    store.client.command(f"DELETE FROM {SCHEMA_TABLE} WHERE version >= 9", settings={"mutations_sync": 2})
    store.close()
    upgraded, _ = open_event_store(chdb_settings)
    try:
        assert upgraded.schema_version == len(MIGRATIONS) == 11
        assert upgraded.query("SELECT max(goal_mask) FROM sealed_sessions") == [(0,)]
        assert upgraded.stored_goal_bits(1, GOALS) is None
        upgraded.store_goal_bits(1, GOALS)
        assert upgraded.stored_goal_bits(1, GOALS) == [0, 1, 2, 3, 4]
        seal = upgraded.current_seal()
        assert seal is not None and seal.generation == 2
        (masked,) = upgraded.query(
            "SELECT countIf(goal_mask != 0) FROM sealed_sessions WHERE site_id = 1 AND generation = 2"
        )[0]
        assert masked > 0
    finally:
        upgraded.close()


def test_sealgoal006_deleting_a_site_deletes_its_definitions(chdb_settings):
    store, _ = open_event_store(chdb_settings)
    try:
        store.append(rows_to_table(random_events(random.Random(44), 100)), log_seq=1)
        store.store_goal_bits(1, GOALS)
        store.seal_sessions(START + timedelta(days=40))
        assert store.stored_goal_bits(1, GOALS) is not None
        store.delete_site(1)
        assert store.query("SELECT count() FROM goal_definitions WHERE site_id = 1") == [(0,)]
        assert store.stored_goal_bits(1, GOALS) is None
    finally:
        store.close()


def test_sealgoal007_a_full_seal_in_slices_writes_the_same_masks(chdb_settings, monkeypatch):
    """Beyond ``SEAL_SLICE_EVENTS`` events a full seal writes its rows in slices of the sessions: every session is in
    one slice, with the mask DuckDB's store keeps for it."""
    monkeypatch.setattr(clickhouse_module, "SEAL_SLICE_EVENTS", 300)
    store, _ = open_event_store(chdb_settings)
    try:
        rows = random_events(random.Random(45), 400)
        store.append(rows_to_table(rows), log_seq=1)
        store.store_goal_bits(1, GOALS)
        sealed = store.seal_sessions(START + timedelta(days=40))
        assert sealed["sessions"] == 400 and len(rows) > 3 * 300  # four slices or more
        duck = DuckDBEventStore(":memory:")
        duck.append(rows_to_table(rows))
        duck.store_goal_bits(1, GOALS)
        want = sorted(duck.query("SELECT site_id, session_id, goal_mask FROM sessions WHERE site_id = 1"))
        got = sorted(store.query("SELECT site_id, session_id, goal_mask FROM sealed_sessions WHERE site_id = 1"))
        assert got == want and any(mask for *_, mask in got)
        assert store.query("SELECT max(goal_mask) FROM sealed_sessions WHERE site_id != 1") == [(0,)]
    finally:
        store.close()


@pytest.mark.parametrize("seed", range(24))
def test_sealgoal008_a_goals_sessions_and_breakdowns_from_the_masks_equal_the_events_and_duckdb(
    stores, seed, monkeypatch
):
    """A goal's sessions and its breakdowns by a session-level parameter and by the path take the whole sealed
    sessions' conversions from their bit, and test the whole sessions the seal left open as without bits: on random
    windows and filters each equals the event grouping, which equals DuckDB's."""
    monkeypatch.setattr(facts_module, "SEALED_MIN_EVENTS", 0)
    monkeypatch.setattr(facts_module, "SEALED_OPEN_SHARE", float("inf"))
    store, duck, _ = stores
    rng = random.Random(8800 + seed)
    chosen = FILTERS[seed % len(FILTERS)]
    scope = Scope((rng.choice((1, 2)),), random_window(rng), parse_filters(json.dumps(chosen) if chosen else None))
    goal = GOALS[seed % len(GOALS)]
    (bit,) = store.stored_goal_bits(scope.site_ids[0], [goal]) or [None]
    assert bit is not None
    parameter = sorted(SESSION_PARAMETERS)[seed % len(SESSION_PARAMETERS)]
    reads = [
        (build_goal_sessions_stored_query, build_goal_sessions_events_query, build_goal_sessions_query, (25, 0)),
        (build_goal_sessions_stored_query, build_goal_sessions_events_query, build_goal_sessions_query, (10, 20)),
    ]
    for name in (parameter, "pathname"):
        reads.append(
            (
                lambda s, g, b, *args: build_goal_breakdown_stored_query(s, g, args[0], b, args[1]),
                lambda s, g, *args: build_goal_breakdown_events_query(s, g, args[0], args[1]),
                lambda s, g, *args: build_goal_breakdown_query(s, g, args[0], args[1]),
                (name,),
            )
        )
    for stored_builder, events_builder, builder, args in reads:
        context = (args, goal, scope)
        want = store.query_dicts(*CLICKHOUSE.bind(events_builder(scope, goal, *args, CLICKHOUSE)))
        assert_same(duck.query_dicts(*DUCKDB.bind(builder(scope, goal, *args, DUCKDB))), want, context)
        got, made = _narrowed(store, stored_builder(scope, goal, bit, *args, CLICKHOUSE))
        assert "goal_mask" in made.sql, context
        assert {row.pop("stale_result") for row in got} == {0}, context
        assert_same(got, want, context)


def test_sealgoal009_a_seal_under_a_memory_limit_spills_its_masks_join_past_its_share(
    chdb_settings, chdb_client, chdb_path, monkeypatch
):
    """Under a memory limit a seal's statements are bounded by it (``seal_settings``), and a full seal whose masks'
    join would exceed its share of the limit joins them in a grace hash join of several buckets: its rows and masks
    are those of the seal that joins them in memory, and its masks DuckDB's. Either way the join is built from the
    masks, never from the sessions."""
    rows = random_events(random.Random(46), 400)
    cutoff = START + timedelta(days=40)
    used: list[tuple[bool, dict[str, Any]]] = []
    sealed: dict[bool, tuple[list[Any], list[Any]]] = {}
    for spill in (False, True):
        if spill:
            # 400 sessions at 10 MB each against the 0.5 GB share of the embedded engine's 4GB: eight buckets.
            monkeypatch.setattr(clickhouse_module, "SEAL_JOIN_BYTES_PER_SESSION", 10_000_000)
        name = fresh_database(chdb_client)
        store, _ = open_event_store(dataclasses.replace(chdb_settings, events_url=chdb_url(chdb_path, name)))
        try:
            command = store.client.command

            def recording(sql: str, *args: Any, spill: bool = spill, command: Any = command, **kwargs: Any) -> Any:
                if sql.startswith("INSERT INTO sealed_sessions"):
                    used.append((spill, kwargs.get("settings") or {}))
                return command(sql, *args, **kwargs)

            monkeypatch.setattr(store.client, "command", recording)
            store.append(rows_to_table(rows), log_seq=1)
            store.store_goal_bits(1, GOALS)
            assert store.seal_sessions(cutoff)["sessions"] == 400
            masks = sorted(store.query("SELECT site_id, session_id, goal_mask FROM sealed_sessions"))
            sealed[spill] = (_sealed_rows(store), masks)
        finally:
            store.close()
            drop_database(chdb_client, name)
    (in_memory,) = [settings for spill, settings in used if not spill]
    (spilled,) = [settings for spill, settings in used if spill]
    assert "join_algorithm" not in in_memory and in_memory["max_memory_usage"] > 0
    assert spilled["join_algorithm"] == "grace_hash" and spilled["grace_hash_join_initial_buckets"] == 8
    # Both build the join from the masks, whatever the engine estimates of the two sides.
    assert in_memory[clickhouse_module.JOIN_SWAP_SETTING] == spilled[clickhouse_module.JOIN_SWAP_SETTING] == "false"
    assert sealed[True] == sealed[False] and len(sealed[True][0]) == 400
    duck = DuckDBEventStore(":memory:")
    duck.append(rows_to_table(rows))
    duck.store_goal_bits(1, GOALS)
    want = sorted(duck.query("SELECT site_id, session_id, goal_mask FROM sessions WHERE site_id = 1"))
    assert [row for row in sealed[True][1] if row[0] == 1] == want and any(mask for *_, mask in want)


def test_sealgoal010_a_seals_settings_follow_its_memory_limit_and_its_sessions():
    """No limit: the engine's own settings. Under one, an eighth of it for each grouping and join; the join in memory
    while its sessions fit that share, else a grace hash join in the fewest buckets (a power of two, at most 64)
    that bring each under it."""
    assert clickhouse_module.seal_settings(None, 10**9) == {}
    limit = 8 * 10**9
    small = clickhouse_module.seal_settings(limit, 10**9 // clickhouse_module.SEAL_JOIN_BYTES_PER_SESSION)
    assert small["max_memory_usage"] == limit and small["max_bytes_before_external_group_by"] == 10**9
    assert "join_algorithm" not in small
    for sessions, buckets in ((10**7, 2), (25_855_310, 4), (10**8, 16), (10**12, 64)):
        settings = clickhouse_module.seal_settings(limit, sessions)
        assert (settings["join_algorithm"], settings["grace_hash_join_initial_buckets"]) == ("grace_hash", buckets)
