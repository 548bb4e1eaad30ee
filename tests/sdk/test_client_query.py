"""Query and Filter: the exact query-string values they produce, immutability, and early refusal of nonsense."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from api_client import Filter, Query
from api_client.query import FILTER_PARAMETERS, FILTER_TYPES


def test_client_query001_empty_query_is_all_time_in_utc():
    assert Query().to_params() == {"time_zone": "UTC"}


def test_client_query002_date_window_from_dates_and_strings():
    by_date = Query(start_date=date(2026, 3, 1), end_date=date(2026, 3, 31), time_zone="Europe/Paris")
    by_text = Query(start_date="2026-03-01", end_date="2026-03-31", time_zone="Europe/Paris")
    expected = {"start_date": "2026-03-01", "end_date": "2026-03-31", "time_zone": "Europe/Paris"}
    assert by_date.to_params() == expected
    assert by_text.to_params() == expected
    # A datetime given as a date keeps only its day.
    assert (
        Query(start_date=datetime(2026, 3, 1, 23, 59), end_date="2026-03-02").to_params()["start_date"] == "2026-03-01"
    )


def test_client_query003_instants_are_sent_as_utc_with_z():
    paris_winter = timezone(timedelta(hours=1))
    query = Query(
        start_datetime=datetime(2026, 3, 1, 10, 0, tzinfo=paris_winter),
        end_datetime=datetime(2026, 3, 1, 12, 30, 15, 250000),  # naive = UTC, the API's convention
    )
    params = query.to_params()
    assert params["start_datetime"] == "2026-03-01T09:00:00Z"
    assert params["end_datetime"] == "2026-03-01T12:30:15.250Z"
    assert (
        Query(start_datetime=datetime(2026, 1, 1, tzinfo=UTC)).to_params()["start_datetime"] == "2026-01-01T00:00:00Z"
    )
    # Strings are passed through for the server to validate.
    assert Query(start_datetime="2026-03-01 09:00:00").to_params()["start_datetime"] == "2026-03-01 09:00:00"


def test_client_query004_past_minutes_are_plain_numbers():
    params = Query(past_minutes_start=60.0, past_minutes_end=0).to_params()
    assert params == {"time_zone": "UTC", "past_minutes_start": "60", "past_minutes_end": "0"}
    assert Query(past_minutes_start=1.5, past_minutes_end=0.25).to_params()["past_minutes_start"] == "1.5"
    with pytest.raises(TypeError):
        Query(past_minutes_start=True, past_minutes_end=0).to_params()


def test_client_query005_filters_are_one_compact_json_array():
    query = Query(
        filters=[
            Filter("channel", "equals", ["Organic Search", ""]),
            {"parameter": "country", "type": "not_equals", "value": ["US"]},
            Filter("prop:plan", value="pro"),
            Filter("screen_width", "greater_than", [1024]),
        ]
    )
    raw = query.to_params()["filters"]
    assert " " not in raw.replace("Organic Search", "")
    assert json.loads(raw) == [
        {"parameter": "channel", "type": "equals", "value": ["Organic Search", ""]},
        {"parameter": "country", "type": "not_equals", "value": ["US"]},
        {"parameter": "prop:plan", "type": "equals", "value": ["pro"]},
        {"parameter": "screen_width", "type": "greater_than", "value": [1024]},
    ]


def test_client_query006_value_objects_are_frozen_and_hashable():
    one = Query(start_date="2026-03-01", end_date="2026-03-02", filters=[Filter("browser", value=["Firefox"])])
    two = Query(start_date="2026-03-01", end_date="2026-03-02", filters=(Filter("browser", "equals", ("Firefox",)),))
    assert one == two
    assert hash(one) == hash(two)
    assert len({one, two}) == 1
    with pytest.raises(AttributeError):
        one.time_zone = "Europe/Paris"  # type: ignore[misc]
    assert isinstance(one.filters, tuple)
    assert isinstance(one.filters[0].value, tuple)


def test_client_query007_with_and_without_filters_return_copies():
    base = Query(start_date="2026-03-01", end_date="2026-03-02", filters=[Filter("browser", value=["Firefox"])])
    more = base.with_filters(Filter("channel", value=[""]), {"parameter": "country", "value": ["FR"]})
    assert [f.parameter for f in more.filters] == ["browser", "channel", "country"]
    assert [f.parameter for f in base.filters] == ["browser"]
    assert [f.parameter for f in more.without_filters(["channel"]).filters] == ["browser", "country"]
    assert more.without_filters().filters == ()
    assert more.without_filters().start_date == "2026-03-01"


def test_client_query008_bad_filters_are_refused_at_construction():
    with pytest.raises(ValueError):
        Filter("")
    with pytest.raises(ValueError):
        Filter("browser", "")
    with pytest.raises(TypeError):
        Filter("browser", "equals", [None])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        Filter("browser", "equals", [True])
    with pytest.raises(TypeError):
        Query(filters=Filter("browser", value=["x"]))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Query(filters=["browser=x"])  # type: ignore[list-item]
    with pytest.raises(KeyError):
        Filter.from_dict({"type": "equals"})


def test_client_query009_filter_round_trips_through_dict():
    original = Filter("utm_campaign", "contains", ["spring", 2026])
    assert Filter.from_dict(original.to_dict()) == original
    assert Filter.from_dict({"parameter": "browser"}) == Filter("browser", "equals", ())


def test_client_query010_vocabulary_matches_the_contract():
    # Equality with the server's lists is pinned in test_shared_rules.py; here, names the contract spells out.
    assert {"equals", "regex", "is_null", "greater_than_or_equal"} <= set(FILTER_TYPES)
    assert {"channel", "entry_page", "exit_page", "utm_content", "user_id", "dimensions"} <= set(FILTER_PARAMETERS)


def test_client_query011_blank_zone_means_utc():
    assert Query(time_zone=" ").to_params()["time_zone"] == "UTC"
    assert Query(start_date="", end_date=None).to_params() == {"time_zone": "UTC"}


def test_sdk_filter_lists_match_what_the_server_accepts():
    from api_backend.query import filters as server

    assert set(FILTER_TYPES) == set(server.FILTER_TYPES)
    assert set(FILTER_PARAMETERS) == set(server.PARAMETERS)
