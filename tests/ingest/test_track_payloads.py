"""POST /api/track: every event type with good and bad payloads, site lookup and API key trust."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api_backend.app import create_app
from api_backend.ingest.visitor import visitor_id
from api_backend.services import open_services
from api_backend.settings import load_settings
from tests.support import make_account, make_site

BROWSER = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4 Mobile/15E148 Safari/604.1"
)
UA = {"User-Agent": BROWSER}

GOOD: dict[str, dict[str, Any]] = {
    "pageview": {"pathname": "/pricing", "page_title": "Pricing"},
    "custom_event": {"event_name": "signup", "properties": json.dumps({"plan": "pro", "seats": 3})},
    "performance": {"event_name": "web-vitals", "lcp": 1200.5, "cls": 0, "inp": 80, "fcp": 900, "ttfb": 120},
    "outbound": {"event_name": "", "properties": json.dumps({"url": "https://other.org/x", "text": "Other"})},
    "error": {
        "event_name": "TypeError",
        "properties": json.dumps({"message": "x is undefined", "stack": "at f", "lineNumber": 3, "columnNumber": 7}),
    },
    "button_click": {"properties": json.dumps({"text": "Buy"})},
    "copy": {"properties": json.dumps({"sourceElement": "p", "text": "hello", "textLength": 5})},
    "form_submit": {
        "properties": json.dumps(
            {"formId": "f", "formName": "signup", "formAction": "/s", "method": "post", "fieldCount": 4}
        )
    },
    "input_change": {"properties": json.dumps({"element": "input", "inputName": "email"})},
}


def stored(services, site_id: int | None = None) -> list[dict[str, Any]]:
    sql = "SELECT * FROM events" + (" WHERE site_id = ?" if site_id is not None else "") + " ORDER BY timestamp"
    return services.events.query_dicts(sql, [site_id] if site_id is not None else [])


def event(site, kind: str = "pageview", **fields: Any) -> dict[str, Any]:
    return {"site_id": str(site.site_id), "type": kind, "hostname": "example.com", **fields}


def assert_400(response, field: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "INVALID_REQUEST" and body["error"]
    assert field in [d["field"] for d in body["details"]], body


@pytest.mark.parametrize("kind", list(GOOD))
def test_track001_every_type_is_stored(client, services, site, kind):
    response = client.post("/api/track", json=event(site, kind, **GOOD[kind]), headers=UA)
    assert response.status_code == 200, response.text
    assert response.json() == {"success": True}
    (row,) = stored(services)
    assert row["type"] == kind and row["site_id"] == site.site_id
    if GOOD[kind].get("properties"):
        assert json.loads(row["props"]) == json.loads(GOOD[kind]["properties"])
    if kind == "performance":
        assert (row["lcp"], row["cls"], row["inp"], row["fcp"], row["ttfb"]) == (1200.5, 0.0, 80.0, 900.0, 120.0)
    else:
        assert row["lcp"] is None


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("no type", {"type": None}, "type"),
    ("unknown type", {"type": "click"}, "type"),
    ("no site", {"site_id": None}, "site_id"),
    ("empty site", {"site_id": "  "}, "site_id"),
    ("boolean site", {"site_id": True}, "site_id"),
    ("zero site", {"site_id": 0}, "site_id"),
    ("long hostname", {"hostname": "h" * 254}, "hostname"),
    ("long pathname", {"pathname": "/" * 2049}, "pathname"),
    ("long querystring", {"querystring": "q" * 2049}, "querystring"),
    ("long language", {"language": "l" * 36}, "language"),
    ("long title", {"page_title": "t" * 513}, "page_title"),
    ("long referrer", {"referrer": "r" * 2049}, "referrer"),
    ("long user id", {"user_id": "u" * 256}, "user_id"),
    ("numeric hostname", {"hostname": 5}, "hostname"),
    ("negative width", {"screenWidth": -1}, "screenWidth"),
    ("fraction height", {"screenHeight": 10.5}, "screenHeight"),
    ("string width", {"screenWidth": "1920"}, "screenWidth"),
    ("bad ip", {"ip_address": "999.1.1.1"}, "ip_address"),
    ("long user agent", {"user_agent": "a" * 513}, "user_agent"),
    ("negative vital", {"type": "performance", "lcp": -1}, "lcp"),
    ("string vital", {"type": "performance", "cls": "0.1"}, "cls"),
    ("long event name", {"event_name": "e" * 257}, "event_name"),
    ("custom without name", {"type": "custom_event"}, "event_name"),
    ("custom bad JSON", {"type": "custom_event", "event_name": "x", "properties": "{nope"}, "properties"),
    ("custom JSON list", {"type": "custom_event", "event_name": "x", "properties": "[1, 2]"}, "properties"),
    ("props too long", {"type": "custom_event", "event_name": "x", "properties": {"k": "v" * 2100}}, "properties"),
    ("props number", {"type": "custom_event", "event_name": "x", "properties": 5}, "properties"),
    ("error without name", {"type": "error", "properties": json.dumps({"message": "m"})}, "event_name"),
    ("error without props", {"type": "error", "event_name": "E"}, "properties"),
    ("error message type", {"type": "error", "event_name": "E", "properties": {"message": 1}}, "properties.message"),
    ("error no message", {"type": "error", "event_name": "E", "properties": {"stack": "s"}}, "properties.message"),
    (
        "error stack type",
        {"type": "error", "event_name": "E", "properties": {"message": "m", "stack": 1}},
        "properties.stack",
    ),
    (
        "error line type",
        {"type": "error", "event_name": "E", "properties": {"message": "m", "lineNumber": "3"}},
        "properties.lineNumber",
    ),
    (
        "error too long",
        {"type": "error", "event_name": "E", "properties": {"message": "m" * 4100}},
        "properties",
    ),
    ("outbound without props", {"type": "outbound"}, "properties"),
    ("outbound relative url", {"type": "outbound", "properties": {"url": "/local"}}, "properties.url"),
    ("outbound empty url", {"type": "outbound", "properties": {"url": ""}}, "properties.url"),
    ("outbound text type", {"type": "outbound", "properties": {"url": "https://a.b", "text": 3}}, "properties.text"),
    ("copy without element", {"type": "copy", "properties": {"text": "t"}}, "properties.sourceElement"),
    (
        "copy negative length",
        {"type": "copy", "properties": {"sourceElement": "p", "textLength": -2}},
        "properties.textLength",
    ),
    (
        "form without count",
        {"type": "form_submit", "properties": {"formId": "f", "formName": "n", "formAction": "/", "method": "get"}},
        "properties.fieldCount",
    ),
    (
        "form method type",
        {
            "type": "form_submit",
            "properties": {"formId": "f", "formName": "n", "formAction": "/", "method": 1, "fieldCount": 1},
        },
        "properties.method",
    ),
    ("input without name", {"type": "input_change", "properties": {"element": "input"}}, "properties.inputName"),
    ("button bad JSON", {"type": "button_click", "properties": "{"}, "properties"),
    ("props deeply nested", {"type": "custom_event", "event_name": "x", "properties": "[" * 1500}, "properties"),
    ("props NaN", {"type": "custom_event", "event_name": "x", "properties": '{"v": NaN}'}, "properties"),
]


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One app for the many bad-payload cases (each case checks that the store did not change)."""
    settings = load_settings({}, data_dir=str(tmp_path_factory.mktemp("bad")), secret_key="test-secret-key-0123456789")
    services = open_services(settings)
    site = make_site(services, make_account(services, "bad@example.com"))
    with TestClient(create_app(settings, services)) as client:
        yield client, services, site
    services.close()


