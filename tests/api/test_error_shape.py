"""Every route answers bad input with the contract's error body and a 4xx (one walk over all routes)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from api_backend.routes import ROUTERS
from api_backend.services import Services
from tests.support import Account, app_on, make_account, make_site

ERROR_CODES = {
    400: "INVALID_REQUEST",
    401: "AUTHENTICATION_REQUIRED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    429: "RATE_LIMITED",
}
# Routes whose GET form takes no analytics window (everything else under /sites/{site_id} must validate it).
NO_WINDOW = {
    "/api/sites/{site_id}",
    "/api/sites/{site_id}/excluded-ips",
    "/api/sites/{site_id}/excluded-countries",
    "/api/sites/{site_id}/private-link-config",
    "/api/sites/{site_id}/live",  # always the last `minutes`
    "/api/sites/{site_id}/sessions/{session_id}",  # always the whole session
}


def assert_error(response, status: int) -> None:
    assert response.status_code == status, (response.request.method, response.request.url, response.text)
    body = response.json()
    assert isinstance(body["error"], str) and body["error"]
    assert body["code"] == ERROR_CODES[status]
    assert set(body) <= {"error", "code", "details", "requestId"}
    for detail in body.get("details", []):
        assert set(detail) == {"field", "message"}


def api_routes() -> list[tuple[str, str, bool]]:
    """(method, path, takes a JSON body) of every documented route, read from the routers (no app is built here).

    ``test_the_walk_covers_every_documented_route`` checks that this is exactly what the app's OpenAPI document lists.
    """
    routes = []
    for router in ROUTERS:
        for route in router.routes:
            if isinstance(route, APIRoute) and route.include_in_schema:
                for method in route.methods:
                    has_body = route.body_field is not None or "requestBody" in (route.openapi_extra or {})
                    routes.append((method, "/api" + route.path, has_body))
    return sorted(routes)


ROUTES = api_routes()
ROUTE_IDS = [f"{m} {p}" for m, p, _ in ROUTES]


def make_ids(services: Services, owner: Account) -> dict[str, str]:
    site = make_site(services, owner)
    goal = services.metadata.create_goal(site.site_id, "Pricing", "path", {"pathPattern": "/pricing"})
    key, _ = services.metadata.create_api_key(owner.user.id, "other")
    return {
        "site_id": str(site.site_id),
        "goal_id": str(goal.goal_id),
        "organization_id": site.organization_id,
        "key_id": key.id,
    }


@pytest.fixture
def ids(services, owner):
    return make_ids(services, owner)


@dataclass
class Walk:
    client: TestClient
    owner: Account
    ids: dict[str, str]


@pytest.fixture(scope="module")
def walk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Walk]:
    """One app for the walks over every route: each request in them is refused, so none changes what the next
    one meets."""
    with app_on(tmp_path_factory.mktemp("errors") / "data") as (client, services):
        owner = make_account(services, "owner@example.com")
        yield Walk(client, owner, make_ids(services, owner))


# Valid input for routes that check their body or query before looking the target up (validation comes first).
VALID_BODIES = {
    ("POST", "/api/sites/{site_id}/goals"): {"name": "x", "goalType": "path", "config": {"pathPattern": "/x"}},
    ("PUT", "/api/sites/{site_id}/goals/{goal_id}"): {"name": "x", "goalType": "path", "config": {"pathPattern": "/x"}},
    ("POST", "/api/sites/{site_id}/funnels/analyze"): {
        "steps": [{"type": "page", "value": "/a"}, {"type": "page", "value": "/b"}]
    },
    ("PUT", "/api/sites/{site_id}/config"): {"blockBots": True},
    ("POST", "/api/sites/{site_id}/private-link-config"): {"action": "generate_private_link_key"},
    ("POST", "/api/organizations/{organization_id}/sites"): {"domain": "new.example.com"},
}
VALID_QUERY = "parameter=channel&errorMessage=x"


def fill(path: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        path = path.replace("{" + name + "}", value)
    return path


def test_the_walk_covers_every_documented_route(client):
    documented = sorted(
        (method.upper(), path, "requestBody" in operation)
        for path, operations in client.get("/api/openapi.json").json()["paths"].items()
        for method, operation in operations.items()
    )
    assert ROUTES == documented


@pytest.mark.parametrize(("method", "path", "has_body"), ROUTES, ids=ROUTE_IDS)
def test_non_json_body_is_415_and_malformed_json_is_400(walk, method, path, has_body):
    client, owner, ids = walk.client, walk.owner, walk.ids
    if not has_body:
        pytest.skip("route takes no body")
    url = fill(path, ids)
    headers = owner.headers | {"Content-Type": "application/xml"}
    assert_error(client.request(method, url, content=b"<a>1</a>", headers=headers), 415)
    headers = owner.headers | {"Content-Type": "application/json"}
    assert_error(client.request(method, url, content=b'{"unterminated": ', headers=headers), 400)


@pytest.mark.parametrize(("method", "path", "has_body"), ROUTES, ids=ROUTE_IDS)
def test_unknown_ids_are_404(walk, method, path, has_body):
    client, owner, ids = walk.client, walk.owner, walk.ids
    if not any(name in path for name in ("{site_id}", "{goal_id}", "{organization_id}", "{key_id}")):
        pytest.skip("route has no identifier")
    unknown = {name: ("999999" if name in ("site_id", "goal_id") else "nope") for name in ids}
    if "{goal_id}" in path:
        unknown["site_id"] = ids["site_id"]
    body = VALID_BODIES.get((method, path), {}) if has_body else None
    url = fill(path, unknown) + ("?" + VALID_QUERY if method == "GET" else "")
    assert_error(client.request(method, url, json=body, headers=owner.headers), 404)


@pytest.mark.parametrize(("method", "path", "has_body"), ROUTES, ids=ROUTE_IDS)
def test_bad_window_is_400(walk, method, path, has_body):
    client, owner, ids = walk.client, walk.owner, walk.ids
    if method != "GET" or not path.startswith("/api/sites/{site_id}/") or path in NO_WINDOW:
        pytest.skip("route takes no analytics window")
    url = fill(path, ids)
    for query in ("start_date=2026-13-40&end_date=2026-01-01", "start_date=2026-01-01", "time_zone=Mars/Olympus"):
        assert_error(client.get(f"{url}?{query}&errorMessage=x&parameter=browser", headers=owner.headers), 400)


def test_unknown_route_and_wrong_method(client, owner):
    assert_error(client.get("/api/no-such-route", headers=owner.headers), 404)
    assert_error(client.post("/api/sites/1/nothing-here", json={}, headers=owner.headers), 404)
    assert_error(client.delete("/api/health"), 405)
    assert_error(client.patch("/api/organizations", json={}), 405)


def test_body_limits(client, owner, ids):
    big = "x" * (1024 * 1024 + 10)
    url = f"/api/organizations/{ids['organization_id']}/sites"
    assert_error(client.post(url, json={"domain": big}, headers=owner.headers), 413)
    assert_error(client.post("/api/track", json={"site_id": "1", "type": "pageview", "page_title": "x" * 70_000}), 413)


def test_internal_error_body_hides_the_cause(app, client, owner):
    def fault() -> None:
        raise RuntimeError("secret SQL: SELECT password FROM users")

    app.add_api_route("/api/test-fault", fault, include_in_schema=False)
    app.router.routes.insert(0, app.router.routes.pop())

    with_raise = client.__class__(app, raise_server_exceptions=False)
    response = with_raise.get("/api/test-fault")
    assert response.status_code == 500
    body = response.json()
    assert body["code"] == "INTERNAL_ERROR" and body["requestId"]
    assert "SQL" not in body["error"] and "password" not in response.text
