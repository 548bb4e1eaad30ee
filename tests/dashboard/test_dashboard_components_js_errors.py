"""Errors page builders, checked as component trees without a browser."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import pytest

from api_client.models import ErrorBucket, ErrorEvent, ErrorName
from dashboard.components import js_errors as comp
from dashboard.components.common import RangeEnds


def group(value="TypeError: x is undefined", name="TypeError", count=12, sessions=5, percentage=60.0):
    return ErrorName(value=value, error_name=name, count=count, session_count=sessions, percentage=percentage)


def event(**overrides):
    base = dict(
        timestamp=datetime(2026, 1, 15, 23, 30, 5, tzinfo=UTC),
        session_id="s-1",
        user_id="u-1",
        pathname="/checkout",
        hostname="shop.example.com",
        browser="Chrome",
        browser_version="140",
        operating_system="Windows",
        device_type="Desktop",
        country="DE",
        message="TypeError: x is undefined",
        stack="TypeError: x is undefined\n    at pay (app.js:10:5)",
        file_name="https://shop.example.com/app.js",
        line_number=10,
        column_number=5,
    )
    base.update(overrides)
    return ErrorEvent(**base)


def bucket(hour, count):
    return ErrorBucket(time=datetime(2026, 1, 15, hour, tzinfo=UTC), error_count=count)


def texts(component) -> list[str]:
    """Every string child in a component tree, in document order."""
    found: list[str] = []

    def walk(node):
        if isinstance(node, str):
            found.append(node)
        elif isinstance(node, (list, tuple)):
            for item in node:
                walk(item)
        elif hasattr(node, "children"):
            walk(node.children)

    walk(component)
    return found


def find(component, predicate):
    """All nodes of a tree for which ``predicate(node)`` holds."""
    out = []

    def walk(node):
        if isinstance(node, (list, tuple)):
            for item in node:
                walk(item)
        elif hasattr(node, "to_plotly_json"):
            if predicate(node):
                out.append(node)
            walk(getattr(node, "children", None))

    walk(component)
    return out


def test_group_row_shows_message_as_text_even_with_markup():
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    row = comp.error_group_row(group(value=hostile), 0, trend=None, time_zone="UTC", selected=False, row_id="r0")
    assert hostile in texts(row)
    # No node of the tree is a raw-HTML or Markdown renderer.
    serialised = json.dumps(row.to_plotly_json(), default=str)
    assert "dangerously_allow_html" not in serialised
    assert not find(row, lambda node: type(node).__name__ == "Markdown")


def test_group_row_numbers_share_bar_and_preview():
    long_message = "E" * 400
    row = comp.error_group_row(
        group(value=long_message, count=12345, sessions=678, percentage=42.25),
        3,
        trend=None,
        time_zone="UTC",
        selected=True,
        row_id={"type": "errors-group", "index": 3},
    )
    strings = texts(row)
    assert {"12,345", "678", "42.2%"} <= set(strings)
    preview = [s for s in strings if s.startswith("E")][0]
    assert len(preview) == comp.MESSAGE_PREVIEW_CHARS and preview.endswith("…")
    message_span = find(row, lambda n: getattr(n, "className", "") == "error-message")[0]
    assert message_span.title == long_message  # full text on hover
    fill = find(row, lambda n: getattr(n, "className", "") == "share-fill")[0]
    assert fill.style["width"] == "42.2%"
    assert "error-group-selected" in row.className
    assert row.id == {"type": "errors-group", "index": 3}


def test_sparkline_heights_are_proportional_and_tooltips_local():
    spark = comp.sparkline([bucket(0, 0), bucket(1, 5), bucket(2, 10)], "Europe/Paris")
    bars = spark.children
    assert [bar.style["height"] for bar in bars] == ["0%", "50%", "100%"]
    # 01:00 UTC is 02:00 in Paris in winter.
    assert bars[1].title == "2026-01-15 02:00: 5"
    assert "spark-bar-empty" in bars[0].className
    assert not [bar for bar in bars if "spark-bar-filling" in bar.className]
    # A range ending now: the last bar is still filling, paler and read "so far", in a group's row as well.
    filling = comp.group_sparkline(
        [bucket(1, 5), bucket(2, 10)], "Europe/Paris", "TypeError", ends=RangeEnds(ends_now=True)
    ).children
    assert ["spark-bar-filling" in bar.className for bar in filling] == [False, True]
    assert filling[1].title == "2026-01-15 03:00: 10 so far"
    # Over more than 92 days the trend counts weeks: those cut by the range are paler and say which days they hold.
    mondays = [
        ErrorBucket(time=datetime(2025, 10, 6, tzinfo=UTC) + timedelta(days=7 * i), error_count=4) for i in range(15)
    ]
    ranged = RangeEnds(date(2025, 10, 8), date(2026, 1, 14))  # a Wednesday to a Wednesday, 99 days
    weekly = comp.group_sparkline(mondays, "UTC", "TypeError", ends=ranged).children
    assert [i for i, bar in enumerate(weekly) if "spark-bar-filling" in bar.className] == [0, 14]
    assert (weekly[0].title, weekly[14].title) == ("2025-10-06 00:00: 4 from Oct 8", "2026-01-12 00:00: 4 to Jan 14")


def test_sparkline_all_zero_draws_empty_bars():
    spark = comp.sparkline([bucket(0, 0), bucket(1, 0)], "UTC")
    assert all(bar.style["height"] == "0%" for bar in spark.children)


def test_occurrence_card_time_in_zone_location_and_stack_as_pre():
    hostile_stack = "Error: <b>bold</b>\n    at <anonymous>:1:1"
    card = comp.occurrence_card(event(stack=hostile_stack), "Europe/Berlin")
    strings = texts(card)
    # 23:30:05 UTC on 15 Jan is 00:30:05 on 16 Jan in Berlin (CET).
    assert "2026-01-16 00:30:05 CET" in strings
    assert "https://shop.example.com/app.js:10:5" in strings
    facts = next(text for text in strings if text.startswith("Page: "))
    assert facts.split(" · ") == [
        "Page: shop.example.com/checkout",
        "Browser: Chrome 140",
        "OS: Windows",
        "Device: Desktop",
        "Country: 🇩🇪 Germany",
        "Session: s-1",
    ]
    # Few components per card: a page of twenty mounts quickly in the browser.
    assert len(find(card, lambda n: hasattr(n, "children"))) <= 8
    pres = find(card, lambda n: type(n).__name__ == "Pre")
    assert len(pres) == 1 and pres[0].children == hostile_stack


def test_occurrence_card_without_stack_or_position():
    card = comp.occurrence_card(event(stack="", line_number=0, column_number=0, file_name=""), "UTC")
    strings = texts(card)
    assert "unknown file" in strings
    assert "No stack trace was reported." in strings
    assert not find(card, lambda n: type(n).__name__ == "Pre")


@pytest.mark.parametrize(
    ("file_name", "line", "column", "expected"),
    [
        ("a.js", 1, 2, "a.js:1:2"),
        ("a.js", 7, 0, "a.js:7"),
        ("a.js", None, None, "a.js"),
        ("", 3, 4, "unknown file:3:4"),
    ],
)
def test_file_location(file_name, line, column, expected):
    assert comp.file_location(file_name, line, column) == expected


def test_time_figure_uses_local_wall_clock():
    figure = comp.errors_time_figure([bucket(22, 3), bucket(23, 4)], "Asia/Tokyo", "hour")
    trace = figure.data[0]
    assert [str(x) for x in trace.x] == ["2026-01-16 07:00:00", "2026-01-16 08:00:00"]
    assert list(trace.y) == [3, 4]
    assert figure.layout.yaxis.title.text == "occurrences per hour"
    assert list(trace.marker.opacity) == [1.0, 1.0] and list(trace.customdata) == ["", ""]
    # A range ending now: its last hour is still filling, drawn paler and read "so far".
    filling = comp.errors_time_figure(
        [bucket(22, 3), bucket(23, 4)], "Asia/Tokyo", "hour", ends=RangeEnds(ends_now=True)
    ).data[0]
    assert list(filling.marker.opacity) == [1.0, 0.45] and list(filling.customdata) == ["", " so far"]
    assert "%{customdata}" in filling.hovertemplate
    # Weeks cut by the range's first and last days: drawn paler, their counts read with the days they hold.
    mondays = [ErrorBucket(time=datetime(2026, 1, day, tzinfo=UTC), error_count=5) for day in (12, 19)]
    weekly = comp.errors_time_figure(mondays, "UTC", "week", ends=RangeEnds(date(2026, 1, 14), date(2026, 1, 20))).data[
        0
    ]
    assert list(weekly.marker.opacity) == [0.45, 0.45]
    assert list(weekly.customdata) == [" from Jan 14", " to Jan 20"]


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (date(2026, 1, 1), date(2026, 1, 1), "hour"),
        (date(2026, 1, 1), date(2026, 1, 30), "day"),
        (date(2026, 1, 1), date(2026, 6, 30), "week"),
        (None, None, "week"),
    ],
)
def test_trend_bucket(start, end, expected):
    assert comp.trend_bucket(start, end) == expected


def test_groups_frame_and_events_frame_for_csv():
    frame = comp.error_groups_frame([group(), group(value="RangeError: bad", name="RangeError", count=8)])
    assert list(frame.columns) == ["error_name", "message", "occurrences", "sessions", "percentage"]
    assert frame["occurrences"].tolist() == [12, 8]
    shares = comp.error_groups_frame([group(percentage=39.77230995225854), group(percentage=0.04)])["percentage"]
    assert shares.tolist() == [39.8, 0.0]
    events = comp.error_events_frame([event()], "America/New_York")
    assert events.loc[0, "time"] == "2026-01-15T18:30:05.000-05:00"
    assert events.loc[0, "time_utc"] == "2026-01-15T23:30:05.000+00:00"
    assert events.loc[0, "stack"].startswith("TypeError")


def test_groups_list_header_and_rows():
    listing = comp.error_groups_list(
        [group(), group(value="other")],
        [None, [bucket(0, 1)]],
        time_zone="UTC",
        selected="other",
        row_id=lambda i: {"type": "g", "index": i},
    )
    rows = find(listing, lambda n: type(n).__name__ == "Button")
    assert [row.id["index"] for row in rows] == [0, 1]
    assert "error-group-selected" in rows[1].className and "error-group-selected" not in rows[0].className
    assert "Occurrences" in texts(listing)


def test_detail_header_full_message_and_plural():
    one = comp.error_detail_header(group(value="x" * 400, count=1, sessions=1))
    strings = texts(one)
    assert "1 occurrence" in strings and "1 session" in strings
    assert "x" * 400 in strings  # the full message, not the preview
    many = comp.error_detail_header(group(count=3, sessions=2))
    assert "2 sessions" in texts(many)


def test_time_figure_small_counts_get_whole_number_ticks():
    assert comp.errors_time_figure([bucket(0, 2)], "UTC", "hour").layout.yaxis.dtick == 1
    assert comp.errors_time_figure([bucket(0, 200)], "UTC", "hour").layout.yaxis.dtick is None


@pytest.mark.parametrize(
    ("requested", "days", "expected"),
    [
        ("minute", 1, "minute"),
        ("minute", 2, "hour"),  # 2,880 bars: too many, falls back
        ("five_minutes", 6, "five_minutes"),
        ("hour", 90, "day"),
        ("week", 90, "week"),
        (None, 1, "hour"),
        (None, 30, "day"),
        ("bogus", 30, "day"),
    ],
)
def test_chart_bucket_suits_the_range(requested, days, expected):
    assert comp.chart_bucket(requested, days) == expected


def test_bucket_options_disable_too_fine_buckets():
    options = {option["value"]: option["disabled"] for option in comp.bucket_options(30)}
    assert options == {
        "minute": True,
        "five_minutes": True,
        "ten_minutes": True,
        "fifteen_minutes": True,
        "hour": False,
        "day": False,
        "week": False,
        "month": False,
    }
    assert [o["disabled"] for o in comp.bucket_options(1)] == [False] * 8
