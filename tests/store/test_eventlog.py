"""The event log and the writer's two stages: acknowledged once logged, applied in bulk, replayed after a crash."""

from __future__ import annotations

import fcntl
import os
import threading
from datetime import datetime

import pyarrow as pa
import pytest

from api_backend.store.duckdb import DuckDBEventStore
from api_backend.store.eventlog import EventLog, LogCorruptError
from api_backend.store.events import rows_to_table
from api_backend.store.writer import BatchWriter, VisibleEventStore


def rows(n: int, site_id: int = 1, path: str = "/") -> list[dict]:
    return [
        {"site_id": site_id, "timestamp": datetime(2026, 1, 1, 0, 0, i % 60), "type": "pageview", "pathname": path}
        for i in range(n)
    ]


def table(n: int, path: str = "/") -> pa.Table:
    return rows_to_table(rows(n, path=path))


@pytest.fixture
def store(tmp_path):
    store = DuckDBEventStore(tmp_path / "events.duckdb")
    yield store
    store.close()


def paths(store: DuckDBEventStore) -> list[str]:
    return [r[0] for r in store.query("SELECT pathname FROM events ORDER BY pathname")]


# -- the log on its own ----------------------------------------------------------------------------------------------


def test_eventlog001_records_read_back_in_order_after_reopening(tmp_path):
    log = EventLog(tmp_path / "log")
    assert [log.append(table(2, "/a")), log.append(table(3, "/b"))] == [1, 2]
    log.close()

    reopened = EventLog(tmp_path / "log")
    assert reopened.last_seq == 2
    replayed = list(reopened.replay(after=0))
    assert [seq for seq, _ in replayed] == [1, 2]
    assert [t.column("pathname").to_pylist() for _, t in replayed] == [["/a"] * 2, ["/b"] * 3]
    assert [seq for seq, _ in reopened.replay(after=1)] == [2]
    assert reopened.append(table(1)) == 3  # numbering continues


def test_eventlog002_a_torn_last_record_is_cut_off_and_later_records_stay_readable(tmp_path):
    log = EventLog(tmp_path / "log")
    log.append(table(2, "/kept"))
    log.close()
    (segment,) = (tmp_path / "log").glob("*.log")
    whole = segment.stat().st_size
    with open(segment, "ab") as f:
        f.write(b"SLE1\x02\x00\x00\x00\x00\x00\x00\x00\xff\xff")  # a header cut short: the process died mid-write

    reopened = EventLog(tmp_path / "log")
    assert segment.stat().st_size == whole
    assert reopened.append(table(1, "/after")) == 2
    assert [t.column("pathname")[0].as_py() for _, t in reopened.replay(after=0)] == ["/kept", "/after"]


def test_eventlog003_a_damaged_record_inside_the_log_is_reported_not_skipped(tmp_path):
    log = EventLog(tmp_path / "log", segment_bytes=1)  # one record per segment
    log.append(table(1, "/a"))
    log.append(table(1, "/b"))
    log.close()
    first = sorted((tmp_path / "log").glob("*.log"))[0]
    data = bytearray(first.read_bytes())
    data[-1] ^= 0xFF
    first.write_bytes(bytes(data))
    with pytest.raises(LogCorruptError):
        list(EventLog(tmp_path / "log").replay(after=0))


def test_eventlog004_segments_rotate_and_applied_ones_are_deleted(tmp_path):
    log = EventLog(tmp_path / "log", segment_bytes=1)
    for i in range(4):
        log.append(table(1, f"/{i}"))
    assert len(list((tmp_path / "log").glob("*.log"))) == 4
    assert log.discard_through(2) == 2
    assert [seq for seq, _ in log.replay(after=0)] == [3, 4]
    assert log.discard_through(4) == 1  # the segment being written stays
    assert [seq for seq, _ in log.replay(after=0)] == [4]


def test_eventlog005_numbering_resumes_after_the_stores_position_when_the_log_is_empty(tmp_path):
    log = EventLog(tmp_path / "log")
    log.start_after(41)
    assert log.append(table(1)) == 42


# -- the writer with a log ---------------------------------------------------------------------------------------------


