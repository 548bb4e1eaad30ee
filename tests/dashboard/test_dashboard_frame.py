"""Browser tests of the dashboard frame: sign-in, site picker, sign-out, an expired credential."""

from __future__ import annotations

from datetime import date, timedelta
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from selenium.common.exceptions import StaleElementReferenceException

from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import PASSWORD, free_port, make_account, make_site, wait_until
from tests.support.dashboard import click, found_now, settled, sign_in


def test_dash_frame001_sign_in_pick_site_sign_out(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    make_site(services, owner, "shop.example.com")
    make_site(services, owner, "blog.example.org")
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))

    # "/" sends a signed-out person to sign-in.
    dash_duo.wait_for_element(".login-card", timeout=10)
    dash_duo.driver.save_screenshot(str(output_dir / "frame-login.png"))
    sign_in(dash_duo, "owner@example.com", "wrong password", expect_sites=False)
    dash_duo.wait_for_contains_text("#login-message", "email or password is not right", timeout=10)

    dash_duo.clear_input(dash_duo.find_element("#login-password"))
    dash_duo.find_element("#login-password").send_keys(PASSWORD)
    click(dash_duo, "#login-submit")
    dash_duo.wait_for_contains_text("#sites-list", "shop.example.com", timeout=10)
    dash_duo.wait_for_contains_text("#sites-list", "blog.example.org", timeout=10)
    dash_duo.wait_for_text_to_equal("#frame-user-email", "owner@example.com", timeout=10)
    dash_duo.driver.save_screenshot(str(output_dir / "frame-sites.png"))

    click(dash_duo, "#frame-sign-out")
    dash_duo.wait_for_contains_text("#login-message", "signed out", timeout=10)
    assert "/login" in dash_duo.driver.current_url
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []


@pytest.mark.filterwarnings("ignore:Flask-Caching")
def test_dash_frame002_revoked_token_returns_to_sign_in(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    make_site(services, owner, "shop.example.com")
    # No response cache here: the point is what the dashboard does with the API's 401 on the next call.
    dash_duo.start_server(
        create_dashboard(DashboardSettings(api_url=api_base + "/api", cache_config={"CACHE_TYPE": "NullCache"}))
    )
    dash_duo.wait_for_element(".login-card", timeout=10)
    sign_in(dash_duo, "owner@example.com", expect_sites=False)
    dash_duo.wait_for_contains_text("#sites-list", "shop.example.com", timeout=10)

    # The token is revoked behind the dashboard's back (signed out elsewhere); the next page load must notice.
    token = dash_duo.driver.execute_script("return JSON.parse(window.sessionStorage.getItem('frame-auth')).token")
    assert httpx.post(api_base + "/api/auth/logout", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    dash_duo.driver.get(dash_duo.server_url + "/sites")
    dash_duo.wait_for_contains_text("#login-message", "session has ended", timeout=10)
    assert dash_duo.driver.execute_script("return window.sessionStorage.getItem('frame-auth')") in (None, "null")
    dash_duo.driver.save_screenshot(str(output_dir / "frame-expired.png"))


def test_dash_frame003_api_key_sign_in_site_picker_and_date_steps(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    shop = make_site(services, owner, "shop.example.com")
    blog = make_site(services, owner, "blog.example.org")
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))

    # A remote API: sign in with an API key instead of a password.
    dash_duo.wait_for_element(".login-card", timeout=10)
    click(dash_duo, "#login-mode label:nth-child(2)")
    wait_until(lambda: dash_duo.find_element("#login-api-key").is_displayed(), 5)
    dash_duo.find_element("#login-api-key").send_keys("not-a-key")
    click(dash_duo, "#login-submit")
    dash_duo.wait_for_contains_text("#login-message", "not valid", timeout=10)
    dash_duo.clear_input(dash_duo.find_element("#login-api-key"))
    dash_duo.find_element("#login-api-key").send_keys(owner.api_key)
    click(dash_duo, "#login-submit")
    dash_duo.wait_for_contains_text("#sites-list", "blog.example.org", timeout=10)
    dash_duo.wait_for_text_to_equal("#frame-user-email", "owner@example.com", timeout=10)

    # The navbar's site picker opens the goals of the chosen site.
    click(dash_duo, f"#site-{shop.site_id}")
    dash_duo.wait_for_element("#overview-tiles", timeout=10)
    dash_duo.wait_for_element("#nav-goals", timeout=10)
    click(dash_duo, "#nav-goals")
    dash_duo.wait_for_element("#goals-body", timeout=10)
    wait_until(lambda: f"site={shop.site_id}" in dash_duo.driver.current_url, 5)
    dash_duo.select_dcc_dropdown("#frame-site-picker", value="blog.example.org · Org of blog.example.org")
    wait_until(lambda: f"site={blog.site_id}" in dash_duo.driver.current_url, 10)
    dash_duo.wait_for_contains_text("#goals-body", "No goals yet", timeout=10)
    # The overview strip loads after the page's own data, also when there is none.
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "0", timeout=10)

    # Step back by the range's own length, then forward again; the zone selector rewrites the URL too.
    def dates() -> tuple[str, str]:
        query = parse_qs(urlparse(dash_duo.driver.current_url).query)
        return query.get("start_date", [""])[0], query.get("end_date", [""])[0]

    click(dash_duo, "#frame-date-preset label:nth-child(2)")  # 7 days

    def days() -> int:
        first, last = dates()
        return (date.fromisoformat(last) - date.fromisoformat(first)).days + 1 if first and last else 0

    wait_until(lambda: days() == 7, 10)
    start, end = (date.fromisoformat(d) for d in dates())
    click(dash_duo, "#frame-date-back")
    wait_until(lambda: dates() == ((start - timedelta(days=7)).isoformat(), (end - timedelta(days=7)).isoformat()), 10)
    click(dash_duo, "#frame-date-forward")
    wait_until(lambda: dates() == (start.isoformat(), end.isoformat()), 10)

    # Any IANA zone can be found by typing part of its name.
    def zones_matching(text: str) -> list[str]:
        """Open the zone selector and type ``text`` (again, when the page re-rendered it since); the options shown."""
        try:
            if not dash_duo.find_elements(".dash-dropdown-search"):
                click(dash_duo, "#frame-time-zone")
            box = dash_duo.find_element(".dash-dropdown-search")
            if box.get_attribute("value") != text:
                box.clear()
                box.send_keys(text)
            return [o.text for o in dash_duo.find_elements(".dash-dropdown-option")]
        except StaleElementReferenceException:  # the page may still be re-rendering after the date steps
            return []

    wait_until(lambda: zones_matching("Tokyo") == ["Asia/Tokyo"], 10)
    click(dash_duo, ".dash-dropdown-option")
    wait_until(lambda: "time_zone=Asia%2FTokyo" in dash_duo.driver.current_url, 10)
    assert dates() == (start.isoformat(), end.isoformat())

    # A custom range: pick the 12th in the first month shown, then the 5th in the second; one move, both dates.
    def open_picker() -> bool:
        try:  # the page may still be re-rendering after the zone change
            click(dash_duo, ".dash-datepicker-start-date")
        except StaleElementReferenceException:
            return False
        return True

    wait_until(open_picker, 10)

    def day(number: int, month: int):
        cells = dash_duo.find_elements("td.dash-datepicker-calendar-date-inside")
        return [td for td in cells if td.text.strip() == str(number)][month]

    wait_until(lambda: len(dash_duo.find_elements("td.dash-datepicker-calendar-date-inside")) > 40, 5)
    # Two months back, both months shown are wholly in the past (days after today cannot be picked).
    for _ in range(2):
        click(dash_duo, "button[aria-label='Previous month']")
    day(12, 0).click()
    dash_duo.driver.save_screenshot(str(output_dir / "frame-date-picker.png"))
    assert dates() == (start.isoformat(), end.isoformat())  # nothing moves until the range is complete
    day(5, 1).click()
    wait_until(lambda: dates()[0].endswith("-12") and dates()[1].endswith("-05"), 10)
    first, last = (date.fromisoformat(d) for d in dates())
    assert first < last and (last.month - first.month) % 12 == 1
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "0", timeout=10)
    dash_duo.driver.save_screenshot(str(output_dir / "frame-controls.png"))
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []


def test_dash_frame004_api_unreachable_is_said_plainly(dash_duo, output_dir):
    # Nothing listens on this port: every call fails to connect.
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=f"http://127.0.0.1:{free_port()}/api")))
    dash_duo.wait_for_element(".login-card", timeout=10)
    sign_in(dash_duo, "owner@example.com", expect_sites=False)
    dash_duo.wait_for_contains_text("#login-message", "cannot reach the API", timeout=10)
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []


def test_dash_frame005_someone_elses_site_is_not_shown(dash_duo, services, api_base):
    owner = make_account(services, "owner@example.com")
    make_account(services, "stranger@example.com")
    site = make_site(services, owner, "shop.example.com")
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    dash_duo.wait_for_element(".login-card", timeout=10)
    sign_in(dash_duo, "stranger@example.com", expect_sites=False)
    dash_duo.wait_for_contains_text("#sites-list", "not in any organization", timeout=10)
    dash_duo.driver.get(f"{dash_duo.server_url}/goals?site={site.site_id}")
    # One message instead of the page (no second box in the strip, no controls around it).
    dash_duo.wait_for_contains_text("#site-not-found", "Site not found", timeout=10)
    settled(dash_duo)
    assert found_now(dash_duo, "#frame-overview-body, #goals-body") == []
    assert "shop.example.com" not in dash_duo.find_element("body").text
