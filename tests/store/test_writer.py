"""The group-commit writer: committed before acknowledged, and one bad submission never stops it."""

from __future__ import annotations

from concurrent.futures import wait
from datetime import datetime

import pytest

from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.writer import BatchWriter, WriterClosedError


def rows(n: int, site_id: int = 1) -> list[dict]:
    return [{"site_id": site_id, "timestamp": datetime(2026, 1, 1, 0, 0, i % 60), "type": "pageview"} for i in range(n)]


@pytest.fixture
def store(tmp_path):
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    yield store
    store.close()


def test_many_submissions_are_all_committed_before_their_futures_resolve(store):
    writer = BatchWriter(store, linger=0.01)
    futures = [writer.submit(rows(3)) for _ in range(200)]
    wait(futures)
    assert [f.result() for f in futures] == [3] * 200
    assert store.count(1) == 600
    writer.close()


def test_a_submission_that_cannot_be_converted_fails_alone(store):
    writer = BatchWriter(store, linger=0.05)
    good = writer.submit(rows(2))
    bad = writer.submit([{"site_id": "not a number", "timestamp": datetime(2026, 1, 1), "type": "pageview"}])
    also_good = writer.submit(rows(1))
    assert good.result(timeout=5) == 2 and also_good.result(timeout=5) == 1
    with pytest.raises(ValueError):
        bad.result(timeout=5)
    assert writer.write(rows(4)) == 4
    assert store.count(1) == 7
    writer.close()


def test_close_commits_what_is_queued_and_refuses_more(store):
    writer = BatchWriter(store, linger=1.0)
    future = writer.submit(rows(5))
    writer.close()
    assert future.result(timeout=5) == 5 and store.count(1) == 5
    with pytest.raises(WriterClosedError):
        writer.submit(rows(1))
