"""The one enrichment path: from validated events to rows of the events table, for a batch or a single event.

A single ``POST /api/track`` event is a batch of one: both routes run ``enrich_events``, which applies the site's
drop rules and enriches each event, doing the work once per distinct value instead of once per event:

- site rules and API-key checks: once per site key and per (key, site);
- the sender (drop rules, geo, user agent, visitor hash, session, identify lookup): once per
  (site, IP, user agent, trusted) "sender group" (``Senders.new``, in this order: ``bot`` (``blockBots``, untrusted
  senders only), ``excluded_ip``, ``excluded_country``); the visitor hash, user agent and geo of a sender are
  remembered across calls (``IngestContext.sender``);
- referrer clearing, query parameters, UTM columns and channel: once per (referrer, query string, hostname,
  trackUrlParams) "page group" (``page_context``).

The result, ``Enriched``, becomes one ``EVENT_SCHEMA`` table built column by column (batches: the sender's and
page's columns as one array over the groups, gathered by each event's group index) or records, value tuples in
the table's column order (single events, which the store's coalescer gathers across concurrent requests into one
conversion). Every event of one call is stamped from one clock reading, but the events of one session a
millisecond apart in the call's order and after the session's last event (``SessionTracker.sessions_for``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache
from operator import itemgetter
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pyarrow as pa

from api_backend.errors import APIError, AuthenticationRequiredError, NotFoundError
from api_backend.ingest.bots import is_bot
from api_backend.ingest.channels import classify_channel, strip_www
from api_backend.ingest.fastpath import EVENT_FIELDS
from api_backend.ingest.geo import GeoLocation
from api_backend.ingest.sessions import STAMP_LEAD, SessionTracker
from api_backend.ingest.site_rules import SiteRules
from api_backend.ingest.useragent import UserAgentInfo, device_type
from api_backend.store.events import EVENT_SCHEMA

__all__ = [
    "PAGE_COLUMNS",
    "SENDER_COLUMNS",
    "ClientInfo",
    "Enriched",
    "IngestContext",
    "SenderFacts",
    "enrich_events",
    "error_text",
    "page_context",
]

UTM_KEYS = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")
# What ``page_context`` returns, in order.
PAGE_COLUMNS = ("referrer", "querystring", "url_parameters", *UTM_KEYS, "channel")

_F = {name: i for i, name in enumerate(EVENT_FIELDS)}
_SITE_KEY, _HOSTNAME, _QUERYSTRING, _REFERRER = _F["site_key"], _F["hostname"], _F["querystring"], _F["referrer"]
_USER_ID, _IP, _UA, _API_KEY = _F["user_id"], _F["ip_address"], _F["user_agent"], _F["api_key"]
_WIDTH, _HEIGHT = _F["screen_width"], _F["screen_height"]
_INT, _TIMESTAMP = pa.int32(), EVENT_SCHEMA.field("timestamp").type

# What ``Senders.columns`` returns, in order.
SENDER_COLUMNS = (
    "site_id",
    "session_id",
    "user_id",
    "browser",
    "browser_version",
    "operating_system",
    "operating_system_version",
    "country",
    "region",
    "city",
)
# A record is picked from an event's fields, its page's and sender's columns and the per-event values, in this
# order; where a name occurs twice the later source wins (the page's stored referrer over the sent one, the
# visitor's id over the sent ``user_id``), as in ``Enriched.table``.
_SOURCES = (*EVENT_FIELDS, *PAGE_COLUMNS, *SENDER_COLUMNS, "timestamp", "identified_user_id", "device_type")
_POSITION = {name: i for i, name in enumerate(_SOURCES)}
_RECORD = itemgetter(*(_POSITION[name] for name in EVENT_SCHEMA.names))


# A sender's visitor id, parsed user agent and location (``None`` without an IP address).
SenderFacts = tuple[str, UserAgentInfo, GeoLocation | None]


@dataclass(frozen=True, slots=True)
class ClientInfo:
    """What the connection says about the sender: its address and ``User-Agent`` header."""

    ip: str
    user_agent: str


class IngestContext(Protocol):
    """What enrichment reads from the process's ``Ingestor``: site rules, key checks, senders, sessions, identities."""

    sessions: SessionTracker

    def site_rules(self, site_key: str) -> SiteRules:
        """The rules of a site by ``siteId`` or string ``id``; raises ``NotFoundError``."""
        ...

    def check_key(self, raw_key: str, rules: SiteRules) -> None:
        """Accept a key of a member of the site's organization; raises ``AuthenticationRequiredError``."""
        ...

    def sender(self, site_id: int, ip: str, user_agent: str, salt_day: date | None) -> SenderFacts:
        """What is known of a sender from its site, IP and user agent alone (the same answer every time)."""
        ...

    def has_identified(self) -> bool:
        """Whether any visitor is tied to a user id."""
        ...

    def identified_user(self, site_id: int, visitor: str, now: datetime) -> str:
        """The user id ``/api/identify`` tied to this visitor, or ``""``."""
        ...


def error_text(exc: APIError) -> str:
    """A rejected event's ``error``: the fields and messages of a 400, else the error's sentence."""
    if exc.details:
        return "; ".join(f"{d.field} {d.message}" for d in exc.details)
    return exc.message


def _referrer_host(referrer: str) -> str:
    try:
        return (urlsplit(referrer).hostname or "").lower()
    except ValueError:
        return ""


# Keys hold up to three 2 KiB strings: the bound keeps the worst case to some tens of MB.
@lru_cache(maxsize=4096)
def page_context(referrer: str, querystring: str, hostname: str, track_url_params: bool) -> tuple[str, ...]:
    """The stored referrer, query string, parameter map, five UTM columns and channel (``PAGE_COLUMNS``).

    A referrer from the page's own host (``www.`` aside) is cleared. The UTM columns and the channel come from
    the query string even when the site does not keep URL parameters (see the pipeline module docstring).
    """
    if referrer and hostname:
        ref_host = _referrer_host(referrer)
        if ref_host and strip_www(ref_host) == strip_www(hostname):
            referrer = ""
    params: dict[str, str] = {}
    if querystring:
        for key, value in parse_qsl(querystring.removeprefix("?"), keep_blank_values=True):
            params[key.lower()] = value
    utm = {k: v for k, v in params.items() if k.startswith("utm_") or k in ("gclid", "gad_source")}
    channel = classify_channel(referrer, utm, hostname)
    if not track_url_params:
        querystring, params = "", {}
    url_parameters = json.dumps(params, ensure_ascii=False, separators=(",", ":")) if params else "{}"
    return (referrer, querystring, url_parameters, *(utm.get(key, "") for key in UTM_KEYS), channel)


class Senders:
    """Per (site, IP, user agent, trusted): the drop reason, or the index of the sender's enrichment."""

    def __init__(self, context: IngestContext, now: datetime) -> None:
        self.context = context
        self.now = now
        self.site_id: list[int] = []
        self.visitor: list[str] = []
        self.identified: list[str | None] = []  # looked up only when an event without its own user_id needs it
        self.info: list[Any] = []
        self.geo: list[Any] = []
        # The groups' sessions and later first times, asked of the tracker once (asking moves each session's last
        # time).
        self._sessions: tuple[list[str], dict[int, datetime]] | None = None

    def new(self, rules: SiteRules, ip: str, user_agent: str, trusted: bool) -> int | str:
        """Enrich a sender seen for the first time: the site's drop rules, then geo, user agent and visitor id."""
        context = self.context
        if rules.block_bots and not trusted and is_bot(user_agent):
            return "bot"
        if rules.excluded_ips and rules.excluded_ips.matches(ip):
            return "excluded_ip"
        salt_day = self.now.date() if rules.salt_user_ids else None
        visitor, info, geo = context.sender(rules.site_id, ip, user_agent, salt_day)
        if rules.excluded_countries and geo is not None and geo.country in rules.excluded_countries:
            return "excluded_country"
        self.site_id.append(rules.site_id)
        self.visitor.append(visitor)
        self.identified.append(None)
        self.info.append(info)
        self.geo.append(geo)
        return len(self.visitor) - 1

    def identified_user(self, group: int) -> str:
        """The ``/api/identify`` user of a group's visitor, looked up once per group."""
        found = self.identified[group]
        if found is None:
            found = self.identified[group] = self.context.identified_user(
                self.site_id[group], self.visitor[group], self.now
            )
        return found

    def columns(self, counts: list[int] | None) -> tuple[dict[str, list[Any]], dict[int, datetime]]:
        """The sender columns of the events table (``SENDER_COLUMNS``), one value per group, and the first event's
        time of each group whose first event is stamped later than ``now`` (``SessionTracker.sessions_for``: sessions
        and times in one pass over the map). ``counts``: the events of each group, None for one each."""
        infos, geos = self.info, self.geo
        if self._sessions is None:
            visitors = zip(self.site_id, self.visitor, strict=True)
            self._sessions = self.context.sessions.sessions_for(visitors, self.now, counts)
        session_ids, later = self._sessions
        columns: dict[str, list[Any]] = {
            "site_id": self.site_id,
            "session_id": session_ids,
            "user_id": self.visitor,
            "browser": [i.browser for i in infos],
            "browser_version": [i.browser_version for i in infos],
            "operating_system": [i.operating_system for i in infos],
            "operating_system_version": [i.operating_system_version for i in infos],
            "country": [g.country if g else "" for g in geos],
            "region": [g.region if g else "" for g in geos],
            "city": [g.city if g else "" for g in geos],
        }
        return columns, later


