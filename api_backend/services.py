"""The long-lived objects one sitelens process shares: settings, stores and the event writer."""

from __future__ import annotations

from dataclasses import dataclass, field

from api_backend.ingest.pipeline import Ingestor
from api_backend.query.results import ResultCache
from api_backend.query.rollups import GoalsRollupCache
from api_backend.settings import Settings
from api_backend.store.events import EventStore
from api_backend.store.metadata import MetadataStore
from api_backend.store.startup import open_event_store, open_metadata_store
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
    read_results: ResultCache = field(default_factory=ResultCache)
    goals_rollups: GoalsRollupCache = field(default_factory=GoalsRollupCache)

    def forget_cached_reads(self) -> None:
        """Drop every cached read result: after a site's deletion its id may be given to a new site."""
        self.read_results.clear()
        self.goals_rollups.clear()

    def close(self) -> None:
        """Commit queued events, then release both stores."""
        self.ingestor.close()
        self.writer.close()
        self.events.close()
        self.metadata.close()


def open_services(settings: Settings) -> Services:
    """Open the stores named by ``settings`` (applying metadata migrations) and start the writer."""
    if not settings.events_url.startswith("duckdb://"):
        raise ValueError(f"unsupported events URL {settings.events_url!r}")
    metadata = open_metadata_store(settings)
    try:
        # Events are acknowledged once in the synced event log beside the database, and copied into it in bulk.
        store, event_log = open_event_store(settings)
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
    return Services(settings, metadata, events, writer, ingestor)
