"""A window's distinct users from a ClickHouse store's ``sealed_users``, without grouping every session's user.

A *build* of ``sealed_users`` holds one row per user of a generation's rows sealed up to a seal, with the first and
last times of each of those sessions (``store/clickhouse_schema.py``). The users with a whole session among them are
the build's rows with a pair of times inside the window (``A``): a filtered count, where grouping the 26M sealed
sessions' users took 1.7 of the overview's 2.2 s at 100M events.

The read counts the users of its other sessions one by one (``X``): those of the edge sessions (over their in-window
events), of the sessions the seal left open, and of the whole sessions sealed after the build (a seal builds again
once those pass 1% of the generation's rows). ``A`` already counts a user of ``X`` that has a whole session in the
build, so the distinct users are ``A`` plus the users of ``X`` not among those: a lookup of the users of ``X`` by the
build's key.

A session of the build that got events since (a clock set back) is not among the whole sealed sessions (the read
takes it from ``sessions``), but its times are still in the build under the user it was sealed with, which may not be
its user now. So the users of those rows (``R``, read from the sealed rows as they are) are looked up too: a user of
``R`` counts from the build only where it has more pairs inside the window than ``R`` has rows. The seal after drops
those rows, and its generation's builds with them, and builds again.

A user is a number or another string (``Dialect.user_number``), as the build's key holds it (``USER_FORMS``). Only
for one site and no filter (a build holds every sealed session), and for a window of ``USER_ROWS_MIN_EVENTS`` or
more (``query/facts.py``): below it grouping the users costs less.
"""

from __future__ import annotations

from api_backend.query.dialect import Dialect
from api_backend.query.facts import inside_window, whole_sessions
from api_backend.query.scope import Scope
from api_backend.query.sql import Params

__all__ = ["USER_FORMS", "user_rows_answer", "user_rows_count"]

# A user as the build's key holds it, from the nullable ``user_number`` and ``user_text`` of ``{t}``: ``user_form``
# 1 for a number, 2 for another string, each with the other column empty.
USER_FORMS = (
    "if(isNull({t}.user_number), 2, 1) AS user_form, ifNull({t}.user_number, 0) AS user_number, "
    "ifNull({t}.user_text, '') AS user_text"
)
_KEY = "user_form, user_number, user_text"


def user_rows_answer(scope: Scope, d: Dialect) -> bool:
    """Whether the users of ``scope`` can be counted from ``sealed_users``: a read bound to a seal whose generation
    has a build, of one site, without a filter."""
    return d.sealed is not None and d.sealed.users_seal > 0 and len(scope.site_ids) == 1 and not scope.filters


def user_rows_count(scope: Scope, others: str, d: Dialect, p: Params) -> tuple[str, str]:
    """``(CTEs, count)``: the distinct users of the whole sealed sessions of ``scope`` and of ``others`` (a ``SELECT
    user_number, user_text`` of the users of the edge sessions and the open ones), for a read where
    ``user_rows_answer`` holds."""
    assert d.sealed is not None
    site, seal = p.add(scope.site_ids[0]), p.add(d.sealed.users_seal)
    inside = f"(f, l) -> {inside_window('f', 'l', scope.window, p)}"
    built = f"sealed_users WHERE seal = {seal} AND site_id = {site}"
    later = whole_sessions(scope, "user_number, user_text", d, p, part="sealed", seals=f"seal > {seal}")
    reopened = whole_sessions(scope, "user_number, user_text", d, p, part="reopened", seals=f"seal <= {seal}")
    has_user = "WHERE isNotNull({t}.user_number) OR isNotNull({t}.user_text)"
    looked_up = " UNION ALL ".join(
        f"SELECT {USER_FORMS.format(t=alias)}, {from_x} AS from_x FROM ({rows}) AS {alias} {has_user.format(t=alias)}"
        for rows, alias, from_x in ((others, "o", 1), (later, "n", 1), (reopened, "r", 0))
    )
    # Each user of ``X`` and ``R``: whether ``X`` has it, and how many of ``R``'s rows are its.
    ctes = d.cte(
        "ur_x",
        f"SELECT {_KEY}, max(from_x) AS counted, countIf(from_x = 0) AS reopened FROM ({looked_up}) AS xr "
        f"GROUP BY {_KEY}",
        materialized=True,
    )
    # A user whose every session is inside the window counts from its first and last times; only one with sessions on
    # both sides has its pairs read.
    every = inside_window("user_first", "user_last", scope.window, p)
    overlapping = inside_window("user_last", "user_first", scope.window, p)
    whole = (
        f"(SELECT count() FROM {built} AND {every}) + (SELECT count() FROM {built} AND NOT ({every}) "
        f"AND {overlapping} AND arrayExists({inside}, firsts, lasts))"
    )
    # What the users of ``X`` and ``R`` add: those to count (``X``'s, and ``R``'s with more pairs inside the window in
    # the build than rows of ``R``), less those ``whole`` counted (with such a pair). In one statement: the engine
    # computes a CTE again for each statement reading it (at 100M events, a second took 360 ms more).
    pairs = (
        f"SELECT {_KEY}, arrayCount({inside}, firsts, lasts) AS inside FROM {built} "
        f"AND ({_KEY}) IN (SELECT {_KEY} FROM ur_x)"
    )
    looked = (
        "(SELECT toInt64(countIf(x.counted = 1 OR ifNull(t.inside, 0) > x.reopened)) "
        "- toInt64(countIf(ifNull(t.inside, 0) > 0)) "
        f"FROM ur_x AS x LEFT JOIN ({pairs}) AS t USING ({_KEY}))"
    )
    return ctes, f"{whole} + {looked}"
