"""Browser tests of every dashboard page on a phone (390 px) and a desktop (1440 px), and of the dark theme.

On each page at both widths: the document is no wider than the window, the navigation is reachable (behind the menu
button on a phone), the date and filter controls fold on a phone, and the first column of a table stays in view when
the rest scrolls sideways. Screenshots land in ``test-output/phone/`` and ``test-output/dark/``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from api_backend.store.events import rows_to_table
from api_client import AnalyticsAPI
from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import make_account, make_site, wait_until
from tests.support.dashboard import click, found_now, settled, shown, sign_in
from tests.support.dashboard_data import demo_rows

PHONE, DESKTOP = 390, 1440
STACK = "TypeError: Cannot read properties of undefined\n    at total (https://shop.example.com/app.js:12:7)"
SITE_LINKS = {"Sites", "Overview", "Sessions", "Goals", "Channels", "Funnels", "Errors", "Usage", "Settings"}


@dataclass
class Page:
    """One screen: where it is, what shows once it is drawn, and the first cell of its main table (if any)."""

    name: str
    path: str
    ready: str
    first_cell: str | None = None
    prepare: Callable | None = None


@pytest.fixture
def shop(services, api_base):
    """A site with the demo sessions (s00 and s03 identified as alice), one JavaScript error, a goal and a private
    link; returns what the pages need."""
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    rows = demo_rows(site.site_id)
    for row in rows:
        row["identified_user_id"] = "alice" if row["session_id"] in ("s00", "s03") else ""
    first = next(r for r in rows if r["session_id"] == "s00")
    error = dict(first, type="error", pathname="/pricing", event_name="TypeError")
    error["timestamp"] = first["timestamp"] + timedelta(seconds=30)
    error["props"] = json.dumps({"message": "Cannot read properties of undefined", "stack": STACK})
    services.events.append(rows_to_table([*rows, error]))
    goal = services.metadata.create_goal(site.site_id, "Pricing", "path", {"pathPattern": "/pricing"})
    key = AnalyticsAPI(api_base + "/api", token=owner.api_key).generate_private_link(site.site_id)
    return {"site": site.site_id, "goal": goal.goal_id, "key": key, "org": site.organization_id}


def _funnel(dash_duo) -> None:
    """Ask for a funnel, so the page shows its chart and table."""
    dash_duo.wait_for_element('[id=\'{"field":"value","index":1,"type":"funnel-step"}\']', timeout=15).send_keys(
        "/pricing"
    )
    click(dash_duo, "#funnel-analyze")
    dash_duo.wait_for_element("#funnel-table", timeout=15)
    dash_duo.wait_for_element("#funnel-chart .main-svg", timeout=10)


def _open_error(dash_duo) -> None:
    """Open the error group, so the page shows a stack trace."""
    click(dash_duo, ".error-group:not(.error-group-head)")
    dash_duo.wait_for_contains_text("body", "app.js:12:7", timeout=15)


def site_pages(shop: dict) -> list[Page]:
    site, goal, key = shop["site"], shop["goal"], shop["key"]
    q = f"site={site}&time_zone=UTC"
    share = f"/share/{site}?time_zone=UTC"
    first_data_cell = ".dash-spreadsheet-inner tbody tr:nth-child(2) td:first-child"
    return [
        Page("sites", "/sites", "#sites-list"),
        Page("overview", f"/overview?{q}", "#overview-chart .main-svg"),
        Page("goals", f"/goals?{q}", "#goals-table", "#goals-table tbody tr:first-child td:first-child"),
        Page(
            "goal-sessions",
            f"/goal-sessions?{q}&goal={goal}",
            "#goal-sessions-table td[data-dash-column='session_start'] a",
            "#goal-sessions-table " + first_data_cell,
        ),
        Page("channels", f"/channels?{q}&goal={goal}", "#channels-table td", "#channels-table " + first_data_cell),
        Page("sessions", f"/sessions?{q}", "#sessions-body .dash-spreadsheet-inner td", "#sessions-body td"),
        Page("session-timeline", f"/sessions/s00?{q}", "#session-timeline li"),
        Page("user-profile", f"/users/alice?{q}", "#user-facts"),
        Page("funnels", f"/funnels?{q}", "#funnel-analyze", "#funnel-table tbody tr:first-child td", prepare=_funnel),
        Page("errors", f"/errors?{q}", ".error-group:not(.error-group-head)", prepare=_open_error),
        Page("usage", f"/usage?org={shop['org']}&time_zone=UTC", "#usage-chart .main-svg"),
        Page("settings", f"/settings?{q}", "#settings-excluded-ips"),
        Page("not-found", "/no-such-page", ".empty-state"),
        Page("share-overview", f"{share}&tab=overview#{key}", "#share-content .main-svg"),
        Page("share-sessions", f"{share}&tab=visits#{key}", "#share-content .dash-spreadsheet-inner td"),
        Page("share-goals", f"{share}&tab=goals#{key}", "#goals-table", "#goals-table tbody tr:first-child td"),
        Page("share-channels", f"{share}&tab=channels#{key}", "#channels-table td"),
        Page("share-errors", f"{share}&tab=errors#{key}", "#share-content .error-group:not(.error-group-head)"),
    ]


# --- checks ----------------------------------------------------------------------------------------------------------
def resize(dash_duo, width: int) -> None:
    driver = dash_duo.driver
    driver.set_window_size(width, 900)
    wait_until(lambda: driver.execute_script("return window.innerWidth") <= width, 10, f"window not {width} px")


def fits(dash_duo) -> bool:
    """The document scrolls only up and down: nothing makes it wider than the window."""
    return dash_duo.driver.execute_script(
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )


def overflowing(dash_duo) -> list[str]:
    """The outermost elements reaching past the window's right edge (to name the culprit when a page is too wide)."""
    return dash_duo.driver.execute_script(
        """
        var limit = document.documentElement.clientWidth + 0.5, found = [];
        document.querySelectorAll('body *').forEach(function (e) {
            var r = e.getBoundingClientRect();
            if (r.width && r.right > limit && !(e.parentElement.getBoundingClientRect().right > limit)) {
                found.push(e.tagName.toLowerCase() + '#' + e.id + '.' + String(e.className).split(' ').join('.')
                    + ' ' + Math.round(r.right));
            }
        });
        return found.slice(0, 8);
        """
    )


def assert_fits(dash_duo, what: str) -> None:
    try:  # charts redraw to a new width a moment after the window changes
        wait_until(lambda: fits(dash_duo), 5)
    except AssertionError:
        wide = dash_duo.driver.execute_script("return document.documentElement.scrollWidth")
        raise AssertionError(f"{what} is {wide} px wide: {overflowing(dash_duo)}") from None


def inside_window(dash_duo, element) -> bool:
    """The element lies within the window's width and nothing covers its middle (so a person can click it)."""
    return dash_duo.driver.execute_script(
        "var e = arguments[0], r = e.getBoundingClientRect();"
        "if (!(r.width > 0 && r.left >= 0 && r.right <= document.documentElement.clientWidth + 0.5)) { return false; }"
        "var top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);"
        "return !!top && (e.contains(top) || top.contains(e));",
        element,
    )


def check_navigation(dash_duo, width: int, signed_in: bool, site: bool, name: str, output_dir) -> None:
    """Every page link, the site picker and Sign out can be reached: directly on a desktop, through the menu on a
    phone (a button with aria-expanded that the keyboard can work too)."""
    toggle = dash_duo.find_element("#frame-nav-toggle")
    if not signed_in:
        mode = dash_duo.find_element("#frame-navbar").get_attribute("class")
        assert not toggle.is_displayed() and shown(dash_duo, "#frame-nav-links a") == [], (name, width, mode)
        return
    if width == PHONE:
        assert toggle.is_displayed() and toggle.get_attribute("aria-expanded") == "false"
        assert shown(dash_duo, "#frame-nav-links a") == [] and shown(dash_duo, "#frame-sign-out") == []
        click(dash_duo, "#frame-nav-toggle")
        wait_until(lambda: dash_duo.find_element("#frame-nav-toggle").get_attribute("aria-expanded") == "true")
    else:
        assert not toggle.is_displayed()
    links = shown(dash_duo, "#frame-nav-links a")
    labels = {link.text for link in links}
    assert labels == (SITE_LINKS if site else {"Sites", "Usage"}), (name, width, labels)
    for element in [*links, dash_duo.find_element("#frame-sign-out"), dash_duo.find_element("#frame-site-picker")]:
        assert element.is_displayed() and inside_window(dash_duo, element), (name, width, element.text)
    assert_fits(dash_duo, f"{name} at {width} px with the menu open")
    if width == PHONE:
        if name == "overview":
            dash_duo.driver.save_screenshot(str(output_dir / f"{name}-menu-{width}.png"))
        # Escape closes it and gives the focus back to the button.
        dash_duo.find_element("body").send_keys(Keys.ESCAPE)
        wait_until(lambda: dash_duo.find_element("#frame-nav-toggle").get_attribute("aria-expanded") == "false")
        assert dash_duo.driver.execute_script("return document.activeElement.id") == "frame-nav-toggle"
        assert shown(dash_duo, "#frame-nav-links a") == []


