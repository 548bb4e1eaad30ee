"""Goals: create, replace, delete, their validation rules, pattern semantics and who may do what."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from api_backend.store.events import rows_to_table
from tests.support import make_account, make_site


def _goals(client, site, headers) -> list[dict]:
    response = client.get(f"/api/sites/{site.site_id}/goals", params={"limit": "100"}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def test_goals001_create_list_replace_delete(client, site, owner) -> None:
    base = f"/api/sites/{site.site_id}/goals"
    body = {
        "name": "Pro plan",
        "goalType": "event",
        "config": {"eventName": "signup", "eventPropertyKey": "plan", "eventPropertyValue": "pro"},
    }
    created = client.post(base, json=body, headers=owner.headers)
    assert created.status_code == 201
    assert created.json() == {"success": True, "goalId": created.json()["goalId"]}
    goal_id = created.json()["goalId"]
    [goal] = _goals(client, site, owner.headers)
    assert goal["goalId"] == goal_id and goal["name"] == "Pro plan" and goal["goalType"] == "event"
    assert goal["config"] == body["config"]
    assert goal["createdAt"].endswith("Z") and len(goal["createdAt"]) == 24
    assert (goal["total_sessions"], goal["total_conversions"], goal["conversion_rate"]) == (0, 0, 0)

    replaced = client.put(
        f"{base}/{goal_id}", json={"goalType": "path", "config": {"pathPattern": "/thanks"}}, headers=owner.headers
    )
    assert replaced.status_code == 200 and replaced.json() == {"success": True, "goalId": goal_id}
    [goal] = _goals(client, site, owner.headers)
    assert goal["name"] is None and goal["config"] == {"pathPattern": "/thanks"} and goal["goalType"] == "path"

    deleted = client.delete(f"{base}/{goal_id}", headers=owner.headers)
    assert deleted.status_code == 200 and deleted.json() == {"success": True}
    assert _goals(client, site, owner.headers) == []
    assert client.delete(f"{base}/{goal_id}", headers=owner.headers).status_code == 404


@pytest.mark.parametrize(
    "goal_type,config,stored",
    [
        ("path", {"pathPattern": "/a", "eventName": "dropped"}, {"pathPattern": "/a"}),
        ("event", {"eventName": "x", "eventPropertyKey": "", "eventPropertyValue": ""}, {"eventName": "x"}),
        ("event", {"eventName": "x", "eventPropertyKey": "n", "eventPropertyValue": 3}, None),
        ("event", {"eventName": "x", "eventPropertyKey": "ok", "eventPropertyValue": False}, None),
        ("outbound", {"valuePattern": "https://github.com/*"}, None),
        ("button_click", {}, {}),
        ("form_submit", {"valuePattern": "signup-*"}, None),
        ("copy", {"valuePattern": ""}, {}),
        ("event", {"eventName": "x", "propertyFilters": [{"key": "a", "value": 1}, {"key": "b", "value": "c"}]}, None),
    ],
)
def test_goals002_every_goal_type_is_accepted_and_stored_clean(client, site, owner, goal_type, config, stored) -> None:
    response = client.post(
        f"/api/sites/{site.site_id}/goals",
        json={"name": "g", "goalType": goal_type, "config": config},
        headers=owner.headers,
    )
    assert response.status_code == 201, response.text
    [goal] = _goals(client, site, owner.headers)
    assert goal["config"] == (config if stored is None else stored)


def _event(site_id: int, session: str, minute: int, **fields) -> dict:
    return {
        "site_id": site_id,
        "timestamp": datetime(2026, 3, 1, 12) + timedelta(minutes=minute),
        "session_id": session,
        **fields,
    }


def test_goals003_pattern_and_property_semantics(client, site, owner, services) -> None:
    sid = site.site_id
    rows = [
        _event(sid, "blog-a", 0, type="pageview", pathname="/blog/a"),
        _event(sid, "blog-slash", 1, type="pageview", pathname="/blog/"),
        _event(sid, "blog-deep", 2, type="pageview", pathname="/blog/a/b"),
        _event(sid, "docs-root", 3, type="pageview", pathname="/docs/"),
        _event(sid, "docs-bare", 4, type="pageview", pathname="/docs"),
        _event(sid, "pricing-slash", 5, type="pageview", pathname="/pricing/"),
        _event(sid, "upper", 6, type="pageview", pathname="/Pricing"),
        _event(sid, "dot", 7, type="pageview", pathname="/aXb"),
        _event(sid, "n-num", 8, type="custom_event", event_name="buy", props='{"n": 3, "ok": true}'),
        _event(sid, "n-text", 9, type="custom_event", event_name="buy", props='{"n": "3.0", "ok": "yes"}'),
        _event(sid, "n-other", 10, type="custom_event", event_name="Buy", props='{"n": 3}'),
        _event(sid, "split", 11, type="custom_event", event_name="buy", props='{"n": 3}'),
        _event(sid, "split", 12, type="custom_event", event_name="other", props='{"ok": true}'),
        _event(sid, "out", 13, type="outbound", props='{"url": "https://github.com/x/y"}'),
        _event(sid, "form", 14, type="form_submit", props='{"formId": "signup-main", "formName": ""}'),
    ]
    services.events.append(rows_to_table(rows))
    cases = {
        "/blog/*": ({"goalType": "path", "config": {"pathPattern": "/blog/*"}}, {"blog-a"}),
        "/docs/**": ({"goalType": "path", "config": {"pathPattern": "/docs/**"}}, {"docs-root"}),
        "/pricing": ({"goalType": "path", "config": {"pathPattern": "/pricing"}}, set()),
        "/a.b": ({"goalType": "path", "config": {"pathPattern": "/a.b"}}, set()),
        "buy n=3": (
            {"goalType": "event", "config": {"eventName": "buy", "eventPropertyKey": "n", "eventPropertyValue": 3}},
            {"n-num", "n-text", "split"},
        ),
        "buy ok=true": (
            {"goalType": "event", "config": {"eventName": "buy", "eventPropertyKey": "ok", "eventPropertyValue": True}},
            {"n-num"},
        ),
        "buy n='3'": (
            {"goalType": "event", "config": {"eventName": "buy", "eventPropertyKey": "n", "eventPropertyValue": "3"}},
            {"n-num", "split"},
        ),
        "outbound github": ({"goalType": "outbound", "config": {"valuePattern": "https://github.com/*"}}, {"out"}),
        "form signup": ({"goalType": "form_submit", "config": {"valuePattern": "signup-*"}}, {"form"}),
    }
    ids = {}
    for name, (body, _) in cases.items():
        ids[name] = client.post(f"/api/sites/{sid}/goals", json={"name": name, **body}, headers=owner.headers).json()[
            "goalId"
        ]
    goals = {g["name"]: g for g in _goals(client, site, owner.headers)}
    for name, (_, expected) in cases.items():
        assert goals[name]["total_conversions"] == len(expected), name
        assert goals[name]["total_sessions"] == 14
        listed = client.get(f"/api/sites/{sid}/goals/{ids[name]}/sessions", headers=owner.headers).json()["data"]
        assert {s["session_id"] for s in listed} == expected, name


def test_goals004_members_may_write_goals(client, site, owner, services) -> None:
    member = make_account(services, "member@example.com")
    services.metadata.add_member(site.organization_id, member.user.id, "member")
    base = f"/api/sites/{site.site_id}/goals"
    created = client.post(base, json={"goalType": "path", "config": {"pathPattern": "/"}}, headers=member.headers)
    assert created.status_code == 201
    goal_id = created.json()["goalId"]
    body = {"goalType": "path", "config": {"pathPattern": "/x"}}
    assert client.put(f"{base}/{goal_id}", json=body, headers=member.headers).status_code == 200
    assert client.delete(f"{base}/{goal_id}", headers=member.headers).status_code == 200


def test_goals005_foreign_or_unknown_goal_is_404(client, site, owner, services) -> None:
    other_site = make_site(services, owner, "other.example")
    foreign = client.post(
        f"/api/sites/{other_site.site_id}/goals",
        json={"goalType": "path", "config": {"pathPattern": "/"}},
        headers=owner.headers,
    ).json()["goalId"]
    body = {"goalType": "path", "config": {"pathPattern": "/x"}}
    base = f"/api/sites/{site.site_id}/goals"
    for goal_id in (foreign, 999999):
        assert client.put(f"{base}/{goal_id}", json=body, headers=owner.headers).status_code == 404
        assert client.delete(f"{base}/{goal_id}", headers=owner.headers).status_code == 404
        assert client.get(f"{base}/{goal_id}/sessions", headers=owner.headers).status_code == 404
        response = client.get(f"{base}/{goal_id}/breakdown", params={"parameter": "channel"}, headers=owner.headers)
        assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"
    # The foreign goal is untouched.
    [kept] = _goals(client, other_site, owner.headers)
    assert kept["config"] == {"pathPattern": "/"}
