"""Pure query building: window resolution, buckets, filters and goal patterns, without a database."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from api_backend.errors import InvalidRequestError
from api_backend.query.buckets import BUCKETS, bucket_floor, bucket_starts, next_bucket, parse_bucket
from api_backend.query.dialect import DUCKDB
from api_backend.query.filters import parse_filters
from api_backend.query.goals import GoalSpec, build_goals_query, path_pattern_regex, value_pattern_regex
from api_backend.query.metric import build_metric_query
from api_backend.query.overview import previous_window
from api_backend.query.scope import Scope, scope_ctes
from api_backend.query.sql import Params
from api_backend.query.window import Window, parse_window
from api_backend.query.zones import local_time, offset_changes, utc_offset_ms

NOW = datetime(2026, 3, 29, 15, 30, 12, 345000)


def window(**params: str) -> Window:
    return parse_window(params, now=NOW)


def test_query001_date_window_in_zone_with_dst_days() -> None:
    spring = window(start_date="2026-03-29", end_date="2026-03-29", time_zone="America/New_York")
    # Today: up to now, to the end of its minute (exclusive), so the requests of one minute ask one question.
    minute_end = datetime(2026, 3, 29, 15, 31)
    assert (spring.start, spring.end, spring.include_end) == (datetime(2026, 3, 29, 4), minute_end, False)
    paris = window(start_date="2026-03-29", end_date="2026-03-29", time_zone="Europe/Paris")
    assert paris.start == datetime(2026, 3, 28, 23) and paris.end == minute_end
    on_the_minute = parse_window({"start_date": "2026-03-29", "end_date": "2026-03-29"}, now=minute_end)
    assert on_the_minute.end == datetime(2026, 3, 29, 15, 32)  # its own minute included
    late = parse_window({"start_date": "2026-03-29", "end_date": "2026-03-29"}, now=datetime(2026, 3, 29, 23, 59, 59))
    assert late.end == datetime(2026, 3, 30)  # the day's last minute ends at its midnight
    short_day = window(start_date="2026-03-28", end_date="2026-03-28", time_zone="Europe/Paris")
    assert (short_day.end - short_day.start).total_seconds() == 24 * 3600
    spring_day = parse_window(
        {"start_date": "2026-03-29", "end_date": "2026-03-29", "time_zone": "Europe/Paris"}, now=datetime(2026, 5, 1)
    )
    assert (spring_day.end - spring_day.start).total_seconds() == 23 * 3600
    autumn_day = parse_window(
        {"start_date": "2026-10-25", "end_date": "2026-10-25", "time_zone": "Europe/Paris"}, now=datetime(2026, 12, 1)
    )
    assert (autumn_day.end - autumn_day.start).total_seconds() == 25 * 3600
    assert not autumn_day.include_end and autumn_day.include_start


def test_query002_other_modes_and_precedence() -> None:
    dt = window(start_datetime="2026-03-01T10:00:00+02:00", end_datetime="2026-03-01 12:00")
    assert (dt.start, dt.end, dt.mode) == (datetime(2026, 3, 1, 8), datetime(2026, 3, 1, 12), "datetime")
    minutes = window(past_minutes_start="90", past_minutes_end="30")
    assert minutes.start == datetime(2026, 3, 29, 14, 0, 12) and minutes.end == datetime(2026, 3, 29, 15, 0, 12)
    assert not minutes.include_start and minutes.include_end
    both = window(start_date="2026-03-01", end_date="2026-03-02", past_minutes_start="5", past_minutes_end="0")
    assert both.mode == "date"
    assert window().is_all_time and window(time_zone="Asia/Tokyo").is_all_time
    assert window(start_date="", end_date="").is_all_time


def test_query017_the_previous_period_of_a_range_ending_today_ends_as_far_into_its_last_day() -> None:
    """Today and yesterday to the end of now's minute, compared with the two days before, to the same minute."""
    # NOW is 21:00 on the 29th in Kolkata: the first range ended, the second ends today.
    two_days = window(start_date="2026-03-27", end_date="2026-03-28", time_zone="Asia/Kolkata")
    today = window(start_date="2026-03-28", end_date="2026-03-29", time_zone="Asia/Kolkata")
    assert (today.start, today.end) == (datetime(2026, 3, 27, 18, 30), datetime(2026, 3, 29, 15, 31))
    previous = previous_window(today)
    assert (previous.start, previous.end) == (datetime(2026, 3, 25, 18, 30), datetime(2026, 3, 27, 15, 31))
    assert previous_window(two_days) == replace(
        two_days, start=datetime(2026, 3, 24, 18, 30), end=datetime(2026, 3, 26, 18, 30)
    )


