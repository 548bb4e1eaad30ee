"""The common dashboard builders, checked as component JSON without a browser."""

from __future__ import annotations

import json
import math
from datetime import date, datetime, timedelta

import pandas as pd
import pytest

from api_client import APIConnectionError, AuthenticationError, NotFoundError, ServerError, ValidationError
from dashboard.components.common import (
    RangeEnds,
    alert,
    bucket_ticks,
    card,
    channel_label,
    csv_button,
    csv_download,
    data_table,
    empty_state,
    error_view,
    failure_figure,
    failure_mark,
    failure_message,
    failure_note,
    format_change,
    format_duration,
    format_number,
    format_percent,
    invalid_link,
    loading,
    page_header,
    redirect,
)


def texts(component) -> str:
    """Every string in a component tree, in order."""
    found: list[str] = []

    def walk(node):
        if isinstance(node, str):
            found.append(node)
        elif isinstance(node, dict):
            for key, value in node.items():
                if key in ("children", "props"):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(json.loads(json.dumps(component.to_plotly_json(), default=lambda o: o.to_plotly_json())))
    return " ".join(found)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, "0"), (1234567, "1,234,567"), (12.6, "13"), (None, "–"), (float("nan"), "–"), (True, "–")],
)
def test_format_number(value, expected):
    assert format_number(value) == expected


def test_format_percent_and_duration():
    assert format_percent(12.345) == "12.3%"
    assert format_percent(100) == "100.0%"
    assert format_percent(None) == "–"
    assert format_duration(45) == "45s"
    assert format_duration(185) == "3m 05s"
    assert format_duration(7380) == "2h 03m"
    assert format_duration(0) == "0s"
    assert format_duration(math.inf) == "–"


def test_format_change_relative_and_points():
    assert format_change(110, 100) == ("+10.0%", "up")
    assert format_change(50, 100) == ("-50.0%", "down")
    assert format_change(100, 100) == ("0%", "flat")
    assert format_change(5, 0) == ("new", "up")
    assert format_change(5, None) == ("–", "none")
    assert format_change(55.0, 40.0, points=True) == ("+15.0 pts", "up")


def test_channel_label_shows_direct_for_empty():
    assert channel_label("") == "Direct"
    assert channel_label(None) == "Direct"
    assert channel_label("Organic Search") == "Organic Search"


def test_page_header_card_alert_empty_state():
    header = page_header("Goals", "Subtitle", actions="A").to_plotly_json()
    assert header["props"]["className"] == "page-header"
    assert "Goals" in texts(page_header("Goals")) and "Subtitle" in texts(page_header("Goals", "Subtitle"))
    panel = card("body", title="Title", id="x", title_id="x-title")
    assert panel.id == "x" and "Title" in texts(panel) and "body" in texts(panel)
    assert alert("Boom").className == "alert alert-error"
    assert alert("Fine", "success").className == "alert alert-success"
    assert alert("odd kind", "shout").className == "alert alert-error"
    assert "Nothing here" in texts(empty_state("Nothing here", "Do this"))


def test_loading_wraps_an_id():
    wrapper = loading("x", "goals-body")
    assert wrapper.children.id == "goals-body"


def test_redirect_marker_carries_href():
    marker = redirect("/login?next=%2Fgoals").to_plotly_json()
    assert marker["props"]["data-href"] == "/login?next=%2Fgoals"
    assert "data-clear-auth" not in marker["props"]
    assert redirect("/login", clear_auth=True).to_plotly_json()["props"]["data-clear-auth"] == "1"
    assert "data-come-back" not in marker["props"]
    assert redirect("/login", come_back=True).to_plotly_json()["props"]["data-come-back"] == "1"


@pytest.mark.parametrize(
    ("exc", "short"),
    [
        (AuthenticationError(401, None, "expired"), "Your session has ended. Please sign in again."),
        (APIConnectionError(None, None, "refused"), "The dashboard cannot reach the API right now."),
        (APIConnectionError(None, "TIMEOUT", "GET /x timed out"), "The server did not answer in time"),
        (NotFoundError(404, None, "gone"), "Not found. It may have been deleted, or you have no access to it."),
        (ServerError(500, None, "x", request_id="abc"), "The server failed to answer (reference abc)."),
        (ValidationError(400, None, "bad", [{"field": "goal", "message": "unknown"}]), "refused this request. goal"),
        (RuntimeError("secret traceback text"), "Something went wrong"),
    ],
)
def test_short_failures_say_what_the_full_view_says(exc, short):
    assert short in failure_message(exc)
    assert "secret" not in failure_message(exc)
    note = failure_note(exc).to_plotly_json()
    assert note["props"]["role"] == "alert" and failure_message(exc) in texts(failure_note(exc))
    # Only an ended sign-in sends the person on, back to this page afterwards.
    marker = '"data-come-back": "1"' in json.dumps(note, default=lambda o: o.to_plotly_json())
    assert marker is isinstance(exc, AuthenticationError)
    figure = failure_figure(exc)
    assert figure["data"] == [] and figure["layout"]["annotations"][0]["text"] == failure_message(exc)
    mark = failure_mark(exc, "unavailable")
    assert mark.children == "unavailable" and mark.title == failure_message(exc)


