"""Distinct users counted along their chains of sessions, without grouping every session's user.

The ``sessions`` table keeps, for each session, the start of the session before it in its user's *chain*: the site's
sessions with the same user, ordered by ``(first_seen, session_id)`` (``prev_first_seen``, ``store/sessions.py``).
Among the sessions starting at or after a time ``lo``, exactly one per user has its previous session before ``lo``
(or none): the first one. So counting the users of a set ``P`` of whole sessions starting at or after ``lo`` is
counting those whose previous session is before it (the *heads*), a filtered count over columns a read scans anyway,
where grouping 25M session users took 95% of the overview's time at 100M events.

That is exact where each user's first session at or after ``lo`` lies in ``P``. The others are few, and looked up:

- ``X``, the users the rest of the read counts one by one: those of the edge sessions (over their in-window events),
  of the whole sessions whose previous session is not known yet, and of whatever else the read adds (the time
  series' sessions crossing a bucket);
- ``Y``, the users (as the table keeps them) of the sessions that start at or after ``lo`` but are not in ``P``: for
  the overview, those crossing the window's end.

A user of ``P`` whose first session at or after ``lo`` is not in ``P`` is in ``Y`` (that session starts in the same
span), so the distinct users of ``P`` and ``X`` are the heads plus the users of ``X``, and of ``Y`` with a session in
``P``, that are not heads. Only those few users' sessions of ``P`` are grouped. A user is a number or a string
(``Dialect.user_number``), never both, so each form is counted on its own.

A chain holds every session of its user, so the count needs every session of the site to qualify: a read with a
session filter, or over several sites (whose users may be the same strings), groups the users as before.
"""

from __future__ import annotations

from api_backend.query.dialect import Dialect
from api_backend.query.scope import Scope
from api_backend.query.sql import Params
from api_backend.query.window import Window

__all__ = ["chain_head", "chains_answer", "chain_users"]

# The two forms of a user (``Dialect.user_number``) as the sessions read name them.
_FORMS = ("unum", "utext")


def chains_answer(scope: Scope, d: Dialect) -> bool:
    """Whether the users of ``scope`` can be counted along chains: a store keeping them, one site, no session
    filter (a row filter sends the read to the events anyway)."""
    return d.user_chains and len(scope.site_ids) == 1 and not scope.filters


def chain_head(prev: str, first: str, window: Window, p: Params) -> str:
    """SQL: a session starting at ``first`` whose previous session starts at ``prev`` is the first of its user in
    ``window`` (given that it starts in it): the previous one starts before the window, or there is none (``prev``
    after ``first``, as the table marks a user's first session). NULL while ``prev`` is unknown."""
    first_of_user = f"{prev} > {first}"
    if window.start is None:
        return first_of_user
    return f"({prev} {'<' if window.include_start else '<='} {p.add(window.start)} OR {first_of_user})"


def chain_users(
    whole: str, others: str, ends: str | None, d: Dialect, *, group: str | None = None, heads: str | None = None
) -> tuple[str, str]:
    """``(CTEs, count)``: the distinct users of the whole sessions ``whole`` and of the users ``others`` (``X``),
    less the heads of ``whole``, which the read counts in a pass it makes anyway (``count(*) FILTER (WHERE head)``).

    ``whole`` is a CTE with ``unum``, ``utext``, ``prev`` (NULL while unknown) and ``head`` (``chain_head``, or
    whatever tells a session the first of its user in its span); a session whose ``prev`` is NULL counts through
    ``others`` instead, which must name it. ``others`` is a ``SELECT`` of ``unum, utext``; ``ends`` one of the users
    of the sessions starting in the span but missing from ``whole`` (``Y``), or None when there are none.

    With ``group``, a column of all three naming the span (the time series' bucket): ``count`` is then a ``SELECT
    group, users`` adding the heads of ``heads`` (a ``SELECT group, n``); without, one SQL value.

    The few users looked up are matched to ``whole`` by a list, each form on its own, whose size the engine then
    knows (DuckDB took a subquery's rows for a fifth of the sessions and built its hash table from the 25M sessions
    instead: 2.7 s at 100M events).
    """
    key = f"{group}, " if group else ""
    by = f" GROUP BY {group}" if group else ""
    # ``X`` and ``Y`` are few, and each is read four times: kept.
    ctes = [d.cte("chain_x", others, materialized=True)]
    if ends:
        ctes.append(d.cte("chain_y", ends, materialized=True))
    counts = [heads] if heads else []
    for form in _FORMS:
        looked_up = f"x_{form}"
        listed = f"SELECT DISTINCT {key}{form} FROM chain_x AS x WHERE {form} IS NOT NULL"
        ending = f"SELECT {key}{form} FROM chain_y AS y WHERE {form} IS NOT NULL" if ends else None
        ctes.append(d.cte(looked_up, listed + (f" UNION {ending}" if ending else ""), materialized=True))
        # The sessions of ``whole`` of those users: whether one of them is a head, per span.
        ctes.append(
            d.cte(
                f"seen_{form}",
                f"SELECT {key}{form}, {d.bool_or('head')} AS head FROM {whole} WHERE prev IS NOT NULL "
                f"{_only(form)}AND {form} IN ({d.few_rows(form, looked_up)}) GROUP BY {key}{form}",
                materialized=True,
            )
        )
        # ``X`` whole, ``Y`` where a session of ``whole`` has the user; less the heads.
        if ending:
            listed += f" UNION {ending} AND {_pair_in(key, form, f'seen_{form}', 'y')}"
        counts.append(
            f"SELECT {key}count(*) AS n FROM ({listed}) AS z "
            f"WHERE NOT {_pair_in(key, form, f'seen_{form}', 'z', 'head')}{by}"
        )
    if group:
        union = " UNION ALL ".join(counts)
        return ",\n".join(ctes), f"SELECT {group}, sum(n) AS users FROM ({union}) AS c GROUP BY {group}"
    return ",\n".join(ctes), " + ".join(f"coalesce(({count}), 0)" for count in counts)


def _only(form: str) -> str:
    """SQL: ``AND`` the user has this form, tested on the other's NULLs where that is the cheaper read (a string
    user's: its strings are read only for the sessions holding one)."""
    return "AND unum IS NULL " if form == "utext" else ""


def _pair_in(key: str, form: str, seen: str, alias: str, where: str | None = None) -> str:
    """SQL: the row ``alias`` has a row of ``seen`` for its user (and span), where ``where`` holds in it (a tuple
    ``IN``, which both engines take without correlating the lookup)."""
    columns = [c.strip() for c in key.split(",") if c.strip()] + [form]
    tail = f" WHERE {where}" if where else ""
    listed = ", ".join(f"{alias}.{c}" for c in columns)
    return f"({listed}) IN (SELECT {', '.join(columns)} FROM {seen}{tail})"