def check_controls(dash_duo, width: int, name: str) -> None:
    """On a phone the date and filter controls wait behind one button; on a desktop they are simply there."""
    if not found_now(dash_duo, "#frame-controls-toggle"):
        return
    toggle = dash_duo.find_element("#frame-controls-toggle")
    controls = dash_duo.find_element("#frame-controls")
    if width == DESKTOP:
        assert controls.is_displayed() and not toggle.is_displayed(), name
        return
    assert toggle.is_displayed() and not controls.is_displayed(), name
    assert toggle.get_attribute("aria-expanded") == "false"
    click(dash_duo, "#frame-controls-toggle")
    wait_until(lambda: dash_duo.find_element("#frame-controls").is_displayed(), 5, f"{name}: controls did not open")
    assert dash_duo.find_element("#frame-controls-toggle").get_attribute("aria-expanded") == "true"
    assert_fits(dash_duo, f"{name} with the controls open")
    click(dash_duo, "#frame-controls-toggle")
    wait_until(lambda: not dash_duo.find_element("#frame-controls").is_displayed(), 5, f"{name}: did not fold")


def check_first_column(dash_duo, selector: str, name: str, width: int, folder) -> None:
    """The table's first cell is in the window, and stays at the table's left edge when the table is scrolled.

    A screenshot shows the table scrolled halfway.
    """
    cell = dash_duo.find_element(selector)
    dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", cell)
    assert inside_window(dash_duo, cell), (name, width, "first column cut")
    offset = dash_duo.driver.execute_script(
        """
        var cell = arguments[0], box = cell.parentElement;
        while (box && !(box.scrollWidth > box.clientWidth && getComputedStyle(box).overflowX !== 'visible')) {
            box = box.parentElement;
        }
        if (!box || box === document.documentElement || box === document.body) { return null; }
        box.scrollLeft = box.scrollWidth;
        var moved = cell.getBoundingClientRect().left - box.getBoundingClientRect().left;
        box.scrollLeft = (box.scrollWidth - box.clientWidth) / 2;
        return moved;
        """,
        cell,
    )
    if offset is not None:  # the table is wider than its box: the key column must not scroll away
        assert abs(offset) < 2, (name, width, f"first column scrolled away by {offset} px")
        dash_duo.driver.save_screenshot(str(folder / f"{name}-table-{width}.png"))


def tour(dash_duo, output_dir, page: Page, *, signed_in: bool = True, site: bool = True) -> None:
    """Open ``page`` and check it at both widths, saving a screenshot of each."""
    folder = output_dir / "phone"
    folder.mkdir(exist_ok=True)
    resize(dash_duo, DESKTOP)
    dash_duo.driver.get(dash_duo.server_url + page.path)
    dash_duo.wait_for_element(page.ready, timeout=20)
    if page.prepare:
        page.prepare(dash_duo)
    settled(dash_duo)
    for width in (DESKTOP, PHONE):
        resize(dash_duo, width)
        dash_duo.driver.execute_script("window.scrollTo(0, 0)")
        assert_fits(dash_duo, f"{page.name} at {width} px")
        shared = page.name.startswith("share-")
        check_navigation(dash_duo, width, signed_in and not shared, site, page.name, folder)
        check_controls(dash_duo, width, page.name)
        if page.first_cell:
            check_first_column(dash_duo, page.first_cell, page.name, width, folder)
        dash_duo.driver.execute_script("window.scrollTo(0, 0)")
        dash_duo.driver.save_screenshot(str(folder / f"{page.name}-{width}.png"))


def severe(dash_duo) -> list:
    return [e for e in dash_duo.get_logs() or [] if e["level"] == "SEVERE"]


def test_dash_phones001_every_page_fits_a_phone_and_a_desktop(dash_duo, shop, api_base, output_dir):
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    dash_duo.driver.get(dash_duo.server_url + "/login")
    tour(dash_duo, output_dir, Page("login", "/login", "#login-email"), signed_in=False)
    resize(dash_duo, DESKTOP)
    dash_duo.driver.get(dash_duo.server_url + "/login")
    sign_in(dash_duo, "owner@example.com")
    tour(dash_duo, output_dir, Page("sites", "/sites", "#sites-list"), site=False)
    for page in site_pages(shop)[1:]:
        tour(dash_duo, output_dir, page, site=page.name not in ("usage", "not-found"))
    # No CSP refusals or script errors along the way.
    assert severe(dash_duo) == []


# --- dark ------------------------------------------------------------------------------------------------------------
def rgb(css_colour: str) -> tuple[int, ...]:
    """``rgb(1, 2, 3)`` or ``rgba(1, 2, 3, 1)`` -> ``(1, 2, 3)``."""
    return tuple(int(float(v)) for v in re.findall(r"[\d.]+", css_colour)[:3])


def luminance(css_colour: str) -> float:
    """0 (black) .. 1 (white) of an ``rgb()``/``rgba()`` or ``#rrggbb`` colour."""
    if css_colour.startswith("#"):
        r, g, b = (int(css_colour[i : i + 2], 16) for i in (1, 3, 5))
    else:
        r, g, b = (float(v) for v in re.findall(r"[\d.]+", css_colour)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def accent(dash_duo) -> str:
    """The page's accent colour as the browser computes it (``rgb(...)``)."""
    return dash_duo.driver.execute_script(
        "var probe = document.createElement('span'); probe.style.color = 'var(--accent)';"
        "document.body.appendChild(probe); var c = getComputedStyle(probe).color; probe.remove(); return c;"
    )


def prefer(dash_duo, scheme: str) -> None:
    dash_duo.driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
    )


def background(dash_duo, selector: str = "body") -> float:
    return luminance(
        dash_duo.driver.execute_script(
            "return getComputedStyle(document.querySelector(arguments[0])).backgroundColor", selector
        )
    )


def chart_paper(dash_duo, selector: str) -> float | None:
    """The paper colour plotly drew the chart with (None until it is drawn)."""
    colour = dash_duo.driver.execute_script(
        "var gd = document.querySelector(arguments[0]);"
        "return gd && gd._fullLayout ? gd._fullLayout.paper_bgcolor : null;",
        selector,
    )
    return luminance(colour) if colour and "rgba(0, 0, 0, 0)" not in colour else None


