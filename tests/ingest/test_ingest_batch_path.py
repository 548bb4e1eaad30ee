"""The batch path of POST /api/track/batch stores exactly what POST /api/track stores for the same events.

Two servers with the same secret and the same sites (so the same integer site ids and visitor hashes) receive
the same events at the same clock times: one as batches, one event per request with the batch's headers.
Their events tables must be equal, session ids compared as partitions (which rows share a session), and each
batch's ``accepted``/``rejected``/``dropped`` must say what the single answers said.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from fastapi.testclient import TestClient

from api_backend.app import create_app
from api_backend.errors import InvalidRequestError
from api_backend.ingest.enrich import ClientInfo, enrich_events
from api_backend.ingest.fastpath import event_tuple, fast_event, load_json, plain_batch
from api_backend.ingest.payload import parse_event
from api_backend.services import Services, open_services
from api_backend.settings import load_settings
from api_backend.store.events import EVENT_SCHEMA, records_to_table
from tests.support import Account, make_account, make_site

SECRET = "batch-path-secret-0123456789"
CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4 Mobile/15E148 Safari/604.1"
)
ANDROID_TABLET = "Mozilla/5.0 (Linux; Android 14; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari"
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
START = datetime(2026, 3, 1, 23, 40)  # the third batch falls on the next UTC day: salted visitor ids rotate


@dataclass
class World:
    """One server: its services, a client, the accounts and the sites the events go to."""

    services: Services
    client: TestClient
    owner: Account
    stranger: Account
    sites: dict[str, Any]
    now: list[datetime]


@pytest.fixture
def worlds(tmp_path: Path) -> Iterator[tuple[World, World]]:
    opened = []
    for name in ("batch", "single"):
        settings = load_settings({}, data_dir=str(tmp_path / name), secret_key=SECRET)
        services = open_services(settings)
        owner = make_account(services, "owner@example.com")
        stranger = make_account(services, "stranger@example.com")
        # Created in the same order on both sides, so the integer site ids match.
        sites = {
            "guarded": make_site(
                services,
                owner,
                "shop.example",
                block_bots=True,
                excluded_ips=["203.0.113.0/24"],
                excluded_countries=["GB"],
            ),
            "salted": make_site(services, owner, "blog.example", salt_user_ids=True, track_url_params=False),
            "plain": make_site(services, owner, "docs.example", block_bots=False),
            "foreign": make_site(services, stranger, "other.example"),
        }
        now = [START]
        services.ingestor.clock = lambda now=now: now[0]
        client = TestClient(create_app(settings, services))
        client.__enter__()
        opened.append(World(services, client, owner, stranger, sites, now))
    try:
        yield opened[0], opened[1]
    finally:
        for world in opened:
            world.client.__exit__(None, None, None)
            world.services.close()


def mixed_events(world: World, round_no: int) -> list[dict[str, Any]]:
    """Events of several sites, senders, types and outcomes; pathnames are unique so rows sort the same way."""
    guarded, salted, plain, foreign = (world.sites[k] for k in ("guarded", "salted", "plain", "foreign"))
    key = world.owner.api_key
    n = iter(range(1000))

    def ev(site: Any, kind: str = "pageview", *, by_id: bool = False, suffix: str = "", **fields: Any) -> dict:
        return {
            "site_id": site.id if by_id else site.site_id,
            "type": kind,
            "hostname": site.domain,
            "pathname": f"/r{round_no}/e{next(n):03d}{suffix}",
            **fields,
        }

    def trusted(site: Any, ip: str, ua: str, kind: str = "pageview", **fields: Any) -> dict[str, Any]:
        return ev(site, kind, api_key=key, ip_address=ip, user_agent=ua, **fields)

    return [
        # Untrusted: the connection's address and User-Agent header.
        ev(guarded, referrer="https://www.google.com/search?q=x", screenWidth=1920, screenHeight=1080),
        ev(guarded, by_id=True, language="de-DE", page_title="Start"),
        ev(salted, querystring="?utm_source=newsletter&utm_medium=email&utm_campaign=spring&ref=1"),
        ev(plain, "custom_event", event_name="signup", properties=json.dumps({"plan": "pro", "seats": 3})),
        ev(plain, "performance", event_name="web-vitals", lcp=1200.5, cls=0, inp=80, fcp=900, ttfb=120),
        ev(plain, "pageview", lcp=5, cls=0.1),  # vitals on a pageview are not stored
        ev(plain, referrer="https://docs.example/other"),  # self-referral: cleared
        ev(plain, referrer="https://www.docs.example/x", querystring="?gclid=abc"),
        ev(plain, referrer="https://www.google.com/", querystring="?gclid=abc&utm_term=shoes"),
        ev(plain, "pageview", user_id=" customer-9 "),
        ev(plain, "button_click", properties=json.dumps({"text": "Buy"})),
        ev(plain, "pageview", properties="not json"),  # ignorable for a pageview
        ev(plain, "pageview", screenWidth=1024.0, screenHeight=768),  # a whole float: parse_event's path
        ev(plain, "custom_event", event_name="obj", properties={"a": [1, 2], "b": "ü"}),  # an object
        ev(plain, "outbound", properties=json.dumps({"url": "https://elsewhere.org/", "text": "Go"})),
        ev(plain, "error", event_name="TypeError", properties=json.dumps({"message": "x is undefined"})),
        ev(plain, "copy", properties=json.dumps({"sourceElement": "p", "textLength": 4})),
        ev(
            plain,
            "form_submit",
            properties=json.dumps(
                {"formId": "f", "formName": "n", "formAction": "/a", "method": "post", "fieldCount": 2}
            ),
        ),  # fmt: skip
        ev(plain, "input_change", properties=json.dumps({"element": "input", "inputName": "email"})),
        ev(plain, suffix="/café ☕", page_title="Ünïcode"),
        # Trusted (API key in the body): the event's own address and user agent.
        trusted(guarded, "8.8.8.8", CHROME),
        trusted(guarded, "8.8.8.8", CHROME, "custom_event", event_name="again"),
        trusted(guarded, "1.1.1.1", IPHONE, screenWidth=390, screenHeight=844),
        trusted(guarded, "81.2.69.142", FIREFOX),  # GB: excluded country
        trusted(guarded, "203.0.113.9", CHROME),  # excluded address
        trusted(guarded, "8.8.4.4", GOOGLEBOT),  # a bot, but trusted: kept
        trusted(salted, "81.2.69.142", FIREFOX),  # GB is fine here
        trusted(salted, "2001:4860:4860::8888", ANDROID_TABLET),
        trusted(salted, " 9.9.9.9 ", ANDROID_TABLET),  # normalised address
        trusted(plain, "8.8.8.8", CHROME, user_id="u-1"),
        trusted(plain, "8.8.8.8", ""),  # empty user agent in the body: the header's is used
        trusted(plain, "", IPHONE),  # empty address in the body: rejected (not an address)
        # Rejected.
        ev(plain, "custom_event"),  # no event_name
        ev(plain, screenWidth=-1),
        ev(plain, "click"),
        {"site_id": 999999, "type": "pageview", "pathname": f"/r{round_no}/missing"},
        ev(foreign, api_key=key),  # a key of someone outside the site's organization
        ev(plain, api_key="sl_not_a_key"),
        ev(plain, user_agent="x" * 513, api_key=key),
        ev(plain, ip_address="not-an-ip", api_key=key),
        "not an object",
        ev(plain, "outbound", properties=json.dumps({"url": "relative"})),
    ]


def send_batch(world: World, events: list[Any], headers: dict[str, str]) -> dict[str, Any]:
    response = world.client.post("/api/track/batch", json={"events": events}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def send_singly(world: World, events: list[Any], headers: dict[str, str]) -> dict[str, Any]:
    """The batch response the single answers amount to."""
    accepted, rejected, dropped = 0, [], []
    for index, event in enumerate(events):
        response = world.client.post("/api/track", json=event, headers=headers)
        body = response.json()
        if response.status_code == 200 and body.get("tracked") is False:
            dropped.append({"index": index, "reason": body["reason"]})
        elif response.status_code == 200:
            assert body == {"success": True}
            accepted += 1
        else:
            assert response.status_code in (400, 401, 404), response.text
            details = body.get("details")
            error = "; ".join(f"{d['field']} {d['message']}" for d in details) if details else body["error"]
            rejected.append({"index": index, "error": error})
    return {"success": True, "accepted": accepted, "rejected": rejected, "dropped": dropped}


def stored(world: World) -> list[dict[str, Any]]:
    """Every stored row in pathname order, session ids replaced by the partition they make."""
    rows = world.services.events.query_dicts("SELECT * FROM events ORDER BY pathname, site_id")
    labels: dict[str, int] = {}
    for row in rows:
        row["session_id"] = labels.setdefault(row["session_id"], len(labels))
    return rows


def run_rounds(worlds: tuple[World, World], rounds: list[tuple[timedelta, dict[str, str] | None]]) -> None:
    batch_world, single_world = worlds
    for round_no, (offset, extra) in enumerate(rounds):
        outcomes = []
        for world, send in ((batch_world, send_batch), (single_world, send_singly)):
            world.now[0] = START + offset
            headers = {"User-Agent": CHROME, **(extra or {})}
            if extra and extra.get("Authorization") == "owner":
                headers["Authorization"] = f"Bearer {world.owner.api_key}"
            outcomes.append(send(world, mixed_events(world, round_no), headers))
        assert outcomes[0] == outcomes[1], round_no


def test_batchpath001_batches_store_what_single_events_store(worlds):
    batch_world, single_world = worlds
    for world in worlds:  # the header visitor is identified before anything is tracked
        body = {"site_id": world.sites["plain"].site_id, "user_id": "known-7"}
        assert world.client.post("/api/identify", json=body, headers={"User-Agent": CHROME}).status_code == 200
    run_rounds(
        worlds,
        [
            (timedelta(0), None),
            (timedelta(minutes=10), {"User-Agent": GOOGLEBOT}),  # blocked where the site blocks bots
            (timedelta(minutes=55), {"Authorization": "owner"}),  # every event trusted; sessions timed out
            (timedelta(minutes=70), {"User-Agent": ""}),
        ],
    )
    rows = stored(batch_world)
    assert rows == stored(single_world)
    # The comparison covers what it claims to: several sites, senders, sessions, drops and both identify kinds.
    assert len(rows) > 80 and len({r["site_id"] for r in rows}) == 3
    assert len({r["session_id"] for r in rows}) >= 10 and len({r["user_id"] for r in rows}) >= 8
    assert {"known-7", "customer-9", "u-1"} <= {r["identified_user_id"] for r in rows}
    assert {"Mobile", "Tablet", "Desktop", "Bot"} <= {r["device_type"] for r in rows}
    assert {"US", "GB"} <= {r["country"] for r in rows}
    assert {"", "Email", "Organic Search", "Paid Search"} <= {r["channel"] for r in rows}


def test_batchpath002_a_batch_at_once_and_its_answer(worlds):
    batch_world, _ = worlds
    events = mixed_events(batch_world, 0)
    body = send_batch(batch_world, events, {"User-Agent": CHROME})
    rejected = {r["index"] for r in body["rejected"]}
    dropped = {d["index"]: d["reason"] for d in body["dropped"]}
    assert set(dropped.values()) == {"excluded_country", "excluded_ip"}
    assert len(rejected) == 11 and body["accepted"] == len(events) - len(rejected) - len(dropped)
    rows = batch_world.services.events.query_dicts("SELECT * FROM events")
    assert len(rows) == body["accepted"]
    # One clock reading for the whole batch; a session's events a millisecond apart, in the batch's order.
    place = {e["pathname"]: i for i, e in enumerate(events) if isinstance(e, dict)}  # unique pathnames
    sessions: dict[str, list[datetime]] = {}
    for row in sorted(rows, key=lambda r: place[r["pathname"]]):
        sessions.setdefault(row["session_id"], []).append(row["timestamp"])
    assert max(len(times) for times in sessions.values()) > 1
    for times in sessions.values():
        assert times == [START + timedelta(milliseconds=k) for k in range(len(times))]


# Bodies where orjson and json.loads disagree or orjson refuses: the answers must be json.loads's. orjson refuses
# the first group (so json.loads decodes the whole batch) and reads the big integers of the second as floats.
REFUSED_BY_ORJSON = [
    '{"site_id": %(site)d, "type": "pageview", "pathname": "/lone\\ud800"}',
    '{"site_id": %(site)d, "type": "performance", "lcp": NaN}',
    '{"site_id": %(site)d, "type": "pageview", "pathname": "/fine-1"}',
]
BIG_INTEGERS = [
    '{"site_id": 123456789012345678901234567890, "type": "pageview"}',
    '{"site_id": %(site)d, "type": "custom_event", "event_name": "big", "properties": {"n": 123456789012345678901}}',
    '{"site_id": %(site)d, "type": "pageview", "screenWidth": 123456789012345678901}',
    '{"site_id": %(site)d, "type": "performance", "pathname": "/vital", "lcp": 123456789012345678901}',
    '{"site_id": %(site)d, "type": "pageview", "pathname": "/fine-2"}',
]


@pytest.mark.parametrize("bodies", [REFUSED_BY_ORJSON, BIG_INTEGERS], ids=["refused", "big-integers"])
def test_batchpath003_bodies_orjson_reads_differently(worlds, bodies):
    batch_world, single_world = worlds
    site = batch_world.sites["plain"].site_id
    events = [body % {"site": site} for body in bodies]
    headers = {"User-Agent": CHROME, "Content-Type": "application/json"}
    batch = batch_world.client.post(
        "/api/track/batch", content='{"events": [' + ", ".join(events) + "]}", headers=headers
    )
    assert batch.status_code == 200, batch.text
    singles = [single_world.client.post("/api/track", content=e, headers=headers) for e in events]
    assert batch.json() == send_singly_from(singles)
    assert batch.json()["accepted"] >= 1 and batch.json()["rejected"]
    assert stored(batch_world) == stored(single_world)
    for row in stored(batch_world):
        if row["event_name"] == "big":
            assert json.loads(row["props"]) == {"n": 123456789012345678901}  # the integer, not a float
    # A body cut short is not JSON to either decoder.
    cut = batch_world.client.post("/api/track/batch", content='{"events": [', headers=headers)
    assert cut.status_code == 400 and cut.json()["details"][0]["field"] == "body"


def send_singly_from(responses: list[Any]) -> dict[str, Any]:
    accepted, rejected = 0, []
    for index, response in enumerate(responses):
        body = response.json()
        if response.status_code == 200:
            accepted += 1
            continue
        details = body.get("details")
        error = "; ".join(f"{d['field']} {d['message']}" for d in details) if details else body["error"]
        rejected.append({"index": index, "error": error})
    return {"success": True, "accepted": accepted, "rejected": rejected, "dropped": []}


def _variants() -> Iterator[Any]:
    """Events around every rule ``fast_event`` decides itself: lengths at and past each limit, odd types."""
    base = {"site_id": 1, "type": "pageview"}
    limits = {
        "hostname": 253,
        "pathname": 2048,
        "querystring": 2048,
        "language": 35,
        "page_title": 512,
        "referrer": 2048,
        "user_id": 255,
        "user_agent": 512,
        "api_key": 512,
    }
    for field, limit in limits.items():
        for value in ("a" * limit, "a" * (limit + 1), "é" * limit, "é" * (limit + 1), "", 5, None, "\ud800"):
            yield {**base, field: value}
    for site in (1, 0, -3, True, "1", " 7 ", "", "  ", "x" * 64, "x" * 65, "é", 1.0, None, [1]):
        yield {**base, "site_id": site}
    for kind in ("pageview", "custom_event", "performance", "button_click", "error", "nope", None, 3, ["pageview"]):
        yield {**base, "type": kind, "event_name": "n"}
        yield {**base, "type": kind}
    for size in (0, 1920, 2**31 - 1, 2**31, -1, 1920.0, 1920.5, True, "1920", None):
        yield {**base, "screenWidth": size}
        yield {**base, "screenHeight": size}
    for ip in ("8.8.8.8", " 8.8.8.8 ", "::ffff:1.2.3.4", "2001:DB8::1", "1.2.3", "", 7, None):
        yield {**base, "ip_address": ip}
    for kind in ("pageview", "performance"):
        for vital in (0, 1, 1.5, -1, -0.0, math.inf, math.nan, 2**53, 2**53 + 1, 10**400, True, "1", None):
            yield {**base, "type": kind, "lcp": vital, "ttfb": 3}
    for kind in ("custom_event", "error"):
        for name in ("x", "", None, 5, "n" * 256, "n" * 257, "\ud800"):
            yield {**base, "type": kind, "event_name": name}
    for kind in ("pageview", "custom_event", "button_click", "outbound"):
        for props in ('{"a":1}', "{}", "[]", "x", "", None, "{" * 3000, '{"a":NaN}', {"a": 1}, 5, '"s"'):
            yield {**base, "type": kind, "event_name": "n", "properties": props}
    yield "text"
    yield None
    yield [base]


VARIANTS = list(_variants())


@pytest.mark.parametrize("body", VARIANTS, ids=[f"variant{i}" for i in range(len(VARIANTS))])
def test_batchpath004_fast_validation_agrees_with_parse_event(body):
    try:
        expected = event_tuple(parse_event(body))
    except Exception as exc:  # noqa: BLE001 (any refusal: the fast check must not accept it)
        expected = exc
    fast = fast_event(body)
    if fast is None:
        return  # parse_event decides
    assert not isinstance(expected, Exception), (body, expected)
    assert fast == expected


def test_batchpath005_load_json_matches_json_loads():
    for raw in (b'{"a": [1, 2.5, "x", null, true]}', b'"\\ud800"', b"NaN", b"[1e400]", b'{"a":1,"a":2}'):
        value, _ = load_json(raw)
        assert repr(value) == repr(json.loads(raw))
    with pytest.raises(ValueError):
        load_json(b"{")


def test_batchpath006_every_event_its_own_sender_and_page(worlds):
    """A batch where no two events share a sender or a page (the group columns are the columns themselves)."""
    batch_world, single_world = worlds
    outcomes = []
    for world, send in ((batch_world, send_batch), (single_world, send_singly)):
        site = world.sites["plain"]
        events = [
            {
                "site_id": site.site_id,
                "type": "pageview",
                "hostname": site.domain,
                "pathname": f"/only/{i:02d}",
                "referrer": f"https://ref{i}.example/",
                "ip_address": f"8.8.{i}.{i + 1}",
                "user_agent": (CHROME, IPHONE, FIREFOX)[i % 3] + f" build/{i}",
                "api_key": world.owner.api_key,
            }
            for i in range(30)
        ]
        outcomes.append(send(world, events, {"User-Agent": CHROME}))
    assert outcomes[0] == outcomes[1] and outcomes[0]["accepted"] == 30
    rows = stored(batch_world)
    assert rows == stored(single_world)
    assert len({r["user_id"] for r in rows}) == 30 and len({r["referrer"] for r in rows}) == 30


def _expected_plain(raw: bytes) -> list[tuple[Any, ...]] | None:
    """What ``plain_batch`` must give: every event's ``fast_event`` tuple when it accepts them all, else ``None``."""
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    events = body.get("events") if isinstance(body, dict) else None
    if not isinstance(events, list):
        return None
    tuples = [fast_event(event) for event in events]
    return None if any(t is None for t in tuples) else tuples


def _bodies(events: list[Any]) -> Iterator[bytes]:
    """The batch as escaped ASCII and as raw UTF-8 (when it has no lone surrogates)."""
    yield json.dumps({"events": events}).encode()
    try:
        yield json.dumps({"events": events}, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        pass


@pytest.mark.parametrize("event", VARIANTS, ids=[f"variant{i}" for i in range(len(VARIANTS))])
def test_batchpath007_a_plain_batch_is_what_fast_event_accepts_and_nothing_else(event):
    """The one-pass decode takes a batch exactly when ``fast_event`` takes each of its events, with its tuples."""
    plain_event = {"site_id": 1, "type": "pageview", "pathname": "/"}
    for events in ([event], [plain_event, event, plain_event]):
        for raw in _bodies(events):
            assert plain_batch(raw) == _expected_plain(raw), raw[:200]


def test_batchpath008_plain_batch_bodies_decode_as_json_loads_decodes_them():
    plain = {"site_id": 1, "type": "pageview", "pathname": "/a"}
    accepted = [
        b'{"events": []}',
        b'{"events": [{"site_id": 1, "type": "custom_event", "type": "pageview"}]}',  # the last key wins
        b'{"events": [{"site_id": 1, "type": "pageview", "unknown": {"deep": [1, 2]}}], "extra": 1}',
        b'{"events": [], "events": [{"site_id": 2, "type": "pageview"}]}',
        b'{"events": [{"site_id": 1, "type": "pageview", "page_title": "\\ud83d\\ude00 caf\\u00e9"}]}',
        '{"events": [{"site_id": 1, "type": "pageview", "page_title": "😀 café"}]}'.encode(),
        b'{"events": [{"site_id": 1, "type": "performance", "lcp": 9007199254740992}]}',  # 2**53: exact as a float
    ]
    refused = [
        b'{"events": [{"site_id": 1, "type": "performance", "lcp": 12345678901234567890123}]}',  # parse_event decides
        b"",
        b"{",
        b"[]",
        b'{"events": {}}',
        b'{"other": []}',
        b'{"events": [1]}',
        b'{"events": [{"site_id": 1, "type": "pageview", "page_title": "\\ud800"}]}',  # a lone surrogate
        b'{"events": [{"site_id": 1, "type": "performance", "lcp": NaN}]}',
        b'{"events": [{"site_id": 1, "type": "pageview"}]} trailing',
        b'\xef\xbb\xbf{"events": []}',
        b'{"events": [{"site_id": 1, "type": "pageview", "hostname": "\xff"}]}',  # not UTF-8
        b'{"events": [{"site_id": 1, "type": "pageview", "deep": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]}",
    ]
    for raw in accepted:
        assert plain_batch(raw) is not None, raw
        assert plain_batch(raw) == _expected_plain(raw), raw
    for raw in refused:
        assert plain_batch(raw) is None, raw
    assert plain_batch(json.dumps({"events": [plain] * 3}).encode()) == [fast_event(plain)] * 3


def test_batchpath009_random_batches_near_every_rule_agree_with_fast_event():
    """Random mixes of valid and borderline fields, a few events per batch: same tuples or the other path."""
    rng = random.Random(20261126)
    values: dict[str, list[Any]] = {
        "site_id": [1, 2, "1", " 3 ", 0, True, "x" * 65],
        "type": ["pageview", "pageview", "custom_event", "performance", "button_click", "outbound", None],
        "hostname": ["example.com", "a" * 253, "a" * 254, "ü.example", None, 3],
        "pathname": ["/", "/a/b", "é" * 2048, "é" * 2049, ""],
        "querystring": ["?utm_source=x", "", None, "q" * 2049],
        "screenWidth": [1920, 0, 2**31 - 1, 2**31, -1, 1920.0, None],
        "screenHeight": [1080, None, True],
        "language": ["en-US", "x" * 35, "x" * 36],
        "user_id": [" u-1 ", "", None, "u" * 256],
        "event_name": ["signup", "", None, "n" * 257],
        "properties": ['{"plan":"pro"}', "", "nope", "[]", {"a": 1}, None],
        "lcp": [None, None, 1200.5, 0, -1, 2**53 + 1],
        "ip_address": ["8.8.8.8", " 1.1.1.1 ", "2001:DB8::1", "1.2.3", None],
        "user_agent": ["Mozilla/5.0", "x" * 513, None],
    }
    plain_seen = 0
    for _ in range(400):
        events = []
        for _ in range(rng.randrange(1, 5)):
            event = {"site_id": 1, "type": "pageview"}
            for field in rng.sample(sorted(values), rng.randrange(0, 5)):
                event[field] = rng.choice(values[field])
            events.append(event)
        for raw in _bodies(events):
            expected = _expected_plain(raw)
            assert plain_batch(raw) == expected, raw[:300]
            plain_seen += expected is not None
    assert plain_seen > 100  # the one-pass path was taken, not only refused


def test_batchpath010_single_event_records_hold_what_the_batch_table_holds(worlds):
    """``Enriched.records`` (single events) and ``Enriched.table`` (batches) of one enrichment are the same rows,
    also where a name has two sources: the stored referrer over the sent one, the visitor over the sent user_id."""
    world, _ = worlds
    client = ClientInfo("8.8.8.8", CHROME)
    site_key = str(world.sites["plain"].site_id)
    world.services.ingestor.identify(site_key, "known-7", client, None, {"site_id": site_key, "user_id": "known-7"})
    validated = []
    for index, raw in enumerate(mixed_events(world, 0)):
        try:
            validated.append((index, event_tuple(parse_event(raw))))
        except InvalidRequestError:
            continue
    enriched = enrich_events(world.services.ingestor, validated, client, None, START)
    table = enriched.table()
    assert table is not None and table.num_rows >= 20
    assert records_to_table(enriched.records()).equals(table)
    rows = table.to_pylist()
    assert len({r["session_id"] for r in rows}) >= 3 and len({r["site_id"] for r in rows}) >= 2
    assert not any("docs.example" in r["referrer"] for r in rows)  # self-referrals sent, cleared when stored
    assert {"known-7", "customer-9"} <= {r["identified_user_id"] for r in rows}
    assert all(r["user_id"] != "customer-9" for r in rows)  # the sent user_id is not the stored visitor


def test_batchpath011_records_become_the_table_column_by_column_would_give():
    """``records_to_table`` reads the records as one array of structs: the same table as converting each column of
    the transposed records on its own, and the same errors for values that cannot be stored."""
    rng = random.Random(11)
    values = {
        "string": ["", "/", "/prix/été", "日本語", "x" * 300],
        "int": [0, 1, -7, 2**31 - 1],
        "float": [None, 0.0, 1.25, 3e-9],
    }
    kinds = {pa.string(): "string", pa.int32(): "int", pa.float64(): "float"}
    records = []
    for _ in range(40):
        record = []
        for field in EVENT_SCHEMA:
            if pa.types.is_timestamp(field.type):
                record.append(datetime(2026, 3, 1) + timedelta(milliseconds=rng.randrange(10**9)))
            else:
                record.append(rng.choice(values[kinds[field.type]]))
        records.append(tuple(record))
    by_column = pa.Table.from_arrays(
        [
            pa.array(list(column), type=field.type)
            for column, field in zip(zip(*records, strict=True), EVENT_SCHEMA, strict=True)
        ],
        schema=EVENT_SCHEMA,
    )
    assert records_to_table(records).equals(by_column)
    assert records_to_table([]).equals(EVENT_SCHEMA.empty_table())
    with pytest.raises(UnicodeEncodeError):
        records_to_table([records[0], (*records[1][:3], "bad\ud800", *records[1][4:])])
    with pytest.raises(ValueError):
        records_to_table([records[0], records[1][:-1]])