@pytest.mark.parametrize(("case", "change", "field"), BAD, ids=[c[0] for c in BAD])
def test_track002_bad_payloads_are_400_and_store_nothing(shared, case, change, field):
    client, services, site = shared
    body = event(site)
    for key, value in change.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    assert_400(client.post("/api/track", json=body, headers=UA), field)
    assert stored(services) == []


def test_track003_body_shapes(client, services, site):
    assert_400(client.post("/api/track", content=b"{not json", headers={"Content-Type": "application/json"}), "body")
    assert_400(client.post("/api/track", json=[event(site)]), "body")
    deep = b'{"site_id": "1", "type": "pageview", "x": ' + b"[" * 30000 + b"]" * 30000 + b"}"
    assert_400(client.post("/api/track", content=deep, headers={"Content-Type": "application/json"}), "body")
    assert_400(client.post("/api/track", content=b"", headers={"Content-Type": "application/json"}), "body")
    assert (
        client.post(
            "/api/track", content=b"a=b", headers={"Content-Type": "application/x-www-form-urlencoded"}
        ).status_code
        == 415
    )
    # sendBeacon posts JSON as text/plain.
    beacon = client.post("/api/track", content=json.dumps(event(site)), headers={"Content-Type": "text/plain", **UA})
    assert beacon.status_code == 200, beacon.text
    # Unknown fields are ignored; the string id works; properties may be an object; pageview props need not be JSON.
    extra = event(site, "custom_event", event_name="e", properties={"a": [1, "b", True]}, brand_new_field={"x": 1})
    extra["site_id"] = site.id
    assert client.post("/api/track", json=extra, headers=UA).json() == {"success": True}
    loose = client.post("/api/track", json=event(site, properties="not json"), headers=UA)
    assert loose.json() == {"success": True}
    rows = stored(services)
    assert [r["type"] for r in rows] == ["pageview", "custom_event", "pageview"]
    assert json.loads(rows[1]["props"]) == {"a": [1, "b", True]}
    assert rows[2]["props"] == "{}"


