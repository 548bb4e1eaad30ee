"""Strict parsing: site ids are ASCII only everywhere, and a read window is bounded with a 400 naming the limit."""

from __future__ import annotations

import pytest

from api_backend.query.window import MAX_WINDOW_DAYS

# "²" passes str.isdigit() but int() refuses it; int() reads Arabic-Indic "١" as 1.
ODD_IDS = ["%C2%B2", "\u0661", "\u0661\u0662", "1\u00b2"]


def _assert_400(response, field: str = "site_id") -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "INVALID_REQUEST"
    assert field in body["error"]


@pytest.mark.parametrize("site_id", ODD_IDS)
def test_strict001_site_routes_refuse_non_ascii_ids(client, site, owner, site_id) -> None:
    _assert_400(client.get(f"/api/sites/{site_id}"))
    _assert_400(client.get(f"/api/sites/{site_id}", headers=owner.headers))
    _assert_400(client.get(f"/api/sites/{site_id}/overview", headers=owner.headers))
    _assert_400(client.get(f"/api/site/tracking-config/{site_id}"))


@pytest.mark.parametrize("site_id", ["\u00b2", "\u0661", "\u0661\u0662"])
def test_strict002_tracking_refuses_non_ascii_ids(client, services, site, site_id) -> None:
    event = {"site_id": site_id, "type": "pageview", "pathname": "/"}
    _assert_400(client.post("/api/track", json=event))
    response = client.post("/api/track/batch", json={"events": [event]})
    assert response.status_code == 200 and response.json()["accepted"] == 0
    assert "site_id" in response.json()["rejected"][0]["error"]
    assert services.events.count() == 0


def test_strict003_org_usage_window_is_capped(client, site, owner) -> None:
    url = f"/api/org-event-count/{site.organization_id}"
    _assert_400(
        client.get(url, params={"start_date": "0002-01-01", "end_date": "9999-12-01"}, headers=owner.headers),
        "start_date",
    )
    response = client.get(url, params={"start_date": "2000-01-01", "end_date": "2026-01-01"}, headers=owner.headers)
    _assert_400(response, "start_date")
    assert f"{MAX_WINDOW_DAYS} days" in response.json()["error"]
    ok = client.get(url, params={"start_date": "2020-01-01", "end_date": "2026-01-01"}, headers=owner.headers)
    assert ok.status_code == 200 and len(ok.json()["data"]) == 2193


def test_strict004_past_minutes_are_capped(client, site, owner) -> None:
    params = {"past_minutes_start": str(MAX_WINDOW_DAYS * 1440 + 1), "past_minutes_end": "0"}
    response = client.get(f"/api/sites/{site.site_id}/overview", params=params, headers=owner.headers)
    _assert_400(response, "past_minutes")


def test_strict005_method_not_allowed_names_the_allowed_methods(client, site) -> None:
    for method, path, allow in [
        ("DELETE", "/api/health", "GET"),
        ("PUT", f"/api/sites/{site.site_id}", "GET, DELETE"),
        ("GET", "/api/track", "POST"),
        ("POST", "/api/openapi.json", "GET"),
    ]:
        response = client.request(method, path)
        assert response.status_code == 405, (method, path)
        assert response.headers["allow"] == allow, (method, path)
        assert response.json()["code"] == "METHOD_NOT_ALLOWED"
