"""The batch path of ``POST /api/track/batch``: a thousand events enriched per distinct value, stored as columns.

``prepare_batch`` gives every event the outcome ``Ingestor.prepare`` gives it one by one (same drop rules,
trust, sessions, identified users, enrichment; same ``rejected``/``dropped`` entries), but does the work once
per distinct value instead of once per event:

- validation: ``fast_event`` for plain events, ``parse_event`` (the reference) for everything else;
- site rules and API-key checks: once per site key and per (key, site);
- the sender (drop rules, geo, user agent, visitor hash, session, identify lookup): once per
  (site, IP, user agent, trusted) "client group";
- referrer clearing, query parameters, UTM columns and channel: once per (referrer, query string, hostname,
  trackUrlParams) "page group" (``page_context``, also used by the single-event path);

and builds the Arrow columns of ``EVENT_SCHEMA`` directly: per-event fields straight from the validated
tuples, the sender's and page's columns as one array over the groups gathered by each event's group index.
Everything is stamped with one clock reading, as the batch route always did.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

import pyarrow as pa

from api_backend.errors import APIError, AuthenticationRequiredError, InvalidRequestError, NotFoundError
from api_backend.ingest.bots import is_bot
from api_backend.ingest.channels import classify_channel, strip_www
from api_backend.ingest.fastpath import EVENT_FIELDS, event_tuple, fast_event
from api_backend.ingest.payload import parse_event
from api_backend.ingest.site_rules import SiteRules
from api_backend.ingest.useragent import device_type, parse_user_agent
from api_backend.ingest.visitor import cached_visitor_id
from api_backend.store.events import EVENT_SCHEMA

if TYPE_CHECKING:
    from api_backend.ingest.pipeline import ClientInfo, Ingestor

__all__ = ["PAGE_COLUMNS", "BatchOutcome", "error_text", "page_context", "paused_gc", "prepare_batch"]

UTM_KEYS = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")
# What ``page_context`` returns, in order.
PAGE_COLUMNS = ("referrer", "querystring", "url_parameters", *UTM_KEYS, "channel")

_F = {name: i for i, name in enumerate(EVENT_FIELDS)}
_SITE_KEY, _HOSTNAME, _QUERYSTRING, _REFERRER = _F["site_key"], _F["hostname"], _F["querystring"], _F["referrer"]
_USER_ID, _IP, _UA, _API_KEY = _F["user_id"], _F["ip_address"], _F["user_agent"], _F["api_key"]
_WIDTH, _HEIGHT = _F["screen_width"], _F["screen_height"]
_INT, _TIMESTAMP = pa.int32(), EVENT_SCHEMA.field("timestamp").type


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


def error_text(exc: APIError) -> str:
    """A rejected event's ``error``: the fields and messages of a 400, else the error's sentence."""
    if exc.details:
        return "; ".join(f"{d.field} {d.message}" for d in exc.details)
    return exc.message


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


class _ClientGroups:
    """Per (site, IP, user agent, trusted): the drop reason, or the index of the sender's enrichment."""

    def __init__(self, ingestor: Ingestor, now: datetime) -> None:
        self.ingestor = ingestor
        self.now = now
        self.site_id: list[int] = []
        self.visitor: list[str] = []
        self.identified: list[str | None] = []  # looked up only when an event without its own user_id needs it
        self.info: list[Any] = []
        self.geo: list[Any] = []

    def new(self, rules: SiteRules, ip: str, user_agent: str, trusted: bool) -> int | str:
        """Enrich a sender seen for the first time in this batch; ``Ingestor.prepare``'s checks in its order."""
        ingestor = self.ingestor
        if rules.block_bots and not trusted and is_bot(user_agent):
            return "bot"
        if rules.excluded_ips and rules.excluded_ips.matches(ip):
            return "excluded_ip"
        geo = ingestor.locator.locate(ip) if ip else None
        if rules.excluded_countries and geo is not None and geo.country in rules.excluded_countries:
            return "excluded_country"
        salt_day = self.now.date() if rules.salt_user_ids else None
        self.site_id.append(rules.site_id)
        self.visitor.append(cached_visitor_id(ingestor.settings.secret_key, rules.site_id, ip, user_agent, salt_day))
        self.identified.append(None)
        self.info.append(parse_user_agent(user_agent))
        self.geo.append(geo)
        return len(self.visitor) - 1

    def identified_user(self, group: int) -> str:
        """The ``/api/identify`` user of a group's visitor (``Ingestor.identified_user``), once per group."""
        found = self.identified[group]
        if found is None:
            found = self.identified[group] = self.ingestor.identified_user(
                self.site_id[group], self.visitor[group], self.now
            )
        return found

    def sessions(self) -> list[str]:
        """Every group's session, in one pass over the session map."""
        return self.ingestor.sessions.sessions_for(zip(self.site_id, self.visitor, strict=True), self.now)


def prepare_batch(
    ingestor: Ingestor,
    events: list[Any],
    client: ClientInfo,
    header_key: str | None,
    now: datetime,
    exact_event: Callable[[int], Any] | None = None,
) -> BatchOutcome:
    """Validate, filter and enrich a batch into one ``EVENT_SCHEMA`` table stamped ``now`` (not yet written).

    ``exact_event(index)`` gives the event as ``json.loads`` decodes it, for bodies decoded by orjson (see
    ``fastpath.load_json``): events that need ``parse_event`` are validated in that form.
    """
    outcome = BatchOutcome(None)
    rejected, dropped = outcome.rejected, outcome.dropped
    rules_by_key: dict[str, SiteRules | APIError] = {}
    trust: dict[tuple[str, int], APIError | None] = {}
    clients = _ClientGroups(ingestor, now)
    groups: dict[tuple[int, str, str, bool], int | str] = {}
    infos = clients.info
    # With nobody identified (the usual case) every event's identified_user_id is its own user_id.
    identified_user = clients.identified_user if ingestor.has_identified() else None
    pages: dict[tuple[str, str, str, bool], int] = {}
    page_rows: list[tuple[str, ...]] = []
    accepted: list[tuple[Any, ...]] = []
    client_index: list[int] = []
    page_index: list[int] = []
    identified: list[str] = []
    devices: list[str] = []
    client_ip, client_ua = client.ip, client.user_agent

    for index, raw in enumerate(events):
        event = fast_event(raw)
        if event is None:
            try:
                event = event_tuple(parse_event(exact_event(index) if exact_event is not None else raw))
            except InvalidRequestError as exc:
                rejected.append({"index": index, "error": error_text(exc)})
                continue
        site_key = event[_SITE_KEY]
        rules = rules_by_key.get(site_key)
        if rules is None:
            try:
                rules = ingestor.site_rules(site_key)
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
                    ingestor.check_key(key, rules)
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
            group = groups[group_key] = clients.new(rules, *group_key[1:])
        if type(group) is str:
            dropped.append({"index": index, "reason": group})
            continue

        page_key = (event[_REFERRER], event[_QUERYSTRING], event[_HOSTNAME], rules.track_url_params)
        page = pages.get(page_key)
        if page is None:
            page = pages[page_key] = len(page_rows)
            page_rows.append(page_context(*page_key))
        accepted.append(event)
        client_index.append(group)
        page_index.append(page)
        user_id = event[_USER_ID]
        identified.append(user_id or (identified_user(group) if identified_user is not None else ""))
        info = infos[group]
        devices.append(info.device or device_type(info, event[_WIDTH], event[_HEIGHT]))

    if accepted:
        outcome.table = _table(accepted, clients, client_index, page_rows, page_index, identified, devices, now)
    return outcome


def _table(
    accepted: list[tuple[Any, ...]],
    clients: _ClientGroups,
    client_index: list[int],
    page_rows: list[tuple[str, ...]],
    page_index: list[int],
    identified: list[str],
    devices: list[str],
    now: datetime,
) -> pa.Table:
    """The accepted events as one ``EVENT_SCHEMA`` table, column by column."""
    count = len(accepted)
    fields = dict(zip(EVENT_FIELDS, zip(*accepted, strict=True), strict=True))
    # Group indexes are handed out in order of first use, so as many groups as events means event i is group i
    # (an import of distinct visitors, say): the group values are then the column itself.
    by_client = None if len(clients.visitor) == count else pa.array(client_index, _INT)
    by_page = None if len(page_rows) == count else pa.array(page_index, _INT)
    page_columns = dict(zip(PAGE_COLUMNS, zip(*page_rows, strict=True), strict=True))
    infos, geos = clients.info, clients.geo
    group_values: dict[str, list[Any]] = {
        "site_id": clients.site_id,
        "session_id": clients.sessions(),
        "user_id": clients.visitor,
        "browser": [i.browser for i in infos],
        "browser_version": [i.browser_version for i in infos],
        "operating_system": [i.operating_system for i in infos],
        "operating_system_version": [i.operating_system_version for i in infos],
        "country": [g.country if g else "" for g in geos],
        "region": [g.region if g else "" for g in geos],
        "city": [g.city if g else "" for g in geos],
    }
    per_event = {
        "identified_user_id": identified,
        "device_type": devices,
        "screen_width": fields["screen_width"],
        "screen_height": fields["screen_height"],
    }
    arrays = []
    for column in EVENT_SCHEMA:
        name, kind = column.name, column.type
        if name == "timestamp":
            array = pa.repeat(pa.scalar(now, _TIMESTAMP), count)
        elif name in group_values:
            array = pa.array(group_values[name], kind)
            if by_client is not None:
                array = array.take(by_client)
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
