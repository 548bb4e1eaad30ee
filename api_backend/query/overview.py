"""Overview numbers (peer-read section 9) and their time series.

Per session (over its in-window events): start, end, pageviews and the effective user (identified id,
else visitor id). ``bounce_rate`` = sessions with exactly one pageview x 100 / sessions; averages are
NULL over no sessions.

Where the engine keeps per-session facts (``facts.py``), whole sessions come from the ``sessions`` table and only
the sessions crossing the window's edges are grouped from events; the ``*_events_*`` builders are the grouping of
every in-window event, used where the table cannot answer (row filters, an engine without it). Both give the same
numbers: a session counts only its in-window events either way.

``previous_window`` gives the comparison period: the same-length window just before the requested one
(a date range moves back by its number of local days, so both cover whole local days across DST; any
other window moves back by its own length).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from functools import partial

from api_backend.errors import InvalidRequestError
from api_backend.query.chains import chain_head, chain_users, chains_answer
from api_backend.query.dialect import Dialect
from api_backend.query.facts import (
    Span,
    crossing_spans,
    edge_sessions,
    ending_sessions,
    facts_answer,
    facts_where_cheaper,
    merge_spans,
    quarter_hour_start,
    selects_by_events,
    spans_condition,
    whole_sessions,
)
from api_backend.query.filters import EFFECTIVE_USER, session_user
from api_backend.query.scope import Scope, opening, qualified_rows, session_groups, window_condition
from api_backend.query.sql import Narrowing, Params, Query
from api_backend.query.user_rows import user_rows_answer, user_rows_count
from api_backend.query.window import Window, to_local, to_utc
from api_backend.query.zones import constant_offset, local_time, quarter_hours_align, utc_offset_ms

__all__ = [
    "build_overview_events_query",
    "build_overview_query",
    "build_overview_series_events_query",
    "build_overview_series_query",
    "previous_window",
]

_HEADLINE = """SELECT count(*) AS sessions, coalesce(sum(pageviews), 0) AS pageviews,
  {users} AS users,
  avg(pageviews) AS pages_per_session,
  avg(CASE WHEN pageviews = 1 THEN 100.0 ELSE 0.0 END) AS bounce_rate,
  avg(duration) AS session_duration
FROM s"""
_SESSION_AVERAGES = """count(*) AS sessions, avg(pageviews) AS pages_per_session,
         avg(CASE WHEN pageviews = 1 THEN 100.0 ELSE 0.0 END) AS bounce_rate, avg(duration) AS session_duration"""
# Buckets that start on a local quarter-hour, so on a UTC one where ``zones.quarter_hours_align``.
_QUARTER_BUCKETS = frozenset({"fifteen_minutes", "hour", "day", "week", "month", "year"})
# A whole session inside one bucket with one user: its user is that of its bucket.
_ONE_USER = "one_bucket AND users_count = 1"
# A whole session the time series buckets by its ``quarter_hours`` (``store/sessions.py``) rather than by its events:
# known quarter-hours, and one user, so its users per bucket are that user in each bucket it has events in.
_BY_QUARTERS = "users_count = 1 AND quarter_hours IS NOT NULL"
_JOIN_BUCKETS = """SELECT coalesce(sb.bucket, eb.bucket) AS bucket, coalesce(sb.sessions, 0) AS sessions,
  coalesce(eb.pageviews, 0) AS pageviews, coalesce(eb.users, 0) AS users,
  sb.pages_per_session, sb.bounce_rate, sb.session_duration
FROM sb FULL OUTER JOIN eb ON sb.bucket = eb.bucket
ORDER BY 1"""


def _session_columns(d: Dialect) -> str:
    """Per session, from its in-window events: start, duration, pageviews."""
    return f""", min(timestamp) AS session_start,
    {d.epoch_seconds("max(timestamp)")} - {d.epoch_seconds("min(timestamp)")} AS duration,
    count(*) FILTER (WHERE type = 'pageview') AS pageviews"""


def _event_columns(d: Dialect, split_users: bool) -> str:
    """``_session_columns`` plus the user: split in two as the table keeps it (``unum``, ``utext``), or whole."""
    user = session_user(d)
    if not split_users:
        return f"{_session_columns(d)},\n    {user} AS uid"
    return f"{_session_columns(d)},\n    {d.user_number(user)} AS unum, {d.user_text(user)} AS utext"


def _fact_columns(d: Dialect) -> str:
    """The same per session, from its ``sessions`` row (a whole session: all its events are in the window)."""
    duration = f"{d.epoch_seconds('last_seen')} - {d.epoch_seconds('first_seen')}"
    return (
        f"session_id, first_seen AS session_start, {duration} AS duration, pageviews, "
        "user_number AS unum, user_text AS utext"
    )


def _headline(d: Dialect, split_users: bool) -> str:
    """The one row over the sessions ``s``.

    With ``split_users`` the users are distinct numbers plus distinct other strings (``Dialect.user_number``): at
    100M events that groups 26M numbers instead of strings (from the sessions table, the count alone 2.2 -> 1.1 s on
    DuckDB). Without distinct aggregates (``Dialect.distinct_aggregates``) each count is a grouping of its own, which
    DuckDB spills to disk.
    """
    columns = ("unum", "utext") if split_users else ("uid",)
    if d.distinct_aggregates:
        users = " + ".join(f"count(DISTINCT {c})" for c in columns)
    else:
        users = " + ".join(_distinct_count(c) for c in columns)
    return _HEADLINE.format(users=users)


def _distinct_count(column: str) -> str:
    """The distinct non-NULL values of ``column`` in ``s``, counted by groupings DuckDB can spill.

    The numbers (``unum``) are counted in quarters of their range, one grouping after the other: no value is in two,
    and each grouping holds a quarter as many. At 100M events the overview's 24M session users, 18M of them
    distinct, came near the 1 GB limit in one grouping. Halves took the overview 1,792 -> 1,495 ms (121 -> 115 ms
    at 10M); quarters against halves 1,299 -> 1,196 ms (83 -> 76 ms at 10M), eighths 1,133 ms (95 ms at 10M).
    """
    if column == "unum":
        parts = [
            f"{column} < {2**62}",
            f"{column} >= {2**62} AND {column} < {2**63}",
            f"{column} >= {2**63} AND {column} < {3 * 2**62}",
            f"{column} >= {3 * 2**62}",
        ]
    else:
        parts = [f"{column} IS NOT NULL"]
    counts = [
        f"(SELECT count(*) FROM (SELECT DISTINCT {column} FROM s WHERE {part}) AS d_{column}_{n})"
        for n, part in enumerate(parts)
    ]
    return "(" + " + ".join(counts) + ")"


def _sessions_cte(scope: Scope, d: Dialect, p: Params) -> str:
    return d.cte("s", session_groups(scope, _event_columns(d, d.split_users), d, p), materialized=True)


def _facts_ctes(scope: Scope, d: Dialect, p: Params, whole_extra: str = "") -> str:
    """``whole`` (sessions from the table) and ``edge`` (grouped from events).

    ``whole`` is read where it is used rather than kept: storing millions of rows costs more than scanning the
    table's few columns again (overview 330-450 -> 270 ms, time series 620-670 -> 530-550 ms at 10M events). Not so
    where a filter selects the sessions by their events (``selects_by_events``): each read of ``whole`` would look
    up the window's matching events again, and the overview reads it six times on DuckDB. Kept, the overview
    filtered on an event property took 2,520 -> 440 ms at 10M events (its SQL, a slower machine).
    """
    whole = whole_sessions(scope, _fact_columns(d) + whole_extra, d, p)
    edge = edge_sessions(scope, _event_columns(d, split_users=True), d, p)
    keep = selects_by_events(scope) and not d.merged_sessions
    return f"{d.cte('whole', whole, materialized=keep)},\n{d.cte('edge', edge, materialized=True)}"


def build_overview_query(scope: Scope, d: Dialect) -> Query:
    """One row: sessions, pageviews, users, pages_per_session, bounce_rate, session_duration."""
    if not facts_answer(scope, d, shared_columns=True):
        return build_overview_events_query(scope, d)
    return facts_where_cheaper(
        scope, partial(_overview_from_facts, scope), lambda: build_overview_events_query(scope, d), d
    )


def _overview_from_facts(scope: Scope, d: Dialect) -> Query:
    """The overview from whole sessions and edge ones; where the users can be counted along their chains
    (``query/chains.py``), the whole sessions' users are their heads plus the few users looked up: at 100M events
    the distinct users took 3.2 of the overview's 3.3 s on DuckDB."""
    if user_rows_answer(scope, d):
        return _overview_with_user_rows(scope, d)
    p = Params()
    columns = "session_id, session_start, duration, pageviews, unum, utext"
    if not chains_answer(scope, d):
        union = _every_session(columns, d)
        return p.query(f"WITH {_facts_ctes(scope, d, p)},\n{union}\n{_headline(d, split_users=True)}")
    head = chain_head("prev_first_seen", "first_seen", scope.window, p)
    ctes = _facts_ctes(scope, d, p, f", prev_first_seen AS prev, {head} AS head")
    # The heads are counted in the pass over every session the other numbers make.
    union = _every_session(columns, d, heads=True)
    others = "SELECT unum, utext FROM edge UNION ALL SELECT unum, utext FROM whole WHERE prev IS NULL"
    ends = ending_sessions(scope, "user_number AS unum, user_text AS utext", d, p)
    chained, users = chain_users("whole", others, ends, d)
    headline = _HEADLINE.format(users=f"count(*) FILTER (WHERE head) + {users}")
    return p.query(f"WITH {ctes},\n{union},\n{chained}\n{headline}")


def _overview_with_user_rows(scope: Scope, d: Dialect) -> Query:
    """The overview from whole sessions and edge ones, with the users of the whole sealed sessions counted from
    ``sealed_users`` plus those of the others not among them (``query/user_rows.py``): at 100M events the distinct
    users took 1.7 of the overview's 2.2 s on ClickHouse."""
    p = Params()
    union = _every_session("session_id, session_start, duration, pageviews", d)
    open_users = whole_sessions(scope, "user_number, user_text", d, p, part="open")
    others = f"SELECT unum AS user_number, utext AS user_text FROM edge UNION ALL {open_users}"
    ctes, users = user_rows_count(scope, others, d, p)
    return p.query(f"WITH {_facts_ctes(scope, d, p)},\n{union},\n{ctes}\n{_HEADLINE.format(users=users)}")


def _every_session(columns: str, d: Dialect, *, heads: bool = False) -> str:
    """The CTE ``s``: the whole sessions, then the edge ones, with ``columns``; with ``heads``, also whether each is
    its user's head (``query/chains.py``; an edge session never is)."""
    whole, edge = (f"{columns}, head", f"{columns}, false") if heads else (columns, columns)
    return d.cte("s", f"SELECT {whole} FROM whole UNION ALL SELECT {edge} FROM edge", materialized=False)


def build_overview_events_query(scope: Scope, d: Dialect) -> Query:
    """``build_overview_query`` grouping every in-window event into sessions."""
    p = Params()
    start = opening(scope, d, p, rows_needed=False)
    return p.query(f"{start}{_sessions_cte(scope, d, p)}\n{_headline(d, d.split_users)}")


def build_overview_series_query(scope: Scope, bucket: str, d: Dialect) -> Query:
    """Rows per local bucket: sessions (by session start) with their averages, and pageviews/users by event time.

    From the table, a whole session gives its start bucket's session numbers; when all its events fall in that
    bucket (same bucket and same UTC offset at its first and last event, so local time ran straight between them)
    it also gives that bucket its pageviews and distinct users. A whole session crossing a bucket boundary gives
    them from its pageviews per quarter-hour where it can (``_by_quarters``). The events of the other qualifying
    sessions (crossing a bucket boundary or the window's edge) are bucketed one by one, as the event route does. The
    distinct users per bucket are counted as distinct (bucket, user) pairs, a plain grouping DuckDB can spill to
    disk: ``count(DISTINCT ...)`` per bucket ran out of the server's memory limit at 100M events. The pairs are
    grouped twice, once with the users that are numbers and once with the other strings (``Dialect.user_number``):
    at 100M events that is 4.3 -> 3.2 s, where one grouping of both columns ran out of the 1 GB limit.

    The query's narrowing first asks the table when those crossing sessions were active (``crossing_spans``), so
    their events are then looked for in those spans of time only: the blocks of ``events`` outside them are
    skipped (its SQL at 100M events 3.4 -> 2.3 s; at 10M the same).

    On ClickHouse, whose table is merged at read time, the whole sessions not inside one bucket are found by their
    ids (no ``rowid``), and the users per bucket are counted as distinct aggregates.
    """
    if not facts_answer(scope, d, shared_columns=True):
        return build_overview_series_events_query(scope, bucket, d)
    if d.merged_sessions:
        # A table merged at read time is read for large windows only: on chdb copies of the bench files, merged into
        # one part, the daily series took 8.4 s from the table against 16.8 s grouping 100M events (Asia/Kolkata: 9.1
        # against 15.8 s), but 831 against 786 ms at 10M. The crossing sessions' spans are not asked for first: that
        # would merge the table once more.
        events = partial(build_overview_series_events_query, scope, bucket, d)
        facts = lambda dd: _series_from_facts(scope, bucket, dd, None)  # noqa: E731
        return facts_where_cheaper(scope, facts, events, d, when_merged=False)
    query = _series_from_facts(scope, bucket, d, None)
    if constant_offset(scope.window) is None:
        # Finding the crossing sessions would test every session's offsets once more: narrowed, the daily series
        # of 10M events over New York's change of offset took 267-283 ms against 238.
        return query
    p = Params()
    start_bucket, one_bucket = _bucketing(scope, bucket, d, p)
    split = f"NOT ({one_bucket})"
    if _by_quarters(scope, bucket, d):
        split += f" AND NOT ({_BY_QUARTERS})"
    spans = p.query(crossing_spans(scope, split, start_bucket, p))
    return replace(
        query,
        narrowing=Narrowing(spans, lambda rows: _series_from_facts(scope, bucket, d, merge_spans(rows, scope.window))),
    )


def _by_quarters(scope: Scope, bucket: str, d: Dialect) -> bool:
    """Whether the series buckets the whole sessions of ``_BY_QUARTERS`` that cross a bucket boundary by their
    quarter-hours: where the table keeps them and every bucket starts on a UTC quarter-hour."""
    return d.quarter_hours and bucket in _QUARTER_BUCKETS and quarter_hours_align(scope.window)


def _bucketing(scope: Scope, bucket: str, d: Dialect, p: Params) -> tuple[str, str]:
    """``(start bucket, inside one bucket)`` of a ``sessions`` row, as expressions."""
    first_local = local_time("first_seen", scope.window, d, p)
    last_local = local_time("last_seen", scope.window, d, p)
    one_bucket = d.same_bucket(first_local, last_local, bucket)
    if constant_offset(scope.window) is None:
        # The offset may change inside the window: a session whose first and last events carry different offsets
        # is bucketed event by event (so only when needed). The offsets are compared as the integers they are
        # picked from, not as differences of times: the daily series of 10M events over New York's change of
        # offset, 293 -> 235 ms.
        first_offset = utc_offset_ms("first_seen", scope.window, p)
        if first_offset is None:  # an unbounded window: the engine's own zone conversion, no offsets to compare
            first_shift = f"{d.epoch_us(first_local)} - {d.epoch_us('first_seen')}"
            one_bucket += f" AND {first_shift} = {d.epoch_us(last_local)} - {d.epoch_us('last_seen')}"
        else:
            one_bucket += f" AND {first_offset} = {utc_offset_ms('last_seen', scope.window, p)}"
    return d.bucket(first_local, bucket), one_bucket


def _series_from_facts(scope: Scope, bucket: str, d: Dialect, spans: Sequence[Span] | None) -> Query:
    """``build_overview_series_query``; with ``spans``, the crossing sessions' events are looked for in them only."""
    p = Params()
    start_bucket, one_bucket = _bucketing(scope, bucket, d, p)
    whole_extra = f", users, users_count, {start_bucket} AS start_bucket, {one_bucket} AS one_bucket"
    if d.row_ids:
        whole_extra += ", rowid AS session_row"
    # The users of the sessions of one user inside one bucket counted along their chains (``query/chains.py``):
    # a session is its user's first in its bucket when its previous one started before the bucket (or the
    # window). Local times then run straight (one offset all window long), so a bucket is one span of UTC time.
    chained = chains_answer(scope, d) and constant_offset(scope.window) is not None
    if chained:
        head = chain_head("prev_first_seen", "first_seen", scope.window, p)
        before_bucket = f"{local_time('prev_first_seen', scope.window, d, p)} < {start_bucket}"
        whole_extra += f", prev_first_seen AS prev, ({head} OR {before_bucket}) AS head"
    # The whole sessions whose events are bucketed one by one: those not inside one bucket, unless their
    # quarter-hours give their buckets (``_by_quarters``: in Asia/Kolkata at 100M events, 44,304 sessions whose
    # 403,786 events took about a fifth of the daily series' CPU; its SQL, narrowing included, 5,830 -> 5,170 ms).
    quarters = _by_quarters(scope, bucket, d)
    crossing = "NOT one_bucket"
    if quarters:
        crossing += f" AND NOT ({_BY_QUARTERS})"
        whole_extra += ", quarter_hours"
    ctes = _facts_ctes(scope, d, p, whole_extra)
    session_bucket = d.bucket(local_time("session_start", scope.window, d, p), bucket)
    event_bucket = d.bucket(local_time("timestamp", scope.window, d, p), bucket)
    window = window_condition(scope.site_ids, scope.window, p, d)
    # The whole sessions not inside one bucket are found by their times alone and their ids read by ``rowid``: the
    # ids of every whole session are not read (the series at 10M events 237 -> 215 ms, at 100M 2.14 -> 1.98 s).
    split = f"SELECT session_id FROM whole WHERE {crossing} UNION ALL SELECT session_id FROM edge"
    if d.row_ids:
        split = (
            f"SELECT session_id FROM sessions WHERE rowid IN (SELECT session_row FROM whole WHERE {crossing}) "
            "UNION ALL SELECT session_id FROM edge"
        )
    # The events of the sessions not inside one bucket, bucketed one by one (few: kept for the two uses below). They
    # are found by their ids alone, then read by ``rowid``: the other columns of every in-window row are not read
    # (the series at 10M events 306 -> 271-285 ms). Both scans keep to the spans, when known.
    within = "" if spans is None else f"({spans_condition('timestamp', spans, p)}) AND "
    found = f"{within}{window} AND session_id IN ({split})"
    if d.row_ids:
        found = f"{within}rowid IN (SELECT rowid FROM events WHERE {found})"
    split_events = (
        f"SELECT {event_bucket} AS bucket, CASE WHEN type = 'pageview' THEN 1 ELSE 0 END AS pv, {EFFECTIVE_USER} AS u "
        f"FROM events WHERE {found}"
    )
    # Each (bucket, user) pair with the user as a number or another string (``Dialect.user_number``): the events
    # bucketed one by one and the sessions in one bucket with several users give strings (``bu``), the others their
    # columns. Where each read of ``whole`` merges the table again (``Dialect.merged_sessions``, no seal read), all the
    # sessions in one bucket give strings from their lists, in one read: a session of one user lists just the user
    # its columns hold. On chdb copies of the bench files the daily series from the table took 2,533 -> 1,965 ms at
    # 10M events, 22.3 -> 16.9 s at 100M (``bench/analysis.md``). Read from a seal, ``whole`` is mostly the sealed
    # rows, read again without a merge, and the columns win: its SQL 738 -> 688 ms at 10M, 6.2 -> 5.9 s at 100M.
    users = f"SELECT bucket, {d.user_number('u')} AS unum, {d.user_text('u')} AS utext FROM bu"
    listed = "one_bucket"
    if chained:
        # The heads' sessions count apart; the unknown ones among them are looked up with the other pairs.
        users += f" UNION ALL SELECT start_bucket, unum, utext FROM whole WHERE {_ONE_USER} AND prev IS NULL"
        listed += " AND users_count <> 1"
    elif not d.merged_sessions or d.sealed is not None:
        users += f" UNION ALL SELECT start_bucket, unum, utext FROM whole WHERE {_ONE_USER}"
        listed += " AND users_count <> 1"
    # The sessions bucketed by their quarter-hours: each quarter-hour's pageviews, and its bucket with the user.
    by_quarters, quarter_pageviews = "", ""
    if quarters:
        quarter_bucket = d.bucket(local_time(quarter_hour_start("qh.q"), scope.window, d, p), bucket)
        rows = (
            f"SELECT {quarter_bucket} AS bucket, qh.pageviews AS pv, unum, utext FROM (SELECT unum, utext, "
            f"unnest(quarter_hours) AS qh FROM whole WHERE NOT one_bucket AND {_BY_QUARTERS}) AS c"
        )
        by_quarters = f"{d.cte('sq', rows, materialized=True)},\n"
        quarter_pageviews = " UNION ALL SELECT bucket, pv FROM sq"
        users += " UNION ALL SELECT bucket, unum, utext FROM sq"
    # The whole sessions are grouped once by start bucket, for their session numbers (as sums, with the edge
    # sessions' added before the averages are taken) and for the pageviews of those inside one bucket: one pass
    # over the table instead of two (at 100M events 3,676 -> 3,328 ms, at 10M 271 -> 241 ms).
    # With chains, the same pass counts each bucket's heads. Kept, a row per bucket: ClickHouse would read and
    # group the whole sessions again at each reference (the daily series' SQL on the 10M copy 491 -> 455 ms).
    per_start = (
        "SELECT start_bucket AS bucket, count(*) AS n, sum(pageviews) AS pv, "
        "count(*) FILTER (WHERE pageviews = 1) AS bounces, sum(duration) AS dur, "
        "sum(pageviews) FILTER (WHERE one_bucket) AS pv_one"
        + (f", count(*) FILTER (WHERE {_ONE_USER} AND head) AS heads" if chained else "")
        + " FROM whole GROUP BY 1"
    )
    edge_sums = f"SELECT {session_bucket}, 1, pageviews, CASE WHEN pageviews = 1 THEN 1 ELSE 0 END, duration FROM edge"
    bv = """bv AS (SELECT bucket, sum(n) AS users FROM (
         SELECT bucket, count(*) AS n FROM (SELECT DISTINCT bucket, unum FROM bt WHERE unum IS NOT NULL) AS dn
         GROUP BY 1
         UNION ALL
         SELECT bucket, count(*) AS n FROM (SELECT DISTINCT bucket, utext FROM bt WHERE utext IS NOT NULL) AS dt
         GROUP BY 1) AS d GROUP BY 1)"""
    if d.distinct_aggregates:
        # ClickHouse: the pairs' two groupings took 1,484 ms at 10M events, counted per bucket 442 ms.
        bv = "bv AS (SELECT bucket, count(DISTINCT unum) + count(DISTINCT utext) AS users FROM bt GROUP BY 1)"
    if chained:
        # The users of the other sessions starting in a bucket, as the table keeps them (their first event's
        # bucket may hold none of theirs): those of the whole sessions not counted by their heads, and of the
        # sessions crossing the window's end.
        ends = f"SELECT start_bucket AS bucket, unum, utext FROM whole WHERE NOT ({_ONE_USER})"
        ending = ending_sessions(scope, f"{start_bucket} AS bucket, user_number AS unum, user_text AS utext", d, p)
        if ending:
            ends += f" UNION ALL {ending}"
        heads = "SELECT start_bucket AS bucket, unum, utext, prev, head FROM whole WHERE " + _ONE_USER
        looked_up, counted = chain_users(
            "heads", "SELECT * FROM bt", ends, d, group="bucket", heads="SELECT bucket, heads AS n FROM sw"
        )
        bv = f"{d.cte('heads', heads, materialized=False)},\n{looked_up},\nbv AS ({counted})"
    sql = f"""WITH {ctes},
{d.cte("sw", per_start, materialized=True)},
sb AS (SELECT bucket, sum(n) AS sessions, sum(pv) / sum(n) AS pages_per_session,
         100.0 * sum(bounces) / sum(n) AS bounce_rate, sum(dur) / sum(n) AS session_duration
       FROM (SELECT bucket, n, pv, bounces, dur FROM sw UNION ALL {edge_sums}) AS u GROUP BY 1),
{d.cte("ev", split_events, materialized=True)},
{by_quarters}bp AS (SELECT bucket, sum(pv) AS pageviews FROM (SELECT bucket, pv FROM ev
       UNION ALL SELECT bucket, pv_one FROM sw WHERE pv_one IS NOT NULL{quarter_pageviews}) AS t GROUP BY 1),
bu AS (SELECT bucket, u FROM ev
       UNION ALL SELECT start_bucket, {d.unnest_strings("users")} FROM whole WHERE {listed}),
{d.cte("bt", users, materialized=False)},
{bv},
eb AS (SELECT bp.bucket, bp.pageviews, coalesce(bv.users, 0) AS users FROM bp LEFT JOIN bv ON bv.bucket = bp.bucket)
{_JOIN_BUCKETS}"""
    return p.query(sql)


def build_overview_series_events_query(scope: Scope, bucket: str, d: Dialect) -> Query:
    """``build_overview_series_query`` grouping every in-window event into sessions."""
    p = Params()
    start = opening(scope, d, p, rows_needed=False)
    session_bucket = d.bucket(local_time("session_start", scope.window, d, p), bucket)
    event_bucket = d.bucket(local_time("timestamp", scope.window, d, p), bucket)
    # The sessions' users are not needed here (the users per bucket come from the events), and ``s`` is kept only
    # when read twice: ClickHouse, which stores a CTE it is told to, held the 24M sessions of 100M events for one use.
    sessions = d.cte(
        "s", session_groups(scope, _session_columns(d), d, p), materialized=True if scope.session_filters else None
    )
    # The events of the sessions already qualified in ``s``: no second qualification pass.
    rows = qualified_rows(scope, p, d)
    if scope.session_filters:
        rows += " AND session_id IN (SELECT session_id FROM s)"
    users = f"count(DISTINCT {EFFECTIVE_USER})"
    if d.split_users:
        users = f"count(DISTINCT {d.user_number(EFFECTIVE_USER)}) + count(DISTINCT {d.user_text(EFFECTIVE_USER)})"
    sql = f"""{start}{sessions},
sb AS (SELECT {session_bucket} AS bucket, {_SESSION_AVERAGES} FROM s GROUP BY 1),
eb AS (SELECT {event_bucket} AS bucket, count(*) FILTER (WHERE type = 'pageview') AS pageviews, {users} AS users
       {rows} GROUP BY 1)
{_JOIN_BUCKETS}"""
    return p.query(sql)


def previous_window(window: Window) -> Window:
    """The window of the same length just before ``window`` (400 for all time, which has no previous period)."""
    if window.start is None or window.end is None:
        raise InvalidRequestError.for_field("compare", "needs a time window (start_date/end_date, ...)")
    if window.mode == "date":
        zone = window.zone
        local_start, local_end = to_local(window.start, zone), to_local(window.end, zone)
        # Whole local days covered (a range ending today covers its last day up to the end of the current minute, and
        # the previous one as far into its own last day).
        days = timedelta(days=((local_end - timedelta(microseconds=1)).date() - local_start.date()).days + 1)
        return replace(window, start=to_utc(local_start - days, zone), end=to_utc(local_end - days, zone))
    length = window.end - window.start
    return replace(window, start=window.start - length, end=window.start)
