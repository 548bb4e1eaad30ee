"""Rules that live in more than one package because the packages may not import each other, held equal here.

``api_client`` (the SDK) must not import ``api_backend`` and the dashboard reads only ``api_client``, so the
Wilson interval, the small-sample threshold and the filter vocabulary have a server copy and an SDK copy (the
dashboard builds its menus from the SDK's). Each test compares the copies value for value.
"""

from __future__ import annotations

import pytest

from api_backend.query import filters as server_filters
from api_backend.routes import goals as server_goals
from api_client import client as sdk
from api_client import query as sdk_query
from dashboard.components import frame

CASES = [(0, 0), (0, 1), (1, 1), (0, 10), (5, 10), (10, 10), (81, 263), (1, 29), (30, 30), (999, 1_000_000)]


@pytest.mark.parametrize(("successes", "trials"), CASES)
def test_shared001_wilson_interval_is_the_same_on_server_and_sdk(successes: int, trials: int) -> None:
    assert server_goals.wilson_interval(successes, trials) == sdk.wilson_interval(successes, trials)


def test_shared002_no_sessions_is_the_whole_range() -> None:
    # An empty sample says nothing about the rate: (0, 1), not a certain 0.
    assert server_goals.wilson_interval(0, 0) == sdk.wilson_interval(0, 0) == (0.0, 1.0)


def test_shared003_small_sample_threshold_and_z_agree() -> None:
    assert server_goals.SMALL_SAMPLE == sdk.SMALL_SAMPLE
    assert server_goals.Z95 == sdk.Z_95


def test_shared004_filter_vocabulary_is_the_same_in_server_sdk_and_dashboard() -> None:
    assert list(sdk_query.FILTER_TYPES) == list(server_filters.FILTER_TYPES)
    assert set(sdk_query.FILTER_PARAMETERS) == set(server_filters.PARAMETERS)
    assert set(frame.TYPE_LABELS) == set(server_filters.FILTER_TYPES)
    assert set(frame.PARAMETER_LABELS) == set(server_filters.PARAMETERS)


def test_shared005_read_routes_declare_the_window_parameters_once(client) -> None:
    paths = client.get("/api/openapi.json").json()["paths"]

    def names(path: str) -> list[str]:
        return [p["name"] for p in paths[path]["get"]["parameters"] if p["in"] == "query"]

    window = names("/api/org-event-count/{organization_id}")
    filtered = names("/api/sites/{site_id}/overview")
    assert window[:7] == [
        "start_date",
        "end_date",
        "time_zone",
        "start_datetime",
        "end_datetime",
        "past_minutes_start",
        "past_minutes_end",
    ]
    start = filtered.index("start_date")
    assert filtered[start : start + len(window) + 1] == [*window, "filters"]
