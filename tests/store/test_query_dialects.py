"""Every builder speaks only through its dialect: no DuckDB-only spelling reaches ClickHouse, and none the other way.

The builders are run over a wide spread of inputs (every filter type and parameter, every goal type, every
bucket, zones with and without DST changes, row filters, paging) with each dialect, and the SQL text is scanned
for the other engine's functions. The numbers themselves are checked on both engines by the read tests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import duckdb
import pytest

from api_backend.query.buckets import BUCKETS
from api_backend.query.dialect import CLICKHOUSE, DUCKDB, Dialect, dialect_named
from api_backend.query.filters import FILTER_TYPES, PARAMETERS, parse_filters
from api_backend.query.funnels import build_funnel_query
from api_backend.query.goals import (
    GoalSpec,
    build_goal_breakdown_query,
    build_goal_sessions_query,
    build_goals_query,
    build_goals_rollup_query,
    build_matching_values_query,
)
from api_backend.query.js_errors import build_error_events_query, build_error_names_query, build_error_series_query
from api_backend.query.live import build_live_pages_query, build_live_query
from api_backend.query.metric import build_metric_query
from api_backend.query.overview import build_overview_query, build_overview_series_query
from api_backend.query.scope import Scope, window_version_query
from api_backend.query.sessions import (
    build_session_page_query,
    build_session_rows_query,
    build_timeline_query,
    build_user_query,
)
from api_backend.query.sql import Query
from api_backend.query.usage import build_usage_query
from api_backend.query.window import Window
from tests.support.clickhouse import UNSEALED

# Spellings only DuckDB understands (each would fail or mean something else on ClickHouse).
DUCKDB_ONLY = re.compile(
    r"\b(arg_min|arg_max|bool_or|bit_or|epoch_us|epoch_ms|json_extract_string|regexp_matches|regexp_full_match|"
    r"regexp_extract|regexp_replace|TRY_CAST|unnest|time_bucket|date_trunc|to_milliseconds|timezone|contains|"
    r"starts_with|ends_with|substr|hash|list|list_contains|list_filter|list_min)\s*\(|NOT MATERIALIZED|VARCHAR\[\]|"
    r"UHUGEINT|\$p\d|\s&\s"
)
# ClickHouse functions DuckDB lacks.
CLICKHOUSE_ONLY = re.compile(
    r"\b(argMin|argMax|groupBitOr|bitAnd|toUnixTimestamp64\w*|JSONExtract\w*|JSONType|match|extract|"
    r"replaceRegexpOne|toFloat64OrNull|accurateCastOrNull|arrayJoin|toStartOf\w+|toMonday|toTimeZone|addSeconds|"
    r"addMilliseconds|lengthUTF8|substringUTF8|startsWith|endsWith|position|multiIf|toBool|has|arrayExists|"
    r"arrayFilter|arrayMin|groupArrayIf|finalizeAggregation|tupleElement)\s*\(|\{p\d+:"
)

WINDOWS = {
    "utc": Window(datetime(2026, 3, 1), datetime(2026, 4, 1), "UTC"),
    "dst": Window(datetime(2026, 3, 20), datetime(2026, 4, 5), "Europe/Paris"),
    "fixed-offset": Window(datetime(2026, 6, 1), datetime(2026, 6, 8), "Asia/Tokyo"),
    "all-time-zone": Window(None, None, "America/New_York"),
}


def _filter_sets() -> list[str]:
    sets = []
    for parameter in sorted(PARAMETERS) + ["prop:plan"]:
        for ftype in FILTER_TYPES:
            value: list[object]
            if ftype in ("is_null", "is_not_null"):
                value = []
            elif ftype in ("greater_than", "less_than", "greater_than_or_equal", "less_than_or_equal"):
                value = [3]
            elif ftype in ("regex", "not_regex"):
                value = ["^/a.*"]
            elif parameter == "country" and ftype in ("equals", "not_equals"):
                value = ["DE", "FR"]  # a country filter compares codes; other text is a 400 before any SQL
            else:
                value = ["x", "y"]
            sets.append(json.dumps([{"parameter": parameter, "type": ftype, "value": value}]))
    return sets


GOALS = [
    GoalSpec(1, "path", {"pathPattern": "/pricing"}),
    GoalSpec(2, "path", {"pathPattern": "/blog/*"}),
    GoalSpec(3, "path", {"pathPattern": "/docs/**"}),
    GoalSpec(4, "path", {"pathPattern": "/a/*/b/**"}),
    GoalSpec(5, "event", {"eventName": "signup", "eventPropertyKey": "plan", "eventPropertyValue": "pro"}),
    GoalSpec(6, "event", {"eventName": "buy", "propertyFilters": [{"key": "amount", "value": 49}]}),
    GoalSpec(7, "event", {"eventName": "buy", "propertyFilters": [{"key": "trial", "value": True}]}),
    GoalSpec(8, "outbound", {"valuePattern": "https://*.example/**"}),
    GoalSpec(9, "form_submit", {"valuePattern": "signup"}),
    GoalSpec(10, "button_click", {"valuePattern": ""}),
]
STEPS = [
    {"type": "page", "value": "/pricing"},
    {"type": "event", "value": "signup", "eventPropertyKey": "plan", "eventPropertyValue": "pro"},
    {"type": "outbound", "value": "https://**", "hostname": "example.com"},
]


def built(d: Dialect) -> Iterator[tuple[str, Query]]:
    """Every builder's query over a spread of inputs, for one dialect."""
    for wname, window in WINDOWS.items():
        for flt in [None, *_filter_sets()[:: 7 if wname != "utc" else 1]]:
            scope = Scope((1,), window, parse_filters(flt))
            yield f"overview/{wname}", build_overview_query(scope, d)
            yield f"metric/{wname}", build_metric_query(scope, "channel", 10, 0, d)
            yield f"goals/{wname}", build_goals_query(scope, GOALS, d)
            yield f"funnel/{wname}", build_funnel_query(scope, STEPS, d)
            yield f"error-names/{wname}", build_error_names_query(scope, 10, 0, d)
            yield f"sessions/{wname}", build_session_page_query(scope, 25, 0, d)
            yield f"session-rows/{wname}", build_session_rows_query(scope, ["a", "b"], GOALS, d)
        scope = Scope((1, 2), window, parse_filters(_filter_sets()[3]))
        for parameter in sorted(PARAMETERS) + ["prop:plan"]:
            yield f"metric-{parameter}", build_metric_query(scope, parameter, 10, 20, d)
            yield f"breakdown-{parameter}", build_goal_breakdown_query(scope, GOALS[4], parameter, d)
        for bucket in BUCKETS:
            yield f"series-{bucket}", build_overview_series_query(scope, bucket, d)
            yield f"error-series-{bucket}", build_error_series_query(scope, "boom", bucket, d)
        for goal in GOALS:
            yield f"goal-sessions-{goal.goal_id}", build_goal_sessions_query(scope, goal, 25, 0, d)
        yield "error-events", build_error_events_query(scope, "boom", 10, 0, d)
        yield "usage", build_usage_query((1, 2), window, d)
        yield "rollup", build_goals_rollup_query(Scope((1,), window), GOALS, "country", 5001, d)
        yield "version", window_version_query((1,), window, d)
        yield "version-sites", window_version_query((1, 2), window, d)
        yield "user", build_user_query(Scope((1,), window), "ada", 25, 25, d)
        if window.start is not None:
            yield "live", build_live_query(1, window, d)
            yield "live-pages", build_live_pages_query(1, window, 10, d)
    yield "timeline", build_timeline_query(1, "s", 1001, d)
    yield "matching-values", build_matching_values_query(["a", "b"], parse_filters(_filter_sets()[5]), d)


