"""Server-side sessions: a new session after 30 minutes without an event from the same visitor on a site.

``SessionTracker`` keeps ``(site_id, visitor) -> (session_id, last_seen)`` in memory. Entries idle longer than
the timeout are pruned now and then, so memory follows the number of live visitors. At start-up the map is
recovered from the event store (``recover``), so a restart does not split sessions that are still live.

A new session's id is a UUID version 7 in 32 hex digits (``new_session_id``): its first 12 digits are the
milliseconds since the epoch of the event that opened it. The store finds the stored sessions a batch continues
among those that began at most a little before that time (``store/sessions.py``), not among all of them.

The tracker also gives each session's events their times (``sessions_for``): the clock's reading, but at least a
millisecond after the session's last event, so the events of one session never share a time and keep the order they
arrived in (a batch sent by a server lists a visit's pages in order, which its entry and exit pages and a funnel's
steps are read from). A session's events run ahead of the clock by at most ``STAMP_LEAD``; past that (a sender
flooding one session with over a thousand events a second) they share the time ``now + STAMP_LEAD``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

__all__ = ["SESSION_TIMEOUT", "STAMP_LEAD", "SessionTracker", "new_session_id", "stamp"]

SESSION_TIMEOUT = timedelta(minutes=30)
# How far ahead of the clock a session's events may be stamped to keep them a millisecond apart: a batch of 1000
# events of one visitor spans 999 ms.
STAMP_LEAD = timedelta(seconds=1)
_PRUNE_EVERY = timedelta(minutes=1)
_EPOCH = datetime(1970, 1, 1)
_MILLISECOND = timedelta(milliseconds=1)
# A random hex digit made a UUID variant digit (binary 10xx).
_VARIANT = {digit: "89ab"[int(digit, 16) % 4] for digit in "0123456789abcdef"}


def _opened(now: datetime) -> str:
    """The first 13 digits of the ids of sessions opened at ``now``: its milliseconds since the epoch, version 7."""
    return f"{(now - _EPOCH) // _MILLISECOND:012x}7"


def _random_part() -> str:
    """The last 19 digits of a new session id: random, but for the variant digit."""
    digits = os.urandom(10).hex()
    return digits[:3] + _VARIANT[digits[3]] + digits[4:19]


def stamp(first: datetime, rank: int, lead: datetime) -> datetime:
    """The time of a session's event ``rank`` places after the one stamped ``first`` in the same call: a millisecond
    per place, at most ``lead``."""
    return min(first + rank * _MILLISECOND, lead) if rank else first


def new_session_id(now: datetime) -> str:
    """The id of a session opened at ``now`` (naive UTC): a UUID version 7 whose time is ``now`` to the millisecond."""
    return _opened(now) + _random_part()


class SessionTracker:
    """Assigns session ids to events, visitor by visitor (thread-safe)."""

    def __init__(self, timeout: timedelta = SESSION_TIMEOUT) -> None:
        self.timeout = timeout
        self._live: dict[tuple[int, str], tuple[str, datetime]] = {}
        self._lock = threading.Lock()
        self._next_prune: datetime | None = None

    def __len__(self) -> int:
        return len(self._live)

    def recover(self, rows: Iterable[tuple[int, str, str, datetime]]) -> int:
        """Load ``(site_id, visitor, session_id, last_timestamp)`` rows (e.g. ``EventStore.latest_sessions``)."""
        count = 0
        with self._lock:
            for site_id, visitor, session_id, last_seen in rows:
                key = (int(site_id), visitor)
                current = self._live.get(key)
                if current is None or current[1] < last_seen:
                    self._live[key] = (session_id, last_seen)
                    count += 1
        return count

    def session_for(self, site_id: int, visitor: str, now: datetime) -> str:
        """The session of one event at ``now``: the visitor's live one, or a new one after the timeout."""
        (session_id,), _ = self.sessions_for([(site_id, visitor)], now)
        return session_id

    def sessions_for(
        self, visitors: Iterable[tuple[int, str]], now: datetime, counts: Sequence[int] | None = None
    ) -> tuple[list[str], dict[int, datetime]]:
        """For each ``(site_id, visitor)`` in order, with ``counts[i]`` events (1 each without ``counts``) arriving
        at ``now``: its session (the live one, or a new one after the timeout), under one lock. Also the time of the
        first event of each visitor ``i`` whose first event is stamped later than ``now``: a live session whose last
        event is no older than ``now`` goes on a millisecond after it, at most ``STAMP_LEAD`` after ``now``; the
        others start at ``now``. The events after the first are stamped a millisecond apart (``stamp``), and the
        session's last time moves to its last event's.
        """
        ids: list[str] = []
        later: dict[int, datetime] = {}
        live = self._live
        timeout = self.timeout
        opened = _opened(now)
        lead = now + STAMP_LEAD
        with self._lock:
            for i, key in enumerate(visitors):
                current = live.get(key)
                last = None
                if current is not None and now - current[1] <= timeout:
                    session_id, last = current
                    # Usually the last event is older than this reading; else (the same millisecond, a batch
                    # stamped ahead, a clock stepped back) the events go on after it.
                    if last < now:
                        first = now
                    else:
                        first = later[i] = min(last + _MILLISECOND, lead)
                else:
                    session_id, first = opened + _random_part(), now
                end = first if counts is None or counts[i] == 1 else stamp(first, counts[i] - 1, lead)
                if last is None or end > last:  # a clock stepped back must not move the last time back
                    live[key] = (session_id, end)
                ids.append(session_id)
            if self._next_prune is None or now >= self._next_prune:
                self._prune(now)
        return ids, later

    def forget_site(self, site_id: int) -> None:
        """Drop every live session of a deleted site."""
        with self._lock:
            for key in [k for k in self._live if k[0] == site_id]:
                del self._live[key]

    def _prune(self, now: datetime) -> None:
        cutoff = now - self.timeout
        for key in [k for k, (_, seen) in self._live.items() if seen < cutoff]:
            del self._live[key]
        self._next_prune = now + _PRUNE_EVERY
