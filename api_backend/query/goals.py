"""Goal conditions and the goal queries: the goals list, a goal's sessions, and the per-value breakdown.

Matching rules (peer-read section 5.6):

- ``path``: a pageview whose pathname matches the pattern, anchored and case-sensitive, where
  ``*`` is one or more characters except ``/`` and ``**`` is any characters (possibly none);
- ``event``: a ``custom_event`` with exactly that name; property filters must all hold on that same event
  (numbers compare numerically, booleans as ``true``/``false``, anything else as text);
- ``outbound``, ``button_click``, ``form_submit``, ``copy``: an event of that type whose ``props.url`` /
  ``props.text`` / ``props.formName|formId|formAction`` matches ``valuePattern`` (``*`` = ``.+``, ``**`` = ``.*``;
  blank matches every event of the type).

A session converts when at least one of its in-window events matches; it counts once however often.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from api_backend.query.dialect import Dialect
from api_backend.query.facts import (
    edge_sessions,
    fact_column,
    facts_answer,
    facts_where_cheaper,
    newest_ends,
    pathnames,
    qualifying_from_table,
    seal_left_open,
    whole_sessions,
)
from api_backend.query.filters import (
    SESSION_PARAMETERS,
    Filter,
    compare,
    session_condition,
    session_value,
)
from api_backend.query.metric import keeps_empty_value, session_values_sql
from api_backend.query.paging import Page
from api_backend.query.scope import Scope, opening, session_groups, window_condition
from api_backend.query.sql import Params, Query

__all__ = [
    "BREAKDOWN_PAGE",
    "GOAL_EVENT_TYPES",
    "MASK_BITS",
    "TABLE_BREAKDOWN_PARAMETERS",
    "GoalSpec",
    "build_goal_breakdown_events_query",
    "build_goal_breakdown_query",
    "build_goal_breakdown_stored_query",
    "build_goal_sessions_events_query",
    "build_goal_sessions_query",
    "build_goal_sessions_stored_query",
    "build_goals_events_query",
    "build_goals_listed_query",
    "build_goals_query",
    "build_goals_rollup_query",
    "build_goals_stored_query",
    "build_matching_values_query",
    "goal_condition",
    "goal_definition",
    "goal_mask",
    "path_pattern_regex",
    "value_pattern_regex",
]

# Breakdown values per page by default and at most: every real parameter (channel, country...) fits one page.
BREAKDOWN_PAGE = 1000
FIRST_BREAKDOWN_PAGE = Page(1, BREAKDOWN_PAGE)
# The parameters a breakdown reads whole sessions' values of from the ``sessions`` table: one value per session, or
# the list of its paths.
TABLE_BREAKDOWN_PARAMETERS = SESSION_PARAMETERS | {"pathname"}
# The event types a goal other than a path goal matches (``_type_test``): the rows a store may copy apart for those
# goals to read (``Dialect.goal_rows``).
GOAL_EVENT_TYPES = ("custom_event", "outbound", "button_click", "form_submit", "copy")
_REGEX_SPECIAL = set(".^$+?()[]{}|\\")
_VALUE_FIELDS = {
    "outbound": ("url",),
    "button_click": ("text",),
    "copy": ("text",),
    "form_submit": ("formName", "formId", "formAction"),
}


@dataclass(frozen=True)
class GoalSpec:
    """What a goal matches, independent of how goals are stored."""

    goal_id: int
    goal_type: str
    config: Mapping[str, Any]


def _pattern_regex(pattern: str, single: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append(single if ch == "*" else ("\\" + ch if ch in _REGEX_SPECIAL else ch))
        i += 1
    return "".join(out)


def path_pattern_regex(pattern: str) -> str:
    """The full-match regex of a path pattern: ``*`` = ``[^/]+``, ``**`` = ``.*``, everything else literal."""
    return _pattern_regex(pattern, "[^/]+")


def value_pattern_regex(pattern: str) -> str:
    """The full-match regex of an autocapture value pattern: ``*`` = ``.+``, ``**`` = ``.*``."""
    return _pattern_regex(pattern.strip(), ".+")


def _full_match(expr: str, regex: str, d: Dialect, p: Params) -> str:
    """True when the RE2 ``regex`` matches the whole of ``expr`` (anchored here: both engines then only search)."""
    return d.regex_search(expr, p.add(f"^(?:{regex})$"))


def _property_condition(key: str, value: Any, d: Dialect, p: Params) -> str:
    text = d.json_string("props", key, p)
    if isinstance(value, bool):
        return f"{text} = {p.add('true' if value else 'false')}"
    if isinstance(value, int | float):
        return f"coalesce({d.to_double(text)} = {p.add(float(value))}, false)"
    return f"{text} = {p.add(str(value))}"


def _property_filters(config: Mapping[str, Any]) -> list[tuple[str, Any]]:
    filters = [(f["key"], f["value"]) for f in config.get("propertyFilters") or []]
    if not filters and config.get("eventPropertyKey") and config.get("eventPropertyValue") is not None:
        filters = [(config["eventPropertyKey"], config["eventPropertyValue"])]
    return filters


def _path_match(pattern: str, d: Dialect, p: Params, path: str = "pathname") -> str:
    """True when ``path`` (the event's ``pathname``, or another expression) matches the goal's ``pattern``."""
    # Plain paths and "prefix/**" need no regex engine; the result is the same, only cheaper.
    if "*" not in pattern:
        return f"{path} = {p.add(pattern)}"
    if pattern.endswith("**") and "*" not in pattern[:-2]:
        return d.starts_with(path, p.add(pattern[:-2]))
    if pattern.endswith("*") and "*" not in pattern[:-1]:
        # prefix + one or more characters, none of them "/".
        prefix = pattern[:-1]
        rest = d.substring_after(path, len(prefix))
        return (
            f"({d.starts_with(path, p.add(prefix))} AND {d.length(path)} > {len(prefix)} "
            f"AND NOT {d.contains(rest, p.add('/'))})"
        )
    return _full_match(path, path_pattern_regex(pattern), d, p)


def _listed_path_test(pattern: str, d: Dialect, p: Params) -> str:
    """True when a ``sessions`` row lists a pageview path matching ``pattern`` (the table's ``pathnames``).

    The same test as a path goal's ``goal_condition`` on the session's pageviews, since the list holds exactly
    their distinct paths.
    """
    if "*" not in pattern:
        return d.list_has("pathnames", p.add(pattern))
    return d.list_any("pathnames", "listed", _path_match(pattern, d, p, "listed"))


def _type_test(goal_type: str, p: Params) -> str:
    """The test on ``type`` of the events that can complete a goal of ``goal_type``."""
    if goal_type == "path":
        return "type = 'pageview'"
    if goal_type == "event":
        return "type = 'custom_event'"
    return f"type = {p.add(goal_type)}"


def _goal_rows(goal_type: str, d: Dialect) -> str:
    """The table holding every event a goal of ``goal_type`` can match: ``events`` for a path goal (pageviews), else
    the store's copy of the goal events where it keeps one."""
    return "events" if goal_type == "path" else d.goal_rows


def _goal_tests(
    goal_type: str, config: Mapping[str, Any], d: Dialect, p: Params, hostname: str | None = None
) -> tuple[list[str], list[str]]:
    """``(cheap column tests, costly props tests)`` of one goal besides its type test; see ``goal_condition``."""
    parts: list[str] = []
    costly: list[str] = []
    if goal_type == "path":
        parts.append(_path_match(config["pathPattern"], d, p))
    elif goal_type == "event":
        parts.append(f"event_name = {p.add(config['eventName'])}")
    else:
        pattern = (config.get("valuePattern") or "").strip()
        if pattern:
            regex = value_pattern_regex(pattern)
            fields = [_full_match(d.json_string("props", f, p), regex, d, p) for f in _VALUE_FIELDS[goal_type]]
            costly.append(fields[0] if len(fields) == 1 else "(" + " OR ".join(fields) + ")")
    if goal_type != "path":
        costly += [_property_condition(k, v, d, p) for k, v in _property_filters(config)]
    if hostname:
        parts.append(f"hostname = {p.add(hostname)}")
    return parts, costly


def goal_condition(
    goal_type: str, config: Mapping[str, Any], d: Dialect, p: Params, hostname: str | None = None
) -> str:
    """A per-event SQL condition true for events that complete the goal (or funnel step).

    Tests on ``props`` (JSON parsing, value patterns) sit behind a ``CASE`` on the cheap column tests, so
    they run only on the rows of that event type and name: an engine evaluates both sides of a plain ``AND``
    inside an aggregate's argument, which would parse the JSON of every row of the window.
    """
    type_test = _type_test(goal_type, p)
    parts, costly = _goal_tests(goal_type, config, d, p, hostname)
    cheap = " AND ".join([type_test, *parts])
    if not costly:
        return f"({cheap})"
    # Every costly test is NULL-free (coalesced), so the CASE is exactly ``cheap AND costly``.
    return f"(CASE WHEN {cheap} THEN {' AND '.join(costly)} ELSE false END)"


MASK_BITS = 62  # goals per BIGINT mask: bit values stay below 2**62, far from the sign bit


def goal_mask(goals: Sequence[tuple[int, GoalSpec]], d: Dialect, p: Params) -> str:
    """A per-event BIGINT expression with bit ``b`` set for each ``(b, goal)`` of ``goals`` the event completes.

    The event's type is tested once (one ``CASE`` branch per goal type) instead of once per goal, and a goal's bit
    is a constant added when its tests hold, so the per-session flags become one ``bit_or``. Bits are below
    ``MASK_BITS`` and distinct.
    """
    # One branch per goal type (goals of the same type share it: a CASE takes only its first true branch).
    branches: dict[str, tuple[str, list[str]]] = {}
    for bit, g in goals:
        if g.goal_type not in branches:
            branches[g.goal_type] = (_type_test(g.goal_type, p), [])
        parts, costly = _goal_tests(g.goal_type, g.config, d, p)
        value = f"CASE WHEN {' AND '.join(costly)} THEN {1 << bit} ELSE 0 END" if costly else str(1 << bit)
        term = f"CASE WHEN {' AND '.join(parts)} THEN {value} ELSE 0 END" if parts else value
        branches[g.goal_type][1].append(f"({term})")
    if not branches:
        return "0"
    cases = " ".join(f"WHEN {test} THEN {' + '.join(terms)}" for test, terms in branches.values())
    return f"CASE {cases} ELSE 0 END"


def _goal_masks(goals: Sequence[GoalSpec], d: Dialect, p: Params) -> list[str]:
    """Per-event masks (``goal_mask``) whose bit ``i % 62`` of mask ``i // 62`` is set when the event completes goal
    ``i``."""
    return [
        goal_mask(list(enumerate(goals[first : first + MASK_BITS])), d, p) for first in range(0, len(goals), MASK_BITS)
    ]


def _mask_counts(goals: Iterable[int], d: Dialect, sessions: str = "count(*)", masks: str = "m") -> str:
    """``, count(*) FILTER (...) AS g0, ...``: for each goal index of ``goals``, the sessions whose masks (the columns
    ``<masks>0, <masks>1, ...``, from ``_goal_masks``) have its bit.

    ``sessions`` is the aggregate counting them: ``count(*)`` over one row per session, or a sum of a count
    column over rows that each stand for several sessions with the same masks (0, not NULL, over no rows).
    """
    return "".join(f", coalesce({sessions} FILTER (WHERE {_has_goal_bit(i, masks, d)}), 0) AS g{i}" for i in goals)


def _has_goal_bit(i: int, masks: str, d: Dialect) -> str:
    """True when goal ``i``'s bit is set in the columns ``<masks>0, <masks>1, ...`` (NULL counts as none)."""
    return f"{d.bit_and(f'coalesce({masks}{i // MASK_BITS}, 0)', str(1 << (i % MASK_BITS)))} <> 0"


def build_goals_query(scope: Scope, goals: Sequence[GoalSpec], d: Dialect) -> Query:
    """One row: ``sessions`` then ``g0, g1, ...`` = converted sessions of each goal, in ``goals`` order.

    On a ``sessions`` table merged at read time, the whole sessions come from it where that costs less
    (``build_goals_listed_query``; ``facts.facts_where_cheaper``): on merged chdb copies of the bench files, with the
    ten bench goals and their matching events from the store's copy of them (``Dialect.goal_rows``), 892 against
    1,516 ms at 10M events on a slower machine; before that copy it read the table for windows of many events only
    (1.34 against 1.43 s at 10M, 7.9 against 9.9 s at 100M on the bench machine). DuckDB's table is read with the goal
    bits it keeps (``build_goals_stored_query``); without them this groups the events.
    """
    events = partial(build_goals_events_query, scope, goals, d)
    if not (d.merged_sessions and facts_answer(scope, d, shared_columns=True)):
        return events()
    return facts_where_cheaper(scope, lambda dd: build_goals_listed_query(scope, goals, dd), events, d)


def build_goals_events_query(scope: Scope, goals: Sequence[GoalSpec], d: Dialect) -> Query:
    """``build_goals_query`` grouping the window's events into sessions.

    One grouping by session gives both: the session count, and per session a bit mask of the goals it
    completed (``bit_or`` of each event's goal bits, see ``_goal_masks``); the filters are its ``HAVING``.
    A single grouping of every row with one cheap aggregate costs about half of a session grouping plus a
    second grouping of the goal-matching rows with one ``bool_or`` per goal.

    The sessions are then counted per distinct set of masks (a few hundred at most in practice) before each
    goal's filtered sum: one small grouping of the millions of sessions instead of a filtered count per goal
    over each of them.
    """
    p = Params()
    start = opening(scope, d, p, rows_needed=False)
    masks = _goal_masks(goals, d, p)
    columns = "".join(f", {d.bit_or(m)} AS m{j}" for j, m in enumerate(masks))
    names = ", ".join(f"m{j}" for j in range(len(masks)))
    combos = f"SELECT {names}, count(*) AS n FROM per GROUP BY {names}" if masks else "SELECT count(*) AS n FROM per"
    counts = _mask_counts(range(len(goals)), d, sessions="sum(n)")
    sql = f"""{start}{d.cte("per", session_groups(scope, columns, d, p))},
{d.cte("combos", combos)}
SELECT coalesce(sum(n), 0) AS sessions{counts} FROM combos"""
    return p.query(sql)


def _whole_session_converted(goal: GoalSpec, scope: Scope, d: Dialect, p: Params) -> str:
    """SQL on a whole session's ``sessions`` row, without stored goal bits: true when it completed ``goal``.

    A path goal tests its list of paths; another goal looks its id up among the window's matching events (custom
    events, clicks: far fewer than pageviews).
    """
    if goal.goal_type == "path":
        return _listed_path_test(goal.config["pathPattern"], d, p)
    window = window_condition(scope.site_ids, scope.window, p, d)
    condition = goal_condition(goal.goal_type, goal.config, d, p)
    return f"session_id IN (SELECT session_id FROM {d.goal_rows} WHERE {window} AND {condition})"


def _whole_converted(scope: Scope, columns: str, goal: GoalSpec, bit: int | None, d: Dialect, p: Params) -> str:
    """``SELECT <columns>, converted FROM sessions``: the window's whole sessions (``facts.whole_sessions``), each
    with whether it completed ``goal``: from its stored bit ``bit`` where given, else ``_whole_session_converted``.

    Where the bits are the sealed rows' (``Dialect.sealed_goal_masks``), the sessions the seal left open have none:
    they are tested as without bits.
    """
    if bit is None:
        return whole_sessions(scope, f"{columns}, {_whole_session_converted(goal, scope, d, p)} AS converted", d, p)
    if not d.sealed_goal_masks:
        return whole_sessions(scope, f"{columns}, {_has_bit(bit, d)} AS converted", d, p)
    if d.sealed is None:
        raise ValueError("the sealed rows' goal bits are read with a seal")
    sealed = whole_sessions(scope, f"{columns}, {_has_bit(bit, d)} AS converted", d, p, part="sealed")
    if not seal_left_open(scope, d):  # the window ends before the sessions the seal left open
        return sealed
    opened = whole_sessions(
        scope, f"{columns}, {_whole_session_converted(goal, scope, d, p)} AS converted", d, p, part="open"
    )
    return f"{sealed} UNION ALL {opened}"


def _cheap_condition(goal: GoalSpec, d: Dialect, p: Params) -> str:
    """``goal_condition`` without its tests on ``props``: true for every event completing ``goal``, and maybe others."""
    parts, _ = _goal_tests(goal.goal_type, goal.config, d, p)
    return "(" + " AND ".join([_type_test(goal.goal_type, p), *parts]) + ")"


def _goal_chunks(goals: Sequence[GoalSpec], keep: Callable[[GoalSpec], bool]) -> list[list[tuple[int, GoalSpec]]]:
    """The goals ``keep`` picks, per mask of ``_goal_masks`` and at their bits there (the others' bits stay 0)."""
    return [
        [(i % MASK_BITS, g) for i, g in enumerate(goals[first : first + MASK_BITS], first) if keep(g)]
        for first in range(0, len(goals), MASK_BITS)
    ]


def _is_path(goal: GoalSpec) -> bool:
    return goal.goal_type == "path"


def build_goals_listed_query(scope: Scope, goals: Sequence[GoalSpec], d: Dialect) -> Query:
    """``build_goals_query`` taking the whole sessions from the ``sessions`` table. Needs only the columns every
    store's table keeps.

    A path goal is tested on each whole session's list of paths, and on the in-window events of the sessions
    crossing the window's edges. The other goals (custom events, clicks: far fewer rows than pageviews) are counted
    from their matching events alone, grouped by session: a session converts when one of its in-window events
    matches, whole or not (at 100M events on a slower machine 15.9 -> 13.2 s against joining them to the 25.9M whole
    sessions). With session filters, those groups are joined to the whole sessions that pass them, and the edge
    sessions count their own.
    """
    p = Params()
    others = _goal_chunks(goals, lambda g: not _is_path(g))
    hits = ""
    if any(others):
        window = window_condition(scope.site_ids, scope.window, p, d)
        # The rows are selected by the cheap tests only (an engine may evaluate every branch of an OR on every row,
        # parsing JSON); the masks hold the full tests.
        matching = " OR ".join(_cheap_condition(g, d, p) for g in goals if not _is_path(g))
        flags = ", ".join(f"{d.bit_or(goal_mask(chunk, d, p))} AS h{j}" for j, chunk in enumerate(others) if chunk)
        hits = (
            f"SELECT session_id AS hit, {flags} FROM {d.goal_rows} WHERE {window} AND ({matching}) GROUP BY session_id"
        )
    filtered = bool(scope.session_filters)
    whole = whole_sessions(scope, "session_id, pathnames", d, p)
    if hits and filtered:
        bits = ", ".join(f"h.h{j} AS h{j}" for j, chunk in enumerate(others) if chunk)
        whole = f"SELECT w.pathnames, {bits} FROM ({whole}) AS w LEFT JOIN ({hits}) AS h ON h.hit = w.session_id"
    # Without filters the whole sessions give the path goals only; the matching events give the others in full.
    counted = [i for i, g in enumerate(goals) if _is_path(g) or filtered]
    tests = {
        i: _listed_path_test(goals[i].config["pathPattern"], d, p) if _is_path(goals[i]) else _has_goal_bit(i, "h", d)
        for i in counted
    }
    whole_counts = "".join(f", count(*) FILTER (WHERE {test}) AS g{i}" for i, test in tests.items())
    edge_chunks = _goal_chunks(goals, lambda g: _is_path(g) or filtered)
    edge_masks = "".join(
        f", {d.bit_or(goal_mask(chunk, d, p))} AS m{j}" for j, chunk in enumerate(edge_chunks) if chunk
    )
    edge = edge_sessions(scope, edge_masks, d, p)
    parts = [
        f"(SELECT count(*) AS sessions{whole_counts} FROM ({whole}) AS whole) AS w",
        f"(SELECT count(*) AS sessions{_mask_counts(counted, d)} FROM ({edge}) AS edge) AS e",
    ]
    totals = ["w.sessions + e.sessions AS sessions"]
    for i in range(len(goals)):
        totals.append(f"w.g{i} + e.g{i} AS g{i}" if i in tests else f"h.g{i} AS g{i}")
    if hits and not filtered:
        events_only = (i for i, g in enumerate(goals) if not _is_path(g))
        parts.append(
            f"(SELECT count(*) AS sessions{_mask_counts(events_only, d, masks='h')} FROM ({hits}) AS hits) AS h"
        )
    sources = ",\n     ".join(parts)
    return p.query(f"SELECT {', '.join(totals)}\nFROM {sources}")


def goal_definition(goal: GoalSpec) -> str:
    """The text of what ``goal`` matches (its type and config, keys sorted): equal texts match the same events."""
    return json.dumps([goal.goal_type, goal.config], sort_keys=True, separators=(",", ":"))


def build_goals_stored_query(scope: Scope, goals: Sequence[GoalSpec], bits: Sequence[int], d: Dialect) -> Query:
    """``build_goals_query`` reading each whole session's stored ``goal_mask``, where goal ``i`` is bit ``bits[i]``.

    The store keeps, per session, the bits of the site's goals its events complete (``store/goal_bits.py``), so the
    whole sessions of the window are counted per stored mask without reading an event; only the edge sessions are
    grouped from their in-window events, as the event query groups every session. The row's ``stale_result`` is
    true when the store's bits no longer stand for these goals (their ready ``goal_bits`` rows, read in the
    same snapshot as the masks, differ): the counts are then wrong and the caller asks ``build_goals_query``. For the
    DuckDB store on one site, where ``facts_answer`` holds; on ClickHouse see ``_sealed_goals_query``.
    """
    if d.sealed_goal_masks:
        return _sealed_goals_query(scope, goals, bits, d)
    _require_stored(scope, d)
    p = Params()
    site = p.add(scope.site_ids[0])
    whole_counts = "".join(
        f", coalesce(sum(n) FILTER (WHERE {_has_bit(bit, d)}), 0) AS g{i}" for i, bit in enumerate(bits)
    )
    whole = f"SELECT goal_mask, count(*) AS n FROM ({whole_sessions(scope, 'goal_mask', d, p)}) AS w GROUP BY goal_mask"
    masks = _goal_masks(goals, d, p)
    edge = edge_sessions(scope, "".join(f", {d.bit_or(m)} AS m{j}" for j, m in enumerate(masks)), d, p)
    totals = ", ".join(
        ["w.sessions + e.sessions AS sessions", *(f"w.g{i} + e.g{i} AS g{i}" for i in range(len(goals)))]
    )
    sql = f"""WITH {d.cte("whole", whole)},
{d.cte("edge", edge)}
SELECT {totals}, r.stale AS stale_result
FROM (SELECT coalesce(sum(n), 0) AS sessions{whole_counts} FROM whole) AS w,
     (SELECT count(*) AS sessions{_mask_counts(range(len(goals)), d)} FROM edge) AS e,
     ({_bits_stale(site, goals, bits, d, p)}) AS r"""
    return p.query(sql)


def _sealed_goals_query(scope: Scope, goals: Sequence[GoalSpec], bits: Sequence[int], d: Dialect) -> Query:
    """``build_goals_stored_query`` on a store keeping the bits in its sealed rows (ClickHouse): where the narrowing
    reads a seal (``facts.facts_where_cheaper``), the whole sealed sessions are counted per ``goal_mask``; the whole
    sessions the seal left open (all their events after its ``open_from``) and the edge sessions are grouped from
    their in-window events. ``stale_result`` is true when the generation read was not written with bit ``bits[i]``
    for goal ``i``. Where the narrowing reads no seal this is ``build_goals_query``, without ``stale_result``.

    Through the API on chdb copies of the bench files, 448 -> 235 ms at 10M events, 3,261 -> 545 ms at 100M
    (``bench/analysis.md``).
    """
    _require_sealed(scope, d)
    events = partial(build_goals_events_query, scope, goals, d)

    def facts(dd: Dialect) -> Query:
        if dd.sealed is None:
            return build_goals_listed_query(scope, goals, dd)
        return _goals_from_sealed_masks(scope, goals, bits, dd)

    return facts_where_cheaper(scope, facts, events, d)


def _goals_from_sealed_masks(scope: Scope, goals: Sequence[GoalSpec], bits: Sequence[int], d: Dialect) -> Query:
    """``_sealed_goals_query``'s form reading the seal ``d.sealed``."""
    sealed = d.sealed
    if sealed is None:
        raise ValueError("a seal to read is needed")
    p = Params()
    whole_counts = "".join(
        f", coalesce(sum(n) FILTER (WHERE {_has_bit(bit, d)}), 0) AS g{i}" for i, bit in enumerate(bits)
    )
    masked = whole_sessions(scope, "goal_mask", d, p, part="sealed")
    whole = f"SELECT goal_mask, count(*) AS n FROM ({masked}) AS w GROUP BY goal_mask"
    masks = _goal_masks(goals, d, p)
    mask_columns = "".join(f", {d.bit_or(m)} AS m{j}" for j, m in enumerate(masks))
    if seal_left_open(scope, d):
        open_ids = whole_sessions(scope, "session_id", d, p, part="open")
        window = window_condition(scope.site_ids, scope.window, p, d)
        after = d.time_bound("timestamp", ">=", p.add(sealed.open_from))
        opened = (
            f"SELECT session_id{mask_columns} FROM events WHERE {window} AND {after} "
            f"AND session_id IN ({open_ids}) GROUP BY session_id"
        )
    else:  # the window ends before the sessions the seal left open
        opened = f"SELECT session_id{mask_columns} FROM events WHERE false GROUP BY session_id"
    edge = edge_sessions(scope, mask_columns, d, p)
    stale = _bits_stale(p.add(scope.site_ids[0]), goals, bits, d, p)
    totals = ", ".join(
        [
            "w.sessions + o.sessions + e.sessions AS sessions",
            *(f"w.g{i} + o.g{i} + e.g{i} AS g{i}" for i in range(len(goals))),
        ]
    )
    counts = _mask_counts(range(len(goals)), d)
    return p.query(f"""SELECT {totals}, r.stale AS stale_result
FROM (SELECT coalesce(sum(n), 0) AS sessions{whole_counts} FROM ({whole}) AS whole) AS w,
     (SELECT count(*) AS sessions{counts} FROM ({opened}) AS opened) AS o,
     (SELECT count(*) AS sessions{counts} FROM ({edge}) AS edge) AS e,
     ({stale}) AS r""")


def _require_sealed(scope: Scope, d: Dialect) -> None:
    if len(scope.site_ids) != 1 or not facts_answer(scope, d, shared_columns=True):
        raise ValueError("sealed goal masks answer one site's scope the sessions table answers")


def _require_stored(scope: Scope, d: Dialect) -> None:
    if len(scope.site_ids) != 1 or not facts_answer(scope, d):
        raise ValueError("stored goal masks answer one site's scope the sessions table answers")


def _has_bit(bit: int, d: Dialect) -> str:
    """SQL: the session's stored ``goal_mask`` has bit ``bit`` set (it completed the goal holding that bit)."""
    return f"{d.bit_and('goal_mask', str(1 << bit))} <> 0"


def _stale_source(scope: Scope, goal: GoalSpec, bit: int | None, d: Dialect, p: Params) -> str:
    """``, (...) AS r``: the one-row ``_bits_stale`` of ``goal`` holding ``bit``, to join beside a query reading it;
    empty when the query reads no bit."""
    if bit is None:
        return ""
    return f", ({_bits_stale(p.add(scope.site_ids[0]), [goal], [bit], d, p)}) AS r"


def _bits_stale(site: str, goals: Sequence[GoalSpec], bits: Sequence[int], d: Dialect, p: Params) -> str:
    """``SELECT ... AS stale``: one row, true when the store's ready ``goal_bits`` rows of the ``site`` parameter no
    longer give goal ``goals[i]`` the bit ``bits[i]`` (read in the query's snapshot, beside the masks it counts); on
    a seal's read (``Dialect.sealed``), when its generation was not written with them (``sealed_goal_bits``)."""
    pairs = sorted({(bit, goal_definition(g)) for bit, g in zip(bits, goals, strict=True)})
    listed = " OR ".join(f"(bit = {p.add(bit)} AND definition = {p.add(text)})" for bit, text in pairs) or "false"
    if d.sealed is not None:
        generation = p.add(d.sealed.generation)
        return (
            f"SELECT count(DISTINCT bit) <> {len(pairs)} AS stale FROM sealed_goal_bits "
            f"WHERE generation = {generation} AND site_id = {site} AND ({listed})"
        )
    return f"SELECT count(*) <> {len(pairs)} AS stale FROM goal_bits WHERE site_id = {site} AND ready AND ({listed})"


def build_goals_rollup_query(scope: Scope, goals: Sequence[GoalSpec], parameter: str, limit: int, d: Dialect) -> Query:
    """Rows ``(value, sessions, g0, g1, ...)``: the unfiltered goals list per session value of ``parameter``.

    ``value`` is the session's one value of the session-level ``parameter`` (``session_value``), so the goals list
    under any filters on that parameter alone is the sum of the rows whose value passes them (see
    ``build_matching_values_query``). At most ``limit`` rows, largest first: a caller asking for ``limit - 1``
    groups learns from a full answer that the parameter has too many values to be worth keeping.
    """
    p = Params()
    where = window_condition(scope.site_ids, scope.window, p, d)
    value = session_value(parameter, d, p)
    flags = "".join(f", {d.bit_or(m)} AS m{j}" for j, m in enumerate(_goal_masks(goals, d, p)))
    counts = _mask_counts(range(len(goals)), d)
    per = f"SELECT session_id, {value} AS value{flags} FROM events WHERE {where} GROUP BY session_id"
    sql = f"""WITH {d.cte("per", per)}
SELECT value, count(*) AS sessions{counts} FROM per GROUP BY value ORDER BY sessions DESC, value LIMIT {p.add(limit)}"""
    return p.query(sql)


def build_matching_values_query(values: Sequence[str], filters: Sequence[Filter], d: Dialect) -> Query:
    """Rows ``(value)``: those of ``values`` (session values of one parameter) that pass every filter.

    The filters are the same ``compare`` tests ``session_condition`` applies to ``session_value``, here applied
    to the already computed values, so a session qualifies here exactly when it does in a ``HAVING``.
    """
    p = Params()
    value_list = p.add(list(values))
    tests = " AND ".join(compare("value", f.type, f.values, d, p) for f in filters) or "true"
    sql = f"SELECT value FROM (SELECT {d.unnest_strings(value_list)} AS value) AS v WHERE {tests}"
    return p.query(sql)


def build_goal_sessions_query(scope: Scope, goal: GoalSpec, limit: int, offset: int, d: Dialect) -> Query:
    """The converted sessions, newest ``session_end`` first, with ``total_count`` (one row even past the end).

    Whole sessions come from the ``sessions`` table where the engine keeps it (on a table merged at read time, where
    that costs less: ``facts.facts_where_cheaper``; on merged chdb copies of the bench files, for a common path goal
    604 -> 372 ms at 10M events and 7.0 -> 2.2 s at 100M).
    """
    events = partial(build_goal_sessions_events_query, scope, goal, limit, offset, d)
    if not facts_answer(scope, d, shared_columns=True):
        return events()
    return facts_where_cheaper(
        scope, lambda dd: _goal_sessions_query(scope, goal, limit, offset, dd, facts=True), events, d
    )


def build_goal_sessions_events_query(scope: Scope, goal: GoalSpec, limit: int, offset: int, d: Dialect) -> Query:
    """``build_goal_sessions_query`` grouping the window's events into sessions (no ``sessions`` table)."""
    return _goal_sessions_query(scope, goal, limit, offset, d, facts=False)


def build_goal_sessions_stored_query(
    scope: Scope, goal: GoalSpec, bit: int, limit: int, offset: int, d: Dialect
) -> Query:
    """``build_goal_sessions_query`` taking the whole sessions that converted from their stored ``goal_mask``, where
    the goal is bit ``bit``; each row's ``stale_result`` as in ``build_goals_stored_query`` (on ClickHouse, where
    the narrowing reads a seal: ``_stored``)."""
    return _stored(
        scope,
        lambda dd, b: _goal_sessions_query(scope, goal, limit, offset, dd, facts=True, bit=b),
        partial(build_goal_sessions_events_query, scope, goal, limit, offset, d),
        bit,
        d,
    )


def _goal_sessions_query(
    scope: Scope, goal: GoalSpec, limit: int, offset: int, d: Dialect, *, facts: bool, bit: int | None = None
) -> Query:
    p = Params()
    start = opening(scope, d, p, rows_needed=False)
    condition = goal_condition(goal.goal_type, goal.config, d, p)
    # Rank converted sessions on the cheap (end time only); the page is described apart.
    skipped = p.add(offset)
    if facts:
        # Whole sessions' spans come from the table and edge sessions' from their events; a matching in-window
        # event makes either one converted. A whole session is tested on its stored goal bit, or for a path goal
        # without one on its list of paths, and an edge session on its in-window events as it is grouped, so no
        # event of a whole one is read. Other goals look the sessions up among their matching events (custom
        # events, clicks: far fewer than pageviews).
        spans = "session_id, last_seen AS session_end, first_seen AS session_start"
        edge_spans = ", max(timestamp) AS session_end, min(timestamp) AS session_start"
        columns = "session_id, session_end, session_start"
        if bit is not None or goal.goal_type == "path":
            whole = f"SELECT {columns} FROM ({_whole_converted(scope, spans, goal, bit, d, p)}) AS w WHERE converted"
            hit = f"{edge_spans}, {d.bool_or(condition)} AS hit"
            edge = f"SELECT {columns} FROM ({edge_sessions(scope, hit, d, p)}) AS e WHERE hit"
            # The edge sessions are grouped once and kept. On DuckDB the whole ones are read where used rather than
            # stored (6.4M converted sessions at 100M events): the count reads none of their ids, and the page is
            # taken among the sessions ending no earlier than the newest ``offset + limit`` ends, found from the
            # ends alone (goal sessions at 100M events 627 -> 301 ms). ClickHouse would merge the table again at
            # each read: it keeps them (``Dialect.keeps_large_ctes``; at 100M events 8.3 -> 5.6 s) and takes the page
            # by a plain top-N over them rather than after the cut (4.5 -> 2.3 s).
            kept_ctes = [d.cte("edge_conv", edge, materialized=True)]
            union = f"{whole} UNION ALL SELECT {columns} FROM edge_conv"
            if d.keeps_large_ctes:
                kept_ctes.append(d.cte("conv", union, materialized=True))
                candidates = "conv"
            else:
                cut, candidates = newest_ends("conv", offset + limit, p)
                kept_ctes += [d.cte("conv", union, materialized=False), cut]
            ctes = ",\n".join(kept_ctes)
        else:
            # Kept, so the events are searched for the matching ones once.
            window = window_condition(scope.site_ids, scope.window, p, d)
            hits = f"SELECT session_id FROM {d.goal_rows} WHERE {window} AND {condition}"
            whole = whole_sessions(scope, spans, d, p)
            edge = edge_sessions(scope, edge_spans, d, p)
            spanned = f"{whole} UNION ALL SELECT {columns} FROM ({edge}) AS e"
            converted = f"SELECT * FROM ({spanned}) AS q WHERE session_id IN ({hits})"
            ctes, candidates = d.cte("conv", converted, materialized=True), "conv"
    else:
        ends = ", max(timestamp) AS session_end, min(timestamp) AS session_start"
        if scope.row_filters:
            converted = session_groups(scope, ends, d, p, d.bool_or(condition))
        else:
            # Group only the rows of sessions with a matching event (a semi-join on the few matching rows) instead
            # of every session of the window with a per-row flag: about a third cheaper for a goal reached by a
            # quarter of the sessions. The session filters stay a HAVING over the session's in-window rows.
            window = window_condition(scope.site_ids, scope.window, p, d)
            hits = f"SELECT session_id FROM {_goal_rows(goal.goal_type, d)} WHERE {window} AND {condition}"
            having = " AND ".join(session_condition(f, d, p) for f in scope.session_filters)
            converted = (
                f"SELECT session_id{ends} FROM events "
                f"WHERE {window} AND session_id IN ({hits}) "
                f"GROUP BY session_id{f' HAVING {having}' if having else ''}"
            )
        ctes, candidates = d.cte("conv", converted, materialized=True), "conv"
    # The page is taken first (a top-N, not a sort of every converted session) and only its rows are numbered;
    # (session_end, session_id) orders the sessions totally, so the numbers are their ranks. The page's sessions are
    # described by a second query (``sessions.build_goal_session_rows_query``): given their ids and their spans
    # (``sessions.page_spans``) as values, it reads the blocks of their hours alone, where this query, reading the ids
    # from its own page, read every block of the window on ClickHouse (an event goal's sessions at 10M events,
    # in-process: 413 -> 318 ms, the second query included).
    top = (
        f"SELECT session_id AS page_session, session_end AS page_end, session_start AS page_start FROM {candidates} "
        f"ORDER BY session_end DESC, session_id LIMIT {p.add(limit)} OFFSET {skipped}"
    )
    stale = _stale_source(scope, goal, bit, d, p)
    sql = f"""{start}{ctes},
page AS (SELECT page_session, page_end, page_start,
           {skipped} + row_number() OVER (ORDER BY page_end DESC, page_session) AS rn
         FROM ({top}) AS top)
SELECT t.total_count, page.rn, page.page_session AS session_id, page.page_end AS session_end,
  page.page_start AS session_start{", r.stale AS stale_result" if stale else ""}
FROM (SELECT count(*) AS total_count FROM conv) AS t{stale}
LEFT JOIN page ON true
ORDER BY page.rn"""
    return p.query(sql)


def build_goal_breakdown_query(
    scope: Scope, goal: GoalSpec, parameter: str, d: Dialect, page: Page = FIRST_BREAKDOWN_PAGE
) -> Query:
    """Rows ``(total_sessions, total_conversions, total_values, value, sessions, conversions)`` of one page of
    values, best conversion rate first (then most sessions, then value); one row even with no value.

    A session-level parameter or the path reads whole sessions from the ``sessions`` table where the engine keeps it
    (on a table merged at read time, where that costs less: ``facts.facts_where_cheaper``; by channel on a merged
    chdb copy of the bench files, 439 -> 380 ms at 10M events and 13.1 -> 3.6 s at 100M)."""
    events = partial(build_goal_breakdown_events_query, scope, goal, parameter, d, page)
    if parameter not in TABLE_BREAKDOWN_PARAMETERS or not facts_answer(scope, d, shared_columns=True):
        return events()
    return facts_where_cheaper(
        scope, lambda dd: _goal_breakdown_query(scope, goal, parameter, dd, page, facts=True), events, d
    )


def build_goal_breakdown_events_query(
    scope: Scope, goal: GoalSpec, parameter: str, d: Dialect, page: Page = FIRST_BREAKDOWN_PAGE
) -> Query:
    """``build_goal_breakdown_query`` grouping the window's events into sessions (no ``sessions`` table)."""
    return _goal_breakdown_query(scope, goal, parameter, d, page, facts=False)


def build_goal_breakdown_stored_query(
    scope: Scope, goal: GoalSpec, parameter: str, bit: int, d: Dialect, page: Page = FIRST_BREAKDOWN_PAGE
) -> Query:
    """``build_goal_breakdown_query`` by a ``parameter`` of ``TABLE_BREAKDOWN_PARAMETERS``, whole sessions
    converted by their stored ``goal_mask``, where the goal is bit ``bit``; each row's ``stale_result`` as in
    ``build_goals_stored_query`` (on ClickHouse, where the narrowing reads a seal: ``_stored``)."""
    if parameter not in TABLE_BREAKDOWN_PARAMETERS:
        raise ValueError(f"the sessions table holds no value of {parameter}")
    return _stored(
        scope,
        lambda dd, b: _goal_breakdown_query(scope, goal, parameter, dd, page, facts=True, bit=b),
        partial(build_goal_breakdown_events_query, scope, goal, parameter, d, page),
        bit,
        d,
    )


def _stored(
    scope: Scope, facts: Callable[[Dialect, int | None], Query], events: Callable[[], Query], bit: int, d: Dialect
) -> Query:
    """A goal query taking whole sessions' conversions from bit ``bit``: ``facts(d, bit)`` on the sessions table's
    masks. On a store keeping the bits in its sealed rows, ``facts(dd, bit)`` where the narrowing reads a seal
    (``facts.facts_where_cheaper``), the whole sealed sessions converted by their bit and the open ones tested as
    without bits (``_whole_converted``), its rows flagged stale when the generation read was not written with
    ``bit`` for the goal; else ``facts(dd, None)`` or ``events()``, without the flag."""
    if not d.sealed_goal_masks:
        _require_stored(scope, d)
        return facts(d, bit)
    _require_sealed(scope, d)
    return facts_where_cheaper(scope, lambda dd: facts(dd, bit if dd.sealed is not None else None), events, d)


def _goal_breakdown_query(
    scope: Scope, goal: GoalSpec, parameter: str, d: Dialect, page: Page, *, facts: bool, bit: int | None = None
) -> Query:
    p = Params()
    listed = facts and parameter == "pathname"
    start = opening(
        scope,
        d,
        p,
        rows_needed=not listed and parameter not in SESSION_PARAMETERS,
        qualifying=qualifying_from_table if facts else None,
    )
    condition = goal_condition(goal.goal_type, goal.config, d, p)
    if listed:
        # Whole sessions' paths from their stored lists, edge sessions' from their in-window pageviews.
        whole = _whole_converted(scope, "pathnames AS paths", goal, bit, d, p)
        edge = edge_sessions(
            scope, f", {d.path_list(pathnames(d))} AS paths, {d.bool_or(condition)} AS converted", d, p
        )
        per_session = f"{whole} UNION ALL SELECT paths, converted FROM ({edge}) AS e"
        if d.merged_sessions and d.sealed is None:
            # Each read of a table merged at read time merges it again. So each session adds a NULL value after its
            # paths, and the grouping of the values also counts every session once, in the NULL row: the totals
            # come from the same pass. On a merged chdb copy of the 10M-event bench file, 1.1 s against 1.45 s
            # for counting the sessions in a second read. Sealed rows are read twice instead, as their lists'
            # dictionary numbers are grouped only while no NULL is added.
            every_value = (
                "SELECT value, count(*) AS sessions, count(*) FILTER (WHERE converted) AS conversions "
                f"FROM (SELECT {d.unnest_strings_and_null('paths')} AS value, converted FROM ({per_session}) AS per) "
                "AS sv GROUP BY value"
            )
            sql = f"""{start}{d.cte("every_value", every_value, materialized=True)},
grouped AS (SELECT * FROM every_value WHERE value <> ''),
totals AS (SELECT coalesce(sum(sessions) FILTER (WHERE value IS NULL), 0) AS total_sessions,
             coalesce(sum(conversions) FILTER (WHERE value IS NULL), 0) AS total_conversions,
             count(*) FILTER (WHERE value <> '') AS total_values
           FROM every_value),
"""
        else:
            # A second scan of the table costs less than copying each list to add that NULL value (DuckDB, the 10M-
            # event bench file: 200 against 450 ms).
            grouped = (
                "SELECT value, count(*) AS sessions, count(*) FILTER (WHERE converted) AS conversions "
                f"FROM (SELECT {d.unnest_strings('paths')} AS value, converted FROM ({per_session}) AS per) AS sv "
                "WHERE value <> '' GROUP BY value"
            )
            sql = f"{start}{d.cte('grouped', grouped, materialized=True)},\n{_totals(f'({per_session}) AS per')}"
    elif parameter in SESSION_PARAMETERS:
        # One value per session: value and conversion come out of the same grouping.
        columns = f", {session_value(parameter, d, p)} AS value, {d.bool_or(condition)} AS converted"
        if not facts:
            per_session = session_groups(scope, columns, d, p)
        else:
            # Whole sessions: the stored value, converted when their stored goal bit is set, for a path goal without
            # one when their list of paths has a match, or else when one of their in-window events matches; edge
            # sessions grouped from their events as before.
            whole = _whole_converted(scope, f"session_id, {fact_column(parameter)} AS value", goal, bit, d, p)
            edge = edge_sessions(scope, columns, d, p)
            per_session = f"{whole} UNION ALL SELECT session_id, value, converted FROM ({edge}) AS e"
        # Each session has one value, so the totals are sums over the values: the sessions are grouped once and
        # not kept (at 100M events ClickHouse held 24M of them in memory to read them a second time).
        kept = "true" if keeps_empty_value(parameter) else "value <> ''"
        every_value = (
            "SELECT value, count(*) AS sessions, count(*) FILTER (WHERE converted) AS conversions "
            f"FROM ({per_session}) AS conv GROUP BY value"
        )
        sql = f"""{start}{d.cte("every_value", every_value, materialized=True)},
grouped AS (SELECT * FROM every_value WHERE {kept}),
totals AS (SELECT coalesce(sum(sessions), 0) AS total_sessions, coalesce(sum(conversions), 0) AS total_conversions,
             count(*) FILTER (WHERE {kept}) AS total_values
           FROM every_value),
"""
    else:
        # A session may have several values: it counts once in the totals, so those come from the sessions.
        keep = "" if keeps_empty_value(parameter) else "WHERE sv.value <> ''"
        columns = f", {d.bool_or(condition)} AS converted"
        grouped = (
            "SELECT sv.value, count(*) AS sessions, count(*) FILTER (WHERE conv.converted) AS conversions "
            f"FROM ({session_values_sql(parameter, d, p)}) AS sv JOIN conv USING (session_id) {keep} "
            "GROUP BY sv.value"
        )
        sql = f"""{start}{d.cte("conv", session_groups(scope, columns, d, p), materialized=True)},
{d.cte("grouped", grouped, materialized=True)},
{_totals("conv")}"""
    stale = _stale_source(scope, goal, bit, d, p)
    return p.query(
        sql
        + _BREAKDOWN_PAGE.format(
            limit=int(page.limit),
            offset=int(page.offset),
            stale=", r.stale AS stale_result" if stale else "",
            stale_from=stale,
        )
    )


def _totals(sessions: str) -> str:
    """``totals AS (...),``: the sessions and conversions of ``sessions`` (a relation of one row per session with
    its ``converted``) and the number of values in ``grouped``. They are counted in a join: ClickHouse computes a
    kept CTE again for a subquery."""
    return f"""totals AS (SELECT c.total_sessions, c.total_conversions, g.total_values
           FROM (SELECT count(*) AS total_sessions, count(*) FILTER (WHERE converted) AS total_conversions
                 FROM {sessions}) AS c
           CROSS JOIN (SELECT count(*) AS total_values FROM grouped) AS g),
"""


# The end of a breakdown query after its ``grouped`` and ``totals`` CTEs: one page of values, best rate first.
_BREAKDOWN_PAGE = """paged AS (SELECT * FROM grouped
  ORDER BY CAST(conversions AS DOUBLE) / sessions DESC, sessions DESC, value
  LIMIT {limit} OFFSET {offset})
SELECT t.total_sessions, t.total_conversions, t.total_values, g.value, g.sessions, g.conversions{stale}
FROM totals AS t{stale_from} LEFT JOIN paged AS g ON true"""
