"""Tracking budgets: per address and per site, counted in events, 429 with ``Retry-After``, API keys exempt.

The budgets refill with time, so the tests hold the budget's clock still (and move it on purpose) instead of
racing the refill.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from api_backend.app import create_app
from api_backend.ingest.budget import TokenBuckets, TrackingBudget
from api_backend.services import open_services
from api_backend.settings import SettingsError, load_settings
from tests.support import make_account, make_site

BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def budgeted(tmp_path):
    """A client on an app whose tracking budgets are 1000 events a minute per address and 2000 per site."""
    settings = load_settings(
        {},
        data_dir=str(tmp_path / "data"),
        secret_key="budget-secret-0123456789",
        trust_proxy="true",  # so a test can speak from several addresses
        track_ip_events_per_minute="1000",
        track_site_events_per_minute="2000",
    )
    services = open_services(settings)
    clock = Clock()
    services.ingestor.budget = TrackingBudget(
        settings.track_ip_events_per_minute, settings.track_site_events_per_minute, clock=clock
    )
    owner = make_account(services, "budget@example.com")
    site = make_site(services, owner)
    other = make_site(services, owner, "other.example.com")
    with TestClient(create_app(settings, services)) as client:
        yield client, services, clock, owner, site, other
    services.close()


def _from(ip: str, **extra: str) -> dict[str, str]:
    return {"User-Agent": BROWSER, "X-Forwarded-For": ip, **extra}


def _batch(site: Any, n: int, path: str = "/b") -> dict[str, Any]:
    return {"events": [{"site_id": site.site_id, "type": "pageview", "pathname": path}] * n}


def _limited(response) -> int:
    assert response.status_code == 429, response.text
    assert response.json()["code"] == "RATE_LIMITED" and response.json()["error"]
    return int(response.headers["Retry-After"])


def test_budget001_an_address_over_its_budget_gets_429_for_every_tracking_route(budgeted):
    client, services, clock, _, site, _ = budgeted
    assert (
        client.post("/api/track/batch", json=_batch(site, 1000), headers=_from("198.51.100.1")).json()["accepted"]
        == 1000
    )

    event = {"site_id": site.site_id, "type": "pageview", "pathname": "/one"}
    assert _limited(client.post("/api/track", json=event, headers=_from("198.51.100.1"))) >= 1
    assert _limited(client.post("/api/track/batch", json=_batch(site, 1), headers=_from("198.51.100.1"))) >= 1
    identify = {"site_id": site.site_id, "user_id": "u1"}
    assert _limited(client.post("/api/identify", json=identify, headers=_from("198.51.100.1"))) >= 1
    assert client.post("/api/track", json=event, headers=_from("198.51.100.2")).status_code == 200  # another address
    assert services.events.count(site.site_id) == 1001  # refused events were not stored

    clock.now += 60  # a minute later the bucket is full again
    assert client.post("/api/track", json=event, headers=_from("198.51.100.1")).status_code == 200


def test_budget002_batches_count_events_and_a_refused_batch_takes_nothing(budgeted):
    client, services, clock, _, site, _ = budgeted
    ip = _from("198.51.100.7")
    assert client.post("/api/track/batch", json=_batch(site, 600), headers=ip).status_code == 200
    wait = _limited(client.post("/api/track/batch", json=_batch(site, 600), headers=ip))
    assert wait == 12  # 200 events short at 1000 a minute
    assert client.post("/api/track/batch", json=_batch(site, 400), headers=ip).status_code == 200  # still there
    clock.now += 36
    assert client.post("/api/track/batch", json=_batch(site, 600), headers=ip).status_code == 200
    assert services.events.count(site.site_id) == 1600


def test_budget003_a_site_over_its_budget_gets_429_from_any_address(budgeted):
    client, services, _, _, site, other = budgeted
    for i in range(2):
        assert (
            client.post("/api/track/batch", json=_batch(site, 1000), headers=_from(f"203.0.113.{i}")).status_code == 200
        )
    event = {"site_id": site.site_id, "type": "pageview"}
    assert _limited(client.post("/api/track", json=event, headers=_from("203.0.113.9"))) >= 1
    assert _limited(client.post("/api/track/batch", json=_batch(site, 5), headers=_from("203.0.113.10"))) >= 1
    other_event = {"site_id": other.site_id, "type": "pageview"}
    assert client.post("/api/track", json=other_event, headers=_from("203.0.113.9")).status_code == 200
    assert services.events.count(site.site_id) == 2000


def test_budget004_a_valid_api_key_of_the_sites_organization_skips_both_budgets(budgeted):
    client, services, _, owner, site, _ = budgeted
    ip = _from("198.51.100.20")
    assert client.post("/api/track/batch", json=_batch(site, 1000), headers=ip).status_code == 200
    assert client.post("/api/track/batch", json=_batch(site, 1000), headers=_from("198.51.100.21")).status_code == 200
    keyed = {**ip, **owner.headers}
    for _ in range(3):
        assert client.post("/api/track/batch", json=_batch(site, 1000), headers=keyed).json()["accepted"] == 1000
    event = {"site_id": site.site_id, "type": "pageview"}
    assert client.post("/api/track", json=event, headers=keyed).status_code == 200
    assert client.post("/api/track", json={**event, "api_key": owner.api_key}, headers=ip).status_code == 200
    assert services.events.count(site.site_id) == 5002


def test_budget005_buckets_stay_bounded_under_a_flood_of_addresses():
    clock = Clock()
    buckets = TokenBuckets(1000, max_keys=100, clock=clock)
    for i in range(5000):
        assert buckets.take(f"10.0.{i // 256}.{i % 256}", 10) == 0
        assert len(buckets) <= 100
    assert buckets.take("fresh", 2000) == 0  # more than a whole bucket passes from a full one and empties it
    assert buckets.take("fresh", 1) == pytest.approx(0.06)
    assert buckets.take("fresh", 1) == pytest.approx(0.06)  # a refused request takes nothing


def test_budget006_budget_settings_are_generous_by_default_and_checked(tmp_path):
    defaults = load_settings({}, data_dir=str(tmp_path))
    assert defaults.track_ip_events_per_minute >= 10_000 and defaults.track_site_events_per_minute >= 100_000
    with pytest.raises(SettingsError, match="SITELENS_TRACK_IP_EVENTS_PER_MINUTE"):
        load_settings({"SITELENS_TRACK_IP_EVENTS_PER_MINUTE": "500"}, data_dir=str(tmp_path))
    unlimited = load_settings({"SITELENS_TRACK_SITE_EVENTS_PER_MINUTE": "0"}, data_dir=str(tmp_path))
    assert unlimited.track_site_events_per_minute == 0
