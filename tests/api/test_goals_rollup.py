"""The goals list filtered on one session-level parameter, answered from the cached per-value rollup.

Numbers are checked against truth computed here in Python from the generated sessions; the cache must
never hide an acknowledged write, and concurrent requests for one rollup share one scan. Where the store keeps the
sessions' goal bits (DuckDB), those answer once stored, before any rollup: a site's first goals list finds none and
has them stored in the background, so it, like every list on the ClickHouse store, comes from a rollup.
"""

from __future__ import annotations

import json
import random
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api_backend.query.goals import GoalSpec
from api_backend.read.rollups import GoalsRollupCache, goals_counts_from_rollup, rollup_parameter
from api_backend.routes.read_params import ReadParams
from api_backend.store.events import rows_to_table

pytestmark = pytest.mark.both_stores

WINDOW = {"start_date": "2026-04-01", "end_date": "2026-04-30", "time_zone": "UTC"}
CHANNELS = ["", "Organic Search", "Paid Search", "Referral", "Email", "Internal"]
COUNTRIES = ["US", "DE", "FR", ""]
NOT_DIRECT = {"", "Direct", "Internal"}


def _sessions(site_id: int, seed: int = 3) -> list[dict[str, Any]]:
    """Sessions of 1-4 events; some start direct and switch channel later; some convert."""
    rng = random.Random(seed)
    sessions = []
    start = datetime(2026, 4, 1, 6)
    for n in range(300):
        when = start + timedelta(hours=n * 2, minutes=rng.randint(0, 59))
        channels = [rng.choice(CHANNELS) for _ in range(rng.randint(1, 3))]
        country = rng.choice(COUNTRIES)
        events = []
        for i, channel in enumerate(channels):
            path = rng.choice(["/", "/pricing", "/checkout", "/docs/a"])
            events.append((when + timedelta(minutes=i), channel, "pageview", path, "", "{}"))
        if rng.random() < 0.3:
            plan = rng.choice(["pro", "free"])
            events.append(
                (when + timedelta(minutes=9), channels[-1], "custom_event", "/", "purchase", json.dumps({"plan": plan}))
            )
        sessions.append({"id": f"s{n}", "country": country, "events": events})
    return sessions


def _rows(site_id: int, sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "site_id": site_id,
            "session_id": s["id"],
            "user_id": f"v{s['id']}",
            "country": s["country"],
            "timestamp": when,
            "channel": channel,
            "type": kind,
            "pathname": path,
            "event_name": name,
            "props": props,
        }
        for s in sessions
        for when, channel, kind, path, name, props in s["events"]
    ]


def _session_channel(session: dict[str, Any]) -> str:
    ordered = sorted(session["events"])
    named = [e[1] for e in ordered if e[1] not in NOT_DIRECT]
    return named[0] if named else ordered[0][1]


def _converts(session: dict[str, Any]) -> tuple[bool, bool]:
    checkout = any(e[2] == "pageview" and e[3] == "/checkout" for e in session["events"])
    pro = any(
        e[2] == "custom_event" and e[4] == "purchase" and json.loads(e[5]).get("plan") == "pro"
        for e in session["events"]
    )
    return checkout, pro


def _truth(sessions: list[dict[str, Any]], keep) -> tuple[int, int, int]:
    chosen = [s for s in sessions if keep(s)]
    flags = [_converts(s) for s in chosen]
    return len(chosen), sum(c for c, _ in flags), sum(p for _, p in flags)


@pytest.fixture
def world(services, site):
    sessions = _sessions(site.site_id)
    services.events.append(rows_to_table(_rows(site.site_id, sessions)))
    checkout = services.metadata.create_goal(site.site_id, "Checkout", "path", {"pathPattern": "/checkout"})
    pro = services.metadata.create_goal(
        site.site_id,
        "Bought Pro",
        "event",
        {"eventName": "purchase", "eventPropertyKey": "plan", "eventPropertyValue": "pro"},
    )
    return site, sessions, checkout.goal_id, pro.goal_id


def _goals(client, owner, site_id: int, filters: list[dict[str, Any]]) -> tuple[int, int, int]:
    response = client.get(
        f"/api/sites/{site_id}/goals", params={**WINDOW, "filters": json.dumps(filters)}, headers=owner.headers
    )
    assert response.status_code == 200, response.text
    by_name = {g["name"]: g for g in response.json()["data"]}
    sessions = {g["total_sessions"] for g in by_name.values()}
    assert len(sessions) == 1
    return sessions.pop(), by_name["Checkout"]["total_conversions"], by_name["Bought Pro"]["total_conversions"]


CASES = [
    ([{"parameter": "channel", "type": "equals", "value": ["Email"]}], lambda s: _session_channel(s) == "Email"),
    ([{"parameter": "channel", "type": "equals", "value": ["Direct"]}], lambda s: _session_channel(s) == ""),
    (
        [{"parameter": "channel", "type": "equals", "value": ["Referral", "Paid Search"]}],
        lambda s: _session_channel(s) in ("Referral", "Paid Search"),
    ),
    (
        [{"parameter": "channel", "type": "not_equals", "value": ["Organic Search"]}],
        lambda s: _session_channel(s) != "Organic Search",
    ),
    ([{"parameter": "channel", "type": "contains", "value": ["Search"]}], lambda s: "Search" in _session_channel(s)),
    (
        [{"parameter": "channel", "type": "regex", "value": ["^(Email|Internal)$"]}],
        lambda s: _session_channel(s) in ("Email", "Internal"),
    ),
    ([{"parameter": "channel", "type": "is_null"}], lambda s: _session_channel(s) == ""),
    (
        [
            {"parameter": "channel", "type": "starts_with", "value": ["P", "O"]},
            {"parameter": "channel", "type": "not_contains", "value": ["Paid"]},
        ],
        lambda s: _session_channel(s) == "Organic Search",
    ),
    ([{"parameter": "country", "type": "equals", "value": ["DE"]}], lambda s: s["country"] == "DE"),
]


@pytest.mark.parametrize(("filters", "keep"), CASES, ids=[json.dumps(c[0]) for c in CASES])
def test_rollup001_filtered_goals_match_truth(client, owner, services, world, filters, keep):
    site, sessions, _, _ = world
    assert _goals(client, owner, site.site_id, filters) == _truth(sessions, keep)
    # The answer came from a rollup kept for the next filtered call.
    assert len(services.reader.rollups) == 1


def test_rollup002_recipe_reuses_one_rollup_and_mixed_filters_still_match(client, owner, services, world):
    site, sessions, _, _ = world
    for channel in CHANNELS:
        value = channel or "Direct"
        expected = _truth(sessions, lambda s, c=channel: _session_channel(s) == c)
        assert (
            _goals(client, owner, site.site_id, [{"parameter": "channel", "type": "equals", "value": [value]}])
            == expected
        )
    assert len(services.reader.rollups) == 1
    # Two parameters: no rollup answers it; the plain query does, with the same rule.
    mixed = [
        {"parameter": "channel", "type": "equals", "value": ["Email"]},
        {"parameter": "country", "type": "equals", "value": ["US"]},
    ]
    expected = _truth(sessions, lambda s: _session_channel(s) == "Email" and s["country"] == "US")
    assert _goals(client, owner, site.site_id, mixed) == expected


@pytest.mark.parametrize("path", ["writer", "append"])
def test_rollup003_read_after_acknowledged_write_sees_it(client, owner, services, world, path):
    site, sessions, _, _ = world
    email = [{"parameter": "channel", "type": "equals", "value": ["Email"]}]
    before = _goals(client, owner, site.site_id, email)
    new = {
        "id": "late",
        "country": "US",
        "events": [
            (datetime(2026, 4, 29, 10), "Email", "pageview", "/checkout", "", "{}"),
            (datetime(2026, 4, 29, 10, 5), "Email", "custom_event", "/", "purchase", json.dumps({"plan": "pro"})),
        ],
    }
    rows = _rows(site.site_id, [new])
    if path == "writer":
        services.writer.write(rows)  # returns once committed: the acknowledgement a tracking route waits for
    else:
        services.events.append(rows_to_table(rows))
    after = _goals(client, owner, site.site_id, email)
    assert after == (before[0] + 1, before[1] + 1, before[2] + 1)
    assert after == _truth([*sessions, new], lambda s: _session_channel(s) == "Email")


def test_rollup004_concurrent_requests_share_one_scan(services, world):
    site, sessions, checkout_id, pro_id = world
    specs = [
        GoalSpec(checkout_id, "path", {"pathPattern": "/checkout"}),
        GoalSpec(pro_id, "event", {"eventName": "purchase", "eventPropertyKey": "plan", "eventPropertyValue": "pro"}),
    ]
    cache = GoalsRollupCache()
    rollups = []
    lock = threading.Lock()

    def run(query):
        if "GROUP BY value" in query.sql:
            with lock:
                rollups.append(query.sql)
        return services.events.query_dicts(*services.reader.dialect.bind(query))

    results: dict[str, Any] = {}

    def ask(channel: str) -> None:
        filters = json.dumps([{"parameter": "channel", "type": "equals", "value": [channel or "Direct"]}])
        scope = ReadParams(WINDOW["start_date"], WINDOW["end_date"], "UTC", filters=filters).scope(site.site_id)
        row = goals_counts_from_rollup(cache, scope, specs, run, services.reader.dialect)
        results[channel] = (row["sessions"], row["g0"], row["g1"])

    threads = [threading.Thread(target=ask, args=(c,)) for c in CHANNELS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(rollups) == 1
    for channel in CHANNELS:
        assert results[channel] == _truth(sessions, lambda s, c=channel: _session_channel(s) == c)


def test_rollup005_only_one_low_cardinality_session_parameter_qualifies():
    def scope(filters):
        return ReadParams("2026-04-01", "2026-04-30", "UTC", filters=json.dumps(filters)).scope(1)

    assert rollup_parameter(scope([{"parameter": "channel", "type": "equals", "value": ["Email"]}])) == "channel"
    assert rollup_parameter(scope([])) is None
    assert rollup_parameter(scope([{"parameter": "user_id", "type": "equals", "value": ["u"]}])) is None
    assert rollup_parameter(scope([{"parameter": "pathname", "type": "equals", "value": ["/"]}])) is None
    both = [
        {"parameter": "channel", "type": "equals", "value": ["Email"]},
        {"parameter": "country", "type": "equals", "value": ["US"]},
    ]
    assert rollup_parameter(scope(both)) is None
    # A window running up to now (or not yet over) is not cached: live traffic keeps changing it.
    email = json.dumps([{"parameter": "channel", "type": "equals", "value": ["Email"]}])
    today = datetime.now(UTC).date().isoformat()
    assert rollup_parameter(ReadParams("2026-01-01", today, "UTC", filters=email).scope(1)) is None
    assert rollup_parameter(ReadParams("2026-01-01", "2030-12-31", "UTC", filters=email).scope(1)) is None
    assert rollup_parameter(ReadParams(None, None, "UTC", filters=email).scope(1)) is None


def test_rollup006_traffic_outside_the_window_keeps_the_rollup(client, owner, services, world):
    site, sessions, _, _ = world
    email = [{"parameter": "channel", "type": "equals", "value": ["Email"]}]
    first = _goals(client, owner, site.site_id, email)
    assert len(services.reader.rollups) == 1
    outside = {
        "id": "may",
        "country": "US",
        "events": [(datetime(2026, 5, 2, 9), "Email", "pageview", "/checkout", "", "{}")],
    }
    services.writer.write(_rows(site.site_id, [outside]))
    assert _goals(client, owner, site.site_id, email) == first
    assert len(services.reader.rollups) == 1  # same key: the window's event count did not change


def test_rollup007_stored_goal_bits_answer_before_a_rollup(client, owner, services, world):
    site, sessions, checkout_id, pro_id = world
    keeps_bits = services.reader.dialect.session_facts
    if keeps_bits:
        specs = [
            GoalSpec(checkout_id, "path", {"pathPattern": "/checkout"}),
            GoalSpec(
                pro_id, "event", {"eventName": "purchase", "eventPropertyKey": "plan", "eventPropertyValue": "pro"}
            ),
        ]
        services.events.store_goal_bits(site.site_id, specs)
    for channel in CHANNELS:
        filters = [{"parameter": "channel", "type": "equals", "value": [channel or "Direct"]}]
        expected = _truth(sessions, lambda s, c=channel: _session_channel(s) == c)
        assert _goals(client, owner, site.site_id, filters) == expected
    # The bits read the window's whole sessions once per list; a store without them groups the events per value once.
    assert len(services.reader.rollups) == (0 if keeps_bits else 1)
