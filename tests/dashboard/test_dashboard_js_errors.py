"""Browser tests of the errors page: groups with hand-counted numbers, opening a group and its stack, the bucket."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse

import pandas as pd
from selenium.webdriver.common.by import By

from api_backend.store.events import rows_to_table
from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import make_account, make_site, wait_until
from tests.support.dashboard import callback_round_trips, click, found_now, screenshots, settled, sign_in

TYPE_ERROR = "Cannot read properties of undefined (reading 'price')"
HOSTILE = '<script>alert("x")</script> is not defined'
HOSTILE_STACK = 'ReferenceError: <script>alert("x")</script> is not defined\n    at <b>bold</b> (https://shop.example.com/app.js:7:3)'
RANGE = "start_date=2026-03-01&end_date=2026-03-07&time_zone=Europe/Berlin"


def error_row(site_id: int, when: datetime, session: int, name: str, message: str, stack: str, line: int) -> dict:
    return {
        "site_id": site_id,
        "timestamp": when,
        "session_id": f"s{session}",
        "user_id": f"u{session}",
        "hostname": "shop.example.com",
        "pathname": "/checkout" if name == "TypeError" else "/",
        "browser": "Chrome",
        "browser_version": "140",
        "operating_system": "Windows",
        "device_type": "Desktop",
        "country": "DE",
        "type": "error",
        "event_name": name,
        "props": json.dumps(
            {
                "message": message,
                "stack": stack,
                "fileName": "https://shop.example.com/app.js",
                "lineNumber": line,
                "columnNumber": 3,
            }
        ),
    }


def load_events(services, site_id: int) -> list[dict]:
    """25 TypeErrors over 5 sessions (days 2 and 5) and 2 hostile ReferenceErrors in one session (day 6)."""
    rows = []
    start = datetime(2026, 3, 2, 9, 0)
    for i in range(25):
        when = start + timedelta(days=3 * (i % 2), minutes=i)
        stack = f"TypeError: {TYPE_ERROR}\n    at total (https://shop.example.com/app.js:{100 + i}:3)"
        rows.append(error_row(site_id, when, i % 5, "TypeError", TYPE_ERROR, stack, 100 + i))
    for i in range(2):
        rows.append(
            error_row(site_id, datetime(2026, 3, 6, 22, 30 + i), 9, "ReferenceError", HOSTILE, HOSTILE_STACK, 7)
        )
    # Page views of the same sessions: not errors, must not count.
    rows += [
        {"site_id": site_id, "timestamp": datetime(2026, 3, 2, 8, 59), "session_id": f"s{n}", "type": "pageview"}
        for n in range(10)
    ]
    services.events.append(rows_to_table(rows))
    return rows


def plotted_points(dash_duo) -> list:
    return dash_duo.driver.execute_script(
        "var g = document.querySelector('#errors-chart .js-plotly-plot');return g && g.data ? g.data[0].y : null;"
    )


def test_dash_errors001_groups_open_stack_and_bucket(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com", track_errors=True)
    rows = load_events(services, site.site_id)
    # The truth, counted straight from the rows loaded.
    errors = [r for r in rows if r["type"] == "error"]
    occurrences = Counter(json.loads(r["props"])["message"] for r in errors)
    sessions = {
        m: len({r["session_id"] for r in errors if json.loads(r["props"])["message"] == m}) for m in occurrences
    }
    share = {m: f"{occurrences[m] * 100 / len(errors):.1f}%" for m in occurrences}

    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    dash_duo.driver.get(f"{dash_duo.server_url}/errors?site={site.site_id}&{RANGE}")
    dash_duo.wait_for_element(".error-group[data-index='1']", timeout=15)

    groups = dash_duo.driver.find_elements(By.CSS_SELECTOR, "button.error-group")
    first, second = groups
    assert first.find_element(By.CSS_SELECTOR, ".error-class").text == "TypeError"
    assert first.find_element(By.CSS_SELECTOR, ".error-message").text == TYPE_ERROR
    assert first.find_element(By.CSS_SELECTOR, ".error-group-count").text == str(occurrences[TYPE_ERROR])
    assert first.find_element(By.CSS_SELECTOR, ".error-group-sessions").text == str(sessions[TYPE_ERROR])
    assert share[TYPE_ERROR] in first.find_element(By.CSS_SELECTOR, ".error-group-share").text
    # The hostile message is shown as the characters it is, and no script element came from it.
    assert second.find_element(By.CSS_SELECTOR, ".error-message").text == HOSTILE
    assert second.find_element(By.CSS_SELECTOR, ".error-group-count").text == str(occurrences[HOSTILE])
    assert found_now(dash_duo, ".error-message script") == []
    # Each group has a sparkline (loaded once the list is shown): one bar per day of the 7-day range.
    bars = wait_until(
        lambda: (found := first.find_elements(By.CSS_SELECTOR, ".spark-bar")) and len(found) == 7 and found
    )
    assert "spark-bar-empty" in bars[0].get_attribute("class")
    dash_duo.driver.save_screenshot(str(output_dir / "errors.png"))

    # Open the hostile group: its chart, its occurrences and the stack as text in a monospace block.
    second.click()
    dash_duo.wait_for_element("pre.stack-trace", timeout=15)
    assert "error=" in dash_duo.driver.current_url
    stacks = dash_duo.driver.find_elements(By.CSS_SELECTOR, "pre.stack-trace")
    assert len(stacks) == occurrences[HOSTILE]
    assert stacks[0].text == HOSTILE_STACK
    assert found_now(dash_duo, "pre.stack-trace b") == []
    times = [e.text for e in dash_duo.driver.find_elements(By.CSS_SELECTOR, ".occurrence-time")]
    # 22:31 and 22:30 UTC on 6 March are 23:31 and 23:30 in Berlin (CET), newest first.
    assert times == ["2026-03-06 23:31:00 CET", "2026-03-06 23:30:00 CET"]
    assert "https://shop.example.com/app.js:7:3" in dash_duo.find_element(".occurrence-location").text
    wait_until(lambda: plotted_points(dash_duo))
    assert plotted_points(dash_duo) == [0, 0, 0, 0, 0, 2, 0]  # day buckets in Berlin: both on 6 March

    # Switch the bucket to hours: 7 days x 24 hours, the two errors in the 23:00 hour of 6 March.
    dash_duo.select_dcc_dropdown("#errors-bucket", "Hour")
    points = wait_until(lambda: (p := plotted_points(dash_duo)) and len(p) == 168 and p)
    assert sum(points) == 2 and points[5 * 24 + 23] == 2
    assert parse_qs(urlparse(dash_duo.driver.current_url).query)["bucket"] == ["hour"]
    dash_duo.driver.execute_script("document.querySelector('.errors-detail').scrollIntoView()")
    dash_duo.driver.save_screenshot(str(output_dir / "errors-detail.png"))
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []


def test_dash_errors002_filtered_groups_csv_and_occurrence_pages(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com", track_errors=False)
    load_events(services, site.site_id)
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    # A page filter applies to the error events themselves: only the checkout errors remain.
    only_checkout = quote(json.dumps([{"parameter": "pathname", "type": "equals", "value": ["/checkout"]}]))
    dash_duo.driver.get(f"{dash_duo.server_url}/errors?site={site.site_id}&{RANGE}&filters={only_checkout}")
    dash_duo.wait_for_element(".error-group[data-index='0']", timeout=15)
    assert len(dash_duo.driver.find_elements(By.CSS_SELECTOR, "button.error-group")) == 1
    assert dash_duo.find_element("button.error-group .error-group-share").text.startswith("100.0%")
    # Error tracking is off for this site: the page says so and links to the switch.
    dash_duo.wait_for_contains_text(".errors-tracking-off", "Error tracking is off", timeout=10)

    # The groups CSV holds what the page shows, filters applied.
    click(dash_duo, "#errors-groups-csv")
    csv_path = Path(dash_duo.download_path)
    files = wait_until(lambda: [f for f in csv_path.glob("*.csv") if f.stat().st_size > 0])
    frame = pd.read_csv(files[0])
    assert frame[["error_name", "message", "occurrences", "sessions"]].values.tolist() == [
        ["TypeError", TYPE_ERROR, 25, 5]
    ]

    click(dash_duo, ".error-group[data-index='0']")
    dash_duo.wait_for_text_to_equal(".occurrences-count", "1–20 of 25", timeout=15)
    assert len(dash_duo.driver.find_elements(By.CSS_SELECTOR, ".occurrence")) == 20
    click(dash_duo, "#errors-occurrences-next")
    dash_duo.wait_for_text_to_equal(".occurrences-count", "21–25 of 25", timeout=15)
    assert len(dash_duo.driver.find_elements(By.CSS_SELECTOR, ".occurrence")) == 5
    assert dash_duo.find_element("#errors-occurrences-next").get_attribute("disabled") == "true"
    click(dash_duo, "#errors-occurrences-prev")
    dash_duo.wait_for_text_to_equal(".occurrences-count", "1–20 of 25", timeout=15)
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []


def bar_titles(dash_duo, index: int) -> list[str]:
    row = dash_duo.find_element(f".error-group[data-index='{index}']")
    return [bar.get_attribute("title") for bar in row.find_elements(By.CSS_SELECTOR, ".spark-bar")]


def test_dash_errors003_sparklines_follow_the_list_and_a_reopened_page_draws_it_with_its_layout(
    dash_duo, services, api_base, output_dir
):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com", track_errors=True)
    load_events(services, site.site_id)
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    url = f"{dash_duo.server_url}/errors?site={site.site_id}&{RANGE}"
    dash_duo.driver.get(url)
    dash_duo.wait_for_element(".error-group[data-index='1']", timeout=15)
    # By hand (Berlin days 1-7 March): the TypeErrors are 13 on the 2nd (even i) and 12 on the 5th (odd i);
    # the two hostile errors are on the 6th (22:30 UTC = 23:30 CET).
    type_error = wait_until(lambda: (titles := bar_titles(dash_duo, 0)) and len(titles) == 7 and titles)
    assert type_error[1] == "2026-03-02 00:00: 13" and type_error[4] == "2026-03-05 00:00: 12"
    assert sum(int(t.rsplit(": ", 1)[1]) for t in type_error) == 25
    hostile = wait_until(lambda: (titles := bar_titles(dash_duo, 1)) and len(titles) == 7 and titles)
    assert hostile[5] == "2026-03-06 00:00: 2" and sum(int(t.rsplit(": ", 1)[1]) for t in hostile) == 2
    # Sessions s0..s9 (page views; the error sessions s0-s4 and s9 are among them).
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "10", timeout=10)
    first = settled(dash_duo)

    # Opened again: list and strip come with the page's layout, the sparklines (cached) right after.
    dash_duo.driver.get(url)
    dash_duo.wait_for_element(".error-group[data-index='1']", timeout=10)
    assert dash_duo.find_element("#frame-overview-sessions").text == "10"
    wait_until(lambda: bar_titles(dash_duo, 0) == type_error and bar_titles(dash_duo, 1) == hostile)
    # The navbar, the page and the sparklines; the first view also loaded the list and the strip by callbacks.
    again = settled(dash_duo, at_least=3)
    assert again == 3 and first > again, (first, again)
    assert "Choose an error group" in dash_duo.find_element("#errors-detail").text
    dash_duo.driver.save_screenshot(str(output_dir / "errors-reopened.png"))
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []


def pager_state(dash_duo) -> tuple[str, str, bool, bool]:
    """The groups pager: its label, its total, and whether Previous / Next are live links."""
    pager = dash_duo.find_element("#errors-groups .pager")

    def live(name: str) -> bool:
        element = pager.find_element(By.CSS_SELECTOR, f".{name}")
        disabled = "disabled" in element.get_attribute("class").split()
        assert disabled == (element.get_attribute("aria-disabled") == "true")
        assert (element.tag_name == "a") != disabled, (name, element.tag_name)
        return not disabled

    label = pager.find_element(By.CSS_SELECTOR, ".pager-label").text
    total = pager.find_element(By.CSS_SELECTOR, ".pager-total").text
    return label, total, live("pager-prev"), live("pager-next")


def shown_messages(dash_duo) -> list[str]:
    return [e.text for e in dash_duo.driver.find_elements(By.CSS_SELECTOR, "button.error-group .error-message")]


def test_dash_errors004_groups_pager_counts_pages_and_disables_its_ends(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com", track_errors=True)
    # 23 messages, "failure NN" happening NN + 1 times (so no two groups tie), each in its own session on 3 March.
    rows = []
    for i in range(23):
        for n in range(i + 1):
            when = datetime(2026, 3, 3, 10, 0) + timedelta(minutes=n)
            rows.append(
                error_row(site.site_id, when, 100 + i, "Error", f"failure {i:02d}", f"Error: failure {i:02d}", i)
            )
    services.events.append(rows_to_table(rows))
    # The truth from the rows: groups by occurrences, most first, ten per page.
    ranked = [message for message, _ in Counter(json.loads(r["props"])["message"] for r in rows).most_common()]
    per_page = 10
    pages = -(-len(ranked) // per_page)
    assert (len(ranked), pages) == (23, 3)
    expected_total = f"{len(ranked)} error groups"

    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    dash_duo.driver.get(f"{dash_duo.server_url}/errors?site={site.site_id}&{RANGE}")
    dash_duo.wait_for_text_to_equal("#errors-groups .pager-label", f"Page 1 of {pages}", timeout=15)
    assert pager_state(dash_duo) == (f"Page 1 of {pages}", expected_total, False, True)
    assert shown_messages(dash_duo) == ranked[:per_page]

    # A middle page: both ways open.
    wait_until(lambda: len(bar_titles(dash_duo, 0)) == 7)
    before = callback_round_trips(dash_duo)
    click(dash_duo, "#errors-groups .pager-next")
    dash_duo.wait_for_text_to_equal("#errors-groups .pager-label", f"Page 2 of {pages}", timeout=15)
    wait_until(lambda: len(bar_titles(dash_duo, 0)) == 7)
    # The sparklines are the last of the page's callbacks: once they are drawn, every round trip has been made.
    fresh = settled(dash_duo) - before
    assert parse_qs(urlparse(dash_duo.driver.current_url).query)["page"] == ["2"]
    assert pager_state(dash_duo) == (f"Page 2 of {pages}", expected_total, True, True)
    wait_until(lambda: shown_messages(dash_duo) == ranked[per_page : 2 * per_page])
    dash_duo.driver.execute_script("document.querySelector('#errors-groups .pager').scrollIntoView()")
    dash_duo.driver.save_screenshot(str(output_dir / "errors-pager-middle.png"))

    # The last page: three groups left, no Next.
    click(dash_duo, "#errors-groups .pager-next")
    dash_duo.wait_for_text_to_equal("#errors-groups .pager-label", f"Page {pages} of {pages}", timeout=15)
    assert pager_state(dash_duo) == (f"Page {pages} of {pages}", expected_total, True, False)
    wait_until(lambda: shown_messages(dash_duo) == ranked[2 * per_page :])
    assert len(shown_messages(dash_duo)) == len(ranked) - 2 * per_page
    dash_duo.driver.execute_script("document.querySelector('#errors-groups .pager').scrollIntoView()")
    dash_duo.driver.save_screenshot(str(output_dir / "errors-pager-last.png"))

    # Back to the first page, whose answer is cached: drawn with the page's layout, pager included, at no extra
    # round trip.
    click(dash_duo, "#errors-groups .pager-prev")
    dash_duo.wait_for_text_to_equal("#errors-groups .pager-label", f"Page 2 of {pages}", timeout=15)
    wait_until(lambda: len(bar_titles(dash_duo, 0)) == 7)
    before = callback_round_trips(dash_duo)
    click(dash_duo, "#errors-groups .pager-prev")
    dash_duo.wait_for_text_to_equal("#errors-groups .pager-label", f"Page 1 of {pages}", timeout=15)
    wait_until(lambda: len(bar_titles(dash_duo, 0)) == 7)
    cached = settled(dash_duo) - before
    # The navbar, the page and the sparklines; a page not yet cached also loaded its list by a callback.
    assert (fresh, cached) == (4, 3)
    assert pager_state(dash_duo) == (f"Page 1 of {pages}", expected_total, False, True)
    assert shown_messages(dash_duo) == ranked[:per_page]
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []


def test_dash_errors005_opening_a_group_redraws_only_the_detail_and_scrolls_to_it(
    dash_duo, services, api_base, output_dir
):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com", track_errors=True)
    load_events(services, site.site_id)
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    dash_duo.driver.get(f"{dash_duo.server_url}/errors?site={site.site_id}&{RANGE}")
    dash_duo.wait_for_element(".error-group[data-index='1']", timeout=15)
    wait_until(lambda: len(bar_titles(dash_duo, 1)) == 7)
    screenshots(dash_duo, output_dir, "errors-list")
    # Mark the list's elements: a page redraw would replace them (and the marks with them).
    dash_duo.driver.execute_script(
        "document.querySelector('#errors-groups .error-groups').dataset.mark = 'kept';"
        "document.querySelectorAll('.spark-bar').forEach(function (b) { b.dataset.mark = 'kept'; });"
    )
    bars = len(dash_duo.driver.find_elements(By.CSS_SELECTOR, ".spark-bar"))
    before = callback_round_trips(dash_duo)

    click(dash_duo, ".error-group[data-index='1']")
    dash_duo.wait_for_text_to_equal("#errors-detail .error-detail-message", HOSTILE, timeout=15)
    dash_duo.wait_for_element("#errors-occurrences .occurrence", timeout=10)
    assert parse_qs(urlparse(dash_duo.driver.current_url).query)["error"] == [HOSTILE]
    # The list, its sparklines and the row's mark stayed; the chosen row is marked as chosen.
    assert dash_duo.find_element("#errors-groups .error-groups").get_attribute("data-mark") == "kept"
    kept = dash_duo.driver.find_elements(By.CSS_SELECTOR, ".spark-bar[data-mark='kept']")
    assert len(kept) == bars == 14
    assert "error-group-selected" in dash_duo.find_element(".error-group[data-index='1']").get_attribute("class")
    assert "error-group-selected" not in dash_duo.find_element(".error-group[data-index='0']").get_attribute("class")
    # One round trip draws the detail with its first occurrences.
    assert callback_round_trips(dash_duo) - before == 1
    # The detail is on screen: its top is inside the window.
    wait_until(
        lambda: dash_duo.driver.execute_script(
            "var top = document.getElementById('errors-detail').getBoundingClientRect().top;"
            "return top >= 0 && top < window.innerHeight / 2;"
        ),
        message="the detail did not come into view",
    )
    screenshots(dash_duo, output_dir, "errors-opened")

    # Another group: the detail follows, and the URL with it.
    click(dash_duo, ".error-group[data-index='0']")
    dash_duo.wait_for_text_to_equal("#errors-detail .error-detail-message", TYPE_ERROR, timeout=15)
    dash_duo.wait_for_text_to_equal(".occurrences-count", "1–20 of 25", timeout=15)
    assert parse_qs(urlparse(dash_duo.driver.current_url).query)["error"] == [TYPE_ERROR]
    # Back goes to the previous group, drawn by the page from its URL.
    dash_duo.driver.back()
    dash_duo.wait_for_text_to_equal("#errors-detail .error-detail-message", HOSTILE, timeout=15)
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []
