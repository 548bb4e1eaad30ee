"""Served the way ``sitelens serve`` serves it, a request's address comes from ``X-Forwarded-For`` only with
``SITELENS_TRUST_PROXY``, whoever connects: a reverse proxy on the same machine included."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from api_backend.app import create_app
from api_backend.services import open_services
from api_backend.settings import load_settings
from tests.support import make_account, make_site, served_as_in_production

BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"
# A British address (in the bundled geography), as a proxy would forward it.
FORWARDED = "81.2.69.142"


@dataclass
class Served:
    api: str
    site_id: int
    owner: dict[str, str]
    countries: list[str] = field(default_factory=list)  # of the stored events, once the server stopped


@contextmanager
def _served(tmp_path: Path, trust_proxy: bool) -> Iterator[Served]:
    """The app served as ``sitelens serve`` serves it, with one site."""
    settings = load_settings(
        {},
        data_dir=str(tmp_path / str(trust_proxy)),
        secret_key="test-secret-key-0123456789",
        trust_proxy=str(trust_proxy),
    )
    services = open_services(settings)
    try:
        owner = make_account(services, "proxy@example.com")
        site = make_site(services, owner)
        with served_as_in_production(create_app(settings, services), settings) as (host, port):
            served = Served(f"http://{host}:{port}/api", site.site_id, owner.headers)
            yield served
        served.countries.extend(r["country"] for r in services.events.query_dicts("SELECT country FROM events"))
    finally:
        services.close()


def _pageview(served: Served, forwarded: str) -> httpx.Response:
    event = {"site_id": str(served.site_id), "type": "pageview", "pathname": "/", "hostname": "example.com"}
    return httpx.post(f"{served.api}/track", json=event, headers={"User-Agent": BROWSER, "X-Forwarded-For": forwarded})


@pytest.mark.parametrize(("trust_proxy", "country"), [(False, ""), (True, "GB")])
def test_proxy001_forwarded_address_only_when_trusted(tmp_path, trust_proxy: bool, country: str) -> None:
    with _served(tmp_path, trust_proxy) as served:
        assert _pageview(served, FORWARDED).json() == {"success": True}
    assert served.countries == [country]


@pytest.mark.parametrize("trust_proxy", [False, True])
def test_proxy002_an_excluded_address_counts_only_when_trusted(tmp_path, trust_proxy: bool) -> None:
    with _served(tmp_path, trust_proxy) as served:
        changed = httpx.put(
            f"{served.api}/sites/{served.site_id}/config", json={"excludedIPs": ["81.2.69.142"]}, headers=served.owner
        )
        assert changed.status_code == 200
        answer = _pageview(served, FORWARDED).json()
    if trust_proxy:
        assert answer == {"success": True, "tracked": False, "reason": "excluded_ip"}
        assert served.countries == []
    else:
        assert answer == {"success": True}
        assert served.countries == [""]
