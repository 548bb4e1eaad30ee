"""Browser test of countries: names and flags where they are shown, a filter typed by name, an unknown name refused.

The demo data puts sessions 0, 3, 6, 9 in France and the other six of the default 30 days in Germany.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import httpx
from selenium.webdriver.common.by import By

from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import make_account, make_site, wait_until
from tests.support.dashboard import click, panel_shows, screenshots, settled, sign_in
from tests.support.dashboard_data import load_demo

GERMANY = "\U0001f1e9\U0001f1ea Germany"
FRANCE = "\U0001f1eb\U0001f1f7 France"


def _signed_in_with_demo(dash_duo, services, api_base: str):
    """A site holding the demo visits, and its owner signed in to a fresh dashboard: (owner, site)."""
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    load_demo(services, site.site_id)
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    return owner, site


def _fill(dash_duo, selector: str, text: str) -> None:
    element = dash_duo.find_element(selector)
    dash_duo.clear_input(element)
    element.send_keys(text)


def _panel_values(dash_duo, parameter: str) -> list[str]:
    rows = dash_duo.find_elements(f"#overview-rows-{parameter} button.panel-row")
    return [r.find_elements(By.CLASS_NAME, "panel-value")[0].text for r in rows]


def _api_overview(api_base: str, owner, site_id: int, url: str) -> dict:
    """The API's overview for the window and filters in the dashboard's address."""
    query = {key: values[0] for key, values in parse_qs(urlparse(url).query).items()}
    params = {key: query[key] for key in ("start_date", "end_date", "time_zone", "filters") if key in query}
    response = httpx.get(f"{api_base}/api/sites/{site_id}/overview", params=params, headers=owner.headers)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def test_dash_countries001_names_suggested_filter_by_name_unknown_refused(dash_duo, services, api_base, output_dir):
    owner, site = _signed_in_with_demo(dash_duo, services, api_base)
    dash_duo.driver.set_window_size(1440, 2200)
    click(dash_duo, f"#site-{site.site_id}")
    dash_duo.wait_for_text_to_equal("#overview-sessions", "10", timeout=40)

    # The Locations panel names the countries, with their flags.
    panel_shows(dash_duo, "country", "Germany")
    assert _panel_values(dash_duo, "country") == [GERMANY, FRANCE]

    # The filter's value box suggests names (the code and flag beside them), most visits first.
    dash_duo.select_dcc_dropdown("#frame-filter-parameter", value="Country")
    wait_until(lambda: len(dash_duo.find_elements("#frame-filter-suggestions option")) == 2, 15)
    options = dash_duo.find_elements("#frame-filter-suggestions option")
    assert [(o.get_attribute("value"), o.get_attribute("label")) for o in options] == [
        ("Germany", "\U0001f1e9\U0001f1ea DE"),
        ("France", "\U0001f1eb\U0001f1f7 FR"),
    ]

    # A country that does not exist: a message beside the filter, and nothing else moves.
    before = dash_duo.driver.current_url
    _fill(dash_duo, "#frame-filter-value", "Atlantis")
    click(dash_duo, "#frame-filter-add")
    dash_duo.wait_for_contains_text("#frame-filter-message", "No country is called “Atlantis”", timeout=10)
    settled(dash_duo)
    assert dash_duo.driver.current_url == before
    assert dash_duo.find_element("#frame-filter-chips").text == ""
    assert dash_duo.find_element("#overview-sessions").text == "10"
    screenshots(dash_duo, output_dir, "countries-unknown")

    # Germany by name: the URL keeps the code, and the numbers are the API's for DE (6 of the 10 visits).
    _fill(dash_duo, "#frame-filter-value", "germany")
    click(dash_duo, "#frame-filter-add")
    dash_duo.wait_for_contains_text("#frame-filter-chips", f"Country is {GERMANY}", timeout=15)
    dash_duo.wait_for_text_to_equal("#overview-sessions", "6", timeout=15)
    url = dash_duo.driver.current_url
    assert json.loads(parse_qs(urlparse(url).query)["filters"][0]) == [
        {"parameter": "country", "type": "equals", "value": ["DE"]}
    ]
    assert dash_duo.find_element("#frame-filter-message").text == ""
    api = _api_overview(api_base, owner, site.site_id, url)
    assert api["sessions"] == 6
    for key in ("sessions", "users", "pageviews"):
        dash_duo.wait_for_text_to_equal(f"#overview-{key}", f"{api[key]:,}", timeout=10)
    panel_shows(dash_duo, "country", "Germany")
    assert _panel_values(dash_duo, "country") == [GERMANY]
    screenshots(dash_duo, output_dir, "countries-filtered")
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []


def test_dash_countries002_sessions_and_timeline_name_the_country(dash_duo, services, api_base, output_dir):
    _, site = _signed_in_with_demo(dash_duo, services, api_base)
    dash_duo.driver.set_window_size(1440, 1000)

    dash_duo.driver.get(f"{dash_duo.server_url}/sessions?site={site.site_id}&time_zone=UTC")
    dash_duo.wait_for_contains_text("#sessions-body", "10 sessions, most recently active first", timeout=15)
    countries = [c.text for c in dash_duo.find_elements("#sessions-table td[data-dash-column='country']")]
    assert sorted(countries) == sorted([FRANCE] * 4 + [GERMANY] * 6)
    screenshots(dash_duo, output_dir, "countries-sessions")

    dash_duo.find_elements("#sessions-table td[data-dash-column='started'] a")[0].click()
    dash_duo.wait_for_element("#session-timeline", timeout=15)
    facts = dash_duo.find_element("#session-body .session-facts").text
    assert f"{FRANCE} (FR)" in facts  # s00, in France, ends last: its signup came 90 s in
    screenshots(dash_duo, output_dir, "countries-session")
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []
