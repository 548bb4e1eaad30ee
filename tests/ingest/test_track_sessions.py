"""Sessions through the API: a split after 30 idle minutes, no split across a restart, daily-salted visitor ids."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient

from api_backend.app import create_app
from api_backend.ingest.pipeline import utc_now
from api_backend.services import open_services
from tests.support import make_account, make_site

BROWSER = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)
UA = {"User-Agent": BROWSER}


class Clock:
    """A settable clock for the ingestor (time is the one outside input sessions depend on)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def rows(services) -> list[dict[str, Any]]:
    return services.events.query_dicts("SELECT * FROM events ORDER BY timestamp")


def send(client, site, path: str = "/") -> None:
    body = {"site_id": site.site_id, "type": "pageview", "hostname": "example.com", "pathname": path}
    assert client.post("/api/track", json=body, headers=UA).json() == {"success": True}


def test_sessions001_split_after_30_idle_minutes(client, services, site):
    clock = Clock(datetime(2026, 3, 1, 9, 0))
    services.ingestor.clock = clock
    send(client, site, "/a")
    clock.now += timedelta(minutes=20)
    send(client, site, "/b")
    clock.now += timedelta(minutes=30)  # exactly 30 minutes idle: same session
    send(client, site, "/c")
    clock.now += timedelta(minutes=30, milliseconds=1)
    send(client, site, "/d")
    a, b, c, d = rows(services)
    assert a["session_id"] == b["session_id"] == c["session_id"] != d["session_id"]
    assert len({r["user_id"] for r in (a, b, c, d)}) == 1
    assert [r["timestamp"] for r in (a, d)] == [datetime(2026, 3, 1, 9, 0), datetime(2026, 3, 1, 10, 20, 0, 1000)]


def test_sessions002_visitors_and_sites_have_their_own_sessions(client, services, owner, site):
    other = make_site(services, owner, "other.org")
    send(client, site)
    send(client, other)
    body = {"site_id": site.site_id, "type": "pageview", "hostname": "example.com"}
    other_browser = {"User-Agent": BROWSER.replace("124.0.0.0", "125.0.0.0")}
    assert client.post("/api/track", json=body, headers=other_browser).json() == {"success": True}
    first, second, third = rows(services)
    assert len({first["session_id"], second["session_id"], third["session_id"]}) == 3
    assert first["user_id"] != second["user_id"]  # the site is part of the visitor hash


def test_sessions003_restart_keeps_live_sessions(settings):
    services = open_services(settings)
    site = make_site(services, make_account(services, "restart@example.com"))
    with TestClient(create_app(settings, services)) as client:
        send(client, site, "/before")
    services.close()

    reopened = open_services(settings)
    try:
        with TestClient(create_app(settings, reopened)) as client:
            send(client, site, "/after")
            # A session idle for more than 30 minutes is not recovered.
            reopened.ingestor.clock = lambda: utc_now() + timedelta(minutes=31)
            send(client, site, "/much-later")
        before, after, later = rows(reopened)
        assert before["session_id"] == after["session_id"] != later["session_id"]
        assert before["user_id"] == after["user_id"] == later["user_id"]
    finally:
        reopened.close()


def test_sessions004_salted_visitor_ids_rotate_at_utc_midnight(client, services, owner):
    salted = make_site(services, owner, "salted.org", salt_user_ids=True)
    plain = make_site(services, owner, "plain.org")
    clock = Clock(datetime(2026, 3, 1, 23, 59, 50))
    services.ingestor.clock = clock
    send(client, salted)
    send(client, plain)
    clock.now = datetime(2026, 3, 2, 0, 0, 5)
    send(client, salted)
    send(client, plain)
    salted_rows = [r for r in rows(services) if r["site_id"] == salted.site_id]
    plain_rows = [r for r in rows(services) if r["site_id"] == plain.site_id]
    assert salted_rows[0]["user_id"] != salted_rows[1]["user_id"]
    assert plain_rows[0]["user_id"] == plain_rows[1]["user_id"]
    assert plain_rows[0]["session_id"] == plain_rows[1]["session_id"]
