"""The sign-in throttle: atomic per email, limited per source address, and no lock-out of a clean source."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from fastapi.testclient import TestClient

from api_backend.app import create_app
from api_backend.services import open_services
from api_backend.settings import load_settings
from tests.support import PASSWORD, live_server, make_account

EMAIL = "owner@example.com"


def _login(client, password: str, email: str = EMAIL, source: str | None = None):
    headers = {"X-Forwarded-For": source} if source else {}
    return client.post("/api/auth/login", json={"email": email, "password": password}, headers=headers)


@pytest.fixture
def proxied(tmp_path):
    """The app behind a trusted proxy, so each test request can come from an address of its choice."""
    settings = load_settings(
        {}, data_dir=str(tmp_path / "proxied"), secret_key="test-secret-key-0123456789", trust_proxy="true"
    )
    services = open_services(settings)
    make_account(services, EMAIL)
    with TestClient(create_app(settings, services)) as client:
        yield client
    services.close()


def test_throttle001_concurrent_wrong_guesses_evaluate_at_most_the_limit(settings, services, owner) -> None:
    with live_server(create_app(settings, services)) as base, httpx.Client(base_url=base, timeout=60) as client:

        def guess(_: int) -> int:
            return _login(client, "wrong password").status_code

        with ThreadPoolExecutor(max_workers=25) as pool:
            statuses = Counter(pool.map(guess, range(100)))
        assert statuses[401] <= 10, statuses
        assert statuses[401] + statuses[429] == 100, statuses
        locked = _login(client, PASSWORD)
        assert locked.status_code == 429 and int(locked.headers["Retry-After"]) > 0


def test_throttle002_one_source_cannot_walk_a_list_of_emails(client, settings) -> None:
    statuses = Counter(_login(client, "guess", email=f"user{i}@example.com").status_code for i in range(60))
    assert statuses == {401: settings.login_attempts_per_ip, 429: 60 - settings.login_attempts_per_ip}
    refused = _login(client, "guess", email="one-more@example.com")
    assert refused.json()["code"] == "RATE_LIMITED" and "address" in refused.json()["error"]


def test_throttle003_others_failures_do_not_lock_out_a_clean_source(proxied) -> None:
    for _ in range(10):
        assert _login(proxied, "wrong", source="203.0.113.7").status_code == 401
    assert _login(proxied, PASSWORD, source="203.0.113.7").status_code == 429
    assert _login(proxied, PASSWORD, source="198.51.100.1").status_code == 200


def test_throttle004_a_locked_email_gives_each_new_source_one_try(proxied) -> None:
    for i in range(10):
        assert _login(proxied, "wrong", source=f"203.0.113.{i}").status_code == 401
    assert _login(proxied, "wrong", source="198.51.100.9").status_code == 401
    assert _login(proxied, "wrong", source="198.51.100.9").status_code == 429
    assert _login(proxied, PASSWORD, source="198.51.100.10").status_code == 200
