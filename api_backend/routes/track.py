"""Tracking routes (contract section 3): ``/track``, ``/track/batch``, ``/identify``, ``/site/tracking-config``.

Bodies are parsed here (so a ``text/plain`` body from ``sendBeacon`` works and every error names its field)
and handed to the process's ``Ingestor``. A 200 for a tracked event is sent only once its row is durable
(synced to the event log).
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from api_backend.domain.sites import check_site_key
from api_backend.errors import AuthenticationRequiredError, FieldError, InvalidRequestError
from api_backend.ingest.batch import BatchOutcome, paused_gc
from api_backend.ingest.fastpath import holds_float, load_json, plain_batch
from api_backend.ingest.payload import EVENT_NAME_LIMIT, STRING_LIMITS, TrackEvent, parse_event, parse_identify
from api_backend.ingest.pipeline import ClientInfo
from api_backend.services import Services
from api_backend.store.events import EVENT_TYPES

router = APIRouter(tags=["tracking"])

MAX_BATCH = 1000


class TrackEventBody(BaseModel):
    """One tracked event as the browser and server trackers send it (documentation of the wire format)."""

    site_id: str | int = Field(description="Numeric siteId or the string id.")
    type: Literal[EVENT_TYPES] = Field(description="Event type.")  # type: ignore[valid-type]
    hostname: str | None = Field(None, max_length=STRING_LIMITS["hostname"])
    pathname: str | None = Field(None, max_length=STRING_LIMITS["pathname"])
    querystring: str | None = Field(None, max_length=STRING_LIMITS["querystring"])
    screenWidth: int | None = Field(None, ge=0)  # noqa: N815 (wire name)
    screenHeight: int | None = Field(None, ge=0)  # noqa: N815 (wire name)
    language: str | None = Field(None, max_length=STRING_LIMITS["language"])
    page_title: str | None = Field(None, max_length=STRING_LIMITS["page_title"])
    referrer: str | None = Field(None, max_length=STRING_LIMITS["referrer"])
    user_id: str | None = Field(
        None, max_length=STRING_LIMITS["user_id"], description="Your own id of the user (identified user)."
    )
    event_name: str | None = Field(None, max_length=EVENT_NAME_LIMIT)
    properties: str | dict[str, Any] | None = Field(None, description="JSON-encoded string or object.")
    lcp: float | None = None
    cls: float | None = None
    inp: float | None = None
    fcp: float | None = None
    ttfb: float | None = None
    ip_address: str | None = Field(None, description="Honoured only with a valid API key.")
    user_agent: str | None = Field(
        None, max_length=STRING_LIMITS["user_agent"], description="Honoured only with a valid API key."
    )
    api_key: str | None = Field(
        None, max_length=STRING_LIMITS["api_key"], description="API key (or send it as Authorization: Bearer)."
    )


class IdentifyBody(BaseModel):
    """Tie the current visitor to your own user id."""

    site_id: str | int
    user_id: str
    traits: dict[str, Any] | None = None


def _body_doc(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI request body for routes that parse their body themselves."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


_EVENT_SCHEMA = TrackEventBody.model_json_schema()
_BATCH_SCHEMA = {
    "type": "object",
    "title": "TrackBatchBody",
    "required": ["events"],
    "properties": {"events": {"type": "array", "maxItems": MAX_BATCH, "items": _EVENT_SCHEMA}},
}


def _responses(example: dict[str, Any], *codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI responses: the 200 body example plus the error statuses the route can answer."""
    meaning = {
        400: "Invalid body (details name the fields)",
        401: "Invalid API key",
        404: "Unknown site",
        429: "Over the tracking budget of the address or site (see Retry-After)",
        503: "The event log cannot be written (e.g. disk full); nothing was stored (see Retry-After)",
    }
    out: dict[int | str, dict[str, Any]] = {
        200: {"description": "OK", "content": {"application/json": {"example": example}}}
    }
    for code in codes:
        out[code] = {"description": meaning[code]}
    return out


def _services(request: Request) -> Services:
    # Read directly rather than through a sync dependency: FastAPI runs those in a worker thread, a costly
    # hop on the hottest route.
    return request.app.state.services


def _client(request: Request, services: Services) -> ClientInfo:
    """The sender's address (the first ``X-Forwarded-For`` entry behind a trusted proxy) and user agent."""
    ip = request.client.host if request.client else ""
    if services.settings.trust_proxy:
        forwarded = request.headers.get("x-forwarded-for", "")
        first = forwarded.split(",", 1)[0].strip()
        if first:
            ip = first
    return ClientInfo(ip=ip, user_agent=request.headers.get("user-agent", ""))


def _header_key(request: Request) -> str | None:
    """The API key of an ``Authorization`` header; a malformed header is a 401."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise AuthenticationRequiredError("The Authorization header must be 'Bearer <API key>'.")
    return token


async def _raw_body(request: Request) -> bytes:
    raw = await request.body()
    if not raw.strip():
        raise InvalidRequestError("The request body is empty.", [FieldError("body", "is required")])
    return raw


def _not_json() -> InvalidRequestError:
    return InvalidRequestError("The request body is not valid JSON.", [FieldError("body", "is not valid JSON")])


async def _json_body(request: Request) -> Any:
    """The body decoded by ``json.loads`` (routes off the hot path)."""
    raw = await _raw_body(request)
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise _not_json() from None


async def _fast_json_body(request: Request) -> tuple[Any, bytes, bool]:
    """The body decoded by ``fastpath.load_json``: ``(value, raw body, decoded by orjson?)``."""
    raw = await _raw_body(request)
    try:
        value, fast = load_json(raw)
    except (ValueError, RecursionError):
        raise _not_json() from None
    return value, raw, fast


def _event(body: Any, raw: bytes, fast: bool) -> TrackEvent:
    """``parse_event`` of the body as ``json.loads`` decodes it (see ``load_json`` for when that differs)."""
    try:
        event = parse_event(body)
    except InvalidRequestError:
        if not fast or not holds_float(body):
            raise
        return parse_event(json.loads(raw))
    if fast and isinstance(body.get("properties"), dict) and holds_float(body["properties"]):
        return parse_event(json.loads(raw))
    return event


@router.post(
    "/track",
    openapi_extra=_body_doc(_EVENT_SCHEMA),
    response_model=None,
    responses=_responses({"success": True, "tracked": False, "reason": "bot"}, 400, 401, 404, 429, 503),
)
async def track(request: Request) -> JSONResponse:
    """Record one event: ``{"success": true}`` once stored, or ``tracked: false`` with the reason it was dropped."""
    services = _services(request)
    event = _event(*await _fast_json_body(request))
    ingestor = services.ingestor
    result = await ingestor.track(event, _client(request, services), _header_key(request))
    return JSONResponse(result)


@router.post(
    "/track/batch",
    openapi_extra=_body_doc(_BATCH_SCHEMA),
    response_model=None,
    responses=_responses(
        {"success": True, "accepted": 2, "rejected": [{"index": 1, "error": "type is required"}], "dropped": []},
        400,
        401,
        429,
        503,
    ),
)
async def track_batch(request: Request) -> JSONResponse:
    """Record up to 1000 events in one commit.

    ``accepted`` counts the stored events; ``rejected`` lists invalid ones (``{index, error}``), and ``dropped``
    lists valid events a site setting refused (``{index, reason}``), which are not counted as accepted.
    """
    services = _services(request)
    raw = await _raw_body(request)
    # The batch's thousands of decoded containers live and die inside this window (see paused_gc), so the
    # collector neither runs during the batch nor finds them afterwards.
    with paused_gc():
        outcome = _prepare_batch(request, services, raw)
    if outcome.table is not None:
        await services.ingestor.write(outcome.table)
    return JSONResponse(
        {"success": True, "accepted": outcome.accepted, "rejected": outcome.rejected, "dropped": outcome.dropped}
    )


def _prepare_batch(request: Request, services: Services, raw: bytes) -> BatchOutcome:
    """Decode and check the batch body, then prepare its events (``Ingestor.prepare_batch``); nothing written."""
    # A body of plain, valid events (the usual import) is decoded and checked in one pass; any other body is
    # decoded as JSON and its events checked one by one, with the same outcome for the events both accept.
    plain = plain_batch(raw)
    fast = False
    if plain is not None:
        events: list[Any] = plain
    else:
        try:
            body, fast = load_json(raw)
        except (ValueError, RecursionError):
            raise _not_json() from None
        listed = body.get("events") if isinstance(body, dict) else None
        if not isinstance(listed, list):
            raise InvalidRequestError.for_field("events", "must be a list of events")
        events = listed
    if len(events) > MAX_BATCH:
        raise InvalidRequestError.for_field("events", f"must hold at most {MAX_BATCH} events")
    ingestor = services.ingestor
    client = _client(request, services)
    header_key = _header_key(request)
    if header_key is not None and ingestor.key_user(header_key) is None:
        raise AuthenticationRequiredError("The API key is unknown or revoked.")
    if header_key is None:
        # Charged before the work of preparing: a flood is refused at the cost of a count. A batch with a valid
        # key in its header is exempt (each of its events must then match the key's organization).
        ingestor.budget.charge_ip(client.ip, len(events))
    exact_event = None
    if fast:
        decoded: list[list[Any]] = []

        def exact_event(index: int) -> Any:
            # An event needing parse_event is read as json.loads reads it (see fastpath.load_json): the same
            # value unless it holds a float, which orjson may have made from a big integer. Only then is the
            # whole body decoded again (once).
            if not holds_float(events[index]):
                return events[index]
            if not decoded:
                decoded.append(json.loads(raw)["events"])
            return decoded[0][index]

    outcome = ingestor.prepare_batch(events, client, header_key, exact_event, validated=plain is not None)
    if header_key is None and outcome.table is not None:
        ingestor.budget.charge_sites(site_counts(outcome.table))
    return outcome


def site_counts(table: pa.Table) -> dict[int, int]:
    """Events per site id in a prepared batch table."""
    counts = pc.value_counts(table.column("site_id")).to_pylist()
    return {entry["values"]: entry["counts"] for entry in counts}


@router.post(
    "/identify",
    openapi_extra=_body_doc(IdentifyBody.model_json_schema()),
    response_model=None,
    responses=_responses({"success": True}, 400, 401, 404, 429),
)
async def identify(request: Request) -> JSONResponse:
    """Tie the visitor sending this request to ``user_id``; later events of that visitor carry it."""
    services = _services(request)
    body = await _json_body(request)
    site_key, user_id, _traits = parse_identify(body)
    services.ingestor.identify(site_key, user_id, _client(request, services), _header_key(request), body)
    return JSONResponse({"success": True})


@router.get("/site/tracking-config/{site_id}", responses={404: {"description": "Unknown site"}})
async def tracking_config(site_id: str, request: Request) -> dict[str, bool]:
    """The switches the browser tracker reads (public: they reveal nothing private)."""
    return dict(_services(request).ingestor.site_rules(check_site_key(site_id)).tracking_config)
