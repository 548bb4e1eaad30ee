"""The row coalescer: concurrent requests share one writer submission, and nobody is answered before the commit."""

from __future__ import annotations

import threading
from datetime import datetime

import pytest

from api_backend.store.coalescer import RowCoalescer
from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.events import event_record
from api_backend.store.writer import BatchWriter, WriterClosedError


class SlowStore(DuckDBEventStore):
    """The real DuckDB store, holding each commit until the test lets it go."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.release = threading.Event()
        self.batches: list[int] = []

    def append(self, table):
        self.release.wait(10)
        self.batches.append(table.num_rows)
        return super().append(table)


def row(path: str) -> tuple:
    return event_record({"site_id": 1, "timestamp": datetime(2026, 3, 1, 9, 0), "pathname": path})


def test_coalescer001_groups_rows_while_a_commit_is_in_flight(tmp_path):
    store = SlowStore(tmp_path / "events.duckdb")
    writer = BatchWriter(store, linger=0)
    coalescer = RowCoalescer(writer)
    try:
        first = coalescer.submit([row("/first")])
        waiting = [coalescer.submit([row(f"/w{i}"), row(f"/w{i}b")]) for i in range(50)]
        assert not first.done() and not any(f.done() for f in waiting)  # nothing answered before its commit
        store.release.set()
        assert first.result(10) == 1
        assert [f.result(10) for f in waiting] == [2] * 50
        # The 50 requests that arrived during the first commit went to the writer as one group.
        assert store.batches == [1, 100]
        assert store.count() == 101
    finally:
        store.release.set()
        writer.close()
        store.close()


def test_coalescer002_a_row_that_cannot_be_stored_fails_only_its_request(tmp_path):
    store = SlowStore(tmp_path / "events.duckdb")
    writer = BatchWriter(store, linger=0)
    coalescer = RowCoalescer(writer)
    try:
        first = coalescer.submit([row("/first")])
        good = coalescer.submit([row("/good")])
        bad = coalescer.submit([row("/bad\ud800")])  # a lone surrogate cannot be written as UTF-8
        also_good = coalescer.submit([row("/also-good")])
        store.release.set()
        assert (first.result(10), good.result(10), also_good.result(10)) == (1, 1, 1)
        with pytest.raises(UnicodeEncodeError):
            bad.result(10)
        assert sorted(r[0] for r in store.query("SELECT pathname FROM events")) == ["/also-good", "/first", "/good"]
        # The writer is still alive.
        assert coalescer.submit([row("/after")]).result(10) == 1
    finally:
        store.release.set()
        writer.close()
        store.close()


def test_coalescer003_closed_writer_fails_every_waiter(tmp_path):
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    writer = BatchWriter(store)
    writer.close()
    coalescer = RowCoalescer(writer)
    future = coalescer.submit([row("/late")])
    with pytest.raises(WriterClosedError):
        future.result(5)
    # The coalescer is not stuck: the next submission is tried (and fails the same way).
    with pytest.raises(WriterClosedError):
        coalescer.submit([row("/later")]).result(5)
    store.close()
