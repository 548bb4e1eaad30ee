"""The read workload: each logical query three ways, through the HTTP API, directly on DuckDB, and on ClickHouse.

- **API**: the route over HTTP on loopback (routing, auth, validation, the query, JSON), as a client sees it.
- **DuckDB**: the SQL the route runs, built by the same query builders from ``api_backend.query`` and run with the
  same ``DuckDBEventStore`` class on a copy of the server's event file (the server holds the original's lock). The
  goal routes read the goals' bits where the copy keeps them (``ReadContext.goal_bits``), as the routes do.
- **ClickHouse**: equivalent ClickHouse SQL written here, on chdb loaded with the same rows.

Every implementation returns the same canonical value (plain numbers keyed by value), so a run also checks that
the three agree; a mismatch is reported, never hidden.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import Any

import httpx

from api_backend.formats import iso_utc
from api_backend.query.dialect import DUCKDB
from api_backend.query.funnels import build_funnel_query
from api_backend.query.goals import (
    GoalSpec,
    build_goal_breakdown_query,
    build_goal_breakdown_stored_query,
    build_goal_sessions_query,
    build_goal_sessions_stored_query,
    build_goals_query,
    build_goals_stored_query,
)
from api_backend.query.js_errors import build_error_names_query, build_error_series_query
from api_backend.query.metric import build_metric_query
from api_backend.query.overview import build_overview_query, build_overview_series_query
from api_backend.query.scope import Scope
from api_backend.query.sessions import build_goal_session_rows_query, page_spans
from api_backend.query.sql import Query
from api_backend.query.usage import build_usage_query
from api_backend.query.window import Window
from api_backend.read.reader import EventReader
from api_backend.routes.read_params import ReadParams
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import EVENT_TYPES
from bench.clickhouse import ClickHouseEngine, ch_literal, ch_time

__all__ = ["BENCH_GOALS", "FUNNEL_STEPS", "QUERIES", "BenchQuery", "ReadContext"]

# Ten goals over the seeded site: exact and wildcard paths, events, and events with a string or numeric property.
BENCH_GOALS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("Visited pricing", "path", {"pathPattern": "/pricing"}),
    ("Reached the signup page", "path", {"pathPattern": "/signup"}),
    ("Completed checkout", "path", {"pathPattern": "/checkout/success"}),
    ("Read a blog post", "path", {"pathPattern": "/blog/*"}),
    ("Read the docs", "path", {"pathPattern": "/docs/**"}),
    ("Signed up", "event", {"eventName": "signup"}),
    ("Bought Pro", "event", {"eventName": "purchase", "eventPropertyKey": "plan", "eventPropertyValue": "pro"}),
    ("Paid 49", "event", {"eventName": "purchase", "eventPropertyKey": "amount", "eventPropertyValue": 49}),
    ("Subscribed to the newsletter", "event", {"eventName": "newsletter_subscribe"}),
    (
        "Watched the intro video",
        "event",
        {"eventName": "video_play", "eventPropertyKey": "videoId", "eventPropertyValue": "intro-2min"},
    ),
)
SESSIONS_GOAL = "Visited pricing"  # goal sessions: a common goal, so the page is full
BREAKDOWN_GOAL = "Signed up"  # goal breakdown and the channel recipe
FUNNEL_STEPS = [
    {"type": "page", "value": "/pricing", "name": "Pricing"},
    {"type": "page", "value": "/signup", "name": "Signup page"},
    {"type": "event", "value": "signup", "name": "Signed up"},
]


@dataclass
class ReadContext:
    """Everything the queries need: the site, its goals, the window, and the three engines."""

    site_id: int
    organization_id: str
    start_date: str
    end_date: str
    goals: list[tuple[int, str, str, dict[str, Any]]]  # (goal_id, name, type, config), in the goals page's order
    http: httpx.Client
    duck: DuckDBEventStore
    ch: ClickHouseEngine
    time_zone: str = "UTC"
    top_error: str = ""
    channels: list[str] = field(default_factory=list)
    http_clickhouse_store: httpx.Client | None = None  # the same API served on the ClickHouse event store

    def duck_rows(self, query: Query) -> list[dict[str, Any]]:
        """The rows of a route's query on DuckDB as the route gets them (``EventReader``: through its narrowing)."""
        return EventReader(self.duck).rows(query)

    def on_clickhouse_store(self) -> ReadContext:
        """This context with its HTTP calls going to the server whose events live in ClickHouse."""
        assert self.http_clickhouse_store is not None, "no server on the ClickHouse store"
        return replace(self, http=self.http_clickhouse_store)

    # -- shared pieces ------------------------------------------------------------------------------------------
    @property
    def date_params(self) -> dict[str, str]:
        return {"start_date": self.start_date, "end_date": self.end_date, "time_zone": self.time_zone}

    def scope(self, filters: list[dict[str, Any]] | None = None) -> Scope:
        """The scope a route builds from the same query parameters."""
        text = json.dumps(filters) if filters else None
        return ReadParams(self.start_date, self.end_date, self.time_zone, filters=text).scope(self.site_id)

    @property
    def window(self) -> Window:
        return self.scope().window

    def goal_id(self, name: str) -> int:
        return next(g[0] for g in self.goals if g[1] == name)

    def goal_spec(self, name: str) -> GoalSpec:
        goal = next(g for g in self.goals if g[1] == name)
        return GoalSpec(goal[0], goal[2], goal[3])

    @property
    def specs(self) -> list[GoalSpec]:
        return [GoalSpec(g[0], g[2], g[3]) for g in self.goals]

    def goal_bits(self, goals: list[GoalSpec]) -> list[int] | None:
        """The bits of ``goals`` the DuckDB copy keeps (None when one has none: the routes then group the events)."""
        return self.duck.stored_goal_bits(self.site_id, goals)

    def get(self, path: str, **params: Any) -> Any:
        response = self.http.get(path, params={**self.date_params, **params})
        response.raise_for_status()
        return response.json()

    def ch_where(self) -> str:
        """Site and window predicate in ClickHouse SQL (same bounds as the API's window)."""
        w = self.window
        parts = [f"site_id = {self.site_id}"]
        if w.start is not None:
            parts.append(f"timestamp {'>=' if w.include_start else '>'} {ch_time(w.start)}")
        if w.end is not None:
            parts.append(f"timestamp {'<=' if w.include_end else '<'} {ch_time(w.end)}")
        return " AND ".join(parts)


# -- ClickHouse spellings -------------------------------------------------------------------------------------------

_NOT_DIRECT = "channel NOT IN ('', 'Direct', 'Internal')"
# A session's channel: its first non-direct channel in the window, else its first event's channel ('' = direct).
CH_SESSION_CHANNEL = (
    f"if(countIf({_NOT_DIRECT}) > 0, argMinIf(channel, timestamp, {_NOT_DIRECT}), argMin(channel, timestamp))"
)
CH_SESSION_USER = (
    "if(countIf(identified_user_id <> '') > 0, argMaxIf(identified_user_id, timestamp, identified_user_id <> ''), "
    "argMax(user_id, timestamp))"
)
_REGEX_SPECIAL = set(".^$+?()[]{}|\\")


def _path_regex(pattern: str) -> str:
    """Full-match regex of a goal path pattern: ``*`` one segment, ``**`` anything."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        ch = pattern[i]
        out.append("[^/]+" if ch == "*" else ("\\" + ch if ch in _REGEX_SPECIAL else ch))
        i += 1
    return "^(?:" + "".join(out) + ")$"


def ch_goal_condition(goal_type: str, config: dict[str, Any]) -> str:
    """ClickHouse condition for one event completing a path or event goal."""
    if goal_type == "path":
        return f"(type = 'pageview' AND match(pathname, {ch_literal(_path_regex(config['pathPattern']))}))"
    parts = ["type = 'custom_event'", f"event_name = {ch_literal(config['eventName'])}"]
    key, value = config.get("eventPropertyKey"), config.get("eventPropertyValue")
    if key is not None and value is not None:
        if isinstance(value, bool):
            parts.append(f"JSONExtractRaw(props, {ch_literal(key)}) = {ch_literal('true' if value else 'false')}")
        elif isinstance(value, int | float):
            parts.append(f"toFloat64OrNull(JSONExtractRaw(props, {ch_literal(key)})) = {float(value)!r}")
        else:
            parts.append(f"JSONExtractString(props, {ch_literal(key)}) = {ch_literal(value)}")
    return "(" + " AND ".join(parts) + ")"


def _iso(value: Any) -> str:
    """ISO UTC text of a datetime from either engine (ClickHouse returns zone-aware values)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int):  # ClickHouse DateTime arrives as epoch seconds through Arrow
        value = datetime.fromtimestamp(value, UTC)
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return iso_utc(value)


