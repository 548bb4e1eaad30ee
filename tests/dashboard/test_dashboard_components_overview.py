"""The overview, sessions and funnel factories as data, without a browser."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

from api_client import Overview
from dashboard.components import frame
from dashboard.components import funnels as funnel_ui
from dashboard.components import overview as ui
from dashboard.components import sessions as sessions_ui
from dashboard.components import sites as sites_ui
from dashboard.components.common import RangeEnds


def test_components_overview001_change_words_for_thin_or_empty_earlier_periods():
    now = Overview(sessions=40, pageviews=80, users=30, bounce_rate=50.0)
    assert ui.change_text("sessions", 40, 0, 40, None) == ("", "none")  # still loading: nothing yet
    assert ui.change_text("sessions", 40, 0, 40, 0) == ("no earlier data", "none")
    # The same rule as every page's overview strip: at least 30 earlier sessions, and a tenth of this range's.
    assert ui.change_text("sessions", 40, 29, 40, 29) == ("too little earlier data (29 sessions)", "none")
    assert ui.change_text("sessions", 400, 30, 400, 30) == ("too little earlier data (30 sessions)", "none")
    assert ui.change_text("sessions", 300, 30, 300, 30) == ("+900.0%", "up")
    assert ui.change_text("bounce_rate", 50.0, 40.0, 40, 30) == ("+10.0 pts", "up")
    thin = json.dumps(
        ui.headline_tiles(now, Overview(sessions=20, pageviews=40, users=15, bounce_rate=40.0)).to_plotly_json(),
        default=str,
    )
    assert "overview-loaded" in thin and "too little earlier data (20 sessions)" in thin and "+100.0%" not in thin
    fair = json.dumps(
        ui.headline_tiles(now, Overview(sessions=32, pageviews=40, users=15, bounce_rate=40.0)).to_plotly_json(),
        default=str,
    )
    assert "+25.0%" in fair and "+100.0%" in fair and "+10.0 pts" in fair
    assert "overview-loaded" not in json.dumps(ui.headline_tiles().to_plotly_json(), default=str)


def test_components_overview001b_tiles_name_figures_as_every_page_strip_does():
    """The overview's tiles and the strip above every other page show the same numbers under the same names, in the
    same order (the strip leaves out pages per session)."""
    strip = [(key, label) for key, label, _, _ in frame.OVERVIEW_METRICS]
    tiles = [(key, label) for key, label, _, _ in ui.HEADLINES]
    assert [tile for tile in tiles if tile[0] != "pages_per_session"] == strip
    rows = repr(ui.panel_rows("pathname", [{"value": "/", "count": 3, "percentage": 100.0}]))
    assert "children='Sessions'" in rows and "title='Show only sessions with this value'" in rows


def test_components_overview002_buckets_countries_and_rows():
    assert [ui.default_bucket(d) for d in (1, 2, 7, 90, 91, 365, 400)] == [
        "hour",
        "hour",
        "day",
        "day",
        "week",
        "week",
        "month",
    ]
    assert ui.row_label("country", "DE") == "🇩🇪 Germany"
    assert ui.row_label("region", "US-CA") == "🇺🇸 California, United States"
    assert ui.row_label("country", "") == "(none)" and ui.row_label("region", "QQ-1") == "QQ-1"
    assert ui.row_label("channel", "") == "Direct" and ui.row_label("pathname", "") == "(none)"
    rows = [{"value": "/", "count": 3, "percentage": 75.0}]
    clickable = json.dumps(ui.panel_rows("pathname", rows).to_plotly_json(), default=str)
    assert "'type': 'overview-row'" in clickable  # a button that adds the filter
    assert "'type': 'overview-row'" not in json.dumps(
        ui.panel_rows("pathname", rows, clickable=False).to_plotly_json(), default=str
    )


def test_components_overview003_funnel_steps_and_snippet():
    steps = funnel_ui.steps_of(
        ["page", "event", "event"], [" /a ", "signup", "buy"], ["", "plan", "plan"], ["", "pro", ""]
    )
    assert steps == [
        {"type": "page", "value": "/a"},
        {"type": "event", "value": "signup", "eventPropertyKey": "plan", "eventPropertyValue": "pro"},
        {"type": "event", "value": "buy"},  # a key without a value is no condition
    ]
    assert sites_ui.tracking_snippet("https://a.example/api", 7) == (
        '<script defer src="https://a.example/api/script.js" data-site-id="7"></script>'
    )


def test_components_overview_sites_spark_partial_hours_dotted():
    """The last 24 hours begin and end inside an hour: the lines into those two hours are dotted."""
    series = [{"users": n} for n in (4, 9, 8, 10, 1)]
    graph = sites_ui.site_stats({"users": 25}, series).children[1]
    lines = [t for t in graph.figure.data if t.line.width]
    assert [(list(t.x), t.line.dash) for t in lines] == [([1, 2, 3], None), ([0, 1], "dot"), ([3, 4], "dot")]
    assert list(graph.figure.data[0].y) == [4, 9, 8, 10, 1]  # the filled area covers every hour
    short = sites_ui.site_stats({"users": 3}, [{"users": 3}]).children[1]
    assert [list(t.x) for t in short.figure.data if t.line.width] == [[0]]


def test_components_overview_series_last_bucket_still_filling():
    """A range ending now draws the line into its last bucket dotted, and that value reads "so far"."""
    current = [{"time": f"2026-03-0{d}", "users": n} for d, n in ((1, 40), (2, 44), (3, 7))]
    previous = [{"time": f"2026-02-2{d}", "users": n} for d, n in ((6, 38), (7, 41), (8, 9))]
    closed = ui.series_figure(current, previous, "users", "day")
    assert [(t.name, list(t.y)) for t in closed.data] == [
        ("Previous period", [38, 41, 9]),
        ("Users", [40, 44, 7]),
    ]
    filling = ui.series_figure(current, previous, "users", "day", ends=RangeEnds(ends_now=True))
    solid, dotted, last = filling.data[1:]
    assert (list(solid.y), solid.line.dash) == ([40, 44], None)
    assert ([str(x) for x in dotted.x], dotted.line.dash, dotted.hoverinfo) == (
        ["2026-03-02 00:00:00", "2026-03-03 00:00:00"],
        "dot",
        "skip",
    )
    assert (list(last.y), last.hovertemplate) == ([7], "%{y} so far<extra></extra>")
    assert not dotted.showlegend and not last.showlegend
    one = ui.series_figure(current[:1], [], "users", "day", ends=RangeEnds(ends_now=True))
    assert [list(t.y) for t in one.data] == [[40]]  # a single bucket: nothing to join, drawn as it is


def test_components_overview_series_weeks_cut_by_the_range():
    """Weeks the range holds only part of, at both ends, are joined by dotted lines and read with their dates."""
    current = [{"time": f"2026-11-{d:02d}T00:00:00Z", "users": n} for d, n in ((2, 30), (9, 70), (16, 72), (23, 40))]
    figure = ui.series_figure(current, [], "users", "week", ends=RangeEnds(date(2026, 11, 4), date(2026, 11, 27)))
    solid, dotted_last, last, dotted_first, first = figure.data
    assert (list(solid.y), solid.line.dash) == ([70, 72], None)
    assert (list(dotted_last.y), dotted_last.line.dash) == ([72, 40], "dot")
    assert (list(dotted_first.y), dotted_first.line.dash) == ([30, 70], "dot")
    assert (list(last.y), last.hovertemplate) == ([40], "%{y} to Nov 27<extra></extra>")
    assert (list(first.y), first.hovertemplate) == ([30], "%{y} from Nov 4<extra></extra>")
    # Two buckets, both partial: one dotted line between them, and each value with its note.
    two = ui.series_figure(current[2:], [], "users", "week", ends=RangeEnds(date(2026, 11, 18), date(2026, 11, 25)))
    assert [(t.mode, list(t.y)) for t in two.data] == [
        ("lines+markers", []),
        ("lines", [72, 40]),
        ("markers", [40]),
        ("markers", [72]),
    ]


def test_components_overview_series_previous_period_dates_read_with_their_cut_buckets():
    """The previous period's weeks are cut by its own first and last days: its dates say so on hover."""
    current = [{"time": f"2026-11-{d:02d}T00:00:00Z", "users": n} for d, n in ((2, 30), (9, 70), (16, 72), (23, 40))]
    previous = [{"time": f"2026-10-{d:02d}T00:00:00Z", "users": n} for d, n in ((5, 9), (12, 60), (19, 66), (26, 64))]
    previous.append({"time": "2026-11-02T00:00:00Z", "users": 20})
    figure = ui.series_figure(current, previous, "users", "week", ends=RangeEnds(date(2026, 11, 4), date(2026, 11, 27)))
    assert list(figure.data[0].customdata) == [
        "2026-10-05 (from Oct 11)",
        "2026-10-12",
        "2026-10-19",
        "2026-10-26",
        "2026-11-02 (to Nov 3)",
    ]
    # A range ending now is compared with the same days before, up to the same time of day.
    days, days_before = (
        [{"time": f"2026-11-{d}T00:00:00Z", "users": 5} for d in pair] for pair in ((25, 26), (23, 24))
    )
    so_far = ui.series_figure(
        days, days_before, "users", "day", ends=RangeEnds(date(2026, 11, 25), date(2026, 11, 26), ends_now=True)
    )
    assert list(so_far.data[0].customdata) == ["2026-11-23", "2026-11-24 (to this time of day)"]


def test_components_overview_series_without_buckets():
    """An all-time range of a site with no events has no buckets: the chart is empty, not an error."""
    figure = ui.series_figure([], [], "users", "week", ends=RangeEnds(ends_now=True))
    assert [list(t.y) for t in figure.data] == [[]]


def test_components_overview_series_on_the_zones_wall_clock():
    """The API gives each bucket's start as an instant: Tokyo's days start at 15:00 UTC the day before, and the
    chart places them on their own date, as do the previous period's dates on hover."""
    current = [{"time": "2026-11-20T15:00:00Z", "users": 5}, {"time": "2026-11-21T15:00:00Z", "users": 6}]
    previous = [{"time": "2026-11-18T15:00:00Z", "users": 4}, {"time": "2026-11-19T15:00:00Z", "users": 3}]
    figure = ui.series_figure(current, previous, "users", "day", time_zone="Asia/Tokyo")
    before, now = figure.data
    assert [str(x) for x in now.x] == ["2026-11-21 00:00:00", "2026-11-22 00:00:00"]
    assert list(before.customdata) == ["2026-11-19", "2026-11-20"]
    hourly = ui.series_figure(current[:1], previous[:1], "users", "hour", time_zone="America/New_York")
    assert [str(x) for x in hourly.data[1].x] == ["2026-11-20 10:00:00"]
    assert list(hourly.data[0].customdata) == ["2026-11-18 10:00"]


def test_components_sessions_time_from_first_to_last_event():
    """The sessions list is ordered by each session's last event, so its time column shows both ends."""
    start = datetime(2026, 3, 1, 22, 50, 10, tzinfo=UTC)
    span = sessions_ui.time_span
    assert span(start, datetime(2026, 3, 1, 23, 5, tzinfo=UTC), "UTC") == "2026-03-01 22:50 – 23:05"
    assert span(start, datetime(2026, 3, 1, 22, 50, 50, tzinfo=UTC), "UTC") == "2026-03-01 22:50"  # the same minute
    # In Berlin the session crosses midnight: the end carries its own date.
    assert (
        span(start, datetime(2026, 3, 1, 23, 5, tzinfo=UTC), "Europe/Berlin") == "2026-03-01 23:50 – 2026-03-02 00:05"
    )
    assert span(start, None, "UTC") == "2026-03-01 22:50" and span(None, None, "UTC") == ""