@pytest.mark.parametrize("d", [DUCKDB, CLICKHOUSE], ids=lambda d: d.name)
def test_dialect001_no_spelling_of_the_other_engine(d: Dialect) -> None:
    foreign = DUCKDB_ONLY if d is CLICKHOUSE else CLICKHOUSE_ONLY
    count = 0
    for name, query in built(d):
        # A query narrowed by a first statement: that statement and, on ClickHouse, the table form its counts pick
        # (``facts.facts_where_cheaper``); on DuckDB the form without spans to narrow to (``facts.merge_spans``).
        forms = [query]
        if query.narrowing is not None:
            rows = [{"events": 10**9, "sessions": 0, "merged": 1.0, **UNSEALED}] if d.merged_sessions else []
            forms += [query.narrowing.first, query.narrowing.then(rows)]
        for form in forms:
            sql, _ = d.bind(form)
            found = foreign.search(sql)
            assert found is None, f"{name} on {d.name}: {found.group(0)!r} in\n{sql}"
        count += 1
    assert count > 500


def test_dialect002_clickhouse_placeholders_are_typed_by_value() -> None:
    query = Query(
        "SELECT $p0, $p1, $p2, $p3, $p4, $p10",
        {"p0": 1, "p1": 1.5, "p2": "x", "p3": datetime(2026, 1, 1), "p4": ["a"], "p10": True},
    )
    sql, params = CLICKHOUSE.bind(query)
    assert sql == (
        "SELECT {p0:Int64}, {p1:Float64}, {p2:String}, {p3:DateTime64(3, 'UTC')}, {p4:Array(String)}, {p10:Bool}"
    )
    assert params == query.params
    assert DUCKDB.bind(query) == (query.sql, query.params)


def test_dialect003_stores_name_their_dialect() -> None:
    assert dialect_named("duckdb") is DUCKDB and dialect_named("clickhouse") is CLICKHOUSE
    with pytest.raises(ValueError, match="no query dialect"):
        dialect_named("sqlite")


def test_dialect004_a_list_unnested_with_a_null_row_after_its_elements(chdb_client: Any) -> None:
    """``unnest_strings_and_null`` on both engines: each element once, then one NULL; an empty list gives the NULL
    alone (so a grouping of the rows counts every list once, in its NULL row)."""

    def values(d: Dialect, array: str) -> list[str | None]:
        sql = f"SELECT {d.unnest_strings_and_null(array)} AS v"
        if d is DUCKDB:
            return [row[0] for row in duckdb.connect().execute(sql).fetchall()]
        return [row[0] for row in chdb_client.query(sql).result_rows]

    for d, empty in ((DUCKDB, "CAST([] AS VARCHAR[])"), (CLICKHOUSE, "CAST([] AS Array(String))")):
        assert values(d, "['/a', '', '/b']") == ["/a", "", "/b", None]
        assert values(d, empty) == [None]
