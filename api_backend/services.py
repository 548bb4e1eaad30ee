"""The long-lived objects one sitelens process shares: settings, stores and the event writer."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from api_backend.ingest.pipeline import Ingestor
from api_backend.ingest.sessions import SESSION_TIMEOUT, STAMP_LEAD
from api_backend.read import EventReader
from api_backend.settings import Settings
from api_backend.store.clickhouse import ClickHouseEventStore
from api_backend.store.events import EventStore
from api_backend.store.merging import SessionsMergeSchedule
from api_backend.store.metadata import MetadataStore
from api_backend.store.sealing import SessionsSealSchedule
from api_backend.store.startup import open_events, open_metadata_store
from api_backend.store.writer import BatchWriter, VisibleEventStore

__all__ = ["SEAL_IDLE", "Services", "open_services"]

# How long a session has been idle before a seal writes it: the session timeout, the stamps' lead and a margin for
# an event that waited in the event log or a clock that stepped back a little.
SEAL_IDLE = SESSION_TIMEOUT + STAMP_LEAD + timedelta(minutes=5)


@dataclass
class Services:
    """What routes reach through ``request.app.state.services``."""

    settings: Settings
    metadata: MetadataStore
    events: EventStore
    writer: BatchWriter
    ingestor: Ingestor
    # The daily merge of a ClickHouse store's sessions table (``store/merging.py``), where it runs.
    merging: SessionsMergeSchedule | None = None
    # The seals of a ClickHouse store's sessions (``store/sealing.py``), where they run.
    sealing: SessionsSealSchedule | None = None
    reader: EventReader = field(init=False)

    def __post_init__(self) -> None:
        self.reader = EventReader(self.events)

    def forget_cached_reads(self) -> None:
        """Drop every cached read result: after a site's deletion its id may be given to a new site."""
        self.reader.forget()

    def close(self) -> None:
        """Commit queued events, then release both stores."""
        if self.merging is not None:
            self.merging.close()
        if self.sealing is not None:
            self.sealing.close()
        self.ingestor.close()
        self.writer.close()
        self.events.close()
        self.metadata.close()


def open_services(settings: Settings) -> Services:
    """Open the stores named by ``settings`` (applying metadata migrations) and start the writer."""
    metadata = open_metadata_store(settings)
    try:
        # Events are acknowledged once in the synced event log beside the store, and copied into it in bulk.
        store, event_log = open_events(settings)
    except BaseException:
        metadata.close()
        raise
    # A log append costs a fraction of a millisecond, so it needs no linger: what arrives during one sync is the
    # next group.
    writer = BatchWriter(
        store,
        log=event_log,
        linger=0 if event_log else 0.005,
        apply_interval=settings.commit_interval_ms / 1000,
    )
    events = VisibleEventStore(store, writer)
    ingestor = Ingestor(settings, metadata, events, writer)
    merging = None
    if isinstance(store, ClickHouseEventStore) and settings.clickhouse_merge_hour is not None:
        merging = SessionsMergeSchedule(store, settings.clickhouse_merge_hour)
        merging.start()
    sealing = None
    if isinstance(store, ClickHouseEventStore) and settings.clickhouse_seal_seconds is not None:
        sealing = SessionsSealSchedule(store, settings.clickhouse_seal_seconds, SEAL_IDLE)
        sealing.start()
    return Services(settings, metadata, events, writer, ingestor, merging, sealing)
