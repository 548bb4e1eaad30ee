"""Test helpers: a real server on loopback, and quick builders for users, organizations and sites."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import uvicorn
from fastapi.testclient import TestClient

from api_backend.app import create_app
from api_backend.services import Services, open_services
from api_backend.serving import server_config
from api_backend.settings import Settings, load_settings
from api_backend.store.models import Site, User

__all__ = [
    "Account",
    "app_on",
    "free_port",
    "live_server",
    "make_account",
    "make_site",
    "served_as_in_production",
    "store_options",
]

PASSWORD = "correct horse battery"
SECRET_KEY = "test-secret-key-0123456789"

# The repository checkout the tests run from.
REPO_ROOT = Path(__file__).resolve().parents[2]


def store_options(event_store: str, request: Any) -> dict[str, str]:
    """``load_settings`` options putting a test's events on ``event_store``: a fresh chdb database for ClickHouse.

    ``request`` is the test's ``pytest.FixtureRequest``; the process's one chdb engine starts on first use only.
    """
    if event_store == "duckdb":
        return {}
    if event_store != "clickhouse":
        raise ValueError(f"unknown event store {event_store!r}")
    from tests.support.clickhouse import chdb_url, fresh_database

    path = request.getfixturevalue("chdb_path")
    # No daily merge of the sessions table: a test's parts stay as it made them, whatever the hour it runs at. No
    # seals either: a test seals when it reads sealed sessions (``ClickHouseEventStore.seal_sessions``).
    events_url = chdb_url(path, fresh_database(request.getfixturevalue("chdb_client")))
    return {"events_url": events_url, "clickhouse_merge_hour": "off", "clickhouse_seal_seconds": "off"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def _in_a_thread(server: uvicorn.Server) -> Iterator[None]:
    """Run ``server`` in a daemon thread for the block; stop it after."""
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def live_server(app: Any, port: int | None = None) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread on loopback, on ``port`` or a free one; yield its base URL."""
    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    base = f"http://127.0.0.1:{port}"
    with _in_a_thread(server):
        deadline = time.monotonic() + patient(20)
        while time.monotonic() < deadline:
            try:
                if httpx.get(base + "/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        else:
            raise RuntimeError("test server did not start")
        yield base


@contextmanager
def served_as_in_production(app: Any, settings: Settings) -> Iterator[tuple[str, int]]:
    """Serve ``app`` in a thread with the uvicorn configuration of ``sitelens serve`` (``server_config``) on a free
    loopback port; yield its address."""
    port = free_port()
    server = uvicorn.Server(server_config(app, settings, "127.0.0.1", port, log_level="warning", lifespan="off"))
    with _in_a_thread(server):
        deadline = time.monotonic() + patient(20)
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.started, "the server did not start"
        yield "127.0.0.1", port


@dataclass
class HeldServer:
    """A live server holding some requests (``holding_server``): its URL, the held requests' scopes, their release."""

    base: str
    requests: list[dict[str, Any]]
    release: threading.Event


@contextmanager
def holding_server(app: Any, held: Any) -> Iterator[HeldServer]:
    """``live_server(app)`` whose HTTP requests for which ``held(scope)`` is true wait until released.

    An API too busy to answer in time, with no fixed sleep: each held request's scope is appended to ``requests`` as
    it arrives, and all of them go on once ``release`` is set, at the latest when the block ends (before the server
    stops).
    """
    server = HeldServer("", [], threading.Event())

    async def holding(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and held(scope):
            server.requests.append(scope)
            await anyio.to_thread.run_sync(server.release.wait)
        await app(scope, receive, send)

    with live_server(holding) as base:
        server.base = base
        try:
            yield server
        finally:
            server.release.set()


@dataclass
class Account:
    """A user with an API key, ready to send authenticated requests."""

    user: User
    api_key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}


@contextmanager
def app_on(data_dir: Path, **options: str) -> Iterator[tuple[TestClient, Services]]:
    """A fresh sitelens keeping its data in ``data_dir`` (events on DuckDB unless ``options``, ``load_settings``
    overrides such as ``store_options`` gives, say otherwise): a test client of its app and its services, for a
    module's tests to share; closed on leaving."""
    settings = load_settings({}, data_dir=str(data_dir), secret_key=SECRET_KEY, **options)
    services = open_services(settings)
    try:
        with TestClient(create_app(settings, services)) as client:
            yield client, services
    finally:
        services.close()


def make_account(services: Services, email: str) -> Account:
    user = services.metadata.create_user(email, PASSWORD)
    _, raw = services.metadata.create_api_key(user.id, "tests")
    return Account(user=user, api_key=raw)


def make_site(services: Services, owner: Account, domain: str = "example.com", **flags: Any) -> Site:
    """A new organization owned by ``owner`` with one site on ``domain``."""
    org = services.metadata.create_organization(f"Org of {domain}", owner.user.id)
    return services.metadata.create_site(org.id, owner.user.id, domain, domain, **flags)


# Every wait ends as soon as its condition holds, so patience costs a passing test nothing; it is how much longer than
# its stated timeout a test waits before it fails, so that a machine under load (CI beside other jobs) only makes the
# suite slower. SITELENS_TEST_PATIENCE sets the factor.
PATIENCE = float(os.environ.get("SITELENS_TEST_PATIENCE", "3"))


def patient(timeout: float) -> float:
    """``timeout`` (seconds a condition takes at most on a quiet machine) stretched for a busy one."""
    return timeout * PATIENCE


def wait_until(predicate: Any, timeout: float = 20.0, message: str = "condition not met in time") -> Any:
    """Poll ``predicate`` until it returns something truthy (returned), or fail after ``patient(timeout)`` seconds.

    The one way tests wait: on a condition, never a fixed time, so a busy machine only makes them slower.
    """
    deadline = time.monotonic() + patient(timeout)
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(message)
        time.sleep(0.05)