def test_dash_phones002_dark_theme_follows_the_system_and_the_switch(dash_duo, shop, api_base, output_dir):
    folder = output_dir / "dark"
    folder.mkdir(exist_ok=True)
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    prefer(dash_duo, "dark")
    dash_duo.driver.get(dash_duo.server_url + "/login")
    dash_duo.wait_for_element("#login-email", timeout=15)
    assert background(dash_duo) < 0.2
    assert background(dash_duo, ".login-card") < 0.2
    # Inputs are dark with light text.
    assert background(dash_duo, "#login-email") < 0.2
    assert luminance(dash_duo.find_element("#login-email").value_of_css_property("color")) > 0.7
    dash_duo.driver.save_screenshot(str(folder / "login-1440.png"))
    sign_in(dash_duo, "owner@example.com")

    chart = "#overview-chart .js-plotly-plot"
    overview = f"{dash_duo.server_url}/overview?site={shop['site']}&time_zone=UTC"
    dash_duo.driver.get(overview)
    dash_duo.wait_for_element(chart + " .main-svg", timeout=20)
    assert dash_duo.find_element("#frame-theme-toggle").get_attribute("aria-pressed") == "true"
    wait_until(lambda: (paper := chart_paper(dash_duo, chart)) is not None and paper < 0.2, 10, "chart not dark")
    text = dash_duo.driver.execute_script(f"return document.querySelector('{chart}')._fullLayout.font.color")
    assert luminance(text) > 0.5, text
    settled(dash_duo)
    for width in (DESKTOP, PHONE):
        resize(dash_duo, width)
        assert_fits(dash_duo, f"dark overview at {width} px")
        dash_duo.driver.save_screenshot(str(folder / f"overview-{width}.png"))
    resize(dash_duo, DESKTOP)

    # The switch chooses light over the system's dark, the chart follows at once, and a reload keeps it.
    click(dash_duo, "#frame-theme-toggle")
    wait_until(lambda: background(dash_duo) > 0.8, 5, "the switch did not turn the page light")
    wait_until(lambda: (chart_paper(dash_duo, chart) or 0) > 0.8, 10, "the chart stayed dark")
    assert dash_duo.find_element("#frame-theme-toggle").get_attribute("aria-pressed") == "false"
    assert dash_duo.driver.execute_script("return localStorage.getItem('sitelens-theme')") == "light"
    dash_duo.driver.refresh()
    dash_duo.wait_for_element(chart + " .main-svg", timeout=20)
    assert background(dash_duo) > 0.8
    wait_until(lambda: (chart_paper(dash_duo, chart) or 0) > 0.8, 10, "the chart is not light after a reload")

    # And back to dark, kept even where the system prefers light.
    click(dash_duo, "#frame-theme-toggle")
    wait_until(lambda: background(dash_duo) < 0.2, 5, "the switch did not turn the page dark")
    prefer(dash_duo, "light")
    dash_duo.driver.refresh()
    dash_duo.wait_for_element(chart + " .main-svg", timeout=20)
    assert background(dash_duo) < 0.2
    wait_until(lambda: (paper := chart_paper(dash_duo, chart)) is not None and paper < 0.2, 10, "chart not dark")
    assert dash_duo.find_element("#frame-theme-toggle").get_attribute("aria-pressed") == "true"

    # An open dropdown list is dark with light options.
    click(dash_duo, "#frame-filter-parameter")
    option = wait_until(
        lambda: next(iter(dash_duo.driver.find_elements(By.XPATH, "//*[text()='Page title']")), None), 5, "no list"
    )
    behind = dash_duo.driver.execute_script(
        "var e = arguments[0];"
        "while (e && getComputedStyle(e).backgroundColor === 'rgba(0, 0, 0, 0)') { e = e.parentElement; }"
        "return e ? getComputedStyle(e).backgroundColor : null;",
        option,
    )
    assert behind and luminance(behind) < 0.2, behind
    assert luminance(option.value_of_css_property("color")) > 0.6
    dash_duo.find_element("body").send_keys(Keys.ESCAPE)

    # Readable dark pages: tables, inputs, dropdowns, stack traces.
    for page in site_pages(shop):
        if page.name not in ("goals", "sessions", "errors", "settings", "funnels", "share-goals"):
            continue
        dash_duo.driver.get(dash_duo.server_url + page.path)
        dash_duo.wait_for_element(page.ready, timeout=20)
        if page.prepare:
            page.prepare(dash_duo)
        settled(dash_duo)
        assert background(dash_duo) < 0.2, page.name
        for cell in dash_duo.driver.find_elements(By.CSS_SELECTOR, "td")[:5]:
            assert luminance(cell.value_of_css_property("color")) > 0.5, (page.name, cell.text)
        # Links in tables are the page's accent (DataTable brings its own hotpink otherwise).
        for link in dash_duo.driver.find_elements(By.CSS_SELECTOR, "td a")[:3]:
            assert rgb(link.value_of_css_property("color")) == rgb(accent(dash_duo)), (page.name, link.text)
        for width in (DESKTOP, PHONE):
            resize(dash_duo, width)
            assert_fits(dash_duo, f"dark {page.name} at {width} px")
            dash_duo.driver.save_screenshot(str(folder / f"{page.name}-{width}.png"))
        resize(dash_duo, DESKTOP)
    assert severe(dash_duo) == []


def test_dash_phones003_on_a_phone_the_menu_picks_a_site_and_the_folded_controls_filter(
    dash_duo, services, api_base, output_dir
):
    owner = make_account(services, "owner@example.com")
    shop = make_site(services, owner, "shop.example.com")
    blog = make_site(services, owner, "blog.example.org")
    services.events.append(rows_to_table(demo_rows(shop.site_id)))
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    resize(dash_duo, PHONE)
    dash_duo.driver.get(f"{dash_duo.server_url}/goals?site={shop.site_id}&time_zone=UTC")
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "10", timeout=20)

    # The site picker works from inside the open menu (its list is not cut by the menu), and the menu shuts after.
    click(dash_duo, "#frame-nav-toggle")
    dash_duo.select_dcc_dropdown("#frame-site-picker", value="blog.example.org · Org of blog.example.org")
    wait_until(lambda: f"site={blog.site_id}" in dash_duo.driver.current_url, 10, "the picked site did not open")
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "0", timeout=15)
    wait_until(lambda: dash_duo.find_element("#frame-nav-toggle").get_attribute("aria-expanded") == "false", 5)

    # A page link in the menu goes there and shuts the menu.
    click(dash_duo, "#frame-nav-toggle")
    click(dash_duo, "#nav-overview")
    dash_duo.wait_for_element("#overview-tiles", timeout=15)
    wait_until(lambda: dash_duo.find_element("#frame-nav-toggle").get_attribute("aria-expanded") == "false", 5)
    assert shown(dash_duo, "#frame-nav-links a") == []

    # The folded controls open and still change the view: a filter added on a phone.
    dash_duo.driver.get(f"{dash_duo.server_url}/goals?site={shop.site_id}&time_zone=UTC")
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "10", timeout=20)
    # The page's callbacks answer before the controls are used, and the parameter's (its value suggestions) before
    # the value is typed: in full test runs the Add click that followed changed nothing.
    settled(dash_duo)
    click(dash_duo, "#frame-controls-toggle")
    wait_until(lambda: dash_duo.find_element("#frame-controls-toggle").get_attribute("aria-expanded") == "true", 5)
    dash_duo.select_dcc_dropdown("#frame-filter-parameter", value="Channel")
    settled(dash_duo)
    wait_until(lambda: "Channel" in dash_duo.find_element("#frame-filter-parameter").text, 5, "Channel not picked")
    dash_duo.find_element("#frame-filter-value").send_keys("Referral")
    assert dash_duo.find_element("#frame-filter-value").get_attribute("value") == "Referral"
    click(dash_duo, "#frame-filter-add")
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "3", timeout=15)  # sessions 7-9 came by referral
    toggle = dash_duo.find_element("#frame-controls-toggle")
    assert "1 filter" in toggle.text, toggle.text
    assert_fits(dash_duo, "goals with a filter at 390 px")
    (output_dir / "phone").mkdir(exist_ok=True)
    dash_duo.driver.save_screenshot(str(output_dir / "phone" / "goals-filtered-390.png"))
    assert severe(dash_duo) == []
