"""Funnels: how many sessions complete each step, each step strictly after the previous one.

Session-based and greedy (peer-read section 10): step 1 is a session's earliest matching event; step
k+1 its earliest matching event strictly later than step k's. Step conditions are goal conditions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from api_backend.query.dialect import Dialect, FunnelForm
from api_backend.query.facts import qualifying_from_table
from api_backend.query.goals import goal_condition
from api_backend.query.scope import Scope, scope_ctes
from api_backend.query.sql import Params, Query

__all__ = ["build_funnel_query", "step_goal"]


def step_goal(step: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The goal type and config equivalent to a funnel step."""
    kind, value = step["type"], step["value"]
    if kind == "page":
        return "path", {"pathPattern": value}
    config: dict[str, Any] = {}
    if step.get("eventPropertyKey") is not None:
        config["eventPropertyKey"], config["eventPropertyValue"] = step["eventPropertyKey"], step["eventPropertyValue"]
    if step.get("propertyFilters"):
        config["propertyFilters"] = step["propertyFilters"]
    if kind == "event":
        return "event", {"eventName": value, **config}
    return kind, {"valuePattern": value, **config}


def build_funnel_query(scope: Scope, steps: Sequence[Mapping[str, Any]], d: Dialect) -> Query:
    """One row: ``s1 .. sN`` = sessions that reached each step.

    The engine's form (``Dialect.funnel_form``) finds each session's steps among the rows matching one: 11.9M of
    them at 100M events. They are joined, step by step, to the sessions that reached the step before
    (``_reached_by_joins``), or grouped once by session with an aggregate following the steps in order
    (``_reached_by_levels``). Both give the same counts (``tests/store/test_funnel_forms.py``).
    """
    p = Params()
    conditions = []
    for step in steps:
        goal_type, config = step_goal(step)
        conditions.append(goal_condition(goal_type, config, d, p, hostname=step.get("hostname") or None))
    ctes, counts = _FORMS[d.funnel_form](conditions, d)
    return p.query(f"{scope_ctes(scope, d, p, qualifying=qualifying_from_table)},\n" + ",\n".join(ctes) + f"\n{counts}")


def _reached_by_joins(conditions: Sequence[str], d: Dialect) -> tuple[list[str], str]:
    """``(CTEs, SELECT of the counts)``: the matching rows kept once, the first step's grouped by session, and each
    later step's joined to the sessions of the step before, after their time."""
    flags = ", ".join(f"{c} AS m{i}" for i, c in enumerate(conditions, 1))
    matching = (
        f"SELECT {d.session_number('session_id')} AS sid, timestamp, {flags} FROM fe WHERE {' OR '.join(conditions)}"
    )
    parts = [
        d.cte("m", matching, materialized=True),
        "s1 AS (SELECT sid, min(timestamp) AS t FROM m WHERE m1 GROUP BY sid)",
    ]
    for i in range(2, len(conditions) + 1):
        parts.append(
            f"s{i} AS (SELECT m.sid, min(m.timestamp) AS t FROM m JOIN s{i - 1} AS prev "
            f"ON m.sid = prev.sid AND m.timestamp > prev.t WHERE m.m{i} GROUP BY m.sid)"
        )
    counts = ", ".join(f"(SELECT count(*) FROM s{i}) AS s{i}" for i in range(1, len(conditions) + 1))
    return parts, f"SELECT {counts}"


def _reached_by_levels(conditions: Sequence[str], d: Dialect) -> tuple[list[str], str]:
    """``(CTEs, SELECT of the counts)`` from one grouping of the matching rows: each session's level is how many
    steps it went through in order (``Dialect.step_level``), and a session reached step k when its level is k or
    more. A row meeting several steps' conditions comes once per step (``Dialect.step_rows``).

    Reaching step k at the earliest matching rows, as the joins do, and going through steps 1 to k at any rows in
    strictly increasing time are the same: a session that goes through them at some rows reaches each step no later
    than at those rows."""
    matching = (
        f"SELECT session_id, timestamp, {d.step_rows(conditions)} AS step FROM fe WHERE {' OR '.join(conditions)}"
    )
    level = d.step_level("timestamp", "step", len(conditions))
    levels = f"SELECT {level} AS level FROM ({matching}) AS m GROUP BY session_id"
    counts = ", ".join(f"count(*) FILTER (WHERE level >= {i}) AS s{i}" for i in range(1, len(conditions) + 1))
    return [f"levels AS ({levels})"], f"SELECT {counts} FROM levels"


_FORMS: dict[FunnelForm, Callable[[Sequence[str], Dialect], tuple[list[str], str]]] = {
    "joins": _reached_by_joins,
    "levels": _reached_by_levels,
}
