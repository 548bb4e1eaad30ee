"""Goal bits: each session's goals kept in its ``sessions`` row, so the goals list reads no event of whole sessions.

Grouping the window's events by session to learn which goals each session completed is the goals list's whole cost
(about 0.3 s at 10M events, 4.6 s at 100M); a mask kept per session answers the same counts in tens of milliseconds
(``bench/analysis.md``). So the DuckDB store keeps, per site, up to ``MASK_BITS`` goal definitions
(``query.goals.goal_definition``), each with a bit of the sessions' ``goal_mask``, in the table ``goal_bits``:

- a fold (``store/sessions.py``) sets in each session's mask the bits of the goals its new events complete, from the
  site's registered definitions at that moment (a ``bit_or``, so batches combine in any order);
- registering a definition takes a free bit, clears it in every session of the site (a bit given up by an earlier
  definition may still be set), and sets it in the sessions that have a matching stored event, all in the
  transaction that inserts its ``goal_bits`` row and under the store's write lock, and the folds after it set the bit
  too: so a registered bit always equals what grouping the session's events would give;
- a definition no goal of the site has any more gives up its row (its bit stays set in sessions until reused).

A read uses the masks only when each goal it counts has a row (``stored_bits``), and checks those rows in the same
snapshot as the masks it reads (``query.goals.build_goals_stored_query``): a goal changed in between sends it back to
the events. Registering is work over all of the site's events (seconds at 100M events), so the reader asks for it
in the background and answers from the events until it is done (``read/reader.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from api_backend.query.dialect import DUCKDB
from api_backend.query.goals import MASK_BITS, GoalSpec, goal_condition, goal_definition, goal_mask
from api_backend.query.sql import Params, Query

__all__ = [
    "GOAL_BITS_DDL",
    "BitPlan",
    "Registry",
    "build_bit_fill",
    "build_bits_dropped",
    "fold_mask",
    "plan_bits",
    "registry_goal",
]

GOAL_BITS_DDL = (
    "CREATE TABLE IF NOT EXISTS goal_bits (site_id INTEGER NOT NULL, bit INTEGER NOT NULL, definition VARCHAR NOT NULL)"
)

# Per site: the registered ``(bit, definition)`` pairs.
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


def plan_bits(registered: Sequence[tuple[int, str]], goals: Sequence[GoalSpec]) -> BitPlan:
    """The changes giving the definitions of ``goals`` (the first ``MASK_BITS`` distinct ones, in order) a bit.

    Registered definitions keep their bits; those no goal has are dropped; new ones take the lowest free bits.
    """
    wanted: list[str] = []
    for goal in goals:
        text = goal_definition(goal)
        if text not in wanted:
            wanted.append(text)
    wanted = wanted[:MASK_BITS]
    kept = {text: bit for bit, text in registered if text in wanted}
    dropped = tuple(sorted(bit for bit, text in registered if text not in kept or kept[text] != bit))
    free = iter(sorted(set(range(MASK_BITS)) - set(kept.values())))
    added = tuple((next(free), text) for text in wanted if text not in kept)
    return BitPlan(dropped, added)


def build_bits_dropped(site_id: int, bits: Sequence[int]) -> Query:
    """Forget the definitions of ``bits`` (their bits stay set in sessions until given to another definition)."""
    return Query(
        "DELETE FROM goal_bits WHERE site_id = $site AND list_contains($bits, bit)",
        {"site": site_id, "bits": list(bits)},
    )


def build_bit_fill(site_id: int, bit: int, definition: str) -> list[Query]:
    """Statements giving ``bit`` to ``definition`` on ``site_id``: cleared in every session of the site, then set in
    those with a stored event completing the goal, and registered (one transaction, under the write lock)."""
    value = 1 << bit
    row = {"site": site_id, "bit": bit, "definition": definition}
    p = Params()
    goal = registry_goal(definition)
    site = p.add(site_id)
    condition = goal_condition(goal.goal_type, goal.config, DUCKDB, p)
    matching = f"SELECT session_id FROM events WHERE site_id = {site} AND {condition}"
    return [
        Query(
            "UPDATE sessions SET goal_mask = goal_mask - $value WHERE site_id = $site AND goal_mask & $value <> 0",
            {"site": site_id, "value": value},
        ),
        p.query(
            f"UPDATE sessions SET goal_mask = goal_mask + {p.add(value)} "
            f"WHERE site_id = {site} AND session_id IN ({matching})"
        ),
        Query("DELETE FROM goal_bits WHERE site_id = $site AND (bit = $bit OR definition = $definition)", row),
        Query("INSERT INTO goal_bits VALUES ($site, $bit, $definition)", row),
    ]
