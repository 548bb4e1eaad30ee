"""The daily merge of a ClickHouse store's ``sessions`` table, at an hour the operator picks.

Reads take whole sessions from the table, merging each session's rows across parts at read time (``FINAL``), only
while that costs less than grouping the window's events: for most windows, while its largest part holds at least
``query.facts.MERGED_SHARE`` (80%) of its rows. Every copy of events into the store adds a small part, which
ClickHouse merges with other small parts long before it merges them into the largest: the 10M-event bench file fed
in time order, as ingestion feeds it, settled in six parts, the largest holding 80.5%, where the overview read 592 ms
from the table against 342 ms from the table in one part and 800 ms grouping the events (``bench/analysis.md``). Left
alone, a live store's table drifts below the mark, and its reads fall back to grouping events.

So once a day, in the hour ``clickhouse_merge_hour`` (UTC), the server merges the table into one part
(``ClickHouseEventStore.merge_sessions``) when its largest part holds less than ``MERGE_BELOW``. After a merge the
share stays at or above 80% until a quarter as many rows as the table held have been added since. Above
``MERGE_BELOW`` the table is left as it is: rewriting it whole takes minutes at 100M events, for the few rows outside
its largest part. On a cluster the share is that of the ``sessions_local`` parts of the server sitelens reaches; one
that holds none is not merged by this schedule (``sitelens clickhouse-merge-sessions`` merges every node's).

The merge runs on a client of its own, so reads and inserts go on meanwhile. Stopping the server during a merge
waits for it to end: ClickHouse finishes a merge it has begun even when the query that asked for it is killed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from api_backend.store.clickhouse import ClickHouseEventStore

__all__ = ["MERGE_BELOW", "SessionsMergeSchedule"]

log = logging.getLogger(__name__)

# The share of the table's rows below which its largest part makes the daily merge run.
MERGE_BELOW = 0.95


def _utc_now() -> datetime:
    return datetime.now(UTC)


class SessionsMergeSchedule:
    """Merges ``store``'s ``sessions`` table once a day in the UTC hour ``hour`` when it needs it (see the module).

    ``start`` runs the checks on a thread of their own: one at once, then one at each full hour. ``now`` gives the
    time (aware, UTC); tests pass their own.
    """

    def __init__(self, store: ClickHouseEventStore, hour: int, *, now: Callable[[], datetime] = _utc_now) -> None:
        if not 0 <= hour <= 23:
            raise ValueError(f"hour must be from 0 to 23, not {hour}")
        self.store = store
        self.hour = hour
        self._now = now
        self._checked_on: date | None = None  # the day whose hour was checked last
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="sitelens-sessions-merge", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop checking; wait for a merge under way to end."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def check(self) -> dict[str, Any] | None:
        """In the day's merge hour, once that day: merge the table if it needs it. Returns what ``merge_if_needed``
        returns, None outside the hour or when the day's hour was checked already."""
        now = self._now()
        if now.hour != self.hour or self._checked_on == now.date():
            return None
        self._checked_on = now.date()
        return self.merge_if_needed()

    def merge_if_needed(self) -> dict[str, Any]:
        """Merge the table when its largest part holds less than ``MERGE_BELOW`` of its rows.

        Returns ``share`` (before; None for a table this server holds no rows of) and ``merged``; after a merge,
        also the parts before and after it and its seconds.
        """
        share = self.store.sessions_merged_share()
        if share is None or share >= MERGE_BELOW:
            return {"share": share, "merged": False}
        started = time.monotonic()
        parts = self.store.merge_sessions()
        seconds = round(time.monotonic() - started, 1)
        log.info(
            "merged the sessions table (largest part %.1f%% of its rows): %d parts -> %d in %.1f s",
            100 * share,
            parts["parts_before"],
            parts["parts_after"],
            seconds,
        )
        return {"share": share, "merged": True, **parts, "seconds": seconds}

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.check()
            except Exception:  # a server gone or a missing grant: say so, and try again the next day
                log.exception("the daily merge of the ClickHouse sessions table failed")
            now = self._now()
            next_hour = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
            self._stop.wait(max((next_hour - now).total_seconds(), 1.0))
