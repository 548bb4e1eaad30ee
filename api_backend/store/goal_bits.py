"""Goal bits: each session's goals kept in its ``sessions`` row, so the goals list reads no event of whole sessions.

Grouping the window's events by session to learn which goals each session completed is the goals list's whole cost
(about 0.3 s at 10M events, 4.6 s at 100M); a mask kept per session answers the same counts in tens of milliseconds
(``bench/analysis.md``). So the DuckDB store keeps, per site, up to ``MASK_BITS`` goal definitions
(``query.goals.goal_definition``), each with a bit of the sessions' ``goal_mask``, in the table ``goal_bits``:

- a fold (``store/sessions.py``) sets in each session's mask the bits of the goals its new events complete, from every
  definition the site has registered at that moment (a ``bit_or``, so batches combine in any order);
- registering a definition takes a free bit, clears it in every session of the site (a bit given up by an earlier
  definition may still be set; no fold sets it meanwhile, as no definition holds it), then inserts the definition's
  row, not ``ready``; the folds after that set the bit. The sessions of the events stored before get it from a fill.
  Clearing and filling go one time slice of the site's sessions or events at a time (``FILL_SLICE_EVENTS``), each
  slice a transaction of its own under the store's write lock, so appends and reads wait for a slice, not for the
  whole site. Once every slice is filled the row is marked ``ready``: every event stored before the registration was
  in a slice, and every one after it was folded with the bit, so a ready bit is exactly what grouping the session's
  events would give. A registration cut short (a stop) is done again by the next one (setting or clearing a bit
  twice changes nothing);
- a definition no goal of the site has any more gives up its row (its bit stays set in sessions until reused).

A read uses the masks only when each goal it counts has a ready row (``stored_goal_bits``), and checks those rows in
the same snapshot as the masks it reads (``query.goals.build_goals_stored_query``): a goal changed in between sends it
back to the events. Registering reads all of the site's events (tens of seconds at 100M events), so the reader asks
for it in the background and answers from the events until it is done (``read/reader.py``).

The ClickHouse store cannot update rows in place: it writes the bits into each session's sealed row as the seal
writes the row, and a definition its generation lacks has every finished session sealed again into a new one
(``ClickHouseEventStore.store_goal_bits``). It takes ``plan_bits`` and ``registry_goal`` from here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from api_backend.query.dialect import DUCKDB
from api_backend.query.goals import MASK_BITS, GoalSpec, goal_condition, goal_definition, goal_mask
from api_backend.query.sql import Params, Query

__all__ = [
    "FILL_SLICE_EVENTS",
    "GOAL_BITS_DDL",
    "BitPlan",
    "Registry",
    "build_bit_clear",
    "build_bit_fill",
    "build_bit_ready",
    "build_bit_register",
    "build_bits_dropped",
    "fill_slices",
    "fold_mask",
    "plan_bits",
    "registry_goal",
]

GOAL_BITS_DDL = (
    "CREATE TABLE IF NOT EXISTS goal_bits "
    "(site_id INTEGER NOT NULL, bit INTEGER NOT NULL, definition VARCHAR NOT NULL, ready BOOLEAN NOT NULL)"
)
# A fill sets a bit for this many of the site's events per transaction (at most about a second under the lock).
FILL_SLICE_EVENTS = 5_000_000

# Per site: the registered ``(bit, definition)`` pairs, ready or not (the folds set them all).
Registry = Mapping[int, Sequence[tuple[int, str]]]


def registry_goal(definition: str) -> GoalSpec:
    """The goal a stored definition describes (``goal_definition``'s inverse; the id is not part of it)."""
    goal_type, config = json.loads(definition)
    return GoalSpec(0, goal_type, config)


def fold_mask(registry: Registry, p: Params) -> str:
    """Per-event SQL: the bits of the registered goals of the event's site that the event completes."""
    branches = [
        f"WHEN {p.add(site_id)} THEN {goal_mask([(bit, registry_goal(text)) for bit, text in pairs], DUCKDB, p)}"
        for site_id, pairs in sorted(registry.items())
        if pairs
    ]
    return f"CASE site_id {' '.join(branches)} ELSE 0 END" if branches else "0"


@dataclass(frozen=True)
class BitPlan:
    """What registering a site's goals changes: the bits given up, and the definitions to give a bit to."""

    dropped: tuple[int, ...]
    added: tuple[tuple[int, str], ...]
    unfilled: tuple[tuple[int, str], ...]  # registered, kept, and their fill not finished


def plan_bits(registered: Sequence[tuple[int, str, bool]], goals: Sequence[GoalSpec]) -> BitPlan:
    """The changes giving the definitions of ``goals`` (the first ``MASK_BITS`` distinct ones, in order) a bit.

    ``registered`` holds ``(bit, definition, ready)``. Registered definitions keep their bits; those no goal has are
    dropped; new ones take the lowest free bits.
    """
    wanted: list[str] = []
    for goal in goals:
        text = goal_definition(goal)
        if text not in wanted:
            wanted.append(text)
    wanted = wanted[:MASK_BITS]
    kept = {text: bit for bit, text, _ in registered if text in wanted}
    dropped = tuple(sorted(bit for bit, text, _ in registered if text not in kept or kept[text] != bit))
    free = iter(sorted(set(range(MASK_BITS)) - set(kept.values())))
    added = tuple((next(free), text) for text in wanted if text not in kept)
    unfilled = tuple((bit, text) for bit, text, ready in registered if not ready and kept.get(text) == bit)
    return BitPlan(dropped, added, unfilled)


def build_bits_dropped(site_id: int, bits: Sequence[int]) -> Query:
    """Forget the definitions of ``bits`` (their bits stay set in sessions until given to another definition)."""
    return Query(
        "DELETE FROM goal_bits WHERE site_id = $site AND list_contains($bits, bit)",
        {"site": site_id, "bits": list(bits)},
    )


def build_bit_clear(site_id: int, bit: int, since: datetime | None, until: datetime | None) -> Query:
    """Clear ``bit`` in the sessions of ``site_id`` that started from ``since`` to before ``until`` (None: no bound).

    Run on a bit no definition holds (so no fold sets it), one slice at a time, before ``build_bit_register``.
    """
    p = Params()
    value = p.add(1 << bit)
    conditions = [f"site_id = {p.add(site_id)}", f"goal_mask & {value} <> 0"]
    if since is not None:
        conditions.append(f"first_seen >= {p.add(since)}")
    if until is not None:
        conditions.append(f"first_seen < {p.add(until)}")
    return p.query(f"UPDATE sessions SET goal_mask = goal_mask - {value} WHERE {' AND '.join(conditions)}")


def build_bit_register(site_id: int, bit: int, definition: str) -> list[Query]:
    """Statements giving ``bit``, cleared in the sessions of the site by ``build_bit_clear``, to ``definition`` on
    ``site_id``, not ready (one transaction): the folds set it from then on, and ``build_bit_fill`` for the events
    stored before.

    The transaction clears the bit once more wherever it is still set: a fold may have moved a session's
    ``first_seen`` into a slice already cleared (a late event). That reads every session of the site but writes
    only those few.
    """
    row = {"site": site_id, "bit": bit, "definition": definition}
    return [
        build_bit_clear(site_id, bit, None, None),
        Query("DELETE FROM goal_bits WHERE site_id = $site AND (bit = $bit OR definition = $definition)", row),
        Query("INSERT INTO goal_bits VALUES ($site, $bit, $definition, false)", row),
    ]


def build_bit_fill(site_id: int, bit: int, definition: str, since: datetime | None, until: datetime | None) -> Query:
    """Set ``bit`` in the sessions of ``site_id`` with an event from ``since`` to before ``until`` (None: no bound)
    that completes the goal ``definition`` describes."""
    p = Params()
    value = p.add(1 << bit)
    site = p.add(site_id)
    goal = registry_goal(definition)
    conditions = [f"site_id = {site}", goal_condition(goal.goal_type, goal.config, DUCKDB, p)]
    # A session with an event in the slice started before its end and ended after its start: bounds on both
    # tables, so a slice reads the sessions and events near it, not all of them (20 slices of 100M events, each
    # probing all 26M sessions, took 303 s for ten goals).
    sessions = [f"site_id = {site}", f"goal_mask & {value} = 0"]
    if since is not None:
        since_value = p.add(since)
        conditions.append(f"timestamp >= {since_value}")
        sessions.append(f"last_seen >= {since_value}")
    if until is not None:
        until_value = p.add(until)
        conditions.append(f"timestamp < {until_value}")
        sessions.append(f"first_seen < {until_value}")
    matching = f"SELECT session_id FROM events WHERE {' AND '.join(conditions)}"
    return p.query(
        f"UPDATE sessions SET goal_mask = goal_mask | {value} "
        f"WHERE {' AND '.join(sessions)} AND session_id IN ({matching})"
    )


def build_bit_ready(site_id: int, bit: int, definition: str) -> Query:
    """Mark ``bit`` of ``definition`` ready: every session with a matching event has it."""
    return Query(
        "UPDATE goal_bits SET ready = true WHERE site_id = $site AND bit = $bit AND definition = $definition",
        {"site": site_id, "bit": bit, "definition": definition},
    )


def fill_slices(
    events: int, first: datetime | None, last: datetime | None
) -> list[tuple[datetime | None, datetime | None]]:
    """``(since, until)`` bounds cutting a site's ``events`` stored events, from ``first`` to ``last``, into time
    slices of about ``FILL_SLICE_EVENTS`` each (if they are spread evenly); the first and last slices are open, so
    together they cover every time."""
    count = max(1, -(-events // FILL_SLICE_EVENTS))
    if first is None or last is None or count == 1:
        return [(None, None)]
    step = (last - first) / count
    edges: list[datetime | None] = [None, *(first + step * i for i in range(1, count)), None]
    return list(zip(edges, edges[1:], strict=False))
