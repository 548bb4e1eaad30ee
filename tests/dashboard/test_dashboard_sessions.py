"""Browser test of the sessions screens: the list, a session's timeline (with an error's stack), a user's profile,
and a goal session opening the same timeline."""

from __future__ import annotations

import json
from datetime import timedelta

from api_backend.store.events import rows_to_table
from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import make_account, make_site
from tests.support.dashboard import found_now, sign_in
from tests.support.dashboard_data import demo_rows

STACK = "TypeError: x is undefined\n    at pay (https://shop.example.com/app.js:10:5)"


def seed(services, site_id: int) -> None:
    """The demo events, sessions s00 and s03 identified as "alice", and an error with a stack late in s00."""
    rows = demo_rows(site_id)
    for row in rows:
        row["identified_user_id"] = "alice" if row["session_id"] in ("s00", "s03") else ""
    first = next(r for r in rows if r["session_id"] == "s00")
    error = dict(first, type="error", pathname="/pricing", event_name="TypeError")
    error["timestamp"] = first["timestamp"] + timedelta(seconds=80)
    error["props"] = json.dumps({"message": "x is undefined", "stack": STACK})
    services.events.append(rows_to_table([*rows, error]))


def test_dash_sessions001_list_timeline_user(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    seed(services, site.site_id)
    goal = services.metadata.create_goal(site.site_id, "Pricing", "path", {"pathPattern": "/pricing"})
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    dash_duo.driver.set_window_size(1440, 1000)

    dash_duo.driver.get(f"{dash_duo.server_url}/sessions?site={site.site_id}&time_zone=UTC")
    dash_duo.wait_for_contains_text("#sessions-body", "10 sessions, most recently active first", timeout=15)
    users = [c.text for c in dash_duo.find_elements("#sessions-table td[data-dash-column='user']")]
    assert sorted(users) == ["alice", "alice"] + [f"u{n:02d}" for n in (1, 2, 4, 5, 6, 7, 8, 9)]
    assert users[0] == "alice"  # s00 ends last: its error came 80 s and its signup 90 s after it began
    # Only an identified user has a profile: "alice" is a link, a visitor id is plain text.
    linked = [a.text for a in dash_duo.find_elements("#sessions-table td[data-dash-column='user'] a")]
    assert linked == ["alice", "alice"], linked
    # Ordered by the last event, so the time shows both ends: s00 from its first page to its signup 90 s later.
    s00 = sorted(r["timestamp"] for r in demo_rows(site.site_id) if r["session_id"] == "s00")
    header = dash_duo.find_elements("#sessions-table th[data-dash-column='started']")[0].text
    first_time = dash_duo.find_elements("#sessions-table td[data-dash-column='started']")[0].text
    assert header == "Active (UTC) ↓" and first_time == f"{s00[0]:%Y-%m-%d %H:%M} – {s00[-1]:%H:%M}", first_time
    dash_duo.driver.save_screenshot(str(output_dir / "sessions-1440.png"))
    dash_duo.driver.set_window_size(390, 1000)
    dash_duo.driver.save_screenshot(str(output_dir / "sessions-390.png"))
    dash_duo.driver.set_window_size(1440, 1000)

    # Its timeline: two pages with their time on page, the signup with its properties, the error with its stack.
    dash_duo.find_elements("#sessions-table td[data-dash-column='started'] a")[0].click()
    dash_duo.wait_for_element("#session-timeline", timeout=15)
    items = [li.text for li in dash_duo.find_elements("#session-timeline li")]
    assert len(items) == 4
    assert "/" in items[0] and "time on page 1m 05s" in items[0]
    assert "/pricing" in items[1] and "time on page 25s" in items[1]
    assert "TypeError: x is undefined" in items[2] and "at pay (https://shop.example.com/app.js:10:5)" in items[2]
    assert "signup" in items[3] and '"plan": "pro"' in items[3]
    dash_duo.driver.save_screenshot(str(output_dir / "session-timeline-1440.png"))
    dash_duo.driver.set_window_size(390, 1400)
    dash_duo.driver.save_screenshot(str(output_dir / "session-timeline-390.png"))
    dash_duo.driver.set_window_size(1440, 1000)

    # The user's profile lists all their sessions: s00 (2 pages, 4 events) and s03 (1 page).
    dash_duo.find_element("#session-body a[href*='/users/alice']").click()
    dash_duo.wait_for_element("#user-facts", timeout=15)
    facts = dash_duo.find_element("#user-facts").text.upper()  # the labels are set in capitals
    assert "SESSIONS\n2" in facts and "PAGEVIEWS\n3" in facts and "EVENTS\n5" in facts
    assert len(dash_duo.find_elements("#user-sessions-table td[data-dash-column='started'] a")) == 2
    dash_duo.driver.save_screenshot(str(output_dir / "user-1440.png"))

    # An anonymous visitor's session offers no profile to open.
    dash_duo.driver.get(f"{dash_duo.server_url}/sessions/s01?site={site.site_id}&time_zone=UTC")
    dash_duo.wait_for_element("#session-timeline", timeout=15)
    assert found_now(dash_duo, "#session-body a[href*='/users/']") == []

    # A goal session opens the same timeline.
    dash_duo.driver.get(f"{dash_duo.server_url}/goal-sessions?site={site.site_id}&goal={goal.goal_id}&time_zone=UTC")
    dash_duo.wait_for_element("#goal-sessions-table td[data-dash-column='session_start'] a", timeout=15)
    dash_duo.find_elements("#goal-sessions-table td[data-dash-column='session_start'] a")[0].click()
    dash_duo.wait_for_element("#session-timeline li", timeout=15)
    assert "/sessions/s" in dash_duo.driver.current_url
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []
