"""The metadata store on a real PostgreSQL server (started by `make test` when the machine has one)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from api_backend.app import create_app
from api_backend.services import open_services
from api_backend.settings import load_settings
from tests.support import make_account, make_site

SERVER_URL = os.environ.get("TEST_POSTGRES_URL", "")
pytestmark = pytest.mark.skipif(
    not SERVER_URL, reason="TEST_POSTGRES_URL is not set (make test sets it when PostgreSQL is installed)"
)


@pytest.fixture
def database_url() -> Iterator[str]:
    """A fresh database on the server for one test, dropped afterwards."""
    name = f"sitelens_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(SERVER_URL.replace("postgresql://", "postgresql+psycopg://"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    yield SERVER_URL.rsplit("/", 1)[0] + "/" + name
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    admin.dispose()


def test_foundation_routes_on_postgresql(tmp_path, database_url):
    settings = load_settings({}, data_dir=str(tmp_path), database_url=database_url, secret_key="p" * 20)
    services = open_services(settings)
    try:
        owner = make_account(services, "owner@pg.test")
        site = make_site(services, owner, "pg.example.com")
        with TestClient(create_app(settings, services)) as client:
            body = client.get(f"/api/sites/{site.site_id}", headers=owner.headers).json()
            assert body["domain"] == "pg.example.com" and body["isOwner"] is True
            response = client.put(
                f"/api/sites/{site.site_id}/config",
                json={"excludedIPs": ["10.0.0.0/8"], "excludedCountries": ["de"]},
                headers=owner.headers,
            )
            assert response.json()["config"]["excludedCountries"] == ["DE"]
            duplicate = client.post(
                f"/api/organizations/{site.organization_id}/sites",
                json={"domain": "pg.example.com"},
                headers=owner.headers,
            )
            assert duplicate.status_code == 409
            login = client.post("/api/auth/login", json={"email": "owner@pg.test", "password": "correct horse battery"})
            assert login.status_code == 200
    finally:
        services.close()
