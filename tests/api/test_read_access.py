"""Who may read analytics and write goals: anonymous, private link, public site, outsider, member."""

from __future__ import annotations

import pytest

from tests.support import make_account, make_site

READS = [
    ("GET", "goals", {}),
    ("GET", "goals/{goal}/sessions", {}),
    ("GET", "goals/{goal}/breakdown", {"parameter": "channel"}),
    ("GET", "error-names", {}),
    ("GET", "errors/names", {}),
    ("GET", "error-events", {"errorMessage": "x"}),
    ("GET", "errors/events", {"errorMessage": "x"}),
    ("GET", "error-bucketed", {"errorMessage": "x"}),
    ("GET", "errors/time-series", {"errorMessage": "x"}),
    ("GET", "metric", {"parameter": "channel"}),
    ("GET", "overview", {}),
    ("GET", "overview/time-series", {}),
    ("GET", "overview-bucketed", {}),
    ("POST", "funnels/analyze", {}),
]
WRITES = [("POST", "goals"), ("PUT", "goals/{goal}"), ("DELETE", "goals/{goal}")]
FUNNEL = {"steps": [{"type": "page", "value": "/"}, {"type": "page", "value": "/x"}]}
GOAL = {"goalType": "path", "config": {"pathPattern": "/"}}


@pytest.fixture
def goal(client, site, owner) -> int:
    return client.post(f"/api/sites/{site.site_id}/goals", json=GOAL, headers=owner.headers).json()["goalId"]


def _read(client, site, goal, method, route, params, headers):
    path = f"/api/sites/{site.site_id}/{route.format(goal=goal)}"
    if method == "POST":
        return client.post(path, params=params, json=FUNNEL, headers=headers)
    return client.get(path, params=params, headers=headers)


def _write(client, site, goal, method, route, headers):
    path = f"/api/sites/{site.site_id}/{route.format(goal=goal)}"
    return client.request(method, path, json=None if method == "DELETE" else GOAL, headers=headers)


def test_access001_reads(client, site, owner, goal, services) -> None:
    key = services.metadata.set_private_link_key(site.site_id, True)
    outsider = make_account(services, "outsider@example.com")
    member = make_account(services, "member@example.com")
    services.metadata.add_member(site.organization_id, member.user.id, "member")
    for method, route, params in READS:

        def status(headers, method=method, route=route, params=params):
            return _read(client, site, goal, method, route, params, headers).status_code

        assert status({}) == 401, route
        assert status({"X-Private-Key": "wrong-key"}) == 401, route
        assert status({"X-Private-Key": key}) == 200, route
        assert status(outsider.headers) == 404, route
        assert status(member.headers) == 200, route
        assert status(owner.headers) == 200, route
    # Revocation takes effect on the next request.
    services.metadata.set_private_link_key(site.site_id, False)
    assert _read(client, site, goal, "GET", "overview", {}, {"X-Private-Key": key}).status_code == 401


def test_access002_writes_need_membership(client, site, owner, goal, services) -> None:
    key = services.metadata.set_private_link_key(site.site_id, True)
    outsider = make_account(services, "outsider@example.com")
    for method, route in WRITES:
        assert _write(client, site, goal, method, route, {}).status_code == 401, route
        assert _write(client, site, goal, method, route, {"X-Private-Key": key}).status_code == 401, route
        assert _write(client, site, goal, method, route, outsider.headers).status_code == 404, route
    assert len(services.metadata.all_goals(site.site_id)) == 1


def test_access003_public_site_is_readable_not_writable(client, owner, services) -> None:
    public = make_site(services, owner, "public.example", public=True)
    goal = client.post(f"/api/sites/{public.site_id}/goals", json=GOAL, headers=owner.headers).json()["goalId"]
    for method, route, params in READS:
        assert _read(client, public, goal, method, route, params, {}).status_code == 200, route
    for method, route in WRITES:
        assert _write(client, public, goal, method, route, {}).status_code == 401, route


def test_access004_site_by_string_id(client, site, owner) -> None:
    response = client.get(f"/api/sites/{site.id}/overview", headers=owner.headers)
    assert response.status_code == 200
    assert response.json()["data"] == {
        "sessions": 0,
        "pageviews": 0,
        "users": 0,
        "pages_per_session": None,
        "bounce_rate": None,
        "session_duration": None,
    }


def test_access005_org_usage_for_members_only(client, site, owner, services) -> None:
    path = f"/api/org-event-count/{site.organization_id}"
    key = services.metadata.set_private_link_key(site.site_id, True)
    member = make_account(services, "member@example.com")
    services.metadata.add_member(site.organization_id, member.user.id, "member")
    outsider = make_account(services, "outsider@example.com")
    assert client.get(path).status_code == 401
    assert client.get(path, headers={"X-Private-Key": key}).status_code == 401
    assert client.get(path, headers=outsider.headers).status_code == 404
    assert client.get(path, headers=member.headers).status_code == 200
    assert client.get("/api/org-event-count/no-such-org", headers=owner.headers).status_code == 404