@dataclass(slots=True)
class Enriched:
    """Accepted events with their sender and page groups, and the ``rejected``/``dropped`` entries."""

    senders: Senders
    now: datetime
    accepted: list[tuple[Any, ...]] = field(default_factory=list)
    sender_index: list[int] = field(default_factory=list)
    page_rows: list[tuple[str, ...]] = field(default_factory=list)
    page_index: list[int] = field(default_factory=list)
    identified: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)

    def table(self) -> pa.Table | None:
        """The accepted events as one ``EVENT_SCHEMA`` table, column by column (``None`` when none)."""
        count = len(self.accepted)
        if not count:
            return None
        fields = dict(zip(EVENT_FIELDS, zip(*self.accepted, strict=True), strict=True))
        # Group indexes are handed out in order of first use, so as many groups as events means event i is group
        # i (an import of distinct visitors, say): the group values are then the column itself.
        by_sender = None if len(self.senders.visitor) == count else pa.array(self.sender_index, _INT)
        by_page = None if len(self.page_rows) == count else pa.array(self.page_index, _INT)
        group_values, later = self.senders.columns(None if by_sender is None else self._group_counts())
        page_columns = dict(zip(PAGE_COLUMNS, zip(*self.page_rows, strict=True), strict=True))
        per_event = {"identified_user_id": self.identified, "device_type": self.devices}
        arrays = []
        for column in EVENT_SCHEMA:
            name, kind = column.name, column.type
            if name == "timestamp":
                array = self._stamps(later, count)
            elif name in group_values:
                array = pa.array(group_values[name], kind)
                if by_sender is not None:
                    array = array.take(by_sender)
            elif name in page_columns:
                array = pa.array(page_columns[name], kind)
                if by_page is not None:
                    array = array.take(by_page)
            elif name in per_event:
                array = pa.array(per_event[name], kind)
            else:
                # The remaining columns are the validated event's own fields under the same names.
                array = pa.array(fields[name], kind)
            arrays.append(array)
        return pa.Table.from_arrays(arrays, schema=EVENT_SCHEMA)

    def records(self) -> list[tuple[Any, ...]]:
        """The accepted events as records of ``EVENT_SCHEMA``: value tuples in its order, the values ``table`` holds."""
        if not self.accepted:
            return []
        one_each = len(self.senders.visitor) == len(self.accepted)
        group_values, later = self.senders.columns(None if one_each else self._group_counts())
        senders = list(zip(*(group_values[name] for name in SENDER_COLUMNS), strict=True))
        page_rows = self.page_rows
        if one_each:
            times = [later.get(group, self.now) for group in range(len(self.accepted))]
        else:
            times = self._stamps(later, len(self.accepted)).to_pylist()
        return [
            _RECORD(event + page_rows[page] + senders[sender] + (at, identified, device))
            for event, sender, page, at, identified, device in zip(
                self.accepted, self.sender_index, self.page_index, times, self.identified, self.devices, strict=True
            )
        ]

    def _group_counts(self) -> list[int]:
        """The accepted events of each sender group."""
        return np.bincount(self.sender_index, minlength=len(self.senders.visitor)).tolist()

    def _stamps(self, later: dict[int, datetime], count: int) -> pa.Array:
        """The timestamp column: each event its group's first time (``now``, or ``later``'s), a millisecond more for
        each earlier event of its group, at most ``STAMP_LEAD`` past ``now`` (``ingest.sessions.stamp``, counted here
        in the column's milliseconds); one value repeated where every event is stamped ``now``."""
        now = self.now
        groups = len(self.senders.visitor)
        if groups == count and not later:
            return pa.repeat(pa.scalar(now, _TIMESTAMP), count)
        base = np.full(groups, np.datetime64(now, "ms"))
        for group, first in later.items():
            base[group] = np.datetime64(first, "ms")
        if groups == count:
            return pa.array(base)
        index = np.asarray(self.sender_index)
        # Each event's place among its group's events: its position in the events sorted by group (stably), less the
        # position of its group's first event there.
        order = np.argsort(index, kind="stable")
        sorted_index = index[order]
        starts = np.flatnonzero(np.r_[True, sorted_index[1:] != sorted_index[:-1]])
        rank = np.empty(count, np.int64)
        rank[order] = np.arange(count) - np.repeat(starts, np.diff(np.r_[starts, count]))
        lead = np.datetime64(now + STAMP_LEAD, "ms")
        return pa.array(np.minimum(base[index] + rank.astype("timedelta64[ms]"), lead))


