"""The reader's requests to store goal bits: one thread per site, goals changed meanwhile stored after it, and a pause
after a failure (the engine stopping a registration at its memory limit, say)."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import duckdb
import pytest

from api_backend.query.goals import GoalSpec
from api_backend.read import reader as reader_module
from api_backend.read.reader import EventReader
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import rows_to_table
from tests.store.test_goal_bits import GOALS, LATER_GOALS
from tests.store.test_session_facts import random_events
from tests.support import wait_until


class Watched(DuckDBEventStore):
    """A DuckDB store recording each registration's goals, which can be held at its start or made to fail."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[list[GoalSpec]] = []
        self.hold = threading.Event()
        self.hold.set()
        self.fail = False

    def store_goal_bits(self, site_id: int, goals: Sequence[GoalSpec]) -> None:
        self.calls.append(list(goals))
        self.hold.wait()
        if self.fail:
            raise duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block")
        super().store_goal_bits(site_id, goals)


@pytest.fixture
def store() -> Iterator[Watched]:
    store = Watched(":memory:")
    store.append(rows_to_table(random_events(random.Random(11), 200)))
    yield store
    store.hold.set()
    store.close()


def test_goalbitsreader001_goals_changed_while_bits_are_stored_are_stored_after(store: Watched) -> None:
    reader = EventReader(store)
    goals = GOALS
    store.hold.clear()
    reader.store_goal_bits_soon(1, lambda: goals)
    wait_until(lambda: store.calls, message="the registration did not start")
    goals = LATER_GOALS  # the site's goals change twice while the first registration runs
    reader.store_goal_bits_soon(1, lambda: goals)
    reader.store_goal_bits_soon(1, lambda: goals)
    store.hold.set()
    wait_until(lambda: not reader.storing_goal_bits(), message="the registrations did not end")
    assert store.calls == [GOALS, LATER_GOALS]  # once more, not once per change
    assert store.stored_goal_bits(1, LATER_GOALS) is not None


def test_goalbitsreader002_a_failed_registration_is_not_tried_again_at_once(
    store: Watched, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = EventReader(store)
    store.fail = True
    reader.store_goal_bits_soon(1, lambda: GOALS)
    wait_until(lambda: not reader.storing_goal_bits() and store.calls, message="the registration did not end")
    reader.store_goal_bits_soon(1, lambda: GOALS)  # within the pause: nothing
    assert not reader.storing_goal_bits() and len(store.calls) == 1
    assert store.stored_goal_bits(1, GOALS) is None
    monkeypatch.setattr(reader_module, "RETRY_GOAL_BITS_SECONDS", 0.0)  # the pause is over
    store.fail = False
    reader.store_goal_bits_soon(1, lambda: GOALS)
    wait_until(lambda: not reader.storing_goal_bits() and len(store.calls) == 2, message="it was not tried again")
    assert store.stored_goal_bits(1, GOALS) is not None
