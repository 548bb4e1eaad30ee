"""The row coalescer: concurrent requests share one writer submission, and nobody is answered before the commit."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
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


@pytest.fixture
def slow(tmp_path) -> Iterator[tuple[SlowStore, RowCoalescer]]:
    """A coalescer over a writer (no log) whose store holds each commit until ``store.release`` is set."""
    store = SlowStore(tmp_path / "events.duckdb")
    writer = BatchWriter(store, linger=0)
    try:
        yield store, RowCoalescer(writer)
    finally:
        store.release.set()
        writer.close()
        store.close()


def test_coalescer001_groups_rows_while_a_commit_is_in_flight(slow):
    store, coalescer = slow
    first = coalescer.submit([row("/first")])
    waiting = [coalescer.submit([row(f"/w{i}"), row(f"/w{i}b")]) for i in range(50)]
    assert not first.done() and not any(f.done() for f in waiting)  # nothing answered before its commit
    store.release.set()
    assert first.result(10) == 1
    assert [f.result(10) for f in waiting] == [2] * 50
    # The 50 requests that arrived during the first commit went to the writer as one group.
    assert store.batches == [1, 100]
    assert store.count() == 101


def test_coalescer002_a_row_that_cannot_be_stored_fails_only_its_request(slow):
    store, coalescer = slow
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


class CountingLoop(asyncio.SelectorEventLoop):
    """A real event loop that counts the calls other threads make into it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls_from_threads = 0

    def call_soon_threadsafe(self, callback, *args, context=None):
        self.calls_from_threads += 1
        return super().call_soon_threadsafe(callback, *args, context=context)


def test_coalescer004_tasks_waiting_on_one_group_are_woken_by_one_call_into_their_loop(slow):
    store, coalescer = slow
    loop = CountingLoop()

    async def requests() -> list[int]:
        first = asyncio.ensure_future(coalescer.write([row("/first")]))
        await asyncio.sleep(0)
        waiting = [asyncio.ensure_future(coalescer.write([row(f"/w{i}")])) for i in range(30)]
        await asyncio.sleep(0)
        assert not first.done() and not any(task.done() for task in waiting)  # nothing answered before the commit
        store.release.set()
        return [await first, *await asyncio.gather(*waiting)]

    try:
        assert loop.run_until_complete(requests()) == [1] * 31
    finally:
        loop.close()
    assert store.batches == [1, 30]
    # Two groups (the first row, then the 30 that came during its commit): two calls, not 31.
    assert loop.calls_from_threads == 2


@pytest.mark.parametrize("how", ["write", "submit"])
def test_coalescer005_requests_that_stop_waiting_leave_the_others_and_later_ones_unharmed(slow, how):
    """A cancelled waiter (its request's task cancelled while its rows were being made durable) is skipped: the rest
    of its group is answered, its rows are stored all the same, and the next groups go through."""
    store, coalescer = slow

    def wait(rows: list[tuple]) -> asyncio.Future:
        if how == "write":
            return asyncio.ensure_future(coalescer.write(rows))
        return asyncio.wrap_future(coalescer.submit(rows))  # cancelling it cancels the submitted future too

    async def requests() -> list:
        tasks = [wait([row(f"/r{i}")]) for i in range(20)]
        await asyncio.sleep(0)
        for task in tasks[5:15]:
            task.cancel()
        store.release.set()
        answers = await asyncio.gather(*tasks, return_exceptions=True)
        later = await asyncio.wait_for(wait([row("/later")]), 10)
        return [*answers, later]

    answers = asyncio.run(requests())
    assert answers[:5] + answers[15:] == [1] * 11
    assert all(isinstance(answer, asyncio.CancelledError) for answer in answers[5:15])
    assert store.count() == 21


def test_coalescer006_awaited_writes_fail_with_the_writers_error_or_their_own(tmp_path):
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    writer = BatchWriter(store, linger=0)
    coalescer = RowCoalescer(writer)

    async def requests() -> list:
        return await asyncio.gather(
            coalescer.write([row("/good")]),
            coalescer.write([row("/bad\ud800")]),
            coalescer.write([row("/also-good")]),
            return_exceptions=True,
        )

    try:
        good, bad, also_good = asyncio.run(requests())
        assert (good, also_good) == (1, 1) and isinstance(bad, UnicodeEncodeError)
        writer.close()
        with pytest.raises(WriterClosedError):
            asyncio.run(coalescer.write([row("/late")]))
    finally:
        writer.close()
        store.close()
