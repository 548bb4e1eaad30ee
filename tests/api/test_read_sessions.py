"""Sessions, one session's timeline and identified users, checked against pandas on the same generated events."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from api_backend.services import Services
from api_backend.store.events import rows_to_table
from api_client import AnalyticsAPI, NotFoundError, Query
from tests.support import Account, app_on, make_account, make_site, truth

WINDOW = {"start_date": "2026-03-27", "end_date": "2026-03-30", "time_zone": "Europe/Paris"}
WINDOW_START, WINDOW_END = datetime(2026, 3, 26, 23), datetime(2026, 3, 30, 22)
GOALS = [
    {"name": "Pricing", "goalType": "path", "config": {"pathPattern": "/pricing"}},
    {"name": "Signup", "goalType": "event", "config": {"eventName": "signup"}},
]


@dataclass
class World:
    client: TestClient
    services: Services
    owner: Account
    site_id: int
    df: pd.DataFrame

    def get(self, path: str, **params: Any) -> Any:
        response = self.client.get(f"/api/sites/{self.site_id}{path}", params=params, headers=self.owner.headers)
        assert response.status_code == 200, response.text
        return response.json()

    def in_window(self) -> pd.DataFrame:
        return truth.window_rows(self.df, WINDOW_START, WINDOW_END)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with app_on(tmp_path_factory.mktemp("read-sessions") / "data") as (client, services):
        owner = make_account(services, "owner@example.com")
        site = make_site(services, owner)
        other = make_site(services, owner, "other.example")
        rows = truth.generate_events(site.site_id)
        services.events.append(rows_to_table(rows))
        # Another site's sessions (same ids, same users) must never show up in this site's lists.
        services.events.append(rows_to_table(truth.generate_events(other.site_id, sessions=40, seed=7)))
        for goal in GOALS:
            services.metadata.create_goal(site.site_id, goal["name"], goal["goalType"], goal["config"])
        yield World(client, services, owner, site.site_id, truth.frame(rows))


def _converted(rows: pd.DataFrame) -> set[str]:
    hits = set()
    for goal in GOALS:
        hits |= truth.expected_goal(rows, goal)[2]
    return hits


def _all_pages(world: World, path: str, **params: Any) -> tuple[list[dict[str, Any]], int]:
    collected, page, total = [], 1, -1
    while True:
        body = world.get(path, page=str(page), limit="40", **params)
        total = body["totalCount"]
        if not body["data"]:
            return collected, total
        collected += body["data"]
        page += 1


def test_sessions001_every_session_of_the_window_newest_first_matches_pandas(world: World) -> None:
    rows = world.in_window()
    expected = truth.sessions_of(rows)
    collected, total = _all_pages(world, "/sessions", **WINDOW)
    assert total == len(expected) == len(collected)
    assert {s["session_id"] for s in collected} == set(expected.index)
    order = [(s["session_end"], s["session_id"]) for s in collected]
    assert order == sorted(order, key=lambda x: (-pd.Timestamp(x[0]).value, x[1]))
    converted = _converted(rows)
    for session in collected:
        want = expected.loc[session["session_id"]]
        events = rows[rows["session_id"] == session["session_id"]]
        assert session["pageviews"] == want["pageviews"]
        assert session["events"] == len(events)
        assert session["errors"] == int((events["type"] == "error").sum())
        assert session["channel"] == want["channel"] and session["entry_page"] == want["entry_page"]
        assert session["exit_page"] == want["exit_page"] and session["user_id"] == want["user"]
        assert session["country"] == want["country"] and session["browser"] == want["browser"]
        assert session["session_duration"] == int((want["end"] - want["start"]).total_seconds())
        assert session["converted"] is (session["session_id"] in converted)
        # Identified when one of its in-window events carries an identified id: its user_id is then that id.
        identified = events[events["identified_user_id"] != ""]
        assert session["identified"] is (len(identified) > 0)
        if session["identified"]:
            assert session["user_id"] in set(identified["identified_user_id"])
    assert any(s["converted"] for s in collected) and not all(s["converted"] for s in collected)
    assert any(s["identified"] for s in collected) and not all(s["identified"] for s in collected)


def test_sessions002_shape_has_the_session_fields_of_the_spec(world: World) -> None:
    body = world.get("/sessions", limit="3")
    assert set(body) == {"data", "totalCount"} and len(body["data"]) == 3
    spec_fields = {
        "session_id": str,
        "user_id": str,
        "country": str,
        "browser": str,
        "operating_system": str,
        "device_type": str,
        "entry_page": str,
        "exit_page": str,
        "pageviews": int,
        "session_duration": int,
        "session_start": str,
        "session_end": str,
        "referrer": str,
        "channel": str,
        "events": int,
        "converted": bool,
        "identified": bool,
    }
    for session in body["data"]:
        for key, kind in spec_fields.items():
            assert isinstance(session[key], kind), key
        assert session["session_end"].endswith("Z") and len(session["session_end"]) == 24
    assert body["totalCount"] == world.df["session_id"].nunique()


@pytest.mark.parametrize(
    "filters",
    [
        [{"parameter": "channel", "type": "equals", "value": ["Organic Search"]}],
        [{"parameter": "pathname", "type": "equals", "value": ["/pricing"]}],
        [
            {"parameter": "country", "type": "not_equals", "value": ["FR"]},
            {"parameter": "browser", "type": "equals", "value": ["Chrome"]},
        ],
    ],
    ids=["channel", "pathname", "country-and-browser"],
)
def test_sessions003_filters_select_the_sessions(world: World, filters: list[dict[str, Any]]) -> None:
    rows = world.in_window()
    chosen = truth.qualify(rows, filters)
    collected, total = _all_pages(world, "/sessions", filters=json.dumps(filters), **WINDOW)
    assert total == len(chosen) and {s["session_id"] for s in collected} == chosen
    for session in collected:
        events = rows[rows["session_id"] == session["session_id"]]
        assert session["events"] == len(events)  # every in-window event of a chosen session counts


def test_sessions004_page_past_the_end_still_reports_the_total(world: World) -> None:
    body = world.get("/sessions", page="1000", limit="100")
    assert body == {"data": [], "totalCount": world.df["session_id"].nunique()}


def test_sessions005_one_session_with_its_timeline(world: World) -> None:
    df = world.df
    # A session with pageviews, a custom event, an error and an outbound click.
    kinds = df.groupby("session_id")["type"].agg(set)
    sid = next(s for s, k in kinds.items() if {"pageview", "custom_event", "error", "outbound"} <= k)
    events = df[df["session_id"] == sid].sort_values("timestamp")
    body = world.get(f"/sessions/{sid}")["data"]
    assert body["truncated"] is False
    session = body["session"]
    assert session["session_id"] == sid and session["events"] == len(events)
    assert session["pageviews"] == int((events["type"] == "pageview").sum())
    assert session["identified"] is bool((events["identified_user_id"] != "").any())
    timeline = body["timeline"]
    assert [t["type"] for t in timeline] == list(events["type"])
    assert [t["pathname"] for t in timeline] == list(events["pathname"])
    end = events["timestamp"].max()
    views = events[events["type"] == "pageview"]["timestamp"].tolist()
    expected_times = [((views[i + 1] if i + 1 < len(views) else end) - t).total_seconds() for i, t in enumerate(views)]
    got_times = [t["time_on_page"] for t in timeline if t["type"] == "pageview"]
    assert got_times == pytest.approx(expected_times)
    for item, (_, row) in zip(timeline, events.iterrows(), strict=True):
        props = json.loads(row["props"]) if row["props"] else {}
        if row["type"] == "custom_event":
            assert item["event_name"] == row["event_name"] and item["properties"] == props
        elif row["type"] == "error":
            assert item["error_name"] == row["event_name"]
            assert item["message"] == props["message"] and item["stack"] == props["stack"]
        elif row["type"] == "outbound":
            assert item["url"] == props["url"]
        assert item["page_title"] == row["page_title"]


def test_sessions006_unknown_session_is_404(world: World) -> None:
    response = world.client.get(f"/api/sites/{world.site_id}/sessions/no-such-session", headers=world.owner.headers)
    assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"


def test_sessions007_long_timeline_is_bounded_and_flagged(world: World) -> None:
    site = make_site(world.services, world.owner, "long.example")
    base = datetime(2025, 1, 1)
    rows = [
        {"site_id": site.site_id, "timestamp": base.replace(second=i % 60, minute=i // 60), "session_id": "long"}
        | {"type": "pageview", "pathname": f"/p{i}"}
        for i in range(1001)
    ]
    world.services.events.append(rows_to_table(rows))
    response = world.client.get(f"/api/sites/{site.site_id}/sessions/long", headers=world.owner.headers)
    body = response.json()["data"]
    assert body["truncated"] is True and len(body["timeline"]) == 1000
    assert body["session"]["events"] == 1001 and body["timeline"][0]["pathname"] == "/p0"


def test_users001_identified_user_totals_and_sessions(world: World) -> None:
    df = world.df
    identified = df[df["identified_user_id"] != ""]
    user = identified.groupby("identified_user_id")["session_id"].nunique().idxmax()
    sids = set(df[df["identified_user_id"] == user]["session_id"])
    assert len(sids) >= 2
    rows = df[df["session_id"].isin(sids)]
    body = world.get(f"/users/{user}", limit="1")
    data = body["data"]
    assert data["user_id"] == user and body["totalCount"] == len(sids)
    assert data["totals"] == {
        "sessions": len(sids),
        "pageviews": int((rows["type"] == "pageview").sum()),
        "events": len(rows),
    }
    assert pd.Timestamp(data["first_seen"]).tz_localize(None) == rows["timestamp"].min().floor("ms")
    assert pd.Timestamp(data["last_seen"]).tz_localize(None) == rows["timestamp"].max().floor("ms")
    assert len(data["sessions"]) == 1
    newest = rows.groupby("session_id")["timestamp"].max().idxmax()
    assert data["sessions"][0]["session_id"] == newest and data["sessions"][0]["user_id"] == user
    second = world.get(f"/users/{user}", limit="1", page="2")["data"]["sessions"]
    assert len(second) == 1 and second[0]["session_id"] != newest
    # Past the last session the totals and the count stand, with no session.
    past = world.get(f"/users/{user}", limit="1", page=str(len(sids) + 1))
    assert past["data"]["sessions"] == [] and past["totalCount"] == len(sids)
    assert {k: past["data"][k] for k in ("totals", "first_seen", "last_seen")} == {
        k: data[k] for k in ("totals", "first_seen", "last_seen")
    }


def test_users002_window_narrows_the_user(world: World) -> None:
    df = world.in_window()
    user = df[df["identified_user_id"] != ""]["identified_user_id"].iloc[0]
    sids = set(df[df["identified_user_id"] == user]["session_id"])
    body = world.get(f"/users/{user}", **WINDOW)
    assert body["totalCount"] == len(sids) == body["data"]["totals"]["sessions"]


def test_users003_unknown_user_and_anonymous_visitor_are_404(world: World) -> None:
    visitor = world.df[world.df["identified_user_id"] == ""]["user_id"].iloc[0]
    for user in ("nobody", visitor):
        response = world.client.get(f"/api/sites/{world.site_id}/users/{user}", headers=world.owner.headers)
        assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"


def test_sessions008_sdk_reads_sessions_timeline_and_user(world: World) -> None:
    api = AnalyticsAPI("http://testserver/api", token=world.owner.api_key, client=world.client)
    page = api.sessions(world.site_id, Query(**WINDOW), limit=5)
    raw = world.get("/sessions", limit="5", **WINDOW)
    assert page.total_count == raw["totalCount"] and [s.session_id for s in page.rows] == [
        s["session_id"] for s in raw["data"]
    ]
    first = page.rows[0]
    assert first.session_end is not None and first.session_end.tzinfo is not None
    assert isinstance(first.converted, bool) and first.events >= first.pageviews
    detail = api.session(world.site_id, first.session_id)
    assert detail.session.session_id == first.session_id and not detail.truncated
    assert detail.timeline[0].timestamp == detail.session.session_start
    user = world.df[world.df["identified_user_id"] != ""]["identified_user_id"].iloc[0]
    profile = api.user(world.site_id, user, limit=1)
    assert profile.user_id == user and profile.total_count == profile.totals.sessions >= 1
    assert len(profile.sessions) == 1 and profile.first_seen <= profile.last_seen
    with pytest.raises(NotFoundError):
        api.session(world.site_id, "no-such-session")
    with pytest.raises(NotFoundError):
        api.user(world.site_id, "nobody")