def test_error_view_kinds():
    expired = error_view(AuthenticationError(401, None, "expired"))
    assert "session has ended" in texts(expired)
    assert '"data-clear-auth": "1"' in json.dumps(expired.to_plotly_json(), default=lambda o: o.to_plotly_json())
    assert "cannot reach the API" in texts(error_view(APIConnectionError(None, None, "refused")))
    late = texts(error_view(APIConnectionError(None, "TIMEOUT", "GET /x timed out")))
    assert "The answer is late" in late and "shorter range" in late and "cannot reach" not in late
    assert "reference abc" in texts(error_view(ServerError(500, None, "x", request_id="abc")))
    invalid = ValidationError(400, None, "bad", [{"field": "end_date", "message": "must be after start_date"}])
    assert "end_date: must be after start_date" in texts(error_view(invalid))
    assert "Unexpected error" in texts(error_view(RuntimeError("secret traceback text")))
    assert "secret traceback text" not in texts(error_view(RuntimeError("secret traceback text")))
    # In a private-link view, a refused key means the link is not valid (no sign-in redirect).
    shared = error_view(AuthenticationError(401, None, "no"), shared=True)
    assert shared.id == "share-invalid" and "no longer valid" in texts(shared)
    assert error_view(NotFoundError(404, None, "no"), shared=True).id == "share-invalid"
    assert invalid_link().id == "share-invalid"


def test_data_table_aligns_numbers_right_and_keeps_rows():
    df = pd.DataFrame({"channel": ["Direct", "Referral"], "sessions": [3, 12], "link": ["[a](/x)", "[b](/y)"]})
    table = data_table(df, "t", columns=["channel", ("sessions", "Sessions"), "link"], markdown=["link"])
    assert table.data == [
        {"channel": "Direct", "sessions": 3, "link": "[a](/x)"},
        {"channel": "Referral", "sessions": 12, "link": "[b](/y)"},
    ]
    columns = {c["id"]: c for c in table.columns}
    assert columns["sessions"] == {"id": "sessions", "name": "Sessions", "type": "numeric"}
    assert columns["link"]["presentation"] == "markdown"
    assert table.markdown_options["html"] is False  # text from the API is never rendered as HTML
    assert {"if": {"column_id": "sessions"}, "textAlign": "right", "fontVariantNumeric": "tabular-nums"} in (
        table.style_cell_conditional
    )


def test_csv_button_and_payload():
    button = csv_button("goals-csv", "goals-csv-download")
    ids = [child.id for child in button.children]
    assert ids == ["goals-csv", "goals-csv-download"]
    payload = csv_download(pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}), "goals")
    assert payload["filename"] == "goals.csv"
    assert payload["content"].splitlines() == ["a,b", "1,x", "2,y"]


def test_common_range_ends_name_the_buckets_a_range_holds_only_part_of():
    """Weeks and months cut by the range's first or last day, and the last bucket of a range ending now."""
    weeks = [datetime(2026, 11, 2) + timedelta(days=7 * i) for i in range(4)]  # Mondays, Nov 2 to Nov 23
    cut = RangeEnds(date(2026, 11, 4), date(2026, 11, 27))
    assert cut.notes(weeks, "week") == ["from Nov 4", "", "", "to Nov 27"]
    assert RangeEnds(date(2026, 11, 4), date(2026, 11, 27), ends_now=True).notes(weeks, "week")[-1] == "so far"
    # A range of whole weeks (Monday to Sunday) cuts none; a day of the range is always whole.
    assert RangeEnds(date(2026, 11, 2), date(2026, 11, 29)).notes(weeks, "week") == ["", "", "", ""]
    days = [datetime(2026, 11, 4) + timedelta(days=i) for i in range(3)]
    assert RangeEnds(date(2026, 11, 4), date(2026, 11, 6)).notes(days, "day") == ["", "", ""]
    hours = [datetime(2026, 11, 6, 22), datetime(2026, 11, 6, 23)]
    assert RangeEnds(date(2026, 11, 6), date(2026, 11, 6)).notes(hours, "hour") == ["", ""]
    assert RangeEnds(date(2026, 11, 6), date(2026, 11, 6), ends_now=True).notes(hours, "hour") == ["", "so far"]
    # One month holding the whole range is cut at both ends; December's start rolls over to January.
    assert RangeEnds(date(2026, 11, 3), date(2026, 11, 20)).notes([datetime(2026, 11, 1)], "month") == [
        "from Nov 3, to Nov 20"
    ]
    december = [datetime(2026, 11, 1), datetime(2026, 12, 1)]
    assert RangeEnds(date(2026, 11, 1), date(2026, 12, 31)).notes(december, "month") == ["", ""]
    assert RangeEnds(date(2026, 11, 1), date(2026, 12, 30)).notes(december, "month") == ["", "to Dec 30"]
    assert RangeEnds().notes(weeks, "week") == ["", "", "", ""] and RangeEnds().notes([], "week") == []
    # Buckets under an hour (the error chart's minutes) are never cut by the range's days, but can be still filling.
    minutes = [datetime(2026, 11, 6, 23, 45), datetime(2026, 11, 6, 23, 50), datetime(2026, 11, 6, 23, 55)]
    day = RangeEnds(date(2026, 11, 6), date(2026, 11, 6))
    assert day.notes(minutes, "five_minutes") == ["", "", ""]
    assert RangeEnds(date(2026, 11, 6), date(2026, 11, 6), ends_now=True).notes(minutes, "minute")[-1] == "so far"


def test_common_range_ends_of_the_period_before_cut_its_own_buckets():
    """The period the API compares a range with (the same number of days just before) has cut buckets of its own,
    and a range ending now is compared with one ending at the same time of day."""
    before = RangeEnds(date(2026, 11, 4), date(2026, 11, 27)).before()  # 24 days: Oct 11 (a Sunday) to Nov 3
    assert before == RangeEnds(date(2026, 10, 11), date(2026, 11, 3))
    mondays = [datetime(2026, 10, 5) + timedelta(days=7 * i) for i in range(5)]
    assert before.notes(mondays, "week") == ["from Oct 11", "", "", "", "to Nov 3"]
    days = [datetime(2026, 11, 13) + timedelta(days=i) for i in range(7)]
    week_to_now = RangeEnds(date(2026, 11, 20), date(2026, 11, 26), ends_now=True).before()
    assert week_to_now == RangeEnds(date(2026, 11, 13), date(2026, 11, 19), ends_at_this_time=True)
    assert week_to_now.notes(days, "day") == ["", "", "", "", "", "", "to this time of day"]
    weeks = [datetime(2026, 11, 9), datetime(2026, 11, 16)]
    assert week_to_now.notes(weeks, "week") == ["from Nov 13", "to Nov 19, this time of day"]
    assert RangeEnds(date(2026, 11, 20), date(2026, 11, 26)).before().notes(days, "day") == [""] * 7
    assert RangeEnds().before() == RangeEnds() and RangeEnds(ends_now=True).before() == RangeEnds()


def test_common_week_and_month_ticks_sit_on_the_buckets():
    """Weeks are labelled on their Mondays and months on their first days, the last bucket always, seven at most."""
    weeks = [datetime(2026, 11, 2) + timedelta(days=7 * i) for i in range(4)]
    assert bucket_ticks(weeks, "week") == {
        "tickmode": "array",
        "tickvals": weeks,
        "ticktext": ["Nov 2", "Nov 9", "Nov 16", "Nov 23"],
    }
    months = [datetime(2025 + (10 + i) // 12, (10 + i) % 12 + 1, 1) for i in range(30)]  # Nov 2025 to Apr 2028
    ticks = bucket_ticks(months, "month")
    assert len(ticks["tickvals"]) == 6 and ticks["tickvals"][-1] == months[-1]
    # Every fifth month, counted back from the last.
    assert ticks["ticktext"] == ["Mar 2026", "Aug 2026", "Jan 2027", "Jun 2027", "Nov 2027", "Apr 2028"]
    assert bucket_ticks(weeks, "day") == {} and bucket_ticks([], "week") == {}
