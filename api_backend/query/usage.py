"""Organization usage: events per day (in ``time_zone``) of each tracked type, over all sites of an organization."""

from __future__ import annotations

from api_backend.query.scope import window_condition
from api_backend.query.sql import Dialect, Params, Query
from api_backend.query.window import Window
from api_backend.query.zones import local_time
from api_backend.store.events import EVENT_TYPES

__all__ = ["USAGE_COLUMNS", "build_usage_query"]

USAGE_COLUMNS = tuple(f"{t}_count" for t in EVENT_TYPES)


def build_usage_query(site_ids: tuple[int, ...], window: Window, d: Dialect) -> Query:
    """Rows ``(day, pageview_count, ..., input_change_count, event_count)`` for the days with events."""
    p = Params()
    day = f"CAST({d.bucket(local_time('timestamp', window, d, p), 'day')} AS DATE)"
    counts = ", ".join(f"count(*) FILTER (WHERE type = '{t}') AS {t}_count" for t in EVENT_TYPES)
    types = ", ".join(p.add(t) for t in EVENT_TYPES)
    sql = f"""SELECT {day} AS day, {counts}, count(*) AS event_count
FROM events WHERE {window_condition(site_ids, window, p)} AND type IN ({types})
GROUP BY 1 ORDER BY 1"""
    return p.query(sql)
