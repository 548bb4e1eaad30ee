"""``sitelens clickhouse-schema``, ``migrate-events``, ``clickhouse-merge-sessions`` and ``clickhouse-seal-sessions``
against the embedded ClickHouse engine."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from typing import Any

import duckdb
import pytest

from api_backend.cli import main
from api_backend.clickhouse_admin import migrate_events
from api_backend.query import facts as facts_module
from api_backend.query.dialect import CLICKHOUSE
from api_backend.query.facts import FACTS_MIN_EVENTS
from api_backend.query.overview import build_overview_query
from api_backend.query.scope import Scope
from api_backend.query.sql import Query
from api_backend.query.window import Window
from api_backend.services import open_services
from api_backend.settings import load_settings
from api_backend.store.clickhouse import ClickHouseEventStore
from api_backend.store.clickhouse_schema import SCHEMA_TABLE, cluster_upgrade_sql
from api_backend.store.events import rows_to_table
from api_backend.store.open import open_event_store, parse_events_url
from tests.store.test_session_facts import random_events
from tests.store.test_session_facts_clickhouse import duckdb_facts, finished
from tests.support import make_account, make_site
from tests.support.clickhouse import UNSEALED, chdb_url, drop_database, fresh_database

DAY0 = datetime(2026, 3, 1, 8, 0)


def _statements(capsys) -> list[str]:
    out = capsys.readouterr().out
    return [part.strip() for part in out.split(";\n") if part.strip()]


def test_chadmin001_single_node_schema_runs_and_the_store_adopts_it(capsys, chdb_client, chdb_database):
    assert main(["clickhouse-schema", "--database", chdb_database]) == 0
    for statement in _statements(capsys):
        chdb_client.command(statement)
    store = ClickHouseEventStore(chdb_client, chdb_database)
    assert store.schema_version == 11  # and migrated on open to the newest version
    (engine,) = chdb_client.query(
        "SELECT engine FROM system.tables WHERE database = {db:String} AND name = 'events'",
        parameters={"db": chdb_database},
    ).result_rows[0]
    assert engine == "MergeTree"


def test_chadmin002_cluster_schema_is_replicated_and_sharded_by_session(capsys, chdb_client):
    assert main(["clickhouse-schema", "--cluster", "analytics", "--database", "web"]) == 0
    statements = _statements(capsys)
    for statement in statements:  # every statement is valid ClickHouse (parsed by the engine; no cluster here)
        chdb_client.query(f"EXPLAIN AST {statement}")
    text = "\n".join(statements)
    assert "ON CLUSTER `analytics`" in text
    assert "ReplicatedMergeTree('/clickhouse/tables/{shard}/web/{table}', '{replica}')" in text
    assert "Distributed('analytics', 'web', 'events_local', cityHash64(session_id))" in text
    # The copy of the error rows is sharded like the events, and each node's view fills its own shard's.
    assert "Distributed('analytics', 'web', 'error_events_local', cityHash64(session_id))" in text
    assert "`web`.error_events_mv ON CLUSTER `analytics` TO `web`.error_events_local" in text
    assert "FROM `web`.events_local WHERE type = 'error'" in text
    # So is the copy of the goals' rows.
    assert "Distributed('analytics', 'web', 'goal_events_local', cityHash64(session_id))" in text
    assert "`web`.goal_events_mv ON CLUSTER `analytics` TO `web`.goal_events_local" in text
    assert "FROM `web`.events_local WHERE type IN ('custom_event', 'outbound', 'button_click'" in text
    with pytest.raises(SystemExit) as exit_info:
        main(["clickhouse-schema", "--cluster", "bad name"])
    assert exit_info.value.code == 2


def _created(statement: str) -> str:
    """The object a ``CREATE ... IF NOT EXISTS`` statement makes."""
    return statement.split("IF NOT EXISTS ", 1)[1].split(" ", 1)[0]


def test_chadmin006_cluster_upgrade_statements_create_and_fill_each_later_version(capsys, chdb_client):
    assert main(["clickhouse-schema", "--cluster", "analytics", "--database", "web"]) == 0
    full = _statements(capsys)
    upgrades = {}
    for start in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10):
        args = ["clickhouse-schema", "--cluster", "analytics", "--database", "web", "--upgrade-from", str(start)]
        assert main(args) == 0
        upgrades[start] = _statements(capsys)
    for statement in [s for statements in upgrades.values() for s in statements]:
        chdb_client.query(f"EXPLAIN AST {statement}")  # valid ClickHouse (parsed by the engine; no cluster here)
    # The tables of the later versions exactly as a new cluster gets them, and none of those it has.
    created = [s for s in upgrades[1] if s.startswith("CREATE")]
    assert [_created(s) for s in created] == [
        f"`web`.{name}"
        for name in (
            "sessions_local",
            "sessions",
            "sessions_mv",
            "error_events_local",
            "error_events",
            "error_events_mv",
            "sessions_mv",
            "goal_events_local",
            "goal_events",
            "goal_events_mv",
            "sessions_mv",
            "sealed_sessions_local",
            "sealed_sessions",
            "session_seals",
            "goal_definitions",
            "sealed_goal_bits",
            "sealed_users_local",
            "sealed_users",
            "sealed_user_builds",
        )
    ]
    assert all(s in full for s in created)
    assert [s for s in upgrades[2] if s.startswith("CREATE")] == created[3:]
    assert [s for s in upgrades[3] if s.startswith("CREATE")] == created[6:]
    assert [s for s in upgrades[6] if s.startswith("CREATE")] == created[10:]
    assert [s for s in upgrades[7] if s.startswith("CREATE")] == created[11:]
    # Version 4 adds the paths to both sessions tables and replaces the view with one that writes them; version 7
    # replaces it again with one writing the picked values as pairs.
    assert "AS pathnames" not in created[2] and "groupUniqArrayIf(toString(pathname), type = 'pageview')" in created[6]
    assert "argMaxState(" in created[6] and "argMaxState(" not in created[10]
    assert "tuple(max(toInt64(" in created[10] and "AS pathnames" in created[10]
    changes = [s for s in upgrades[3] if s.startswith(("ALTER", "DROP"))]
    column = "ADD COLUMN IF NOT EXISTS `pathnames` SimpleAggregateFunction(groupUniqArrayArray, Array(String))"
    # Version 5 stores the times of both local tables of events with another codec, without filling anything;
    # version 6 creates the goals' local table with it.
    codec = "MODIFY COLUMN `timestamp` DateTime64(3, 'UTC') CODEC(T64, LZ4)"
    recoded = [
        f"ALTER TABLE `web`.events_local ON CLUSTER `analytics` {codec}",
        f"ALTER TABLE `web`.error_events_local ON CLUSTER `analytics` {codec}",
    ]
    goal_codec = f"ALTER TABLE `web`.goal_events_local ON CLUSTER `analytics` {codec}"
    # Version 7 drops the picked values' columns of both sessions tables and adds them again as pairs.
    pairs = [
        s
        for s in upgrades[6]
        if s.startswith(("ALTER", "DROP")) and " INDEX " not in s and "goal_mask" not in s and "`pathnames`" not in s
    ]
    assert pairs[0] == "DROP VIEW IF EXISTS `web`.sessions_mv ON CLUSTER `analytics`"
    assert [p.split(" ON CLUSTER")[0] for p in pairs[1:]] == [
        f"ALTER TABLE `web`.{table}" for table in ("sessions_local", "sessions", "sessions_local", "sessions")
    ]
    assert (
        "DROP COLUMN IF EXISTS `user_value`, DROP COLUMN IF EXISTS `entry_page`"
        in pairs[1]
        == pairs[2].replace("sessions ON", "sessions_local ON")
    )
    pair = "ADD COLUMN IF NOT EXISTS `entry_page` SimpleAggregateFunction(min, Tuple(DateTime64(3, 'UTC'), String))"
    assert pair in pairs[3] and pair in pairs[4]
    # Version 8 adds the indexes finding the sessions a seal left open to each node's sessions, filling nothing.
    on = "ALTER TABLE `web`.sessions_local ON CLUSTER `analytics`"
    indexes = [
        f"{on} ADD INDEX IF NOT EXISTS open_after_log max_log_seq TYPE minmax GRANULARITY 1",
        f"{on} ADD INDEX IF NOT EXISTS open_after_cutoff last_seen TYPE minmax GRANULARITY 1",
        f"{on} MATERIALIZE INDEX open_after_log",
        f"{on} MATERIALIZE INDEX open_after_cutoff",
    ]
    # Version 9 adds the goal bits' column to both tables of sealed sessions.
    mask = "ADD COLUMN IF NOT EXISTS `goal_mask` UInt64 DEFAULT 0"
    masks = [
        f"ALTER TABLE `web`.{t} ON CLUSTER `analytics` {mask}" for t in ("sealed_sessions_local", "sealed_sessions")
    ]
    # Version 10 changes the type of the sealed rows' lists of paths on both tables of sealed sessions, in place.
    lists = "MODIFY COLUMN `pathnames` Array(LowCardinality(String))"
    paths = [
        f"ALTER TABLE `web`.{t} ON CLUSTER `analytics` {lists}" for t in ("sealed_sessions_local", "sealed_sessions")
    ]
    assert changes == [
        f"ALTER TABLE `web`.sessions_local ON CLUSTER `analytics` {column}",
        f"ALTER TABLE `web`.sessions ON CLUSTER `analytics` {column}",
        "DROP VIEW IF EXISTS `web`.sessions_mv ON CLUSTER `analytics`",
        *recoded,
        goal_codec,
        *pairs,
        *indexes,
        *masks,
        *paths,
    ]
    assert "Distributed('analytics', 'web', 'sealed_sessions_local', cityHash64(session_id))" in created[12]
    assert "PARTITION BY generation\nORDER BY (site_id, first_seen)" in created[11]
    assert "ReplicatedMergeTree('/clickhouse/tables/web/{table}', '{replica}')" in created[13]
    assert upgrades[3].index(created[7]) < upgrades[3].index(goal_codec) < upgrades[3].index(created[8])
    assert "ORDER BY (site_id, toDate(timestamp), type, event_name, session_id, timestamp)" in created[7]
    assert upgrades[3].index(changes[2]) < upgrades[3].index(created[6])
    assert upgrades[6].index(pairs[-1]) < upgrades[6].index(created[10])
    assert all(statement in full for statement in recoded + pairs)
    # Each new table is emptied on every node once its view exists, then filled once through the Distributed
    # tables: each shard groups its own sessions, and the insert waits for every shard. The sessions are filled at
    # version 7 only, with their paths and pairs.
    settings = "distributed_group_by_no_merge = 1, distributed_foreground_insert = 1"
    fills = [s for s in upgrades[1] if s.startswith(("TRUNCATE", "INSERT")) and "sitelens_schema" not in s]
    assert fills[0] == "TRUNCATE TABLE IF EXISTS `web`.error_events_local ON CLUSTER `analytics`"
    assert fills[1].startswith("INSERT INTO `web`.error_events (`site_id`")
    assert fills[1].endswith(f"FROM `web`.events WHERE type = 'error'\nSETTINGS {settings}")
    assert fills[2] == "TRUNCATE TABLE IF EXISTS `web`.goal_events_local ON CLUSTER `analytics`"
    assert fills[3].startswith("INSERT INTO `web`.goal_events (`site_id`")
    goal_types = "('custom_event', 'outbound', 'button_click', 'form_submit', 'copy')"
    assert fills[3].endswith(f"FROM `web`.events WHERE type IN {goal_types}\nSETTINGS {settings}")
    assert fills[4] == "TRUNCATE TABLE IF EXISTS `web`.sessions_local ON CLUSTER `analytics`"
    assert fills[5].startswith("INSERT INTO `web`.sessions (`site_id`, `session_id`, `first_seen`, ")
    assert "AS pathnames,\n" in fills[5] and "AS user_value" in fills[5] and "argMaxState(" not in fills[5]
    assert fills[5].endswith(
        f"FROM `web`.events\nGROUP BY site_id, session_id\nSETTINGS prefer_column_name_to_alias = 1, {settings}"
    )
    assert len(fills) == 6
    assert upgrades[1].index(fills[0]) > upgrades[1].index(created[5])
    assert upgrades[1].index(fills[2]) > upgrades[1].index(created[9])
    assert upgrades[1].index(fills[4]) > upgrades[1].index(created[10])
    final = "INSERT INTO `web`.sitelens_schema (version) VALUES (11)"
    assert all(upgrade[-1] == final for upgrade in upgrades.values()) and full[-1] == final
    pair_version = [*pairs, created[10], *fills[4:]]
    goal_version = [*created[7:8], goal_codec, *created[8:10], *fills[2:4]]
    seal_version = [*created[11:14], *indexes]
    assert "ReplicatedMergeTree('/clickhouse/tables/web/{table}', '{replica}')" in created[14] and created[15]
    # Version 11 adds the builds of the sealed sessions' users, sharded by user, filled by the seals.
    assert "Distributed('analytics', 'web', 'sealed_users_local', " in created[17]
    assert "cityHash64(site_id, user_form, user_number, user_text))" in created[17]
    assert "ReplicatedMergeTree('/clickhouse/tables/{shard}/web/{table}', '{replica}')" in created[16]
    assert "PARTITION BY seal\nORDER BY (site_id, user_form, user_number, user_text)" in created[16]
    assert "ReplicatedMergeTree('/clickhouse/tables/web/{table}', '{replica}')" in created[18]
    users_version = created[16:]
    assert upgrades[10] == [*users_version, final]
    assert upgrades[9] == [*paths, *users_version, final]
    mask_version = [*masks, *created[14:16], *paths, *users_version]
    assert upgrades[8] == [*mask_version, final]
    seal_version += mask_version
    assert upgrades[7] == [*seal_version, final]
    assert upgrades[6] == [*pair_version, *seal_version, final]
    assert upgrades[5] == [*goal_version, *pair_version, *seal_version, final]
    assert upgrades[4] == [*recoded, *goal_version, *pair_version, *seal_version, final]
    assert [s for s in upgrades[2] if s.startswith(("TRUNCATE", "INSERT"))] == [*fills, final]
    assert [s for s in upgrades[3] if s.startswith(("TRUNCATE", "INSERT"))] == [*fills[2:], final]


def test_chadmin010_the_cluster_fills_give_what_the_migrations_give(chdb_settings):
    # The fills run here against plain tables of one server (no cluster): the rows they write are the point.
    store, _ = open_event_store(chdb_settings)
    rows = random_events(random.Random(21), 150)
    store.append(rows_to_table(rows))
    client, database = store.client, store.database
    expected_sessions = finished(store)
    (errors,) = client.query("SELECT count() FROM error_events").result_rows[0]
    (goal_rows,) = client.query("SELECT count() FROM goal_events").result_rows[0]
    assert errors > 0 and goal_rows > 0 and len(expected_sessions) == 150
    for table in ("sessions", "error_events", "goal_events"):
        client.command(f"TRUNCATE TABLE {table}")
    for statement in cluster_upgrade_sql("analytics", database, 1):
        if statement.startswith("INSERT INTO") and "sitelens_schema" not in statement:
            client.command(statement)
    assert finished(store) == expected_sessions == duckdb_facts(rows)
    assert client.query("SELECT count() FROM error_events").result_rows == [(errors,)]
    assert client.query("SELECT count() FROM goal_events").result_rows == [(goal_rows,)]
    store.close()


@pytest.mark.parametrize("value", ["0", "11", "x", "-1"])
def test_chadmin007_cluster_upgrade_refuses_versions_it_cannot_start_from(capsys, value):
    with pytest.raises(SystemExit) as exit_info:
        main(["clickhouse-schema", "--cluster", "analytics", "--upgrade-from", value])
    assert exit_info.value.code == 2
    assert "schema version from 1 to 10" in capsys.readouterr().err


def test_chadmin008_upgrade_statements_are_for_clusters_only(capsys):
    assert main(["clickhouse-schema", "--upgrade-from", "1"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "--upgrade-from needs --cluster" in captured.err


def test_chadmin009_on_a_cluster_an_older_schema_stops_the_store_naming_the_upgrade(chdb_settings, monkeypatch):
    store, _ = open_event_store(chdb_settings)
    # A database of schema version 1 (as chfacts002 makes one).
    for view, table in (
        ("sessions_mv", "sessions"),
        ("error_events_mv", "error_events"),
        ("goal_events_mv", "goal_events"),
    ):
        store.client.command(f"DROP VIEW {view} SYNC")
        store.client.command(f"DROP TABLE {table} SYNC")
    store.client.command(f"DELETE FROM {SCHEMA_TABLE} WHERE version >= 2", settings={"mutations_sync": 2})
    client, database = store.client, store.database
    # chdb has no cluster: the engine's answer that ``events`` is a Distributed table is stood in for.
    monkeypatch.setattr(
        ClickHouseEventStore, "_cluster_of", lambda self, table: "analytics" if table == "events" else None
    )
    with pytest.raises(ValueError) as refused:
        ClickHouseEventStore(client, database)
    message = str(refused.value)
    assert "schema version 1" in message and "needs 11" in message
    assert f"sitelens clickhouse-schema --cluster analytics --database {database} --upgrade-from 1" in message
    tables = {
        row[0] for row in client.query("SELECT name FROM system.tables WHERE database = currentDatabase()").result_rows
    }
    assert "sessions" not in tables and "error_events" not in tables  # nothing created on the one node reached
    assert client.query(f"SELECT max(version) FROM {SCHEMA_TABLE}").result_rows == [(1,)]
    store.close()


@pytest.fixture
def duckdb_data(tmp_path):
    """A DuckDB data dir with two sites: site A has 3 days of events, site B one day."""
    data_dir = tmp_path / "duck"
    settings = load_settings({}, data_dir=str(data_dir), secret_key="test-secret-key-0123456789")
    services = open_services(settings)
    owner = make_account(services, "migrate@example.com")
    site_a, site_b = make_site(services, owner, "a.example"), make_site(services, owner, "b.example")
    rows = [
        {"site_id": site_a.site_id, "timestamp": DAY0 + timedelta(days=day, minutes=i), "pathname": f"/a{day}-{i}"}
        for day in range(3)
        for i in range(40)
    ]
    rows += [{"site_id": site_b.site_id, "timestamp": DAY0, "pathname": f"/b{i}", "page_title": "é"} for i in range(7)]
    services.writer.write(rows)
    services.close()
    return settings, site_a.site_id, site_b.site_id


def _day_counts(store):
    return sorted(
        store.query("SELECT site_id, toDate(timestamp), count(), uniqExact(pathname) FROM events GROUP BY 1, 2")
    )


def test_chadmin003_migrate_events_copies_and_verifies(capsys, duckdb_data, chdb_path, chdb_database, chdb_settings):
    settings, site_a, site_b = duckdb_data
    url = chdb_url(chdb_path, chdb_database)
    assert main(["migrate-events", "--to", url, "--data-dir", str(settings.data_dir), "--site", str(site_b)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result == {
        "sites": 1,
        "days": 1,
        "copied_days": 1,
        "skipped_days": 0,
        "copied_rows": 7,
        "events": 7,
        "verified": True,
    }
    assert main(["migrate-events", "--to", url, "--data-dir", str(settings.data_dir)]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert (result["copied_days"], result["skipped_days"], result["copied_rows"], result["events"]) == (3, 1, 120, 127)
    assert "migrating [" in captured.err  # the progress bar
    store, _ = open_event_store(chdb_settings)
    try:
        counts = _day_counts(store)
        assert store.query("SELECT DISTINCT page_title FROM events WHERE site_id = {s:Int32}", {"s": site_b}) == [
            ("é",)
        ]
    finally:
        store.close()
    assert [(site, count, distinct) for site, _, count, distinct in counts] == [
        (site_a, 40, 40),
        (site_a, 40, 40),
        (site_a, 40, 40),
        (site_b, 7, 7),
    ]


def test_chadmin004_an_interrupted_migration_resumes(capsys, duckdb_data, chdb_path, chdb_client, chdb_settings):
    settings, site_a, _ = duckdb_data
    store, _ = open_event_store(chdb_settings)
    seen = 0

    def interrupt_mid_day(count: int) -> None:
        nonlocal seen
        seen += count
        if seen > 50:  # the first day is copied, the second only in part
            raise KeyboardInterrupt

    con = duckdb.connect(settings.events_path, read_only=True)
    try:
        with pytest.raises(KeyboardInterrupt):
            migrate_events(con, store, site_id=site_a, progress=interrupt_mid_day, batch_rows=15)
    finally:
        con.close()
    partial = _day_counts(store)
    assert [count for _, _, count, _ in partial] == [40, 15]
    store.close()

    url = chdb_url(chdb_path, chdb_settings.events_url.split("database=")[1])
    assert main(["migrate-events", "--to", url, "--data-dir", str(settings.data_dir)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["skipped_days"], result["copied_days"], result["verified"]) == (1, 3, True)
    store, _ = open_event_store(chdb_settings)
    try:
        assert [(count, distinct) for _, _, count, distinct in _day_counts(store)] == [(40, 40)] * 3 + [(7, 7)]
    finally:
        store.close()


def test_chadmin005_migrate_events_refuses_bad_targets(capsys, duckdb_data, chdb_client):
    settings, _, _ = duckdb_data
    args = ["--data-dir", str(settings.data_dir)]
    assert main(["migrate-events", "--to", "duckdb:///tmp/x.duckdb", *args]) == 1
    assert "must be a ClickHouse store" in capsys.readouterr().err
    assert main(["migrate-events", "--to", "chdb://relative", *args]) == 1
    assert "absolute data directory" in capsys.readouterr().err
    database = fresh_database(chdb_client)
    try:
        assert main(["migrate-events", "--to", f"chdb:///nowhere?database={database}", "--site", "999", *args]) == 1
        assert "no site with id 999" in capsys.readouterr().err
    finally:
        drop_database(chdb_client, database)


def test_chadmin011_on_a_cluster_without_a_recorded_version_the_store_names_the_schema_command(
    chdb_settings, monkeypatch
):
    monkeypatch.setattr(
        ClickHouseEventStore, "_cluster_of", lambda self, table: "analytics" if table == "events" else None
    )
    with pytest.raises(ValueError, match="records no schema version in sitelens_schema") as refused:
        open_event_store(chdb_settings)
    assert "`sitelens clickhouse-schema --cluster analytics --database " in str(refused.value)
    assert "--upgrade-from" not in str(refused.value)


def _picks_the_table(store: Any, built: Query) -> bool:
    """Whether the narrowing of ``built``, run on ``store``, picks the read of the ``sessions`` table."""
    assert built.narrowing is not None
    picked = built.narrowing.then(store.query_dicts(*CLICKHOUSE.bind(built.narrowing.first)))
    return picked.reads_sessions


def test_chadmin012_merging_the_sessions_table_leaves_one_row_per_session_and_the_same_answers(
    capsys, chdb_settings, chdb_client, monkeypatch, tmp_path
):
    store, _ = open_event_store(chdb_settings)
    database = parse_events_url(chdb_settings.events_url).database
    chdb_client.command(f"SYSTEM STOP MERGES {database}.sessions")
    rng = random.Random(5)
    rows = random_events(rng, 300)
    rng.shuffle(rows)
    for at in range(0, len(rows), 100):
        store.append(rows_to_table(rows[at : at + 100]))
    assert store.query("SELECT count() > 300 FROM sessions") == [(True,)]  # partial rows of sessions in several parts
    scope = Scope((1,), Window(None, None), ())
    built = build_overview_query(scope, CLICKHOUSE)
    assert built.narrowing is not None
    from_table = built.narrowing.then([{"events": FACTS_MIN_EVENTS, "sessions": 0, "merged": 0.0, **UNSEALED}])
    answer = store.query_dicts(*CLICKHOUSE.bind(from_table))
    # In many small parts the narrowing groups these events; merged into one, it reads the table (for these few
    # events too, here).
    monkeypatch.setattr(facts_module, "MERGED_MIN_EVENTS", 1)
    assert not _picks_the_table(store, built)
    table = finished(store)
    store.close()
    chdb_client.command(f"SYSTEM START MERGES {database}.sessions")
    monkeypatch.setenv("SITELENS_EVENTS_URL", chdb_settings.events_url)
    assert main(["clickhouse-merge-sessions", "--data-dir", str(chdb_settings.data_dir)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["parts_before"] >= 1 and result["parts_after"] == 1 and result["seconds"] >= 0
    store, _ = open_event_store(chdb_settings)
    try:
        assert store.query("SELECT count() FROM sessions") == [(300,)]
        assert finished(store) == table
        assert store.query_dicts(*CLICKHOUSE.bind(from_table)) == answer
        assert _picks_the_table(store, built)
    finally:
        store.close()
    # DuckDB keeps no parts: the command says so and changes nothing.
    monkeypatch.setenv("SITELENS_EVENTS_URL", f"duckdb://{tmp_path / 'events.duckdb'}")
    assert main(["clickhouse-merge-sessions", "--data-dir", str(tmp_path)]) == 1
    assert "keeps no parts to merge" in capsys.readouterr().err


def test_chadmin013_sealing_writes_the_stopped_sessions_and_reads_take_them_from_the_seal(
    capsys, chdb_settings, monkeypatch, tmp_path
):
    store, _ = open_event_store(chdb_settings)
    rows = random_events(random.Random(6), 300)
    store.append(rows_to_table(rows))
    assert store.current_seal() is None
    store.close()
    monkeypatch.setenv("SITELENS_EVENTS_URL", chdb_settings.events_url)
    assert main(["clickhouse-seal-sessions", "--data-dir", str(chdb_settings.data_dir)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["full"] and result["seal"] == 1 and result["sessions"] == 300 and result["seconds"] >= 0
    # The events are months old: every session is sealed, and reads find nothing open.
    assert main(["clickhouse-seal-sessions", "--data-dir", str(chdb_settings.data_dir)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert not again["full"] and again["seal"] == 2 and again["sessions"] == 0
    store, _ = open_event_store(chdb_settings)
    try:
        assert finished(store) == duckdb_facts(rows)
        monkeypatch.setattr(facts_module, "SEALED_MIN_EVENTS", 1)
        built = build_overview_query(Scope((1,), Window(None, None)), CLICKHOUSE)
        assert built.narrowing is not None
        made = built.narrowing.then(store.query_dicts(*CLICKHOUSE.bind(built.narrowing.first)))
        assert "FROM sealed_sessions" in made.sql
    finally:
        store.close()
    monkeypatch.setenv("SITELENS_EVENTS_URL", f"duckdb://{tmp_path / 'events.duckdb'}")
    assert main(["clickhouse-seal-sessions", "--data-dir", str(tmp_path)]) == 1
    assert "keeps no sealed sessions" in capsys.readouterr().err
