"""The dashboard served beside the API in one app, and the standalone dashboard factory."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from api_backend.settings import load_settings
from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from sitelens.mount import create_combined_app, dashboard_api_url


def test_dashboard_is_served_at_root_and_api_routes_keep_priority(settings, services):
    app = create_combined_app(settings, services)
    with TestClient(app) as client:
        page = client.get("/")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert "_dash-config" in page.text and "sitelens.css" in page.text
        assert client.get("/goals?site=1").status_code == 200  # every page path is the Dash app
        assert client.get("/assets/sitelens.css").status_code == 200
        (css,) = re.findall(r'"(/assets/sitelens\.css\?m=[^"]+)"', page.text)
        assert "immutable" in client.get(css).headers["Cache-Control"]
        assert client.get("/api/health").json()["status"] == "ok"
        missing = client.get("/api/no-such-route")
        assert missing.status_code == 404 and missing.json()["code"] == "NOT_FOUND"


def test_dashboard_api_url_defaults_to_this_server_on_loopback(tmp_path):
    base = {"data_dir": str(tmp_path), "secret_key": "test-secret-key-0123456789"}
    assert dashboard_api_url(load_settings({}, **base, host="0.0.0.0", port=8123)) == "http://127.0.0.1:8123/api"
    assert dashboard_api_url(load_settings({}, **base, host="::", port=8000)) == "http://[::1]:8000/api"
    remote = load_settings({}, **base, api_url="https://stats.example.com/api/")
    assert dashboard_api_url(remote) == "https://stats.example.com/api"


def test_the_served_dashboard_waits_for_the_api_as_long_as_its_setting_says(tmp_path):
    from dashboard import session

    base = {"data_dir": str(tmp_path), "secret_key": "test-secret-key-0123456789"}
    settings = load_settings({"SITELENS_DASHBOARD_API_TIMEOUT": "45"}, **base)
    app = create_combined_app(settings)
    (mounted,) = [route for route in app.routes if getattr(route, "name", "") == "dashboard"]
    state = mounted.app.app.extensions[session.EXTENSION]  # Starlette mount -> WSGI adapter -> Flask server
    assert state.settings.api_timeout == 45
    with pytest.raises(ValueError, match="api_timeout"):
        DashboardSettings(api_url="http://127.0.0.1:9/api", api_timeout=0)


def test_create_dashboard_connects_to_nothing_until_asked():
    # An unreachable API address is fine: nothing is contacted while the app is built or its shell is served.
    app = create_dashboard(DashboardSettings(api_url="http://127.0.0.1:9/api"), requests_pathname_prefix="/")
    client = app.server.test_client()
    assert client.get("/login").status_code == 200
    layout = client.get("/_dash-layout").get_json()
    assert "frame-auth" in str(layout) and "frame-navbar" in str(layout)


def test_fingerprinted_assets_are_kept_by_the_browser_and_others_revalidated():
    app = create_dashboard(DashboardSettings(api_url="http://127.0.0.1:9/api"), requests_pathname_prefix="/")
    client = app.server.test_client()
    page = client.get("/login").get_data(as_text=True)
    linked = re.findall(r'"(/assets/[^"?]+\?m=[^"]+)"', page)
    assert any(url.startswith("/assets/sitelens.css?m=") for url in linked)
    assert any(url.startswith("/assets/sitelens.js?m=") for url in linked)
    for url in linked:
        answer = client.get(url)
        assert answer.status_code == 200, url
        cache = answer.headers["Cache-Control"]
        assert "max-age=31536000" in cache and "immutable" in cache and "no-cache" not in cache, (url, cache)
    # Without the modification time in the URL (the map geometry plotly fetches), the browser asks again.
    for url in ("/assets/sitelens.css", "/assets/topojson/world_110m.json"):
        answer = client.get(url)
        assert answer.status_code == 200 and answer.headers["Cache-Control"] == "no-cache", url
    # A missing file is not made cacheable.
    assert "immutable" not in client.get("/assets/nothing.css?m=1").headers.get("Cache-Control", "")
