"""The tracking routes' POSTs, answered ahead of the middleware stack, get exactly what the stack would give them.

``SitelensAPI`` sends ``POST /api/track`` and ``POST /api/track/batch`` to ``serve_tracking``; the same requests
sent into the stack (``FastAPI.__call__``) reach the same handlers through the routers and every guard. Each case
below goes both ways and must come back with the same status, headers and body, and every event either way
acknowledged is stored once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api_backend import app as app_module
from api_backend.routes.track import track
from tests.support import wait_until

ORIGIN = "https://shop.example.com"
BOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


@pytest.fixture
def stack(app: FastAPI) -> Iterator[TestClient]:
    """A client whose requests go through the whole middleware stack, past the tracking routes' shortcut."""

    async def through_the_stack(scope: Any, receive: Any, send: Any) -> None:
        await FastAPI.__call__(app, scope, receive, send)

    with TestClient(through_the_stack) as client:
        yield client


def _cases(site_id: int, api_key: str) -> list[tuple[str, str, int, dict[str, Any]]]:
    """(name, path, status, keyword arguments of ``client.post``): the tracking routes' answers to each kind of body,
    media type, size and credentials. (Their 429 and 503 are the handlers' errors, answered as their 400s and 404s.)

    ``parts`` is a body sent in chunks without a length (each request gets a fresh stream of them).
    """
    view = {"site_id": str(site_id), "type": "pageview", "pathname": "/a", "hostname": "example.com"}
    beacon = b'{"site_id": "%d", "type": "pageview", "pathname": "/beacon"}' % site_id
    batch = {"events": [view, {"site_id": str(site_id), "type": "custom_event", "event_name": "buy"}, {"type": 3}]}
    return [
        ("json from a page", "/api/track", 200, {"json": view, "headers": {"Origin": ORIGIN}}),
        ("no origin", "/api/track", 200, {"json": view}),
        ("text/plain (sendBeacon)", "/api/track", 200, {"content": beacon, "headers": {"Content-Type": "text/plain"}}),
        ("no media type", "/api/track", 200, {"content": beacon, "headers": {"Content-Type": ""}}),
        (
            "json with a charset",
            "/api/track",
            200,
            {"content": beacon, "headers": {"Content-Type": "application/json; charset=utf-8"}},
        ),
        (
            "form body",
            "/api/track",
            415,
            {"content": beacon, "headers": {"Content-Type": "application/x-www-form-urlencoded"}},
        ),
        (
            "xml body",
            "/api/track",
            415,
            {"content": b"<a/>", "headers": {"Content-Type": "application/xml", "Origin": ORIGIN}},
        ),
        (
            "declared too large",
            "/api/track",
            413,
            {"content": b"{}", "headers": {"Content-Length": str(64 * 1024 + 1)}},
        ),
        ("streamed too large", "/api/track", 413, {"parts": [b"[" + b" " * 40_000, b" " * 40_000 + b"]"]}),
        (
            "streamed in parts",
            "/api/track",
            200,
            {"parts": [beacon[:10], beacon[10:]], "headers": {"Content-Type": "application/json"}},
        ),
        ("empty body", "/api/track", 400, {"content": b"", "headers": {"Content-Type": "application/json"}}),
        ("not json", "/api/track", 400, {"content": b"{nope", "headers": {"Content-Type": "application/json"}}),
        ("missing type", "/api/track", 400, {"json": {"site_id": str(site_id)}}),
        ("unknown site", "/api/track", 404, {"json": {**view, "site_id": "987654"}, "headers": {"Origin": ORIGIN}}),
        ("malformed authorization", "/api/track", 401, {"json": view, "headers": {"Authorization": "Basic abc"}}),
        ("unknown key", "/api/track", 401, {"json": view, "headers": {"Authorization": "Bearer nope"}}),
        ("a bot", "/api/track", 200, {"json": view, "headers": {"User-Agent": BOT}}),
        ("with a key", "/api/track", 200, {"json": view, "headers": {"Authorization": f"Bearer {api_key}"}}),
        ("batch", "/api/track/batch", 200, {"json": batch, "headers": {"Origin": ORIGIN}}),
        ("batch not a list", "/api/track/batch", 400, {"json": {"events": 3}}),
        ("batch too large", "/api/track/batch", 413, {"content": b"x" * (5 * 1024 * 1024 + 1)}),
    ]


def _stored(services: Any, site_id: int) -> int:
    return services.events.query_dicts("SELECT count(*) AS n FROM events WHERE site_id = ?", [site_id])[0]["n"]


def test_gate001_each_answer_matches_the_stack(client, stack, services, site, owner) -> None:
    acknowledged = 0
    for name, path, status, kwargs in _cases(site.site_id, owner.api_key):
        answers = []
        for via in (client, stack):
            sent = dict(kwargs)
            if "parts" in sent:
                sent["content"] = iter(sent.pop("parts"))
            answers.append(via.post(path, **sent))
        gate, through = answers
        assert gate.status_code == through.status_code == status, (name, gate.text, through.text)
        assert sorted(gate.headers.multi_items()) == sorted(through.headers.multi_items()), name
        assert gate.content == through.content, name
        for answer in answers:
            if answer.status_code == 200 and answer.json().get("tracked", True):
                acknowledged += answer.json().get("accepted", 1)
    # Seven of the single events are stored, and two of the batch's three events: each sent both ways.
    assert acknowledged == 2 * 7 + 2 * 2
    wait_until(lambda: _stored(services, site.site_id) == acknowledged)
    assert _stored(services, site.site_id) == acknowledged


def test_gate002_the_answers_carry_cors_and_security_headers(client, site) -> None:
    ok = client.post("/api/track", json={"site_id": str(site.site_id), "type": "pageview"}, headers={"Origin": ORIGIN})
    refused = client.post("/api/track", content=b"<a/>", headers={"Content-Type": "application/xml"})
    assert (ok.status_code, ok.json()) == (200, {"success": True})
    assert refused.status_code == 415 and refused.json()["code"] == "UNSUPPORTED_MEDIA_TYPE"
    for answer, origin in ((ok, ORIGIN), (refused, "*")):
        assert answer.headers["access-control-allow-origin"] == origin
        assert answer.headers["access-control-allow-credentials"] == "true"
        assert answer.headers["vary"] == "Origin"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["content-security-policy"].startswith("default-src 'none'")


def test_gate003_a_fault_is_the_contracts_500_and_the_connection_stays_usable(
    app, client, services, site, monkeypatch
) -> None:
    async def failing(request: Any) -> Any:
        await request.body()
        raise RuntimeError("secret: the store's password")

    monkeypatch.setitem(app_module.TRACK_HANDLERS, "/api/track", failing)
    answer = client.post(
        "/api/track", json={"site_id": str(site.site_id), "type": "pageview"}, headers={"Origin": ORIGIN}
    )
    assert answer.status_code == 500
    body = answer.json()
    assert body["code"] == "INTERNAL_ERROR" and body["requestId"] and "secret" not in answer.text
    assert answer.headers["access-control-allow-origin"] == ORIGIN
    assert answer.headers["x-frame-options"] == "DENY"
    assert _stored(services, site.site_id) == 0
    monkeypatch.setitem(app_module.TRACK_HANDLERS, "/api/track", track)
    again = client.post("/api/track", json={"site_id": str(site.site_id), "type": "pageview"})
    assert (again.status_code, again.json()) == (200, {"success": True})


def test_gate004_other_methods_and_paths_go_through_the_stack(client, site) -> None:
    preflight = client.options("/api/track", headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == ORIGIN
    for method in ("GET", "PUT", "DELETE"):
        answer = client.request(method, "/api/track")
        assert answer.status_code == 405 and answer.json()["code"] == "METHOD_NOT_ALLOWED", method
        assert answer.headers["access-control-allow-origin"] == "*"
    assert client.post("/api/track/", json={}).status_code == 404
    identify = client.post(
        "/api/identify", json={"site_id": str(site.site_id), "user_id": "u1"}, headers={"Origin": ORIGIN}
    )
    assert identify.status_code == 200 and identify.headers["access-control-allow-origin"] == ORIGIN
