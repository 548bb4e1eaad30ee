"""The seals of a ClickHouse store's sessions: every so often, the sessions that stopped long enough ago are written
finished into ``sealed_sessions`` (``ClickHouseEventStore.seal_sessions``), which reads take them from without
merging any row (``query.facts.sessions_relation``).

A session stops getting events once its visitor is idle for the session timeout (``ingest/sessions.py``), and
ingestion stamps events on arrival, at most a stamp's lead ahead of the clock: a session idle for ``idle`` (the
server passes those two and a margin) is final, and a seal writes it once. The first seal, and the first after a
direct write to the store (a copy of events, a seeding), write every such session; the others only those the seal
before left open, found by the indexes of ``sessions``. Until a seal has been written, and while the sessions left
open are many, reads merge the table as before (``facts.facts_where_cheaper``).

The checks run on a thread of their own, one at start and then one every ``interval`` seconds; a seal that fails is
logged and tried again at the next.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from api_backend.store.clickhouse import ClickHouseEventStore
from api_backend.store.models import utcnow

__all__ = ["SessionsSealSchedule"]

log = logging.getLogger(__name__)


class SessionsSealSchedule:
    """Seals ``store``'s sessions idle for ``idle`` every ``interval`` seconds (see the module). ``now`` gives the
    time (naive UTC); tests pass their own."""

    def __init__(
        self,
        store: ClickHouseEventStore,
        interval: float,
        idle: timedelta,
        *,
        now: Callable[[], datetime] = utcnow,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be positive, not {interval}")
        self.store = store
        self.interval = interval
        self.idle = idle
        self._now = now
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="sitelens-sessions-seal", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop sealing; wait for a seal under way to end."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def seal(self) -> dict[str, Any]:
        """Seal the sessions idle for ``idle`` now; returns what the store's ``seal_sessions`` returns, with its
        seconds."""
        started = time.monotonic()
        result = self.store.seal_sessions(self._now() - self.idle)
        result["seconds"] = round(time.monotonic() - started, 1)
        if result["full"]:
            log.info(
                "sealed %d sessions (generation %d) in %.1f s",
                result["sessions"],
                result["generation"],
                result["seconds"],
            )
        return result

    def _run(self) -> None:
        # The first seal runs even where ``close`` came before it: a server that started has sealed once.
        while True:
            try:
                self.seal()
            except Exception:  # a server gone for a moment: reads merge the table meanwhile
                log.exception("sealing the ClickHouse sessions failed")
            if self._stop.wait(self.interval):
                return