def test_track004_unknown_site_is_404(client, services, site):
    for key in ("9999", 9999, "abcdefabcdef"):
        response = client.post("/api/track", json={"site_id": key, "type": "pageview"}, headers=UA)
        assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"
    assert stored(services) == []


def test_track005_api_key_trust(client, services, owner, site, settings):
    body = event(site, ip_address="81.2.69.142", user_agent=IPHONE)
    # Without a key the body's ip_address/user_agent are ignored: the connection's values count.
    assert client.post("/api/track", json=body, headers=UA).json() == {"success": True}
    # With the key in the header, or in the body, they are honoured.
    assert client.post("/api/track", json=body, headers={**UA, **owner.headers}).json() == {"success": True}
    assert client.post("/api/track", json={**body, "api_key": owner.api_key}, headers=UA).json() == {"success": True}
    untrusted, by_header, by_body = stored(services)
    assert (untrusted["browser"], untrusted["country"]) == ("Chrome", "")
    assert untrusted["user_id"] == visitor_id(settings.secret_key, site.site_id, "testclient", BROWSER)
    for row in (by_header, by_body):
        assert (row["browser"], row["operating_system"], row["device_type"], row["country"]) == (
            "Mobile Safari",
            "iOS",
            "Mobile",
            "GB",
        )
        assert row["user_id"] == visitor_id(settings.secret_key, site.site_id, "81.2.69.142", IPHONE)


def test_track006_trusted_events_skip_bot_blocking(client, services, owner, site):
    bot = {"User-Agent": "curl/8.4.0"}
    assert client.post("/api/track", json=event(site), headers=bot).json() == {
        "success": True,
        "tracked": False,
        "reason": "bot",
    }
    assert client.post("/api/track", json=event(site), headers={**bot, **owner.headers}).json() == {"success": True}
    (row,) = stored(services)
    assert row["browser"] == "curl"


