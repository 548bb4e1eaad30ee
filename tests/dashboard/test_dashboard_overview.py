"""Browser tests of the overview strip: a change only against a fair previous period, no verdict while loading, and
the same change on every page and in a private link as on the overview page."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from selenium.webdriver.support.ui import WebDriverWait

from api_backend.store.events import rows_to_table
from api_client import AnalyticsAPI
from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from tests.support import make_account, make_site
from tests.support.dashboard import CHART_IN_ITS_BOX, screenshots, sign_in

# Zones without daylight saving whose offsets leave at most 5.5 hours between them around the clock: one of them
# always has its local time within 2.75 hours of noon.
FIXED_ZONES = ("Asia/Tokyo", "Asia/Kolkata", "UTC", "America/Sao_Paulo", "America/Phoenix", "Pacific/Honolulu")

# Recorded from the first byte of every document: any text the strip's change lines ever showed.
WATCH_CHANGES = """
window.__changes = [];
new MutationObserver(function () {
  document.querySelectorAll('.stat-change').forEach(function (el) {
    if (window.__changes.indexOf(el.textContent) < 0) { window.__changes.push(el.textContent); }
  });
}).observe(document, {childList: true, subtree: true, characterData: true});
"""


def local_sessions(site_id: int, count: int, day: datetime, prefix: str) -> list[dict]:
    """``count`` one-page sessions a minute apart from ``day`` (an aware local time), stored in UTC."""
    return [
        {
            "site_id": site_id,
            "timestamp": (day + timedelta(minutes=i)).astimezone(UTC).replace(tzinfo=None),
            "session_id": f"{prefix}{i}",
            "user_id": f"{prefix}{i}",
            "pathname": "/",
            "type": "pageview",
        }
        for i in range(count)
    ]


def sessions(site_id: int, count: int, days_ago: int, prefix: str) -> list[dict]:
    """``count`` one-page sessions around ``days_ago`` days before today, midday UTC."""
    day = (datetime.now(UTC) - timedelta(days=days_ago)).replace(hour=12, minute=0, second=0, microsecond=0)
    return local_sessions(site_id, count, day, prefix)


def test_dash_overview001_fair_thin_and_loading(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    fair = make_site(services, owner, "fair.example.com")
    thin = make_site(services, owner, "thin.example.com")
    # Fair: 60 sessions now, 40 in the 30 days before (+50.0%). Thin: 60 now, 2 before.
    services.events.append(
        rows_to_table(
            sessions(fair.site_id, 60, 3, "n")
            + sessions(fair.site_id, 40, 40, "p")
            + sessions(thin.site_id, 60, 3, "n")
            + sessions(thin.site_id, 2, 40, "p")
        )
    )
    dash_duo.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH_CHANGES})
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")

    dash_duo.driver.get(f"{dash_duo.server_url}/goals?site={fair.site_id}&time_zone=UTC")
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "60", timeout=15)
    dash_duo.wait_for_text_to_equal(".stat-change", "+50.0%", timeout=10)
    seen = dash_duo.driver.execute_script("return window.__changes")
    # While the numbers loaded, the tiles said nothing about earlier data.
    assert not [text for text in seen if "earlier data" in text], seen
    screenshots(dash_duo, output_dir, "overview-fair")

    dash_duo.driver.get(f"{dash_duo.server_url}/goals?site={thin.site_id}&time_zone=UTC")
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "60", timeout=15)
    dash_duo.wait_for_text_to_equal(".stat-change", "too little earlier data (2 sessions)", timeout=10)
    assert "%" not in " ".join(e.text for e in dash_duo.find_elements(".stat-change"))
    screenshots(dash_duo, output_dir, "overview-thin")
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []


def test_dash_overview002_every_page_compares_with_the_same_previous_period(dash_duo, services, api_base, output_dir):
    # A range ending today ends now, and its previous period ends 30 days before now, not at the end of that day.
    # The zone is the one where it is nearest noon, so "later that day" exists whenever the test runs.
    now = datetime.now(UTC)
    zone = min(FIXED_ZONES, key=lambda z: abs(now.astimezone(ZoneInfo(z)).hour - 12))
    local = ZoneInfo(zone)
    today = now.astimezone(local).date()

    def at(days_ago: int, hour: int) -> datetime:
        return datetime.combine(today - timedelta(days=days_ago), time(hour), tzinfo=local)

    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    # 60 sessions now; 40 earlier in the previous period; 20 on its last day, after this time of day: outside it.
    services.events.append(
        rows_to_table(
            local_sessions(site.site_id, 60, at(3, 10), "n")
            + local_sessions(site.site_id, 40, at(40, 10), "p")
            + local_sessions(site.site_id, 20, at(30, 23), "late")
        )
    )
    assert at(30, 23) > now.astimezone(local) - timedelta(days=30)
    key = AnalyticsAPI(api_base + "/api", token=owner.api_key).generate_private_link(site.site_id)
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")

    # The overview page: 60 against 40 visits and visitors, +50.0%.
    dash_duo.driver.get(f"{dash_duo.server_url}/overview?site={site.site_id}&time_zone={zone}")
    dash_duo.wait_for_text_to_equal("#overview-sessions", "60", timeout=15)
    dash_duo.wait_for_text_to_equal("#overview-sessions-change", "+50.0%", timeout=10)
    assert dash_duo.find_element("#overview-users-change").text == "+50.0%"

    # The strip of another page says the same, not 0% against the whole of that last day.
    dash_duo.driver.get(f"{dash_duo.server_url}/goals?site={site.site_id}&time_zone={zone}")
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "60", timeout=15)
    dash_duo.wait_for_text_to_equal(".stat-change", "+50.0%", timeout=10)
    changes = [e.text for e in dash_duo.find_elements(".stat-change")]
    assert changes[:3] == ["+50.0%", "+50.0%", "+50.0%"], changes  # sessions, pageviews, users
    screenshots(dash_duo, output_dir, "overview-same-previous")

    # And so does a private link's.
    dash_duo.driver.get(f"{dash_duo.server_url}/share/{site.site_id}?time_zone={zone}#{key}")
    dash_duo.wait_for_text_to_equal("#frame-overview-sessions", "60", timeout=15)
    dash_duo.wait_for_text_to_equal(".stat-change", "+50.0%", timeout=10)
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []


# The x values of the chart's last trace (this period's), once the chart has data.
CHART_X = """
var plot = document.querySelector('#overview-chart .js-plotly-plot');
if (!plot || !plot.data || !plot.data.length) { return null; }
var x = plot.data[plot.data.length - 1].x;
return x && x.length ? Array.from(x) : null;
"""


def test_dash_overview003_chart_buckets_on_the_zones_dates(dash_duo, services, api_base):
    # Tokyo's days begin at 15:00 UTC the day before: the chart places each bucket on its own local date.
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    local = ZoneInfo("Asia/Tokyo")
    today = datetime.now(UTC).astimezone(local).date()
    first, last = today - timedelta(days=10), today - timedelta(days=4)
    services.events.append(
        rows_to_table(local_sessions(site.site_id, 3, datetime.combine(first, time(9), tzinfo=local), "t"))
    )
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    dash_duo.driver.get(
        f"{dash_duo.server_url}/overview?site={site.site_id}&start_date={first}&end_date={last}&time_zone=Asia/Tokyo"
    )
    dash_duo.wait_for_text_to_equal("#overview-sessions", "3", timeout=15)
    x = WebDriverWait(dash_duo.driver, 15).until(lambda driver: driver.execute_script(CHART_X))
    assert x == [f"{first + timedelta(days=i)}T00:00:00" for i in range(7)], x


CHART_TRACES = """
var plot = document.querySelector('#overview-chart .js-plotly-plot');
if (!plot || !plot.data || plot.data.length < 3) { return null; }
return {
  traces: plot.data.map(function (t) { return [t.name || '', t.mode, Array.from(t.y)]; }),
  ticks: Array.from(plot.layout.xaxis.ticktext || [])
};
"""


def test_dash_overview004_weeks_cut_by_the_range_read_with_their_dates(dash_duo, services, api_base, output_dir):
    # From a Wednesday to a Friday three weeks later: the first and last weeks hold only part of their days.
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    today = datetime.now(UTC).date()
    first = today - timedelta(days=42 + (today.weekday() - 2) % 7)  # a Wednesday, six weeks back or more
    last = first + timedelta(days=23)  # a Friday
    monday = first - timedelta(days=2)
    utc = ZoneInfo("UTC")
    for week, count in enumerate((2, 5, 6, 1)):  # the first and last weeks' sessions on days inside the range
        day = max(monday + timedelta(days=7 * week), first)
        rows = local_sessions(site.site_id, count, datetime.combine(day, time(10), tzinfo=utc), f"w{week}-")
        services.events.append(rows_to_table(rows))
    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    dash_duo.driver.get(
        f"{dash_duo.server_url}/overview?site={site.site_id}&start_date={first}&end_date={last}&time_zone=UTC"
        "&bucket=week"
    )
    dash_duo.wait_for_text_to_equal("#overview-sessions", "14", timeout=15)
    chart = WebDriverWait(dash_duo.driver, 15).until(lambda driver: driver.execute_script(CHART_TRACES))
    mondays = [monday + timedelta(days=7 * i) for i in range(4)]
    assert chart["ticks"] == [f"{d:%b} {d.day}" for d in mondays], chart
    named = {name: (mode, y) for name, mode, y in chart["traces"]}
    assert named["Users"] == ("lines+markers", [5, 6]), chart  # the two whole weeks, solid
    assert named[f"Users from {first:%b} {first.day}"] == ("markers", [2]), chart
    assert named[f"Users to {last:%b} {last.day}"] == ("markers", [1]), chart
    dotted = [y for name, mode, y in chart["traces"] if not name and mode == "lines"]
    assert sorted(dotted) == [[2, 5], [6, 1]], chart
    screenshots(dash_duo, output_dir, "overview-cut-weeks")

    # Narrowed to a phone's width, the chart redraws inside its card, which keeps the chart's height: a box of 0 px
    # would leave the chart drawn over the panels below.
    dash_duo.driver.set_window_size(390, dash_duo.driver.get_window_size()["height"])
    WebDriverWait(dash_duo.driver, 15).until(
        lambda driver: driver.execute_script(CHART_IN_ITS_BOX, "#overview-chart", 270)
    )
