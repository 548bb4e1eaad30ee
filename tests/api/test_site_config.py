"""Site creation and configuration: validation of every field, and nothing changed on a 400."""

from __future__ import annotations

import pytest

from api_backend.domain.sites import normalize_domain
from api_backend.store.events import rows_to_table

GOOD_IPS = [
    "192.168.1.10",
    "10.0.0.0/8",
    "10.0.0.1-10.0.0.50",
    "2001:db8::1",
    "2001:db8::/32",
    "2001:db8::1-2001:db8::ff",
    " 172.16.0.1 ",
]
BAD_IPS = ["junk", "300.1.1.1", "10.0.0.0/33", "10.0.0.9-10.0.0.1", "10.0.0.1-2001:db8::1", "", "1.2.3"]


def config_url(site) -> str:
    return f"/api/sites/{site.site_id}/config"


def test_good_ip_patterns_are_stored_trimmed(client, owner, site):
    response = client.put(config_url(site), json={"excludedIPs": GOOD_IPS}, headers=owner.headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True and isinstance(body["message"], str)
    assert body["config"]["excludedIPs"] == [ip.strip() for ip in GOOD_IPS]
    listed = client.get(f"/api/sites/{site.site_id}/excluded-ips", headers=owner.headers).json()
    assert listed == {"success": True, "excludedIPs": [ip.strip() for ip in GOOD_IPS]}


@pytest.mark.parametrize("bad", BAD_IPS)
def test_bad_ip_pattern_is_400_naming_the_entry_and_changes_nothing(client, owner, site, bad):
    client.put(config_url(site), json={"excludedIPs": ["1.1.1.1"]}, headers=owner.headers)
    response = client.put(
        config_url(site), json={"excludedIPs": ["8.8.8.8", bad], "blockBots": False}, headers=owner.headers
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "INVALID_REQUEST"
    assert {"field": "excludedIPs.1"} == {"field": body["details"][0]["field"]}
    current = client.get(f"/api/sites/{site.site_id}", headers=owner.headers).json()
    assert current["blockBots"] is True
    assert client.get(f"/api/sites/{site.site_id}/excluded-ips", headers=owner.headers).json()["excludedIPs"] == [
        "1.1.1.1"
    ]


def test_countries_are_upper_cased_and_junk_refused(client, owner, site):
    response = client.put(config_url(site), json={"excludedCountries": ["us", " gb", "FR"]}, headers=owner.headers)
    assert response.json()["config"]["excludedCountries"] == ["US", "GB", "FR"]
    for bad in (["USA"], ["1A"], [""], [3]):
        response = client.put(config_url(site), json={"excludedCountries": bad}, headers=owner.headers)
        assert response.status_code == 400, bad
        assert response.json()["details"][0]["field"].startswith("excludedCountries")
    listed = client.get(f"/api/sites/{site.site_id}/excluded-countries", headers=owner.headers).json()
    assert listed == {"success": True, "excludedCountries": ["US", "GB", "FR"]}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"blockBots": "yes"}, "blockBots"),
        ({"public": 1}, "public"),
        ({"unknownSwitch": True}, "unknownSwitch"),
        ({"excludedIPs": "10.0.0.1"}, "excludedIPs"),
        ({"excludedIPs": ["10.0.0.1"] * 101}, "excludedIPs"),
        ({"excludedCountries": ["US"] * 251}, "excludedCountries"),
        ({}, "body"),
        ([], "body"),
    ],
)
def test_config_rejects_wrong_types_and_unknown_fields(client, owner, site, body, field):
    response = client.put(config_url(site), json=body, headers=owner.headers)
    assert response.status_code == 400
    assert response.json()["details"][0]["field"] == field


def test_config_update_changes_only_sent_fields(client, owner, site):
    response = client.put(config_url(site), json={"public": True, "trackOutbound": False}, headers=owner.headers)
    config = response.json()["config"]
    assert config == {
        "public": True,
        "saltUserIds": False,
        "blockBots": True,
        "sessionReplay": False,
        "webVitals": False,
        "trackErrors": False,
        "trackOutbound": False,
        "trackUrlParams": True,
        "excludedIPs": [],
        "excludedCountries": [],
    }
    assert "privateLinkKey" not in response.text
    site_body = client.get(f"/api/sites/{site.site_id}", headers=owner.headers).json()
    assert site_body["public"] is True and site_body["updatedAt"] >= site_body["createdAt"]


def test_create_site_defaults_and_shape(client, owner, site):
    response = client.post(
        f"/api/organizations/{site.organization_id}/sites",
        json={"domain": "HTTPS://Shop.Example.ORG/", "name": "Shop"},
        headers=owner.headers,
    )
    assert response.status_code == 201
    body = response.json()
    assert body["domain"] == "shop.example.org" and body["name"] == "Shop"
    assert isinstance(body["siteId"], int) and isinstance(body["id"], str) and body["id"]
    assert body["blockBots"] is True and body["trackOutbound"] is True and body["trackUrlParams"] is True
    assert body["public"] is False and body["saltUserIds"] is False and body["isOwner"] is True
    assert body["createdAt"].endswith("Z") and body["createdBy"] == owner.user.id
    listed = client.get(f"/api/organizations/{site.organization_id}/sites", headers=owner.headers).json()
    assert [s["domain"] for s in listed["data"]] == ["example.com", "shop.example.org"]


def test_create_site_duplicate_domain_is_409(client, owner, site):
    response = client.post(
        f"/api/organizations/{site.organization_id}/sites", json={"domain": "example.com"}, headers=owner.headers
    )
    assert response.status_code == 409 and response.json()["code"] == "CONFLICT"


@pytest.mark.parametrize(
    "domain", ["", "localhost", "exa mple.com", "example.com:8080", "example.com/path", "-bad.com", "1.2.3.4", 42]
)
def test_create_site_refuses_bad_domains(client, owner, site, domain):
    response = client.post(
        f"/api/organizations/{site.organization_id}/sites", json={"domain": domain}, headers=owner.headers
    )
    assert response.status_code == 400
    assert response.json()["details"][0]["field"] == "domain"


def test_normalize_domain_accepts_unicode_and_subdomains():
    assert normalize_domain("http://Bücher.Example.de/") == "bücher.example.de"
    assert normalize_domain("a.b.c.example.co.uk") == "a.b.c.example.co.uk"


def test_delete_site_removes_goals_key_and_every_event(client, owner, site, services):
    other = services.metadata.create_site(site.organization_id, owner.user.id, "other.example.com", "Other")
    services.metadata.create_goal(site.site_id, "Pricing", "path", {"pathPattern": "/pricing"})
    services.metadata.set_private_link_key(site.site_id, True)
    rows = [
        {"site_id": sid, "timestamp": _ts(i), "type": "pageview"}
        for sid in (site.site_id, other.site_id)
        for i in range(5)
    ]
    services.events.append(rows_to_table(rows))
    assert services.events.count(site.site_id) == 5

    response = client.delete(f"/api/sites/{site.site_id}", headers=owner.headers)
    assert response.json() == {"success": True}
    assert services.events.count(site.site_id) == 0
    assert services.events.count(other.site_id) == 5
    assert services.metadata.site(site.site_id) is None
    assert services.metadata.all_goals(site.site_id) == []
    assert client.get(f"/api/sites/{site.site_id}", headers=owner.headers).status_code == 404


def _ts(i: int):
    from datetime import datetime

    return datetime(2026, 1, 1, 12, 0, i)