@pytest.mark.parametrize(
    "params,message",
    [
        ({"start_date": "2026-3-1", "end_date": "2026-03-02"}, "Invalid start_date format. Use YYYY-MM-DD"),
        ({"start_date": "2026-03-01", "end_date": "2026-02-30"}, "Invalid end_date value"),
        ({"end_date": "2026-03-02"}, "start_date and end_date must be provided together"),
        ({"time_zone": "Europe/Atlantis"}, "Invalid time_zone"),
        ({"time_zone": "localtime"}, "Invalid time_zone"),
        ({"time_zone": "../etc/passwd"}, "Invalid time_zone"),
        ({"start_datetime": "2026-03-01T00:00:00Z"}, "start_datetime and end_datetime must be provided together"),
        (
            {"start_datetime": "2026-03-01T00:00:00Z", "end_datetime": "2026-03-01T00:00:00Z"},
            "start_datetime must be before end_datetime",
        ),
        ({"past_minutes_start": "abc", "past_minutes_end": "1"}, "past_minutes values must be non-negative numbers"),
        ({"past_minutes_end": "1"}, "past_minutes_start and past_minutes_end must be provided together"),
        (
            {"past_minutes_start": "1", "past_minutes_end": "1"},
            "past_minutes_start must be greater than past_minutes_end (start = older, end = newer)",
        ),
    ],
)
def test_query003_window_messages(params: dict, message: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        window(**params)
    assert info.value.message == message


def test_query004_bucket_alignment() -> None:
    t = datetime(2026, 3, 4, 17, 47, 31)  # a Wednesday
    assert bucket_floor(t, "five_minutes") == datetime(2026, 3, 4, 17, 45)
    assert bucket_floor(t, "fifteen_minutes") == datetime(2026, 3, 4, 17, 45)
    assert bucket_floor(t, "week") == datetime(2026, 3, 2)  # Monday
    assert bucket_floor(t, "month") == datetime(2026, 3, 1) and bucket_floor(t, "year") == datetime(2026, 1, 1)
    assert next_bucket(datetime(2026, 12, 1), "month") == datetime(2027, 1, 1)
    assert parse_bucket(None) == "hour"
    with pytest.raises(InvalidRequestError):
        parse_bucket("fortnight")


def test_query005_bucket_fill_skips_the_missing_hour() -> None:
    w = parse_window(
        {"start_date": "2026-03-29", "end_date": "2026-03-29", "time_zone": "Europe/Paris"}, now=datetime(2026, 4, 2)
    )
    hours = bucket_starts(w, "hour")
    assert len(hours) == 23 and datetime(2026, 3, 29, 2) not in hours
    days = bucket_starts(w, "day")
    assert days == [datetime(2026, 3, 29)]
    autumn = parse_window(
        {"start_date": "2026-10-25", "end_date": "2026-10-25", "time_zone": "Europe/Paris"}, now=datetime(2026, 12, 1)
    )
    assert len(bucket_starts(autumn, "hour")) == 24  # the repeated hour is one local bucket
    with pytest.raises(InvalidRequestError):
        bucket_starts(window(start_date="2000-01-01", end_date="2026-01-01"), "minute")


def test_query006_values_are_bound_never_pasted() -> None:
    evil = "x'); DROP TABLE events; --"
    filters = parse_filters(
        json.dumps(
            [
                {"parameter": "city", "type": "equals", "value": [evil]},
                {"parameter": "pathname", "type": "contains", "value": [evil]},
                {"parameter": f"prop:{evil}", "type": "not_equals", "value": [evil]},
            ]
        )
    )
    scope = Scope((1,), window(start_date="2026-03-01", end_date="2026-03-02"), filters)
    query = build_metric_query(scope, "channel", 10, 0, DUCKDB)
    assert "DROP" not in query.sql and evil in query.params.values()
    for placeholder in re.findall(r"\$(p\d+)", query.sql):
        assert placeholder in query.params
    assert query.sql.index("site_id =") < query.sql.index("GROUP BY session_id HAVING")


def test_query007_filter_parsing() -> None:
    [direct] = parse_filters('[{"parameter": "channel", "type": "equals", "value": ["Direct", "Email"]}]')
    assert direct.values == ("", "Email")
    [numeric] = parse_filters('[{"parameter": "prop:seats", "type": "greater_than", "value": ["4", 5]}]')
    assert numeric.values == (4.0, 5.0)
    [null] = parse_filters('[{"parameter": "utm_source", "type": "is_null"}]')
    assert null.values == ()
    assert parse_filters("") == () and parse_filters("[]") == ()
    with pytest.raises(InvalidRequestError):
        parse_filters('[{"parameter": "pathname", "type": "regex", "value": ["(?<=a)b"]}]')


def test_query008_scope_without_filters_has_no_session_step() -> None:
    p = Params()
    sql = scope_ctes(Scope((3,), window()), DUCKDB, p)
    assert "qs AS" not in sql and p.values == {"p0": 3}


@pytest.mark.parametrize(
    "pattern,path,matches",
    [
        ("/blog/*", "/blog/a", True),
        ("/blog/*", "/blog/", False),
        ("/blog/*", "/blog/a/b", False),
        ("/docs/**", "/docs/", True),
        ("/docs/**", "/docs/a/b", True),
        ("/docs/**", "/docs", False),
        ("/pricing", "/pricing/", False),
        ("/a.b", "/axb", False),
        ("/p/*/edit", "/p/42/edit", True),
        ("/(x)", "/(x)", True),
    ],
)
def test_query009_path_patterns(pattern: str, path: str, matches: bool) -> None:
    assert (re.fullmatch(path_pattern_regex(pattern), path) is not None) is matches


def test_query010_value_patterns_cross_slashes() -> None:
    assert re.fullmatch(value_pattern_regex("https://github.com/*"), "https://github.com/a/b")
    assert not re.fullmatch(value_pattern_regex("https://github.com/*"), "https://github.com/")


def test_query011_goals_query_has_one_flag_per_goal() -> None:
    goals = [GoalSpec(1, "path", {"pathPattern": "/a"}), GoalSpec(2, "event", {"eventName": "x"})]
    query = build_goals_query(Scope((1,), window()), goals, DUCKDB)
    assert "AS g0" in query.sql and "AS g1" in query.sql
    # One grouping counts the sessions and ORs each event's goal bits; the type is tested once per goal type.
    assert query.sql.count("FROM events") == 1 and "bit_or(CASE WHEN type = 'pageview' THEN" in query.sql
    assert "WHEN type = 'custom_event' THEN" in query.sql


def test_query012_offset_changes_find_dst_transitions() -> None:
    first, changes = offset_changes("Europe/Paris", datetime(2026, 1, 1), datetime(2027, 1, 1))
    assert first == 3600_000
    assert changes == ((datetime(2026, 3, 29, 1), 7200_000), (datetime(2026, 10, 25, 1), 3600_000))
    assert offset_changes("Asia/Kolkata", datetime(2026, 1, 1), datetime(2027, 1, 1)) == (19800_000, ())


@pytest.mark.parametrize("zone", ["Europe/Paris", "America/New_York", "Australia/Lord_Howe", "UTC", "Asia/Kathmandu"])
@pytest.mark.parametrize("days", [366, 7])
def test_query013_local_time_sql_agrees_with_zoneinfo(zone: str, days: int) -> None:
    """Over a year (the offset changes, except in UTC and Kathmandu) and a week of July (one offset), to the µs."""
    import random

    import duckdb

    rnd = random.Random(f"{zone}{days}")
    start = datetime(2026, 1, 1) if days > 7 else datetime(2026, 7, 1)
    end = start + timedelta(days=days)
    instants = [start + timedelta(microseconds=rnd.randrange(days * 86400 * 10**6)) for _ in range(300)]
    instants += [start + timedelta(milliseconds=rnd.randrange(days * 86400 * 1000)) for _ in range(100)]
    if days > 7:
        instants += [datetime(2026, 3, 29, 1), datetime(2026, 3, 29, 0, 59, 59, 999999), datetime(2026, 11, 1, 6)]
    p = Params()
    window = Window(start, end, zone)
    expr, offset = local_time("ts", window, DUCKDB, p), utc_offset_ms("ts", window, p)
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE t (ts TIMESTAMP)")
        con.executemany("INSERT INTO t VALUES (?)", [[i] for i in instants])
        rows = con.execute(f"SELECT ts, {expr}, {offset} FROM t", p.values).fetchall()
    finally:
        con.close()
    tz = ZoneInfo(zone)
    assert len(rows) == len(instants)
    for ts, local, offset_ms in rows:
        aware = ts.replace(tzinfo=UTC).astimezone(tz)
        assert local == aware.replace(tzinfo=None), ts
        assert offset_ms == aware.utcoffset() // timedelta(milliseconds=1), ts


@pytest.mark.parametrize("bucket", BUCKETS)
def test_query016_same_bucket_sql_agrees_with_the_buckets_of_both_times(bucket: str) -> None:
    """Pairs of wall-clock times on either side of midnight, of an hour, of a month and of a year."""
    import random

    import duckdb

    rnd = random.Random(bucket)
    edges = [datetime(2026, 1, 1), datetime(2026, 3, 1), datetime(2026, 3, 2, 13), datetime(2027, 1, 1)]
    pairs = []
    for _ in range(400):
        edge = rnd.choice(edges)
        a = edge + timedelta(microseconds=rnd.randrange(-2 * 86400 * 10**6, 2 * 86400 * 10**6))
        pairs.append((a, a + timedelta(microseconds=rnd.choice([0, 1, 999, 10**6, 3600 * 10**6, 86400 * 10**6]))))
    pairs += [
        (datetime(2026, 3, 1, 23, 59, 59, 999999), datetime(2026, 3, 2)),
        (datetime(2026, 3, 2), datetime(2026, 3, 2)),
    ]
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE t (a TIMESTAMP, b TIMESTAMP)")
        con.executemany("INSERT INTO t VALUES (?, ?)", [list(pair) for pair in pairs])
        rows = con.execute(f"SELECT a, b, {DUCKDB.same_bucket('a', 'b', bucket)} FROM t").fetchall()
    finally:
        con.close()
    assert len(rows) == len(pairs)
    for a, b, same in rows:
        assert same == (bucket_floor(a, bucket) == bucket_floor(b, bucket)), (a, b)


@pytest.mark.parametrize(
    "pattern", ["/blog/*", "/p/1*", "/*", "/ü/*", "/docs/**", "/pricing", "/a/*/b", "/x/**/y", "**"]
)
def test_query014_path_goal_sql_matches_the_pattern_rule(pattern: str) -> None:
    import duckdb

    from api_backend.query.goals import goal_condition
    from tests.support.truth import path_matches

    paths = ["/", "/blog", "/blog/", "/blog/a", "/blog/a/b", "/blogx", "/p/1", "/p/12", "/p/1/2", "/ü/é", "/docs",
             "/docs/", "/docs/a/b", "/pricing", "/pricing/", "/a/z/b", "/a//b", "/x/y", "/x/1/2/y"]  # fmt: skip
    p = Params()
    condition = goal_condition("path", {"pathPattern": pattern}, DUCKDB, p)
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE t (type VARCHAR, pathname VARCHAR)")
        con.executemany("INSERT INTO t VALUES ('pageview', ?)", [[x] for x in paths])
        got = {r[0] for r in con.execute(f"SELECT pathname FROM t WHERE {condition}", p.values).fetchall()}
    finally:
        con.close()
    assert got == {x for x in paths if path_matches(pattern, x)}


def test_query015_session_numbers_are_one_to_one_over_session_ids() -> None:
    """Ids of every form ingestion and seeding write, plus near-misses of them, get a number each, none shared."""
    import random

    import duckdb

    from api_backend.ingest.sessions import new_session_id

    rnd = random.Random(15)
    tracker = [
        new_session_id(datetime(2026, 3, 1) + timedelta(milliseconds=rnd.randrange(10**9))) for _ in range(50_000)
    ]
    seeded = [f"{rnd.getrandbits(64):016x}" for _ in range(50_000)]
    near = [s[::-1] for s in seeded[:5000]] + [s[:-1] for s in seeded[:5000]] + [s.upper() for s in tracker[:5000]]
    near += [s + s for s in seeded[:5000]] + ["", "a", "aa", "ab", "ba", "0", "00"]
    ids = tracker + seeded + near
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE t (session_id VARCHAR)")
        con.execute("INSERT INTO t SELECT unnest(?)", [ids])
        number = DUCKDB.session_number("session_id")
        distinct_ids, distinct_numbers, typ = con.execute(
            f"SELECT count(DISTINCT session_id), count(DISTINCT {number}), any_value(typeof({number})) FROM t"
        ).fetchone()
    finally:
        con.close()
    assert distinct_ids == len(set(ids)) > 110_000
    assert (distinct_numbers, typ) == (distinct_ids, "UHUGEINT")
