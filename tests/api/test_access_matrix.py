"""The role matrix of contract section 2: every route class against every kind of caller."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

import pytest
from fastapi.testclient import TestClient

from api_backend.services import Services
from api_backend.store.events import rows_to_table
from tests.support import app_on, make_account, make_site


@dataclass
class World:
    site_id: int
    public_site_id: int
    goals: dict[int, int]
    org_id: str
    private_key: str
    headers: dict[str, dict[str, str]]


def build_world(services: Services) -> World:
    owner = make_account(services, "owner@acme.test")
    admin = make_account(services, "admin@acme.test")
    member = make_account(services, "member@acme.test")
    outsider = make_account(services, "outsider@elsewhere.test")
    site = make_site(services, owner, "acme.test")
    public_site = services.metadata.create_site(
        site.organization_id, owner.user.id, "public.acme.test", "P", public=True
    )
    services.metadata.add_member(site.organization_id, admin.user.id, "admin")
    services.metadata.add_member(site.organization_id, member.user.id, "member")
    make_site(services, outsider, "elsewhere.test")
    key = services.metadata.set_private_link_key(site.site_id, True)
    goals = {
        s.site_id: services.metadata.create_goal(s.site_id, "Pricing", "path", {"pathPattern": "/pricing"}).goal_id
        for s in (site, public_site)
    }
    # One identified visit on each readable site, so the session and user routes have something to answer.
    services.events.append(
        rows_to_table(
            [
                {"site_id": s.site_id, "timestamp": datetime(2026, 3, 1), "session_id": "visit", "type": "pageview"}
                | {"identified_user_id": "ada"}
                for s in (site, public_site)
            ]
        )
    )
    return World(
        site_id=site.site_id,
        public_site_id=public_site.site_id,
        goals=goals,
        org_id=site.organization_id,
        private_key=key,
        headers={
            "anonymous": {},
            "private_link": {"X-Private-Key": key},
            "public": {},
            "member": member.headers,
            "admin": admin.headers,
            "owner": owner.headers,
            "outsider": outsider.headers,
        },
    )


@pytest.fixture
def world(services) -> World:
    return build_world(services)


@dataclass
class Shared:
    client: TestClient
    services: Services
    world: World


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    """One app and world for the module's checks that change nothing (reads, and requests every caller in them is
    refused), instead of a new one per check."""
    with app_on(tmp_path_factory.mktemp("access") / "data") as (client, services):
        yield Shared(client, services, build_world(services))


# (name, method, path template, json body, level). {site} is the target site, {org} its organization.
ACTIONS = [
    ("get_site", "GET", "/api/sites/{site}", None, "read"),
    ("goals_list", "GET", "/api/sites/{site}/goals", None, "read"),
    ("goal_sessions", "GET", "/api/sites/{site}/goals/{goal}/sessions", None, "read"),
    ("error_names", "GET", "/api/sites/{site}/error-names", None, "read"),
    ("metric", "GET", "/api/sites/{site}/metric?parameter=channel", None, "read"),
    ("overview", "GET", "/api/sites/{site}/overview", None, "read"),
    ("sessions", "GET", "/api/sites/{site}/sessions", None, "read"),
    ("session", "GET", "/api/sites/{site}/sessions/visit", None, "read"),
    ("user", "GET", "/api/sites/{site}/users/ada", None, "read"),
    ("live", "GET", "/api/sites/{site}/live?minutes=5", None, "read"),
    (
        "funnel",
        "POST",
        "/api/sites/{site}/funnels/analyze",
        {"steps": [{"type": "page", "value": "/"}, {"type": "page", "value": "/pricing"}]},
        "read",
    ),
    (
        "create_goal",
        "POST",
        "/api/sites/{site}/goals",
        {"name": "Docs", "goalType": "path", "config": {"pathPattern": "/docs/**"}},
        "member",
    ),
    (
        "update_goal",
        "PUT",
        "/api/sites/{site}/goals/{goal}",
        {"name": "Docs", "goalType": "path", "config": {"pathPattern": "/docs/*"}},
        "member",
    ),
    ("delete_goal", "DELETE", "/api/sites/{site}/goals/{goal}", None, "member"),
    ("org_usage", "GET", "/api/org-event-count/{org}", None, "member"),
    ("excluded_ips", "GET", "/api/sites/{site}/excluded-ips", None, "member"),
    ("excluded_countries", "GET", "/api/sites/{site}/excluded-countries", None, "member"),
    ("list_org_sites", "GET", "/api/organizations/{org}/sites", None, "member"),
    ("update_config", "PUT", "/api/sites/{site}/config", {"blockBots": False}, "admin"),
    ("get_private_link", "GET", "/api/sites/{site}/private-link-config", None, "admin"),
    (
        "generate_private_link",
        "POST",
        "/api/sites/{site}/private-link-config",
        {"action": "generate_private_link_key"},
        "admin",
    ),
    ("create_site", "POST", "/api/organizations/{org}/sites", {"domain": "new.acme.test"}, "admin"),
    ("delete_site", "DELETE", "/api/sites/{site}", None, "admin"),
]

# Expected status per level and caller.
EXPECTED = {
    "read": {
        "anonymous": 401,
        "private_link": 200,
        "public": 200,
        "member": 200,
        "admin": 200,
        "owner": 200,
        "outsider": 404,
    },
    "member": {
        "anonymous": 401,
        "private_link": 401,
        "public": 401,
        "member": 200,
        "admin": 200,
        "owner": 200,
        "outsider": 404,
    },
    "admin": {
        "anonymous": 401,
        "private_link": 401,
        "public": 401,
        "member": 403,
        "admin": 200,
        "owner": 200,
        "outsider": 404,
    },
}
CODES = {200: None, 401: "AUTHENTICATION_REQUIRED", 403: "FORBIDDEN", 404: "NOT_FOUND"}


READS = [action for action in ACTIONS if action[4] == "read"]
CHANGES = [action for action in ACTIONS if action[4] != "read"]


@pytest.mark.parametrize("caller", list(EXPECTED["read"]))
@pytest.mark.parametrize(("name", "method", "path", "body", "level"), READS, ids=[a[0] for a in READS])
def test_role_matrix_reads(shared, caller, name, method, path, body, level):
    check_call(shared.client, shared.world, caller, name, method, path, body, level)


@pytest.mark.parametrize("caller", list(EXPECTED["read"]))
@pytest.mark.parametrize(("name", "method", "path", "body", "level"), CHANGES, ids=[a[0] for a in CHANGES])
def test_role_matrix_changes(client, world, caller, name, method, path, body, level):
    """Each on a world of its own: the callers allowed to make the change make it."""
    check_call(client, world, caller, name, method, path, body, level)


def check_call(client, world, caller, name, method, path, body, level):
    site = world.public_site_id if caller == "public" else world.site_id
    url = path.format(site=site, org=world.org_id, goal=world.goals[site])
    if caller == "public" and "{org}" in path:
        pytest.skip("organization routes have no public form")
    response = client.request(method, url, json=body, headers=world.headers[caller])
    expected = EXPECTED[level][caller]
    if expected == 200 and name in ("create_site", "create_goal"):
        expected = 201
    assert response.status_code == expected, response.text
    if expected >= 400:
        assert response.json()["code"] == CODES[expected]
        assert set(response.json()) <= {"error", "code", "details"}


def test_refused_writes_change_nothing(client, world, services):
    before = services.metadata.site(world.site_id)
    for caller in ("anonymous", "private_link", "member", "outsider"):
        client.put(f"/api/sites/{world.site_id}/config", json={"public": True}, headers=world.headers[caller])
        client.delete(f"/api/sites/{world.site_id}", headers=world.headers[caller])
    after = services.metadata.site(world.site_id)
    assert after is not None and after.public == before.public and after.updated_at == before.updated_at


def test_is_owner_follows_role(shared):
    client, world = shared.client, shared.world
    for caller, expected in [("owner", True), ("admin", True), ("member", False), ("private_link", False)]:
        body = client.get(f"/api/sites/{world.site_id}", headers=world.headers[caller]).json()
        assert body["isOwner"] is expected, caller


def test_private_key_only_opens_its_own_site(client, world, services):
    owner = make_account(services, "second@acme.test")
    other = make_site(services, owner, "other.test")
    response = client.get(f"/api/sites/{other.site_id}", headers={"X-Private-Key": world.private_key})
    assert response.status_code == 401


def test_revoked_or_regenerated_private_key_stops_working(client, world):
    url = f"/api/sites/{world.site_id}"
    assert client.get(url, headers={"X-Private-Key": world.private_key}).status_code == 200
    new = client.post(
        url + "/private-link-config", json={"action": "generate_private_link_key"}, headers=world.headers["owner"]
    ).json()["data"]["privateLinkKey"]
    assert new != world.private_key
    assert client.get(url, headers={"X-Private-Key": world.private_key}).status_code == 401
    assert client.get(url, headers={"X-Private-Key": new}).status_code == 200
    revoked = client.post(
        url + "/private-link-config", json={"action": "revoke_private_link_key"}, headers=world.headers["owner"]
    )
    assert revoked.json() == {"success": True, "data": {"privateLinkKey": None}}
    assert client.get(url, headers={"X-Private-Key": new}).status_code == 401


def test_site_is_reachable_by_string_id(shared):
    client, world, services = shared.client, shared.world, shared.services
    site = services.metadata.site(world.site_id)
    body = client.get(f"/api/sites/{site.id}", headers=world.headers["member"]).json()
    assert body["siteId"] == world.site_id and body["id"] == site.id


@pytest.mark.parametrize(("name", "method", "path", "body", "level"), ACTIONS, ids=[a[0] for a in ACTIONS])
def test_missing_site_looks_like_a_private_one_without_credentials(shared, name, method, path, body, level):
    client, world = shared.client, shared.world
    if "{site}" not in path:
        pytest.skip("organization routes need a credential whatever the id")
    existing = client.request(method, path.format(site=world.site_id, goal=1), json=body)
    missing = client.request(method, path.format(site=987654, goal=1), json=body)
    assert existing.status_code == missing.status_code == 401
    assert missing.json() == existing.json()
    # A signed-in outsider still gets the same 404 for both.
    outsider = world.headers["outsider"]
    existing = client.request(method, path.format(site=world.site_id, goal=1), json=body, headers=outsider)
    missing = client.request(method, path.format(site=987654, goal=1), json=body, headers=outsider)
    assert existing.status_code == missing.status_code == 404


def test_readers_who_are_not_members_do_not_see_the_organization(shared):
    client, world = shared.client, shared.world
    for caller, site in [("private_link", world.site_id), ("public", world.public_site_id)]:
        body = client.get(f"/api/sites/{site}", headers=world.headers[caller]).json()
        assert "organizationId" not in body and "createdBy" not in body, caller
        assert body["siteId"] == site and body["isOwner"] is False
    for caller in ("member", "admin", "owner"):
        body = client.get(f"/api/sites/{world.site_id}", headers=world.headers[caller]).json()
        assert body["organizationId"] == world.org_id and body["createdBy"], caller