def enrich_events(
    context: IngestContext,
    events: Iterable[tuple[int, tuple[Any, ...]]],
    client: ClientInfo,
    header_key: str | None,
    now: datetime,
    rejected: list[dict[str, Any]] | None = None,
) -> Enriched:
    """Apply the drop rules to validated ``(index, event tuple)`` pairs and enrich the rest, all stamped ``now``.

    An unknown site or a refused API key puts ``{index, error}`` in ``rejected``; a drop rule puts
    ``{index, reason}`` in ``dropped``. ``rejected`` may already hold the validation failures of the caller.
    """
    senders = Senders(context, now)
    out = Enriched(senders, now, rejected=rejected if rejected is not None else [])
    rejected, dropped = out.rejected, out.dropped
    rules_by_key: dict[str, SiteRules | APIError] = {}
    trust: dict[tuple[str, int], APIError | None] = {}
    groups: dict[tuple[int, str, str, bool], int | str] = {}
    infos = senders.info
    # With nobody identified (the usual case) every event's identified_user_id is its own user_id.
    identified_user = senders.identified_user if context.has_identified() else None
    pages: dict[tuple[str, str, str, bool], int] = {}
    page_rows, accepted, sender_index, page_index = out.page_rows, out.accepted, out.sender_index, out.page_index
    identified, devices = out.identified, out.devices
    client_ip, client_ua = client.ip, client.user_agent

    for index, event in events:
        site_key = event[_SITE_KEY]
        rules = rules_by_key.get(site_key)
        if rules is None:
            try:
                rules = context.site_rules(site_key)
            except NotFoundError as exc:
                rules = exc
            rules_by_key[site_key] = rules
        if not isinstance(rules, SiteRules):
            rejected.append({"index": index, "error": error_text(rules)})
            continue
        key = header_key or event[_API_KEY]
        if key:
            trust_key = (key, rules.site_id)
            if trust_key not in trust:
                try:
                    context.check_key(key, rules)
                    trust[trust_key] = None
                except AuthenticationRequiredError as exc:
                    trust[trust_key] = exc
            refused = trust[trust_key]
            if refused is not None:
                rejected.append({"index": index, "error": error_text(refused)})
                continue
            group_key = (rules.site_id, event[_IP] or client_ip, event[_UA] or client_ua, True)
        else:
            group_key = (rules.site_id, client_ip, client_ua, False)
        group = groups.get(group_key)
        if group is None:
            group = groups[group_key] = senders.new(rules, *group_key[1:])
        if isinstance(group, str):
            dropped.append({"index": index, "reason": group})
            continue

        page_key = (event[_REFERRER], event[_QUERYSTRING], event[_HOSTNAME], rules.track_url_params)
        page = pages.get(page_key)
        if page is None:
            page = pages[page_key] = len(page_rows)
            page_rows.append(page_context(*page_key))
        accepted.append(event)
        sender_index.append(group)
        page_index.append(page)
        user_id = event[_USER_ID]
        identified.append(user_id or (identified_user(group) if identified_user is not None else ""))
        info = infos[group]
        devices.append(info.device or device_type(info, event[_WIDTH], event[_HEIGHT]))
    return out