def test_eventlog006_acknowledged_from_the_log_then_applied_in_bulk_and_visible_to_readers(store, tmp_path):
    writer = BatchWriter(store, log=EventLog(tmp_path / "log"), linger=0, apply_interval=60)
    visible = VisibleEventStore(store, writer)
    assert [writer.write(rows(2)) for _ in range(5)] == [2] * 5
    assert store.count(1) == 0  # durable in the log, not applied yet: the apply stage waits for more
    assert visible.count(1) == 10  # a reader makes the apply stage run now
    assert store.applied_log_seq() == writer._log.last_seq  # the store knows how far the log is applied
    writer.close()


def test_eventlog007_logged_batches_missing_from_the_store_are_copied_once_at_start(store, tmp_path):
    log = EventLog(tmp_path / "log")
    log.append(table(2, "/applied"))
    store.append(table(2, "/applied"), log_seq=1)
    log.append(table(3, "/lost-in-crash"))
    log.append(table(1, "/also-lost"))
    log.close()

    writer = BatchWriter(store, log=EventLog(tmp_path / "log"))
    assert paths(store) == ["/also-lost"] + ["/applied"] * 2 + ["/lost-in-crash"] * 3
    assert store.applied_log_seq() == 3
    writer.close()

    writer = BatchWriter(store, log=EventLog(tmp_path / "log"))  # a second start copies nothing again
    assert len(paths(store)) == 6
    assert writer.write(rows(1, path="/new")) == 1
    writer.close()
    assert store.count(1) == 7 and store.applied_log_seq() == 4


def test_eventlog008_the_log_shrinks_once_applied(store, tmp_path):
    log = EventLog(tmp_path / "log", segment_bytes=1)
    writer = BatchWriter(store, log=log, linger=0, apply_interval=0)
    for i in range(6):
        writer.write(rows(1, path=f"/{i}"))
    writer.wait_visible()
    writer.close()
    assert store.count(1) == 6
    assert len(list((tmp_path / "log").glob("*.log"))) == 1  # only the segment last written


def test_eventlog009_large_submissions_skip_the_log_and_wait_for_the_store(store, tmp_path):
    log = EventLog(tmp_path / "log")
    writer = BatchWriter(store, log=log, apply_interval=60, log_max_rows=100)
    assert writer.write(table(500)) == 500
    assert store.count(1) == 500  # acknowledged only once committed to the store
    assert log.last_seq == 0
    writer.close()


def test_eventlog010_a_bad_submission_fails_alone_before_anything_is_logged(store, tmp_path):
    log = EventLog(tmp_path / "log")
    writer = BatchWriter(store, log=log, linger=0.05)
    good = writer.submit(rows(2))
    no_time = writer.submit([{"site_id": 1, "type": "pageview"}])  # timestamp is required
    wrong_type = writer.submit([{"site_id": "x", "timestamp": datetime(2026, 1, 1), "type": "pageview"}])
    assert good.result(timeout=5) == 2
    with pytest.raises(ValueError):
        no_time.result(timeout=5)
    with pytest.raises(ValueError):
        wrong_type.result(timeout=5)
    writer.close()
    assert store.count(1) == 2
    assert sum(t.num_rows for _, t in EventLog(tmp_path / "log").replay(after=0)) == 2


class FlakyStore(DuckDBEventStore):
    """A store whose first ``failures`` transactions fail, as when the disk is briefly full."""

    def __init__(self, path, failures: int) -> None:
        super().__init__(path)
        self.failures = failures
        self.attempts = 0

    def append(self, table, *, log_seq=None):
        self.attempts += 1
        if self.attempts <= self.failures:
            raise OSError("No space left on device")
        return super().append(table, log_seq=log_seq)


def test_eventlog011_logged_events_are_retried_until_the_store_takes_them(tmp_path):
    store = FlakyStore(tmp_path / "events.duckdb", failures=2)
    writer = BatchWriter(store, log=EventLog(tmp_path / "log"), linger=0, apply_interval=0)
    assert writer.write(rows(3)) == 3  # acknowledged: it is in the log whatever the store does
    writer.wait_visible(timeout=10)
    assert store.count(1) == 3 and store.attempts == 3
    writer.close()
    store.close()


def test_eventlog012_without_a_log_a_failed_commit_fails_its_submitters(tmp_path):
    store = FlakyStore(tmp_path / "events.duckdb", failures=1)
    writer = BatchWriter(store, linger=0)
    with pytest.raises(OSError):
        writer.write(rows(3))
    assert writer.write(rows(1)) == 1
    writer.close()
    assert store.count(1) == 1
    store.close()


def test_eventlog013_reads_after_concurrent_acknowledgements_see_them_all(store, tmp_path):
    writer = BatchWriter(store, log=EventLog(tmp_path / "log"), apply_interval=60)
    visible = VisibleEventStore(store, writer)
    seen: list[tuple[int, int]] = []

    def client(k: int) -> None:
        for i in range(20):
            writer.write(rows(1, site_id=k))
            seen.append((i + 1, visible.count(k)))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    assert all(count >= written for written, count in seen)
    assert store.count() == 80


class BlockedStore(DuckDBEventStore):
    """A store whose transactions wait until the test lets them through, as a store that has fallen behind."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.entered = threading.Event()
        self.release = threading.Event()

    def append(self, table, *, log_seq=None):
        self.entered.set()
        assert self.release.wait(10)
        return super().append(table, log_seq=log_seq)


def test_eventlog014_intake_waits_when_the_store_falls_behind(tmp_path):
    store = BlockedStore(tmp_path / "events.duckdb")
    writer = BatchWriter(store, log=EventLog(tmp_path / "log"), linger=0, apply_interval=0, max_queued_rows=5)
    assert writer.write(rows(3)) == 3
    assert store.entered.wait(5)  # the store is busy with the first batch
    assert writer.write(rows(3)) == 3  # queued behind it: 3 rows waiting
    assert writer.write(rows(3)) == 3  # 6 rows waiting: the bound is reached
    held = writer.submit(rows(3))
    with pytest.raises(TimeoutError):
        held.result(timeout=0.5)  # not acknowledged while the queue is full
    store.release.set()
    assert held.result(timeout=5) == 3
    writer.wait_visible()
    assert store.count(1) == 12
    writer.close()
    store.close()


def test_eventlog015_damage_followed_by_valid_records_stops_opening_instead_of_cutting(tmp_path):
    log = EventLog(tmp_path / "log")
    for name in ("/a", "/b", "/c"):
        log.append(table(2, name))
    log.close()
    (segment,) = (tmp_path / "log").glob("*.log")
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a flipped byte in the middle record: acknowledged records follow it
    segment.write_bytes(bytes(data))

    with pytest.raises(LogCorruptError) as refused:
        EventLog(tmp_path / "log")
    message = str(refused.value)
    assert str(segment) in message and "move" in message and "\n" not in message
    assert segment.read_bytes() == bytes(data)  # nothing cut


def test_eventlog016_a_damaged_final_record_alone_is_cut_as_torn(tmp_path):
    log = EventLog(tmp_path / "log")
    log.append(table(1, "/a"))
    log.append(table(1, "/b"))
    log.close()
    (segment,) = (tmp_path / "log").glob("*.log")
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0xFF
    segment.write_bytes(bytes(data))

    reopened = EventLog(tmp_path / "log")
    assert reopened.last_seq == 1
    assert [t.column("pathname")[0].as_py() for _, t in reopened.replay(after=0)] == ["/a"]


def test_eventlog017_every_segment_is_written_synchronously(tmp_path):
    """Segments are opened with ``O_DSYNC``, so an append is on disk when its write returns: the first segment, a
    rotated one, and one reopened after the log is."""
    log = EventLog(tmp_path / "log", segment_bytes=1)  # one record per segment
    log.append(rows_to_table(rows(2)))
    assert fcntl.fcntl(log._fd, fcntl.F_GETFL) & os.O_DSYNC
    log.append(rows_to_table(rows(2)))
    assert fcntl.fcntl(log._fd, fcntl.F_GETFL) & os.O_DSYNC
    log.close()
    reopened = EventLog(tmp_path / "log")
    reopened.append(rows_to_table(rows(1)))
    assert fcntl.fcntl(reopened._fd, fcntl.F_GETFL) & os.O_DSYNC
    assert [seq for seq, _ in reopened.replay(0)] == [1, 2, 3]
    reopened.close()
