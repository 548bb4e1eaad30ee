"""Funnels: how many sessions complete each step, each step strictly after the previous one.

Session-based and greedy (peer-read section 10): step 1 is a session's earliest matching event; step
k+1 its earliest matching event strictly later than step k's. Step conditions are goal conditions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from api_backend.query.dialect import Dialect
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

    The rows matching a step carry a number for their session (``Dialect.session_number``), not the id: at 100M
    events they are 11.9M. Where the engine takes lists as cheaply as joins (``Dialect.funnel_lists``), one grouping
    of them gives each session's steps (``_reached_by_lists``); otherwise each step's rows are joined to the
    sessions that reached the step before (``_reached_by_joins``).
    """
    p = Params()
    conditions = []
    for step in steps:
        goal_type, config = step_goal(step)
        conditions.append(goal_condition(goal_type, config, d, p, hostname=step.get("hostname") or None))
    ctes, counts = (_reached_by_lists if d.funnel_lists else _reached_by_joins)(conditions, d)
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


def _reached_by_lists(conditions: Sequence[str], d: Dialect) -> tuple[list[str], str]:
    """``(CTEs, SELECT of the counts)`` from one grouping of the matching rows: each session's earliest step-1 time
    and, for every later step, the list of its matching times; step k's time is the least of step k's times after
    step k-1's, NULL when none is (the session stopped before step k)."""
    first = conditions[0]
    lists = "".join(f", {d.list_of('timestamp', c)} AS a{i}" for i, c in enumerate(conditions[1:], 2))
    reached = (
        f"SELECT min(timestamp) FILTER (WHERE {first}) AS t1{lists} FROM fe WHERE {' OR '.join(conditions)} "
        f"GROUP BY {d.session_number('session_id')} HAVING count(*) FILTER (WHERE {first}) > 0"
    )
    for i in range(2, len(conditions) + 1):
        step = d.list_min(f"a{i}", "later", f"later > t{i - 1}")
        reached = f"SELECT *, {step} AS t{i} FROM ({reached}) AS r{i - 1}"
    counts = ", ".join(f"count(t{i}) AS s{i}" for i in range(1, len(conditions) + 1))
    return [f"reached AS ({reached})"], f"SELECT {counts} FROM reached"
