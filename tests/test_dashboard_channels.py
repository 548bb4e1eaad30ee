"""Browser test of the channel ranking page: the table, the chart with intervals, small samples marked."""

from __future__ import annotations

import math

from selenium.webdriver.common.by import By

from dashboard.app import create_dashboard
from tests.dashboard_data import load_demo
from tests.support import PASSWORD, make_account, make_site


def wilson(successes: int, trials: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The 95% Wilson score interval, written out independently of the server's code."""
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return centre - half, centre + half


def test_dash_channels001_ranking_table_and_chart(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    load_demo(services, site.site_id)
    pricing = services.metadata.create_goal(site.site_id, "Pricing", "path", {"pathPattern": "/pricing"})
    signup = services.metadata.create_goal(
        site.site_id,
        "Pro signup",
        "event",
        {"eventName": "signup", "eventPropertyKey": "plan", "eventPropertyValue": "pro"},
    )
    dash_duo.start_server(create_dashboard(api_url=api_base + "/api"))
    dash_duo.wait_for_element("#login-email", timeout=10)
    dash_duo.find_element("#login-email").send_keys("owner@example.com")
    dash_duo.find_element("#login-password").send_keys(PASSWORD)
    dash_duo.find_element("#login-submit").click()
    dash_duo.wait_for_element("#sites-list", timeout=10)
    dash_duo.driver.get(f"{dash_duo.server_url}/channels?site={site.site_id}&goal={pricing.goal_id}")
    dash_duo.wait_for_element("#channels-table", timeout=15)
    dash_duo.wait_for_element("#channels-chart .main-svg", timeout=10)

    def table() -> list[list[str]]:
        rows = dash_duo.find_elements("#channels-table tbody tr")
        cells = [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]
        return [c for c in cells if c]

    # By hand: /pricing was reached by 2 of 4 Organic Search sessions, 1 of 3 direct and 1 of 3 Referral.
    low, high = wilson(2, 4)
    rows = table()
    assert [r[1] for r in rows] == ["Organic Search", "Direct", "Referral"]
    assert rows[0][2:5] == ["4", "2", "50.0%"]
    assert rows[0][5] == f"{low * 100:.1f}% – {high * 100:.1f}%"
    assert rows[1][2:5] == ["3", "1", "33.3%"]
    assert all("few sessions" in r[6] for r in rows)  # every channel has fewer than 30 sessions
    dash_duo.driver.save_screenshot(str(output_dir / "channels.png"))

    # Another goal from the picker: only Organic Search and Referral sessions sent a pro signup.
    dash_duo.select_dcc_dropdown("#channels-goal", value="Pro signup")
    dash_duo.wait_for_contains_text("#channels-table", "25.0%", timeout=10)
    rows = table()
    assert [r[1] for r in rows][:2] == ["Referral", "Organic Search"]
    assert rows[0][2:5] == ["3", "1", "33.3%"] and rows[1][2:5] == ["4", "1", "25.0%"]
    assert f"goal={signup.goal_id}" in dash_duo.driver.current_url
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []
