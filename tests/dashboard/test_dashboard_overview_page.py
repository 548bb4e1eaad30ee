"""Browser test of the overview page: numbers worked out by hand, a range change, a row that filters, the map."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from selenium.webdriver.common.by import By

from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import make_account, make_site
from tests.support.dashboard import click, panel_shows, sign_in
from tests.support.dashboard_data import load_demo


def test_dash_overview_page001_numbers_range_and_row_filter(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    load_demo(services, site.site_id)
    services.metadata.create_goal(site.site_id, "Pricing", "path", {"pathPattern": "/pricing"})
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    dash_duo.driver.set_window_size(1440, 2200)

    # A site opens on its overview.
    dash_duo.find_element(f"#site-{site.site_id}").click()
    dash_duo.wait_for_text_to_equal("#overview-sessions", "10", timeout=40)
    assert "/overview" in dash_duo.driver.current_url
    # By hand (default 30 days): 10 visits by 10 visitors; 10 home views + 4 of /pricing; 6 visits saw one page.
    assert dash_duo.find_element("#overview-users").text == "10"
    assert dash_duo.find_element("#overview-pageviews").text == "14"
    assert dash_duo.find_element("#overview-pages_per_session").text == "1.40"
    assert dash_duo.find_element("#overview-bounce_rate").text == "60.0%"
    # The previous 30 days hold the one old visit: too little to compare with.
    assert dash_duo.find_element("#overview-sessions-change").text == "too little earlier data (1 session)"
    panel_shows(dash_duo, "pathname", "/pricing")
    rows = dash_duo.find_elements("#overview-rows-pathname button.panel-row")
    assert [r.find_elements(By.CLASS_NAME, "panel-value")[0].text for r in rows] == ["/", "/pricing"]
    assert [r.find_elements(By.CLASS_NAME, "panel-count")[0].text for r in rows] == ["10", "4"]
    panel_shows(dash_duo, "goals", "40.0%")  # 4 of 10 visits reached /pricing
    dash_duo.wait_for_element("#overview-chart .main-svg", timeout=10)
    dash_duo.wait_for_contains_text("#overview-live", "in the last 5 min", timeout=10)
    # Countries by name (DE for sessions not divisible by 3: 6 of 10), on a map drawn from the dashboard's own assets.
    panel_shows(dash_duo, "country", "\U0001f1e9\U0001f1ea Germany")
    assert "\U0001f1eb\U0001f1f7 France" in dash_duo.find_element("#overview-rows-country").text
    dash_duo.wait_for_element("#overview-map .choroplethlocation", timeout=15)
    resources = dash_duo.driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    host = urlparse(dash_duo.server_url).netloc
    assert any("topojson/world_110m.json" in r for r in resources)
    assert [r for r in resources if urlparse(r).netloc not in (host, urlparse(api_base).netloc)] == []
    dash_duo.driver.save_screenshot(str(output_dir / "overview-1440.png"))

    # 90 days: the old visit joins; nothing before it, so no change figures.
    click(dash_duo, "#frame-date-preset label:nth-child(4)")
    dash_duo.wait_for_text_to_equal("#overview-sessions", "11", timeout=15)
    dash_duo.wait_for_text_to_equal("#overview-sessions-change", "no earlier data", timeout=10)

    # Clicking a row adds it as a filter in the URL: the 5 visits that saw /pricing.
    panel_shows(dash_duo, "pathname", "/pricing")
    pricing = [
        r
        for r in dash_duo.find_elements("#overview-rows-pathname button.panel-row")
        if r.find_elements(By.CLASS_NAME, "panel-value")[0].text == "/pricing"
    ]
    pricing[0].click()
    dash_duo.wait_for_text_to_equal("#overview-sessions", "5", timeout=15)
    filters = parse_qs(urlparse(dash_duo.driver.current_url).query)["filters"][0]
    assert '"parameter":"pathname"' in filters and "/pricing" in filters

    dash_duo.driver.set_window_size(390, 1400)
    dash_duo.driver.save_screenshot(str(output_dir / "overview-390.png"))
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []
