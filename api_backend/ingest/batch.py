"""The batch path of ``POST /api/track/batch``: validate a thousand events cheaply, then enrich them as one table.

Validation runs ``fast_event`` for plain events and ``parse_event`` (the reference) for everything else; a bad
event becomes a ``rejected`` entry. A body whose events are all plain arrives already validated
(``fastpath.plain_batch``, one typed decode of the whole body). The valid events go through
``enrich.enrich_events``, the same enrichment a single ``POST /api/track`` event gets as a batch of one, and come
out as one ``EVENT_SCHEMA`` table.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa

from api_backend.errors import InvalidRequestError
from api_backend.ingest.enrich import ClientInfo, IngestContext, enrich_events, error_text
from api_backend.ingest.fastpath import event_tuple, fast_event
from api_backend.ingest.payload import parse_event

__all__ = ["BatchOutcome", "paused_gc", "prepare_batch"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Hold back the cyclic garbage collector while a batch is decoded or prepared.

    A batch allocates tens of thousands of short-lived containers (decoded events, field tuples, group keys),
    none of them in reference cycles: reference counting frees them all when the request ends. Left on, the
    collector runs many times per batch and its older generations walk every long-lived object of the process
    (the caches of user agents, addresses, visitor ids and the live sessions), which cost about a third of the
    batch's time. It runs again as usual afterwards.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@dataclass(slots=True)
class BatchOutcome:
    """What a batch came to: the table of accepted rows (``None`` when none) and the response's lists."""

    table: pa.Table | None
    rejected: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)

    @property
    def accepted(self) -> int:
        """How many rows the table holds."""
        return self.table.num_rows if self.table is not None else 0


def _validated(
    events: list[Any], rejected: list[dict[str, Any]], exact_event: Callable[[int], Any] | None
) -> Iterator[tuple[int, tuple[Any, ...]]]:
    """``(index, event tuple)`` of every valid event; each invalid one adds ``{index, error}`` to ``rejected``."""
    for index, raw in enumerate(events):
        event = fast_event(raw)
        if event is None:
            try:
                event = event_tuple(parse_event(exact_event(index) if exact_event is not None else raw))
            except InvalidRequestError as exc:
                rejected.append({"index": index, "error": error_text(exc)})
                continue
        yield index, event


def prepare_batch(
    context: IngestContext,
    events: list[Any],
    client: ClientInfo,
    header_key: str | None,
    now: datetime,
    exact_event: Callable[[int], Any] | None = None,
    *,
    validated: bool = False,
) -> BatchOutcome:
    """Validate, filter and enrich a batch into one ``EVENT_SCHEMA`` table stamped ``now`` (not yet written).

    ``exact_event(index)`` gives the event as ``json.loads`` decodes it, for bodies decoded by orjson (see
    ``fastpath.load_json``): events that need ``parse_event`` are validated in that form. With ``validated``,
    ``events`` are already the field tuples of valid events (``fastpath.plain_batch``).
    """
    rejected: list[dict[str, Any]] = []
    # Events are validated as enrichment pulls them, so both kinds of rejection land in index order.
    checked = enumerate(events) if validated else _validated(events, rejected, exact_event)
    enriched = enrich_events(context, checked, client, header_key, now, rejected)
    return BatchOutcome(enriched.table(), rejected, enriched.dropped)
