"""Browser test of the shared view's read-only overview and sessions tabs."""

from __future__ import annotations

from api_client import AnalyticsAPI
from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import make_account, make_site
from tests.support.dashboard import click, found_now, panel_shows
from tests.support.dashboard_data import load_demo


def test_dash_share_activity001_overview_and_sessions_tabs(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    load_demo(services, site.site_id)
    key = AnalyticsAPI(api_base + "/api", token=owner.api_key).generate_private_link(site.site_id)
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    dash_duo.driver.set_window_size(1440, 1100)
    dash_duo.driver.get(f"{dash_duo.server_url}/share/{site.site_id}#{key}")
    dash_duo.wait_for_text_to_equal("#share-title", "shop.example.com", timeout=15)

    # Overview: the same numbers as the signed-in page (10 visits, 14 pageviews), and rows that do not filter.
    click(dash_duo, "#share-tab-overview")
    dash_duo.wait_for_element("#share-overview-tiles #overview-sessions", timeout=15)
    dash_duo.wait_for_text_to_equal("#share-overview-tiles #overview-sessions", "10", timeout=15)
    assert dash_duo.find_element("#share-overview-tiles #overview-pageviews").text == "14"
    panel_shows(dash_duo, "pathname", "/pricing")
    assert found_now(dash_duo, "#share-content button.panel-row") == []
    dash_duo.driver.save_screenshot(str(output_dir / "share-overview.png"))

    # Sessions: the window's 10 visits, with nothing that leads out of the shared view.
    click(dash_duo, "#share-tab-visits")
    dash_duo.wait_for_contains_text("#share-content", "10 sessions, most recently active first", timeout=15)
    assert found_now(dash_duo, "#share-sessions-table a") == []
    assert "tab=visits" in dash_duo.driver.current_url
    dash_duo.driver.save_screenshot(str(output_dir / "share-sessions.png"))
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []
