"""Browser test of the usage page: totals and the stacked chart match counts made straight from the loaded events."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from pathlib import Path

import pandas as pd
from selenium.webdriver.common.by import By

from api_backend.store.events import EVENT_TYPES, rows_to_table
from dashboard.app import create_dashboard
from dashboard.components.usage import USAGE_CATEGORIES
from dashboard.settings import DashboardSettings
from tests.support import make_account, wait_until
from tests.support.dashboard import click, sign_in

FIRST, LAST = date(2026, 4, 1), date(2026, 4, 5)


def random_events(site_id: int, rng: random.Random, days: list[date], count: int) -> list[dict]:
    rows = []
    for n in range(count):
        day = rng.choice(days)
        # Noon UTC is the same calendar day in UTC and in Los Angeles, so the expected day is unambiguous.
        when = datetime(day.year, day.month, day.day, 12) + timedelta(minutes=rng.randint(0, 59))
        kind = rng.choice(EVENT_TYPES)
        rows.append(
            {
                "site_id": site_id,
                "timestamp": when,
                "session_id": f"{site_id}-{n}",
                "type": kind,
                "event_name": "signup" if kind == "custom_event" else ("TypeError" if kind == "error" else ""),
            }
        )
    return rows


def test_dash_usage001_totals_and_chart_match_the_events(dash_duo, services, api_base, output_dir):
    owner = make_account(services, "owner@example.com")
    org = services.metadata.create_organization("Acme", owner.user.id)
    shop = services.metadata.create_site(org.id, owner.user.id, "shop.example.com", "shop.example.com")
    blog = services.metadata.create_site(org.id, owner.user.id, "blog.example.com", "blog.example.com")
    other_org = services.metadata.create_organization("Other", owner.user.id)
    other = services.metadata.create_site(other_org.id, owner.user.id, "other.example.com", "other.example.com")

    rng = random.Random(11)
    in_range = [FIRST + timedelta(days=i) for i in range(5) if i != 2]  # 3 April stays empty
    outside = [FIRST - timedelta(days=1), LAST + timedelta(days=1)]
    ours = random_events(shop.site_id, rng, in_range, 120) + random_events(blog.site_id, rng, in_range, 80)
    noise = random_events(shop.site_id, rng, outside, 30) + random_events(other.site_id, rng, in_range, 50)
    services.events.append(rows_to_table(ours + noise))

    # The truth, straight from the rows: counts per type over the range, for this organization's sites only.
    truth = pd.DataFrame(ours)
    per_type = truth.groupby("type").size().to_dict()
    expected = {f"{kind}_count": per_type.get(kind, 0) for kind in EVENT_TYPES}
    expected["event_count"] = len(ours)

    dash_duo.start_server(create_dashboard(DashboardSettings(api_url=api_base + "/api")))
    sign_in(dash_duo, "owner@example.com")
    search = f"org={org.id}&start_date={FIRST}&end_date={LAST}&time_zone=America/Los_Angeles"
    dash_duo.driver.get(f"{dash_duo.server_url}/usage?{search}")
    dash_duo.wait_for_element("#usage-total-event_count", timeout=15)

    for field, value in expected.items():
        assert dash_duo.find_element(f"#usage-total-{field}").text == f"{value:,}", field
    dash_duo.wait_for_element("#usage-chart .js-plotly-plot", timeout=15)
    traces = dash_duo.driver.execute_script(
        "var g = document.querySelector('#usage-chart .js-plotly-plot');"
        "return g.data.map(function (t) { return {name: t.name, x: t.x, y: t.y}; });"
    )
    assert [t["name"] for t in traces] == [label for _, label, _ in USAGE_CATEGORIES]
    assert traces[0]["x"] == [(FIRST + timedelta(days=i)).isoformat() for i in range(5)]
    daily = truth.assign(day=truth["timestamp"].dt.date.astype(str)).groupby(["type", "day"]).size()
    for (field, _, _), trace in zip(USAGE_CATEGORIES, traces, strict=True):
        kind = field.removesuffix("_count")
        assert trace["y"] == [int(daily.get((kind, x), 0)) for x in trace["x"]], field
    assert sum(traces[i]["y"][2] for i in range(9)) == 0  # the empty day is there, with nothing in it
    assert dash_duo.driver.find_elements(By.CSS_SELECTOR, ".usage-page .filter-builder")[0].is_displayed() is False
    dash_duo.driver.save_screenshot(str(output_dir / "usage.png"))

    # The CSV has one row per day of the range with the same counts.
    click(dash_duo, "#usage-csv")
    files = wait_until(lambda: [f for f in Path(dash_duo.download_path).glob("*.csv") if f.stat().st_size > 0])
    csv = pd.read_csv(files[0])
    assert csv["event_date"].tolist() == [(FIRST + timedelta(days=i)).isoformat() for i in range(5)]
    for field, value in expected.items():
        assert int(csv[field].sum()) == value, field

    # Another organization: its own numbers.
    dash_duo.select_dcc_dropdown("#usage-org", "Other")
    other_total = sum(1 for r in noise if r["site_id"] == other.site_id)
    dash_duo.wait_for_text_to_equal("#usage-total-event_count", f"{other_total:,}", timeout=15)
    assert f"org={other_org.id}" in dash_duo.driver.current_url
    assert [e for e in dash_duo.get_logs() if e["level"] == "SEVERE"] == []
