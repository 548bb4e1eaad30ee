"""Browser tests of the dashboard frame: sign-in, site picker, sign-out, an expired credential."""

from __future__ import annotations

import httpx
import pytest

from api_backend.app import create_app
from dashboard.app import create_dashboard
from tests.support import PASSWORD, live_server, make_account, make_site


@pytest.fixture
def api_base(settings, services):
    with live_server(create_app(settings, services)) as base:
        yield base


def sign_in(dash_duo, email: str, password: str = PASSWORD) -> None:
    """Fill the sign-in form like a person and submit it."""
    dash_duo.wait_for_element("#login-email", timeout=10)
    dash_duo.find_element("#login-email").send_keys(email)
    dash_duo.find_element("#login-password").send_keys(password)
    dash_duo.find_element("#login-submit").click()


def test_dash_frame001_sign_in_pick_site_sign_out(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    make_site(services, owner, "shop.example.com")
    make_site(services, owner, "blog.example.org")
    dash_duo.start_server(create_dashboard(api_url=api_base + "/api"))

    # "/" sends a signed-out person to sign-in.
    dash_duo.wait_for_element(".login-card", timeout=10)
    dash_duo.driver.save_screenshot(str(output_dir / "frame-login.png"))
    sign_in(dash_duo, "owner@example.com", "wrong password")
    dash_duo.wait_for_contains_text("#login-message", "email or password is not right", timeout=10)

    dash_duo.clear_input(dash_duo.find_element("#login-password"))
    dash_duo.find_element("#login-password").send_keys(PASSWORD)
    dash_duo.find_element("#login-submit").click()
    dash_duo.wait_for_contains_text("#sites-list", "shop.example.com", timeout=10)
    dash_duo.wait_for_contains_text("#sites-list", "blog.example.org", timeout=10)
    dash_duo.wait_for_text_to_equal("#frame-user-email", "owner@example.com", timeout=10)
    dash_duo.driver.save_screenshot(str(output_dir / "frame-sites.png"))

    dash_duo.find_element("#frame-sign-out").click()
    dash_duo.wait_for_contains_text("#login-message", "signed out", timeout=10)
    assert "/login" in dash_duo.driver.current_url
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []


def test_dash_frame002_revoked_token_returns_to_sign_in(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    make_site(services, owner, "shop.example.com")
    # No response cache here: the point is what the dashboard does with the API's 401 on the next call.
    dash_duo.start_server(create_dashboard(api_url=api_base + "/api", cache_config={"CACHE_TYPE": "NullCache"}))
    dash_duo.wait_for_element(".login-card", timeout=10)
    sign_in(dash_duo, "owner@example.com")
    dash_duo.wait_for_contains_text("#sites-list", "shop.example.com", timeout=10)

    # The token is revoked behind the dashboard's back (signed out elsewhere); the next page load must notice.
    token = dash_duo.driver.execute_script("return JSON.parse(window.sessionStorage.getItem('frame-auth')).token")
    assert httpx.post(api_base + "/api/auth/logout", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    dash_duo.driver.get(dash_duo.server_url + "/sites")
    dash_duo.wait_for_contains_text("#login-message", "session has ended", timeout=10)
    assert dash_duo.driver.execute_script("return window.sessionStorage.getItem('frame-auth')") in (None, "null")
    dash_duo.driver.save_screenshot(str(output_dir / "frame-expired.png"))
