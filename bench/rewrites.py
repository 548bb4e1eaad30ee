"""Before and after for the query-shape fixes this benchmark proposes, measured on DuckDB with the seeded data.

The route code belongs to the read API; these are the fixes proposed for its slowest queries, each built from the
same primitives as the current builders (``window_condition``, ``goal_condition``, ``session_channel``) and checked
to return exactly what the current query returns before its time counts.

    python -m bench.rewrites --data-dir bench/data/reads-10000000 [--runs 5]

Results are merged into ``bench/results.json`` (``rewrites``) and shown in ``BENCHMARKS.md``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from api_backend.query.dialect import DUCKDB
from api_backend.query.filters import session_channel
from api_backend.query.goals import (
    GoalSpec,
    build_goal_breakdown_query,
    build_goal_sessions_query,
    build_goals_query,
    goal_condition,
)
from api_backend.query.metric import build_metric_query
from api_backend.query.overview import build_overview_query
from api_backend.query.scope import Scope, window_condition
from api_backend.query.sql import Params, Query
from api_backend.query.usage import build_usage_query
from api_backend.routes.read_params import ReadParams
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import EVENT_TYPES
from bench.queries import BENCH_GOALS, SESSIONS_GOAL
from bench.stats import summarize

__all__ = ["REWRITES", "fast_path_condition", "main", "run_rewrites"]

d = DUCKDB


def fast_path_condition(pattern: str, p: Params) -> str | None:
    """A path goal without regex: exact path, ``/prefix/*`` (one more segment) or ``/prefix/**``; None otherwise."""
    if "*" not in pattern:
        return f"(type = 'pageview' AND pathname = {p.add(pattern)})"
    if pattern.endswith("/**") and "*" not in pattern[:-3]:
        return f"(type = 'pageview' AND starts_with(pathname, {p.add(pattern[:-2])}))"
    if pattern.endswith("/*") and "*" not in pattern[:-2]:
        prefix = pattern[:-1]
        rest = f"substr(pathname, {len(prefix) + 1})"
        return (
            f"(type = 'pageview' AND starts_with(pathname, {p.add(prefix)}) "
            f"AND length(pathname) > {len(prefix)} AND NOT contains({rest}, '/'))"
        )
    return None


def fast_event_condition(config: dict[str, Any], p: Params) -> str:
    """An event goal whose property test (JSON extraction) runs only on that event's rows, behind a CASE guard."""
    guard = f"type = 'custom_event' AND event_name = {p.add(config['eventName'])}"
    key, value = config.get("eventPropertyKey"), config.get("eventPropertyValue")
    if key is None or value is None:
        return f"({guard})"
    # The same property test as goal_condition (numbers compare numerically, booleans as true/false).
    text = d.json_string("props", key, p)
    if isinstance(value, bool):
        prop = f"{text} = {p.add('true' if value else 'false')}"
    elif isinstance(value, int | float):
        prop = f"coalesce({d.to_double(text)} = {p.add(float(value))}, false)"
    else:
        prop = f"{text} = {p.add(str(value))}"
    return f"(CASE WHEN {guard} THEN {prop} ELSE false END)"


def _condition(spec: GoalSpec, p: Params, fast: bool) -> str:
    if fast and spec.goal_type == "path":
        quick = fast_path_condition(spec.config["pathPattern"], p)
        if quick is not None:
            return quick
    if fast and spec.goal_type == "event":
        return fast_event_condition(dict(spec.config), p)
    return goal_condition(spec.goal_type, spec.config, d, p)


@dataclass
class Case:
    """Everything a rewrite needs: the store, the scope of the benchmark window, and the goals."""

    store: DuckDBEventStore
    scope: Scope
    specs: list[GoalSpec]
    channel: str
    start_date: str
    end_date: str

    def run(self, query: Query) -> list[dict[str, Any]]:
        return self.store.query_dicts(query.sql, query.params)


# -- 1. goals list: path goals without regex ----------------------------------------------------------------------


def goals_after(case: Case, filters_channel: str | None = None, fast: bool = True) -> Query:
    """The goals list in one pass over the window; a channel filter becomes a HAVING of the same GROUP BY."""
    p = Params()
    where = window_condition(case.scope.site_ids, case.scope.window, p)
    flags = "".join(f", bool_or({_condition(s, p, fast)}) AS g{i}" for i, s in enumerate(case.specs))
    having = f" HAVING {session_channel(d)} = {p.add(filters_channel)}" if filters_channel is not None else ""
    counts = "".join(f", count(*) FILTER (WHERE g{i}) AS g{i}" for i in range(len(case.specs)))
    sql = f"""WITH per AS (SELECT session_id{flags} FROM events WHERE {where} GROUP BY session_id{having})
SELECT count(*) AS sessions{counts} FROM per"""
    return p.query(sql)


def _goals_canon(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {k: int(v) for k, v in rows[0].items()}


# -- 2. goal sessions: page first, then the detail of 25 sessions ---------------------------------------------------


def sessions_after(case: Case, spec: GoalSpec, limit: int = 25, offset: int = 0) -> Query:
    """Converted sessions ordered by end; the per-session columns are computed for the page's sessions only."""
    p = Params()
    where = window_condition(case.scope.site_ids, case.scope.window, p)
    condition = goal_condition(spec.goal_type, spec.config, d, p)
    lim, off = p.add(limit), p.add(offset)

    def last(col: str) -> str:
        return f"arg_max({col}, timestamp) AS {col}"

    def first_set(col: str) -> str:
        return f"coalesce(arg_min({col}, timestamp) FILTER (WHERE {col} <> ''), '') AS {col}"

    last_cols = ", ".join(
        last(c)
        for c in (
            "country", "region", "city", "language", "device_type", "browser", "browser_version",
            "operating_system", "operating_system_version", "screen_width", "screen_height",
        )
    )  # fmt: skip
    first_cols = ", ".join(
        first_set(c) for c in ("referrer", "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")
    )
    sql = f"""WITH conv AS (
  SELECT session_id, max(timestamp) AS end_ts FROM events WHERE {where}
  GROUP BY session_id HAVING bool_or({condition})),
page AS (SELECT session_id FROM conv ORDER BY end_ts DESC, session_id LIMIT {lim} OFFSET {off}),
total AS (SELECT count(*) AS total_count FROM conv),
s AS (
  SELECT session_id,
    coalesce(arg_max(identified_user_id, timestamp) FILTER (WHERE identified_user_id <> ''),
             arg_max(user_id, timestamp)) AS user_id,
    {last_cols},
    {first_cols},
    arg_min(hostname, timestamp) AS hostname,
    {session_channel(d)} AS channel,
    coalesce(arg_min(pathname, timestamp) FILTER (WHERE type = 'pageview'), '') AS entry_page,
    coalesce(arg_max(pathname, timestamp) FILTER (WHERE type = 'pageview'), '') AS exit_page,
    count(*) FILTER (WHERE type = 'pageview') AS pageviews,
    count(*) FILTER (WHERE type = 'custom_event') AS events,
    count(*) FILTER (WHERE type = 'error') AS errors,
    count(*) FILTER (WHERE type = 'outbound') AS outbound,
    min(timestamp) AS session_start,
    max(timestamp) AS session_end
  FROM events WHERE {where} AND session_id IN (SELECT session_id FROM page)
  GROUP BY session_id)
SELECT t.total_count, s.* FROM total AS t LEFT JOIN s ON true ORDER BY s.session_end DESC, s.session_id"""
    return p.query(sql)


def _sessions_canon(rows: list[dict[str, Any]]) -> dict[str, Any]:
    keep = ("session_id", "pageviews", "session_start", "session_end", "channel", "entry_page", "exit_page")
    return {
        "total": int(rows[0]["total_count"]) if rows else 0,
        "rows": [tuple(str(r[k]) for k in keep) for r in rows if r.get("session_id") is not None],
    }


# -- 3. org usage in UTC: no zone conversion per row ----------------------------------------------------------------


def usage_after(case: Case) -> Query:
    """Daily counts; in UTC (or any fixed offset) the day is ``date_trunc`` of the stored UTC time, no conversion."""
    p = Params()
    counts = ", ".join(f"count(*) FILTER (WHERE type = '{t}') AS {t}_count" for t in EVENT_TYPES)
    types = ", ".join(p.add(t) for t in EVENT_TYPES)
    sql = f"""SELECT CAST(date_trunc('day', timestamp) AS DATE) AS day, {counts}, count(*) AS event_count
FROM events WHERE {window_condition(case.scope.site_ids, case.scope.window, p)} AND type IN ({types})
GROUP BY 1 ORDER BY 1"""
    return p.query(sql)


def _usage_canon(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(str(r["day"]), int(r["event_count"])) for r in rows]


# -- 4. pre-aggregation: a sessions table ---------------------------------------------------------------------------

ROLLUP_SQL = f"""CREATE OR REPLACE TABLE sessions AS
SELECT site_id, session_id, min(timestamp) AS session_start, max(timestamp) AS session_end,
  {session_channel(d)} AS channel,
  count(*) FILTER (WHERE type = 'pageview') AS pageviews,
  coalesce(arg_max(identified_user_id, timestamp) FILTER (WHERE identified_user_id <> ''),
           arg_max(user_id, timestamp)) AS uid,
  list_distinct(list(event_name) FILTER (WHERE type = 'custom_event')) AS event_names
FROM events WHERE {{window}} GROUP BY site_id, session_id"""


def _session_window(case: Case, p: Params) -> str:
    w = case.scope.window
    return (
        f"site_id = {p.add(case.scope.site_ids[0])} AND session_start >= {p.add(w.start)} "
        f"AND session_start < {p.add(w.end)}"
    )


def metric_channel_rollup(case: Case) -> Query:
    """Sessions per channel from the sessions table."""
    p = Params()
    sql = f"SELECT channel AS value, count(*) AS count FROM sessions WHERE {_session_window(case, p)} GROUP BY 1"
    return p.query(sql)


def overview_rollup(case: Case) -> Query:
    """The overview numbers from the sessions table."""
    p = Params()
    sql = f"""SELECT count(*) AS sessions, coalesce(sum(pageviews), 0) AS pageviews, count(DISTINCT uid) AS users,
  avg(pageviews) AS pages_per_session, avg(CASE WHEN pageviews = 1 THEN 100.0 ELSE 0.0 END) AS bounce_rate,
  avg(epoch_ms(session_end) / 1000.0 - epoch_ms(session_start) / 1000.0) AS session_duration
FROM sessions WHERE {_session_window(case, p)}"""
    return p.query(sql)


def breakdown_rollup(case: Case) -> Query:
    """Sessions and conversions of the signup event goal per channel, from the sessions table."""
    p = Params()
    goal = p.add("signup")
    sql = f"""SELECT channel AS value, count(*) AS sessions,
  count(*) FILTER (WHERE list_contains(event_names, {goal})) AS conversions
FROM sessions WHERE {_session_window(case, p)} GROUP BY 1"""
    return p.query(sql)


def _metric_canon(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {str(r["value"]): int(r["count"]) for r in rows if r.get("value") is not None and r.get("count") is not None}


def _overview_canon(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {k: round(float(v), 3) for k, v in rows[0].items()}


def _breakdown_canon(rows: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    return {str(r["value"]): (int(r["sessions"]), int(r["conversions"])) for r in rows if r.get("value") is not None}


# -- the catalogue --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rewrite:
    """A proposed fix: the current query, the proposed one, and what must stay equal."""

    name: str
    route: str
    fix: str
    before: Callable[[Case], Query]
    after: Callable[[Case], Query]
    canon: Callable[[list[dict[str, Any]]], Any]


def _channel_filter(case: Case) -> Scope:
    text = json.dumps([{"parameter": "channel", "type": "equals", "value": [case.channel]}])
    raw = ReadParams(case.start_date, case.end_date, case.scope.window.time_zone, filters=text)
    return raw.scope(case.scope.site_ids[0])


def _sessions_spec(_case: Case) -> GoalSpec:
    name_to_type = {name: (t, c) for name, t, c in BENCH_GOALS}
    goal_type, config = name_to_type[SESSIONS_GOAL]
    return GoalSpec(0, goal_type, config)


_ROLLUP_FIX = (
    "A sessions table (one row per session: start, end, channel, pageviews, user, distinct custom event names), "
    "maintained at ingest or refreshed for closed sessions, so session-level questions scan sessions instead of "
    "events. Measured here on a table built from the window's events (identical numbers); a table kept at ingest "
    "holds whole sessions, so sessions crossing a window edge would count by their start: a semantic choice to "
    "document with the change."
)
_SIGNUP = GoalSpec(0, "event", {"eventName": "signup"})

REWRITES: tuple[Rewrite, ...] = (
    Rewrite(
        "goals list: path goals without regex",
        "GET /sites/:site/goals",
        "In `goal_condition`, match a path pattern without `*` by equality, `/x/**` by `starts_with`, and `/x/*` by "
        "`starts_with` + no further `/` (regex only for other wildcards); guard an event goal's JSON property test "
        "with `CASE WHEN type = 'custom_event' AND event_name = ... THEN <test> ELSE false END`, so JSON is parsed "
        "only on that event's rows instead of on every row of the window.",
        lambda c: build_goals_query(c.scope, c.specs, d),
        lambda c: goals_after(c, fast=True),
        _goals_canon,
    ),
    Rewrite(
        "goals list filtered by channel (one step of the channel recipe): one pass",
        "GET /sites/:site/goals?filters=[channel equals X]",
        "When every filter is session-level and the query groups by session anyway, put the filter in that "
        "GROUP BY's HAVING instead of a separate `qs` pass plus `session_id IN qs` (one scan instead of two), "
        "with the regex-free path conditions above.",
        lambda c: build_goals_query(_channel_filter(c), c.specs, d),
        lambda c: goals_after(c, filters_channel=c.channel, fast=True),
        _goals_canon,
    ),
    Rewrite(
        "goal sessions: page first",
        "GET /sites/:site/goals/:goal/sessions",
        "Find the converted sessions with only `max(timestamp)`, take the page (25) in SQL, and compute the ~25 "
        "per-session columns (`arg_max`/`arg_min` of 20 columns) for those 25 sessions only, not for every "
        "converted session of the window.",
        lambda c: build_goal_sessions_query(c.scope, _sessions_spec(c), 25, 0, d),
        lambda c: sessions_after(c, _sessions_spec(c)),
        _sessions_canon,
    ),
    Rewrite(
        "org usage in UTC: no per-row zone conversion",
        "GET /org-event-count/:org",
        "When the zone is UTC (or has a fixed offset over the window), bucket with `date_trunc` on the stored UTC "
        "timestamp (plus a constant interval) instead of `timezone(zone, timezone('UTC', ts))` on every row; the "
        "same applies to the overview, error and usage time series.",
        lambda c: build_usage_query(c.scope.site_ids, c.scope.window, d),
        usage_after,
        _usage_canon,
    ),
    Rewrite(
        "metric by channel from a sessions table",
        "GET /sites/:site/metric?parameter=channel",
        _ROLLUP_FIX,
        lambda c: build_metric_query(c.scope, "channel", 1000, 0, d),
        metric_channel_rollup,
        _metric_canon,
    ),
    Rewrite(
        "overview from a sessions table",
        "GET /sites/:site/overview",
        _ROLLUP_FIX,
        lambda c: build_overview_query(c.scope, d),
        overview_rollup,
        _overview_canon,
    ),
    Rewrite(
        "goal breakdown by channel from a sessions table (the channel recipe in one query)",
        "GET /sites/:site/goals/:goal/breakdown?parameter=channel",
        _ROLLUP_FIX,
        lambda c: build_goal_breakdown_query(c.scope, _SIGNUP, "channel", d),
        breakdown_rollup,
        _breakdown_canon,
    ),
)


def run_rewrites(
    data_dir: Path, runs: int = 5, log: Callable[[str], None] = print, only: set[str] | None = None
) -> dict[str, Any]:
    """Time each rewrite against the current query on a copy of the data dir's event file."""
    source = data_dir / "events.duckdb"
    copy = data_dir.parent / f"rewrites-{data_dir.name}.duckdb"
    shutil.copyfile(source, copy)
    store = DuckDBEventStore(copy)
    site_id = int(store.query("SELECT min(site_id) FROM events")[0][0])
    now = datetime.now(UTC).replace(tzinfo=None, hour=0, minute=0, second=0, microsecond=0)
    start, end = (now - timedelta(days=30)).date().isoformat(), (now - timedelta(days=1)).date().isoformat()
    scope = ReadParams(start, end, "UTC").scope(site_id)
    specs = [GoalSpec(i, t, c) for i, (_, t, c) in enumerate(BENCH_GOALS)]
    case = Case(store, scope, specs, channel="Organic Search", start_date=start, end_date=end)
    out: dict[str, Any] = {"events": store.count(), "runs": runs, "cases": {}}
    try:
        started = time.perf_counter()
        # Built from the benchmark window's events so that both sides see the same rows; a table maintained at
        # ingest would hold whole sessions (see the fix's note on window edges).
        p = Params()
        where = window_condition(scope.site_ids, scope.window, p)
        store.query(ROLLUP_SQL.replace("{window}", where), p.values)
        out["rollup_build_seconds"] = time.perf_counter() - started
        out["rollup_sessions"] = int(store.query("SELECT count(*) FROM sessions")[0][0])
        log(f"  sessions table: {out['rollup_sessions']:,} sessions built in {out['rollup_build_seconds']:.1f} s")
        for rewrite in REWRITES:
            if only and rewrite.name not in only:
                continue
            before_q, after_q = rewrite.before(case), rewrite.after(case)
            same = rewrite.canon(case.run(before_q)) == rewrite.canon(case.run(after_q))
            times: dict[str, list[float]] = {"before": [], "after": []}
            for _ in range(runs):
                for label, query in (("before", before_q), ("after", after_q)):
                    started = time.perf_counter()
                    case.run(query)
                    times[label].append(time.perf_counter() - started)
            before, after = summarize(times["before"]), summarize(times["after"])
            out["cases"][rewrite.name] = {
                "route": rewrite.route,
                "fix": rewrite.fix,
                "same_result": same,
                "before": before,
                "after": after,
                "speedup": before["median"] / after["median"],
            }
            log(
                f"  {rewrite.name}: {before['median'] * 1000:.0f} -> {after['median'] * 1000:.0f} ms"
                + ("" if same else "  (RESULTS DIFFER)")
            )
    finally:
        store.close()
        copy.unlink(missing_ok=True)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.rewrites --data-dir DIR``: measure and merge into results.json."""
    from bench.__main__ import MARKDOWN, RESULTS
    from bench.report import render_markdown, stamp

    parser = argparse.ArgumentParser(prog="python -m bench.rewrites", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a data dir kept by `python -m bench --keep-data`")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", help="comma-separated rewrite names (default: all)")
    args = parser.parse_args(argv)
    only = {n.strip() for n in args.only.split(",")} if args.only else None
    result = run_rewrites(args.data_dir.resolve(), args.runs, only=only)
    result["date"] = stamp()
    result["command"] = "python -m bench.rewrites " + " ".join(argv if argv is not None else sys.argv[1:])
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    previous = results.get("rewrites", {}).get("cases", {}) if only else {}
    result["cases"] = {**previous, **result["cases"]}
    results["rewrites"] = result
    RESULTS.write_text(json.dumps(results, indent=1, default=str) + "\n")
    MARKDOWN.write_text(render_markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
