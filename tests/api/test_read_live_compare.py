"""Live visitors of the last minutes, and the overview beside its previous period, checked by hand and with pandas."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from api_backend.store.events import rows_to_table
from api_client import AnalyticsAPI, Query
from tests.support import truth

WINDOW = {"start_date": "2026-03-29", "end_date": "2026-03-31", "time_zone": "Europe/Paris"}
# The three Paris days just before (03-26 .. 03-28): CET, then the DST change on the 29th.
PREVIOUS_START, PREVIOUS_END = datetime(2026, 3, 25, 23), datetime(2026, 3, 28, 23)
CURRENT_START, CURRENT_END = datetime(2026, 3, 28, 23), datetime(2026, 3, 31, 22)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _row(site_id: int, ago: timedelta, visitor: str, kind: str = "pageview", path: str = "/") -> dict:
    return {
        "site_id": site_id,
        "timestamp": _now() - ago,
        "session_id": "s-" + visitor,
        "user_id": visitor,
        "type": kind,
        "pathname": path,
    }


def test_live001_counts_the_last_minutes_only(client, services, site, owner) -> None:
    rows = [
        _row(site.site_id, timedelta(minutes=1), "a", path="/pricing"),
        _row(site.site_id, timedelta(minutes=2), "a", path="/"),
        _row(site.site_id, timedelta(minutes=3), "b", path="/pricing"),
        _row(site.site_id, timedelta(minutes=4), "c", kind="custom_event", path="/docs"),
        _row(site.site_id, timedelta(minutes=20), "d", path="/old"),  # only in a 30-minute window
        _row(site.site_id, timedelta(hours=2), "e", path="/older"),  # never
    ]
    services.events.append(rows_to_table(rows))
    body = client.get(f"/api/sites/{site.site_id}/live", headers=owner.headers).json()
    assert body == {
        "data": {
            "minutes": 5,
            "visitors": 3,
            "sessions": 3,
            "pageviews": 3,
            "events": 4,
            "pages": [
                {"pathname": "/pricing", "visitors": 2, "pageviews": 2},
                {"pathname": "/", "visitors": 1, "pageviews": 1},
            ],
        }
    }
    wide = client.get(f"/api/sites/{site.site_id}/live", params={"minutes": "30", "limit": "1"}, headers=owner.headers)
    assert wide.json()["data"]["visitors"] == 4 and len(wide.json()["data"]["pages"]) == 1
    api = AnalyticsAPI("http://testserver/api", token=owner.api_key, client=client)
    live = api.live(site.site_id, minutes=60)
    assert live.visitors == 4 and live.pages[0].pathname == "/pricing"


@pytest.fixture
def seeded(services, site):
    rows = truth.generate_events(site.site_id)
    services.events.append(rows_to_table(rows))
    return truth.frame(rows)


def test_compare001_overview_beside_the_previous_period(client, site, owner, seeded) -> None:
    url = f"/api/sites/{site.site_id}/overview"
    plain = client.get(url, params=WINDOW, headers=owner.headers).json()
    body = client.get(url, params={**WINDOW, "compare": "previous"}, headers=owner.headers).json()
    assert set(plain) == {"data"} and body["data"] == plain["data"]
    expected = truth.expected_overview(truth.window_rows(seeded, PREVIOUS_START, PREVIOUS_END))
    previous = body["previous"]
    assert previous["sessions"] == expected["sessions"] and previous["pageviews"] == expected["pageviews"]
    assert previous["users"] == expected["users"]
    assert truth.is_close(previous["bounce_rate"], expected["bounce_rate"])


def test_compare002_series_previous_period_bucketed_alike(client, site, owner, seeded) -> None:
    url = f"/api/sites/{site.site_id}/overview/time-series"
    plain = client.get(url, params={**WINDOW, "bucket": "day"}, headers=owner.headers).json()
    body = client.get(url, params={**WINDOW, "bucket": "day", "compare": "previous"}, headers=owner.headers).json()
    assert body["data"] == plain["data"] and set(plain) == {"data"}
    assert [b["time"] for b in body["previous"]] == [
        "2026-03-25T23:00:00.000Z",
        "2026-03-26T23:00:00.000Z",
        "2026-03-27T23:00:00.000Z",
    ]
    assert len(body["previous"]) == len(body["data"])
    rows = truth.window_rows(seeded, PREVIOUS_START, PREVIOUS_END)
    pageviews = truth.local_buckets(rows[rows["type"] == "pageview"]["timestamp"], "Europe/Paris", "day")
    starts = truth.local_buckets(truth.sessions_of(rows)["start"], "Europe/Paris", "day")
    for bucket in body["previous"]:
        assert bucket["pageviews"] == pageviews.get(bucket["time"], 0)
        assert bucket["sessions"] == starts.get(bucket["time"], 0)
    api = AnalyticsAPI("http://testserver/api", token=owner.api_key, client=client)
    query = Query(start_date="2026-03-29", end_date="2026-03-31", time_zone="Europe/Paris")
    compared = api.overview_time_series_compared(site.site_id, query, bucket="day")
    assert [b.pageviews for b in compared.previous] == [b["pageviews"] for b in body["previous"]]
    assert api.overview_compared(site.site_id, query).previous.sessions == sum(b["sessions"] for b in body["previous"])


def test_compare003_unique_visitors_per_bucket(client, site, owner, seeded) -> None:
    """``users`` of each bucket is its unique visitors: distinct identified ids, else visitor ids, of its events."""
    body = client.get(
        f"/api/sites/{site.site_id}/overview/time-series", params={**WINDOW, "bucket": "day"}, headers=owner.headers
    ).json()
    rows = truth.window_rows(seeded, CURRENT_START, CURRENT_END).copy()
    rows["who"] = rows["identified_user_id"].where(rows["identified_user_id"] != "", rows["user_id"])
    for bucket in body["data"]:
        start = datetime.fromisoformat(bucket["time"].replace("Z", ""))
        nxt = [b["time"] for b in body["data"] if b["time"] > bucket["time"]]
        end = datetime.fromisoformat(nxt[0].replace("Z", "")) if nxt else CURRENT_END
        in_bucket = truth.window_rows(rows, start, end)
        assert bucket["users"] == in_bucket["who"].nunique(), bucket["time"]


def test_compare004_datetime_window_moves_back_by_its_length(client, site, owner, seeded) -> None:
    params = {"start_datetime": "2026-03-28T06:00:00Z", "end_datetime": "2026-03-28T18:00:00Z", "compare": "previous"}
    body = client.get(f"/api/sites/{site.site_id}/overview", params=params, headers=owner.headers).json()
    expected = truth.expected_overview(truth.window_rows(seeded, datetime(2026, 3, 27, 18), datetime(2026, 3, 28, 6)))
    assert body["previous"]["sessions"] == expected["sessions"]
    assert body["previous"]["pageviews"] == expected["pageviews"]