def _r(value: Any, digits: int = 6) -> float | None:
    return None if value is None else round(float(value), digits)


# -- goals list ---------------------------------------------------------------------------------------------------


def _goals_http(ctx: ReadContext, filters: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    params = {"filters": json.dumps(filters)} if filters else {}
    body = ctx.get(f"/sites/{ctx.site_id}/goals", **params)
    sessions = body["data"][0]["total_sessions"] if body["data"] else 0
    return {"sessions": sessions, "conversions": {g["goalId"]: g["total_conversions"] for g in body["data"]}}


def _goals_duck(ctx: ReadContext, filters: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    specs, scope = ctx.specs, ctx.scope(filters)
    bits = ctx.goal_bits(specs)
    if bits is None:
        query = build_goals_query(scope, specs, DUCKDB)
    else:
        query = build_goals_stored_query(scope, specs, bits, DUCKDB)
    row = ctx.duck_rows(query)[0]
    assert not row.get("stale_result")
    conversions = {s.goal_id: int(row[f"g{i}"]) for i, s in enumerate(specs)}
    return {"sessions": int(row["sessions"]), "conversions": conversions}


def _goals_ch(ctx: ReadContext, channel: str | None = None) -> dict[str, Any]:
    flags = ", ".join(f"max({ch_goal_condition(g[2], g[3])}) AS g{i}" for i, g in enumerate(ctx.goals))
    counts = ", ".join(f"countIf(g{i}) AS c{i}" for i in range(len(ctx.goals)))
    having = f" HAVING {CH_SESSION_CHANNEL} = {ch_literal(channel)}" if channel is not None else ""
    sql = (
        f"SELECT count() AS sessions, {counts} FROM "
        f"(SELECT session_id, {flags} FROM events WHERE {ctx.ch_where()} GROUP BY session_id{having})"
    )
    row = ctx.ch.query(sql)[0]
    return {"sessions": int(row["sessions"]), "conversions": {g[0]: int(row[f"c{i}"]) for i, g in enumerate(ctx.goals)}}


# -- goal sessions ------------------------------------------------------------------------------------------------


def _sessions_http(ctx: ReadContext) -> dict[str, Any]:
    body = ctx.get(f"/sites/{ctx.site_id}/goals/{ctx.goal_id(SESSIONS_GOAL)}/sessions", limit=25)
    rows = [(r["session_id"], r["pageviews"], r["session_start"], r["session_end"]) for r in body["data"]]
    return {"total": body.get("totalCount"), "rows": rows}


def _sessions_duck(ctx: ReadContext) -> dict[str, Any]:
    spec = ctx.goal_spec(SESSIONS_GOAL)
    bits = ctx.goal_bits([spec])
    if bits is None:
        query = build_goal_sessions_query(ctx.scope(), spec, 25, 0, DUCKDB)
    else:
        query = build_goal_sessions_stored_query(ctx.scope(), spec, bits[0], 25, 0, DUCKDB)
    result = ctx.duck_rows(query)
    assert not (result and result[0].get("stale_result"))
    # The page, then its sessions described from their events, as the route reads them.
    listed = [r for r in result if r["rn"] is not None]
    ids = [r["session_id"] for r in listed]
    described = build_goal_session_rows_query(ctx.scope(), ids, page_spans(listed), DUCKDB)
    by_id = {r["session_id"]: r for r in ctx.duck_rows(described)} if ids else {}
    rows = [
        (i, int(by_id[i]["pageviews"]), _iso(by_id[i]["session_start"]), _iso(by_id[i]["session_end"])) for i in ids
    ]
    return {"total": int(result[0]["total_count"]) if result else 0, "rows": rows}


def _sessions_ch(ctx: ReadContext) -> dict[str, Any]:
    spec = ctx.goal_spec(SESSIONS_GOAL)
    where = ctx.ch_where()
    sql = f"""WITH conv AS (SELECT session_id FROM events WHERE {where} GROUP BY session_id
                  HAVING max({ch_goal_condition(spec.goal_type, dict(spec.config))}))
SELECT session_id, {CH_SESSION_USER} AS user_id, argMax(country, timestamp) AS country,
  argMax(browser, timestamp) AS browser, argMax(operating_system, timestamp) AS operating_system,
  argMax(device_type, timestamp) AS device_type, {CH_SESSION_CHANNEL} AS channel,
  argMinIf(referrer, timestamp, referrer <> '') AS referrer,
  argMinIf(pathname, timestamp, type = 'pageview') AS entry_page,
  argMaxIf(pathname, timestamp, type = 'pageview') AS exit_page,
  countIf(type = 'pageview') AS pageviews, min(timestamp) AS session_start, max(timestamp) AS session_end,
  (SELECT count() FROM conv) AS total
FROM events WHERE {where} AND session_id IN (SELECT session_id FROM conv)
GROUP BY session_id ORDER BY session_end DESC, session_id LIMIT 25"""
    result = ctx.ch.query(sql)
    rows = [(r["session_id"], int(r["pageviews"]), _iso(r["session_start"]), _iso(r["session_end"])) for r in result]
    return {"total": int(result[0]["total"]) if result else 0, "rows": rows}


# -- goal breakdown by channel ------------------------------------------------------------------------------------


def _breakdown_http(ctx: ReadContext) -> dict[str, Any]:
    body = ctx.get(f"/sites/{ctx.site_id}/goals/{ctx.goal_id(BREAKDOWN_GOAL)}/breakdown", parameter="channel")
    values = {r["value"]: (r["sessions"], r["conversions"]) for r in body["data"]}
    return {"total": (body["meta"]["total_sessions"], body["meta"]["total_conversions"]), "values": values}


def _breakdown_duck(ctx: ReadContext) -> dict[str, Any]:
    spec = ctx.goal_spec(BREAKDOWN_GOAL)
    bits = ctx.goal_bits([spec])
    if bits is None:
        query = build_goal_breakdown_query(ctx.scope(), spec, "channel", DUCKDB)
    else:
        query = build_goal_breakdown_stored_query(ctx.scope(), spec, "channel", bits[0], DUCKDB)
    rows = ctx.duck_rows(query)
    assert not rows[0].get("stale_result")
    values = {r["value"]: (int(r["sessions"]), int(r["conversions"])) for r in rows if r["value"] is not None}
    first = rows[0]
    return {"total": (int(first["total_sessions"]), int(first["total_conversions"])), "values": values}


def _breakdown_ch(ctx: ReadContext) -> dict[str, Any]:
    spec = ctx.goal_spec(BREAKDOWN_GOAL)
    condition = ch_goal_condition(spec.goal_type, dict(spec.config))
    sql = f"""SELECT value, count() AS sessions, countIf(converted) AS conversions FROM (
  SELECT session_id, {CH_SESSION_CHANNEL} AS value, max({condition}) AS converted
  FROM events WHERE {ctx.ch_where()} GROUP BY session_id)
GROUP BY value"""
    rows = ctx.ch.query(sql)
    values = {str(r["value"]): (int(r["sessions"]), int(r["conversions"])) for r in rows}
    total = (sum(v[0] for v in values.values()), sum(v[1] for v in values.values()))
    return {"total": total, "values": values}


# -- metric -------------------------------------------------------------------------------------------------------


def _metric_http(ctx: ReadContext, parameter: str, limit: int) -> dict[str, Any]:
    body = ctx.get(f"/sites/{ctx.site_id}/metric", parameter=parameter, limit=limit)["data"]
    return {"total_values": body["totalCount"], "values": {r["value"]: r["count"] for r in body["data"]}}


def _metric_duck(ctx: ReadContext, parameter: str, limit: int) -> dict[str, Any]:
    query = build_metric_query(ctx.scope(), parameter, limit, 0, DUCKDB)
    rows = ctx.duck_rows(query)
    return {
        "total_values": int(rows[0]["total_values"]),
        "values": {r["value"]: int(r["count"]) for r in rows if r["count"] is not None},
    }


def _metric_channel_ch(ctx: ReadContext, limit: int = 20) -> dict[str, Any]:
    sql = f"""SELECT value, count() AS count, count() OVER () AS total_values, sum(count()) OVER () AS total_sessions
FROM (SELECT session_id, {CH_SESSION_CHANNEL} AS value FROM events WHERE {ctx.ch_where()} GROUP BY session_id)
GROUP BY value ORDER BY count DESC, value LIMIT {limit}"""
    rows = ctx.ch.query(sql)
    return {"total_values": int(rows[0]["total_values"]), "values": {str(r["value"]): int(r["count"]) for r in rows}}


def _metric_pathname_ch(ctx: ReadContext, limit: int = 100) -> dict[str, Any]:
    where = ctx.ch_where()
    sql = f"""SELECT pathname AS value, uniqExact(session_id) AS count, count() OVER () AS total_values,
  (SELECT uniqExact(session_id) FROM events WHERE {where}) AS total_sessions
FROM events WHERE {where} AND type = 'pageview' AND pathname <> ''
GROUP BY pathname ORDER BY count DESC, value LIMIT {limit}"""
    rows = ctx.ch.query(sql)
    return {"total_values": int(rows[0]["total_values"]), "values": {str(r["value"]): int(r["count"]) for r in rows}}


# -- overview -----------------------------------------------------------------------------------------------------


def _overview_canon(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "sessions": int(row["sessions"]),
        "pageviews": int(row["pageviews"]),
        "users": int(row["users"]),
        "pages_per_session": _r(row["pages_per_session"]),
        "bounce_rate": _r(row["bounce_rate"]),
        "session_duration": _r(row["session_duration"], 3),
    }


def _overview_http(ctx: ReadContext) -> dict[str, Any]:
    return _overview_canon(ctx.get(f"/sites/{ctx.site_id}/overview")["data"])


def _overview_duck(ctx: ReadContext) -> dict[str, Any]:
    query = build_overview_query(ctx.scope(), DUCKDB)
    return _overview_canon(ctx.duck_rows(query)[0])


_CH_DURATION = "(toUnixTimestamp64Milli(max(timestamp)) - toUnixTimestamp64Milli(min(timestamp))) / 1000.0"


def _overview_ch(ctx: ReadContext) -> dict[str, Any]:
    sql = f"""SELECT count() AS sessions, sum(pv) AS pageviews, uniqExact(uid) AS users, avg(pv) AS pages_per_session,
  avg(if(pv = 1, 100.0, 0.0)) AS bounce_rate, avg(duration) AS session_duration
FROM (SELECT session_id, countIf(type = 'pageview') AS pv, {_CH_DURATION} AS duration, {CH_SESSION_USER} AS uid
      FROM events WHERE {ctx.ch_where()} GROUP BY session_id)"""
    return _overview_canon(ctx.ch.query(sql)[0])


def _series_canon(rows: Sequence[tuple[str, int, int, int]]) -> list[tuple[str, int, int, int]]:
    return sorted(r for r in rows if r[1] or r[2] or r[3])


def _overview_series_http(ctx: ReadContext) -> list[tuple[str, int, int, int]]:
    body = ctx.get(f"/sites/{ctx.site_id}/overview/time-series", bucket="day")
    return _series_canon([(r["time"], r["sessions"], r["pageviews"], r["users"]) for r in body["data"]])


def _overview_series_duck(ctx: ReadContext) -> list[tuple[str, int, int, int]]:
    query = build_overview_series_query(ctx.scope(), "day", DUCKDB)
    rows = ctx.duck_rows(query)
    return _series_canon([(_iso(r["bucket"]), int(r["sessions"]), int(r["pageviews"]), int(r["users"])) for r in rows])


def _overview_series_ch(ctx: ReadContext) -> list[tuple[str, int, int, int]]:
    where = ctx.ch_where()
    sql = f"""WITH sb AS (
  SELECT toStartOfDay(start) AS bucket, count() AS sessions, avg(pv) AS pages_per_session,
    avg(if(pv = 1, 100.0, 0.0)) AS bounce_rate, avg(duration) AS session_duration
  FROM (SELECT session_id, min(timestamp) AS start, countIf(type = 'pageview') AS pv, {_CH_DURATION} AS duration
        FROM events WHERE {where} GROUP BY session_id)
  GROUP BY bucket),
eb AS (
  SELECT toStartOfDay(timestamp) AS bucket, countIf(type = 'pageview') AS pageviews,
    uniqExact(if(identified_user_id <> '', identified_user_id, user_id)) AS users
  FROM events WHERE {where} GROUP BY bucket)
SELECT bucket, sb.sessions AS sessions, eb.pageviews AS pageviews, eb.users AS users,
  sb.pages_per_session, sb.bounce_rate, sb.session_duration
FROM sb FULL OUTER JOIN eb USING (bucket) ORDER BY bucket"""
    rows = ctx.ch.query(sql)
    return _series_canon([(_iso(r["bucket"]), int(r["sessions"]), int(r["pageviews"]), int(r["users"])) for r in rows])


# -- errors -------------------------------------------------------------------------------------------------------


def _error_names_http(ctx: ReadContext) -> dict[str, Any]:
    body = ctx.get(f"/sites/{ctx.site_id}/error-names")
    return {
        "total": body.get("totalCount"),
        "values": {r["value"]: (r["count"], r["sessionCount"], r["errorName"]) for r in body["data"]},
    }


def _error_names_duck(ctx: ReadContext) -> dict[str, Any]:
    query = build_error_names_query(ctx.scope(), 10, 0, DUCKDB)
    rows = ctx.duck_rows(query)
    values = {
        r["value"]: (int(r["count"]), int(r["sessionCount"]), r["errorName"]) for r in rows if r["rn"] is not None
    }
    return {"total": int(rows[0]["total_count"]), "values": values}


def _error_names_ch(ctx: ReadContext) -> dict[str, Any]:
    sql = f"""SELECT msg AS value, min(event_name) AS error_name, count() AS count,
  uniqExact(session_id) AS session_count, sum(count()) OVER () AS occurrences, count() OVER () AS total_count
FROM (SELECT session_id, event_name, JSONExtractString(props, 'message') AS msg
      FROM events WHERE {ctx.ch_where()} AND type = 'error')
WHERE msg <> '' AND event_name <> '' GROUP BY msg ORDER BY count DESC, value LIMIT 10"""
    rows = ctx.ch.query(sql)
    values = {r["value"]: (int(r["count"]), int(r["session_count"]), str(r["error_name"])) for r in rows}
    return {"total": int(rows[0]["total_count"]), "values": values}


def _error_series_http(ctx: ReadContext) -> dict[str, int]:
    body = ctx.get(f"/sites/{ctx.site_id}/errors/time-series", errorMessage=ctx.top_error, bucket="hour")
    return {r["time"]: r["error_count"] for r in body["data"] if r["error_count"]}


def _error_series_duck(ctx: ReadContext) -> dict[str, int]:
    query = build_error_series_query(ctx.scope(), ctx.top_error, "hour", DUCKDB)
    return {_iso(r["bucket"]): int(r["error_count"]) for r in ctx.duck_rows(query)}


def _error_series_ch(ctx: ReadContext) -> dict[str, int]:
    sql = f"""SELECT toStartOfHour(timestamp) AS bucket, count() AS error_count FROM events
WHERE {ctx.ch_where()} AND type = 'error' AND JSONExtractString(props, 'message') = {ch_literal(ctx.top_error)}
GROUP BY bucket ORDER BY bucket"""
    return {_iso(r["bucket"]): int(r["error_count"]) for r in ctx.ch.query(sql)}


# -- organization usage -------------------------------------------------------------------------------------------


def _usage_http(ctx: ReadContext) -> list[tuple[Any, ...]]:
    body = ctx.get(f"/org-event-count/{ctx.organization_id}")
    return [(r["event_date"], r["event_count"], r["pageview_count"], r["error_count"]) for r in body["data"]]


def _usage_duck(ctx: ReadContext) -> list[tuple[Any, ...]]:
    query = build_usage_query((ctx.site_id,), ctx.window, DUCKDB)
    rows = ctx.duck_rows(query)
    by_day = {r["day"].isoformat(): r for r in rows}
    return _usage_days(ctx, by_day)


def _usage_days(ctx: ReadContext, by_day: dict[str, dict[str, Any]]) -> list[tuple[Any, ...]]:
    out = []
    for day in _days(ctx.start_date, ctx.end_date):
        r = by_day.get(day)
        counts = (int(r["event_count"]), int(r["pageview_count"]), int(r["error_count"])) if r else (0, 0, 0)
        out.append((day, *counts))
    return out


def _days(start: str, end: str) -> list[str]:
    first, last = date.fromisoformat(start), date.fromisoformat(end)
    return [date.fromordinal(o).isoformat() for o in range(first.toordinal(), last.toordinal() + 1)]


def _usage_ch(ctx: ReadContext) -> list[tuple[Any, ...]]:
    counts = ", ".join(f"countIf(type = '{t}') AS {t}_count" for t in EVENT_TYPES)
    types = ", ".join(ch_literal(t) for t in EVENT_TYPES)
    sql = f"""SELECT toString(toDate(timestamp)) AS day, {counts}, count() AS event_count FROM events
WHERE {ctx.ch_where()} AND type IN ({types}) GROUP BY day ORDER BY day"""
    return _usage_days(ctx, {r["day"]: r for r in ctx.ch.query(sql)})


# -- funnel -------------------------------------------------------------------------------------------------------


def _funnel_http(ctx: ReadContext) -> list[int]:
    response = ctx.http.post(
        f"/sites/{ctx.site_id}/funnels/analyze", params=ctx.date_params, json={"steps": FUNNEL_STEPS}
    )
    response.raise_for_status()
    return [r["sessions"] for r in response.json()["data"]]


def _funnel_duck(ctx: ReadContext) -> list[int]:
    query = build_funnel_query(ctx.scope(), FUNNEL_STEPS, DUCKDB)
    row = ctx.duck_rows(query)[0]
    return [int(row[f"s{i}"]) for i in range(1, len(FUNNEL_STEPS) + 1)]


def _funnel_ch(ctx: ReadContext) -> list[int]:
    conditions = []
    for step in FUNNEL_STEPS:
        if step["type"] == "page":
            conditions.append(ch_goal_condition("path", {"pathPattern": step["value"]}))
        else:
            conditions.append(ch_goal_condition("event", {"eventName": step["value"]}))
    levels = ", ".join(f"countIf(level >= {i}) AS s{i}" for i in range(1, len(conditions) + 1))
    steps = ", ".join(conditions)
    # windowFunnel over millisecond timestamps with a window longer than any session: each step strictly later.
    sql = f"""SELECT {levels} FROM (
  SELECT session_id,
    windowFunnel(10000000000000, 'strict_increase')(toUInt64(toUnixTimestamp64Milli(timestamp)), {steps}) AS level
  FROM events WHERE {ctx.ch_where()} AND ({" OR ".join(conditions)}) GROUP BY session_id)"""
    row = ctx.ch.query(sql)[0]
    return [int(row[f"s{i}"]) for i in range(1, len(conditions) + 1)]


# -- the channel recipe (api-spec.md) -----------------------------------------------------------------------------


def _recipe_rank(rows: dict[str, tuple[int, int]]) -> list[tuple[str, int, int, float]]:
    ranked = [(ch, s, c, round(c * 100 / s, 6) if s else 0.0) for ch, (s, c) in rows.items()]
    return sorted(ranked, key=lambda r: (-r[3], -r[1], r[0]))


def _recipe_http(ctx: ReadContext) -> list[tuple[str, int, int, float]]:
    channels = _metric_http(ctx, "channel", 20)["values"]
    goal_id = ctx.goal_id(BREAKDOWN_GOAL)
    rows = {}
    for channel in channels:
        body = ctx.get(
            f"/sites/{ctx.site_id}/goals",
            filters=json.dumps([{"parameter": "channel", "type": "equals", "value": [channel]}]),
        )
        goal = next(g for g in body["data"] if g["goalId"] == goal_id)
        rows[channel] = (goal["total_sessions"], goal["total_conversions"])
    return _recipe_rank(rows)


def _recipe_duck(ctx: ReadContext) -> list[tuple[str, int, int, float]]:
    channels = _metric_duck(ctx, "channel", 20)["values"]
    goal_id = ctx.goal_id(BREAKDOWN_GOAL)
    rows = {}
    for channel in channels:
        result = _goals_duck(ctx, [{"parameter": "channel", "type": "equals", "value": [channel]}])
        rows[channel] = (result["sessions"], result["conversions"][goal_id])
    return _recipe_rank(rows)


def _recipe_ch(ctx: ReadContext) -> list[tuple[str, int, int, float]]:
    channels = _metric_channel_ch(ctx, 20)["values"]
    goal_id = ctx.goal_id(BREAKDOWN_GOAL)
    rows = {}
    for channel in channels:
        result = _goals_ch(ctx, channel)
        rows[channel] = (result["sessions"], result["conversions"][goal_id])
    return _recipe_rank(rows)


# -- the catalogue ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchQuery:
    """One logical read: its route, and the three implementations returning the same canonical value."""

    name: str
    route: str
    http: Callable[[ReadContext], Any]
    duck: Callable[[ReadContext], Any]
    ch: Callable[[ReadContext], Any]


QUERIES: tuple[BenchQuery, ...] = (
    BenchQuery("goals list", "GET /sites/:site/goals (10 goals)", _goals_http, _goals_duck, _goals_ch),
    BenchQuery(
        "goal sessions", "GET /sites/:site/goals/:goal/sessions?limit=25", _sessions_http, _sessions_duck, _sessions_ch
    ),
    BenchQuery(
        "goal breakdown by channel",
        "GET /sites/:site/goals/:goal/breakdown?parameter=channel",
        _breakdown_http,
        _breakdown_duck,
        _breakdown_ch,
    ),
    BenchQuery(
        "metric by channel",
        "GET /sites/:site/metric?parameter=channel&limit=20",
        lambda c: _metric_http(c, "channel", 20),
        lambda c: _metric_duck(c, "channel", 20),
        lambda c: _metric_channel_ch(c, 20),
    ),
    BenchQuery(
        "metric by pathname",
        "GET /sites/:site/metric?parameter=pathname&limit=100",
        lambda c: _metric_http(c, "pathname", 100),
        lambda c: _metric_duck(c, "pathname", 100),
        lambda c: _metric_pathname_ch(c, 100),
    ),
    BenchQuery("overview", "GET /sites/:site/overview", _overview_http, _overview_duck, _overview_ch),
    BenchQuery(
        "overview time series",
        "GET /sites/:site/overview/time-series?bucket=day",
        _overview_series_http,
        _overview_series_duck,
        _overview_series_ch,
    ),
    BenchQuery("error names", "GET /sites/:site/error-names", _error_names_http, _error_names_duck, _error_names_ch),
    BenchQuery(
        "error time series",
        "GET /sites/:site/errors/time-series?bucket=hour",
        _error_series_http,
        _error_series_duck,
        _error_series_ch,
    ),
    BenchQuery("org usage", "GET /org-event-count/:org", _usage_http, _usage_duck, _usage_ch),
    BenchQuery("funnel (3 steps)", "POST /sites/:site/funnels/analyze", _funnel_http, _funnel_duck, _funnel_ch),
    BenchQuery(
        "channel recipe",
        "metric(channel) + goals?filters=channel for each channel",
        _recipe_http,
        _recipe_duck,
        _recipe_ch,
    ),
)


def find_top_error(ctx: ReadContext) -> str:
    """The most frequent error message in the window (the error time series follows it)."""
    values = _error_names_duck(ctx)["values"]
    return max(values.items(), key=lambda kv: (kv[1][0], kv[0]))[0] if values else ""
