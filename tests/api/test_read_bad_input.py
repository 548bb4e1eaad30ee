"""Every analytics read route and goal write refuses bad input with 400 and the contract body, changing nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api_backend.app import create_app
from api_backend.services import Services, open_services
from api_backend.settings import load_settings
from api_backend.store.events import rows_to_table
from api_backend.store.models import Site
from tests.support import Account, make_account, make_site, store_options

GET_ROUTES = [
    ("goals", {}),
    ("goals/{goal}/sessions", {}),
    ("goals/{goal}/breakdown", {"parameter": "channel"}),
    ("error-names", {}),
    ("errors/names", {}),
    ("error-events", {"errorMessage": "boom"}),
    ("errors/events", {"errorMessage": "boom"}),
    ("error-bucketed", {"errorMessage": "boom"}),
    ("errors/time-series", {"errorMessage": "boom"}),
    ("metric", {"parameter": "channel"}),
    ("overview", {}),
    ("overview/time-series", {}),
    ("overview-bucketed", {}),
    ("funnels/analyze", {}),
    ("org-event-count", {}),
    ("sessions", {}),
]

WINDOW_CASES = {
    "bad-date-format": {"start_date": "2026/03/01", "end_date": "2026-03-02"},
    "impossible-date": {"start_date": "2026-02-30", "end_date": "2026-03-02"},
    "half-date-range": {"start_date": "2026-03-01"},
    "bad-zone": {"start_date": "2026-03-01", "end_date": "2026-03-02", "time_zone": "Mars/Olympus"},
    "bad-datetime": {"start_datetime": "yesterday", "end_datetime": "2026-03-02T00:00:00Z"},
    "datetime-reversed": {"start_datetime": "2026-03-02T00:00:00Z", "end_datetime": "2026-03-01T00:00:00Z"},
    "half-datetime": {"end_datetime": "2026-03-02T00:00:00Z"},
    "negative-minutes": {"past_minutes_start": "-5", "past_minutes_end": "0"},
    "minutes-reversed": {"past_minutes_start": "5", "past_minutes_end": "10"},
    "half-minutes": {"past_minutes_start": "60"},
    "date-before-1970": {"start_date": "0002-01-01", "end_date": "2026-01-01"},
    "date-after-2100": {"start_date": "2026-01-01", "end_date": "9999-12-30"},
    "window-too-long": {"start_date": "1970-01-01", "end_date": "2099-12-31"},
    "datetime-window-too-long": {"start_datetime": "1990-01-01T00:00:00Z", "end_datetime": "2026-01-01T00:00:00Z"},
    "datetime-past-2100": {"start_datetime": "2026-01-01T00:00:00Z", "end_datetime": "9999-12-31T23:59:59-23:00"},
    "huge-minutes": {"past_minutes_start": "9" * 400, "past_minutes_end": "0"},
    "minutes-past-the-cap": {"past_minutes_start": "100000000", "past_minutes_end": "0"},
    "non-ascii-digits": {"start_date": "٢٠٢٦-٠١-٠١", "end_date": "2026-01-02"},
}

FILTER_CASES = {
    "filters-not-json": "[{",
    "filters-not-array": json.dumps({"parameter": "channel"}),
    "filter-not-object": json.dumps(["channel"]),
    "unknown-parameter": json.dumps([{"parameter": "shoe_size", "type": "equals", "value": ["42"]}]),
    "unknown-type": json.dumps([{"parameter": "channel", "type": "like", "value": ["x"]}]),
    "bad-regex": json.dumps([{"parameter": "pathname", "type": "regex", "value": ["(unclosed"]}]),
    "look-around": json.dumps([{"parameter": "pathname", "type": "regex", "value": ["^/(?!admin)"]}]),
    "back-reference": json.dumps([{"parameter": "pathname", "type": "regex", "value": ["(a)\\1"]}]),
    "huge-repeat": json.dumps([{"parameter": "pathname", "type": "regex", "value": ["a{1001}"]}]),
    "possessive": json.dumps([{"parameter": "pathname", "type": "regex", "value": ["a++"]}]),
    "long-regex": json.dumps([{"parameter": "pathname", "type": "not_regex", "value": ["a" * 501]}]),
    "numeric-needs-number": json.dumps([{"parameter": "prop:seats", "type": "greater_than", "value": ["many"]}]),
    "no-values": json.dumps([{"parameter": "country", "type": "equals", "value": []}]),
    "object-value": json.dumps([{"parameter": "country", "type": "equals", "value": [{"a": 1}]}]),
    "value-not-array": json.dumps([{"parameter": "country", "type": "equals", "value": "US"}]),
    "country-name": json.dumps([{"parameter": "country", "type": "equals", "value": ["Germany"]}]),
    "country-unknown-code": json.dumps([{"parameter": "country", "type": "not_equals", "value": ["ZZ"]}]),
    "re2-free-spacing": json.dumps([{"parameter": "pathname", "type": "regex", "value": ["(?x) a"]}]),
    "re2-ascii-flag": json.dumps([{"parameter": "pathname", "type": "regex", "value": ["(?a)\\w"]}]),
    "re2-conditional": json.dumps([{"parameter": "pathname", "type": "not_regex", "value": ["(a)?(?(1)b|c)"]}]),
    "huge-number": '[{"parameter": "prop:seats", "type": "greater_than", "value": [' + "9" * 400 + "]}]",
    "lone-surrogate-value": json.dumps([{"parameter": "pathname", "type": "equals", "value": ["\ud800"]}]),
    "lone-surrogate-regex": json.dumps([{"parameter": "pathname", "type": "regex", "value": ["a\udfff"]}]),
    "lone-surrogate-prop": json.dumps([{"parameter": "prop:\ud800", "type": "equals", "value": ["x"]}]),
}

ROUTE_CASES = [
    ("sessions", {"limit": "101"}),
    ("sessions", {"limit": "0"}),
    ("sessions", {"page": "0"}),
    ("users/u", {"limit": "101"}),
    ("sessions/" + "s" * 129, {}),
    ("users/" + "u" * 256, {}),
    ("users/u", {"start_date": "2026-03-01"}),
    ("live", {"minutes": "0"}),
    ("live", {"minutes": "61"}),
    ("live", {"minutes": "5.5"}),
    ("live", {"minutes": "x"}),
    ("live", {"limit": "51"}),
    ("overview", {"compare": "next"}),
    ("overview", {"compare": "previous"}),
    ("overview/time-series", {"compare": "yes", "start_date": "2026-03-01", "end_date": "2026-03-02"}),
    ("overview/time-series", {"compare": "previous"}),
    ("goals", {"page": "0"}),
    ("goals", {"page": "x"}),
    ("goals", {"limit": "0"}),
    ("goals", {"page_size": "101"}),
    ("goals", {"sort": "popularity"}),
    ("goals", {"order": "up"}),
    ("goals/{goal}/sessions", {"limit": "101"}),
    ("goals/{goal}/sessions", {"page": "-1"}),
    ("goals/{goal}/breakdown", {}),
    ("goals/{goal}/breakdown", {"parameter": "shoe_size"}),
    ("error-names", {"limit": "101"}),
    ("error-events", {}),
    ("errors/events", {"errorMessage": ""}),
    ("error-events", {"errorMessage": "boom", "limit": "0"}),
    ("error-bucketed", {"bucket": "hour"}),
    ("errors/time-series", {"errorMessage": "boom", "bucket": "fortnight"}),
    ("overview/time-series", {"bucket": "decade"}),
    ("overview-bucketed", {"bucket": "minute", "start_date": "2020-01-01", "end_date": "2026-01-01"}),
    ("metric", {}),
    ("metric", {"parameter": "shoe_size"}),
    ("metric", {"parameter": "channel", "limit": "1001"}),
    ("metric", {"parameter": "channel", "page": "0"}),
]

FUNNEL_BODIES = {
    "one-step": {"steps": [{"type": "page", "value": "/"}]},
    "too-many-steps": {"steps": [{"type": "page", "value": f"/{i}"} for i in range(21)]},
    "steps-not-list": {"steps": "home,blog"},
    "no-steps": {},
    "unknown-step-type": {"steps": [{"type": "page", "value": "/"}, {"type": "scroll", "value": "50%"}]},
    "missing-value": {"steps": [{"type": "page", "value": "/"}, {"type": "event"}]},
    "key-without-value": {
        "steps": [{"type": "page", "value": "/"}, {"type": "event", "value": "x", "eventPropertyKey": "plan"}]
    },
    "not-an-object": {"steps": [{"type": "page", "value": "/"}, "signup"]},
}

GOAL_BODIES = {
    "no-goal-type": {"name": "x", "config": {"pathPattern": "/a"}},
    "unknown-goal-type": {"name": "x", "goalType": "scroll", "config": {}},
    "path-without-pattern": {"name": "x", "goalType": "path", "config": {}},
    "empty-pattern": {"name": "x", "goalType": "path", "config": {"pathPattern": "  "}},
    "event-without-name": {"name": "x", "goalType": "event", "config": {"eventPropertyKey": "a"}},
    "key-without-value": {"goalType": "event", "config": {"eventName": "a", "eventPropertyKey": "plan"}},
    "value-without-key": {"goalType": "event", "config": {"eventName": "a", "eventPropertyValue": "pro"}},
    "object-property-value": {
        "goalType": "event",
        "config": {"eventName": "a", "eventPropertyKey": "plan", "eventPropertyValue": {"x": 1}},
    },
    "long-value-pattern": {"goalType": "outbound", "config": {"valuePattern": "x" * 513}},
    "unknown-config-key": {"goalType": "path", "config": {"pathpattern": "/a"}},
    "config-not-object": {"goalType": "path", "config": "/a"},
    "name-not-string": {"name": 5, "goalType": "path", "config": {"pathPattern": "/a"}},
    "pattern-not-string": {"goalType": "path", "config": {"pathPattern": 5}},
    "body-is-list": [{"goalType": "path", "config": {"pathPattern": "/a"}}],
    "lone-surrogate-name": {"name": "\ud800", "goalType": "path", "config": {"pathPattern": "/a"}},
    "lone-surrogate-pattern": {"goalType": "path", "config": {"pathPattern": "/\udc00"}},
    "lone-surrogate-property": {
        "goalType": "event",
        "config": {"eventName": "a", "propertyFilters": [{"key": "plan", "value": "\ud800"}]},
    },
}


@dataclass
class Env:
    client: TestClient
    services: Services
    owner: Account
    site: Site
    goal: int


pytestmark = pytest.mark.both_stores


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, event_store: str, request: pytest.FixtureRequest) -> Iterator[Env]:
    """One app for the whole module: bad input must never change it, which every test checks."""
    settings = load_settings(
        {},
        data_dir=str(tmp_path_factory.mktemp("bad-input") / "data"),
        secret_key="test-secret-key-0123456789",
        **store_options(event_store, request),
    )
    services = open_services(settings)
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner)
    services.events.append(
        rows_to_table(
            [{"site_id": site.site_id, "timestamp": datetime(2026, 3, 1), "session_id": "s", "type": "pageview"}]
        )
    )
    with TestClient(create_app(settings, services)) as client:
        response = client.post(
            f"/api/sites/{site.site_id}/goals",
            json={"name": "Home", "goalType": "path", "config": {"pathPattern": "/"}},
            headers=owner.headers,
        )
        yield Env(client, services, owner, site, response.json()["goalId"])
    services.close()


def _call(env: Env, route: str, params: dict[str, Any]):
    client, site, owner, goal = env.client, env.site, env.owner, env.goal
    if route == "org-event-count":
        return client.get(f"/api/org-event-count/{site.organization_id}", params=params, headers=owner.headers)
    path = f"/api/sites/{site.site_id}/" + route.format(goal=goal)
    if route == "funnels/analyze":
        steps = [{"type": "page", "value": "/"}, {"type": "page", "value": "/x"}]
        return client.post(path, params=params, json={"steps": steps}, headers=owner.headers)
    return client.get(path, params=params, headers=owner.headers)


def _state(env: Env) -> tuple:
    services, site = env.services, env.site
    goals = [(g.goal_id, g.name, g.goal_type, dict(g.config)) for g in services.metadata.all_goals(site.site_id)]
    return services.events.count(), goals


def _assert_400(response) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "INVALID_REQUEST"
    assert isinstance(body["error"], str) and body["error"]
    assert set(body) <= {"error", "code", "details"}


@pytest.mark.parametrize("case", list(WINDOW_CASES), ids=list(WINDOW_CASES))
@pytest.mark.parametrize("route,extra", GET_ROUTES, ids=[r for r, _ in GET_ROUTES])
def test_bad001_window_values(env, route, extra, case) -> None:
    before = _state(env)
    _assert_400(_call(env, route, {**extra, **WINDOW_CASES[case]}))
    assert _state(env) == before


@pytest.mark.parametrize("case", list(FILTER_CASES), ids=list(FILTER_CASES))
@pytest.mark.parametrize("route,extra", [r for r in GET_ROUTES if r[0] != "org-event-count"], ids=lambda r: str(r))
def test_bad002_filters(env, route, extra, case) -> None:
    before = _state(env)
    _assert_400(_call(env, route, {**extra, "filters": FILTER_CASES[case]}))
    assert _state(env) == before


@pytest.mark.parametrize("route,params", ROUTE_CASES, ids=[f"{r}-{p}" for r, p in ROUTE_CASES])
def test_bad003_route_parameters(env, route, params) -> None:
    _assert_400(_call(env, route, params))


@pytest.mark.parametrize("case", list(FUNNEL_BODIES), ids=list(FUNNEL_BODIES))
def test_bad004_funnel_bodies(client, site, owner, case) -> None:
    response = client.post(
        f"/api/sites/{site.site_id}/funnels/analyze", json=FUNNEL_BODIES[case], headers=owner.headers
    )
    _assert_400(response)


@pytest.mark.parametrize("case", list(GOAL_BODIES), ids=list(GOAL_BODIES))
def test_bad005_goal_bodies_create_and_replace(env, case) -> None:
    client, site, owner, goal = env.client, env.site, env.owner, env.goal
    before = _state(env)
    # Sent as JSON text with escapes (ensure_ascii), so lone surrogates travel as the bytes a client would send.
    body = json.dumps(GOAL_BODIES[case])
    headers = {**owner.headers, "Content-Type": "application/json"}
    _assert_400(client.post(f"/api/sites/{site.site_id}/goals", content=body, headers=headers))
    _assert_400(client.put(f"/api/sites/{site.site_id}/goals/{goal}", content=body, headers=headers))
    assert _state(env) == before


def test_bad006_window_messages_are_the_peers_joined(env) -> None:
    client, site, owner = env.client, env.site, env.owner
    response = client.get(
        f"/api/sites/{site.site_id}/overview",
        params={"start_date": "2026-02-30", "end_date": "03/01/2026", "time_zone": "Nowhere/City"},
        headers=owner.headers,
    )
    _assert_400(response)
    assert response.json()["error"] == (
        "Invalid time_zone; Invalid start_date value; Invalid end_date format. Use YYYY-MM-DD"
    )
    fields = [d["field"] for d in response.json()["details"]]
    assert fields == ["time_zone", "start_date", "end_date"]


def test_bad007_filter_error_names_the_problem(env) -> None:
    client, site, owner = env.client, env.site, env.owner
    filters = json.dumps([{"parameter": "channel", "type": "equals", "value": ["x"]}, {"parameter": "nope"}])
    response = client.get(f"/api/sites/{site.site_id}/overview", params={"filters": filters}, headers=owner.headers)
    _assert_400(response)
    assert "filters[1].parameter" in response.json()["error"] and "nope" in response.json()["error"]


def test_bad008_goal_validation_lists_every_field(env) -> None:
    client, site, owner = env.client, env.site, env.owner
    body = {"name": 3, "goalType": "event", "config": {"eventName": "", "extra": 1}}
    response = client.post(f"/api/sites/{site.site_id}/goals", json=body, headers=owner.headers)
    _assert_400(response)
    fields = {d["field"] for d in response.json()["details"]}
    assert fields == {"name", "config.extra", "config.eventName"}


def test_bad009_non_json_goal_body(env) -> None:
    client, site, owner = env.client, env.site, env.owner
    response = client.post(
        f"/api/sites/{site.site_id}/goals",
        content=b"{not json",
        headers={**owner.headers, "Content-Type": "application/json"},
    )
    _assert_400(response)
