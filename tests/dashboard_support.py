"""Helpers for the dashboard's browser tests."""

from __future__ import annotations

import time

from tests.support import PASSWORD


def sign_in(dash_duo, email: str, password: str = PASSWORD, *, expect_sites: bool = True) -> None:
    """Fill the sign-in form like a person and submit it; by default wait for the site list."""
    dash_duo.wait_for_element("#login-email", timeout=10)
    dash_duo.find_element("#login-email").send_keys(email)
    dash_duo.find_element("#login-password").send_keys(password)
    dash_duo.find_element("#login-submit").click()
    if expect_sites:
        dash_duo.wait_for_element("#sites-list", timeout=10)


def click(dash_duo, selector: str, timeout: float = 10) -> None:
    """Click ``selector``, finding it again if the page re-rendered it between the lookup and the click."""
    from selenium.common.exceptions import StaleElementReferenceException

    deadline = time.monotonic() + timeout
    while True:
        try:
            dash_duo.find_element(selector).click()
            return
        except StaleElementReferenceException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
