"""What /api/track stores: user agent, geo, channel, referrer, UTM and URL parameters; site exclusions and bots."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mmdb_writer import MMDBWriter
from netaddr import IPSet

from api_backend.app import create_app
from api_backend.services import open_services
from api_backend.settings import load_settings
from tests.support import make_account, make_site

BROWSER = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)
ANDROID = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Mobile Safari/537.36"
)
UA = {"User-Agent": BROWSER}


def rows(services) -> list[dict[str, Any]]:
    return services.events.query_dicts("SELECT * FROM events ORDER BY timestamp")


def pageview(site, **fields: Any) -> dict[str, Any]:
    return {"site_id": site.site_id, "type": "pageview", "hostname": "example.com", "pathname": "/", **fields}


def client_from(app, ip: str) -> TestClient:
    """A test client whose connection comes from ``ip``."""
    return TestClient(app, client=(ip, 50000))


def test_enrichment001_row_contents(app, services, site):
    with client_from(app, "81.2.69.142") as client:
        body = pageview(
            site,
            pathname="/blog/post",
            querystring="?UTM_Source=Newsletter&utm_medium=email&utm_campaign=Spring%20Sale&utm_term=t&utm_content=c&ref=x",
            page_title="A post",
            referrer="https://mail.example.net/inbox",
            language="en-GB",
            screenWidth=412,
            screenHeight=915,
            user_id="  customer-42  ",
        )
        assert client.post("/api/track", json=body, headers={"User-Agent": ANDROID}).json() == {"success": True}
    (row,) = rows(services)
    assert row["browser"] == "Chrome Mobile" and row["browser_version"] == "124"
    assert (row["operating_system"], row["operating_system_version"], row["device_type"]) == ("Android", "14", "Mobile")
    assert (row["country"], row["language"], row["screen_width"], row["screen_height"]) == ("GB", "en-GB", 412, 915)
    assert row["identified_user_id"] == "customer-42"
    assert len(row["user_id"]) == 16 and "81.2.69.142" not in json.dumps(row, default=str)
    assert (row["utm_source"], row["utm_medium"], row["utm_campaign"], row["utm_term"], row["utm_content"]) == (
        "Newsletter",
        "email",
        "Spring Sale",
        "t",
        "c",
    )
    assert json.loads(row["url_parameters"]) == {
        "utm_source": "Newsletter",
        "utm_medium": "email",
        "utm_campaign": "Spring Sale",
        "utm_term": "t",
        "utm_content": "c",
        "ref": "x",
    }
    assert row["querystring"].startswith("?UTM_Source=Newsletter")
    assert row["channel"] == "Email"
    assert row["referrer"] == "https://mail.example.net/inbox"
    assert (row["page_title"], row["pathname"], row["hostname"]) == ("A post", "/blog/post", "example.com")
    assert row["session_id"]


@pytest.mark.parametrize(
    ("referrer", "stored_referrer", "channel"),
    [
        ("https://example.com/previous", "", ""),
        ("https://www.example.com/previous", "", ""),  # www. is ignored both ways
        ("https://www.google.com/", "https://www.google.com/", "Organic Search"),
        ("https://www.microsoft.com/en-us", "https://www.microsoft.com/en-us", "Referral"),
        ("https://t.co/xyz", "https://t.co/xyz", "Organic Social"),
        ("", "", ""),
    ],
)
def test_enrichment002_referrer_and_channel(client, services, site, referrer, stored_referrer, channel):
    assert client.post("/api/track", json=pageview(site, referrer=referrer), headers=UA).json() == {"success": True}
    (row,) = rows(services)
    assert (row["referrer"], row["channel"]) == (stored_referrer, channel)


def test_enrichment003_track_url_params_off_keeps_attribution(client, services, owner, site):
    response = client.put(f"/api/sites/{site.site_id}/config", json={"trackUrlParams": False}, headers=owner.headers)
    assert response.status_code == 200, response.text
    body = pageview(site, querystring="utm_source=google&utm_medium=cpc&secret=1")
    assert client.post("/api/track", json=body, headers=UA).json() == {"success": True}
    (row,) = rows(services)
    assert (row["querystring"], row["url_parameters"]) == ("", "{}")
    assert (row["utm_source"], row["utm_medium"], row["channel"]) == ("google", "cpc", "Paid Search")


@pytest.mark.parametrize(
    ("patterns", "ip", "excluded"),
    [
        (["203.0.113.7"], "203.0.113.7", True),
        (["203.0.113.7"], "203.0.113.8", False),
        (["10.0.0.0/8"], "10.20.30.40", True),
        (["10.0.0.0/8"], "11.0.0.1", False),
        (["192.0.2.10-192.0.2.20"], "192.0.2.15", True),
        (["192.0.2.10-192.0.2.20"], "192.0.2.21", False),
        (["2001:db8::/32"], "2001:db8:1::5", True),
        (["2001:db8::/32"], "2001:db9::5", False),
        (["2001:db8::1"], "2001:db8::1", True),
    ],
)
def test_enrichment004_excluded_ips(app, services, owner, site, patterns, ip, excluded):
    with client_from(app, ip) as client:
        response = client.put(
            f"/api/sites/{site.site_id}/config", json={"excludedIPs": patterns}, headers=owner.headers
        )
        assert response.status_code == 200, response.text
        answer = client.post("/api/track", json=pageview(site), headers=UA).json()
    if excluded:
        assert answer == {"success": True, "tracked": False, "reason": "excluded_ip"}
        assert rows(services) == []
    else:
        assert answer == {"success": True}
        assert len(rows(services)) == 1


def test_enrichment005_excluded_ip_applies_to_trusted_ip_address(client, services, owner, site):
    services.metadata.update_site(site.site_id, {"excluded_ips": ["198.51.100.0/24"]})
    services.ingestor.site_changed(site.site_id)
    body = pageview(site, ip_address="198.51.100.9")
    answer = client.post("/api/track", json=body, headers={**UA, **owner.headers}).json()
    assert answer == {"success": True, "tracked": False, "reason": "excluded_ip"}
    # Without a key the body's address is ignored, so the event is kept.
    assert client.post("/api/track", json=body, headers=UA).json() == {"success": True}


def test_enrichment006_excluded_countries_case_insensitive(app, services, owner, site):
    services.metadata.update_site(site.site_id, {"excluded_countries": ["gb", "FR"]})
    services.ingestor.site_changed(site.site_id)
    with client_from(app, "81.2.69.142") as client:  # GB
        answer = client.post("/api/track", json=pageview(site), headers=UA).json()
        assert answer == {"success": True, "tracked": False, "reason": "excluded_country"}
    with client_from(app, "8.8.8.8") as client:  # US
        assert client.post("/api/track", json=pageview(site), headers=UA).json() == {"success": True}
    (row,) = rows(services)
    assert row["country"] == "US"


def test_enrichment007_bots_follow_block_bots(client, services, owner, site):
    googlebot = {"User-Agent": "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"}
    answer = client.post("/api/track", json=pageview(site), headers=googlebot).json()
    assert answer == {"success": True, "tracked": False, "reason": "bot"}
    # The config route invalidates the cached rules at once.
    response = client.put(f"/api/sites/{site.site_id}/config", json={"blockBots": False}, headers=owner.headers)
    assert response.status_code == 200
    assert client.post("/api/track", json=pageview(site), headers=googlebot).json() == {"success": True}
    (row,) = rows(services)
    assert row["browser"] == "Googlebot"


def test_enrichment008_deleted_site_stops_tracking(client, services, owner, site):
    assert client.post("/api/track", json=pageview(site), headers=UA).json() == {"success": True}
    assert client.delete(f"/api/sites/{site.site_id}", headers=owner.headers).status_code == 200
    assert client.post("/api/track", json=pageview(site), headers=UA).status_code == 404
    assert rows(services) == []


def test_enrichment009_forwarded_for_only_behind_trusted_proxy(tmp_path):
    for trust, expected in ((True, "GB"), (False, "")):
        settings = load_settings(
            {}, data_dir=str(tmp_path / str(trust)), secret_key="test-secret-key-0123456789", trust_proxy=str(trust)
        )
        services = open_services(settings)
        try:
            site = make_site(services, make_account(services, "proxy@example.com"))
            with TestClient(create_app(settings, services)) as client:
                headers = {**UA, "X-Forwarded-For": "81.2.69.142, 10.0.0.1"}
                assert client.post("/api/track", json=pageview(site), headers=headers).json() == {"success": True}
            (row,) = rows(services)
            assert row["country"] == expected
        finally:
            services.close()


def test_enrichment010_mmdb_setting_gives_region_and_city(tmp_path):
    writer = MMDBWriter(ip_version=6, database_type="GeoIP2-City", ipv4_compatible=True)
    writer.insert_network(
        IPSet(["1.2.3.0/24"]),
        {"country": {"iso_code": "FR"}, "subdivisions": [{"iso_code": "IDF"}], "city": {"names": {"en": "Paris"}}},
    )
    writer.insert_network(
        IPSet(["2a01:4f8::/32"]), {"country": {"iso_code": "DE"}, "city": {"names": {"en": "Munich"}}}
    )
    mmdb = tmp_path / "city.mmdb"
    writer.to_db_file(str(mmdb))
    settings = load_settings(
        {}, data_dir=str(tmp_path / "data"), secret_key="test-secret-key-0123456789", geoip_mmdb=str(mmdb)
    )
    services = open_services(settings)
    try:
        owner = make_account(services, "geo@example.com")
        site = make_site(services, owner)
        with TestClient(create_app(settings, services)) as client:
            for ip in ("1.2.3.4", "2a01:4f8:0:1::2"):
                body = pageview(site, ip_address=ip)
                assert client.post("/api/track", json=body, headers={**UA, **owner.headers}).json() == {"success": True}
        paris, munich = rows(services)
        assert (paris["country"], paris["region"], paris["city"]) == ("FR", "FR-IDF", "Paris")
        assert (munich["country"], munich["region"], munich["city"]) == ("DE", "", "Munich")
    finally:
        services.close()
