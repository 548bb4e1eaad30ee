"""Browser test of the private-link view: opened signed out, read-only, and refused once the key is revoked."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from selenium.webdriver.support.ui import WebDriverWait

from api_backend.store.events import rows_to_table
from api_client import AnalyticsAPI
from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import make_account, make_site, wait_until
from tests.support.dashboard import CHART_IN_ITS_BOX, click, found_now, screenshots, settled
from tests.support.dashboard_data import load_demo

MESSAGE = "Cannot read properties of undefined (reading 'price')"
STACK = "TypeError: Cannot read properties of undefined\n    at total (https://shop.example.com/app.js:12:7)"


def add_error(services, site_id: int) -> None:
    """One ``TypeError`` inside session s00, which starts at 12:00 UTC yesterday (see test_dashboard_frame_data)."""
    when = (datetime.now(UTC) - timedelta(days=1)).replace(hour=12, minute=0, second=30, microsecond=0, tzinfo=None)
    error = {
        "site_id": site_id,
        "timestamp": when,
        "session_id": "s00",
        "user_id": "u00",
        "pathname": "/pricing",
        "type": "error",
        "event_name": "TypeError",
        "props": json.dumps({"message": MESSAGE, "stack": STACK}),
    }
    services.events.append(rows_to_table([error]))


def test_dash_share001_private_link_read_only_then_revoked(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    load_demo(services, site.site_id)
    add_error(services, site.site_id)
    pricing = services.metadata.create_goal(site.site_id, "Pricing", "path", {"pathPattern": "/pricing"})
    owner_api = AnalyticsAPI(api_base + "/api", token=owner.api_key)
    key = owner_api.generate_private_link(site.site_id)

    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    dash_duo.driver.get(f"{dash_duo.server_url}/share/{site.site_id}#{key}")
    dash_duo.wait_for_text_to_equal("#share-title", "shop.example.com", timeout=15)
    dash_duo.wait_for_contains_text("#goals-table", "40.0%", timeout=10)
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "10", timeout=10)
    # Read-only: no write controls of any kind, no sign-out, no site picker.
    settled(dash_duo)
    for selector in ("#goals-new", ".row-actions", "#goals-form", "#frame-sign-out:not([hidden])"):
        assert found_now(dash_duo, selector) == [], selector
    assert not dash_duo.find_element("#frame-site-picker").is_displayed()
    dash_duo.driver.save_screenshot(str(output_dir / "share-goals.png"))

    # Goal sessions, inside the shared view; the URL keeps the key in its fragment so it can be passed on.
    click(dash_duo, f"#goal-row-{pricing.goal_id} a.goal-name")
    dash_duo.wait_for_element("#goal-sessions-table", timeout=10)
    assert len(dash_duo.find_elements("#goal-sessions-table td[data-dash-column='channel']")) == 4
    dash_duo.wait_for_contains_text("#share-content", "Sessions that reached", timeout=5)
    assert dash_duo.driver.execute_script("return window.location.hash") == f"#{key}"
    dash_duo.driver.save_screenshot(str(output_dir / "share-sessions.png"))

    click(dash_duo, "#share-tab-channels")
    dash_duo.wait_for_element("#channels-table", timeout=10)
    dash_duo.wait_for_contains_text("#channels-table", "Organic Search", timeout=5)
    dash_duo.driver.save_screenshot(str(output_dir / "share-channels.png"))
    # The view controls work in the shared view too, and keep its current part.
    click(dash_duo, "#frame-date-preset label:nth-child(4)")
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "11", timeout=10)
    dash_duo.wait_for_element("#channels-table", timeout=10)
    assert "tab=channels" in dash_duo.driver.current_url

    click(dash_duo, "#share-tab-errors")
    dash_duo.wait_for_contains_text("#share-content", MESSAGE, timeout=10)
    click(dash_duo, ".error-group:not(.error-group-head)")
    dash_duo.wait_for_contains_text("#share-content", "app.js:12:7", timeout=10)
    dash_duo.driver.save_screenshot(str(output_dir / "share-errors.png"))
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []

    # Revoked: the same link is refused on the next load.
    owner_api.revoke_private_link(site.site_id)
    dash_duo.driver.get(f"{dash_duo.server_url}/share/{site.site_id}#{key}")
    dash_duo.driver.refresh()
    dash_duo.wait_for_contains_text("#share-invalid-holder", "This link is no longer valid", timeout=15)
    # Nothing of the site stays visible: no numbers, no tables.
    assert not dash_duo.find_element("#share-body").is_displayed()
    assert dash_duo.find_element("#share-title").text == "Shared view"
    dash_duo.driver.save_screenshot(str(output_dir / "share-revoked.png"))

    # A wrong key is refused the same way.
    dash_duo.driver.get(f"{dash_duo.server_url}/share/{site.site_id}#not-the-key")
    dash_duo.driver.refresh()
    dash_duo.wait_for_contains_text("#share-invalid-holder", "This link is no longer valid", timeout=15)


def test_dash_share002_public_site_opens_without_a_key(dash_duo, services, api_base):
    owner = make_account(services, "owner@example.com")
    public = make_site(services, owner, "open.example.com", public=True)
    private = make_site(services, owner, "closed.example.com")
    load_demo(services, public.site_id)
    services.metadata.create_goal(public.site_id, "Pricing", "path", {"pathPattern": "/pricing"})
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))

    dash_duo.driver.get(f"{dash_duo.server_url}/share/{public.site_id}")
    dash_duo.wait_for_text_to_equal("#share-title", "open.example.com", timeout=15)
    dash_duo.wait_for_contains_text("#goals-table", "40.0%", timeout=10)
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "10", timeout=10)

    # A site that is not public needs its key: an address without one says so, not that the link was revoked.
    dash_duo.driver.get(f"{dash_duo.server_url}/share/{private.site_id}")
    dash_duo.wait_for_contains_text("#share-invalid-holder", "This link is missing its key", timeout=15)
    assert "no longer valid" not in dash_duo.find_element("#share-invalid-holder").text
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []


def test_dash_share003_every_move_keeps_the_key_and_a_copied_address_opens(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    load_demo(services, site.site_id)
    services.metadata.create_goal(site.site_id, "Pricing", "path", {"pathPattern": "/pricing"})
    key = AnalyticsAPI(api_base + "/api", token=owner.api_key).generate_private_link(site.site_id)
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    dash_duo.driver.get(f"{dash_duo.server_url}/share/{site.site_id}#{key}")
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "10", timeout=15)

    def keeps_key(where: str) -> str:
        return wait_until(
            lambda: (
                dash_duo.driver.execute_script("return window.location.hash") == f"#{key}"
                and dash_duo.driver.current_url
            ),
            message=f"the key is gone from the address after {where}",
        )

    # A tab, a date preset, a filter: each move rewrites the address and keeps the key.
    click(dash_duo, "#share-tab-channels")
    dash_duo.wait_for_element("#channels-table", timeout=10)
    keeps_key("a tab")
    click(dash_duo, "#frame-date-preset label:nth-child(4)")
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "11", timeout=10)
    keeps_key("a date change")
    dash_duo.select_dcc_dropdown("#frame-filter-parameter", "Channel")
    dash_duo.find_element("#frame-filter-value").send_keys("Referral")
    click(dash_duo, "#frame-filter-add")
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "3", timeout=10)
    copied = keeps_key("a filter")
    assert "tab=channels" in copied and "filters=" in copied
    screenshots(dash_duo, output_dir, "share-key-kept")

    # The copied address opens the same view in a fresh tab (nothing in its session storage).
    dash_duo.driver.execute_script("window.sessionStorage.clear();")
    dash_duo.driver.get("about:blank")
    dash_duo.driver.get(copied)
    dash_duo.wait_for_element("#channels-table", timeout=15)
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "3", timeout=10)
    assert dash_duo.find_element("#share-invalid-holder").text == ""

    # The same address cut before its key says what is missing.
    dash_duo.driver.execute_script("window.sessionStorage.clear();")
    dash_duo.driver.get(copied.split("#")[0])
    dash_duo.wait_for_contains_text("#share-invalid-holder", "This link is missing its key", timeout=15)
    screenshots(dash_duo, output_dir, "share-missing-key")
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []


def test_dash_share004_charts_of_a_private_link_keep_their_height_when_the_window_narrows(
    dash_duo, services, api_base, output_dir
):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    load_demo(services, site.site_id)
    add_error(services, site.site_id)
    services.metadata.create_goal(site.site_id, "Pricing", "path", {"pathPattern": "/pricing"})  # for the ranking
    key = AnalyticsAPI(api_base + "/api", token=owner.api_key).generate_private_link(site.site_id)
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    dash_duo.driver.get(f"{dash_duo.server_url}/share/{site.site_id}#{key}")
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "10", timeout=15)
    wide = dash_duo.driver.get_window_size()

    def narrowed_in_its_box(selector: str) -> None:
        dash_duo.wait_for_element(f"{selector} .main-svg", timeout=10)
        dash_duo.driver.set_window_size(390, wide["height"])
        WebDriverWait(dash_duo.driver, 15).until(lambda driver: driver.execute_script(CHART_IN_ITS_BOX, selector, 150))
        dash_duo.driver.set_window_size(wide["width"], wide["height"])

    click(dash_duo, "#share-tab-channels")
    narrowed_in_its_box("#channels-chart")
    click(dash_duo, "#share-tab-errors")
    dash_duo.wait_for_contains_text("#share-content", MESSAGE, timeout=10)
    click(dash_duo, ".error-group:not(.error-group-head)")
    dash_duo.wait_for_contains_text("#share-content", "app.js:12:7", timeout=10)
    narrowed_in_its_box("#share-content .chart")
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []
