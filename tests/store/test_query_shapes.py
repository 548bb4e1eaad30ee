"""Cheaper query shapes give exactly what the plain definitions give.

- bucket starts and their UTC instants with the constant-offset shortcut equal the per-bucket zone conversion;
- the one-aggregate session channel and session user equal the two-aggregate definitions, on random sessions;
- a goal condition with a property test only parses JSON behind its event's type and name;
- the overview and its series keep their whole sessions once where a filter selects them by their events.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta

import duckdb
import pytest

from api_backend.query.buckets import BUCKETS, bucket_instants, bucket_starts
from api_backend.query.dialect import DUCKDB
from api_backend.query.filters import parse_filters, session_channel, session_user
from api_backend.query.goals import goal_condition
from api_backend.query.overview import build_overview_query, build_overview_series_query
from api_backend.query.scope import Scope
from api_backend.query.sql import Params
from api_backend.query.window import Window, to_local, to_utc

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Pacific/Kiritimati", "Pacific/Pago_Pago"]
WINDOWS = [
    (datetime(2026, 3, 1), datetime(2026, 3, 20)),  # before the spring changes
    (datetime(2026, 3, 20), datetime(2026, 4, 10)),  # across the European spring change
    (datetime(2026, 10, 22), datetime(2026, 11, 21)),  # across both autumn changes
    (datetime(2026, 6, 3, 7, 30), datetime(2026, 6, 3, 9, 10)),  # a short window in summer
]


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize(("start", "end"), WINDOWS)
def test_shape001_bucket_instants_equal_zone_conversion(zone: str, start: datetime, end: datetime) -> None:
    window = Window(start, end, zone)
    for bucket in BUCKETS:
        if bucket in ("minute", "five_minutes") and end - start > timedelta(days=2):
            continue  # more buckets than allowed
        starts = bucket_starts(window, bucket)
        assert starts, bucket
        assert bucket_instants(window, starts) == [to_utc(s, window.zone) for s in starts], (zone, bucket)
        # No wall-clock start skipped by a DST jump is listed.
        if bucket not in ("day", "week", "month", "year"):
            assert all(to_local(to_utc(s, window.zone), window.zone) == s for s in starts)


def test_shape002_spring_gap_still_skipped() -> None:
    window = Window(datetime(2026, 3, 28, 12), datetime(2026, 3, 29, 12), "Europe/Berlin")
    hours = bucket_starts(window, "hour")
    assert datetime(2026, 3, 29, 2) not in hours
    assert len(hours) == 24  # 24 real hours: 13:00 on the 28th to 13:00 on the 29th (local), minus 02:00


OLD_CHANNEL = (
    "coalesce(arg_min(channel, timestamp) FILTER (WHERE channel NOT IN ('', 'Direct', 'Internal')), "
    "arg_min(channel, timestamp))"
)
OLD_USER = (
    "coalesce(arg_max(identified_user_id, timestamp) FILTER (WHERE identified_user_id <> ''), "
    "arg_max(user_id, timestamp))"
)


def test_shape003_one_aggregate_channel_and_user_equal_the_definitions() -> None:
    rng = random.Random(11)
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE events (session_id VARCHAR, timestamp TIMESTAMP, channel VARCHAR, "
        "user_id VARCHAR, identified_user_id VARCHAR)"
    )
    rows = []
    base = datetime(1969, 12, 31, 23)  # some sessions straddle the epoch: negative epoch values too
    for n in range(2000):
        times = rng.sample(range(0, 100_000), rng.randint(1, 6))  # distinct times: no ties to break
        for t in times:
            rows.append(
                (
                    f"s{n}",
                    base + timedelta(seconds=t, microseconds=rng.randint(0, 999) * 1000),
                    rng.choice(["", "Direct", "Internal", "Email", "Referral", "Organic Search"]),
                    rng.choice(["v1", "v2", "v3"]),
                    rng.choice(["", "", "", "alice", "bob"]),
                )
            )
    con.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", rows)
    old = con.execute(
        f"SELECT session_id, {OLD_CHANNEL}, {OLD_USER} FROM events GROUP BY session_id ORDER BY 1"
    ).fetchall()
    columns = f"{session_channel(DUCKDB)}, {session_user(DUCKDB)}"
    new = con.execute(f"SELECT session_id, {columns} FROM events GROUP BY session_id ORDER BY 1").fetchall()
    assert new == old
    assert len({r[1] for r in new}) == 6 and len({r[2] for r in new}) == 5


def test_shape004_property_test_sits_behind_the_event_guard() -> None:
    p = Params()
    config = {"eventName": "purchase", "eventPropertyKey": "plan", "eventPropertyValue": "pro"}
    sql = goal_condition("event", config, DUCKDB, p)
    assert sql.startswith("(CASE WHEN type = 'custom_event' AND event_name = ")
    assert sql.index("json_extract_string") > sql.index("THEN")
    plain = goal_condition("event", {"eventName": "signup"}, DUCKDB, Params())
    assert "CASE" not in plain and "json" not in plain


@pytest.mark.parametrize(
    ("filters", "kept"),
    [
        (None, False),
        ([{"parameter": "channel", "type": "equals", "value": ["Email"]}], False),
        ([{"parameter": "pathname", "type": "equals", "value": ["/pricing"]}], True),
        ([{"parameter": "pathname", "type": "not_equals", "value": ["/pricing"]}], True),
        ([{"parameter": "prop:plan", "type": "equals", "value": ["pro"]}], True),
    ],
)
def test_shape005_whole_sessions_kept_once_where_a_filter_selects_them_by_their_events(
    filters: list[dict[str, object]] | None, kept: bool
) -> None:
    # Each read of the whole sessions would look the window's matching events up again: the overview reads them six
    # times on DuckDB. Without such a filter they are read where used, which costs less than keeping millions of rows.
    parsed = parse_filters(json.dumps(filters)) if filters else ()
    scope = Scope((1,), Window(datetime(2026, 3, 1), datetime(2026, 3, 20), "UTC"), parsed)
    for query in (build_overview_query(scope, DUCKDB), build_overview_series_query(scope, "day", DUCKDB)):
        assert ("whole AS MATERIALIZED (" in query.sql) is kept
        assert ("whole AS NOT MATERIALIZED (" in query.sql) is not kept
