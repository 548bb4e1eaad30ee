"""The events of one session keep the order they were sent in: a batch stamps them a millisecond apart.

A server sending a visit as one batch lists its pages in order; stamped with one clock reading they would share a
time, and the session's entry and exit pages and a funnel's steps (each strictly after the one before) would not
follow that order. On both event stores.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from api_backend.ingest.sessions import STAMP_LEAD

pytestmark = pytest.mark.both_stores

NOW = datetime(2026, 3, 2, 10, 0)
DAY = {"start_date": "2026-03-02", "end_date": "2026-03-02"}
CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"


def _event(site: Any, ip: str, pathname: str, kind: str = "pageview", **fields: Any) -> dict[str, Any]:
    return {
        "site_id": str(site.site_id),
        "type": kind,
        "pathname": pathname,
        "ip_address": ip,
        "user_agent": CHROME,
        **fields,
    }


def _send(client: Any, owner: Any, events: list[dict[str, Any]]) -> None:
    response = client.post("/api/track/batch", json={"events": events}, headers=owner.headers)
    assert response.status_code == 200 and response.json()["accepted"] == len(events), response.text


def _times(services: Any) -> dict[str, list[tuple[datetime, str]]]:
    """Each session's (time, pathname) pairs in time order."""
    rows = services.events.query("SELECT session_id, timestamp, pathname FROM events ORDER BY timestamp, pathname")
    sessions: dict[str, list[tuple[datetime, str]]] = {}
    for session_id, timestamp, pathname in rows:
        sessions.setdefault(session_id, []).append((timestamp, pathname))
    return sessions


def test_order001_a_batch_keeps_each_sessions_events_in_the_order_sent(client, services, owner, site) -> None:
    services.ingestor.clock = lambda: NOW
    a, b = "198.51.100.7", "198.51.100.8"
    _send(
        client,
        owner,
        [
            _event(site, a, "/a"),
            _event(site, b, "/x"),
            _event(site, a, "/b"),
            _event(site, a, "/b", "custom_event", event_name="signup"),
            _event(site, a, "/c"),
        ],
    )
    _send(client, owner, [_event(site, a, "/d"), _event(site, b, "/y")])  # the same clock reading again

    ms = timedelta(milliseconds=1)
    by_first_page = {pairs[0][1]: pairs for pairs in _times(services).values()}
    assert by_first_page["/a"] == [
        (NOW, "/a"),
        (NOW + ms, "/b"),
        (NOW + 2 * ms, "/b"),
        (NOW + 3 * ms, "/c"),
        (NOW + 4 * ms, "/d"),
    ]
    assert by_first_page["/x"] == [(NOW, "/x"), (NOW + ms, "/y")]

    steps = [
        {"type": "page", "value": "/a", "name": "A"},
        {"type": "page", "value": "/b", "name": "B"},
        {"type": "event", "value": "signup", "name": "Signed up"},
        {"type": "page", "value": "/c", "name": "C"},
    ]
    response = client.post(
        f"/api/sites/{site.site_id}/funnels/analyze", params=DAY, json={"steps": steps}, headers=owner.headers
    )
    assert response.status_code == 200, response.text
    assert [step["sessions"] for step in response.json()["data"]] == [1, 1, 1, 1]

    response = client.get(f"/api/sites/{site.site_id}/sessions", params=DAY, headers=owner.headers)
    assert response.status_code == 200, response.text
    pages = {(s["entry_page"], s["exit_page"], s["pageviews"]) for s in response.json()["data"]}
    assert pages == {("/a", "/d", 4), ("/x", "/y", 2)}


def test_order002_a_flood_of_one_session_runs_at_most_a_second_ahead_of_the_clock(client, services, owner, site):
    services.ingestor.clock = lambda: NOW
    _send(client, owner, [_event(site, "198.51.100.9", f"/p{n}") for n in range(1000)])
    _send(client, owner, [_event(site, "198.51.100.9", f"/q{n}") for n in range(500)])

    (pairs,) = _times(services).values()
    times = [t for t, _ in pairs]
    assert len(times) == 1500 and times[0] == NOW
    assert len(set(times[:1001])) == 1001  # a millisecond apart until the lead is reached
    assert max(times) == NOW + STAMP_LEAD and times[1000:] == [NOW + STAMP_LEAD] * 500
