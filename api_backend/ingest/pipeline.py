"""The ``Ingestor``: from a validated tracker event to a durable row of the events table.

Per event, in this order (peer-write 4.2 with the UP trust model):

1. the site (404 when unknown), from an in-memory cache;
2. the API key, if one is presented (``Authorization: Bearer`` first, else the body's ``api_key``): it must
   belong to a member of the site's organization, else 401. A valid key makes the event *trusted*: its
   ``ip_address`` and ``user_agent`` are honoured and bot blocking is skipped. Untrusted events use the
   connection's address and ``User-Agent`` header;
3. drops by site setting, answered ``tracked: false``: ``bot`` (``blockBots``), ``excluded_ip``,
   ``excluded_country``;
4. enrichment (user agent, geo, channel, UTM, visitor id, session) and the write, acknowledged once the event
   log holds it.

Steps 3 and 4 are ``enrich.enrich_events`` for both routes: a single event is a batch of one, and
``POST /api/track/batch`` validates its events in ``batch.prepare_batch`` and gives each the same outcome.

Choices the specs leave open, written down here:

- ``trackUrlParams`` off: the raw query string and the parameter map are not stored, but the UTM columns and
  the channel are still derived from the query string, because they describe where the visit came from
  rather than what the page URL carried.
- Web vitals are stored only on ``performance`` events, and a measured 0 stays 0 (the peer turns it into
  NULL, which loses a perfect CLS score).
- ``/api/identify`` stores nothing about the person: it remembers, in memory, that this visitor (site, IP,
  user agent hash) is ``user_id``, so later events of that visitor without their own ``user_id`` carry it
  as ``identified_user_id``. Traits are validated and discarded. The mapping is forgotten after a day of
  inactivity or a restart (the browser tracker sends ``user_id`` with every event after ``identify`` anyway).
- API key checks are cached for a few seconds, so a revoked key may still be honoured for up to ``KEY_TTL``.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any

import pyarrow as pa

from api_backend.errors import AuthenticationRequiredError, NotFoundError, ServiceUnavailableError
from api_backend.ingest.batch import BatchOutcome, prepare_batch
from api_backend.ingest.budget import TrackingBudget
from api_backend.ingest.enrich import ClientInfo, SenderFacts, enrich_events
from api_backend.ingest.fastpath import event_tuple
from api_backend.ingest.geo import GeoLocator, open_locator
from api_backend.ingest.payload import TrackEvent
from api_backend.ingest.sessions import SESSION_TIMEOUT, SessionTracker
from api_backend.ingest.site_rules import SiteRules, SiteRulesCache
from api_backend.ingest.useragent import parse_user_agent
from api_backend.ingest.visitor import visitor_id
from api_backend.settings import Settings
from api_backend.store.coalescer import RowCoalescer
from api_backend.store.eventlog import LogUnavailableError
from api_backend.store.events import EventStore
from api_backend.store.metadata import MetadataStore
from api_backend.store.writer import BatchWriter

__all__ = ["ClientInfo", "Ingestor", "utc_now"]

log = logging.getLogger(__name__)

KEY_TTL = 5.0
IDENTIFY_TTL = timedelta(days=1)


def utc_now() -> datetime:
    """The current UTC time, naive, at millisecond precision (the events table's timestamp type)."""
    now = datetime.now(UTC).replace(tzinfo=None)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


class Ingestor:
    """Turns tracker events into durable rows; one per process, built by ``open_services``."""

    def __init__(
        self,
        settings: Settings,
        metadata: MetadataStore,
        events: EventStore,
        writer: BatchWriter,
        *,
        locator: GeoLocator | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.settings = settings
        self.metadata = metadata
        self.writer = writer
        self.rows = RowCoalescer(writer)
        self.clock = clock
        self.locator = locator or open_locator(settings.geoip_mmdb)
        self.sites = SiteRulesCache(metadata.site)
        self.sessions = SessionTracker()
        self.budget = TrackingBudget(settings.track_ip_events_per_minute, settings.track_site_events_per_minute)
        self._secret = settings.secret_key
        # A visitor sends many events: its visitor hash (the costliest step), user agent and geo are looked up once
        # for all of them. The arguments are the whole input, so an answer cannot go stale.
        self.sender = lru_cache(maxsize=65536)(self._sender)
        self._keys: dict[str, tuple[str | None, float]] = {}
        self._roles: dict[tuple[str, str], tuple[str | None, float]] = {}
        self._identified: dict[tuple[int, str], tuple[str, datetime]] = {}
        self._identified_lock = threading.Lock()
        self._next_identify_prune = datetime.min
        recovered = self.sessions.recover(events.latest_sessions(self.clock() - SESSION_TIMEOUT))
        if recovered:
            log.info("recovered %d live sessions from the event store", recovered)

    def _sender(self, site_id: int, ip: str, user_agent: str, salt_day: date | None) -> SenderFacts:
        geo = self.locator.locate(ip) if ip else None
        return visitor_id(self._secret, site_id, ip, user_agent, salt_day), parse_user_agent(user_agent), geo

    # Site changes -------------------------------------------------------------------------------

    def site_changed(self, site_id: int) -> None:
        """Forget the cached rules of a site whose configuration changed (called by the site routes)."""
        self.sites.invalidate(site_id)

    def site_deleted(self, site_id: int) -> None:
        """Forget everything held about a deleted site: its rules and its live sessions."""
        self.sites.invalidate(site_id)
        self.sessions.forget_site(site_id)

    # Lookups --------------------------------------------------------------------------------------

    def site_rules(self, site_key: str) -> SiteRules:
        """The cached rules of a site by ``siteId`` or string ``id``; 404 when unknown."""
        rules = self.sites.get(site_key)
        if rules is None:
            raise NotFoundError("Site not found.")
        return rules

    def key_user(self, raw_key: str) -> str | None:
        """The user id owning an API key (cached for ``KEY_TTL`` seconds), or ``None`` if unknown or revoked."""
        digest = hashlib.sha256(raw_key.encode()).hexdigest()
        now = time.monotonic()
        entry = self._keys.get(digest)
        if entry is not None and entry[1] > now:
            return entry[0]
        user = self.metadata.user_for_api_key(raw_key) if raw_key.startswith("sl_") else None
        user_id = user.id if user is not None else None
        if len(self._keys) > 10_000:
            self._keys = {k: v for k, v in self._keys.items() if v[1] > now}
        self._keys[digest] = (user_id, now + KEY_TTL)
        return user_id

    def check_key(self, raw_key: str, rules: SiteRules) -> None:
        """Accept a key whose user is a member of the site's organization; otherwise 401."""
        user_id = self.key_user(raw_key)
        if user_id is None:
            raise AuthenticationRequiredError("The API key is unknown or revoked.")
        now = time.monotonic()
        member_key = (user_id, rules.organization_id)
        entry = self._roles.get(member_key)
        if entry is None or entry[1] <= now:
            entry = (self.metadata.role_in(user_id, rules.organization_id), now + KEY_TTL)
            if len(self._roles) > 10_000:
                self._roles = {k: v for k, v in self._roles.items() if v[1] > now}
            self._roles[member_key] = entry
        if entry[0] is None:
            raise AuthenticationRequiredError("The API key does not belong to a member of this site's organization.")

    def trusted(self, event: TrackEvent, rules: SiteRules, header_key: str | None) -> bool:
        """Whether the event comes with a valid key for its site (raises 401 for a bad one)."""
        key = header_key or event.api_key
        if not key:
            return False
        self.check_key(key, rules)
        return True

    # Processing -------------------------------------------------------------------------------

    async def track(self, event: TrackEvent, client: ClientInfo, header_key: str | None) -> dict[str, Any]:
        """Process one event and answer once its row is durable (the ``/api/track`` response body)."""
        # An unknown site or a refused key is the request's error here, where a batch lists it as rejected.
        rules = self.site_rules(event.site_key)
        if not self.trusted(event, rules, header_key):
            self.charge(client, {rules.site_id: 1})
        enriched = enrich_events(self, [(0, event_tuple(event))], client, header_key, self.clock())
        if enriched.dropped:
            return {"success": True, "tracked": False, "reason": enriched.dropped[0]["reason"]}
        await self.write(enriched.records())
        return {"success": True}

    def charge(self, client: ClientInfo, site_events: Mapping[int, int]) -> None:
        """Count events sent without an API key against the sender's and the sites' budgets; 429 when over."""
        self.budget.charge_ip(client.ip, sum(site_events.values()))
        self.budget.charge_sites(site_events)

    def prepare_batch(
        self,
        events: list[Any],
        client: ClientInfo,
        header_key: str | None,
        exact_event: Callable[[int], Any] | None = None,
        *,
        validated: bool = False,
    ) -> BatchOutcome:
        """Validate, filter and enrich raw batch events into one table, all stamped with one clock reading.

        Each event gets the outcome ``track`` would give it (both run ``enrich.enrich_events``); nothing is written.
        With ``validated``, ``events`` are the field tuples of ``fastpath.plain_batch``.
        """
        return prepare_batch(self, events, client, header_key, self.clock(), exact_event, validated=validated)

    async def write(self, rows: list[tuple[Any, ...]] | pa.Table) -> int:
        """Write rows (records of ``EVENT_SCHEMA`` or a table) through the shared writer; wait until durable.

        A log that cannot be written (disk full) is a 503 with ``Retry-After``: nothing was stored, so the
        tracker may send the same events again.
        """
        try:
            return await self.rows.write(rows)
        except LogUnavailableError:
            raise ServiceUnavailableError() from None

    # Identify -------------------------------------------------------------------------------------

    def identify(self, site_key: str, user_id: str, client: ClientInfo, header_key: str | None, body: Mapping) -> None:
        """Remember that the visitor behind this request is ``user_id`` (see the module docstring)."""
        rules = self.site_rules(site_key)
        trusted = False
        key = header_key or (body.get("api_key") if isinstance(body.get("api_key"), str) else None)
        if key:
            self.check_key(key, rules)
            trusted = True
        else:
            self.charge(client, {rules.site_id: 1})
        ip = client.ip
        user_agent = client.user_agent
        if trusted:
            ip = body["ip_address"] if isinstance(body.get("ip_address"), str) and body["ip_address"] else ip
            ua_field = body.get("user_agent")
            user_agent = ua_field if isinstance(ua_field, str) and ua_field else user_agent
        now = self.clock()
        visitor = visitor_id(self._secret, rules.site_id, ip, user_agent, now.date() if rules.salt_user_ids else None)
        with self._identified_lock:
            self._identified[(rules.site_id, visitor)] = (user_id, now)

    def has_identified(self) -> bool:
        """Whether any visitor is tied to a user id at all (when not, lookups can be skipped)."""
        return bool(self._identified)

    def identified_user(self, site_id: int, visitor: str, now: datetime) -> str:
        """The user id ``/api/identify`` tied to this visitor (``""`` when none); keeps the tie alive."""
        if not self._identified:
            return ""
        with self._identified_lock:
            entry = self._identified.get((site_id, visitor))
            if entry is not None:
                self._identified[(site_id, visitor)] = (entry[0], now)
            if now >= self._next_identify_prune:
                cutoff = now - IDENTIFY_TTL
                self._identified = {k: v for k, v in self._identified.items() if v[1] >= cutoff}
                self._next_identify_prune = now + timedelta(minutes=5)
        return entry[0] if entry is not None else ""

    def close(self) -> None:
        """Release the geo database."""
        self.locator.close()
