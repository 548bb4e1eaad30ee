"""Overview numbers (peer-read section 9) and their time series.

Per session (over its in-window events): start, end, pageviews and the effective user (identified id,
else visitor id). ``bounce_rate`` = sessions with exactly one pageview x 100 / sessions; averages are
NULL over no sessions.

``previous_window`` gives the comparison period: the same-length window just before the requested one
(a date range moves back by its number of local days, so both cover whole local days across DST; any
other window moves back by its own length).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from api_backend.errors import InvalidRequestError
from api_backend.query.dialect import Dialect
from api_backend.query.filters import session_user
from api_backend.query.scope import Scope, opening, qualified_rows, session_groups
from api_backend.query.sql import Params, Query
from api_backend.query.window import Window, to_local, to_utc
from api_backend.query.zones import local_time

__all__ = ["build_overview_query", "build_overview_series_query", "previous_window"]


def _sessions_cte(scope: Scope, d: Dialect, p: Params) -> str:
    columns = f""", min(timestamp) AS session_start,
    {d.epoch_seconds("max(timestamp)")} - {d.epoch_seconds("min(timestamp)")} AS duration,
    count(*) FILTER (WHERE type = 'pageview') AS pageviews,
    {session_user(d)} AS uid"""
    return d.cte("s", session_groups(scope, columns, d, p), materialized=True)


def build_overview_query(scope: Scope, d: Dialect) -> Query:
    """One row: sessions, pageviews, users, pages_per_session, bounce_rate, session_duration."""
    p = Params()
    start = opening(scope, d, p, rows_needed=False)
    sql = f"""{start}{_sessions_cte(scope, d, p)}
SELECT count(*) AS sessions, coalesce(sum(pageviews), 0) AS pageviews, count(DISTINCT uid) AS users,
  avg(pageviews) AS pages_per_session,
  avg(CASE WHEN pageviews = 1 THEN 100.0 ELSE 0.0 END) AS bounce_rate,
  avg(duration) AS session_duration
FROM s"""
    return p.query(sql)


def build_overview_series_query(scope: Scope, bucket: str, d: Dialect) -> Query:
    """Rows per local bucket: sessions (by session start) with their averages, and pageviews/users by event time."""
    p = Params()
    start = opening(scope, d, p, rows_needed=False)
    session_bucket = d.bucket(local_time("session_start", scope.window, d, p), bucket)
    event_bucket = d.bucket(local_time("timestamp", scope.window, d, p), bucket)
    sessions = _sessions_cte(scope, d, p)
    # The events of the sessions already qualified in ``s``: no second qualification pass.
    rows = qualified_rows(scope, p)
    if scope.session_filters:
        rows += " AND session_id IN (SELECT session_id FROM s)"
    sql = f"""{start}{sessions},
sb AS (SELECT {session_bucket} AS bucket, count(*) AS sessions, avg(pageviews) AS pages_per_session,
         avg(CASE WHEN pageviews = 1 THEN 100.0 ELSE 0.0 END) AS bounce_rate, avg(duration) AS session_duration
       FROM s GROUP BY 1),
eb AS (SELECT {event_bucket} AS bucket, count(*) FILTER (WHERE type = 'pageview') AS pageviews,
         count(DISTINCT CASE WHEN identified_user_id <> '' THEN identified_user_id ELSE user_id END) AS users
       {rows} GROUP BY 1)
SELECT coalesce(sb.bucket, eb.bucket) AS bucket, coalesce(sb.sessions, 0) AS sessions,
  coalesce(eb.pageviews, 0) AS pageviews, coalesce(eb.users, 0) AS users,
  sb.pages_per_session, sb.bounce_rate, sb.session_duration
FROM sb FULL OUTER JOIN eb ON sb.bucket = eb.bucket
ORDER BY 1"""
    return p.query(sql)


def previous_window(window: Window) -> Window:
    """The window of the same length just before ``window`` (400 for all time, which has no previous period)."""
    if window.start is None or window.end is None:
        raise InvalidRequestError.for_field("compare", "needs a time window (start_date/end_date, ...)")
    if window.mode == "date":
        zone = window.zone
        local_start, local_end = to_local(window.start, zone), to_local(window.end, zone)
        # Whole local days covered (a window ending now covers its last day partly, and so does the previous one).
        days = timedelta(days=((local_end - timedelta(microseconds=1)).date() - local_start.date()).days + 1)
        return replace(window, start=to_utc(local_start - days, zone), end=to_utc(local_end - days, zone))
    length = window.end - window.start
    return replace(window, start=window.start - length, end=window.start)
