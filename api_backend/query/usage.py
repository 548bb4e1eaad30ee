"""Organization usage: events per day (in ``time_zone``) of each tracked type, over all sites of an organization."""

from __future__ import annotations

from api_backend.query.dialect import Dialect
from api_backend.query.scope import window_condition
from api_backend.query.sql import Params, Query
from api_backend.query.window import Window
from api_backend.query.zones import local_time
from api_backend.store.events import EVENT_TYPES

__all__ = ["USAGE_COLUMNS", "build_usage_query"]

USAGE_COLUMNS = tuple(f"{t}_count" for t in EVENT_TYPES)


def build_usage_query(site_ids: tuple[int, ...], window: Window, d: Dialect) -> Query:
    """Rows ``(day, pageview_count, ..., input_change_count, event_count)`` for the days with events.

    The events are counted per (day, type) first, a grouping on two small keys, and the few resulting rows
    are spread into columns; one filtered count per type over every event cost about twice as much.
    """
    p = Params()
    # The local date of the local (wall-clock) time, cast directly: truncating to the day first cost ClickHouse a
    # quarter of a second at 100M events (2.13 -> 1.88 s), DuckDB about 10% at 10M.
    day = f"CAST({local_time('timestamp', window, d, p)} AS DATE)"
    counts = ", ".join(f"coalesce(sum(n) FILTER (WHERE type = '{t}'), 0) AS {t}_count" for t in EVENT_TYPES)
    types = ", ".join(p.add(t) for t in EVENT_TYPES)
    where = window_condition(site_ids, window, p, d)
    sql = f"""SELECT day, {counts}, sum(n) AS event_count
FROM (SELECT {day} AS day, type, count(*) AS n FROM events WHERE {where} GROUP BY 1, 2)
WHERE type IN ({types})
GROUP BY 1 ORDER BY 1"""
    return p.query(sql)
