"""The dashboard served beside the API in one app, and the standalone dashboard factory."""

from __future__ import annotations

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
        assert client.get("/api/health").json()["status"] == "ok"
        missing = client.get("/api/no-such-route")
        assert missing.status_code == 404 and missing.json()["code"] == "NOT_FOUND"


def test_dashboard_api_url_defaults_to_this_server_on_loopback(tmp_path):
    base = {"data_dir": str(tmp_path), "secret_key": "test-secret-key-0123456789"}
    assert dashboard_api_url(load_settings({}, **base, host="0.0.0.0", port=8123)) == "http://127.0.0.1:8123/api"
    assert dashboard_api_url(load_settings({}, **base, host="::", port=8000)) == "http://[::1]:8000/api"
    remote = load_settings({}, **base, api_url="https://stats.example.com/api/")
    assert dashboard_api_url(remote) == "https://stats.example.com/api"


def test_create_dashboard_connects_to_nothing_until_asked():
    # An unreachable API address is fine: nothing is contacted while the app is built or its shell is served.
    app = create_dashboard(DashboardSettings(api_url="http://127.0.0.1:9/api"), requests_pathname_prefix="/")
    client = app.server.test_client()
    assert client.get("/login").status_code == 200
    layout = client.get("/_dash-layout").get_json()
    assert "frame-auth" in str(layout) and "frame-navbar" in str(layout)
