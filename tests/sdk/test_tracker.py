"""The Python trackers against the real app: AsyncTracker (in-process and over loopback) and the queued Tracker."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from api_client import AsyncTracker, Tracker, TrackResult
from tests.support import REPO_ROOT, free_port, live_server

SERVER_UA = "billing-service/1.0"
BROWSER = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)


def rows(services) -> list[dict[str, Any]]:
    return services.events.query_dicts("SELECT * FROM events ORDER BY timestamp, pathname")


class RecordingTransport(httpx.AsyncBaseTransport):
    """Forwards to the real app in-process and keeps every request it saw."""

    def __init__(self, app) -> None:
        self.inner = httpx.ASGITransport(app=app, client=("198.51.100.1", 4000))
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        self.requests.append(request)
        return await self.inner.handle_async_request(request)


@pytest.mark.parametrize(
    "options",
    [
        {"analytics_host": "", "site_id": 1, "api_key": "k"},
        {"analytics_host": "   ", "site_id": 1, "api_key": "k"},
        {"analytics_host": "ftp://stats.example.com/api", "site_id": 1, "api_key": "k"},
        {"analytics_host": "stats.example.com/api", "site_id": 1, "api_key": "k"},
        {"analytics_host": None, "site_id": 1, "api_key": "k"},
        {"analytics_host": "https://s.example.com/api", "site_id": 0, "api_key": "k"},
        {"analytics_host": "https://s.example.com/api", "site_id": -3, "api_key": "k"},
        {"analytics_host": "https://s.example.com/api", "site_id": "", "api_key": "k"},
        {"analytics_host": "https://s.example.com/api", "site_id": True, "api_key": "k"},
        {"analytics_host": "https://s.example.com/api", "site_id": 1.5, "api_key": "k"},
        {"analytics_host": "https://s.example.com/api", "site_id": 1, "api_key": ""},
        {"analytics_host": "https://s.example.com/api", "site_id": 1, "api_key": "  "},
        {"analytics_host": "https://s.example.com/api", "site_id": 1, "api_key": None},
    ],
)
@pytest.mark.parametrize("cls", [AsyncTracker, Tracker])
def test_tracker001_constructor_validates_options(cls, options):
    with pytest.raises(ValueError):
        cls(**options)


def test_tracker002_properties_types_checked_at_the_call(app, site, owner):
    tracker = Tracker("http://testserver/api", site.site_id, owner.api_key, client=TestClient(app))
    try:
        for bad in ({"when": object()}, {"nested": {"a": 1}}, {"items": [1, {"x": 2}]}, {3: "x"}, ["not", "a", "map"]):
            with pytest.raises(TypeError):
                tracker.event("signup", properties=bad)
        with pytest.raises(TypeError):
            tracker.pageview(payload=["pathname", "/x"])
    finally:
        tracker.close()


def test_tracker003_async_wire_format_matches_rybbit_node(app, services, site, owner):
    transport = RecordingTransport(app)

    async def scenario() -> list[TrackResult]:
        async with AsyncTracker("http://testserver/api/", site.site_id, owner.api_key, transport=transport) as tracker:
            return [
                await tracker.pageview({"pathname": "/pricing", "hostname": "example.com", "user_agent": BROWSER}),
                await tracker.event(
                    "purchase",
                    {"pathname": "/checkout", "ip_address": "81.2.69.142", "user_agent": SERVER_UA, "user_id": "u-1"},
                    {"amount": 42.5, "currency": "EUR", "coupons": ["A", "B"], "first": True},
                ),
                await tracker.event("no-props", {"pathname": "/x"}, {}),
            ]

    results = asyncio.run(scenario())
    assert results == [TrackResult(True, 200), TrackResult(True, 200), TrackResult(True, 200)]
    first, second, third = (json.loads(r.content) for r in transport.requests)
    assert all(str(r.url) == "http://testserver/api/track" for r in transport.requests)
    assert all(r.headers["authorization"] == f"Bearer {owner.api_key}" for r in transport.requests)
    assert list(first)[:3] == ["site_id", "type", "api_key"]
    assert first == {
        "site_id": str(site.site_id),
        "type": "pageview",
        "api_key": owner.api_key,
        "pathname": "/pricing",
        "hostname": "example.com",
        "user_agent": BROWSER,
    }
    assert second["type"] == "custom_event" and second["event_name"] == "purchase"
    assert isinstance(second["properties"], str)  # JSON-encoded, as @rybbit/node sends it
    assert json.loads(second["properties"]) == {"amount": 42.5, "currency": "EUR", "coupons": ["A", "B"], "first": True}
    assert "properties" not in third
    pageview, purchase, bare = rows(services)
    assert (pageview["pathname"], pageview["browser"]) == ("/pricing", "Chrome")
    assert (purchase["country"], purchase["identified_user_id"], purchase["event_name"]) == ("GB", "u-1", "purchase")
    assert json.loads(purchase["props"])["coupons"] == ["A", "B"]
    assert bare["props"] == "{}"


def test_tracker004_async_over_loopback_and_failures_never_raise(app, services, site, owner, capsys):
    async def scenario(base: str) -> list[TrackResult]:
        good = AsyncTracker(f"{base}/api", site.id, owner.api_key, debug=True)
        unknown_site = AsyncTracker(f"{base}/api", 424242, owner.api_key)
        bad_key = AsyncTracker(f"{base}/api", site.site_id, "sl_wrong")
        down = AsyncTracker(f"http://127.0.0.1:{free_port()}/api", site.site_id, owner.api_key, timeout=2)
        try:
            return [
                await good.pageview({"pathname": "/live", "user_agent": BROWSER}),
                await unknown_site.pageview(),
                await bad_key.event("x"),
                await down.pageview(),
                await good.event(""),
            ]
        finally:
            for tracker in (good, unknown_site, bad_key, down):
                await tracker.aclose()

    with live_server(app) as base:
        ok, missing, unauthorized, network, nameless = asyncio.run(scenario(base))
    assert ok == TrackResult(True, 200)
    assert (missing.ok, missing.status) == (False, 404) and "Site not found" in missing.error
    assert (unauthorized.ok, unauthorized.status) == (False, 401)
    assert (network.ok, network.status) == (False, None) and network.error
    assert (nameless.ok, nameless.status) == (False, None)
    assert [r["pathname"] for r in rows(services)] == ["/live"]
    printed = capsys.readouterr().out
    assert "[sitelens]" in printed and owner.api_key[:6] in printed
    assert owner.api_key not in printed


class GatedTransport(httpx.BaseTransport):
    """Holds requests until ``gate`` is set, optionally failing the first few with a connection error."""

    def __init__(self, client: TestClient, fail_first: int = 0) -> None:
        self.client = client
        self.gate = threading.Event()
        self.fail_first = fail_first
        self.attempts = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.gate.wait(10)
        self.attempts += 1
        if self.attempts <= self.fail_first:
            raise httpx.ConnectError("connection refused", request=request)
        request.read()
        response = self.client.post(
            request.url.path, content=request.content, headers={k: v for k, v in request.headers.items()}
        )
        return httpx.Response(response.status_code, content=response.content, headers=response.headers)


def test_tracker005_sync_tracker_queues_and_flushes(app, services, site, owner):
    with TestClient(app) as client:
        tracker = Tracker("http://testserver/api", site.site_id, owner.api_key, client=client)
        assert tracker.pageview({"pathname": "/one", "user_agent": BROWSER}) is True
        assert tracker.event("signup", {"pathname": "/two"}, {"plan": "pro"}) is True
        assert tracker.flush(timeout=10) is True
        assert (tracker.sent, tracker.failed) == (2, 0)
        tracker.close()
        assert tracker.pageview() is False  # closed
        tracker.close()  # idempotent
    one, two = rows(services)
    assert (one["pathname"], two["pathname"], json.loads(two["props"])) == ("/one", "/two", {"plan": "pro"})


def test_tracker006_full_queue_returns_false(app, services, site, owner):
    with TestClient(app) as client:
        transport = GatedTransport(client)
        tracker = Tracker("http://testserver/api", site.site_id, owner.api_key, transport=transport, max_queue_size=1)
        accepted = [tracker.pageview({"pathname": f"/{i}", "user_agent": BROWSER}) for i in range(5)]
        # One event is in the sender's hands, one waits in the queue; the rest did not fit.
        assert accepted.count(True) in (1, 2) and accepted[0] is True and accepted[-1] is False
        transport.gate.set()
        assert tracker.flush(timeout=10)
        tracker.close()
    assert len(rows(services)) == accepted.count(True)


def test_tracker007_sync_tracker_retries_with_backoff(app, services, site, owner):
    with TestClient(app) as client:
        transport = GatedTransport(client, fail_first=2)
        transport.gate.set()
        tracker = Tracker(
            "http://testserver/api", site.site_id, owner.api_key, transport=transport, backoff=0.01, max_retries=3
        )
        assert tracker.pageview({"pathname": "/retried", "user_agent": BROWSER})
        assert tracker.flush(timeout=10)
        assert transport.attempts == 3 and tracker.sent == 1
        assert tracker.last_result == TrackResult(True, 200)
        # A 4xx is not retried and is reported, not raised.
        bad = Tracker("http://testserver/api", 999999, owner.api_key, transport=transport, backoff=0.01)
        assert bad.pageview()
        assert bad.flush(timeout=10)
        assert bad.failed == 1 and bad.last_result.status == 404 and transport.attempts == 4
        bad.close()
        tracker.close()
    assert [r["pathname"] for r in rows(services)] == ["/retried"]


ATEXIT_SCRIPT = """
import sys
from api_client import Tracker
tracker = Tracker(sys.argv[1], sys.argv[2], sys.argv[3])
for i in range(5):
    assert tracker.pageview({"pathname": f"/exit{i}", "user_agent": sys.argv[4]})
# No flush() or close(): the atexit hook must deliver the queue before the interpreter ends.
"""


def test_tracker008_queued_events_are_sent_at_interpreter_exit(app, services, site, owner):
    root = REPO_ROOT
    with live_server(app) as base:
        run = subprocess.run(
            [sys.executable, "-c", ATEXIT_SCRIPT, f"{base}/api", str(site.site_id), owner.api_key, BROWSER],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert run.returncode == 0, run.stderr
    assert sorted(r["pathname"] for r in rows(services)) == [f"/exit{i}" for i in range(5)]
