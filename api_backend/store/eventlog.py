"""The event log: an append-only, fsynced file of event batches, so an event is durable before DuckDB has it.

A DuckDB transaction costs milliseconds whatever its size, while appending to a file and syncing it costs
a fraction of one. So tracked events are acknowledged once their batch is in this log, and the writer
copies the log into the event store in large transactions behind it. The store records, in the same
transaction as the rows, the sequence number of the last batch it holds; on start-up every logged batch
after that number is copied again, so a crash at any point loses nothing and duplicates nothing.

On disk: a directory of segment files named by the sequence number of their first record. A record is a
header (magic, sequence number, payload length, CRC-32 of the payload) followed by the batch as an Arrow
IPC stream. A torn record at the end of the newest segment (the process died mid-write, so the batch was
never acknowledged) is cut off when the log is opened. Segments whose every record the store holds are
deleted.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

__all__ = ["EventLog", "LogCorruptError"]

log = logging.getLogger(__name__)

_MAGIC = b"SLE1"
_HEADER = struct.Struct("<4sQII")  # magic, sequence number, payload length, CRC-32 of the payload
_SUFFIX = ".log"


class LogCorruptError(RuntimeError):
    """A record inside the log (not at its very end) does not read back; the log needs attention."""


def _serialize(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table)
    return sink.getvalue().to_pybytes()


def _deserialize(payload: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(payload)).read_all()


def _sync_directory(path: Path) -> None:
    """Make a created or deleted file name durable (the file's own fsync does not cover its directory entry)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class EventLog:
    """Appends batches with increasing sequence numbers; reads back those a store does not yet hold."""

    def __init__(self, directory: str | Path, *, segment_bytes: int = 32 * 1024 * 1024) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._segment_bytes = segment_bytes
        self._lock = threading.Lock()
        self._segments: list[tuple[int, Path]] = sorted(
            (int(p.stem), p) for p in self.directory.glob(f"*{_SUFFIX}") if p.stem.isdigit()
        )
        self._last_seq = 0
        self._file: BinaryIO | None = None
        self._size = 0
        if self._segments:
            first, newest = self._segments[-1]
            self._last_seq = self._check_tail(newest) or first - 1
            if newest.stat().st_size == 0:  # created just before a crash: the next append starts a fresh one
                newest.unlink()
                self._segments.pop()

    @property
    def last_seq(self) -> int:
        """Sequence number of the newest record written (0 for a log that never held one)."""
        return self._last_seq

    def start_after(self, seq: int) -> None:
        """Continue numbering after ``seq`` (the store's position) when the log itself remembers less."""
        with self._lock:
            self._last_seq = max(self._last_seq, seq)

    def append(self, table: pa.Table) -> int:
        """Write ``table`` as the next record, sync it to disk, and return its sequence number."""
        payload = _serialize(table)
        with self._lock:
            seq = self._last_seq + 1
            if self._file is None or self._size >= self._segment_bytes:
                self._open_segment(seq)
            assert self._file is not None
            record = _HEADER.pack(_MAGIC, seq, len(payload), zlib.crc32(payload)) + payload
            try:
                self._file.write(record)
                self._file.flush()
                os.fdatasync(self._file.fileno())
            except OSError:
                # Leave no partial record behind: later records must follow a whole one to be readable.
                self._file.truncate(self._size)
                raise
            self._size += len(record)
            self._last_seq = seq
        return seq

    def replay(self, after: int) -> Iterator[tuple[int, pa.Table]]:
        """Every record with a sequence number above ``after``, oldest first."""
        with self._lock:
            segments = list(self._segments)
        for index, (_, path) in enumerate(segments):
            following = segments[index + 1][0] if index + 1 < len(segments) else None
            if following is not None and following - 1 <= after:
                continue  # every record of this segment is already in the store
            for seq, payload in self._records(path):
                if seq > after:
                    yield seq, _deserialize(payload)

    def discard_through(self, seq: int) -> int:
        """Delete the segments (other than the one being written) whose records all have numbers up to ``seq``."""
        removed = 0
        with self._lock:
            while len(self._segments) > 1 and self._segments[1][0] - 1 <= seq:
                _, path = self._segments.pop(0)
                path.unlink(missing_ok=True)
                removed += 1
        if removed:
            _sync_directory(self.directory)
        return removed

    def close(self) -> None:
        """Close the segment being written (everything in it is already synced)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    # -- internals ------------------------------------------------------------------------------------------------

    def _open_segment(self, first_seq: int) -> None:
        if self._file is not None:
            self._file.close()
        path = self.directory / f"{first_seq:020d}{_SUFFIX}"
        self._file = open(path, "ab")  # noqa: SIM115 - kept open for appends until the next rotation or close
        self._size = self._file.tell()
        self._segments.append((first_seq, path))
        _sync_directory(self.directory)

    def _records(self, path: Path) -> Iterator[tuple[int, bytes]]:
        data = path.read_bytes()
        offset = 0
        while offset < len(data):
            record = self._read_record(data, offset)
            if record is None:
                raise LogCorruptError(f"unreadable record at byte {offset} of {path}")
            seq, payload, offset = record
            yield seq, payload

    @staticmethod
    def _read_record(data: bytes, offset: int) -> tuple[int, bytes, int] | None:
        end = offset + _HEADER.size
        if end > len(data):
            return None
        magic, seq, length, crc = _HEADER.unpack_from(data, offset)
        payload = data[end : end + length]
        if magic != _MAGIC or len(payload) != length or zlib.crc32(payload) != crc:
            return None
        return seq, payload, end + length

    def _check_tail(self, path: Path) -> int:
        """Cut a torn record off the newest segment; return the last good sequence number in it (0 if none)."""
        data = path.read_bytes()
        offset, last = 0, 0
        while offset < len(data):
            record = self._read_record(data, offset)
            if record is None:
                log.warning("event log %s: cutting %d bytes of an unfinished record", path, len(data) - offset)
                with open(path, "r+b") as f:
                    f.truncate(offset)
                    f.flush()
                    os.fsync(f.fileno())
                break
            last, _, offset = record
        return last
