"""``sitelens clickhouse-schema`` and ``sitelens migrate-events`` against the embedded ClickHouse engine."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import duckdb
import pytest

from api_backend.cli import main
from api_backend.clickhouse_admin import migrate_events
from api_backend.services import open_services
from api_backend.settings import load_settings
from api_backend.store.clickhouse import ClickHouseEventStore
from api_backend.store.open import open_event_store
from tests.support import make_account, make_site
from tests.support.clickhouse import chdb_url, drop_database, fresh_database

DAY0 = datetime(2026, 3, 1, 8, 0)


def _statements(capsys) -> list[str]:
    out = capsys.readouterr().out
    return [part.strip() for part in out.split(";\n") if part.strip()]


def test_chadmin001_single_node_schema_runs_and_the_store_adopts_it(capsys, chdb_client, chdb_database):
    assert main(["clickhouse-schema", "--database", chdb_database]) == 0
    for statement in _statements(capsys):
        chdb_client.command(statement)
    store = ClickHouseEventStore(chdb_client, chdb_database)
    assert store.schema_version == 3  # and migrated on open to the newest version
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
    with pytest.raises(SystemExit) as exit_info:
        main(["clickhouse-schema", "--cluster", "bad name"])
    assert exit_info.value.code == 2


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
