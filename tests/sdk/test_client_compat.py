"""The client over real HTTP, and against answers shaped the way other servers of this API family send them.

The first tests run the real app on a loopback port (uvicorn) so the client's own ``httpx.Client`` does real
networking. The rest stand an ``httpx.MockTransport`` in for a remote peer server, whose documented quirks
(paginated envelopes, zone-local wall-clock times without offset, numbers sent as strings, numeric labels,
``page_size`` instead of ``limit``) the client must absorb.
"""

from __future__ import annotations

import json
import pickle
from datetime import UTC, date, datetime

import httpx
import pytest

from api_backend.store.events import rows_to_table
from api_client import AnalyticsAPI, AuthenticationError, Filter, Query
from tests.support import live_server


def test_client_compat001_real_http_on_loopback(app, services, owner, site):
    services.events.append(
        rows_to_table(
            [
                {"site_id": site.site_id, "timestamp": datetime(2026, 3, 2, 10), "session_id": "a", "type": "pageview"},
                {"site_id": site.site_id, "timestamp": datetime(2026, 3, 2, 11), "session_id": "b", "type": "pageview"},
            ]
        )
    )
    with live_server(app) as base, AnalyticsAPI(f"{base}/api", token=owner.api_key, timeout=10) as api:
        assert api.health()["status"] == "ok"
        assert api.organizations()[0].id == site.organization_id
        overview = api.overview(site.site_id, Query(start_date="2026-03-01", end_date="2026-03-31"))
        assert (overview.sessions, overview.pageviews) == (2, 2)
        key = api.generate_private_link(site.site_id)
        with AnalyticsAPI(f"{base}/api", private_key=key) as viewer:
            assert viewer.site(site.site_id).domain == "example.com"
            with pytest.raises(AuthenticationError):
                viewer.excluded_ips(site.site_id)


def test_client_compat002_results_survive_pickling(client, owner, site):
    # The dashboard caches results (flask-caching pickles them).
    api = AnalyticsAPI("http://testserver/api", client=client, token=owner.api_key)
    api.create_goal(site.site_id, name="Home", goal_type="path", config={"pathPattern": "/"})
    for result in (api.goals(site.site_id), api.site(site.site_id), api.metric(site.site_id, "channel")):
        assert pickle.loads(pickle.dumps(result)) == result
    query = Query(start_date=date(2026, 3, 1), end_date=date(2026, 3, 2), filters=[Filter("browser", value=["x"])])
    assert pickle.loads(pickle.dumps(query)) == query


class Peer:
    """A fake remote server: fixed JSON per path; records each request."""

    def __init__(self, routes: dict[str, object]) -> None:
        self.routes = routes
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path.removeprefix("/api")
        if path not in self.routes:
            return httpx.Response(404, json={"message": f"Route {request.method}:{request.url.path} not found"})
        return httpx.Response(200, json=self.routes[path])

    def client(self, **kwargs) -> AnalyticsAPI:
        return AnalyticsAPI("https://peer.example/api", transport=httpx.MockTransport(self), **kwargs)


def test_client_compat003_peer_goals_with_text_numbers_and_naive_times():
    peer = Peer(
        {
            "/sites/7/goals": {
                "data": [
                    {
                        "goalId": 3,
                        "siteId": 7,
                        "name": None,
                        "goalType": "event",
                        "config": {"eventName": "signup", "eventPropertyKey": "plan", "eventPropertyValue": True},
                        "createdAt": "2024-01-10 12:00:00.123456",
                        "total_conversions": 4,
                        "total_sessions": 10,
                        "conversion_rate": 0.4,
                    }
                ],
                "meta": {"total": "1", "page": 1, "pageSize": 10, "totalPages": 1},
            }
        }
    )
    with peer.client(token="k") as api:
        page = api.goals(7, Query(start_date="2024-01-01", end_date="2024-01-31"), page=1, limit=10)
    goal = page.data[0]
    assert (goal.goal_id, goal.name, goal.config.event_property_value) == (3, None, True)
    assert goal.created_at == datetime(2024, 1, 10, 12, 0, 0, 123456, tzinfo=UTC)
    assert page.meta.total == 1
    sent = peer.requests[0]
    assert sent.headers["authorization"] == "Bearer k"
    assert sent.url.params["page_size"] == "10" and sent.url.params["limit"] == "10"
    assert sent.url.params["time_zone"] == "UTC"