def test_track007_bad_keys_are_401_and_store_nothing(client, services, owner, site):
    stranger = make_account(services, "stranger@example.com")
    make_site(services, stranger, "stranger.org")
    _, revoked = services.metadata.create_api_key(owner.user.id, "old")
    (key_row,) = [k for k in services.metadata.list_api_keys(owner.user.id) if k.name == "old"]
    services.metadata.delete_api_key(owner.user.id, key_row.id)
    cases = [
        {"Authorization": "Bearer sl_not_a_real_key"},
        {"Authorization": f"Bearer {stranger.api_key}"},  # valid key, but not a member of the site's org
        {"Authorization": f"Bearer {revoked}"},
        {"Authorization": "Basic abc"},
        {"Authorization": "Bearer "},
    ]
    for headers in cases:
        response = client.post("/api/track", json=event(site), headers={**UA, **headers})
        assert response.status_code == 401, (headers, response.text)
        assert response.json()["code"] == "AUTHENTICATION_REQUIRED"
    response = client.post("/api/track", json={**event(site), "api_key": "sl_wrong"}, headers=UA)
    assert response.status_code == 401
    assert stored(services) == []


def test_track008_member_role_is_enough(client, services, owner, site):
    member = make_account(services, "member@example.com")
    services.metadata.add_member(site.organization_id, member.user.id, "member")
    response = client.post("/api/track", json=event(site, user_agent="curl/8"), headers={**UA, **member.headers})
    assert response.json() == {"success": True}
    assert stored(services)[0]["browser"] == "curl"


def test_track009_body_limit_and_cors(client, site):
    huge = event(site, page_title="x" * 70_000)
    assert client.post("/api/track", json=huge).status_code == 413
    preflight = client.options(
        "/api/track", headers={"Origin": "https://example.com", "Access-Control-Request-Method": "POST"}
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "https://example.com"
    response = client.post("/api/track", json=event(site), headers={**UA, "Origin": "https://example.com"})
    assert response.headers["access-control-allow-origin"] == "https://example.com"


def _junk(rng, depth: int = 0) -> Any:
    choices = [
        None,
        True,
        0,
        -1,
        2**40,
        1.5,
        float("1e308"),
        "",
        " ",
        "x" * rng.choice([1, 300, 5000]),
        "8.8.8.8",
        "https://a.example/x?utm_source=google",
        "{}",
        '{"message": "m", "url": "https://x.y"}',
        "[1,2]",
        "\u0000\ud7ff",
        "lone \ud800 surrogate",
    ]
    if depth < 2:
        choices += [[_junk(rng, depth + 1)], {"message": _junk(rng, depth + 1), "url": _junk(rng, depth + 1)}]
    return rng.choice(choices)


def test_track010_random_payloads_never_fail_the_server(shared):
    import random

    client, services, site = shared
    rng = random.Random(20260301)
    fields = ["site_id", "type", "hostname", "pathname", "querystring", "screenWidth", "screenHeight", "language"]
    fields += ["page_title", "referrer", "user_id", "event_name", "properties", "lcp", "cls", "ip_address"]
    fields += ["user_agent", "api_key"]
    for _ in range(300):
        body: dict[str, Any] = {"site_id": str(site.site_id), "type": rng.choice(list(GOOD) + ["nope"])}
        for field in rng.sample(fields, rng.randint(1, 6)):
            body[field] = _junk(rng)
        # json.dumps escapes lone surrogates as \uXXXX, as a browser's JSON.stringify does.
        headers = {**UA, "Content-Type": "application/json"}
        response = client.post("/api/track", content=json.dumps(body), headers=headers)
        assert response.status_code in (200, 400, 401, 404, 413), (body, response.text)
        if response.status_code != 200:
            assert response.json()["code"] in {
                "INVALID_REQUEST",
                "AUTHENTICATION_REQUIRED",
                "NOT_FOUND",
                "PAYLOAD_TOO_LARGE",
            }
