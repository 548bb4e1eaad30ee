"""Every read endpoint's numbers against pandas truth computed from the same generated events."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from api_backend.query.dialect import Dialect
from api_backend.query.goals import GoalSpec
from api_backend.routes.read_params import ReadParams
from api_backend.services import Services
from api_backend.store.events import rows_to_table
from tests.support import Account, app_on, make_account, make_site, store_options, truth, wait_until


@dataclass
class World:
    client: TestClient
    services: Services
    owner: Account
    site_id: int
    org_id: str
    df: pd.DataFrame

    def get(self, path: str, **params: Any) -> Any:
        response = self.client.get(f"/api/sites/{self.site_id}{path}", params=params, headers=self.owner.headers)
        assert response.status_code == 200, response.text
        return response.json()


pytestmark = pytest.mark.both_stores


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, event_store: str, request: pytest.FixtureRequest
) -> Iterator[World]:
    data_dir = tmp_path_factory.mktemp("read-numbers") / "data"
    with app_on(data_dir, **store_options(event_store, request)) as (client, services):
        owner = make_account(services, "owner@example.com")
        site = make_site(services, owner)
        other = make_site(services, owner, "other.example")
        rows = truth.generate_events(site.site_id)
        services.events.append(rows_to_table(rows))
        # Another site's events must never leak into this site's numbers.
        services.events.append(rows_to_table(truth.generate_events(other.site_id, sessions=40, seed=99)))
        yield World(client, services, owner, site.site_id, site.organization_id, truth.frame(rows))


WINDOW = {"start_date": "2026-03-27", "end_date": "2026-03-30", "time_zone": "Europe/Paris"}
# The same window in UTC instants: Paris midnight of 03-27 (CET, +1) to midnight after 03-30 (CEST, +2).
WINDOW_START, WINDOW_END = datetime(2026, 3, 26, 23), datetime(2026, 3, 30, 22)


def in_window(world: World) -> pd.DataFrame:
    return truth.window_rows(world.df, WINDOW_START, WINDOW_END)


def test_read001_overview_all_time_matches_pandas(world: World) -> None:
    data = world.get("/overview")["data"]
    expected = truth.expected_overview(world.df)
    assert data["sessions"] == expected["sessions"] and data["pageviews"] == expected["pageviews"]
    assert data["users"] == expected["users"]
    for key in ("pages_per_session", "bounce_rate", "session_duration"):
        assert truth.is_close(data[key], expected[key]), key
    assert all(isinstance(data[k], int) for k in ("sessions", "pageviews", "users"))


def test_read002_overview_date_window_in_zone_across_dst(world: World) -> None:
    data = world.get("/overview", **WINDOW)["data"]
    expected = truth.expected_overview(in_window(world))
    assert data["sessions"] == expected["sessions"]
    assert data["pageviews"] == expected["pageviews"]
    assert truth.is_close(data["bounce_rate"], expected["bounce_rate"])
    assert truth.is_close(data["session_duration"], expected["session_duration"])


def test_read003_window_edges_start_inclusive_end_exclusive(world: World) -> None:
    ts = world.df["timestamp"].sort_values().iloc[50].to_pydatetime()
    exact = world.df[world.df["timestamp"] == pd.Timestamp(ts)]
    assert len(exact) == 1
    iso = ts.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    later = (ts + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    starts_at = world.get("/overview", start_datetime=iso, end_datetime=later)["data"]
    ends_at = world.get("/overview", start_datetime=(ts - timedelta(hours=1)).isoformat() + "Z", end_datetime=iso)[
        "data"
    ]
    expect_start = truth.expected_overview(truth.window_rows(world.df, ts, ts + timedelta(hours=1)))
    expect_end = truth.expected_overview(truth.window_rows(world.df, ts - timedelta(hours=1), ts))
    assert starts_at["sessions"] == expect_start["sessions"] and starts_at["pageviews"] == expect_start["pageviews"]
    assert ends_at["sessions"] == expect_end["sessions"] and ends_at["pageviews"] == expect_end["pageviews"]
    row_is_pageview = exact["type"].iloc[0] == "pageview"
    # The boundary event counts in the window it starts, not in the one it ends.
    assert expect_start["pageviews"] - truth.expected_overview(
        truth.window_rows(world.df, ts + timedelta(milliseconds=1), ts + timedelta(hours=1))
    )["pageviews"] == int(row_is_pageview)


@pytest.mark.parametrize(
    "parameter", ["channel", "country", "browser", "entry_page", "utm_campaign", "pathname", "page_title"]
)
def test_read004_metric_matches_pandas(world: World, parameter: str) -> None:
    body = world.get("/metric", parameter=parameter, limit="1000", **WINDOW)["data"]
    got = [(r["value"], r["count"]) for r in body["data"]]
    expected = truth.expected_metric(in_window(world), parameter)
    assert got == expected
    assert body["totalCount"] == len(expected)
    sessions = in_window(world)["session_id"].nunique()
    for row in body["data"]:
        assert row["percentage"] == pytest.approx(row["count"] * 100 / sessions)
    if parameter == "channel":
        assert "" in [v for v, _ in got]  # direct traffic is the empty value
        assert sum(c for _, c in got) == sessions
    if parameter not in ("pathname", "page_title"):
        per_session = truth.sessions_of(in_window(world))
        for row in body["data"]:
            members = per_session[per_session[parameter] == row["value"]]
            assert row["pageviews"] == members["pageviews"].sum()
            assert row["bounce_rate"] == pytest.approx((members["pageviews"] == 1).mean() * 100)


class _LengthKeys(Dialect):
    """DuckDB whose compact session key is the id's length: nearly every session shares one."""

    def hash64(self, expr: str) -> str:
        return f"length({expr})"


def test_read004b_metric_by_page_title_runs_the_exact_query_when_hashed_session_keys_collide(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not world.services.reader.dialect.session_facts:
        pytest.skip("the hashed session key is used only with the sessions table")
    monkeypatch.setattr(world.services.reader, "dialect", _LengthKeys())
    body = world.get("/metric", parameter="page_title", limit="1000", **WINDOW)["data"]
    expected = truth.expected_metric(in_window(world), "page_title")
    assert expected and [(r["value"], r["count"]) for r in body["data"]] == expected


def test_read005_metric_pagination(world: World) -> None:
    full = world.get("/metric", parameter="pathname", **WINDOW)["data"]["data"]
    page1 = world.get("/metric", parameter="pathname", limit="3", page="1", **WINDOW)["data"]
    page2 = world.get("/metric", parameter="pathname", limit="3", page="2", **WINDOW)["data"]
    beyond = world.get("/metric", parameter="pathname", limit="3", page="50", **WINDOW)["data"]
    assert page1["data"] + page2["data"] == full[:6]
    assert page1["totalCount"] == page2["totalCount"] == beyond["totalCount"] == len(full)
    assert beyond["data"] == []


FILTER_CASES = [
    [{"parameter": "channel", "type": "equals", "value": ["Organic Search", "Email"]}],
    [{"parameter": "channel", "type": "equals", "value": ["Direct"]}],
    [{"parameter": "country", "type": "not_equals", "value": ["FR", "US"]}],
    [{"parameter": "browser", "type": "contains", "value": ["fox"]}],
    [{"parameter": "pathname", "type": "regex", "value": ["^/blog/"]}],
    [{"parameter": "pathname", "type": "not_contains", "value": ["docs"]}],
    [{"parameter": "entry_page", "type": "starts_with", "value": ["/blog"]}],
    [{"parameter": "utm_campaign", "type": "is_null", "value": []}],
    [{"parameter": "referrer", "type": "equals", "value": ["google.com"]}],
    [{"parameter": "event_name", "type": "equals", "value": ["signup"]}],
    [{"parameter": "prop:plan", "type": "equals", "value": ["pro"]}],
    [{"parameter": "prop:seats", "type": "greater_than", "value": [4]}],
    [
        {"parameter": "device_type", "type": "equals", "value": ["Desktop"]},
        {"parameter": "prop:trial", "type": "equals", "value": [True]},
    ],
]


@pytest.mark.parametrize("filters", FILTER_CASES, ids=lambda f: "+".join(x["parameter"] + ":" + x["type"] for x in f))
def test_read006_filters_select_sessions_then_measure_all_their_activity(world: World, filters: list[dict]) -> None:
    rows = in_window(world)
    chosen = truth.qualify(rows, filters)
    assert 0 < len(chosen) < rows["session_id"].nunique()  # the case really filters something
    data = world.get("/overview", filters=json.dumps(filters), **WINDOW)["data"]
    expected = truth.expected_overview(rows[rows["session_id"].isin(chosen)])
    assert data["sessions"] == expected["sessions"] == len(chosen)
    assert data["pageviews"] == expected["pageviews"]
    assert data["users"] == expected["users"]
    assert truth.is_close(data["bounce_rate"], expected["bounce_rate"])


GOALS = [
    {"name": "Blog post", "goalType": "path", "config": {"pathPattern": "/blog/*"}},
    {"name": "Any docs", "goalType": "path", "config": {"pathPattern": "/docs/**"}},
    {"name": "Signup", "goalType": "event", "config": {"eventName": "signup"}},
    {
        "name": "Pro signup",
        "goalType": "event",
        "config": {"eventName": "signup", "eventPropertyKey": "plan", "eventPropertyValue": "pro"},
    },
    {
        "name": "Big team",
        "goalType": "event",
        "config": {"eventName": "signup", "eventPropertyKey": "seats", "eventPropertyValue": 10},
    },
    {
        "name": "Trial",
        "goalType": "event",
        "config": {"eventName": "signup", "eventPropertyKey": "trial", "eventPropertyValue": True},
    },
]


@pytest.fixture(scope="module")
def goal_ids(world: World) -> list[int]:
    ids = []
    for goal in GOALS:
        response = world.client.post(f"/api/sites/{world.site_id}/goals", json=goal, headers=world.owner.headers)
        assert response.status_code == 201, response.text
        ids.append(response.json()["goalId"])
    return ids


def test_read007_goals_conversions_match_pandas(world: World, goal_ids: list[int]) -> None:
    body = world.get("/goals", limit="100", **WINDOW)
    assert body["meta"] == {"total": len(GOALS), "page": 1, "pageSize": 100, "totalPages": 1}
    by_id = {g["goalId"]: g for g in body["data"]}
    rows = in_window(world)
    for goal_id, goal in zip(goal_ids, GOALS, strict=True):
        sessions, conversions, _ = truth.expected_goal(rows, goal)
        got = by_id[goal_id]
        assert (got["total_sessions"], got["total_conversions"]) == (sessions, conversions), goal["name"]
        assert got["conversion_rate"] == pytest.approx(conversions / sessions)
        assert 0 < conversions < sessions
        assert got["createdAt"].endswith("Z") and got["config"] == goal["config"]


def test_read007b_more_goals_than_one_mask_holds_match_pandas(world: World) -> None:
    """70 goals: the goals list keeps 62 goals' bits per mask, so the last eight are counted from a second mask."""
    site = make_site(world.services, world.owner, "many-goals.example")
    rows = truth.generate_events(site.site_id, sessions=120, seed=21)
    world.services.events.append(rows_to_table(rows))
    kinds: list[tuple[str, dict[str, Any]]] = [("path", {"pathPattern": path}) for path in truth.PATHS]
    kinds += [("path", {"pathPattern": pattern}) for pattern in ("/blog/*", "/docs/**", "/blog/**", "/**")]
    kinds += [(g["goalType"], g["config"]) for g in GOALS if g["goalType"] == "event"]
    goals = [
        {"name": f"Goal {i}", "goalType": kinds[i % len(kinds)][0], "config": kinds[i % len(kinds)][1]}
        for i in range(70)
    ]
    headers = world.owner.headers
    ids = []
    for goal in goals:
        response = world.client.post(f"/api/sites/{site.site_id}/goals", json=goal, headers=headers)
        assert response.status_code == 201, response.text
        ids.append(response.json()["goalId"])
    response = world.client.get(f"/api/sites/{site.site_id}/goals", params={"limit": "100", **WINDOW}, headers=headers)
    assert response.status_code == 200, response.text
    by_id = {g["goalId"]: g for g in response.json()["data"]}
    in_range = truth.window_rows(truth.frame(rows), WINDOW_START, WINDOW_END)
    for goal_id, goal in zip(ids, goals, strict=True):
        sessions, conversions, _ = truth.expected_goal(in_range, goal)
        assert (by_id[goal_id]["total_sessions"], by_id[goal_id]["total_conversions"]) == (sessions, conversions)
    # Goals 62 and up (the second mask) convert sessions, and not the same as the goal 62 places before them.
    later = [by_id[goal_id]["total_conversions"] for goal_id in ids[62:]]
    assert all(later) and later != [by_id[goal_id]["total_conversions"] for goal_id in ids[:8]]


def test_read007c_goals_from_stored_goal_bits_match_pandas_and_an_edited_goal_is_read_again(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creating goals has the DuckDB store keep each session's goal bits; once kept, the goals list, each goal's
    breakdown by channel and by page and its sessions read them (no event of a whole session) with the numbers pandas
    gives, and so after a goal is edited and its new bit kept. A goal without a kept bit is counted from the events.
    The ClickHouse store keeps none and always groups events."""
    site = make_site(world.services, world.owner, "goal-bits.example")
    rows = truth.generate_events(site.site_id, sessions=150, seed=31)
    world.services.events.append(rows_to_table(rows))
    headers, goals_path = world.owner.headers, f"/api/sites/{site.site_id}/goals"
    ids = []
    for goal in GOALS:
        response = world.client.post(goals_path, json=goal, headers=headers)
        assert response.status_code == 201, response.text
        ids.append(response.json()["goalId"])
    ran: list[str] = []
    reader = world.services.reader
    run = reader._run
    monkeypatch.setattr(reader, "_run", lambda query: ran.append(query.sql) or run(query))
    in_range = truth.window_rows(truth.frame(rows), WINDOW_START, WINDOW_END)
    sessions = truth.sessions_of(in_range)
    duckdb = world.services.events.dialect == "duckdb"

    def read(goals: list[dict[str, Any]]) -> None:
        if duckdb:
            wait_until(kept, message="the goal bits were not kept")
        ran.clear()
        response = world.client.get(goals_path, params={"limit": "100", **WINDOW}, headers=headers)
        assert response.status_code == 200, response.text
        by_id = {g["goalId"]: g for g in response.json()["data"]}
        for goal_id, goal in zip(ids, goals, strict=True):
            expected = truth.expected_goal(in_range, goal)[:2]
            assert (by_id[goal_id]["total_sessions"], by_id[goal_id]["total_conversions"]) == expected, goal
        assert any("goal_mask" in sql for sql in ran) == duckdb
        ran.clear()
        for goal_id, goal in zip(ids, goals, strict=True):
            _, conversions, converted = truth.expected_goal(in_range, goal)
            response = world.client.get(
                f"{goals_path}/{goal_id}/breakdown", params={"parameter": "channel", **WINDOW}, headers=headers
            )
            assert response.status_code == 200, response.text
            assert response.json()["meta"]["total_conversions"] == conversions
            got = {i["value"]: (i["sessions"], i["conversions"]) for i in response.json()["data"]}
            expected_values = {
                channel: (len(members), len(set(members) & converted))
                for channel, members in sessions.groupby("channel").groups.items()
            }
            assert got == expected_values, goal
            # By page: the stored lists of paths of whole sessions and their bits.
            response = world.client.get(
                f"{goals_path}/{goal_id}/breakdown", params={"parameter": "pathname", **WINDOW}, headers=headers
            )
            assert response.status_code == 200, response.text
            meta = response.json()["meta"]
            assert (meta["total_sessions"], meta["total_conversions"]) == (len(sessions), conversions), goal
            got = {i["value"]: (i["sessions"], i["conversions"]) for i in response.json()["data"]}
            pageviews = in_range[in_range["type"] == "pageview"]
            expected_values = {
                path: (len(members), len(members & converted))
                for path, members in pageviews.groupby("pathname")["session_id"].agg(set).items()
                if path
            }
            assert got == expected_values and response.json()["totalCount"] == len(expected_values), goal
            response = world.client.get(
                f"{goals_path}/{goal_id}/sessions", params={"limit": "100", **WINDOW}, headers=headers
            )
            assert response.status_code == 200, response.text
            assert response.json()["totalCount"] == conversions
            assert {s["session_id"] for s in response.json()["data"]} == converted, goal
        # Every goal query that ran read the bits on DuckDB and the events on ClickHouse (an unchanged goal's answers
        # come from the result cache; the count keying that cache names no session). A page of a goal's sessions is
        # then described from its sessions' events, named in the query: no goal is tested there.
        asked = [sql for sql in ran if "session_id" in sql and "described AS" not in sql]
        assert asked and all(("goal_mask" in sql) == duckdb for sql in asked)

    def specs() -> list[GoalSpec]:
        return [
            GoalSpec(g.goal_id, g.goal_type, g.config or {}) for g in world.services.metadata.all_goals(site.site_id)
        ]

    def kept() -> bool:
        return (
            not reader.storing_goal_bits() and world.services.events.stored_goal_bits(site.site_id, specs()) is not None
        )

    read(GOALS)
    edited = [*GOALS]
    edited[0] = {"name": "Pricing", "goalType": "path", "config": {"pathPattern": "/pricing"}}
    response = world.client.put(f"{goals_path}/{ids[0]}", json=edited[0], headers=headers)
    assert response.status_code == 200, response.text
    read(edited)
    # A goal no goal of the site is (so no bit is kept for it) sends the list to the events.
    unkept = {"goalType": "path", "config": {"pathPattern": "/docs/*"}}
    scope = ReadParams(WINDOW["start_date"], WINDOW["end_date"], WINDOW["time_zone"]).scope(site.site_id)
    ran.clear()
    row = reader.goals_counts(scope, [*specs(), GoalSpec(0, unkept["goalType"], unkept["config"])])
    assert not any("goal_mask" in sql for sql in ran)
    assert (row["sessions"], row[f"g{len(GOALS)}"]) == truth.expected_goal(in_range, unkept)[:2]


def test_read008_goals_sort_and_pages(world: World, goal_ids: list[int]) -> None:
    first = world.get("/goals", page_size="4", sort="goalId", order="asc")
    second = world.get("/goals", page_size="4", page="2", sort="goalId", order="asc")
    assert [g["goalId"] for g in first["data"] + second["data"]] == sorted(goal_ids)
    assert first["meta"] == {"total": 6, "page": 1, "pageSize": 4, "totalPages": 2}
    by_name = world.get("/goals", limit="100", sort="name", order="desc")["data"]
    assert [g["name"] for g in by_name] == sorted((g["name"] for g in GOALS), reverse=True)


def test_read009_channel_recipe_goal_sessions_equal_metric_counts(world: World, goal_ids: list[int]) -> None:
    channels = world.get("/metric", parameter="channel", limit="20", **WINDOW)["data"]["data"]
    assert any(c["value"] == "" for c in channels)
    rows = in_window(world)
    for channel in channels:
        flt = json.dumps([{"parameter": "channel", "type": "equals", "value": [channel["value"]]}])
        goals = world.get("/goals", filters=flt, limit="100", **WINDOW)["data"]
        signup = next(g for g in goals if g["goalId"] == goal_ids[2])
        assert signup["total_sessions"] == channel["count"], channel["value"]
        chosen = truth.qualify(rows, [{"parameter": "channel", "type": "equals", "value": [channel["value"]]}])
        _, conversions, _ = truth.expected_goal(rows[rows["session_id"].isin(chosen)], GOALS[2])
        assert signup["total_conversions"] == conversions


def _iso(instant: pd.Timestamp) -> str:
    """A UTC instant as the API writes it: milliseconds and ``Z``."""
    return instant.strftime("%Y-%m-%dT%H:%M:%S.") + f"{instant.microsecond // 1000:03d}Z"


def test_read010_goal_sessions_list_converted_sessions_newest_first(world: World, goal_ids: list[int]) -> None:
    rows = in_window(world)
    _, conversions, converted = truth.expected_goal(rows, GOALS[0])
    sessions = truth.sessions_of(rows)
    collected = []
    page = 1
    while True:
        body = world.get(f"/goals/{goal_ids[0]}/sessions", limit="10", page=str(page), **WINDOW)
        assert body["totalCount"] == conversions
        if not body["data"]:
            break
        collected += body["data"]
        page += 1
    assert {s["session_id"] for s in collected} == converted
    assert len(collected) == len(converted)
    ends = [s["session_end"] for s in collected]
    assert ends == sorted(ends, reverse=True)
    # Every session of every page is described from its in-window events (a query of its own, bounded by the page's
    # span), as pandas describes it.
    counts = rows.groupby(["session_id", "type"]).size().unstack(fill_value=0)
    referred = rows[rows["referrer"] != ""].sort_values("timestamp")
    first_referrer = referred.groupby("session_id")["referrer"].agg(list).to_dict()
    for session in collected:
        truth_row = sessions.loc[session["session_id"]]
        expected = {
            "session_start": _iso(truth_row["start"]),
            "session_end": _iso(truth_row["end"]),
            "session_duration": int((truth_row["end"] - truth_row["start"]).total_seconds()),
            "pageviews": truth_row["pageviews"],
            "events": counts.get("custom_event", {}).get(session["session_id"], 0),
            "errors": counts.get("error", {}).get(session["session_id"], 0),
            "outbound": counts.get("outbound", {}).get(session["session_id"], 0),
            "user_id": truth_row["user"],
            "channel": truth_row["channel"],
            "entry_page": truth_row["entry_page"],
            "exit_page": truth_row["exit_page"],
            "utm_source": truth_row["utm_source"],
            "utm_campaign": truth_row["utm_campaign"],
            "referrer": next(iter(first_referrer.get(session["session_id"], [])), ""),
        }
        assert {k: session[k] for k in expected} == expected, session["session_id"]
    assert collected[0]["session_start"].endswith("Z") and len(collected[0]["session_start"]) == 24


def test_read011_goal_breakdown_by_channel(world: World, goal_ids: list[int]) -> None:
    body = world.get(f"/goals/{goal_ids[2]}/breakdown", parameter="channel", **WINDOW)
    rows = in_window(world)
    sessions = truth.sessions_of(rows)
    _, conversions, converted = truth.expected_goal(rows, GOALS[2])
    assert body["meta"] == {
        "goalId": goal_ids[2],
        "parameter": "channel",
        "total_sessions": len(sessions),
        "total_conversions": conversions,
    }
    for item in body["data"]:
        members = set(sessions.index[sessions["channel"] == item["value"]])
        assert item["sessions"] == len(members)
        assert item["conversions"] == len(members & converted)
        rate = item["conversions"] / item["sessions"]
        assert item["conversion_rate"] == pytest.approx(rate)
        assert item["ci_low"] <= rate <= item["ci_high"]
        assert item["small_sample"] == (item["sessions"] < 30)
    keys = [(-i["conversion_rate"], -i["sessions"]) for i in body["data"]]
    assert keys == sorted(keys)
    assert sum(i["sessions"] for i in body["data"]) == len(sessions)


@pytest.mark.parametrize("parameter", ["utm_campaign", "utm_source"])
def test_read011b_goal_breakdown_leaves_out_the_empty_value_but_counts_its_sessions(
    world: World, goal_ids: list[int], parameter: str
) -> None:
    body = world.get(f"/goals/{goal_ids[2]}/breakdown", parameter=parameter, **WINDOW)
    rows = in_window(world)
    sessions = truth.sessions_of(rows)
    _, conversions, converted = truth.expected_goal(rows, GOALS[2])
    # Sessions without a value are in the totals, not among the values.
    assert (sessions[parameter] == "").any()
    assert (body["meta"]["total_sessions"], body["meta"]["total_conversions"]) == (len(sessions), conversions)
    values = sorted(set(sessions[parameter]) - {""})
    assert sorted(item["value"] for item in body["data"]) == values and body["totalCount"] == len(values)
    for item in body["data"]:
        members = set(sessions.index[sessions[parameter] == item["value"]])
        assert (item["sessions"], item["conversions"]) == (len(members), len(members & converted)), item["value"]


def test_read012_wilson_interval_known_value(world: World, goal_ids: list[int]) -> None:
    from api_backend.routes.goals import wilson_interval

    low, high = wilson_interval(10, 100)  # textbook: 0.0552 .. 0.1744
    assert low == pytest.approx(0.05523, abs=1e-4) and high == pytest.approx(0.17437, abs=1e-4)


def test_read013_error_names_counts_and_percentage(world: World) -> None:
    body = world.get("/error-names", **WINDOW)
    alias = world.get("/errors/names", **WINDOW)
    assert body == alias
    expected = truth.expected_error_names(in_window(world))
    assert len(body["data"]) == len(expected)
    for got, want in zip(body["data"], expected, strict=True):
        assert (got["value"], got["count"], got["sessionCount"]) == (want["value"], want["count"], want["sessionCount"])
        assert got["percentage"] == pytest.approx(want["percentage"])
    assert sum(r["percentage"] for r in body["data"]) == pytest.approx(100)
    assert body["data"][0]["errorName"] in ("TypeError", "ReferenceError", "Error")


def test_read014_error_events_newest_first_with_stack_fields(world: World) -> None:
    rows = in_window(world)
    errors = rows[(rows["type"] == "error") & rows["props"].str.contains('"x is undefined"')]
    body = world.get("/error-events", errorMessage="x is undefined", limit="100", **WINDOW)
    assert body == world.get("/errors/events", errorMessage="x is undefined", limit="100", **WINDOW)
    assert len(body["data"]) == len(errors) == body["totalCount"]
    stamps = [e["timestamp"] for e in body["data"]]
    assert stamps == sorted(stamps, reverse=True)
    event = body["data"][0]
    assert event["message"] == "x is undefined" and event["stack"].startswith("TypeError")
    assert (event["fileName"], event["lineNumber"], event["columnNumber"]) == ("https://example.com/app.js", 10, 5)
    other = world.get("/error-events", errorMessage="Network failed", limit="1", **WINDOW)["data"][0]
    assert (other["lineNumber"], other["columnNumber"], other["fileName"]) == (7, 2, "")  # lineno/colno fallback


@pytest.mark.parametrize("zone", ["Europe/Paris", "UTC"])
def test_read015_error_series_hourly_across_dst_gap_filled(world: World, zone: str) -> None:
    params = {"start_date": "2026-03-28", "end_date": "2026-03-29", "time_zone": zone}
    body = world.get("/error-bucketed", errorMessage="x is undefined", bucket="hour", **params)
    assert body == world.get("/errors/time-series", errorMessage="x is undefined", bucket="hour", **params)
    assert body["success"] is True
    # Paris: 24 hours on the 28th and 23 on the 29th (spring forward).
    assert len(body["data"]) == (47 if zone == "Europe/Paris" else 48)
    start = datetime(2026, 3, 27, 23) if zone == "Europe/Paris" else datetime(2026, 3, 28)
    end = datetime(2026, 3, 29, 22) if zone == "Europe/Paris" else datetime(2026, 3, 30)
    rows = truth.window_rows(world.df, start, end)
    errors = rows[(rows["type"] == "error") & rows["props"].str.contains('"x is undefined"')]
    expected = truth.local_buckets(errors["timestamp"], zone, "hour")
    got = {b["time"]: b["error_count"] for b in body["data"]}
    assert {k: v for k, v in got.items() if v} == expected
    times = [b["time"] for b in body["data"]]
    assert times == sorted(times) and len(set(times)) == len(times)


def test_read016_overview_daily_series_in_zone(world: World) -> None:
    body = world.get("/overview/time-series", bucket="day", **WINDOW)
    assert body == world.get("/overview-bucketed", bucket="day", **WINDOW)
    times = [b["time"] for b in body["data"]]
    assert times == [
        "2026-03-26T23:00:00.000Z",
        "2026-03-27T23:00:00.000Z",
        "2026-03-28T23:00:00.000Z",
        "2026-03-29T22:00:00.000Z",
    ]
    rows = in_window(world)
    pageviews = truth.local_buckets(rows[rows["type"] == "pageview"]["timestamp"], "Europe/Paris", "day")
    starts = truth.local_buckets(truth.sessions_of(rows)["start"], "Europe/Paris", "day")
    for bucket in body["data"]:
        assert bucket["pageviews"] == pageviews.get(bucket["time"], 0)
        assert bucket["sessions"] == starts.get(bucket["time"], 0)
    assert sum(b["sessions"] for b in body["data"]) == rows["session_id"].nunique()


def test_read017_org_usage_days_in_zone_zero_filled(world: World) -> None:
    params = {"start_date": "2026-03-20", "end_date": "2026-04-03", "time_zone": "Europe/Paris"}
    response = world.client.get(f"/api/org-event-count/{world.org_id}", params=params, headers=world.owner.headers)
    assert response.status_code == 200
    data = response.json()["data"]
    assert [d["event_date"] for d in data][:2] == ["2026-03-20", "2026-03-21"] and len(data) == 15
    rows = truth.window_rows(world.df, datetime(2026, 3, 19, 23), datetime(2026, 4, 3, 22))
    expected = truth.expected_usage(rows, "Europe/Paris")
    for day in data:
        want = expected.get(day["event_date"], {})
        assert day["event_count"] == want.get("event_count", 0)
        assert day["pageview_count"] == want.get("pageview_count", 0)
        assert day["error_count"] == want.get("error_count", 0)
        assert day["event_count"] == sum(v for k, v in day.items() if k.endswith("_count") and k != "event_count")
    default = world.client.get(f"/api/org-event-count/{world.org_id}", headers=world.owner.headers).json()["data"]
    assert len(default) == 30 and default[-1]["event_date"] == datetime.now(UTC).replace(tzinfo=None).date().isoformat()


FUNNELS = [
    [{"type": "page", "value": "/"}, {"type": "page", "value": "/blog/*"}],
    [{"type": "page", "value": "/blog/**"}, {"type": "event", "value": "signup", "name": "Signed up"}],
    [{"type": "page", "value": "/pricing"}, {"type": "page", "value": "/signup"}, {"type": "event", "value": "signup"}],
]


@pytest.mark.parametrize("steps", FUNNELS, ids=["home-blog", "blog-signup", "three-steps"])
def test_read018_funnel_matches_pandas(world: World, steps: list[dict]) -> None:
    response = world.client.post(
        f"/api/sites/{world.site_id}/funnels/analyze", params=WINDOW, json={"steps": steps}, headers=world.owner.headers
    )
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    expected = truth.expected_funnel(in_window(world), steps)
    assert [d["sessions"] for d in data] == expected
    assert expected[0] > expected[-1] > 0
    assert data[1]["step_name"] == steps[1].get("name", steps[1]["value"])
    for i, d in enumerate(data):
        assert d["step_number"] == i + 1 and d["visitors"] == d["sessions"]
        assert d["conversion_rate"] == pytest.approx(expected[i] * 100 / expected[0])
        want_drop = 0 if i == 0 else (1 - expected[i] / expected[i - 1]) * 100
        assert d["dropoff_rate"] == pytest.approx(want_drop)


def test_read019_filtered_goal_and_funnel_agree_with_pandas(world: World, goal_ids: list[int]) -> None:
    filters = [{"parameter": "prop:plan", "type": "equals", "value": ["pro"]}]
    rows = in_window(world)
    chosen = rows[rows["session_id"].isin(truth.qualify(rows, filters))]
    goals = {g["goalId"]: g for g in world.get("/goals", filters=json.dumps(filters), limit="100", **WINDOW)["data"]}
    sessions, conversions, _ = truth.expected_goal(chosen, GOALS[0])
    assert (goals[goal_ids[0]]["total_sessions"], goals[goal_ids[0]]["total_conversions"]) == (sessions, conversions)
    response = world.client.post(
        f"/api/sites/{world.site_id}/funnels/analyze",
        params={**WINDOW, "filters": json.dumps(filters)},
        json={"steps": FUNNELS[1]},
        headers=world.owner.headers,
    )
    assert [d["sessions"] for d in response.json()["data"]] == truth.expected_funnel(chosen, FUNNELS[1])


def test_read020_end_date_today_runs_up_to_now(world: World) -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    site = make_site(world.services, world.owner, "today.example")
    rows = [
        {"site_id": site.site_id, "timestamp": now - timedelta(minutes=2), "session_id": "a", "type": "pageview"},
        {"site_id": site.site_id, "timestamp": now + timedelta(hours=2), "session_id": "b", "type": "pageview"},
    ]
    world.services.events.append(rows_to_table(rows))
    today = now.date().isoformat()
    response = world.client.get(
        f"/api/sites/{site.site_id}/overview",
        params={"start_date": today, "end_date": today},
        headers=world.owner.headers,
    )
    assert response.json()["data"]["sessions"] == 1  # the future event is not counted


def test_read021_error_filters_page_filters_apply_to_error_rows(world: World) -> None:
    rows = in_window(world)
    by_page = [{"parameter": "pathname", "type": "equals", "value": ["/pricing"]}]
    body = world.get("/error-names", filters=json.dumps(by_page), **WINDOW)
    # Row level: only errors that happened on /pricing, not every error of sessions that saw /pricing.
    expected = truth.expected_error_names(rows[rows["pathname"] == "/pricing"])
    assert [(r["value"], r["count"]) for r in body["data"]] == [(r["value"], r["count"]) for r in expected]
    by_channel = [{"parameter": "channel", "type": "equals", "value": ["Email"]}]
    body = world.get("/error-names", filters=json.dumps(by_channel), **WINDOW)
    chosen = truth.qualify(rows, by_channel)
    expected = truth.expected_error_names(rows[rows["session_id"].isin(chosen)])
    assert [(r["value"], r["count"], r["sessionCount"]) for r in body["data"]] == [
        (r["value"], r["count"], r["sessionCount"]) for r in expected
    ]


def test_read022_metric_event_name_counts_events(world: World) -> None:
    rows = in_window(world)
    custom = rows[rows["type"] == "custom_event"]
    body = world.get("/metric", parameter="event_name", **WINDOW)["data"]
    expected = sorted(custom.groupby("event_name").size().items(), key=lambda x: (-x[1], x[0]))
    assert [(r["value"], r["count"]) for r in body["data"]] == [(k, int(v)) for k, v in expected]
    for row in body["data"]:
        assert row["sessions"] == custom[custom["event_name"] == row["value"]]["session_id"].nunique()
    only = json.dumps([{"parameter": "event_name", "type": "equals", "value": ["play"]}])
    narrowed = world.get("/metric", parameter="event_name", filters=only, **WINDOW)["data"]["data"]
    assert [r["value"] for r in narrowed] == ["play"]


def test_read023_goal_sessions_honour_filters(world: World, goal_ids: list[int]) -> None:
    flt = [{"parameter": "country", "type": "equals", "value": ["FR"]}]
    rows = in_window(world)
    chosen = rows[rows["session_id"].isin(truth.qualify(rows, flt))]
    _, conversions, converted = truth.expected_goal(chosen, GOALS[2])
    body = world.get(f"/goals/{goal_ids[2]}/sessions", filters=json.dumps(flt), limit="100", **WINDOW)
    assert body["totalCount"] == conversions
    assert {s["session_id"] for s in body["data"]} == converted
    assert {s["country"] for s in body["data"]} == {"FR"}


def test_read024_funnel_step_with_property_and_hostname(world: World) -> None:
    steps = [
        {"type": "page", "value": "/**", "hostname": "example.com"},
        {"type": "event", "value": "signup", "eventPropertyKey": "plan", "eventPropertyValue": "pro"},
    ]
    response = world.client.post(
        f"/api/sites/{world.site_id}/funnels/analyze", params=WINDOW, json={"steps": steps}, headers=world.owner.headers
    )
    expected = truth.expected_funnel(in_window(world), steps)
    assert [d["sessions"] for d in response.json()["data"]] == expected and expected[1] > 0
    elsewhere = [{**steps[0], "hostname": "elsewhere.example"}, steps[1]]
    response = world.client.post(
        f"/api/sites/{world.site_id}/funnels/analyze",
        params=WINDOW,
        json={"steps": elsewhere},
        headers=world.owner.headers,
    )
    data = response.json()["data"]
    assert [d["sessions"] for d in data] == [0, 0]
    assert data[1]["conversion_rate"] is None and data[1]["dropoff_rate"] is None  # 0/0 is null, not NaN


def test_read025_goal_breakdown_by_page_counts_each_page_a_session_saw(world: World, goal_ids: list[int]) -> None:
    body = world.get(f"/goals/{goal_ids[3]}/breakdown", parameter="pathname", **WINDOW)
    rows = in_window(world)
    _, _, converted = truth.expected_goal(rows, GOALS[3])
    pageviews = rows[rows["type"] == "pageview"]
    assert {i["value"] for i in body["data"]} == set(pageviews["pathname"])
    for item in body["data"]:
        members = set(pageviews[pageviews["pathname"] == item["value"]]["session_id"])
        assert (item["sessions"], item["conversions"]) == (len(members), len(members & converted)), item["value"]


def test_read026_error_pagination(world: World) -> None:
    full = world.get("/error-names", **WINDOW)
    pages = [world.get("/error-names", limit="1", page=str(n), **WINDOW) for n in (1, 2, 3, 4)]
    assert [p["data"][0] for p in pages[:3]] == full["data"]
    assert pages[3]["data"] == [] and all(p["totalCount"] == 3 for p in pages)
    events = world.get("/error-events", errorMessage="Network failed", limit="100", **WINDOW)["data"]
    first = world.get("/error-events", errorMessage="Network failed", limit="5", page="1", **WINDOW)
    second = world.get("/error-events", errorMessage="Network failed", limit="5", page="2", **WINDOW)
    assert first["data"] + second["data"] == events[:10]
    assert first["totalCount"] == len(events)
    every = [
        world.get("/error-events", errorMessage="Network failed", limit="3", page=str(n), **WINDOW) for n in (1, 2, 3)
    ]
    assert [e for page in every for e in page["data"]] == events[:9]
    past = world.get(
        "/error-events", errorMessage="Network failed", limit="5", page=str(len(events) // 5 + 2), **WINDOW
    )
    assert past["data"] == [] and past["totalCount"] == len(events)


def test_read027_past_minutes_window(world: World) -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    site = make_site(world.services, world.owner, "recent.example")
    minutes_ago = [3, 8, 14, 40]
    rows = [
        {"site_id": site.site_id, "timestamp": now - timedelta(minutes=m), "session_id": f"s{m}", "type": "pageview"}
        for m in minutes_ago
    ]
    world.services.events.append(rows_to_table(rows))
    response = world.client.get(
        f"/api/sites/{site.site_id}/overview",
        params={"past_minutes_start": "30", "past_minutes_end": "5"},
        headers=world.owner.headers,
    )
    assert response.json()["data"]["sessions"] == 2  # 8 and 14 minutes ago
    series = world.client.get(
        f"/api/sites/{site.site_id}/overview/time-series",
        params={"past_minutes_start": "60", "past_minutes_end": "0", "bucket": "five_minutes"},
        headers=world.owner.headers,
    ).json()["data"]
    assert sum(b["sessions"] for b in series) == 4 and 12 <= len(series) <= 13


def test_read028_filtered_series_adds_up_to_filtered_overview(world: World) -> None:
    flt = json.dumps([{"parameter": "channel", "type": "equals", "value": ["Organic Search"]}])
    series = world.get("/overview/time-series", bucket="hour", filters=flt, **WINDOW)["data"]
    total = world.get("/overview", filters=flt, **WINDOW)["data"]
    rows = in_window(world)
    chosen = rows[rows["session_id"].isin(truth.qualify(rows, json.loads(flt)))]
    assert sum(b["sessions"] for b in series) == total["sessions"] == chosen["session_id"].nunique()
    assert sum(b["pageviews"] for b in series) == total["pageviews"] == int((chosen["type"] == "pageview").sum())
    assert len(series) == 24 * 4 - 1  # four Paris days, one of them 23 hours long
