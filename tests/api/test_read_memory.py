"""A read the event engine's memory limit stops is a 503 with the contract's error body, not a 500."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from fastapi.testclient import TestClient

from api_backend.app import create_app
from api_backend.read.reader import TOO_LARGE
from api_backend.seed import generate_events
from api_backend.services import open_services
from api_backend.settings import Settings, load_settings
from tests.support import make_account, make_site
from tests.support.clickhouse import chdb_url

SECRET = "test-secret-key-0123456789"


def test_readmem001_a_read_over_the_memory_limit_is_503_and_answered_once_memory_allows(tmp_path):
    data_dir = str(tmp_path / "data")
    services = open_services(load_settings({}, data_dir=data_dir, secret_key=SECRET))
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner)
    for table in generate_events(site.site_id, 300_000, 30, 1):
        services.events.append(table)
    services.close()

    settings = load_settings({}, data_dir=data_dir, secret_key=SECRET)
    services = open_services(settings)
    # The engine's limit lowered far below what pairing 300,000 events' pages with their sessions needs.
    services.events.query("SET memory_limit = '4MB'")
    with TestClient(create_app(settings, services)) as client:
        base = f"/api/sites/{site.site_id}"
        response = client.get(f"{base}/metric", params={"parameter": "pathname"}, headers=owner.headers)
        assert response.status_code == 503, response.text
        assert response.json() == {"error": TOO_LARGE, "code": "SERVICE_UNAVAILABLE"}
        assert int(response.headers["Retry-After"]) > 0
        # Nothing of the failure is kept: with room again the same read is answered.
        services.events.query("SET memory_limit = '1GB'")
        again = client.get(f"{base}/metric", params={"parameter": "pathname"}, headers=owner.headers)
        assert again.status_code == 200 and again.json()["data"]["data"][0]["value"] == "/"
    services.close()


def test_readmem002_the_embedded_clickhouse_engine_bounds_each_read_by_its_memory_limit(
    tmp_path: Path, chdb_path: Path, chdb_database: str
) -> None:
    url = chdb_url(chdb_path, chdb_database)
    settings = load_settings({}, data_dir=str(tmp_path / "data"), secret_key=SECRET, events_url=url)
    assert settings.clickhouse_memory_limit == ""  # the embedded engine's own bound applies
    services = open_services(settings)
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner)
    tables = list(generate_events(site.site_id, 100_000, 30, 1))
    for table in tables:
        services.events.append(table)
    services.close()
    # The first row by hand: the page title most sessions viewed (ties by title). Titles are paired with their
    # sessions from the events (this store's sessions table lists paths, not titles).
    events = pa.concat_tables(tables)
    pages = events.filter(pc.and_(pc.equal(events["type"], "pageview"), pc.not_equal(events["page_title"], "")))
    pairs = pages.group_by(["page_title", "session_id"]).aggregate([])
    per_title = pairs.group_by("page_title").aggregate([("session_id", "count")]).to_pylist()
    top = min(per_title, key=lambda row: (-row["session_id_count"], row["page_title"]))

    def metric(limit: str) -> tuple[int, dict]:
        limited: Settings = dataclasses.replace(settings, clickhouse_memory_limit=limit)
        services = open_services(limited)
        try:
            with TestClient(create_app(limited, services)) as client:
                response = client.get(
                    f"/api/sites/{site.site_id}/metric", params={"parameter": "page_title"}, headers=owner.headers
                )
                return response.status_code, response.json()
        finally:
            services.close()

    # Far below what pairing 100,000 events' page titles with their sessions needs: stopped, not grown.
    status, body = metric("2MB")
    assert status == 503 and body == {"error": TOO_LARGE, "code": "SERVICE_UNAVAILABLE"}
    status, body = metric("")  # the embedded engine's default
    assert status == 200
    first = body["data"]["data"][0]
    assert (first["value"], first["count"]) == (top["page_title"], top["session_id_count"])
