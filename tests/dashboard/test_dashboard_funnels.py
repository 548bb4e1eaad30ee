"""Browser test of the funnel builder: steps typed by hand, the API's figures, a second segment to compare."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import make_account, make_site
from tests.support.dashboard import sign_in
from tests.support.dashboard_data import load_demo


def step(field: str, index: int) -> str:
    """The CSS selector of one field of one step row (Dash writes dict ids as sorted JSON)."""
    return f'[id=\'{{"field":"{field}","index":{index},"type":"funnel-step"}}\']'


def test_dash_funnels001_build_analyze_compare(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    load_demo(services, site.site_id)
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    dash_duo.driver.set_window_size(1440, 1200)
    dash_duo.driver.get(f"{dash_duo.server_url}/funnels?site={site.site_id}&time_zone=UTC")

    # Before the first analysis the result card says what to do, not nothing.
    dash_duo.wait_for_contains_text("#funnel-result", "choose Analyze", timeout=15)
    # Home, then /pricing, then the event "signup" with plan = pro.
    dash_duo.wait_for_element(step("value", 1), timeout=15).send_keys("/pricing")
    dash_duo.find_element("#funnel-add").click()
    dash_duo.wait_for_element(step("value", 2), timeout=10)
    assert dash_duo.find_element(step("value", 1)).get_attribute("value") == "/pricing"  # kept across the redraw
    dash_duo.select_dcc_dropdown(step("kind", 2), value="Event")
    dash_duo.find_element(step("value", 2)).send_keys("signup")
    dash_duo.find_element(step("key", 2)).send_keys("plan")
    dash_duo.find_element(step("prop", 2)).send_keys("pro")
    # Compare with Organic Search visits.
    dash_duo.select_dcc_dropdown("#funnel-segment-parameter", value="channel")
    dash_duo.find_element("#funnel-segment-value").send_keys("Organic Search")
    dash_duo.find_element("#funnel-analyze").click()
    dash_duo.wait_for_element("#funnel-table", timeout=15)
    dash_duo.wait_for_element("#funnel-chart .main-svg", timeout=10)
    rows = [
        [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        for tr in dash_duo.find_elements("#funnel-table tbody tr")
    ]
    # By hand: 10 visits saw /, 4 of them /pricing after it, 2 signed up for pro after that (s00, s07);
    # of the 4 Organic Search visits, 2 reached /pricing (s00, s01) and 1 signed up (s00).
    assert [r[1].split(" · ")[0] for r in rows] == ["10", "4", "2"]
    assert rows[1][1] == "4 · 40.0% · 60.0%"
    assert [r[2].split(" · ")[0] for r in rows] == ["4", "2", "1"]
    dash_duo.driver.save_screenshot(str(output_dir / "funnels-1440.png"))
    dash_duo.driver.set_window_size(390, 1400)
    dash_duo.driver.save_screenshot(str(output_dir / "funnels-390.png"))
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []
