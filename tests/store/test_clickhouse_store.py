"""The ClickHouse event store on the embedded engine: types, schema, deletes, the log position and crash recovery."""

from __future__ import annotations

import dataclasses
import os
import random
import subprocess
import sys
import threading
from datetime import date, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from fastapi.testclient import TestClient

from api_backend.app import create_app
from api_backend.query.dialect import CLICKHOUSE
from api_backend.query.goals import GOAL_EVENT_TYPES, GoalSpec, build_goals_query
from api_backend.query.js_errors import build_error_names_query
from api_backend.query.metric import build_metric_query
from api_backend.query.overview import build_overview_query
from api_backend.query.scope import Scope, window_version_query
from api_backend.query.window import Window
from api_backend.routes.read_params import ReadParams
from api_backend.settings import SettingsError, load_settings
from api_backend.store.clickhouse import QUERY_SETTINGS, ClickHouseEventStore
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.eventlog import EventLog
from api_backend.store.events import EVENT_COLUMNS, QueryRejectedError, QueryTooLargeError, rows_to_table
from api_backend.store.open import open_event_store, parse_events_url
from api_backend.store.writer import BatchWriter
from tests.support import REPO_ROOT, free_port, make_account, make_site
from tests.support.clickhouse import UNSEALED, chdb_url

BROWSER = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)


@pytest.fixture
def store(chdb_settings):
    store, _ = open_event_store(chdb_settings)
    yield store
    store.close()


def _event(i: int, **values) -> dict:
    return {"site_id": 1, "timestamp": datetime(2026, 3, 1, 12, 0, 0, 123000), "session_id": f"s{i}", **values}


def test_chstore001_every_column_round_trips(store):
    full = _event(
        0,
        user_id="visitor-1",
        pathname="/prix/été",
        page_title="Ünïcödé ✓ 日本語",
        props='{"plan": "pro"}',
        screen_width=1920,
        screen_height=1080,
        country="FR",
        type="performance",
        lcp=1.25,
        cls=0.0,
        inp=None,
    )
    store.append(rows_to_table([full, _event(1)]))
    rows = store.query_dicts("SELECT * FROM events ORDER BY session_id")
    assert [row.pop("log_seq") for row in rows] == [0, 0]
    assert list(rows[0]) == [name for name, _ in EVENT_COLUMNS]
    first, empty = rows
    assert first["timestamp"] == datetime(2026, 3, 1, 12, 0, 0, 123000) and first["timestamp"].tzinfo is None
    assert first["pathname"] == "/prix/été" and first["page_title"] == "Ünïcödé ✓ 日本語"
    assert (first["screen_width"], first["lcp"], first["cls"], first["inp"]) == (1920, 1.25, 0.0, None)
    # Strings are never NULL ('' means unknown), the JSON columns default to {}, only web vitals are NULL.
    assert empty["user_id"] == "" and empty["country"] == "" and empty["props"] == "{}"
    assert empty["url_parameters"] == "{}" and empty["screen_width"] == 0
    assert [empty[name] for name in ("lcp", "cls", "inp", "fcp", "ttfb")] == [None] * 5

    (row,) = store.query(
        "SELECT toDate(timestamp), groupArray(session_id), count(), avg(lcp), lengthUTF8(any(page_title)) "
        "FROM events WHERE site_id = {site:Int32} AND timestamp >= {since:DateTime64(3)} AND lcp IS NOT NULL "
        "GROUP BY 1",
        {"site": 1, "since": datetime(2026, 3, 1, 12, 0, 0, 123000)},
    )
    assert row == (date(2026, 3, 1), ["s0"], 1, 1.25, len("Ünïcödé ✓ 日本語"))


def test_chstore002_query_settings_give_standard_sql_semantics(store):
    store.append(rows_to_table([_event(0)]))
    # An outer join's missing side is NULL (not 0 / ''), an empty sum is NULL, a bare UNION is distinct.
    (row,) = store.query(
        "SELECT e.site_id, o.n FROM events AS e LEFT JOIN (SELECT 2 AS site_id, 5 AS n) AS o ON e.site_id = o.site_id"
    )
    assert row == (1, None)
    assert store.query("SELECT sum(screen_width), count() FROM events WHERE site_id = 99") == [(None, 0)]
    assert store.query("SELECT 1 AS a UNION SELECT 1") == [(1,)]
    # Times without a zone are UTC whatever the host's zone.
    assert store.query("SELECT toUnixTimestamp(toDateTime('2026-01-01 00:00:00'))") == [(1767225600,)]
    assert QUERY_SETTINGS["join_use_nulls"] == 1


def test_chstore003_reads_from_many_threads(store):
    store.append(rows_to_table([_event(i) for i in range(50)]))
    results: list[int] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(5):
                results.append(store.query("SELECT count() FROM events WHERE site_id = {s:Int32}", {"s": 1})[0][0])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and results == [50] * 20


def test_chstore004_delete_site_is_visible_at_once(store):
    store.append(rows_to_table([_event(i) for i in range(3)] + [_event(9, site_id=2)]))
    assert store.delete_site(1) == 3
    assert store.count(1) == 0 and store.count(2) == 1 and store.count() == 1
    assert store.delete_site(1) == 0


def test_chstore005_latest_sessions(store):
    early, late = datetime(2026, 3, 1, 10), datetime(2026, 3, 1, 11)
    store.append(
        rows_to_table(
            [
                _event(0, user_id="u1", session_id="old", timestamp=early),
                _event(0, user_id="u1", session_id="new", timestamp=late),
                _event(0, user_id="u2", session_id="", timestamp=late),
                _event(0, user_id="u3", session_id="gone", timestamp=datetime(2026, 2, 1)),
            ]
        )
    )
    assert store.latest_sessions(datetime(2026, 3, 1)) == [(1, "u1", "new", late)]


def _column_types(client, database: str, table: str) -> dict[str, str]:
    """The ``table``'s columns and their types, as the engine reports them."""
    rows = client.query(
        "SELECT name, type FROM system.columns WHERE database = {db:String} AND table = {table:String}",
        parameters={"db": database, "table": table},
    ).result_rows
    return dict(rows)


def test_chstore006_schema(store, chdb_client, chdb_database):
    (engine, partition, sorting) = chdb_client.query(
        "SELECT engine, partition_key, sorting_key FROM system.tables WHERE database = {db:String} AND name = 'events'",
        parameters={"db": chdb_database},
    ).result_rows[0]
    assert (engine, partition, sorting) == (
        "MergeTree",
        "toYYYYMM(timestamp)",
        "site_id, toDate(timestamp), session_id, timestamp",
    )
    types = _column_types(chdb_client, chdb_database, "events")
    assert types["timestamp"] == "DateTime64(3, 'UTC')"
    assert types["country"] == "LowCardinality(String)" and types["session_id"] == "String"
    assert {name for name, typ in types.items() if typ.startswith("Nullable")} == {"lcp", "cls", "inp", "fcp", "ttfb"}
    assert types["log_seq"] == "UInt64"
    # The copy of the error rows has the same columns, types, partitioning and order.
    (error_table,) = chdb_client.query(
        "SELECT partition_key, sorting_key FROM system.tables WHERE database = {db:String} AND name = 'error_events'",
        parameters={"db": chdb_database},
    ).result_rows
    assert error_table == (partition, sorting)
    assert _column_types(chdb_client, chdb_database, "error_events") == types
    # The copy of the goals' rows too, ordered by type and name within a day (schema version 6).
    (goal_table,) = chdb_client.query(
        "SELECT partition_key, sorting_key FROM system.tables WHERE database = {db:String} AND name = 'goal_events'",
        parameters={"db": chdb_database},
    ).result_rows
    assert goal_table == (partition, "site_id, toDate(timestamp), type, event_name, session_id, timestamp")
    assert _column_types(chdb_client, chdb_database, "goal_events") == types
    # Times in T64 and LZ4 (schema version 5), in every table.
    codecs = chdb_client.query(
        "SELECT table, compression_codec FROM system.columns WHERE database = {db:String} AND name = 'timestamp' "
        "AND table IN ('events', 'error_events', 'goal_events')",
        parameters={"db": chdb_database},
    ).result_rows
    assert sorted(codecs) == [(table, "CODEC(T64, LZ4)") for table in ("error_events", "events", "goal_events")]
    # The values a session picks from one of its events as (key, value) pairs, no aggregate states (version 7).
    session_types = _column_types(chdb_client, chdb_database, "sessions")
    assert session_types["user_value"] == "SimpleAggregateFunction(max, Tuple(Int64, String))"
    assert session_types["entry_page"] == "SimpleAggregateFunction(min, Tuple(DateTime64(3, 'UTC'), String))"
    assert session_types["exit_page"] == "SimpleAggregateFunction(max, Tuple(DateTime64(3, 'UTC'), String))"
    assert session_types["channel"] == "SimpleAggregateFunction(min, Tuple(Int64, String))"
    assert not [name for name, typ in session_types.items() if typ.startswith("AggregateFunction")]
    # The sealed sessions, one generation a partition, by site and first event, with plain values (version 8); the
    # indexes finding the sessions a seal left open.
    (sealed_table,) = chdb_client.query(
        "SELECT partition_key, sorting_key FROM system.tables WHERE database = {db:String} "
        "AND name = 'sealed_sessions'",
        parameters={"db": chdb_database},
    ).result_rows
    assert sealed_table == ("generation", "site_id, first_seen")
    sealed_types = _column_types(chdb_client, chdb_database, "sealed_sessions")
    assert sealed_types["channel"] == "LowCardinality(String)" and sealed_types["referrer"] == "String"
    assert sealed_types["user_number"] == "Nullable(UInt64)" and sealed_types["users"] == "Array(String)"
    assert sealed_types["pathnames"] == "Array(LowCardinality(String))"  # version 10
    indexes = chdb_client.query(
        "SELECT table, expr FROM system.data_skipping_indices WHERE database = {db:String} ORDER BY table, expr",
        parameters={"db": chdb_database},
    ).result_rows
    assert indexes == [("sealed_sessions", "last_seen"), ("sessions", "last_seen"), ("sessions", "max_log_seq")]
    # Each sealed session's goal bits, and the definitions asked for and sealed (version 9).
    assert sealed_types["goal_mask"] == "UInt64"
    assert _column_types(chdb_client, chdb_database, "goal_definitions") == {
        "site_id": "Int32",
        "asked": "UInt64",
        "bit": "UInt8",
        "definition": "String",
    }
    assert _column_types(chdb_client, chdb_database, "sealed_goal_bits") == {
        "generation": "UInt32",
        "site_id": "Int32",
        "bit": "UInt8",
        "definition": "String",
    }
    assert store.schema_version == 11
    # Opening again migrates nothing twice.
    again = ClickHouseEventStore(store.client, chdb_database)
    assert again.schema_version == 11
    assert store.query("SELECT count() FROM sitelens_schema") == [(11,)]


def test_chstore007_log_position_moves_with_each_append(store):
    assert store.applied_log_seq() == 0
    store.append(rows_to_table([_event(0)]), log_seq=4)
    store.append(rows_to_table([]), log_seq=7)
    assert store.applied_log_seq() == 7
    assert store.query("SELECT log_seq, count() FROM events GROUP BY log_seq") == [(4, 1)]


def test_chstore008_crash_between_insert_and_position_neither_loses_nor_duplicates(chdb_settings, tmp_path):
    event_log = EventLog(tmp_path / "log")
    batches = [rows_to_table([_event(seq * 10 + i, pathname=f"/r{seq}-{i}") for i in range(3)]) for seq in range(4)]
    seqs = [event_log.append(batch) for batch in batches]
    store, _ = open_event_store(chdb_settings)
    store.append(pa.concat_tables(batches[:2]), log_seq=seqs[1])
    # The process dies after ClickHouse took the next insert but before its position was written.
    orphan = pa.concat_tables(batches[2:])
    store.client.insert_arrow(
        "events", orphan.append_column("log_seq", pa.array([seqs[3]] * orphan.num_rows, pa.uint64()))
    )
    assert store.count() == 12 and store.applied_log_seq() == seqs[1]
    store.close()

    store, _ = open_event_store(chdb_settings)  # recovery removes the orphan rows...
    assert store.count() == 6
    writer = BatchWriter(store, log=event_log)  # ...and the replay copies their records once
    writer.close()
    paths = [row[0] for row in store.query("SELECT pathname FROM events ORDER BY pathname")]
    assert paths == sorted(f"/r{seq}-{i}" for seq in range(4) for i in range(3))
    assert store.applied_log_seq() == seqs[3]
    store.close()


def test_chstore009_tracked_events_are_counted_and_deleted_through_the_app(chdb_services, chdb_settings):
    owner = make_account(chdb_services, "ch@example.com")
    site, other = make_site(chdb_services, owner), make_site(chdb_services, owner, "other.example")
    with TestClient(create_app(chdb_settings, chdb_services)) as client:
        for target, count in ((site, 3), (other, 2)):
            for i in range(count):
                body = {"site_id": target.site_id, "type": "pageview", "pathname": f"/p{i}", "hostname": "example.com"}
                response = client.post("/api/track", json=body, headers={"User-Agent": BROWSER})
                assert response.status_code == 200, response.text
        assert client.get("/api/health").status_code == 200
        assert chdb_services.events.dialect == "clickhouse"
        assert chdb_services.events.count(site.site_id) == 3
        response = client.delete(f"/api/sites/{site.site_id}", headers={"Authorization": f"Bearer {owner.api_key}"})
        assert response.status_code == 200, response.text
    assert chdb_services.events.count(site.site_id) == 0
    assert chdb_services.events.count(other.site_id) == 2


def test_chstore010_events_url_is_checked_at_start_up(tmp_path):
    for url, message in [
        ("mysql://x/y", "must be a URL starting with one of"),
        ("chdb://relative/path", "absolute data directory"),
        ("chdb:///abs/path?database=bad-name", "letters, digits and underscores"),
        ("clickhouse:///db", "must name a server"),
        ("clickhouse://host:99999/db", "port"),
    ]:
        with pytest.raises(SettingsError, match=message):
            load_settings({"SITELENS_EVENTS_URL": url}, data_dir=str(tmp_path))
    target = parse_events_url("clickhouses://me:p%40ss@db.example.com/analytics")
    assert (target.host, target.port, target.username, target.password, target.database, target.secure) == (
        "db.example.com",
        8443,
        "me",
        "p@ss",
        "analytics",
        True,
    )
    assert parse_events_url("chdb:///srv/events").database == "sitelens"


def test_chstore011_a_second_chdb_directory_is_refused(store, tmp_path: Path, chdb_settings):
    other = dataclasses.replace(chdb_settings, events_url=chdb_url(tmp_path / "elsewhere", "x"))
    with pytest.raises(ValueError, match="one data directory per process"):
        open_event_store(other)


HOLD = (
    "import sys, time, clickhouse_connect\n"
    "client = clickhouse_connect.get_client(dsn='chdb://' + sys.argv[1])\n"
    "print('holding', flush=True)\n"
    "sys.stdin.read()\n"
)
TRY_OPEN = (
    "import sys\n"
    "from api_backend.settings import load_settings\n"
    "from api_backend.store.open import open_event_store\n"
    "try:\n"
    "    open_event_store(load_settings({}, data_dir=sys.argv[2], events_url='chdb://' + sys.argv[1]))\n"
    "except ValueError as exc:\n"
    "    print(exc)\n"
)


def test_chstore012_a_directory_held_by_another_process_is_refused_clearly(tmp_path: Path):
    path = str(tmp_path / "held")
    root = REPO_ROOT
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, path], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        other = subprocess.run(
            [sys.executable, "-c", TRY_OPEN, path, str(tmp_path / "data")],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        holder.communicate("", timeout=60)
    assert "another process (a running sitelens server?) holds it" in other.stdout, other.stderr


def test_chstore013_an_unreachable_server_is_a_clear_error(chdb_settings):
    url = f"clickhouse://sitelens:secret@127.0.0.1:{free_port()}/analytics"
    with pytest.raises(ValueError, match=r"cannot reach the ClickHouse server at clickhouse://127\.0\.0\.1:\d+"):
        open_event_store(dataclasses.replace(chdb_settings, events_url=url))


TIMES_SQL = (
    "SELECT toDateTime('2026-01-01 00:00:00'), toStartOfHour(toDateTime64('2026-01-01 05:30:00', 3, 'UTC')), "
    "toTimeZone(toDateTime64('2026-07-01 05:30:00', 3, 'UTC'), 'Europe/Berlin'), "
    "toStartOfDay(toTimeZone(toDateTime64('2026-07-01 05:30:00', 3, 'UTC'), 'Europe/Berlin')), {t:DateTime64(3)}"
)
TIMES_PARAMS = {"t": datetime(2026, 1, 1, 1, 2, 3, 4000)}
TIMES_EXPECTED = (
    datetime(2026, 1, 1),
    datetime(2026, 1, 1, 5),
    datetime(2026, 7, 1, 5, 30),
    datetime(2026, 6, 30, 22),
    datetime(2026, 1, 1, 1, 2, 3, 4000),
)
IN_NEW_YORK = (
    "import sys\n"
    "from datetime import datetime\n"
    "from api_backend.settings import load_settings\n"
    "from api_backend.store.open import open_event_store\n"
    "from tests.store.test_clickhouse_store import TIMES_PARAMS, TIMES_SQL\n"
    "store, _ = open_event_store(load_settings({}, data_dir=sys.argv[2], events_url='chdb://' + sys.argv[1]))\n"
    "print(repr(store.query(TIMES_SQL, TIMES_PARAMS)))\n"
    "store.close()\n"
)


def test_chstore014_times_are_naive_utc_whatever_the_host_zone(store, tmp_path: Path):
    assert store.query(TIMES_SQL, TIMES_PARAMS) == [TIMES_EXPECTED]
    root = REPO_ROOT
    env = {**os.environ, "TZ": "America/New_York", "PYTHONPATH": str(root)}
    run = subprocess.run(
        [sys.executable, "-c", IN_NEW_YORK, str(tmp_path / "ny"), str(tmp_path / "data")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == repr([TIMES_EXPECTED])


def test_chstore015_a_pattern_the_engine_refuses_is_a_typed_error_on_both_stores(store, tmp_path: Path):
    """The reader maps this one type to a 400, so neither store's refusal of a bound value may look like a crash."""
    with pytest.raises(QueryRejectedError):
        store.query("SELECT match('abc', {p:String})", {"p": "(a"})
    assert bool(store.query("SELECT match('abc', {p:String})", {"p": "b"})[0][0])
    duck = DuckDBEventStore(tmp_path / "events.duckdb")
    try:
        with pytest.raises(QueryRejectedError):
            duck.query("SELECT regexp_matches('abc', $p)", {"p": "(a"})
        assert duck.query("SELECT regexp_matches('abc', $p)", {"p": "b"}) == [(True,)]
    finally:
        duck.close()


def test_chstore010_a_query_over_its_memory_limit_is_told_apart(store):
    """ClickHouse's MEMORY_LIMIT_EXCEEDED becomes ``QueryTooLargeError`` (the API's 503), not an unknown failure."""
    big = "SELECT count(DISTINCT toString(number)) FROM numbers(2000000) SETTINGS max_memory_usage = 1000000"
    with pytest.raises(QueryTooLargeError):
        store.query(big)
    assert store.query("SELECT 1") == [(1,)]


# A CTE drawing random numbers, joined with itself: every row matches itself only when the CTE is computed once.
_TWICE_READ_CTE = (
    "WITH x AS MATERIALIZED (SELECT rand64() AS r FROM numbers(100)) "
    "SELECT count() FROM x AS a JOIN x AS b ON a.r = b.r"
)


def test_chstore016_a_materialized_cte_is_computed_once(store):
    assert store.query(_TWICE_READ_CTE) == [(100,)]


def test_chstore017_a_server_without_materialized_ctes_inlines_them(chdb_settings, monkeypatch):
    """A server that lacks ``enable_materialized_cte`` gets neither the setting nor the keyword: the CTE is inlined."""
    monkeypatch.setattr(ClickHouseEventStore, "_has_setting", lambda self, name: False)
    store, _ = open_event_store(chdb_settings)
    sent: list[tuple[str, dict]] = []
    query = store.client.query

    def recording(sql, **kwargs):
        sent.append((sql, kwargs.get("settings") or {}))
        return query(sql, **kwargs)

    monkeypatch.setattr(store.client, "query", recording)
    try:
        ((matches,),) = store.query(_TWICE_READ_CTE)
        assert matches < 100
        ((sql, settings),) = sent
        assert "MATERIALIZED" not in sql and "enable_materialized_cte" not in settings
    finally:
        store.close()


def test_chstore018_the_window_count_is_exact_over_whole_and_cut_parts(store):
    """The result cache's key counts the window's rows however the window cuts the parts (each append is one).

    ``count()`` runs without its -OrNull form so whole parts are counted from their index; the count must still be
    exact for windows ending inside a part, at a part's edge, before every event (0, never NULL), and in any zone.
    The key counts the events and their copies (``window_version_query``): an error or a goal's row counts twice.
    """
    rng = random.Random(18)
    times: list[tuple[int, datetime]] = []
    for month, day in ((1, 30), (1, 31), (2, 1), (2, 14), (3, 3)):
        rows = [
            _event(
                i,
                site_id=rng.choice((1, 2)),
                timestamp=datetime(2026, month, day, rng.randrange(24), rng.randrange(60), rng.randrange(60)),
                type=rng.choice(("pageview", "pageview", "error", "custom_event", "copy", "input_change")),
            )
            for i in range(rng.randrange(20, 60))
        ]
        copied = ("error", *GOAL_EVENT_TYPES)
        times += [(r["site_id"], r["timestamp"]) for r in rows for _ in range(2 if r["type"] in copied else 1)]
        store.append(rows_to_table(rows))
    edges = sorted({t for _, t in times})
    windows = [
        ReadParams("2026-01-01", "2026-03-31", "UTC").window(),
        ReadParams("2026-01-31", "2026-02-01", "Europe/Paris").window(),
        ReadParams("2025-12-01", "2025-12-31", "UTC").window(),
        Window(None, None),
        Window(edges[0], edges[-1]),  # the last event is just outside (end exclusive)
        Window(edges[0], edges[-1], include_start=False, include_end=True),
    ]
    for _ in range(30):
        start, end = sorted(rng.sample(edges, 2))
        windows.append(Window(start - timedelta(milliseconds=rng.choice((0, 1))), end))
    for window in windows:
        for sites in ((1,), (2,), (1, 2)):
            ((got,),) = store.query(*CLICKHOUSE.bind(window_version_query(sites, window, CLICKHOUSE)))
            rows = sum(1 for s, t in times if s in sites and _in_window(t, window))
            assert got == rows, (sites, window)


def _in_window(t: datetime, w: Window) -> bool:
    after = w.start is None or (t >= w.start if w.include_start else t > w.start)
    before = w.end is None or (t <= w.end if w.include_end else t < w.end)
    return after and before


def test_chstore019_a_query_made_of_a_first_ones_rows_reads_what_it_names(store):
    """``query_dicts_then`` (the narrowed reads): the second query is made of the first one's rows as dicts."""
    store.append(rows_to_table([_event(i, pathname=f"/p{i % 3}") for i in range(7)]))
    seen: list[list[dict]] = []

    def then(rows: list[dict]) -> tuple[str, dict]:
        seen.append(rows)
        return (
            "SELECT count() AS n FROM events WHERE pathname = {path:String}",
            {"path": rows[0]["pathname"]},
        )

    first = "SELECT pathname, count() AS n FROM events GROUP BY pathname ORDER BY n DESC, pathname LIMIT 1"
    assert store.query_dicts_then(first, {}, then) == [{"n": 3}]
    assert seen == [[{"pathname": "/p0", "n": 3}]]


def test_chstore020_upgrading_to_version_5_stores_new_times_with_t64_and_reads_the_old_alike(chdb_settings):
    """Schema version 5 changes the times' codec without rewriting the stored parts: the rows stored before read as
    they did, and a part written after and a merge of both parts keep every time."""
    store, _ = open_event_store(chdb_settings)
    times = [datetime(2026, 3, 1, 12) + timedelta(seconds=7 * i, microseconds=1000 * i) for i in range(50)]
    store.append(
        rows_to_table([_event(i, timestamp=t, type="error" if i % 5 == 0 else "pageview") for i, t in enumerate(times)])
    )
    # What a database of schema version 4 looks like: the times as version 1 stores them.
    for table in ("events", "error_events"):
        store.client.command(
            f"ALTER TABLE {table} MODIFY COLUMN `timestamp` DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1))"
        )
    store.client.command("OPTIMIZE TABLE events FINAL")
    store.client.command("DELETE FROM sitelens_schema WHERE version >= 5", settings={"mutations_sync": 2})
    store.close()

    upgraded, _ = open_event_store(chdb_settings)
    assert upgraded.schema_version == 11
    codecs = (
        "SELECT table, compression_codec FROM system.columns WHERE database = currentDatabase() "
        "AND name = 'timestamp' AND table IN ('events', 'error_events')"
    )
    assert sorted(upgraded.query(codecs)) == [("error_events", "CODEC(T64, LZ4)"), ("events", "CODEC(T64, LZ4)")]
    # The part written before keeps its encoding until it merges; its rows read the same.
    assert [t for (t,) in upgraded.query("SELECT timestamp FROM events ORDER BY timestamp")] == times
    later = datetime(2026, 3, 2, 9, 30, 0, 5000)
    upgraded.append(rows_to_table([_event(99, timestamp=later, type="error")]))
    upgraded.client.command("OPTIMIZE TABLE events FINAL")
    assert [t for (t,) in upgraded.query("SELECT timestamp FROM events ORDER BY timestamp")] == [*times, later]
    errors = [t for i, t in enumerate(times) if i % 5 == 0]
    assert [t for (t,) in upgraded.query("SELECT timestamp FROM error_events ORDER BY timestamp")] == [*errors, later]
    assert upgraded.query(
        "SELECT count() FROM events WHERE timestamp >= {a:DateTime64(3)} AND timestamp < {b:DateTime64(3)}",
        {"a": times[10], "b": times[20]},
    ) == [(10,)]
    upgraded.close()


def _granules_read(store: ClickHouseEventStore, sql: str, params: object) -> dict[str, list[tuple[int, int]]]:
    """Per table read by ``sql``: the (kept, all) granules of each of its reads after the primary key's test."""
    reads: dict[str, list[tuple[int, int]]] = {}
    table, keyed = "", False
    for (line,) in store.query(f"EXPLAIN indexes = 1 {sql}", params):
        line = line.strip(" │└─")
        if line.startswith("ReadFromMergeTree"):
            table = line.split("(")[1].rstrip(")").split(".")[-1]
        elif line == "PrimaryKey":
            keyed = True
        elif keyed and line.startswith("Granules:"):
            kept, total = line.split()[1].split("/")
            reads.setdefault(table, []).append((int(kept), int(total)))
            keyed = False
    return reads


def test_chstore021_a_read_bounded_by_time_reads_the_days_it_covers(store):
    """The tables of events are ordered by day; a read bounded by time (a window, or the times near a window's edges
    where the sessions crossing them lie) keeps to the granules of its days (``Dialect.time_bound``)."""
    days, sessions = 16, 4_000
    rows = []
    for day in range(days):
        for i in range(sessions):
            start = datetime(2026, 3, 1 + day) + timedelta(seconds=i * 21)
            for step, kind in enumerate(("pageview", "custom_event", "error")):
                name = "signup" if kind == "custom_event" else ""
                rows.append(
                    _event(day * sessions + i, timestamp=start + timedelta(minutes=step), type=kind, event_name=name)
                )
    store.append(rows_to_table(rows))
    scope = Scope((1,), Window(datetime(2026, 3, 5, 9), datetime(2026, 3, 6, 18), "UTC", mode="datetime"))
    goal = GoalSpec(1, "event", {"eventName": "signup"})
    queries = []
    for query in (
        build_overview_query(scope, CLICKHOUSE),
        build_metric_query(scope, "pathname", 10, 0, CLICKHOUSE),
        build_goals_query(scope, [goal], CLICKHOUSE),
        build_error_names_query(scope, 10, 0, CLICKHOUSE),
        window_version_query((1,), scope.window, CLICKHOUSE),
    ):
        queries.append(query)
        if query.narrowing is not None:  # both forms: the window's events, and the table with the edges' events
            queries += [
                query.narrowing.then([{"events": n, "sessions": 0, "merged": 1.0, **UNSEALED}]) for n in (1, 10**9)
            ]
    # Each of those tables holds every row of a type or all of them: a third of the events, or all of them.
    per_day = {"events": 3 * sessions, "goal_events": sessions, "error_events": sessions}
    granule = 8192
    seen: set[str] = set()
    for query in queries:
        for table, reads in _granules_read(store, *CLICKHOUSE.bind(query)).items():
            if table == "sessions":
                continue
            seen.add(table)
            every = -(-days * per_day[table] // granule)
            two_days = -(-2 * per_day[table] // granule) + 2  # a granule more at each end
            assert 2 * two_days <= every
            assert all(kept <= two_days and total == every for kept, total in reads), (table, reads, query.sql)
    assert seen == {"events", "goal_events", "error_events"}
