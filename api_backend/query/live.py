"""Live visitors: who was on the site in the last few minutes, and on which pages.

Visitors are distinct visitor ids (``user_id``, the keyed hash of the connection); an identified person
browsing on two devices counts twice, as on every "current visitors" badge.
"""

from __future__ import annotations

from api_backend.query.dialect import Dialect
from api_backend.query.scope import window_condition
from api_backend.query.sql import Params, Query
from api_backend.query.window import Window

__all__ = ["build_live_pages_query", "build_live_query"]


def build_live_query(site_id: int, window: Window, d: Dialect) -> Query:
    """One row: ``visitors, sessions, pageviews, events`` in ``window``."""
    p = Params()
    sql = f"""SELECT count(DISTINCT user_id) AS visitors, count(DISTINCT session_id) AS sessions,
  sum(CASE WHEN type = 'pageview' THEN 1 ELSE 0 END) AS pageviews, count(*) AS events
FROM events WHERE {window_condition((site_id,), window, p, d)}"""
    return p.query(sql)


def build_live_pages_query(site_id: int, window: Window, limit: int, d: Dialect) -> Query:
    """Rows ``(pathname, visitors, pageviews)`` of the pages viewed in ``window``, most visitors first."""
    p = Params()
    sql = f"""SELECT pathname, count(DISTINCT user_id) AS visitors, count(*) AS pageviews
FROM events WHERE {window_condition((site_id,), window, p, d)} AND type = 'pageview'
GROUP BY pathname ORDER BY visitors DESC, pageviews DESC, pathname LIMIT {p.add(limit)}"""
    return p.query(sql)
