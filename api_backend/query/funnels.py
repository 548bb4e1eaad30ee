"""Funnels: how many sessions complete each step, each step strictly after the previous one.

Session-based and greedy (peer-read section 10): step 1 is a session's earliest matching event; step
k+1 its earliest matching event strictly later than step k's. Step conditions are goal conditions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from api_backend.query.dialect import Dialect
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
    """One row: ``s1 .. sN`` = sessions that reached each step."""
    p = Params()
    ctes = scope_ctes(scope, d, p)
    conditions = []
    for step in steps:
        goal_type, config = step_goal(step)
        conditions.append(goal_condition(goal_type, config, d, p, hostname=step.get("hostname") or None))
    flags = ", ".join(f"{c} AS m{i}" for i, c in enumerate(conditions, 1))
    # The matching rows carry a number for their session (``Dialect.session_number``), not the id: at 100M events
    # they are 11.9M rows, grouped and joined three times.
    sid = d.session_number("session_id")
    matching = f"SELECT {sid} AS sid, timestamp, {flags} FROM fe WHERE {' OR '.join(conditions)}"
    parts = [
        d.cte("m", matching, materialized=True),
        "s1 AS (SELECT sid, min(timestamp) AS t FROM m WHERE m1 GROUP BY sid)",
    ]
    for i in range(2, len(steps) + 1):
        parts.append(
            f"s{i} AS (SELECT m.sid, min(m.timestamp) AS t FROM m JOIN s{i - 1} AS prev "
            f"ON m.sid = prev.sid AND m.timestamp > prev.t WHERE m.m{i} GROUP BY m.sid)"
        )
    counts = ", ".join(f"(SELECT count(*) FROM s{i}) AS s{i}" for i in range(1, len(steps) + 1))
    sql = f"{ctes},\n" + ",\n".join(parts) + f"\nSELECT {counts}"
    return p.query(sql)
