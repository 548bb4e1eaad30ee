"""Browser tests of the site settings page: switches, exclusion editors, private link, delete, read-only members."""

from __future__ import annotations

import re

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import make_account, make_site, wait_until
from tests.support.dashboard import callback_round_trips, click, found_now, settled, sign_in


def open_settings(dash_duo, site_id: int) -> None:
    dash_duo.driver.get(f"{dash_duo.server_url}/settings?site={site_id}")
    dash_duo.wait_for_element("#settings-body", timeout=10)


def switch_input(dash_duo, label: str):
    return dash_duo.driver.find_element(By.XPATH, f"//label[contains(., '{label}')]//input")


def replace_text(element, text: str) -> None:
    """Select everything in a field and type ``text`` over it (works for multi-line textareas too)."""
    element.send_keys(Keys.CONTROL, "a")
    element.send_keys(Keys.DELETE)
    element.send_keys(text)


def severe(dash_duo) -> list:
    return [entry for entry in dash_duo.get_logs() if entry["level"] == "SEVERE"]


def test_dash_settings001_owner_saves_switches_lists_and_private_link(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    open_settings(dash_duo, site.site_id)
    dash_duo.wait_for_contains_text(".page-subtitle", "shop.example.com", timeout=10)

    # A switch: turn the public dashboard on, save, see the confirmation, and find it on after a reload.
    public = switch_input(dash_duo, "Public dashboard")
    assert not public.is_selected()
    public.click()
    click(dash_duo, "#settings-switches-save")
    dash_duo.wait_for_contains_text("#settings-switches-status", "Saved: Public dashboard on.", timeout=10)
    assert services.metadata.site(site.site_id).public is True
    open_settings(dash_duo, site.site_id)
    assert switch_input(dash_duo, "Public dashboard").is_selected()
    assert switch_input(dash_duo, "Block bots").is_selected()

    # Excluded IPs: junk is marked before saving, the save button is off, and nothing reaches the server.
    editor = dash_duo.find_element("#settings-excluded-ips")
    editor.send_keys("10.0.0.0/8\nnot-an-ip\n10.0.0.9-10.0.0.1")
    dash_duo.wait_for_contains_text("#settings-excluded-ips-problems", "not-an-ip", timeout=10)
    dash_duo.wait_for_contains_text("#settings-excluded-ips-problems", "starts after it ends", timeout=10)
    assert dash_duo.find_element("#settings-excluded-ips-save").get_attribute("disabled") == "true"
    assert "list-editor-invalid" in editor.get_attribute("class")
    dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", editor)
    dash_duo.driver.save_screenshot(str(output_dir / "settings-invalid-ip.png"))
    assert services.metadata.site(site.site_id).excluded_ips in (None, [])

    replace_text(editor, "10.0.0.0/8\n2001:db8::/32\n192.168.1.10-192.168.1.50")
    wait_until(lambda: dash_duo.find_element("#settings-excluded-ips-save").get_attribute("disabled") is None)
    click(dash_duo, "#settings-excluded-ips-save")
    dash_duo.wait_for_contains_text("#settings-excluded-ips-status", "Saved: 3 excluded IP entries.", timeout=10)
    assert services.metadata.site(site.site_id).excluded_ips == [
        "10.0.0.0/8",
        "2001:db8::/32",
        "192.168.1.10-192.168.1.50",
    ]

    countries = dash_duo.find_element("#settings-excluded-countries")
    countries.send_keys("us, de, USA, ZZ")
    dash_duo.wait_for_contains_text("#settings-excluded-countries-problems", "USA", timeout=10)
    assert "ZZ names no country" in dash_duo.find_element("#settings-excluded-countries-problems").text
    replace_text(countries, "us, de, fr")
    wait_until(lambda: dash_duo.find_element("#settings-excluded-countries-save").get_attribute("disabled") is None)
    click(dash_duo, "#settings-excluded-countries-save")
    dash_duo.wait_for_contains_text("#settings-excluded-countries-status", "Saved: 3 excluded countries.", timeout=10)
    assert services.metadata.site(site.site_id).excluded_countries == ["US", "DE", "FR"]

    # The private link: generate shows the share address (key in the fragment), revoke takes it away.
    click(dash_duo, "#settings-link-generate")
    dash_duo.wait_for_element("#settings-link-url", timeout=10)
    url = dash_duo.find_element("#settings-link-url").get_attribute("value")
    key = services.metadata.site(site.site_id).private_link_key
    assert key and url == f"{dash_duo.server_url}/share/{site.site_id}#{key}"
    assert re.fullmatch(r"http://[^/]+/share/\d+#[A-Za-z0-9_-]{22,}", url)
    dash_duo.find_element("#settings-link-copy")  # the copy button sits beside the address
    dash_duo.driver.save_screenshot(str(output_dir / "settings-private-link.png"))
    dash_duo.driver.execute_script("window.scrollTo(0, 0)")
    dash_duo.driver.save_screenshot(str(output_dir / "settings.png"))

    # Replacing or revoking the link asks first; declining changes nothing.
    click(dash_duo, "#settings-link-revoke")
    confirm = WebDriverWait(dash_duo.driver, 10).until(expected_conditions.alert_is_present())
    assert "Revoke the private link?" in confirm.text
    confirm.dismiss()
    click(dash_duo, "#settings-link-generate-again")
    confirm = WebDriverWait(dash_duo.driver, 10).until(expected_conditions.alert_is_present())
    assert "Generate a new private link?" in confirm.text
    confirm.dismiss()
    settled(dash_duo)
    assert services.metadata.site(site.site_id).private_link_key == key
    assert dash_duo.find_element("#settings-link-url").get_attribute("value") == url
    click(dash_duo, "#settings-link-revoke")
    WebDriverWait(dash_duo.driver, 10).until(expected_conditions.alert_is_present()).accept()
    dash_duo.wait_for_contains_text("#settings-link-status", "revoked", timeout=10)
    dash_duo.wait_for_text_to_equal("#settings-link-generate", "Generate private link", timeout=10)
    assert services.metadata.site(site.site_id).private_link_key is None
    assert severe(dash_duo) == []


def test_dash_settings002_delete_site_behind_typing_the_domain(dash_duo, services, api_base):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    make_site(services, owner, "blog.example.org")
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    open_settings(dash_duo, site.site_id)

    button = dash_duo.find_element("#settings-delete")
    assert button.get_attribute("disabled") == "true"
    before = callback_round_trips(dash_duo)
    dash_duo.find_element("#settings-delete-input").send_keys("shop.example")
    settled(dash_duo, at_least=before + 1)  # the button's callback has answered the partial domain
    assert button.get_attribute("disabled") == "true"
    assert services.metadata.site(site.site_id) is not None
    dash_duo.find_element("#settings-delete-input").send_keys(".com")
    wait_until(lambda: dash_duo.find_element("#settings-delete").get_attribute("disabled") is None)
    click(dash_duo, "#settings-delete")
    dash_duo.wait_for_element("#sites-list", timeout=10)
    dash_duo.wait_for_contains_text("#sites-list", "blog.example.org", timeout=10)
    assert found_now(dash_duo, f"#site-{site.site_id}") == []
    assert services.metadata.site(site.site_id) is None
    assert severe(dash_duo) == []


def test_dash_settings003_member_sees_settings_read_only(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com", excluded_ips=["10.0.0.0/8"])
    member = make_account(services, "member@example.com")
    services.metadata.add_member(site.organization_id, member.user.id, "member")
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "member@example.com")
    open_settings(dash_duo, site.site_id)

    dash_duo.wait_for_contains_text(".read-only-note", "Read-only", timeout=10)
    for label in ("Public dashboard", "Block bots", "Error tracking", "URL parameters"):
        assert switch_input(dash_duo, label).get_attribute("disabled") == "true"
    assert dash_duo.find_element("#settings-excluded-ips").get_attribute("disabled") == "true"
    assert dash_duo.find_element("#settings-excluded-ips").get_attribute("value") == "10.0.0.0/8"
    for save in ("#settings-switches-save", "#settings-excluded-ips-save", "#settings-excluded-countries-save"):
        assert not dash_duo.find_element(save).is_displayed()
    # No private link and no delete for a member: the cards are not there at all.
    assert found_now(dash_duo, "#settings-link") == []
    assert found_now(dash_duo, "#settings-delete") == []
    dash_duo.driver.save_screenshot(str(output_dir / "settings-member.png"))
    assert severe(dash_duo) == []