def test_client_compat004_peer_paginated_envelopes_and_numeric_labels():
    peer = Peer(
        {
            "/sites/7/error-names": {
                "data": {
                    "data": [{"value": "boom", "errorName": "Error", "count": 3, "sessionCount": 2, "percentage": 50}],
                    "totalCount": 1,
                }
            },
            "/sites/7/metric": {"data": {"data": [{"value": 2024, "count": 5, "percentage": 100}], "totalCount": 1}},
            "/sites/7/goals/3/sessions": {
                "data": [
                    {
                        "session_id": "abc",
                        "user_id": "u",
                        "session_start": "2024-01-02 10:00:00",
                        "session_end": "2024-01-02 10:05:00",
                        "pageviews": 2,
                        "session_duration": 300,
                        "channel": "Direct",
                        "region": "US-CA",
                    }
                ]
            },
        }
    )
    with peer.client() as api:
        names = api.error_names(7, page=1)
        names_page = api.error_names_page(7, page=1)
        metric = api.metric(7, "utm_campaign")
        sessions = api.goal_sessions(7, 3)
    assert [(n.value, n.error_name, n.count, n.session_count, n.percentage) for n in names] == [
        ("boom", "Error", 3, 2, 50.0)
    ]
    assert (metric.total_count, metric.rows[0].value, metric.rows[0].count) == (1, "2024", 5)
    # The peer nests totalCount beside its rows: the page still carries it.
    assert (names_page.data, names_page.meta.total, names_page.meta.total_pages) == (names, 1, 1)
    assert sessions[0].session_end == datetime(2024, 1, 2, 10, 5, tzinfo=UTC)
    assert sessions[0].region == "US-CA"  # extra fields are kept
    assert "authorization" not in peer.requests[0].headers


def test_client_compat005_peer_local_bucket_times_take_the_request_zone():
    peer = Peer(
        {
            "/sites/7/error-bucketed": {"success": True, "data": [{"time": "2024-01-30 00:00:00", "error_count": "3"}]},
            "/sites/7/overview/time-series": {
                "data": [{"time": "2024-07-01 00:00:00", "sessions": 2, "pageviews": 3, "users": 2}]
            },
            "/org-event-count/org1": {"data": [{"event_date": "2024-01-30 00:00:00", "pageview_count": "4"}]},
        }
    )
    paris = Query(start_date="2024-01-30", end_date="2024-01-30", time_zone="Europe/Paris")
    with peer.client() as api:
        [bucket] = api.error_time_series(7, "boom", paris, bucket="day")
        [summer] = api.overview_time_series(7, paris, bucket="day")
        [usage] = api.org_usage("org1", paris)
        [utc_bucket] = api.error_time_series(7, "boom", bucket="day")
    assert bucket.time == datetime(2024, 1, 29, 23, tzinfo=UTC)
    assert bucket.error_count == 3
    assert summer.time == datetime(2024, 6, 30, 22, tzinfo=UTC)
    assert summer.pages_per_session is None
    assert (usage.event_date, usage.pageview_count) == (date(2024, 1, 30), 4)
    assert utc_bucket.time == datetime(2024, 1, 30, tzinfo=UTC)
    assert peer.requests[0].url.params["errorMessage"] == "boom"
    assert peer.requests[0].url.params["bucket"] == "day"


def test_client_compat006_request_bodies_use_the_api_names():
    seen: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content or b"null")
        seen.append(
            {
                "method": request.method,
                "path": request.url.raw_path.decode(),
                "body": body,
                "params": request.url.params,
            }
        )
        if request.url.path.endswith("/funnels/analyze"):
            return httpx.Response(200, json={"data": []})
        if request.url.path.endswith("/config"):
            return httpx.Response(200, json={"success": True, "message": "ok", "config": {**body, "public": False}})
        return httpx.Response(201, json={"success": True, "goalId": 12})

    with AnalyticsAPI("https://peer.example/api", transport=httpx.MockTransport(handler)) as api:
        api.create_goal(
            "abc def", name="Pro", goal_type="event", config={"event_name": "signup", "eventPropertyKey": "plan"}
        )
        api.funnel(
            7,
            [{"type": "page", "value": "/"}, {"type": "event", "value": "buy", "event_property_value": 9}],
            Query(filters=[Filter("country", value="FR")]),
        )
        config = api.update_site_config(7, salt_user_ids=True, blockBots=False, excluded_ips=[])
    goal, funnel, update = seen
    assert goal["path"] == "/api/sites/abc%20def/goals"  # ids are escaped as one path segment
    assert goal["body"] == {
        "name": "Pro",
        "goalType": "event",
        "config": {"eventName": "signup", "eventPropertyKey": "plan"},
    }
    assert funnel["body"]["steps"][1] == {"type": "event", "value": "buy", "eventPropertyValue": 9}
    assert json.loads(funnel["params"]["filters"]) == [{"parameter": "country", "type": "equals", "value": ["FR"]}]
    assert update["body"] == {"saltUserIds": True, "blockBots": False, "excludedIPs": []}
    assert (config.salt_user_ids, config.block_bots, config.excluded_ips) == (True, False, [])
    with pytest.raises(TypeError):
        api.funnel(7, {"type": "page", "value": "/"})  # type: ignore[arg-type]
