"""Browser test of the sites page: visitors of the last 24 hours, adding a site (the API's objections beside the
domain), and its snippet turning green after a page view tracked through /api/track."""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import make_account, make_site
from tests.support.dashboard import sign_in
from tests.support.dashboard_data import load_demo

BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"


def test_dash_sites001_stats_add_site_and_snippet(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    load_demo(services, site.site_id)
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    dash_duo.driver.set_window_size(1440, 1000)
    # The demo's newest visits began a day ago at noon: whatever the hour, the count is the API's for 24 hours.
    dash_duo.wait_for_contains_text(f"#site-{site.site_id}", "visitors in 24 h", timeout=15)

    def add(domain: str) -> None:
        field = dash_duo.find_element("#sites-add-domain")
        dash_duo.clear_input(field)
        field.send_keys(domain)
        dash_duo.find_element("#sites-add-submit").click()

    add("shop.example.com")
    dash_duo.wait_for_contains_text("#sites-add-error", "already has a site with this domain", timeout=15)
    add("not a domain")
    WebDriverWait(dash_duo.driver, 15).until(
        lambda d: (text := d.find_element(By.ID, "sites-add-error").text) and "already" not in text
    )

    add("blog.example.org")
    dash_duo.wait_for_element("#sites-snippet", timeout=15)
    [created] = [s for s in services.metadata.all_sites() if s.domain == "blog.example.org"]
    snippet = dash_duo.find_element("#sites-snippet").text
    assert snippet == f'<script defer src="{api_base}/api/script.js" data-site-id="{created.site_id}"></script>'
    dash_duo.wait_for_contains_text("#sites-new-status", "Waiting for the first page view", timeout=5)
    dash_duo.driver.save_screenshot(str(output_dir / "sites-waiting-1440.png"))

    page_view = {"site_id": str(created.site_id), "type": "pageview", "hostname": "blog.example.org", "pathname": "/"}
    response = httpx.post(f"{api_base}/api/track", json=page_view, headers={"User-Agent": BROWSER})
    assert response.status_code == 200, response.text
    dash_duo.wait_for_element("#sites-new-status .snippet-ok", timeout=30)
    dash_duo.driver.save_screenshot(str(output_dir / "sites-1440.png"))
    dash_duo.driver.set_window_size(390, 1400)
    dash_duo.driver.save_screenshot(str(output_dir / "sites-390.png"))
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []
