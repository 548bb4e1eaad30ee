"""Browser tests of small things a newcomer meets: one logo on sign-in, one message for a site that does not exist,
and a warning before leaving settings with unsaved changes."""

from __future__ import annotations

from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import make_account, make_site
from tests.support.dashboard import click, screenshots, settled, shown, sign_in

SITE_PAGES = ("/goals", "/goal-sessions", "/channels", "/errors", "/usage", "/settings")


def test_dash_details001_sign_in_shows_the_logo_once(dash_duo, services, api_base, output_dir):
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    dash_duo.driver.get(dash_duo.server_url + "/login")
    dash_duo.wait_for_element("#login-email", timeout=15)
    assert len(shown(dash_duo, ".brand-mark")) == 1
    screenshots(dash_duo, output_dir, "login")


def test_dash_details002_an_unknown_site_is_one_message_without_controls(dash_duo, services, api_base, output_dir):
    make_account(services, "owner@example.com")
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    for path in SITE_PAGES:
        dash_duo.driver.get(f"{dash_duo.server_url}{path}?site=999&goal=1")
        dash_duo.wait_for_contains_text("#site-not-found", "Site not found", timeout=15)
        settled(dash_duo)
        # One message, a way back, and none of the page's controls around it.
        assert len(shown(dash_duo, ".alert")) == 1, path
        for control in ("#frame-date-preset", "#frame-filter-add", "#goals-new", ".stats", "table"):
            assert shown(dash_duo, control) == [], (path, control)
        assert dash_duo.find_element("#site-not-found a").get_attribute("href").endswith("/sites")
    screenshots(dash_duo, output_dir, "unknown-site")


def test_dash_details003_leaving_settings_with_unsaved_changes_asks(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    dash_duo.driver.get(f"{dash_duo.server_url}/settings?site={site.site_id}")
    dash_duo.wait_for_element("#settings-excluded-ips", timeout=15)

    # Untouched: the navbar leaves at once.
    click(dash_duo, "#frame-nav-links a[href*='/goals']")
    dash_duo.wait_for_element("#goals-body", timeout=15)
    dash_duo.driver.back()
    dash_duo.wait_for_element("#settings-excluded-ips", timeout=15)

    # A typed, unsaved change: leaving asks, and declining stays with the change.
    dash_duo.find_element("#settings-excluded-ips").send_keys("10.0.0.1")
    click(dash_duo, "#frame-nav-links a[href*='/goals']")
    question = WebDriverWait(dash_duo.driver, 10).until(expected_conditions.alert_is_present())
    assert "unsaved" in question.text
    question.dismiss()
    assert "/settings" in dash_duo.driver.current_url
    assert dash_duo.find_element("#settings-excluded-ips").get_attribute("value") == "10.0.0.1"
    screenshots(dash_duo, output_dir, "settings-unsaved")

    # Saved: leaving no longer asks.
    click(dash_duo, "#settings-excluded-ips-save")
    dash_duo.wait_for_contains_text("#settings-excluded-ips-status", "Saved", timeout=10)
    click(dash_duo, "#frame-nav-links a[href*='/goals']")
    dash_duo.wait_for_element("#goals-body", timeout=15)
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []
