"""The demo on both event stores: every read route gives the same answer on DuckDB and on ClickHouse.

The same demo traffic (same seed, same clock) goes into a DuckDB store and into a ClickHouse store (embedded chdb),
each behind its own app, and every analytics route is asked the same questions on both, with filters, zones and
paging. The answers must be equal, value for value: the route's numbers cannot depend on the engine. The ClickHouse
store's sessions are sealed, and its reads take them from the seal however few the window's events
(``query/facts.py``); the reads merging its table at read time are compared with DuckDB's in
``test_session_facts_clickhouse.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api_backend.app import create_app
from api_backend.demo import setup_demo
from api_backend.query import facts as facts_module
from api_backend.services import open_services
from api_backend.settings import load_settings
from api_backend.store.clickhouse import ClickHouseEventStore
from api_backend.store.open import open_event_store
from tests.support import store_options

NOW = datetime(2026, 6, 15, 12, 0)
EVENTS = 20_000
WINDOWS = [
    {"start_date": "2026-05-16", "end_date": "2026-06-15", "time_zone": "UTC"},
    {"start_date": "2026-05-20", "end_date": "2026-06-02", "time_zone": "America/New_York"},
    {"start_datetime": "2026-06-01T06:30:00Z", "end_datetime": "2026-06-08T18:00:00Z"},
]
FILTERS = [
    None,
    [{"parameter": "channel", "type": "equals", "value": ["Organic Search", "Direct"]}],
    [{"parameter": "pathname", "type": "starts_with", "value": ["/blog"]}],
    [{"parameter": "browser", "type": "not_equals", "value": ["Chrome"]}],
    [{"parameter": "referrer", "type": "regex", "value": ["goo"]}],
    [{"parameter": "prop:plan", "type": "equals", "value": ["pro"]}],
]


# Goal rows carry their metadata's creation times, which differ between the two apps by when each was set up.
METADATA_TIMES = {"createdAt", "updatedAt"}


class Demo:
    """One store's app with the demo loaded."""

    def __init__(self, client: TestClient, token: str, site_id: int, org_id: str) -> None:
        self.client, self.site_id, self.org_id = client, site_id, org_id
        self.headers = {"Authorization": f"Bearer {token}"}

    def get(self, path: str, **params: Any) -> Any:
        response = self.client.get(f"/api{path}", params=params, headers=self.headers)
        assert response.status_code == 200, (path, params, response.text)
        return response.json()

    def post(self, path: str, body: Any, **params: Any) -> Any:
        response = self.client.post(f"/api{path}", params=params, json=body, headers=self.headers)
        assert response.status_code == 200, (path, body, response.text)
        return response.json()


def _open(tmp: Path, store: str, request: pytest.FixtureRequest) -> Iterator[Demo]:
    settings = load_settings(
        {}, data_dir=str(tmp / store), secret_key="test-secret-key-0123456789", **store_options(store, request)
    )
    services = open_services(settings)
    summary = setup_demo(services, base_url="http://testserver", events=EVENTS, now=NOW)
    if store == "clickhouse":
        services.writer.wait_visible()
        sealing, _ = open_event_store(settings)
        assert isinstance(sealing, ClickHouseEventStore)
        assert sealing.seal_sessions(NOW)["sessions"] > 1000
        sealing.close()
    site = services.metadata.site(summary.site_id)
    assert site is not None
    org_id = site.organization_id
    with TestClient(create_app(settings, services)) as client:
        yield Demo(client, summary.api_key, summary.site_id, org_id)
    services.close()


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[tuple[Demo, Demo]]:
    with pytest.MonkeyPatch.context() as patch:
        # The demo's few events read from the seal too, however many of its sessions are open.
        patch.setattr(facts_module, "SEALED_MIN_EVENTS", 0)
        patch.setattr(facts_module, "SEALED_OPEN_SHARE", float("inf"))
        yield from _both(tmp_path_factory, request)


def _both(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[tuple[Demo, Demo]]:
    tmp = tmp_path_factory.mktemp("stores-agree")
    duck = _open(tmp, "duckdb", request)
    clickhouse = _open(tmp, "clickhouse", request)
    try:
        yield next(duck), next(clickhouse)
    finally:
        for opened in (duck, clickhouse):
            next(opened, None)


def _questions(demo: Demo) -> Iterator[tuple[str, str, dict[str, Any]]]:
    site = f"/sites/{demo.site_id}"
    goals = demo.get(f"{site}/goals", limit=100)["data"]
    for window in WINDOWS:
        yield "usage", f"/org-event-count/{demo.org_id}", window
        for flt in FILTERS:
            params = {**window, **({"filters": json.dumps(flt)} if flt else {})}
            yield "overview", f"{site}/overview", params
            yield "series", f"{site}/overview-bucketed", {**params, "bucket": "day"}
            yield "goals", f"{site}/goals", {**params, "limit": 100}
            for parameter in (
                "channel",
                "pathname",
                "event_name",
                "prop:plan",
                "country",
                "entry_page",
                "browser_version",
                "referrer",
            ):
                yield "metric", f"{site}/metric", {**params, "parameter": parameter, "limit": 20}
            yield "error-names", f"{site}/error-names", params
        for goal in goals:
            yield "goal-sessions", f"{site}/goals/{goal['goalId']}/sessions", {**window, "limit": 25}
            for parameter in ("channel", "pathname"):
                yield "breakdown", f"{site}/goals/{goal['goalId']}/breakdown", {**window, "parameter": parameter}
    names = demo.get(f"{site}/error-names", **WINDOWS[0])["data"]
    for error in names[:3]:
        for flt in FILTERS[:3]:
            message = {"errorMessage": error["value"], **WINDOWS[0], **({"filters": json.dumps(flt)} if flt else {})}
            yield "error-events", f"{site}/error-events", {**message, "limit": 20}
            yield "error-series", f"{site}/error-bucketed", {**message, "bucket": "hour"}


FUNNEL = {
    "steps": [
        {"type": "page", "value": "/", "name": "Home"},
        {"type": "page", "value": "/pricing", "name": "Pricing"},
        {"type": "event", "value": "signup", "name": "Signed up"},
    ]
}


def _differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Where two JSON answers differ, as ``path: left != right`` lines (short enough to read in a failure)."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted((set(a) | set(b)) - METADATA_TIMES)
        return [d for k in keys for d in _differences(a.get(k), b.get(k), f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def test_stores001_every_read_route_agrees(demos: tuple[Demo, Demo]) -> None:
    duck, clickhouse = demos
    assert duck.site_id == clickhouse.site_id
    asked = 0
    for kind, path, params in _questions(duck):
        if kind == "usage":
            other = path.replace(duck.org_id, clickhouse.org_id)
        else:
            other = path
        differences = _differences(duck.get(path, **params), clickhouse.get(other, **params))
        assert not differences, (kind, path, params, differences[:10])
        asked += 1
    assert asked > 150
    path = f"/sites/{duck.site_id}/funnels/analyze"
    for window in WINDOWS:
        for flt in FILTERS:
            params = {**window, **({"filters": json.dumps(flt)} if flt else {})}
            assert clickhouse.post(path, FUNNEL, **params) == duck.post(path, FUNNEL, **params), params


def test_stores002_the_demo_has_numbers_to_compare(demos: tuple[Demo, Demo]) -> None:
    duck, _ = demos
    overview = duck.get(f"/sites/{duck.site_id}/overview", **WINDOWS[0])["data"]
    assert overview["sessions"] > 1000 and overview["pageviews"] > overview["sessions"]
    goals = duck.get(f"/sites/{duck.site_id}/goals", limit=100, **WINDOWS[0])["data"]
    assert all(g["total_conversions"] > 0 for g in goals)
    assert duck.get(f"/sites/{duck.site_id}/error-names", **WINDOWS[0])["data"]
