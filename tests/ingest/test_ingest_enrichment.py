"""Enrichment pieces on their own: user agents, bots, geo (a tiny .mmdb and the bundled data), visitor ids, sessions."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from mmdb_writer import MMDBWriter
from netaddr import IPSet

from api_backend.ingest.bots import is_bot
from api_backend.ingest.geo import BundledLocator, GeoLocation, MaxMindLocator, open_locator
from api_backend.ingest.sessions import STAMP_LEAD, SessionTracker, new_session_id
from api_backend.ingest.useragent import device_type, parse_user_agent
from api_backend.ingest.visitor import visitor_id

CHROME_WIN = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4 Mobile/15E148 Safari/604.1"
)
IPAD = (
    "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/16.6 Mobile/15E148 Safari/604.1"
)
PIXEL = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Mobile Safari/537.36"
)
GALAXY_TAB = (
    "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
)
FIREFOX_MAC = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7; rv:125.0) Gecko/20100101 Firefox/125.0"
PS5 = "Mozilla/5.0 (PlayStation 5 3.11) AppleWebKit/605.1.15 (KHTML, like Gecko)"
SAMSUNG_TV = (
    "Mozilla/5.0 (SMART-TV; Linux; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) "
    "SamsungBrowser/4.0 Chrome/76.0.3809.146 TV Safari/537.36"
)
EDGE = CHROME_WIN + " Edg/124.0.2478.51"
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
HEADLESS = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 Safari/537.36"
)


@pytest.mark.parametrize(
    ("ua", "browser", "version", "os", "os_version", "device"),
    [
        (CHROME_WIN, "Chrome", "124", "Windows", "10", "Desktop"),
        (EDGE, "Edge", "124", "Windows", "10", "Desktop"),
        (IPHONE, "Mobile Safari", "17", "iOS", "17.4", "Mobile"),
        (IPAD, "Mobile Safari", "16", "iOS", "16.6", "Tablet"),
        (PIXEL, "Chrome Mobile", "124", "Android", "14", "Mobile"),
        (GALAXY_TAB, "Chrome", "120", "Android", "13", "Tablet"),
        (FIREFOX_MAC, "Firefox", "125", "Mac OS X", "10.15.7", "Desktop"),
        (PS5, None, None, "", "", "Console"),
        (SAMSUNG_TV, "Samsung Internet", "4", "Tizen", "6.0", "TV"),
    ],
)
def test_enrich001_user_agents(ua, browser, version, os, os_version, device):
    info = parse_user_agent(ua)
    if browser is not None:
        assert (info.browser, info.browser_version) == (browser, version)
    assert (info.operating_system, info.operating_system_version) == (os, os_version)
    assert device_type(info) == device


def test_enrich002_unknown_user_agent_falls_back_on_screen_size():
    info = parse_user_agent("")
    assert (info.browser, info.operating_system) == ("", "")
    assert device_type(info) == ""
    assert device_type(info, 1920, 1080) == "Desktop"
    assert device_type(info, 390, 844) == "Mobile"
    assert device_type(info, 820, 1180) == "Tablet"
    # The user agent wins over the screen.
    assert device_type(parse_user_agent(IPHONE), 1920, 1080) == "Mobile"


@pytest.mark.parametrize(
    ("ua", "bot"),
    [
        (GOOGLEBOT, True),
        ("curl/8.4.0", True),
        ("python-requests/2.32.3", True),
        (HEADLESS, True),
        (CHROME_WIN, False),
        (IPHONE, False),
        ("", False),
    ],
)
def test_enrich003_bots(ua, bot):
    assert is_bot(ua) is bot


@pytest.fixture(scope="module")
def tiny_mmdb(tmp_path_factory) -> Path:
    """A City-layout .mmdb with two IPv4 networks and one IPv6 network."""
    writer = MMDBWriter(ip_version=6, database_type="GeoIP2-City", ipv4_compatible=True)
    writer.insert_network(
        IPSet(["1.2.3.0/24"]),
        {"country": {"iso_code": "FR"}, "subdivisions": [{"iso_code": "IDF"}], "city": {"names": {"en": "Paris"}}},
    )
    writer.insert_network(IPSet(["5.6.0.0/16"]), {"country": {"iso_code": "BR"}})
    writer.insert_network(
        IPSet(["2a01:4f8::/32"]),
        {"country": {"iso_code": "DE"}, "subdivisions": [{"iso_code": "BY"}], "city": {"names": {"en": "Munich"}}},
    )
    path = tmp_path_factory.mktemp("geo") / "tiny.mmdb"
    writer.to_db_file(str(path))
    return path


def test_enrich004_mmdb_ipv4_ipv6_country_region_city(tiny_mmdb):
    locator = open_locator(str(tiny_mmdb))
    assert isinstance(locator, MaxMindLocator)
    try:
        assert locator.locate("1.2.3.4") == GeoLocation("FR", "FR-IDF", "Paris")
        assert locator.locate("5.6.7.8") == GeoLocation("BR", "", "")
        assert locator.locate("2a01:4f8:1:2::3") == GeoLocation("DE", "DE-BY", "Munich")
        assert locator.locate("::ffff:1.2.3.9") == GeoLocation("FR", "FR-IDF", "Paris")
        assert locator.locate("9.9.9.9") == GeoLocation()
        assert locator.locate("10.0.0.1") == GeoLocation()
        assert locator.locate("not-an-ip") == GeoLocation()
    finally:
        locator.close()


def test_enrich005_bundled_database():
    locator = open_locator("")
    assert isinstance(locator, BundledLocator)
    assert locator.locate("8.8.8.8").country == "US"
    assert locator.locate("81.2.69.142").country == "GB"
    assert locator.locate("2a00:1450:4001:80b::200e").country == "DE"
    assert locator.locate("127.0.0.1") == GeoLocation()
    assert locator.locate("192.168.1.1") == GeoLocation()


def test_enrich006_visitor_ids():
    a = visitor_id("secret-1", 1, "1.2.3.4", CHROME_WIN)
    assert len(a) == 16 and int(a, 16) >= 0
    assert a == visitor_id("secret-1", 1, "1.2.3.4", CHROME_WIN)
    assert a != visitor_id("secret-2", 1, "1.2.3.4", CHROME_WIN)
    assert a != visitor_id("secret-1", 2, "1.2.3.4", CHROME_WIN)
    assert a != visitor_id("secret-1", 1, "1.2.3.5", CHROME_WIN)
    assert a != visitor_id("secret-1", 1, "1.2.3.4", IPHONE)
    day1 = visitor_id("secret-1", 1, "1.2.3.4", CHROME_WIN, date(2026, 3, 1))
    assert day1 == visitor_id("secret-1", 1, "1.2.3.4", CHROME_WIN, date(2026, 3, 1))
    assert day1 != visitor_id("secret-1", 1, "1.2.3.4", CHROME_WIN, date(2026, 3, 2))
    assert day1 != a
    assert "1.2.3.4" not in a


def test_enrich007_session_tracker_timeout_and_recovery():
    start = datetime(2026, 3, 1, 9, 0)
    tracker = SessionTracker()
    first = tracker.session_for(1, "v", start)
    assert tracker.session_for(1, "v", start + timedelta(minutes=29)) == first
    # 30 minutes after the *last* event is still the same session; a moment later it is not.
    assert tracker.session_for(1, "v", start + timedelta(minutes=59)) == first
    second = tracker.session_for(1, "v", start + timedelta(minutes=89, seconds=1))
    assert second != first
    assert tracker.session_for(2, "v", start + timedelta(minutes=90)) != second  # other site, other session

    restarted = SessionTracker()
    restarted.recover([(1, "v", second, start + timedelta(minutes=89, seconds=1))])
    assert restarted.session_for(1, "v", start + timedelta(minutes=100)) == second
    # Old entries are pruned, so memory follows live visitors only.
    restarted.session_for(3, "w", start + timedelta(hours=5))
    assert len(restarted) == 1


def test_enrich019_a_sessions_events_are_stamped_a_millisecond_apart_and_at_most_the_lead_ahead():
    now, ms = datetime(2026, 3, 1, 9, 0), timedelta(milliseconds=1)
    tracker = SessionTracker()
    # A new session's first event is stamped now (no later first time); its others follow a millisecond apart.
    ids, later = tracker.sessions_for([(1, "v"), (1, "w")], now, [3, 1])
    assert later == {}
    # At the same clock reading, a live session goes on after its last event; another visitor's starts at now.
    again, later = tracker.sessions_for([(1, "v"), (2, "v")], now)
    assert again[0] == ids[0] and again[1] not in ids and later == {0: now + 3 * ms}
    assert tracker.sessions_for([(1, "v")], now + timedelta(seconds=5)) == ([ids[0]], {})
    # No further ahead of the clock than the lead: a flood shares the lead's time.
    flood = now + timedelta(minutes=1)
    assert tracker.sessions_for([(1, "w")], flood, [5000]) == ([ids[1]], {})
    assert tracker.sessions_for([(1, "w")], flood) == ([ids[1]], {0: flood + STAMP_LEAD})
    # A clock stepped back keeps the session, and its last time: the timeout runs from the latest event.
    back = flood - timedelta(minutes=10)
    assert tracker.sessions_for([(1, "w")], back) == ([ids[1]], {0: back + STAMP_LEAD})
    assert tracker.session_for(1, "w", flood + STAMP_LEAD + timedelta(minutes=30)) == ids[1]


def test_enrich008_a_new_session_id_is_a_uuid7_holding_the_time_of_its_first_event():
    opened = datetime(2026, 3, 1, 9, 0, 12, 345678)
    tracker = SessionTracker()
    first = tracker.session_for(1, "v", opened)
    assert uuid.UUID(first).version == 7 and uuid.UUID(first).hex == first
    assert int(first[:12], 16) == int((opened - datetime(1970, 1, 1)).total_seconds() * 1000)  # to the millisecond
    assert tracker.session_for(1, "v", opened + timedelta(minutes=20)) == first  # a continued session keeps its id
    (batch,), _ = tracker.sessions_for([(2, "w")], opened + timedelta(hours=3))
    assert batch[:12] == new_session_id(opened + timedelta(hours=3))[:12]
    assert len({new_session_id(opened) for _ in range(1000)}) == 1000  # the rest of the id is random
