"""POST /api/track/batch, GET /api/site/tracking-config/:siteId and POST /api/identify."""

from __future__ import annotations

from typing import Any

from tests.support import make_account, make_site

BROWSER = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)
UA = {"User-Agent": BROWSER}


def rows(services) -> list[dict[str, Any]]:
    return services.events.query_dicts("SELECT * FROM events ORDER BY pathname")


def pageview(site, path: str = "/", **fields: Any) -> dict[str, Any]:
    return {"site_id": site.site_id, "type": "pageview", "hostname": "example.com", "pathname": path, **fields}


def test_batch001_valid_events_stored_invalid_reported(client, services, owner, site):
    services.metadata.update_site(site.site_id, {"excluded_countries": ["GB"]})
    services.ingestor.site_changed(site.site_id)
    events = [
        pageview(site, "/a"),
        {"site_id": site.site_id, "type": "custom_event"},  # no event_name
        pageview(site, "/b", ip_address="81.2.69.142"),  # GB via the trusted address: dropped by setting
        {"site_id": 987654, "type": "pageview"},
        pageview(site, "/c", screenWidth=-5),
        {"site_id": site.id, "type": "custom_event", "event_name": "go", "pathname": "/d"},
    ]
    response = client.post("/api/track/batch", json={"events": events}, headers={**UA, **owner.headers})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True and body["accepted"] == 2
    assert [r["index"] for r in body["rejected"]] == [1, 3, 4]
    assert "event_name" in body["rejected"][0]["error"]
    assert "not found" in body["rejected"][1]["error"].lower()
    assert "screenWidth" in body["rejected"][2]["error"]
    assert body["dropped"] == [{"index": 2, "reason": "excluded_country"}]
    assert [r["pathname"] for r in rows(services)] == ["/a", "/d"]


def test_batch002_accepted_rows_and_sessions(client, services, site):
    events = [pageview(site, f"/p{i:04d}") for i in range(1000)]
    body = client.post("/api/track/batch", json={"events": events}, headers=UA).json()
    assert (body["accepted"], body["rejected"], body["dropped"]) == (1000, [], [])
    stored = rows(services)
    assert len(stored) == 1000
    assert len({r["session_id"] for r in stored}) == 1  # one visitor, one session


def test_batch003_limits_and_shapes(client, services, owner, site):
    too_many = {"events": [pageview(site)] * 1001}
    response = client.post("/api/track/batch", json=too_many, headers=UA)
    assert response.status_code == 400 and response.json()["details"][0]["field"] == "events"
    for bad in ({}, {"events": {}}, [], {"events": "x"}):
        response = client.post("/api/track/batch", json=bad, headers=UA)
        assert response.status_code == 400, bad
        assert response.json()["code"] == "INVALID_REQUEST"
    assert client.post("/api/track/batch", json={"events": []}, headers=UA).json() == {
        "success": True,
        "accepted": 0,
        "rejected": [],
        "dropped": [],
    }
    bad_key = client.post(
        "/api/track/batch", json={"events": [pageview(site)]}, headers={"Authorization": "Bearer sl_x"}
    )
    assert bad_key.status_code == 401
    # A key whose user is not in this site's organization rejects that event only.
    stranger = make_account(services, "stranger@example.com")
    own = make_site(services, stranger, "stranger.org")
    body = client.post(
        "/api/track/batch", json={"events": [pageview(site, "/x"), pageview(own, "/y")]}, headers=stranger.headers
    ).json()
    assert body["accepted"] == 1 and [r["index"] for r in body["rejected"]] == [0]
    assert [r["pathname"] for r in rows(services)] == ["/y"]


def test_batch004_tracking_config(client, services, owner, site):
    expected = {
        "sessionReplay": False,
        "webVitals": False,
        "trackErrors": False,
        "trackOutbound": True,
        "trackUrlParams": True,
        "trackInitialPageView": True,
        "trackSpaNavigation": True,
        "trackButtonClicks": False,
        "trackCopy": False,
        "trackFormInteractions": False,
    }
    for key in (site.site_id, site.id):
        response = client.get(f"/api/site/tracking-config/{key}", headers={"Origin": "https://example.com"})
        assert response.status_code == 200 and response.json() == expected
        assert response.headers["access-control-allow-origin"] == "https://example.com"
    change = {"webVitals": True, "trackErrors": True, "trackOutbound": False}
    assert client.put(f"/api/sites/{site.site_id}/config", json=change, headers=owner.headers).status_code == 200
    assert client.get(f"/api/site/tracking-config/{site.id}").json() == {
        **expected,
        "webVitals": True,
        "trackErrors": True,
        "trackOutbound": False,
    }
    assert client.get("/api/site/tracking-config/424242").status_code == 404
    assert client.options("/api/site/tracking-config/1", headers={"Origin": "https://a.b"}).status_code == 204


def test_batch005_identify_marks_later_events(client, services, site):
    body = {"site_id": site.id, "user_id": " user-7 ", "traits": {"plan": "pro"}}
    assert client.post("/api/identify", json=body, headers=UA).json() == {"success": True}
    assert client.post("/api/track", json=pageview(site, "/after"), headers=UA).json() == {"success": True}
    other = {"User-Agent": BROWSER + " Other"}
    assert client.post("/api/track", json=pageview(site, "/other"), headers=other).json() == {"success": True}
    assert client.post("/api/track", json=pageview(site, "/own", user_id="explicit"), headers=UA).json() == {
        "success": True
    }
    by_path = {r["pathname"]: r for r in rows(services)}
    assert by_path["/after"]["identified_user_id"] == "user-7"
    assert by_path["/other"]["identified_user_id"] == ""
    assert by_path["/own"]["identified_user_id"] == "explicit"


def test_batch006_identify_bad_input(client, services, site):
    for bad, field in (
        ({"site_id": site.id}, "user_id"),
        ({"site_id": site.id, "user_id": ""}, "user_id"),
        ({"site_id": site.id, "user_id": "u" * 256}, "user_id"),
        ({"user_id": "u"}, "site_id"),
        ({"site_id": site.id, "user_id": "u", "traits": [1]}, "traits"),
    ):
        response = client.post("/api/identify", json=bad)
        assert response.status_code == 400
        assert response.json()["details"][0]["field"] == field
    assert client.post("/api/identify", json={"site_id": "777777", "user_id": "u"}).status_code == 404
    response = client.post(
        "/api/identify", json={"site_id": site.id, "user_id": "u"}, headers={"Authorization": "Bearer sl_no"}
    )
    assert response.status_code == 401
