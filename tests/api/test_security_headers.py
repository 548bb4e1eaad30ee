"""Security headers on the API and the dashboard, a CSP the dashboard really runs under, and offline API docs."""

from __future__ import annotations

import re
from datetime import datetime

import httpx

from api_backend.store.events import rows_to_table
from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import make_account
from tests.support.dashboard import sign_in

COMMON = {"x-content-type-options": "nosniff", "x-frame-options": "DENY", "referrer-policy": "same-origin"}


def _assert_common(response) -> None:
    for name, value in COMMON.items():
        assert response.headers.get(name) == value, (name, response.request.url)
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


def test_headers001_api_answers_carry_the_headers(client, site, owner) -> None:
    for response in (
        client.get("/api/health"),
        client.get(f"/api/sites/{site.site_id}", headers=owner.headers),
        client.get("/api/sites/987654"),
        client.get("/api/no-such-route"),
    ):
        _assert_common(response)
        assert response.headers["content-security-policy"].startswith("default-src 'none'")


def test_headers002_tracking_keeps_its_cors_headers(client, site) -> None:
    origin = "https://shop.example.com"
    response = client.post(
        "/api/track", json={"site_id": site.site_id, "type": "pageview", "pathname": "/"}, headers={"Origin": origin}
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == origin
    _assert_common(response)
    preflight = client.options("/api/track", headers={"Origin": origin, "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == origin


def test_headers003_docs_use_only_same_origin_assets(client) -> None:
    page = client.get("/api/docs")
    assert page.status_code == 200
    _assert_common(page)
    assert "script-src 'self';" in page.headers["content-security-policy"]
    assert "<script>" not in page.text  # no inline script: the CSP allows none
    urls = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert urls and all(u.startswith("/api/docs/") for u in urls), urls
    for url in urls:
        asset = client.get(url)
        assert asset.status_code == 200 and asset.content, url
    assert "/api/openapi.json" in client.get("/api/docs/init.js").text


def test_dash_headers004_dashboard_runs_under_its_csp(dash_duo, services, api_base) -> None:
    owner = make_account(services, "owner@example.com")
    org = services.metadata.create_organization("Acme", owner.user.id)
    shop = services.metadata.create_site(org.id, owner.user.id, "shop.example.com", "shop.example.com")
    services.events.append(
        rows_to_table(
            [{"site_id": shop.site_id, "timestamp": datetime(2026, 4, 2, 12), "session_id": "s", "type": "pageview"}]
        )
    )
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    headers = httpx.get(dash_duo.server_url + "/login").headers
    assert "'unsafe-inline'" not in headers["content-security-policy"].split("style-src")[0]
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"

    dash_duo.driver.get(dash_duo.server_url + "/login")
    sign_in(dash_duo, "owner@example.com")
    dash_duo.driver.get(f"{dash_duo.server_url}/usage?org={org.id}&start_date=2026-04-01&end_date=2026-04-05")
    dash_duo.wait_for_element("#usage-chart .js-plotly-plot", timeout=15)
    dash_duo.driver.get(api_base + "/api/docs")
    dash_duo.wait_for_element("#swagger-ui .info", timeout=15)
    logs = dash_duo.get_logs() or []
    violations = [e for e in logs if "Content Security Policy" in e.get("message", "")]
    assert violations == []
