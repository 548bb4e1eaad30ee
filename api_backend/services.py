"""The long-lived objects one sitelens process shares: settings, stores and the event writer."""

from __future__ import annotations

from dataclasses import dataclass, field

from api_backend.ingest.pipeline import Ingestor
from api_backend.read import EventReader
from api_backend.settings import Settings
from api_backend.store.clickhouse import ClickHouseEventStore
from api_backend.store.events import EventStore
from api_backend.store.merging import SessionsMergeSchedule
from api_backend.store.metadata import MetadataStore
from api_backend.store.startup import open_events, open_metadata_store
from api_backend.store.writer import BatchWriter, VisibleEventStore

__all__ = ["Services", "open_services"]


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
    return Services(settings, metadata, events, writer, ingestor, merging)
