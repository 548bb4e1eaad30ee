"""Browser test of the channel ranking page: the table, the chart with intervals, small samples marked."""

from __future__ import annotations

import math

from selenium.webdriver.common.by import By

from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import PASSWORD, make_account, make_site
from tests.support.dashboard import click, screenshots, sign_in
from tests.support.dashboard_data import load_demo


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
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    dash_duo.wait_for_element("#login-email", timeout=10)
    dash_duo.find_element("#login-email").send_keys("owner@example.com")
    dash_duo.find_element("#login-password").send_keys(PASSWORD)
    click(dash_duo, "#login-submit")
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


def test_dash_channels002_opens_on_the_goal_with_most_conversions_and_groups_thousands(
    dash_duo, services, api_base, output_dir
):
    from datetime import UTC, datetime, timedelta

    from api_backend.store.events import rows_to_table

    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    # 1,200 direct sessions yesterday, 1,050 of them reaching /pricing.
    day = (datetime.now(UTC) - timedelta(days=1)).replace(hour=8, minute=0, second=0, microsecond=0, tzinfo=None)
    rows = []
    for i in range(1200):
        at = day + timedelta(seconds=20 * i)
        rows.append({"site_id": site.site_id, "timestamp": at, "session_id": f"s{i}", "pathname": "/"})
        if i < 1050:
            rows.append({"site_id": site.site_id, "timestamp": at, "session_id": f"s{i}", "pathname": "/pricing"})
    services.events.append(rows_to_table([{**r, "type": "pageview", "channel": ""} for r in rows]))
    # The first goal never converts; the ranking must not open on it.
    services.metadata.create_goal(site.site_id, "Nobody", "path", {"pathPattern": "/never"})
    services.metadata.create_goal(site.site_id, "Pricing", "path", {"pathPattern": "/pricing"})
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    dash_duo.driver.get(f"{dash_duo.server_url}/channels?site={site.site_id}")
    dash_duo.wait_for_contains_text("#channels-table", "Direct", timeout=15)
    row = [td.text for td in dash_duo.find_elements("#channels-table tbody tr td")]
    assert row[1:5] == ["Direct", "1,200", "1,050", "87.5%"], row
    assert "Pricing" in dash_duo.find_element("#channels-goal").text
    screenshots(dash_duo, output_dir, "channels-default-goal")
